"""Landlock as a kernel floor under the supervisor: it is applied, it grants
what the policy allows (benign workloads keep working: test_interp.py), it
refuses on its own what no rule allows, and a missing Landlock is said,
recorded and, with --require or the policy's "require", fatal.

Two test-only switches of ward are used (tracer/landlock.c):
WARD_TEST_LANDLOCK_ABI=N acts as if the kernel offered at most ABI N (0: no
Landlock), and WARD_TEST_SUPERVISOR_FS_OFF=1 makes the supervisor allow
file accesses no rule names, so that only Landlock stands in the way (only
in the test-hooks build, build/ward-test-hooks; build/ward ignores it)."""
import json
import os
import shutil
import tempfile

from wardtest import PYTHON, host_view_policy, hooks_bin, ward_bin


def layer(layers, name):
    found = [l for l in layers if l["name"] == name]
    assert len(found) == 1, (name, layers)
    return found[0]


def env(**kw):
    e = dict(os.environ)
    for k in ("WARD_TEST_LANDLOCK_ABI", "WARD_TEST_SUPERVISOR_FS_OFF"):
        e.pop(k, None)
    e.update({k: str(v) for k, v in kw.items()})
    return e


class Secret:
    """A file outside the sandbox's trees that its uid could read (0644 in
    a 0755 directory): only ward stands between the code and it. Not in
    /tmp: the run has its own."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ward-test-ll-", dir="/var/tmp")
        os.chmod(self.dir, 0o755)
        self.path = os.path.join(self.dir, "secret")
        self.token = "landlock-canary-" + os.urandom(6).hex()
        with open(self.path, "w") as f:
            f.write(self.token)
        os.chmod(self.path, 0o644)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


READ_SECRET = """import os
for what, f in (("read", lambda: open(%r).read()),
                ("list", lambda: os.listdir(%r))):
    try:
        print(what, f())
    except OSError as e:
        print(what, "errno", e.errno)
open("mine.txt", "w").write("in the workdir")
print(open("mine.txt").read())
"""


def assert_supervisor_denies(ctx, s, policy, binary, **env_kw):
    """READ_SECRET on s under policy, run by binary: the supervisor denies
    both accesses by the default rule, and nothing TEST ONLY is said."""
    r, j = ctx.run_json(READ_SECRET % (s.path, s.dir), "--policy", policy,
                        binary=binary, env=env(**env_kw))
    assert j["stdout"] == "read errno 13\nlist errno 13\nin the workdir\n", j
    assert "TEST ONLY" not in r.stderr, r
    d = [e for e in ctx.denials(j["run_id"]) if e["target"] == s.path]
    assert d and d[0]["rule"] == "default", ctx.denials(j["run_id"])


def test_landlock_active_by_default(ctx):
    r, j = ctx.run_json("print('hi')", env=env())
    assert r.code == 0 and j["stdout"] == "hi\n", r
    ll = layer(j["layers"], "landlock")
    assert ll["active"] is True, ll
    assert ll["detail"].startswith("ABI "), ll
    # the default profile: no network peer, signals within the run
    assert "TCP connect no port, bind no port" in ll["detail"], ll
    assert "scoped: signals, abstract unix sockets" in ll["detail"], ll
    assert "landlock" not in r.stderr, r


def test_landlock_refuses_what_no_rule_allows(ctx):
    s = Secret()
    try:
        code = READ_SECRET % (s.path, s.dir)
        # the host's view: the secret exists inside (the default view
        # would not show it at all: ENOENT, whatever else holds)
        hv = host_view_policy(ctx)
        r, j = ctx.run_json(code, "--policy", hv, binary=hooks_bin(),
                            env=env(WARD_TEST_SUPERVISOR_FS_OFF=1))
        assert r.code == 0, r
        # the supervisor let both through (test switch); the kernel did not
        assert j["stdout"] == "read errno 13\nlist errno 13\nin the workdir\n", j
        assert s.token not in r.stdout, r
        assert "TEST ONLY" in r.stderr, r
        assert "TEST ONLY" in layer(j["layers"], "ptrace")["detail"], j["layers"]
        allowed = ctx.events(j["run_id"], "target = ? and decision = 'allow'",
                             s.path)
        assert allowed and allowed[0]["rule"] == "test.fs-off", allowed
        assert not ctx.denials(j["run_id"]), ctx.denials(j["run_id"])

        # the same run without Landlock: the switch is ignored, the
        # supervisor denies as always (never a run with neither)
        assert_supervisor_denies(ctx, s, hv, hooks_bin(),
                                 WARD_TEST_SUPERVISOR_FS_OFF=1,
                                 WARD_TEST_LANDLOCK_ABI=0)
    finally:
        s.close()


def test_supervisor_fs_off_is_only_in_the_test_hooks_build(ctx):
    # build/ward has no trace of the switch: the supervisor denies as
    # always, nothing is said, and the name is not in the binary
    s = Secret()
    try:
        assert_supervisor_denies(ctx, s, host_view_policy(ctx), ward_bin(),
                                 WARD_TEST_SUPERVISOR_FS_OFF=1)
    finally:
        s.close()
    # nor any other TEST ONLY switch (stalls, a lower Landlock ABI, forced
    # copies, a failing unwinder): no environment weakens a real ward
    switches = [b"WARD_TEST_SUPERVISOR_FS_OFF", b"WARD_TEST_LANDLOCK_ABI",
                b"WARD_TEST_INIT_STALL", b"WARD_TEST_SPAWN_STALL_MS",
                b"WARD_TEST_COPY_ALWAYS", b"WARD_TEST_UNWINDER"]
    with open(ward_bin(), "rb") as f:
        data = f.read()
        assert b"WARD_TEST_" not in data, [w for w in switches if w in data]
    with open(hooks_bin(), "rb") as f:
        data = f.read()
        assert all(w in data for w in switches), [w for w in switches if w not in data]
    r, j = ctx.run_json("print(1)", binary=ward_bin(),
                        env=env(WARD_TEST_LANDLOCK_ABI=0))
    assert r.code == 0 and layer(j["layers"], "landlock")["active"] is True, j["layers"]


def test_landlock_missing_is_said_once_recorded_and_the_run_goes_on(ctx):
    r, j = ctx.run_json("print('still runs')", env=env(WARD_TEST_LANDLOCK_ABI=0))
    assert r.code == 0 and j["stdout"] == "still runs\n", r
    lines = [x for x in r.stderr.splitlines() if "landlock" in x]
    assert len(lines) == 1 and "not available" in lines[0], r.stderr
    ll = layer(j["layers"], "landlock")
    assert ll["active"] is False and "not available" in ll["detail"], ll
    row = layer(json.loads(ctx.last_run()["layers"]), "landlock")
    assert row == ll, row


def test_landlock_older_abi_is_partial(ctx):
    r, j = ctx.run_json("print(1)", env=env(WARD_TEST_LANDLOCK_ABI=3))
    assert r.code == 0, r
    ll = layer(j["layers"], "landlock")
    assert ll["active"] is True and ll["detail"].startswith("ABI 3:"), ll
    assert "TCP connect not restricted" in ll["detail"], ll
    assert "no TCP port rules (ABI 4)" in ll["detail"], ll
    assert "no signal or abstract-socket scoping (ABI 6)" in ll["detail"], ll
    lines = [x for x in r.stderr.splitlines() if "landlock" in x]
    assert len(lines) == 1 and "ABI 3" in lines[0], r.stderr


def test_require_landlock_missing_is_fatal(ctx):
    r = ctx.run("print('RAN')", "--require", "landlock",
                env=env(WARD_TEST_LANDLOCK_ABI=0))
    assert r.code == 125 and "RAN" not in r.stdout, r
    assert "required layer landlock is not active" in r.stderr, r
    assert "not available" in r.stderr, r
    run = ctx.last_run()
    assert run["status"] == "error" and "landlock" in run["cause"], run
    assert not ctx.sql("select * from processes where run_id = ? and exe is not null"
                       " and exe like '%python%'", run["id"])


def test_require_from_the_policy(ctx):
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "default.json")) as f:
        pol = json.load(f)
    pol["require"] = ["landlock"]
    path = ctx.write("p.json", json.dumps(pol))
    r = ctx.run("print('RAN')", "--policy", path, env=env(WARD_TEST_LANDLOCK_ABI=0))
    assert r.code == 125 and "RAN" not in r.stdout, r
    assert "required layer landlock" in r.stderr, r
    r = ctx.run("print('RAN')", "--policy", path, env=env())
    assert r.code == 0 and r.stdout == "RAN\n", r
    pol["require"] = ["landlock", "moat"]
    ctx.write("p.json", json.dumps(pol, indent=1))
    r = ctx.run("print('RAN')", "--policy", path)
    assert r.code == 125 and 'unknown layer "moat"' in r.stderr, r
    assert "p.json:" in r.stderr and "require[1]" in r.stderr, r


def test_require_option_errors(ctx):
    r = ctx.run("pass", "--require", "landlock,moat")
    assert r.code == 125 and "unknown layer 'moat'" in r.stderr, r
    assert "valid: seccomp, ptrace, landlock" in r.stderr, r
    r = ctx.run("print('RAN')", "--require", "seccomp,ptrace,landlock", env=env())
    assert r.code == 0 and r.stdout == "RAN\n", r


def test_audit_profile_has_landlock_off(ctx):
    r, j = ctx.run_json("print(1)", "--profile", "audit", env=env())
    assert r.code == 0, r
    ll = layer(j["layers"], "landlock")
    assert ll["active"] is False and "audit mode" in ll["detail"], ll
    assert "landlock" not in r.stderr, r  # a choice, not a missing feature
    r = ctx.run("print('RAN')", "--profile", "audit", "--require", "landlock",
                env=env())
    assert r.code == 125 and "audit mode" in r.stderr, r


def test_tcp_ports_the_policy_allows_stay_usable(ctx):
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "default.json")) as f:
        pol = json.load(f)
    pol["net"]["rules"] = [
        {"family": "inet", "addr": "127.0.0.1", "port": 47311,
         "ops": ["bind", "connect"]}]
    path = ctx.write("p.json", json.dumps(pol))
    # Landlock lets both through: the bind succeeds, and the connect
    # reaches the kernel's TCP stack (refused: nothing listens), not EACCES
    code = ("import socket\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 47311)); print('bound')\n"
            "c = socket.socket()\n"
            "try:\n c.connect(('127.0.0.1', 47311))\n"
            "except OSError as e: print('connect errno', e.errno)\n")
    r, j = ctx.run_json(code, "--policy", path, env=env())
    assert r.code == 0 and j["stdout"] == "bound\nconnect errno 111\n", r
    ll = layer(j["layers"], "landlock")
    assert "TCP connect 1 port, bind 1 port" in ll["detail"], ll


def test_signals_within_the_run_still_work(ctx):
    code = ("import os, signal, subprocess, sys\n"
            f"p = subprocess.Popen([{PYTHON!r}, '-c', 'import time; time.sleep(30)'])\n"
            "os.kill(p.pid, signal.SIGTERM); print(p.wait())\n")
    r, j = ctx.run_json(code, env=env())
    assert r.code == 0 and j["stdout"] == "-15\n", r
    assert "signals" in layer(j["layers"], "landlock")["detail"]
