"""`ward serve --listen`: E2B's HTTP API (issue 25, section 1).

The official E2B SDKs (tests/e2b/e2e.mjs, npm packages pinned in
tests/e2b/package-lock.json) drive every call end to end; raw HTTP checks
the key, the tokens, the caps and the Connect framing; the audit database
must hold one run per sandbox with a cell per execution and per command.
"""
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import threading
import time

import wardtest
from wardtest import Skip

HERE = os.path.dirname(os.path.abspath(__file__))
E2B_DIR = os.path.join(os.path.dirname(HERE), "e2b")
KEY = "test-key-0123456789"


class Server:
    """A `ward serve --listen 127.0.0.1:0` process and its port."""

    def __init__(self, ctx, *args, key=KEY):
        env = dict(os.environ, WARD_API_KEY=key)
        self.proc = wardtest.spawn(
            [wardtest.ward_bin(), "serve", "--listen", "127.0.0.1:0", "--db", ctx.db] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ctx.tmp)
        line = self.proc.stdout.readline().decode()
        assert "http://127.0.0.1:" in line, (line, self.proc.stderr.read1(4000))
        self.port = int(line.rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.stderr = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def env(self, key=KEY):
        return dict(os.environ, E2B_API_URL=self.url, E2B_SANDBOX_URL=self.url, E2B_API_KEY=key)

    def request(self, method, path, body=None, headers=None, timeout=60):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, r.getheader("Content-Type"), data

    def create(self, **body):
        st, _, data = self.request("POST", "/v2/sandboxes", dict({"templateID": "code-interpreter-v1"}, **body),
                                   {"X-API-Key": KEY, "Content-Type": "application/json"})
        assert st == 201, (st, data)
        return json.loads(data)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(30)
        assert rc == 0, (rc, b"".join(self.stderr)[-2000:])


def need_sdk():
    if not os.path.isdir(os.path.join(E2B_DIR, "node_modules", "@e2b", "code-interpreter")):
        raise Skip("tests/e2b/node_modules is missing: run tools/install-deps (npm ci in tests/e2b)")


# The default profile runs python3 only; commands, js and bash need the sh
# profile (/usr/bin's programs), as an E2B agent's server would be started.
OPEN = ("--profile", "sh")


def sdk(ctx, scenario, *server_args, env=None):
    """Runs one scenario of e2e.mjs against a fresh server; returns what it
    saw and the server (stopped, so every run is closed)."""
    need_sdk()
    s = Server(ctx, *server_args)
    p = subprocess.run([wardtest.NODE, os.path.join(E2B_DIR, "e2e.mjs"), scenario],
                       capture_output=True, text=True, timeout=300,
                       env=dict(s.env(), **(env or {})), cwd=E2B_DIR)
    s.stop()
    assert p.returncode == 0, f"{p.stderr[-4000:]}\nward: {b''.join(s.stderr).decode()[-2000:]}"
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    return seen, s


def run_of(ctx, sandbox_id):
    cells = ctx.sql("select run_id from cells where result like ?", f'%"session_id":"{sandbox_id}"%')
    assert cells, f"no cell of sandbox {sandbox_id} in the database"
    run_ids = {c["run_id"] for c in cells}
    assert len(run_ids) == 1, run_ids
    return run_ids.pop()


def test_e2b_sdk_lifecycle_and_cells(ctx):
    seen, _ = sdk(ctx, "lifecycle")
    run_id = run_of(ctx, seen["sandbox_id"])
    assert seen["run_id"] == run_id, seen
    cells = ctx.sql("select n, code, status from cells where run_id=? order by n", run_id)
    codes = [c["code"] for c in cells]
    assert codes[:2] == ["import os, sys, time\nx = 41\nprint('hello', flush=True)\ntime.sleep(1)\n"
                         "print(os.environ.get('WARD_E2E'))\nprint('careful', file=sys.stderr)", "x + 1"], codes
    assert "1/0" in codes and "x" in codes, codes
    statuses = {c["code"]: c["status"] for c in cells}
    assert statuses["import time\ntime.sleep(30)"] == "cancelled", statuses
    assert ctx.sql("select count(*) n from denials where run_id=?", run_id)[0]["n"] >= 1
    # ward show reads the sandbox's run, cells and denial
    r = ctx.ward("show", run_id)
    assert r.code == 0, r
    assert "x + 1" in r.stdout and "192.0.2.1" in r.stdout, r.stdout[-3000:]
    r = ctx.ward("report", run_id, "--db", ctx.db, "-o", ctx.path("report.html"))
    assert r.code == 0, r
    with open(ctx.path("report.html")) as f:
        assert "192.0.2.1" in f.read()


def test_e2b_sdk_files(ctx):
    seen, _ = sdk(ctx, "files")
    run_id = run_of(ctx, seen["sandbox_id"])
    assert ctx.sql("select count(*) n from cells where run_id=?", run_id)[0]["n"] == 1


def test_e2b_sdk_commands(ctx):
    seen, _ = sdk(ctx, "commands", *OPEN)
    run_id = run_of(ctx, seen["sandbox_id"])
    codes = [c["code"] for c in ctx.sql("select code from cells where run_id=? order by n", run_id)]
    assert "echo hi; echo oops >&2; echo $GREETING" in codes[0], codes


def test_e2b_background_commands_beside_cells(ctx):
    """A background command holds no turn: runCode, another command and a
    foreground command during a cell all answer while it runs; wait, kill
    and list work; each command keeps its row, and the one left running
    when the sandbox is killed is recorded as ended by it."""
    seen, _ = sdk(ctx, "background", *OPEN)
    assert seen["cell_ms"] < 1000 and seen["fg_ms"] < 1200, seen
    run_id = run_of(ctx, seen["sandbox_id"])
    all_rows = ctx.sql("select n, code, status, result from cells where run_id=? order by n", run_id)
    rows = {c["code"]: c for c in all_rows}
    first = rows["echo start; sleep 3; echo done; echo e1 >&2"]
    res = json.loads(first["result"])
    assert first["status"] == "ok" and res["exit_code"] == 0 and res["kind"] == "command", res
    assert res["logs"] == {"stdout": ["start\ndone\n"], "stderr": ["e1\n"]}, res["logs"]
    cell = json.loads(rows["print('cell out'); 1+1"]["result"])
    assert cell["logs"]["stdout"] == ["cell out\n"], cell["logs"]
    assert rows["print('cell out'); 1+1"]["n"] > first["n"], rows.keys()
    fg = json.loads(rows["echo fg; echo fe >&2"]["result"])
    assert fg["logs"] == {"stdout": ["fg\n"], "stderr": ["fe\n"]}, fg
    killed = [c for c in all_rows if c["code"] == "sleep 30"]
    assert len(killed) == 2 and all(c["status"] == "cancelled" for c in killed), killed
    for c in killed:
        res = json.loads(c["result"])
        assert res["exit_code"] == 137 and "killed when its request" in res["error"]["value"], res
    left = rows["echo left; sleep 30"]
    res = json.loads(left["result"])
    assert left["status"] == "cancelled" and res["error"]["name"] == "SessionEnded", res
    assert res["logs"]["stdout"] == ["left\n"], res["logs"]
    r = ctx.ward("show", run_id)
    assert r.code == 0 and "echo left; sleep 30" in r.stdout, r


def test_e2b_sdk_languages_and_contexts(ctx):
    seen, _ = sdk(ctx, "languages", *OPEN)
    run_of(ctx, seen["sandbox_id"])


def test_e2b_sdk_bad_input(ctx):
    sdk(ctx, "bad")


def test_e2b_key_tokens_and_limits_over_raw_http(ctx):
    s = Server(ctx, *OPEN)
    # the control API wants the key; none, or a wrong one, is 401
    for headers in ({}, {"X-API-Key": "nope"}, {"X-API-Key": KEY + "x"}):
        st, _, data = s.request("GET", "/v2/sandboxes", headers=headers)
        assert st == 401 and json.loads(data)["code"] == 401, (st, data)
    st, _, data = s.request("POST", "/v2/sandboxes", "{not json", {"X-API-Key": KEY})
    assert st == 400 and b"not a JSON object" in data, (st, data)
    st, _, data = s.request("POST", "/v2/sandboxes", {"timeout": -5}, {"X-API-Key": KEY})
    assert st == 400 and b"positive" in data, (st, data)
    sb = s.create(timeout=60)
    sid, tok = sb["sandboxID"], sb["envdAccessToken"]
    assert len(tok) == 64 and tok != sb["trafficAccessToken"]
    other = s.create()
    # envd wants this sandbox's token; another sandbox's is refused
    base = {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49983"}
    for t in (None, other["envdAccessToken"], tok[:-1]):
        h = dict(base, **({"X-Access-Token": t} if t else {}))
        st, _, data = s.request("GET", "/files?path=/home/user/x", headers=h)
        assert st == 401, (t, st, data)
    h = dict(base, **{"X-Access-Token": tok})
    # the health check wants the token too; an unknown sandbox is 502 (gone)
    assert s.request("GET", "/health", headers=base)[0] == 401
    assert s.request("GET", "/health", headers=h)[0] == 204
    st, _, data = s.request("GET", "/health", headers={"E2b-Sandbox-Id": "s-nope"})
    assert st == 502, (st, data)
    # uploads are capped (413), JSON bodies too
    st, _, data = s.request("POST", "/files?path=/home/user/big", b"\0" * ((64 << 20) + 1),
                            dict(h, **{"Content-Type": "application/octet-stream"}))
    assert st == 413 and b"over ward's limit" in data, (st, data[:300])
    st, _, data = s.request("POST", "/files?path=/home/user/ok.bin", b"\0\1\2",
                            dict(h, **{"Content-Type": "application/octet-stream"}))
    assert st == 200 and json.loads(data)[0]["path"] == "/home/user/ok.bin", (st, data)
    st, _, data = s.request("GET", "/files?path=/home/user/ok.bin", headers=h)
    assert (st, data) == (200, b"\0\1\2")
    # multipart: a boundary is needed, and the whole form is capped too
    st, _, data = s.request("POST", "/files", b"xx", dict(h, **{"Content-Type": "multipart/form-data"}))
    assert st == 400 and b"boundary" in data, (st, data)
    part = (b"--BOUNDARY42\r\nContent-Disposition: form-data; name=\"file\"; filename=\"/home/user/p%d\"\r\n"
            b"Content-Type: application/octet-stream\r\n\r\n" + b"\1" * (40 << 20) + b"\r\n")
    body = part % 1 + part % 2 + b"--BOUNDARY42--\r\n"
    st, _, data = s.request("POST", "/files", body, dict(h, **{"Content-Type": "multipart/form-data; boundary=BOUNDARY42"}))
    assert st == 413, (st, data[:300])
    st, _, data = s.request("POST", "/files", part % 3 + b"--BOUNDARY42--\r\n",
                            dict(h, **{"Content-Type": "multipart/form-data; boundary=BOUNDARY42"}))
    assert st == 200 and json.loads(data) == [{"name": "p3", "type": "file", "path": "/home/user/p3"}], (st, data)
    # Connect: a unary call's JSON; a stream's envelope must be one
    st, ct, data = s.request("POST", "/filesystem.Filesystem/Stat", "{bad",
                             dict(h, **{"Content-Type": "application/json"}))
    assert st == 400 and json.loads(data)["code"] == "invalid_argument", (st, data)
    st, ct, data = s.request("POST", "/filesystem.Filesystem/Stat", {"path": "/etc"},
                             dict(h, **{"Content-Type": "application/json"}))
    assert st == 400 and b"outside the sandbox's home" in data, (st, data)
    # a streaming call's error is the end of its stream (status 200)
    st, ct, data = s.request("POST", "/process.Process/Start", b"\0\0\0\0\x09{}",
                             dict(h, **{"Content-Type": "application/connect+json"}))
    assert (st, ct, data[:5]) == (200, "application/connect+json", struct.pack(">BI", 2, len(data) - 5)), data
    err = json.loads(data[5:])["error"]
    assert err["code"] == "invalid_argument" and "envelope" in err["message"], err
    st, _, data = s.request("POST", "/filesystem.Filesystem/WatchDir", struct.pack(">BI", 0, 2) + b"{}",
                            dict(h, **{"Content-Type": "application/connect+json"}))
    assert st == 501 and json.loads(data)["code"] == "unimplemented", (st, data)
    msg = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-l", "-c", "echo framed"]}}).encode()
    st, ct, data = s.request("POST", "/process.Process/Start", struct.pack(">BI", 0, len(msg)) + msg,
                             dict(h, **{"Content-Type": "application/connect+json"}))
    assert st == 200 and ct == "application/connect+json", (st, ct, data)
    frames = []
    while data:
        flags, n = struct.unpack(">BI", data[:5])
        frames.append((flags, json.loads(data[5:5 + n])))
        data = data[5 + n:]
    assert frames[0] == (0, {"event": {"start": {"pid": frames[0][1]["event"]["start"]["pid"]}}}), frames
    assert frames[-1] == (2, {}), frames
    assert frames[-2][1]["event"]["end"]["exitCode"] == 0, frames
    assert {"event": {"data": {"stdout": "ZnJhbWVkCg=="}}} in [f[1] for f in frames], frames
    s.stop()


def test_e2b_client_that_hangs_up_cancels_its_cell(ctx):
    s = Server(ctx)
    sb = s.create()
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"],
         "Content-Type": "application/json"}
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("POST", "/execute", json.dumps({"code": "import time\nprint('go', flush=True)\ntime.sleep(60)"}), h)
    r = c.getresponse()
    assert r.status == 200
    assert json.loads(r.readline())["type"] == "stdout"
    c.sock.shutdown(socket.SHUT_RDWR)
    c.close()
    t0 = time.monotonic()
    st, _, data = s.request("POST", "/execute", {"code": "1 + 1"}, h, timeout=30)
    lines = [json.loads(x) for x in data.splitlines()]
    assert st == 200 and any(x.get("text") == "2" for x in lines), lines
    assert time.monotonic() - t0 < 10
    s.stop()
    run_id = run_of(ctx, sb["sandboxID"])
    cells = ctx.sql("select code, status from cells where run_id=? order by n", run_id)
    assert [c["status"] for c in cells] == ["cancelled", "ok"], cells


def test_e2b_example_agent(ctx):
    need_sdk()
    s = Server(ctx, *OPEN)
    p = subprocess.run([wardtest.NODE, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples",
                                                    "e2b_agent.mjs"), ctx.tmp],
                       capture_output=True, text=True, timeout=300, env=s.env(), cwd=ctx.tmp)
    s.stop()
    assert p.returncode == 0, p.stderr[-3000:]
    assert "totals by region:" in p.stdout and "saved " in p.stdout, p.stdout
    with open(os.path.join(ctx.tmp, "chart.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert "no network in this sandbox" in p.stdout, p.stdout
    run_id = p.stdout.rsplit("ward show ", 1)[1].split()[0]
    assert ctx.sql("select count(*) n from cells where run_id=?", run_id)[0]["n"] >= 5


def test_e2b_parallel_sandboxes_and_control_while_cells_run(ctx):
    seen, _ = sdk(ctx, "parallel")
    assert seen["total_ms"] < 2500, seen


def test_e2b_sigterm_closes_every_sandbox(ctx):
    s = Server(ctx)
    ids = []
    for _ in range(2):
        sb = s.create()
        h = {"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"]}
        st, _, data = s.request("POST", "/execute", {"code": "print('up')"}, h)
        assert st == 200 and b"up" in data, (st, data)
        ids.append(sb["sandboxID"])
    s.stop()
    for sid in ids:
        run = ctx.sql("select status, ended_ns from runs where id=?", run_of(ctx, sid))[0]
        assert run["ended_ns"] and run["status"] == "ok", run


def test_e2b_command_line_errors(ctx):
    env = {k: v for k, v in os.environ.items() if k != "WARD_API_KEY"}
    r = ctx.ward("serve", "--listen", "127.0.0.1:0", "--db", ctx.db, env=env)
    assert r.code == 125 and "needs an API key" in r.stderr, r
    r = ctx.ward("serve", "--listen", "nonsense", "--db", ctx.db, env=dict(env, WARD_API_KEY=KEY))
    assert r.code == 125 and "give HOST:PORT" in r.stderr, r
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = ctx.ward("serve", "--listen", f"127.0.0.1:{port}", "--db", ctx.db, env=dict(env, WARD_API_KEY=KEY))
    assert r.code == 125 and "cannot listen" in r.stderr, r


# ---------------------------------------------- a server-wide setup (--setup)

def test_e2b_setup_code_runs_before_each_sandbox(ctx):
    """--setup-code: every sandbox's run starts with the setup's phase; the
    first cell sees what it wrote, and the code may not write it again."""
    from test_phases import setup_policy
    pol = setup_policy(ctx)
    code = ("print(open('made').read())\n"
            "try:\n    open('made', 'a').write('x')\nexcept OSError as e:\n"
            "    print('again', type(e).__name__)")
    seen, _ = sdk(ctx, "setup", "--policy", pol, "--setup-code",
                  "open('made', 'w').write('by the server setup')",
                  env={"WARD_E2E_CODE": code})
    assert seen["stdout"] == "by the server setup\nagain PermissionError\n", seen
    assert seen["stdout2"] == seen["stdout"], seen
    assert run_of(ctx, seen["sandbox_id"]) == seen["run_id"]
    assert seen["run_id2"] != seen["run_id"], seen
    for run_id in (seen["run_id"], seen["run_id2"]):
        phases = ctx.sql("select name, status, code from phases where run_id=? order by n",
                         run_id)
        assert [(p["name"], p["status"]) for p in phases] == [("setup", "ok"), ("main", "ok")], \
            phases
        assert b"by the server setup" in phases[0]["code"], phases
        assert ctx.ward("verify", "--db", ctx.db, run_id).code == 0


def test_e2b_setup_file_pip_from_a_loopback_index(ctx):
    """--setup FILE (sh): pip installs tinypkg from a loopback index; the
    sandbox imports it and cannot reach the index."""
    wardtest.require("/usr/bin/pip3")
    from test_phases import Index, phased_policy, SETUP_SH
    index = Index(ctx.path("index"))
    try:
        pol = phased_policy(ctx, index.port)
        setup = ctx.write("setup.sh", SETUP_SH.format(url=index.url))
        code = ("import errno, socket, sys\nsys.path.insert(0, 'site-packages')\n"
                "import tinypkg\nprint('imported', tinypkg.VALUE)\n"
                "s = socket.socket()\ntry:\n"
                f"    s.connect(('127.0.0.1', {index.port})); print('index reached')\n"
                "except OSError as e:\n    print('index', errno.errorcode[e.errno])\n")
        seen, _ = sdk(ctx, "setup", "--policy", pol, "--setup", setup,
                      env={"WARD_E2E_CODE": code})
        assert len([r for r in index.requests if "tinypkg" in r]) >= 2, index.requests
    finally:
        index.stop()
    assert seen["stdout"] == "imported 42\nindex ECONNREFUSED\n", seen
    phases = ctx.sql("select name, status from phases where run_id=? order by n", seen["run_id"])
    assert [(p["name"], p["status"]) for p in phases] == [("setup", "ok"), ("main", "ok")], phases
    conns = ctx.events(seen["run_id"], "syscall = 'connect' and target like ?",
                       f"127.0.0.1:{index.port}")
    assert {(e["decision"], e["rule"]) for e in conns} == {("allow", "index"), ("deny", "offline")}


def test_e2b_failing_setup_fails_create(ctx):
    from test_phases import setup_policy
    pol = setup_policy(ctx)
    seen, _ = sdk(ctx, "setup_fails", "--policy", pol, "--setup-code",
                  "import sys; print('trying'); sys.exit(4)")
    run_id = seen["error"].rsplit("run ", 1)[1][:16]
    run = ctx.sql("select status, cause from runs where id=?", run_id)[0]
    assert run["status"] == "error", run
    assert ctx.sql("select name, exit_code from phases where run_id=?", run_id) == [
        {"name": "setup", "exit_code": 4}]
    assert ctx.sql("select count(*) n from runs")[0]["n"] == 1, "one attempt, no retry"


def test_e2b_setup_option_errors(ctx):
    from test_phases import setup_policy
    env = dict(os.environ, WARD_API_KEY=KEY)
    for args, want in (
            (("--setup-code", "print(1)"), "has no setup phase"),
            (("--policy", setup_policy(ctx), "--setup-code", "1", "--setup", "x.py"),
             "one of --setup"),
            (("--policy", setup_policy(ctx), "--setup", ctx.path("missing.py")),
             "missing.py"),
            (("--policy", setup_policy(ctx), "--setup-code", "1", "--pool", "2"),
             "--pool")):
        p = subprocess.run([wardtest.ward_bin(), "serve", "--listen", "127.0.0.1:0",
                            "--db", ctx.db] + list(args), capture_output=True, text=True,
                           env=env, timeout=30)
        assert p.returncode == 125 and want in p.stderr, (args, p)
    p = subprocess.run([wardtest.ward_bin(), "serve", "--setup-code", "1"],
                       capture_output=True, text=True, env=env, timeout=30, input="")
    assert p.returncode == 125 and "is for --listen" in p.stderr, p
