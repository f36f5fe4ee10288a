"""Policy phases (issue 27 §2): `ward run --setup` runs a setup step under
the policy's setup phase, then the code under the policy itself, in the same
workdir and record. The end-to-end case installs a wheel with pip from a
package index served on loopback by the test (offline: PyPI is never
reached), then checks that the code imports it, cannot reach the index,
cannot write where only the setup could, and that nothing the setup started
survives into the code's phase."""
import base64
import functools
import hashlib
import http.server
import json
import os
import threading
import zipfile

import wardtest
from wardtest import HOME

PKG_VERSION = "1.0"


def build_wheel(dest):
    """tinypkg-1.0-py3-none-any.whl, made by hand (PEP 427): the module,
    METADATA, WHEEL and RECORD with each file's hash."""
    files = {
        "tinypkg/__init__.py": "VALUE = 42\n",
        f"tinypkg-{PKG_VERSION}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: tinypkg\nVersion: {PKG_VERSION}\n",
        f"tinypkg-{PKG_VERSION}.dist-info/WHEEL":
            "Wheel-Version: 1.0\nGenerator: ward-test\nRoot-Is-Purelib: true\n"
            "Tag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
        record.append(f"{name},sha256={digest.rstrip(b'=').decode()},{len(text.encode())}")
    rec_name = f"tinypkg-{PKG_VERSION}.dist-info/RECORD"
    files[rec_name] = "\n".join(record + [f"{rec_name},,"]) + "\n"
    path = os.path.join(dest, f"tinypkg-{PKG_VERSION}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(name, text)
    return path


class Index:
    """A PEP 503 simple index of tinypkg on 127.0.0.1, counting requests."""

    def __init__(self, root):
        os.makedirs(os.path.join(root, "simple", "tinypkg"))
        os.makedirs(os.path.join(root, "files"))
        whl = build_wheel(os.path.join(root, "files"))
        with open(whl, "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        name = os.path.basename(whl)
        with open(os.path.join(root, "simple", "index.html"), "w") as f:
            f.write('<!DOCTYPE html><html><body><a href="tinypkg/">tinypkg</a></body></html>\n')
        with open(os.path.join(root, "simple", "tinypkg", "index.html"), "w") as f:
            f.write(f'<!DOCTYPE html><html><body><a href="../../files/{name}#sha256={sha}">'
                    f'{name}</a></body></html>\n')
        self.requests = []
        index = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *a):
                index.requests.append(self.path)

        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=root))
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/simple"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def phased_policy(ctx, port, setup_net=None):
    """The default profile, offline (the net rule "offline" names the
    denial), its site-packages read-only; a setup phase that may reach the
    index, write site-packages and run pip and a shell. The index rule has
    a port and no address: a rule for 127.0.0.1 alone keeps the run in a
    network namespace of its own, whose loopback is not the host's (a
    domain rule through ward's proxy, net.allow_domains, takes its place
    later: only this section of the setup phase changes)."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "default.json")) as f:
        pol = json.load(f)
    pol["name"] = "phased"
    pol["fs"].append({"id": "site-ro", "path": "$WORKDIR/site-packages",
                      "deny": ["write", "create", "delete"]})
    pol["net"]["rules"] = [
        {"id": "offline", "family": "inet", "action": "deny"},
        {"id": "offline6", "family": "inet6", "action": "deny"},
    ] + pol["net"].get("rules", [])
    pol["phases"] = {"setup": {
        "description": "pip install from the loopback index",
        "fs": [{"id": "site-rw", "path": "$WORKDIR/site-packages",
                "allow": ["write", "create", "delete"]},
               # pip's user agent names the distribution
               {"id": "pip-distro", "path": "/etc/debian_version", "allow": ["read"]}],
        "exec": {"allow": ["/usr/bin/dash", "/usr/bin/pip3", "/usr/bin/sleep"]},
        "net": setup_net or {"rules": [{"id": "index", "family": "inet", "port": port}]},
    }}
    path = ctx.path("phased.json")
    with open(path, "w") as f:
        json.dump(pol, f)
    return path


SETUP_SH = """\
set -e
# a process the setup leaves behind: it must not live into the code's phase
/usr/bin/sleep 300 &
/usr/bin/pip3 install --index-url {url} --target "$HOME/site-packages" \\
    --disable-pip-version-check --no-cache-dir --no-input tinypkg
echo setup done
"""

MAIN_PY = """\
import errno, os, socket, sys
sys.path.insert(0, "site-packages")
import tinypkg
print("imported", tinypkg.VALUE)
s = socket.socket()
try:
    s.connect(("127.0.0.1", {port}))
    print("index reached")
except OSError as e:
    print("index", errno.errorcode[e.errno])
s.close()
for p in ("site-packages/tinypkg/__init__.py", "site-packages/evil.py"):
    try:
        open(p, "a").write("x = 1\\n")
        print("wrote", p)
    except OSError as e:
        print("write", errno.errorcode[e.errno])
print("fds", sorted(int(f) for f in os.listdir("/proc/self/fd")))
"""


def test_pip_in_setup_then_offline_main(ctx):
    wardtest.require("/usr/bin/pip3")
    index = Index(ctx.path("index"))
    try:
        pol = phased_policy(ctx, index.port)
        setup = ctx.write("setup.sh", SETUP_SH.format(url=index.url))
        main = ctx.write("main.py", MAIN_PY.format(port=index.port))
        before = len(index.requests)
        r = ctx.ward("run", "--policy", pol, "--setup", setup, main, timeout=180)
        n_setup_requests = len(index.requests) - before
    finally:
        index.stop()
    assert "setup done" in r.stdout, r
    assert r.code == 0, r
    out = r.stdout.splitlines()
    # main: the package the setup installed is there
    assert "imported 42" in out, r
    # main: the index is refused by the supervisor (never reached: no
    # request came after pip's)
    assert "index ECONNREFUSED" in out, r
    assert n_setup_requests >= 2, index.requests  # simple page and the wheel
    assert not any(l.startswith("wrote") for l in out), r
    assert out.count("write EACCES") == 2, r
    # main started afresh: no fd of the setup's (its sockets to the
    # index), only stdio and the listing's own
    fds = json.loads([l for l in out if l.startswith("fds ")][0][4:])
    assert set(fds) <= {0, 1, 2, 3}, fds
    assert not wardtest.pids_matching("/usr/bin/sleep 300"), "setup's sleep outlived ward"

    run = ctx.last_run()
    phases = ctx.sql("select * from phases where run_id=? order by n", run["id"])
    assert [p["name"] for p in phases] == ["setup", "main"], phases
    setup_ph, main_ph = phases
    assert setup_ph["status"] == "ok" and setup_ph["exit_code"] == 0, setup_ph
    assert b"pip3 install" in setup_ph["code"] or "pip3 install" in setup_ph["code"]
    assert "ended" in setup_ph["cause"], setup_ph  # the sleep was ended
    assert setup_ph["ended_ns"] <= main_ph["started_ns"], phases
    assert main_ph["first_serial"] == setup_ph["last_serial"] + 1, phases
    # the setup's processes: every one gone before main started
    procs = ctx.sql("select * from processes where run_id=? and serial between ? and ?",
                    run["id"], setup_ph["first_serial"], setup_ph["last_serial"])
    sleeps = [p for p in procs if (p["exe"] or "").endswith("/sleep")]
    assert sleeps and all(p["signal"] == 9 for p in sleeps), sleeps
    assert all(p["exit_ns"] and p["exit_ns"] <= main_ph["started_ns"] for p in procs), procs

    def phase_of(e):
        return "setup" if e["proc_serial"] <= setup_ph["last_serial"] else "main"
    conns = ctx.events(run["id"], "syscall = 'connect' and target like ?",
                       f"127.0.0.1:{index.port}")
    by = {(phase_of(e), e["decision"], e["rule"]) for e in conns}
    assert ("setup", "allow", "index") in by, by
    assert ("main", "deny", "offline") in by, by
    assert not any(p == "main" and d == "allow" for p, d, _ in by), by
    writes = [e for e in ctx.denials(run["id"]) if e["rule"] == "site-ro"]
    assert writes and all(phase_of(e) == "main" for e in writes), writes
    installed = ctx.events(run["id"], "rule = 'site-rw' and decision = 'allow'")
    assert installed and all(phase_of(e) == "setup" for e in installed)

    # the readers say each event's phase
    j = ctx.ward("show", "--json", run["id"]).json()
    assert [p["name"] for p in j["phases"]] == ["setup", "main"], j["phases"]
    ev = {(e["phase"], e["rule"]) for e in j["events"] if e["syscall"] == "connect"}
    assert ("setup", "index") in ev and ("main", "offline") in ev, ev
    text = ctx.ward("show", run["id"]).stdout
    assert ">> [-] phase setup" in text and "<< [-] phase main: ok" in text, text
    ocsf = [json.loads(l) for l in ctx.ward("export", "--db", ctx.db, "--format", "ocsf",
                                          run["id"]).stdout.splitlines()]
    denied = [o["unmapped"]["ward"] for o in ocsf
              if o.get("unmapped", {}).get("ward", {}).get("rule") == "offline"]
    assert denied and all(w["phase"] == "main" for w in denied), denied
    rows = [json.loads(l) for l in ctx.ward("export", "--db", ctx.db, run["id"]).stdout.splitlines()]
    assert [x["name"] for x in rows if x["type"] == "phase"] == ["setup", "main"]
    rep = ctx.ward("report", "--db", ctx.db, "--format", "text", run["id"])
    assert "phase setup" in rep.stdout and "phase main" in rep.stdout, rep


def test_pip_by_name_through_the_proxy_in_setup_only(ctx):
    """The issue's own layout: the setup reaches the index by name through
    ward's egress proxy (net.allow_domains, the name mapped with
    --add-host), pip installs; the code imports the package, and neither
    the name nor the address takes it to the index."""
    wardtest.require("/usr/bin/pip3")
    index = Index(ctx.path("index"))
    try:
        name = "index.test"
        pol = phased_policy(ctx, index.port, setup_net={
            "allow_domains": [f"{name}:{index.port}"],
            # the test's index is on the host's loopback, which the proxy
            # refuses unless the policy names it
            "allow_private": ["127.0.0.1"]})
        # (pip takes plain http from a name only when told to trust it)
        setup = ctx.write("setup.sh", SETUP_SH.format(url=f"http://{name}:{index.port}/simple")
                          .replace("--no-input", f"--no-input --trusted-host {name}"))
        main = ctx.write("main.py", MAIN_PY.format(port=index.port) + f"""
import urllib.request
for url in ("http://{name}:{index.port}/simple/", "http://127.0.0.1:{index.port}/simple/"):
    try:
        urllib.request.urlopen(url, timeout=5)
        print("fetched", url)
    except Exception as e:
        print("fetch failed", type(e).__name__)
print("proxy env", sorted(k for k in os.environ if k.lower().endswith("_proxy")))
""")
        r = ctx.ward("run", "--policy", pol, "--add-host", f"{name}:127.0.0.1",
                     "--setup", setup, main, timeout=180)
        n_requests = len(index.requests)
    finally:
        index.stop()
    assert "setup done" in r.stdout and r.code == 0, r
    out = r.stdout.splitlines()
    assert "imported 42" in out, r
    assert "index ECONNREFUSED" in out, r
    assert not any(l.startswith("fetched") for l in out), r
    assert out.count("fetch failed URLError") == 2, r
    assert "proxy env []" in out, r  # the code has no proxy to reach
    assert n_requests >= 2, index.requests
    run = ctx.last_run()
    setup_ph, main_ph = ctx.sql("select * from phases where run_id=? order by n", run["id"])
    rows = ctx.events(run["id"], "syscall = 'proxy'")
    assert rows and all(e["decision"] == "allow" and e["raw"] == f"{name}:{index.port}"
                        and e["target"] == f"127.0.0.1:{index.port}" for e in rows), rows
    assert all(e["rule"] == "phases.setup.net.allow_domains[0]" for e in rows), rows
    assert all(e["ts_ns"] <= main_ph["started_ns"] for e in rows), rows
    # main's tries at the index: denied by the supervisor, by address
    conns = ctx.events(run["id"], "syscall = 'connect' and proc_serial >= ? and target like ?",
                       main_ph["first_serial"], "127.0.0.1:%")
    assert conns and all(e["decision"] == "deny" for e in conns), conns
    # the readers put the proxy's rows (no process of their own) in the
    # phase of their time
    j = ctx.ward("show", "--json", run["id"]).json()
    assert {e["phase"] for e in j["events"] if e["syscall"] == "proxy"} == {"setup"}, j
    r = ctx.ward("recheck", "--db", ctx.db, "--policy", pol, run["id"])
    assert r.code == 0, r


def setup_policy(ctx):
    """The default profile with a setup phase that may also write
    $WORKDIR/made (which the code may not)."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "default.json")) as f:
        pol = json.load(f)
    pol["fs"].append({"id": "made-ro", "path": "$WORKDIR/made", "deny": ["write", "create"]})
    pol["phases"] = {"setup": {"fs": [{"id": "made-rw", "path": "$WORKDIR/made",
                                       "allow": ["write", "create"]}],
                               "exec": {"allow": ["/usr/bin/sleep", "/usr/bin/dash"]}}}
    path = ctx.path("setup-policy.json")
    with open(path, "w") as f:
        json.dump(pol, f)
    return path


def test_setup_code_json_and_the_one_way_switch(ctx):
    pol = setup_policy(ctx)
    r, j = ctx.run_json(
        "print(open('made').read()); open('made', 'a').write('again')",
        "--policy", pol, "--setup-code", "open('made', 'w').write('by setup'); print('set up')")
    assert j["stdout"].startswith("by setup\n"), j
    assert "PermissionError" in j["stderr"], j  # main cannot write it
    assert j["setup"]["status"] == "ok" and j["setup"]["stdout"] == "set up\n", j
    assert j["setup"]["exit_code"] == 0, j
    assert [d["rule"] for d in j["denials"]] == ["made-ro"], j
    run = ctx.last_run()
    assert [p["name"] for p in ctx.sql("select name from phases where run_id=? order by n",
                                       run["id"])] == ["setup", "main"]


def test_failed_setup_runs_no_code(ctx):
    pol = setup_policy(ctx)
    r = ctx.run("print('main ran')", "--policy", pol,
                "--setup-code", "import sys; print('trying'); sys.exit(3)")
    assert r.code == 3, r
    assert "trying" in r.stdout and "main ran" not in r.stdout, r
    run = ctx.last_run()
    assert run["status"] == "error" and "the code did not run" in run["cause"], run
    phases = ctx.sql("select name, status, exit_code from phases where run_id=?", run["id"])
    assert phases == [{"name": "setup", "status": "error", "exit_code": 3}], phases


def test_setup_needs_a_setup_phase(ctx):
    r = ctx.run("print(1)", "--setup-code", "print(0)")
    assert r.code == 125, r
    assert "has no setup phase" in r.stderr and "docs/policy.md" in r.stderr, r
    r = ctx.run("print(1)", "--setup-code", "print(0)", "--setup", "x.py")
    assert r.code == 125 and "one of --setup" in r.stderr, r


def test_session_setup_over_serve(ctx):
    from test_serve import Serve, PARAMS
    pol = setup_policy(ctx)
    s = Serve(ctx)
    try:
        res = s.ok("session.create", {"policy": pol, "setup": {
            "language": "python",
            "code": "import subprocess\n"
                    "subprocess.Popen(['/usr/bin/sleep', '371'])\n"
                    "open('made', 'w').write('by setup'); print('set up')\n"}})
        sid, run_id = res["session_id"], res["run_id"]
        assert res["setup"]["status"] == "ok", res
        assert res["setup"]["stdout"] == "set up\n", res
        # the setup's process is gone before the first cell
        assert not wardtest.pids_matching("/usr/bin/sleep\0" + "371"), "setup's sleep lives on"
        out = s.run(sid, "print(open('made').read())")
        assert out["logs"]["stdout"] == ["by setup\n"], out
        out = s.run(sid, "open('made', 'a').write('x')")
        assert out["error"]["name"] == "PermissionError", out
        # a setup string is in the session's language; it gets none of the
        # session's channels (the cell socket, the result pipe)
        res2 = s.ok("session.create", {"policy": pol, "setup":
                    "import os; print(sorted(int(f) for f in os.listdir('/proc/self/fd')))"})
        assert set(json.loads(res2["setup"]["stdout"])) <= {0, 1, 2, 3}, res2
        msg = s.err("session.create", {"policy": pol, "setup": "import sys; sys.exit(4)"},
                    PARAMS)
        assert "setup failed" in msg and "run " in msg, msg
        failed_run = msg.rsplit("run ", 1)[1].strip()
        msg = s.err("session.create", {"setup": "print(1)"}, PARAMS)
        assert "has no setup phase" in msg, msg
    finally:
        assert s.close() == 0
    phases = ctx.sql("select name, status, first_serial, last_serial from phases "
                     "where run_id=? order by n", run_id)
    assert [p["name"] for p in phases] == ["setup", "main"], phases
    assert phases[1]["first_serial"] == phases[0]["last_serial"] + 1, phases
    sleeps = ctx.sql("select signal, exit_ns from processes where run_id=? and exe like "
                     "'%/sleep'", run_id)
    assert sleeps and sleeps[0]["signal"] == 9, sleeps
    denied = ctx.sql("select proc_serial from events where run_id=? and rule='made-ro'",
                     run_id)
    assert denied and all(d["proc_serial"] > phases[0]["last_serial"] for d in denied)
    run = ctx.sql("select status, cause from runs where id=?", failed_run)[0]
    assert run["status"] == "error", run
    assert ctx.sql("select name, exit_code from phases where run_id=?", failed_run) == [
        {"name": "setup", "exit_code": 4}]


def test_session_setup_over_mcp(ctx):
    from test_mcp import Mcp
    pol = setup_policy(ctx)
    m = Mcp(ctx, "--policy", pol)
    try:
        m.initialize()
        tools = m.request("tools/list")["result"]["tools"]
        create = [t for t in tools if t["name"] == "create_session"][0]
        assert "setup" in create["inputSchema"]["properties"], create
        s = m.call("create_session", language="python",
                   setup={"code": "open('made', 'w').write('by setup')"})
        assert not s.get("isError"), s
        assert s["structuredContent"]["setup"]["status"] == "ok", s
        sid = s["structuredContent"]["session_id"]
        a = m.call("run_code", session_id=sid, code="print(open('made').read())")
        assert "".join(a["structuredContent"]["logs"]["stdout"]) == "by setup\n", a
        b = m.call("run_code", session_id=sid, code="open('made', 'w')")
        assert b["structuredContent"]["error"]["name"] == "PermissionError", b
        bad = m.call("create_session", setup={"code": "raise SystemExit(2)"})
        assert bad.get("isError") and "setup failed" in str(bad), bad
    finally:
        assert m.close() == 0
    run_id = s["structuredContent"]["run_id"]
    assert [p["name"] for p in ctx.sql("select name from phases where run_id=? order by n",
                                       run_id)] == ["setup", "main"]


def test_batch_runs_the_setup_in_each_samples_sandbox(ctx):
    pol = setup_policy(ctx)
    setup = ctx.write("prep.py", "open('made', 'w').write('prepared')\n")
    samples = ctx.write("s.jsonl", "".join(json.dumps(s) + "\n" for s in [
        {"id": "reads", "code": "print(open('made').read())", "expect_stdout": "prepared\n"},
        {"id": "writes", "code": "open('made', 'w')", "expect_exit": 1},
    ]))
    out = ctx.path("out.jsonl")
    # a relative setup file is batch's, passed to each run by its path
    r = ctx.ward("batch", "--db", ctx.db, "--out", out, "--progress", "none",
                 "--policy", pol, "--setup", "prep.py", samples)
    assert r.code == 0, r
    with open(out) as f:
        lines = {l["id"]: l for l in map(json.loads, f)}
    assert set(lines) == {"reads", "writes"}, lines
    runs = ctx.sql("select id from runs")
    assert len(runs) == 2, runs
    for run in runs:
        names = [p["name"] for p in ctx.sql(
            "select name from phases where run_id=? order by n", run["id"])]
        assert names == ["setup", "main"], names
    denied = ctx.sql("select count(*) n from events where rule='made-ro'")[0]["n"]
    assert denied == 1, denied
    assert os.path.exists(setup)


def test_merge_keeps_the_phases(ctx):
    import sqlite3
    pol = setup_policy(ctx)
    src = ctx.path("src.db")
    r = ctx.ward("run", "--db", src, "--policy", pol, "--setup-code",
                 "open('made', 'w').write('x')", "-c", "print(open('made').read())")
    assert r.code == 0, r
    out = ctx.path("merged.db")
    r = ctx.ward("merge", src, "-o", out)
    assert r.code == 0, r
    con = sqlite3.connect(out)
    try:
        names = [n for (n,) in con.execute("select name from phases order by n")]
    finally:
        con.close()
    assert names == ["setup", "main"], names


def test_rerun_runs_the_recorded_setup(ctx):
    pol = setup_policy(ctx)
    setup = ctx.write("prep.sh", "echo prepared > made\n")
    r = ctx.ward("run", "--policy", pol, "--setup", setup, "-c", "print(open('made').read())")
    assert r.code == 0 and r.stdout == "prepared\n\n", r
    first = ctx.last_run()["id"]
    os.unlink(setup)  # the record holds it
    r = ctx.ward("rerun", "--db", ctx.db, first)
    assert r.code == 0 and "equivalent" in r.stdout, r
    again = ctx.last_run()["id"]
    assert again != first
    rows = ctx.sql("select name, code from phases where run_id=? order by n", again)
    assert [p["name"] for p in rows] == ["setup", "main"], rows
    assert rows[0]["code"] in (b"echo prepared > made\n", "echo prepared > made\n"), rows


def test_session_setup_with_the_official_mcp_sdk(ctx):
    import subprocess
    mcp_dir = os.path.join(os.path.dirname(__file__), "..", "mcp")
    wardtest.require(wardtest.NODE)
    if not os.path.isdir(os.path.join(mcp_dir, "node_modules", "@modelcontextprotocol", "sdk")):
        raise wardtest.Skip("tests/mcp/node_modules is missing: run tools/install-deps")
    p = subprocess.run([wardtest.NODE, os.path.join(mcp_dir, "setup.mjs"), wardtest.ward_bin(),
                        ctx.db, setup_policy(ctx)],
                       capture_output=True, text=True, timeout=120, cwd=ctx.tmp)
    assert p.returncode == 0, p.stderr[-6000:]
    run_id = json.loads(p.stdout.strip().splitlines()[-1])["run_id"]
    assert [r["name"] for r in ctx.sql("select name from phases where run_id=? order by n",
                                       run_id)] == ["setup", "main"]


def test_recheck_judges_the_setup_by_the_setup_phase(ctx):
    pol = setup_policy(ctx)
    r = ctx.ward("run", "--policy", pol, "--setup-code", "open('made', 'w').write('x')",
                 "-c", "print(open('made').read())")
    assert r.code == 0, r
    run_id = ctx.last_run()["id"]
    # the same policy: nothing changes, the setup's write included
    r = ctx.ward("recheck", "--db", ctx.db, "--policy", pol, "--json", run_id)
    assert r.code == 0, r
    assert r.json()["runs"][0]["changed"] == 0, r.stdout
    # without the phase, the setup's write would have been denied
    with open(pol) as f:
        p = json.load(f)
    del p["phases"]
    flat = ctx.path("flat.json")
    with open(flat, "w") as f:
        json.dump(p, f)
    r = ctx.ward("recheck", "--db", ctx.db, "--policy", flat, "--json", run_id)
    changes = r.json()["runs"][0]
    assert changes["changed"] >= 1, r.stdout
    assert "made-rw" in r.stdout and "made-ro" in r.stdout, r.stdout
