"""ward learn: a least-privilege policy from audit-mode runs. Proven by
running the same code under the learned policy (no denials) and code that
goes further (a write outside the workdir, a connect to another port, a
program not seen) being denied; its refusals and errors (exit 125)."""
import json
import os
import socket
import shutil
import sqlite3
import tempfile

import wardtest


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _workload(port):
    return f"""
import os, socket, subprocess, threading
rows = open('data.csv').read().splitlines()
total = sum(int(r.split(',')[1]) for r in rows[1:])
os.makedirs('out', exist_ok=True)
with open('out/total.txt', 'w') as f:
    f.write(str(total))
names = sorted(os.listdir('.'))
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(('127.0.0.1', {port}))
srv.listen(1)
c = socket.create_connection(('127.0.0.1', {port}))
c.close()
srv.close()
kernel = subprocess.run(['uname', '-s'], capture_output=True, text=True).stdout.strip()
print(total, names, kernel)
"""


def _run(ctx, code, *opts):
    data = ctx.path("data.csv")
    if not os.path.exists(data):
        ctx.write("data.csv", "name,n\na,1\nb,2\nc,39\n")
    return ctx.ward("run", "--input", data, *opts, "-c", code)


def test_learn_allows_exactly_what_the_run_did(ctx):
    port = _free_port()
    code = _workload(port)
    r = _run(ctx, code, "--profile", "audit")
    assert r.code == 0 and r.stdout.startswith("42 "), r
    audit_run = ctx.last_run()
    # the audit run would have been denied under the default profile
    assert audit_run["denials"] > 0, audit_run
    learned = ctx.path("learned.json")
    r = ctx.ward("learn", audit_run["id"], "-o", learned, "--db", ctx.db)
    assert r.code == 0, r
    pol = json.load(open(learned))
    assert pol["mode"] == "enforce" and pol["version"] == 1
    assert all("why" in rule for rule in pol["fs"]), pol["fs"]
    assert all(audit_run["id"] in rule["why"] for rule in pol["fs"]), pol["fs"]
    paths = {rule["path"]: rule["allow"] for rule in pol["fs"]}
    assert "write" in paths.get("$WORKDIR/out/total.txt", []) or \
        "write" in paths.get("$WORKDIR/out", []), paths
    assert not any(p.startswith(audit_run["workdir"]) for p in paths), \
        "the workdir is $WORKDIR, not the run's temporary path"
    assert "/usr/lib/python3.11" in paths or any(
        p.startswith("/usr/lib/python3") and p.count("/") == 3 for p in paths), paths
    assert "/usr/bin/uname" in pol["exec"]["allow"], pol["exec"]
    net = pol["net"]["rules"]
    peer = [n for n in net if n.get("port") == port]
    assert len(peer) == 1 and peer[0]["addr"] == "127.0.0.1", net
    assert sorted(peer[0]["ops"]) == ["bind", "connect"], net
    assert {"ops": ["listen"], "family": "inet"} in \
        [{k: v for k, v in n.items() if k != "why"} for n in net], net
    assert pol["signals"] == "run"

    # the same code under the learned policy: nothing denied
    r = _run(ctx, code, "--policy", learned)
    assert r.code == 0 and r.stdout.startswith("42 "), r
    enforced = ctx.last_run()
    assert enforced["policy_name"] == "learned" and enforced["denials"] == 0, \
        ctx.denials(enforced["id"])
    # and ward recheck agrees: the audit run changes nothing under it
    r = ctx.ward("recheck", audit_run["id"], "--policy", learned, "--db", ctx.db,
                 "--fail-on-change")
    assert r.code == 0, r

    # what the learned policy must not cover
    outside = ctx.path("outside.txt")
    r = _run(ctx, f"""
import socket, subprocess
for what, fn in [
    ('outside', lambda: open({outside!r}, 'w').write('x')),
    ('home', lambda: open('/root/x', 'w').write('x')),
    ('port', lambda: socket.create_connection(('127.0.0.1', {port + 1}))),
    ('prog', lambda: subprocess.run(['/usr/bin/id'])),
]:
    try:
        fn()
        print(what, 'ok')
    except OSError as e:
        print(what, e.errno)
""", "--policy", learned)
    assert r.code == 0, r
    # a program the run never ran is not even in the learned policy's view
    # (ENOENT): nothing there to exec
    assert r.stdout.split("\n")[:4] == ["outside 13", "home 13", "port 111", "prog 2"], r
    assert not os.path.exists(outside)
    d = ctx.denials(ctx.last_run()["id"])
    assert [(x["syscall"], x["rule"]) for x in d] == [
        ("openat", "default"), ("openat", "default"), ("connect", "default")], d
    miss = ctx.events(ctx.last_run()["id"], "syscall = 'execve' and target = '/usr/bin/id'")
    assert miss and miss[0]["rule"] == "exec.missing", miss


def test_learn_folds_directories_and_flags_what_audit_would_deny(ctx):
    code = ("import os\nos.makedirs('d', exist_ok=True)\n"
            "for i in range(12):\n    open(f'd/f{i}', 'w').write('x')\n"
            "for i in range(3):\n    open(f'e{i}', 'w').write('x')\n"
            "try:\n    open('/etc/shadow').read()\nexcept OSError:\n    pass\n"
            "try:\n    open('/proc/self/mem', 'rb')\nexcept OSError as e:\n    print(e.errno)\n")
    r = ctx.run(code, "--profile", "audit")
    assert r.code == 0 and r.stdout == "13\n", "ward's floor holds in audit mode too"
    run_id = ctx.last_run()["id"]
    r = ctx.ward("learn", run_id, "--db", ctx.db)
    assert r.code == 0 and "review 1 rule" in r.stderr, r
    pol = json.loads(r.stdout)
    paths = {rule["path"]: rule for rule in pol["fs"]}
    assert "$WORKDIR/d" in paths and not any(p.startswith("$WORKDIR/d/") for p in paths), paths
    assert set(paths["$WORKDIR/d"]["allow"]) >= {"write", "create"}
    assert "13 events" in paths["$WORKDIR/d"]["why"], paths["$WORKDIR/d"]  # mkdir + 12
    assert all(f"$WORKDIR/e{i}" in paths for i in range(3)), "3 files stay exact"
    assert "REVIEW" in paths["/etc/shadow"]["why"] and \
        "secret-shadow" in paths["/etc/shadow"]["why"], paths["/etc/shadow"]
    assert not any("/mem" in p for p in paths), "the floor's denial is not learned"
    learned = ctx.write("learned.json", r.stdout)
    r = ctx.run(code, "--policy", learned)
    assert r.code == 0 and r.stdout == "13\n", r
    d = ctx.denials(ctx.last_run()["id"])
    assert [(x["rule"], x["target"]) for x in d][-1][0] == "proc.mem", d
    assert [x["rule"] for x in d] == ["proc.mem"], "only the floor denies"
    r = ctx.ward("learn", run_id, "--db", ctx.db, "--threshold", "20")
    pol = json.loads(r.stdout)
    assert "$WORKDIR/d/f11" in {rule["path"] for rule in pol["fs"]}, "--threshold 20 keeps them"


def test_learn_refusals_and_errors(ctx):
    r = ctx.run("print(1)")
    assert r.code == 0, r
    enforce_id = ctx.last_run()["id"]
    r = ctx.ward("learn", enforce_id, "--db", ctx.db)
    assert r.code == 125 and "enforce mode" in r.stderr and "--profile audit" in r.stderr, r
    assert r.stdout == ""
    r = ctx.ward("learn", "--help")
    assert r.code == 0 and "--threshold" in r.stdout and "audit" in r.stdout, r
    r = ctx.ward("learn", "--db", ctx.db)
    assert r.code == 125 and "name the runs" in r.stderr, r
    r = ctx.ward("learn", "abcdefabcdef", "--db", ctx.db)
    assert r.code == 125 and "no run matches 'abcdefabcdef'" in r.stderr, r
    r = ctx.ward("learn", enforce_id, "--threshold", "0", "--db", ctx.db)
    assert r.code == 125 and "--threshold" in r.stderr, r
    r = ctx.run("print(2)", "--profile", "audit")
    audit_id = ctx.last_run()["id"]
    r = ctx.ward("learn", audit_id, "-o", ctx.path("no", "such", "dir.json"), "--db", ctx.db)
    assert r.code == 125 and "dir.json" in r.stderr, r
    junk = ctx.write("junk.db", "not sqlite " * 200)
    r = ctx.ward("learn", "last", "--db", junk)
    assert r.code == 125 and "junk.db" in r.stderr, r
    # a policy file with errors, as `ward run --policy` reports it
    bad = ctx.write("learned.json", '{"version": 1,\n "fs": [{"path": "/x", "allow": ["read"],\n'
                    '  "why": 7}]}')
    r = ctx.ward("run", "--policy", bad, "-c", "print(1)")
    assert r.code == 125 and "learned.json:3:" in r.stderr and "fs[0].why" in r.stderr, r


def test_learn_reads_the_kernels_result_when_the_record_has_it(ctx):
    """A call that failed with ENOENT is no reason to widen the policy:
    with events.result in the record, such probes stay exact rules; a
    record without results (before schema 5) folds them as before."""
    code = ("for i in range(10):\n"
            "    try:\n        open(f'/usr/share/ward-learn-none/m{i}.py')\n"
            "    except FileNotFoundError:\n        pass\n")
    r = ctx.run(code, "--profile", "audit")
    assert r.code == 0, r
    run_id = ctx.last_run()["id"]
    rows = ctx.events(run_id, "target like '/usr/share/ward-learn-none/%'")
    assert len(rows) == 10 and all(e["result"] == -2 for e in rows), rows
    r = ctx.ward("learn", run_id, "--db", ctx.db)
    assert r.code == 0, r
    paths = {rule["path"]: rule for rule in json.loads(r.stdout)["fs"]}
    assert "/usr/share/ward-learn-none" not in paths, paths.keys()
    probes = [p for p in paths if p.startswith("/usr/share/ward-learn-none/")]
    assert len(probes) == 10, paths.keys()
    assert all("failed with ENOENT" in paths[p]["why"] for p in probes), paths[probes[0]]
    # the same record without the kernel's results, as schema 4 had it
    copy = ctx.path("without-result.db")
    src = sqlite3.connect(ctx.db)
    dst = sqlite3.connect(copy)
    src.backup(dst)
    src.close()
    dst.execute("update events set result = null")
    dst.commit()
    dst.close()
    r = ctx.ward("learn", run_id, "--db", copy)
    assert r.code == 0, r
    paths = {rule["path"]: rule for rule in json.loads(r.stdout)["fs"]}
    assert "/usr/share/ward-learn-none" in paths, "without results: folded"


def _self_check_line(stderr):
    """The self-check's summary line and the re-run's id in it."""
    lines = [l for l in stderr.splitlines() if l.startswith("ward: self-check: re-ran run ")]
    assert len(lines) == 1, stderr
    return lines[0], lines[0].split(" as ", 1)[1].split()[0]


def test_learn_self_check_reruns_the_code(ctx):
    """ward learn re-runs the recorded code under the policy it learned:
    random tempfile names and a missing optional file re-run with no
    denial; what the learned policy misses is reported (exit 1)."""
    optional = f"/etc/ward-optional-{os.getpid()}.conf"
    assert not os.path.exists(optional)
    code = f"""
import os, shutil, tempfile
try:
    open({optional!r}).read()
except FileNotFoundError:
    print('no optional file')
with tempfile.NamedTemporaryFile('w') as f:
    f.write('x')
fd, p = tempfile.mkstemp(suffix='.csv')
os.close(fd)
os.unlink(p)
d = tempfile.mkdtemp()
open(os.path.join(d, 'a.txt'), 'w').write('1')
shutil.rmtree(d)
print('ok')
"""
    r = _run(ctx, code, "--profile", "audit")
    assert r.code == 0 and r.stdout == "no optional file\nok\n", r
    audit_run = ctx.last_run()
    learned = ctx.path("learned.json")
    r = ctx.ward("learn", audit_run["id"], "-o", learned, "--db", ctx.db)
    assert r.code == 0, r
    line, rerun_id = _self_check_line(r.stderr)
    assert ": 0 denials, exit 0 as recorded" in line, r.stderr
    rerun = ctx.sql("select * from runs where id = ?", rerun_id)[0]
    assert rerun["denials"] == 0 and rerun["status"] == "ok", rerun
    argv = json.loads(rerun["argv"])
    assert argv[argv.index("--rerun-of") + 1] == audit_run["id"], argv
    assert [i["name"] for i in ctx.sql("select name from inputs where run_id = ?", rerun_id)] \
        == ["data.csv"], "the recorded inputs were given again"
    pol = json.load(open(learned))
    paths = {rule["path"]: rule["allow"] for rule in pol["fs"]}
    assert set(paths["$WORKDIR/tmp"]) >= {"write", "create", "delete"}, paths
    assert not any(p.startswith("$WORKDIR/tmp/") for p in paths), paths
    # and the same code under it, by hand: new random names, no denial
    r = _run(ctx, code, "--policy", learned)
    assert r.code == 0 and r.stdout == "no optional file\nok\n", r
    assert ctx.last_run()["denials"] == 0, ctx.denials(ctx.last_run()["id"])

    # --no-rerun-check: only the recorded events are judged again
    n = len(ctx.sql("select id from runs"))
    r = ctx.ward("learn", audit_run["id"], "--no-rerun-check", "--db", ctx.db)
    assert r.code == 0 and "self-check" not in r.stderr, r
    assert json.loads(r.stdout)["fs"] and len(ctx.sql("select id from runs")) == n


def test_learn_self_check_reports_what_the_policy_misses(ctx):
    # The code reads /etc/hostname only when it cannot see the marker: the
    # audit run sees the host (the marker exists), the learned policy's
    # view shows only what it allows (the marker does not).
    marker = f"/var/tmp/ward-learn-marker-{os.getpid()}"
    open(marker, "w").close()
    try:
        code = (f"import os\nif not os.path.exists({marker!r}):\n"
                "    open('/etc/hostname').read()\nprint('done')\n")
        r = ctx.run(code, "--profile", "audit")
        assert r.code == 0, r
        run_id = ctx.last_run()["id"]
        learned = ctx.path("learned.json")
        r = ctx.ward("learn", run_id, "-o", learned, "--db", ctx.db)
    finally:
        os.unlink(marker)
    assert r.code == 1, r
    line, rerun_id = _self_check_line(r.stderr)
    assert ": 1 denial," in line and "recorded run: exit 0" in line, r.stderr
    assert "openat /etc/hostname: rule default -> EACCES" in r.stderr, r.stderr
    assert f"ward show {rerun_id} --denied" in r.stderr, r.stderr
    assert os.path.exists(learned), "the policy is written all the same"
    d = ctx.denials(rerun_id)
    assert [(x["syscall"], x["target"]) for x in d] == [("openat", "/etc/hostname")], d


def test_learn_self_check_needs_the_code_and_inputs_in_the_record(ctx):
    data = ctx.write("big.csv", "a,b\n1,2\n")
    r = ctx.ward("run", "--profile", "audit", "--keep-inputs", "0", "--input", data,
                 "-c", "print(open('big.csv').read().count(','))")
    assert r.code == 0 and r.stdout == "2\n", r
    run_id = ctx.last_run()["id"]
    n = len(ctx.sql("select id from runs"))
    r = ctx.ward("learn", run_id, "--db", ctx.db)
    assert r.code == 0, r
    assert f"run {run_id} cannot be re-run from the record (its input 'big.csv'" in r.stderr, r
    assert len(ctx.sql("select id from runs")) == n, "nothing was re-run"


def test_learn_follows_a_chain_of_links_to_what_was_read(ctx):
    """A library reached through a chain of symlinks whose middle is in a
    directory the code never named (Debian's /etc/alternatives): the
    learned policy shows each link, so the self-check's re-run finds the
    same file by the same name (no denial)."""
    base = tempfile.mkdtemp(prefix="ward-learn-links-", dir="/var/tmp")
    # the middle of the chain elsewhere: a directory no rule names
    alt = tempfile.mkdtemp(prefix="ward-learn-alt-", dir="/var/tmp")
    try:
        for d in ("lib", "real"):
            os.mkdir(os.path.join(base, d))
        os.symlink(alt, os.path.join(base, "alternatives"))
        with open(os.path.join(base, "real", "libx.so.1.2"), "w") as f:
            f.write("the library\n")
        os.symlink("libx.so.1.2", os.path.join(base, "real", "libx.so.1"))
        os.symlink(os.path.join(base, "real", "libx.so.1"), os.path.join(alt, "libx.so.1"))
        os.symlink(os.path.join(alt, "libx.so.1"), os.path.join(base, "lib", "libx.so.1"))
        # enough other files that lib/ is learned as one rule (folded)
        for i in range(12):
            with open(os.path.join(base, "lib", f"f{i}.so"), "w") as f:
                f.write("x\n")
            os.chmod(os.path.join(base, "lib", f"f{i}.so"), 0o644)
        for top in (base, alt):
            for root, dirs, files in os.walk(top):
                os.chmod(root, 0o755)
        lib = os.path.join(base, "lib")
        code = (f"import os\nfor n in sorted(os.listdir({lib!r})):\n"
                f"    open(os.path.join({lib!r}, n)).read()\n"
                f"print(open({os.path.join(lib, 'libx.so.1')!r}).read(), end='')")
        r = ctx.run(code, "--profile", "audit")
        assert r.code == 0 and r.stdout == "the library\n", r
        run_id = ctx.last_run()["id"]
        out = ctx.path("learned.json")
        r = ctx.ward("learn", run_id, "--db", ctx.db, "-o", out)
        assert r.code == 0 and "0 denials" in r.stderr, r
        paths = {rule["path"] for rule in json.load(open(out))["fs"]}
        assert os.path.join(alt, "libx.so.1") in paths, paths
    finally:
        shutil.rmtree(base)
        shutil.rmtree(alt)


def test_learn_a_setup_phase_apart(ctx):
    """A run with a setup (recorded in audit mode, under a policy with a
    setup phase): what the setup's processes did is learned as the learned
    policy's phases.setup (a file written, a program run, a peer reached),
    apart from what the code did; the self-check re-runs both phases; the
    code under the learned policy may do none of the setup's extras."""
    port = _free_port()
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "audit.json")) as f:
        pol = json.load(f)
    pol["phases"] = {"setup": {"description": "anything, recorded"}}
    recording = ctx.path("audit-setup.json")
    with open(recording, "w") as f:
        json.dump(pol, f)
    setup = ("import socket, subprocess\n"
             f"srv = socket.socket(); srv.bind(('127.0.0.1', {port})); srv.listen(1)\n"
             f"socket.create_connection(('127.0.0.1', {port})).close(); srv.close()\n"
             "open('made', 'w').write(subprocess.run(['/usr/bin/uname', '-s'],"
             " capture_output=True, text=True).stdout)\n")
    main = "print(open('made').read().strip())"
    r = ctx.ward("run", "--policy", recording, "--setup-code", setup, "-c", main)
    assert r.code == 0 and r.stdout == "Linux\n", r
    rid = ctx.last_run()["id"]
    learned = ctx.path("learned.json")
    r = ctx.ward("learn", rid, "-o", learned, "--db", ctx.db)
    assert r.code == 0, r
    assert "0 denials" in r.stderr, r  # the self-check ran both phases
    pol = json.load(open(learned))
    ph = pol["phases"]["setup"]
    paths = {x["path"]: x["allow"] for x in pol["fs"]}
    setup_paths = {x["path"]: x["allow"] for x in ph["fs"]}
    assert paths.get("$WORKDIR/made") == ["read"], paths
    assert "write" in setup_paths.get("$WORKDIR/made", []), setup_paths
    assert "/usr/bin/uname" in ph["exec"]["allow"], ph["exec"]
    assert "/usr/bin/uname" not in pol["exec"]["allow"], pol["exec"]
    assert [x["port"] for x in ph["net"]["rules"] if x.get("port")] == [port] * len(
        [x for x in ph["net"]["rules"] if x.get("port")]) and ph["net"]["rules"], ph["net"]
    assert not [x for x in pol["net"]["rules"] if x.get("port") == port], pol["net"]
    # under the learned policy: the same setup and code run clean; the code
    # alone may neither write what the setup wrote nor run its program
    r = ctx.ward("run", "--policy", learned, "--setup-code", setup, "-c", main)
    assert r.code == 0 and r.stdout == "Linux\n", r
    assert ctx.last_run()["denials"] == 0
    r = ctx.ward("run", "--policy", learned, "-c",
                 "import subprocess\n"
                 "try:\n    open('made', 'w')\nexcept OSError as e:\n    print(type(e).__name__)\n"
                 "try:\n    subprocess.run(['/usr/bin/uname'])\nexcept OSError as e:\n"
                 "    print(type(e).__name__)\n")
    # (a program the policy does not grant is not in the code's view)
    assert r.stdout.split() == ["PermissionError", "FileNotFoundError"], r
