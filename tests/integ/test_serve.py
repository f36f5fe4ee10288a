"""ward serve: sessions over JSON lines (python, node, sh), one-shot runs,
files, artifacts, timeouts, isolation, concurrency, and every error path
(each answered with a stable code while the server keeps serving)."""
import base64
import hashlib
import glob
import json
import os
import re
import shutil
import subprocess
import time

import wardtest

PARSE, INVALID, METHOD, PARAMS = -32700, -32600, -32601, -32602
NO_SESSION, LIMIT, FILE, TOO_LARGE = -32001, -32002, -32003, -32004


class Serve:
    """A ward serve process and a JSON-lines client for it."""

    def __init__(self, ctx, *opts):
        self.ctx = ctx
        self.p = wardtest.spawn([wardtest.ward_bin(), "serve", "--db", ctx.db] + list(opts),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=ctx.tmp)
        self.n = 0

    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def read(self):
        line = self.p.stdout.readline()
        assert line, "ward serve closed stdout: %r" % self.p.stderr.read()[-2000:]
        return json.loads(line)

    def call_all(self, method, params=None, **extra):
        """The events and the response of one request."""
        self.n += 1
        req = {"id": self.n, "method": method}
        if params is not None:
            req["params"] = params
        req.update(extra)
        self.send_raw((json.dumps(req) + "\n").encode())
        out = []
        while True:
            m = self.read()
            out.append(m)
            if "event" not in m:
                assert m["id"] == self.n, (m, self.n)
                return out

    def call(self, method, params=None):
        return self.call_all(method, params)[-1]

    def ok(self, method, params=None):
        r = self.call(method, params)
        assert "result" in r, r
        return r["result"]

    def err(self, method, params, code):
        r = self.call(method, params)
        assert "error" in r and r["error"]["code"] == code, r
        assert r["error"]["message"], r
        return r["error"]["message"]

    def create(self, **params):
        return self.ok("session.create", params)["session_id"]

    def run(self, sid, code, **params):
        params.update({"session_id": sid, "code": code})
        return self.ok("run", params)

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        self.p.stdout.close()
        self.p.stderr.close()
        return rc


def serve(ctx, *opts):
    return Serve(ctx, *opts)


def _stdout(r):
    return "".join(r["logs"]["stdout"])


def _files(s, sid):
    """The regular files of a session's workdir, but its tmp/ and dotfiles."""
    return sorted(f["path"] for f in s.ok("files.list", {"session_id": sid, "depth": 8})["files"]
                  if f["type"] == "file" and not f["path"].startswith(("tmp/", ".")))


def _main(r):
    mains = [x for x in r["results"] if x["is_main_result"]]
    return mains[0]["text"] if mains else None


def test_python_session_keeps_state_and_records_cells(ctx):
    s = serve(ctx)
    c = s.ok("session.create", {})
    assert c["language"] == "python" and c["session_id"] and len(c["run_id"]) == 16, c
    sid = c["session_id"]
    r = s.run(sid, "import math\nx = 41\nprint('hello')")
    assert r["status"] == "ok" and r["execution_count"] == 1, r
    assert _stdout(r) == "hello\n" and r["results"] == [] and r["error"] is None, r
    assert r["run_id"] == c["run_id"] and r["session_id"] == sid, r
    r = s.run(sid, "x + 1")
    assert _main(r) == "42" and r["execution_count"] == 2 and r["exit_code"] == 0, r
    r = s.run(sid, "{'a': math.floor(2.5)}")
    assert _main(r) == "{'a': 2}", r
    r = s.run(sid, "y = 1")  # no expression: no result
    assert r["results"] == [], r
    lst = s.ok("session.list", {})["sessions"]
    assert [(x["session_id"], x["language"], x["execution_count"]) for x in lst] == \
        [(sid, "python", 4)], lst
    assert lst[0]["run_id"] == c["run_id"] and lst[0]["last_used"] >= lst[0]["created"], lst
    assert s.ok("session.close", {"session_id": sid}) == {"session_id": sid, "closed": True}
    assert s.ok("session.list", {})["sessions"] == []
    assert s.close() == 0
    cells = ctx.sql("select n, code, status, result from cells where run_id=? order by n",
                    c["run_id"])
    assert [(x["n"], x["code"], x["status"]) for x in cells] == [
        (1, "import math\nx = 41\nprint('hello')", "ok"), (2, "x + 1", "ok"),
        (3, "{'a': math.floor(2.5)}", "ok"), (4, "y = 1", "ok")], cells
    assert json.loads(cells[1]["result"])["results"][0]["text"] == "42"
    run = ctx.sql("select * from runs where id=?", c["run_id"])[0]
    assert run["status"] == "ok" and run["language"] == "python" and run["code_name"] == "session", run
    out = ctx.sql("select group_concat(data, '') d from outputs where run_id=?", c["run_id"])
    assert out[0]["d"] == "hello\n", out
    wd = wardtest.host_workdir(run)
    assert run["workdir"] == wardtest.HOME, run
    assert wd.startswith("/tmp/ward-") and not os.path.exists(wd), run


def test_python_exception_shape(ctx):
    s = serve(ctx)
    sid = s.create()
    r = s.run(sid, "def f():\n    raise ValueError('bad value')\nf()")
    assert r["status"] == "error" and r["exit_code"] == 1, r
    e = r["error"]
    assert e["name"] == "ValueError" and e["value"] == "bad value", e
    tb = e["traceback"]
    assert tb.startswith("Traceback (most recent call last):\n"), tb
    assert 'File "<cell 1>", line 3' in tb and 'File "<cell 1>", line 2, in f' in tb, tb
    assert "<string>" not in tb, "the driver's frame leaked: " + tb
    r = s.run(sid, "1 +")  # a syntax error is an error too, and the session survives
    assert r["error"]["name"] == "SyntaxError", r
    assert _main(s.run(sid, "f.__name__")) == "'f'"
    assert s.close() == 0


def test_python_results_with_any_characters_come_back_exactly(ctx):
    """The driver encodes its result frames itself (no json module at
    start-up): quotes, backslashes, control characters, non-ASCII and
    astral characters come back as they were; a lone surrogate, which
    UTF-8 cannot carry, comes back as "?"."""
    s = serve(ctx)
    sid = s.create()
    odd = 'q"b\\s\t\r\n\x01\x1f\x7f é€😀 \u2028 \xa0'
    s.run(sid, "class R:\n    def __repr__(self):\n        return %r\n" % odd)
    assert _main(s.run(sid, "R()")) == odd
    r = s.run(sid, "raise ValueError(%r + '\\ud800')" % odd)
    assert r["error"]["name"] == "ValueError" and r["error"]["value"] == odd + "?", r
    assert odd in r["error"]["traceback"], r
    assert _main(s.run(sid, "'x' * 3")) == "'xxx'"  # and the session goes on
    assert s.close() == 0


def test_python_chart_comes_back_as_png(ctx):
    s = serve(ctx)
    sid = s.create()
    r = s.run(sid, "import matplotlib.pyplot as plt\n"
                   "plt.plot([1, 2, 3], [3, 1, 2])\nplt.title('t')\n"
                   "import matplotlib; matplotlib.get_backend()")
    assert r["status"] == "ok", r
    pngs = [x for x in r["results"] if "png" in x]
    assert len(pngs) == 1 and not pngs[0]["is_main_result"], r["results"]
    data = base64.b64decode(pngs[0]["png"])
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000, data[:16]
    assert r["results"][-1]["is_main_result"] and _main(r) == "'agg'", r["results"]
    # the figure was closed: the next cell has no chart
    r = s.run(sid, "len(plt.get_fignums())")
    assert _main(r) == "0" and not [x for x in r["results"] if "png" in x], r
    assert s.close() == 0


def test_files_in_out_and_artifacts(ctx):
    s = serve(ctx)
    sid = s.create()
    w = s.ok("files.write", {"session_id": sid, "path": "in.csv", "text": "a,b\n1,2\n"})
    assert w == {"path": "in.csv", "size": 8,
                 "sha256": hashlib.sha256(b"a,b\n1,2\n").hexdigest()}, w
    blob = bytes(range(256))
    w = s.ok("files.write", {"session_id": sid, "path": "blob.bin",
                             "base64": base64.b64encode(blob).decode()})
    assert w["size"] == 256 and w["sha256"] == hashlib.sha256(blob).hexdigest(), w
    r = s.run(sid, "import os\nos.makedirs('out', exist_ok=True)\n"
                   "open('out/r.txt', 'w').write(open('in.csv').read().upper())\n"
                   "open('in.csv', 'a').write('3,4\\n')\nsorted(os.listdir('.'))")
    assert r["status"] == "ok", r
    arts = sorted(r["artifacts"], key=lambda a: a["path"])
    assert arts == [
        {"path": "in.csv", "size": 12, "sha256": hashlib.sha256(b"a,b\n1,2\n3,4\n").hexdigest()},
        {"path": "out/r.txt", "size": 8, "sha256": hashlib.sha256(b"A,B\n1,2\n").hexdigest()},
    ], arts
    rd = s.ok("files.read", {"session_id": sid, "path": "out/r.txt"})
    assert rd["text"] == "A,B\n1,2\n" and base64.b64decode(rd["base64"]) == b"A,B\n1,2\n", rd
    assert rd["size"] == 8 and rd["sha256"] == hashlib.sha256(b"A,B\n1,2\n").hexdigest()
    rd = s.ok("files.read", {"session_id": sid, "path": "blob.bin"})
    assert base64.b64decode(rd["base64"]) == blob and "text" not in rd, rd
    files = _files(s, sid)
    assert files == ["blob.bin", "in.csv", "out/r.txt"], files
    # a cell that changes nothing reports nothing
    assert s.run(sid, "1")["artifacts"] == []
    run_id = s.ok("session.list", {})["sessions"][0]["run_id"]
    rows = ctx.sql("select cell, path, size, sha256 from artifacts where run_id=? order by path",
                   run_id)
    assert [(x["cell"], x["path"], x["size"]) for x in rows] == [(1, "in.csv", 12),
                                                                 (1, "out/r.txt", 8)], rows
    assert s.close() == 0


def test_file_paths_stay_inside_the_workdir(ctx):
    s = serve(ctx)
    sid = s.create()
    secret = ctx.write("secret.txt", "top secret\n")
    for path in ["/etc/passwd", secret, "../x", "a/../../x", "a//b"]:
        s.err("files.read", {"session_id": sid, "path": path}, FILE)
        s.err("files.write", {"session_id": sid, "path": path, "text": "x"}, FILE)
    # a symlink the code made that leads out is refused both ways
    r = s.run(sid, "import os\nos.symlink(%r, 'link')\nos.symlink('/tmp', 'dir')" % secret)
    assert r["status"] == "ok", r
    s.err("files.read", {"session_id": sid, "path": "link"}, FILE)
    s.err("files.write", {"session_id": sid, "path": "link", "text": "pwned"}, FILE)
    s.err("files.write", {"session_id": sid, "path": "dir/pwned", "text": "x"}, FILE)
    assert open(secret).read() == "top secret\n"
    assert not os.path.exists("/tmp/pwned")
    s.err("files.read", {"session_id": sid, "path": "missing.txt"}, FILE)
    s.err("files.write", {"session_id": sid, "path": "link/x", "text": "x"}, FILE)
    s.err("files.write", {"session_id": sid, "path": "x", "text": "a", "base64": "YQ=="}, PARAMS)
    s.err("files.write", {"session_id": sid, "path": "x"}, PARAMS)
    s.err("files.write", {"session_id": sid, "path": "x", "base64": "!!"}, PARAMS)
    s.err("files.read", {"session_id": sid, "path": 5}, PARAMS)
    s.err("files.read", {"session_id": sid}, PARAMS)
    assert s.close() == 0


def test_node_session_keeps_state(ctx):
    s = serve(ctx)
    c = s.ok("session.create", {"language": "node"})
    assert c["language"] == "node", c
    sid = c["session_id"]
    r = s.run(sid, "var total = 40; const f = (a) => a + 2; console.log('hi from node')")
    assert r["status"] == "ok" and _stdout(r) == "hi from node\n", r
    r = s.run(sid, "f(total)")
    assert _main(r) == "42", r
    r = s.run(sid, "({a: [1, 2]})")
    assert _main(r) == "{ a: [ 1, 2 ] }", r
    r = s.run(sid, "null.x")
    assert r["status"] == "error" and r["error"]["name"] == "TypeError", r
    assert "<cell 4>" in r["error"]["traceback"], r
    assert _main(s.run(sid, "total")) == "40"
    # a cell larger than a pipe's buffer reaches the driver in several reads
    big = "'" + "x" * 300000 + "'.length + total"
    assert _main(s.run(sid, big)) == "300040"
    assert s.close() == 0


def test_node_cells_run_in_nodes_own_global_context(ctx):
    """Cells run as at Node's REPL: every Node global is there and values
    are of Node's own realm (a vm context had only the globals the driver
    listed: performance, structuredClone, queueMicrotask, fetch, ... were
    undefined, and an array from fs was not an Array). The driver's own
    names stay out of the cells' way."""
    s = serve(ctx)
    node = s.create(language="node")
    # the first cell is read before Node's event loop runs: its timer
    # still fires, and the cells after it are read from the loop
    r = s.run(node, "globalThis.hits = 0; setTimeout(() => { hits++ }, 20); 'set'")
    assert _main(r) == "'set'", r
    probe = ("[typeof performance.now, typeof structuredClone, typeof queueMicrotask,"
             " typeof fetch, typeof AbortController, typeof clearImmediate, typeof atob,"
             " require('fs').readdirSync('.') instanceof Array,"
             " Buffer.from('a') instanceof Uint8Array,"
             " JSON.parse('[1]') instanceof Array].join(' ')")
    r = s.run(node, probe)
    assert _main(r) == "'%s'" % " ".join(["function"] * 7 + ["true"] * 3), r
    r = s.run(node, "[typeof send, typeof pump, typeof busy, typeof writeDirect, typeof wardDriver]"
                    ".join(' ')")
    assert _main(r) == "'%s'" % " ".join(["undefined"] * 5), r
    time.sleep(0.1)
    r = s.run(node, "const fs = require('fs'); let k = 2; JSON.stringify = () => 'x'; hits")
    assert r["status"] == "ok" and _main(r) == "1", r
    r = s.run(node, "console.log(fs.existsSync('.'), k); k + 1")  # the driver's JSON is its own
    assert _main(r) == "3" and _stdout(r) == "true 2\n", r
    assert s.close() == 0


def test_node_errors_of_callbacks_do_not_end_the_session(ctx):
    """A promise a cell left rejected, or an exception thrown in a timer,
    ended Node and the session with every variable in it. As at Node's
    REPL they are reported on stderr and the session goes on; what a cell's
    promise jobs and immediates print comes with the cell."""
    s = serve(ctx)
    node = s.create(language="node")
    r = s.run(node, "var v = 1; Promise.reject(new Error('nope')); 'queued'")
    assert r["status"] == "ok" and _main(r) == "'queued'", r
    assert "".join(r["logs"]["stderr"]) == "Uncaught (in promise) Error: nope\n    at <cell 1>:1:27\n", r
    r = s.run(node, "setTimeout(() => { throw new Error('late') }, 10); v + 1")
    assert _main(r) == "2", r
    time.sleep(0.2)
    r = s.run(node, "v")  # what came between cells is in the record (below)
    assert _main(r) == "1", r
    r = s.run(node, "setImmediate(() => console.log('immediate'));"
                    " Promise.resolve().then(() => console.log('job')); 'sync'")
    assert _main(r) == "'sync'" and _stdout(r) == "job\nimmediate\n", r
    r = s.run(node, "Promise.reject('plain'); 0")
    assert "".join(r["logs"]["stderr"]) == "Uncaught (in promise) 'plain'\n", r
    run_id = s.ok("session.list", {})["sessions"][0]["run_id"]
    assert s.close() == 0
    err = b"".join(o["data"] for o in ctx.sql(
        "select data from outputs where run_id=? and stream='stderr' order by seq", run_id)).decode()
    assert "Uncaught Error: late\n    at Timeout._onTimeout (<cell 2>:1:26)" in err, err


def test_node_cell_waits_for_the_promise_it_ends_with(ctx):
    """A cell that ends with a promise (an async IIFE, the usual way to
    await in a script) comes back when it settles, with what it printed on
    the way; it came back at once as `Promise { <pending> }` and its output
    fell between cells (recorded, in no result)."""
    s = serve(ctx)
    node = s.create(language="node")
    r = s.run(node, "(async () => {\n  await new Promise((r) => setTimeout(r, 100));\n"
                    "  console.log('late log');\n  return 42;\n})()")
    assert r["status"] == "ok" and _main(r) == "42" and _stdout(r) == "late log\n", r
    r = s.run(node, "Promise.reject(new TypeError('bad'))")
    assert r["status"] == "error" and r["error"]["name"] == "TypeError", r
    assert "<cell 2>" in r["error"]["traceback"], r
    r = s.run(node, "var kept = 5; new Promise(() => {})", timeout_s=0.3)
    assert r["status"] == "timeout" and r["interrupted"] is True, r
    assert "timed out" in r["error"]["value"] and not r.get("session_closed"), r
    assert _main(s.run(node, "kept + 1")) == "6"
    r = s.run(node, "const y = await 1")
    assert r["error"]["name"] == "SyntaxError" and "(async () =>" in r["error"]["value"], r
    assert s.close() == 0


def test_cells_run_with_every_cpu_after_a_pinned_start(ctx):
    """A session is pinned to one CPU while its interpreter starts, like
    ward run; the driver's ready line (dropped by ward, never a result)
    unpins it, so even the first cell sees every CPU."""
    if len(os.sched_getaffinity(0)) < 2:
        raise wardtest.Skip("needs two CPUs")
    with open("/proc/self/status") as f:
        mine = re.search(r"Cpus_allowed_list:\s*(\S+)", f.read()).group(1)
    cells = {
        "python": "import re\nre.search(r'Cpus_allowed_list:\\s*(\\S+)', "
                  "open('/proc/self/status').read()).group(1)",
        "node": "require('fs').readFileSync('/proc/self/status', 'utf8')"
                ".match(/Cpus_allowed_list:\\s*(\\S+)/)[1]",
        "sh": "sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status",
    }
    s = serve(ctx)
    runs = {}
    for lang, code in cells.items():
        c = s.ok("session.create", {"language": lang})
        runs[lang] = c["run_id"]
        r = s.run(c["session_id"], code)
        assert r["status"] == "ok" and "channel_errors" not in r, r
        got = _stdout(r).strip() if lang == "sh" else _main(r).strip("'")
        assert got == mine, (lang, got, mine, r)
    assert s.close() == 0
    # The record says the pin held until the interpreter was up: the
    # threads node starts before its driver runs do not end it early.
    # (A loaded machine may end it first for its own reason: the code
    # waiting for its CPU, tracer/pin.c.)
    for lang, run_id in runs.items():
        layers = json.loads(ctx.sql("select layers from runs where id=?",
                                    run_id)[0]["layers"])
        pin = [l for l in layers if l["name"] == "cpu-pin"]
        assert len(pin) == 1 and pin[0]["active"], (lang, layers)
        assert re.fullmatch(r"CPU \d+ shared with the supervisor for \d+ ms, "
                            r"until (the session's interpreter was up|the code "
                            r"waited for its CPU \(other work on it\))",
                            pin[0]["detail"]), (lang, pin)

def test_sh_session_keeps_one_shell(ctx):
    s = serve(ctx)
    sid = s.create(language="sh")
    r = s.run(sid, "mkdir -p sub && cd sub\nGREETING=hello\nf() { echo \"f:$1\"; }")
    assert r["status"] == "ok" and r["exit_code"] == 0, r
    r = s.run(sid, "pwd; echo \"$GREETING\"; f x")
    lines = _stdout(r).splitlines()
    assert lines[0].endswith("/sub") and lines[1:] == ["hello", "f:x"], r
    r = s.run(sid, "false")
    assert r["status"] == "error" and r["exit_code"] == 1, r
    r = s.run(sid, "ls /proc/self/fd")  # the channel is closed for what the cell runs
    fds = sorted(int(x) for x in _stdout(r).split())
    assert 5 not in fds and 6 not in fds, r
    assert s.close() == 0


def test_one_shot_runs(ctx):
    s = serve(ctx)
    r = s.ok("run", {"code": "print(6 * 7)\n6 * 7"})
    assert r["session_id"] is None and r["status"] == "ok" and _stdout(r) == "42\n", r
    assert _main(r) == "42" and r["execution_count"] == 1, r
    r2 = s.ok("run", {"code": "'x' in globals()"})
    assert _main(r2) == "False" and r2["run_id"] != r["run_id"], r2
    r = s.ok("run", {"code": "echo $((6*7))", "language": "sh"})
    assert _stdout(r) == "42\n", r
    r = s.ok("run", {"code": "[1, 2].map(x => x * 2)", "language": "node"})
    assert _main(r) == "[ 2, 4 ]", r
    assert s.ok("session.list", {})["sessions"] == []
    assert s.close() == 0


def test_streaming_events_come_before_the_result(ctx):
    s = serve(ctx)
    sid = s.create()
    msgs = s.call_all("run", {"session_id": sid, "stream": True,
                              "code": "import sys\nprint('out1')\nprint('err1', file=sys.stderr)\n"
                                      "print('out2')"})
    events, final = msgs[:-1], msgs[-1]
    assert final["result"]["status"] == "ok", final
    got = {"stdout": "", "stderr": ""}
    for e in events:
        assert e["id"] == final["id"] and e["ts"] > 0, e
        got[e["event"]] += e["data"]
    assert got == {"stdout": "out1\nout2\n", "stderr": "err1\n"}, events
    # a character cut between two writes arrives whole
    msgs = s.call_all("run", {"session_id": sid, "stream": True,
                              "code": "import sys, time\nsys.stdout.buffer.write(b'caf\\xc3')\n"
                                      "sys.stdout.flush()\ntime.sleep(0.2)\n"
                                      "sys.stdout.buffer.write(b'\\xa9!\\n')\nsys.stdout.flush()"})
    assert "".join(e["data"] for e in msgs[:-1]) == "caf\u00e9!\n", msgs
    assert _stdout(msgs[-1]["result"]) == "caf\u00e9!\n", msgs[-1]
    # without stream: no events
    msgs = s.call_all("run", {"session_id": sid, "code": "print('quiet')"})
    assert len(msgs) == 1 and _stdout(msgs[0]["result"]) == "quiet\n", msgs
    assert s.close() == 0


NODE_AND_SH_CELLS = {
    "node": {
        "io": "const fs = require('fs');\n"
              "const t = fs.readFileSync('in.txt', 'utf8');\n"
              "fs.mkdirSync('out', {recursive: true});\n"
              "fs.writeFileSync('out/r.txt', t.toUpperCase());\n"
              "console.log('read ' + t.trim());\nconsole.error('err1');\n"
              "try { fs.readFileSync('/etc/shadow'); }\n"
              "catch (e) { console.log(e.code); }",
        "denied": "EACCES\n",
        "big": "process.stdout.write('A'.repeat(100000) + 'B'.repeat(100000));\n"
               "process.stdout.write('END')",
    },
    "sh": {
        "io": "mkdir -p out\ntr a-z A-Z < in.txt > out/r.txt\n"
              "echo \"read $(cat in.txt)\"\necho err1 >&2\n"
              "cat /etc/shadow 2>/dev/null || echo refused",
        "denied": "refused\n",
        "big": "head -c 100000 /dev/zero | tr '\\000' A\n"
               "head -c 100000 /dev/zero | tr '\\000' B\nprintf END",
    },
}


def test_node_and_sh_files_streaming_output_and_denials(ctx):
    """What the Python tests above check, for node and sh sessions: files
    in and out with the artifacts of the cell, streamed output, a denial
    reported with its cell, and a large output as head and tail with the
    whole of it in the record."""
    s = serve(ctx)
    for lang, cells in NODE_AND_SH_CELLS.items():
        c = s.ok("session.create", {"language": lang})
        sid = c["session_id"]
        w = s.ok("files.write", {"session_id": sid, "path": "in.txt", "text": "hello\n"})
        assert w["size"] == 6, (lang, w)
        msgs = s.call_all("run", {"session_id": sid, "code": cells["io"], "stream": True})
        r = msgs[-1]["result"]
        assert r["status"] == "ok", (lang, r)
        streamed = {"stdout": "", "stderr": ""}
        for e in msgs[:-1]:
            assert e["id"] == msgs[-1]["id"] and e["ts"] > 0, (lang, e)
            streamed[e["event"]] += e["data"]
        want = "read hello\n" + cells["denied"]
        assert streamed == {"stdout": want, "stderr": "err1\n"}, (lang, streamed)
        assert _stdout(r) == want, (lang, r)
        assert r["artifacts"] == [{"path": "out/r.txt", "size": 6,
                                   "sha256": hashlib.sha256(b"HELLO\n").hexdigest()}], (lang, r)
        pol = r["policy"]
        assert pol["denied"] is True and pol["audit_ref"] == c["run_id"], (lang, pol)
        assert [(d["syscall"], d["target"], d["action"], d["errno"])
                for d in pol["denials"]] == [("openat", "/etc/shadow", "deny", "EACCES")], \
            (lang, pol)
        rd = s.ok("files.read", {"session_id": sid, "path": "out/r.txt"})
        assert rd["text"] == "HELLO\n", (lang, rd)
        files = _files(s, sid)
        assert files == ["in.txt", "out/r.txt"], (lang, files)
        # more than a pipe holds, three times: Node queues what the pipe
        # cannot take; the result must still come after all of it
        for _ in range(3):
            r = s.run(sid, cells["big"])
            assert r["status"] == "ok", (lang, r)
            t = r["truncated"]
            assert t["stdout"] is True and t["stdout_bytes_total"] == 200003, (lang, t)
            head, tail = r["logs"]["stdout"]
            assert t["stdout_bytes_returned"] == len(head) + len(tail) < 200003, (lang, t)
            assert head == "A" * len(head) and tail.endswith("B" * 100 + "END"), \
                (lang, head[-5:], tail[-5:])
            assert r["policy"]["denials"] == [], (lang, r)
        s.ok("session.close", {"session_id": sid})
        total = ctx.sql("select sum(length(data)) n from outputs where run_id=? "
                        "and stream='stdout'", c["run_id"])[0]["n"]
        assert total == len(want) + 3 * 200003, (lang, total)
    assert s.close() == 0


def test_large_output_head_and_tail(ctx):
    s = serve(ctx)
    sid = s.create()
    r = s.run(sid, "import sys\nsys.stdout.write('A' * 100000 + 'B' * 100000)\n"
                   "sys.stdout.write('END')")
    t = r["truncated"]
    assert t["stdout"] is True and t["stdout_bytes_total"] == 200003, t
    head, tail = r["logs"]["stdout"]
    assert t["stdout_bytes_returned"] == len(head) + len(tail) < 200003, t
    assert head == "A" * len(head) and tail.endswith("B" * 100 + "END"), (head[-5:], tail[-5:])
    run_id = s.ok("session.list", {})["sessions"][0]["run_id"]
    assert s.close() == 0
    total = ctx.sql("select sum(length(data)) n from outputs where run_id=?", run_id)[0]["n"]
    assert total == 200003, total  # the record has it all


def test_output_past_the_runs_limit_still_comes_back(ctx):
    """The output limit is the record's, over a session's whole life: past
    it the record keeps counting, and each later cell's output still comes
    back to the caller (it came back empty, counted as 0 bytes)."""
    path = wardtest.profile_with(ctx, "sh", output_bytes=1000)
    s = serve(ctx)
    r = s.ok("session.create", {"language": "sh", "policy": path})
    sid, run_id = r["session_id"], r["run_id"]
    r = s.run(sid, "head -c 1500 /dev/zero | tr '\\0' a")
    assert _stdout(r) == "a" * 1500 and r["truncated"]["stdout_bytes_total"] == 1500, r
    assert "output limit of 1000 bytes" in "".join(r["logs"]["stderr"]), r
    for i in range(3):
        r = s.run(sid, "echo after %d" % i)
        assert _stdout(r) == "after %d\n" % i, r
        assert r["truncated"]["stdout_bytes_total"] == 8, r
    assert s.close() == 0
    kept = ctx.sql("select sum(length(data)) n from outputs where run_id=? and stream='stdout'",
                   run_id)[0]["n"]
    assert kept == 1000, kept
    run = ctx.sql("select * from runs where id=?", run_id)[0]
    assert run["stdout_bytes"] == 1500 + 3 * 8 and run["stdout_truncated"] == 1, run


def test_python_last_expression_found_without_the_syntax_tree(ctx):
    # The driver finds a cell's last expression with compile() alone: a
    # session starts without _ast (~2 ms of every cold start), and the
    # value is the one a notebook shows, wherever the cell is ambiguous
    s = serve(ctx)
    sid = s.create()
    assert _main(s.run(sid, "import sys\n'_ast' in sys.modules")) == "False"
    cases = [("x = 5\nx", "5"), ("x = 1; x + 1", "2"), ("print('a;b'); 'c;d'", "'c;d'"),
             ("y = (1,\n2)", None), ("(1,\n2)", "(1, 2)"), ("{\n'k': 1\n}", "{'k': 1}"),
             ("s = '''\n1\n'''", None), ("t = '''\nz\n'''\nt", repr("\nz\n")),
             ("def f():\n    return 3\nf()", "3"), ("if True:\n    7\n", None),
             ("for i in range(3):\n    pass\ni  # the last\n\n# done", "2"),
             ("x = 1 \\\n+ 2\nx", "3"), ("'''\nq = 1\n'''", repr("\nq = 1\n")),
             ("x = 5\r\nx\r\n", "5"), ("z = 9;", None), ("1;2;3", "3")]
    for code, want in cases:
        r = s.run(sid, code)
        assert r["status"] == "ok" and r["error"] is None, (code, r)
        mains = [x["text"] for x in r["results"] if x["is_main_result"]]
        assert mains == ([want] if want else []), (code, r["results"])
    # errors keep the cell's line numbers, in the statements and in the
    # last expression
    r = s.run(sid, "a = 1\nb = 2\n1 / 0")
    assert r["error"]["name"] == "ZeroDivisionError" and "line 3" in r["error"]["traceback"], r
    r = s.run(sid, "a = 1\nundefined_name\nb = 2")
    assert r["error"]["name"] == "NameError" and "line 2" in r["error"]["traceback"], r
    r = s.run(sid, "x = (\n")
    assert r["error"]["name"] == "SyntaxError", r
    assert s.close() == 0


def test_python_top_level_await(ctx):
    """As in IPython, a cell may await at its top level (it was a
    SyntaxError): it runs on the session's own asyncio loop, its names
    stay, and asyncio.run still works in a cell that does not await."""
    s = serve(ctx)
    sid = s.create()
    r = s.run(sid, "import asyncio\n"
                   "async def f(v):\n    await asyncio.sleep(0.01)\n    return v\n"
                   "x = await f(5)\nprint('got', x)\nawait f(x * 2)")
    assert r["status"] == "ok" and _stdout(r) == "got 5\n" and _main(r) == "10", r
    assert _main(s.run(sid, "x")) == "5"
    r = s.run(sid, "await asyncio.sleep(30)", timeout_s=0.5)
    assert r["status"] == "timeout" and r["interrupted"] is True, r
    assert r["error"]["name"] == "KeyboardInterrupt", r
    assert _main(s.run(sid, "[await f(1) for _ in range(2)]")) == "[1, 1]"
    assert _main(s.run(sid, "asyncio.run(f(3))")) == "3"
    r = s.run(sid, "async def g():\n    raise ValueError('v')\nawait g()")
    tb = r["error"]["traceback"]
    assert r["error"]["name"] == "ValueError" and "asyncio" not in tb, tb
    assert tb.startswith('Traceback (most recent call last):\n  File "<cell 6>", line 3'), tb
    assert s.close() == 0


def test_timeout_interrupts_and_session_survives(ctx):
    s = serve(ctx)
    sid = s.create()
    s.run(sid, "x = 5")
    r = s.run(sid, "n = 0\nwhile True:\n    n += 1", timeout_s=0.5)
    assert r["status"] == "timeout" and r["interrupted"] is True, r
    assert r["error"]["name"] == "KeyboardInterrupt", r
    r = s.run(sid, "x, n > 0")
    assert _main(r) == "(5, True)", r
    # a cell that will not stop (SIGINT ignored) ends the session
    r = s.run(sid, "import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                   "while True:\n    time.sleep(0.05)", timeout_s=0.3)
    assert r["status"] == "timeout" and r["interrupted"] is False, r
    s.err("run", {"session_id": sid, "code": "1"}, NO_SESSION)
    assert s.close() == 0


def test_node_and_sh_timeouts(ctx):
    s = serve(ctx)
    node = s.create(language="node")
    r = s.run(node, "var k = 1; while (true) {}", timeout_s=0.5)
    assert r["status"] == "timeout" and r["interrupted"] is True, r
    assert "timed out" in r["error"]["value"] and "runCell" not in r["error"]["traceback"], r
    assert _main(s.run(node, "k")) == "1"
    sh = s.create(language="sh")
    r = s.run(sh, "x=3; sleep 30", timeout_s=0.5)  # the command is interrupted
    assert r["status"] == "timeout" and r["interrupted"] is True and r["exit_code"] == 130, r
    assert _stdout(s.run(sh, "echo $x")) == "3\n"
    r = s.run(sh, "while :; do :; done", timeout_s=0.3)  # builtins: the session ends
    assert r["status"] == "timeout" and r["interrupted"] is False, r
    s.err("run", {"session_id": sh, "code": "echo"}, NO_SESSION)
    assert s.close() == 0


def test_node_cell_stopped_while_printing_keeps_its_session(ctx):
    """V8 stops a cell wherever its JavaScript is: a cell printing in a loop
    was stopped inside Node's stream code, between a write and the stream's
    note of it, which left stdout "writing" for good; the cell's result
    waited on it and the session was ended as stuck (10 times in 10). The
    driver writes the cells' output straight to the fds."""
    s = serve(ctx)
    node = s.create(language="node")
    flood = "{ const s = 'y'.repeat(1 << 16);\n  for (;;) process.stdout.write(s) }"
    for i in range(3):
        r = s.run(node, flood, timeout_s=0.3)
        assert r["status"] == "timeout" and r["interrupted"] is True, (i, r)
        assert "timed out" in r["error"]["value"] and not r.get("session_closed"), (i, r)
        assert _main(s.run(node, "process.stdout.writableLength")) == "0", i
    r = s.run(node, "process.stdout.write(42)")  # as Node's own write
    assert r["status"] == "error" and r["error"]["name"] == "TypeError", r
    r = s.run(node, "process.stderr.write('b\\n', 'utf8', () => {})")
    assert _main(r) == "true" and r["logs"]["stderr"] == ["b\n"], r
    assert s.close() == 0


def test_node_cells_start_no_thread(ctx):
    # ward times a node cell and interrupts it at its timeout itself (a
    # SIGINT), and one SIGINT watchdog serves the whole session: vm started
    # two threads at every cell (its timeout's and breakOnSigint's), each a
    # traced clone and a row in the record. A cell that runs past its
    # timeout is still stopped, and said to have timed out.
    if not wardtest.NODE:
        raise wardtest.Skip("node is not installed")
    s = serve(ctx)
    c = s.ok("session.create", {"language": "node"})
    sid, run_id = c["session_id"], c["run_id"]
    assert _main(s.run(sid, "var n = 0; 1 + 1", timeout_s=30)) == "2"
    count = "select count(*) as n from processes where run_id=?"
    before = ctx.sql(count, run_id)[0]["n"]
    for i in range(6):
        r = s.run(sid, "n += 1", timeout_s=30)
        assert r["status"] == "ok" and _main(r) == str(i + 1), r
    after = ctx.sql(count, run_id)[0]["n"]
    assert after == before, (before, after)
    r = s.run(sid, "n = 100; for (;;) {}", timeout_s=0.4)
    assert r["status"] == "timeout" and r["interrupted"] is True, r
    assert r["error"]["value"] == "Script execution timed out after 400ms", r
    assert r["error"]["traceback"].startswith("Error: Script execution timed out"), r
    assert _main(s.run(sid, "n")) == "100"
    assert s.close() == 0


def test_sh_cells_start_no_watchdog_and_outlive_a_late_sigint(ctx):
    # ward interrupts an sh cell at its timeout itself: a cell of builtins
    # starts no process (a watchdog subshell and its sleep did, at every
    # cell), and a SIGINT that comes when the cell is over (here from a
    # background job of the cell's own) leaves the shell waiting for the
    # next cell instead of ending the session
    s = serve(ctx)
    sh = s.ok("session.create", {"language": "sh"})
    for i in range(3):
        r = s.run(sh["session_id"], "x=$((x+1))", timeout_s=5)
        assert r["status"] == "ok" and r["exit_code"] == 0, r
    r = s.run(sh["session_id"], "(sleep 0.3; kill -INT 0) &", timeout_s=5)
    assert r["status"] == "ok", r
    time.sleep(0.8)
    r = s.run(sh["session_id"], "echo $x")
    assert r["status"] == "ok" and _stdout(r) == "3\n", r
    assert s.close() == 0
    procs = ctx.sql("select exe, argv from processes where run_id=? and kind='process'",
                    sh["run_id"])
    # the shell, then the cell's background job (a subshell) and its sleep
    assert [p["exe"] for p in procs] == ["/usr/bin/dash"] * 2 + ["/usr/bin/sleep"], procs


def test_code_that_ends_its_session(ctx):
    s = serve(ctx)
    sid = s.create()
    r = s.run(sid, "import os\nprint('bye', flush=True)\nos._exit(3)")
    assert r["status"] == "error" and r["error"]["name"] == "SessionEnded", r
    assert _stdout(r) == "bye\n", r
    s.err("run", {"session_id": sid, "code": "1"}, NO_SESSION)
    assert s.ok("session.list", {})["sessions"] == []
    sh = s.create(language="sh")
    r = s.run(sh, "exit 4")
    assert r["status"] == "error" and r["error"]["name"] == "SessionEnded", r
    assert s.close() == 0


def test_session_memory_limit(ctx):
    s = serve(ctx)
    sid = s.create(memory_mb=200)
    assert s.run(sid, "b = bytearray(50 * 1024 * 1024)\nlen(b)")["status"] == "ok"
    r = s.run(sid, "c = bytearray(600 * 1024 * 1024)")
    assert r["status"] in ("limit", "error"), r
    if r["status"] == "error":  # an rlimit: MemoryError, and the session lives
        assert r["error"]["name"] == "MemoryError", r
    else:  # a memory cgroup: the kernel ended the session
        assert r["error"]["name"] == "SessionEnded" and "memory" in r["error"]["value"], r
        s.err("run", {"session_id": sid, "code": "1"}, NO_SESSION)
    assert s.close() == 0


def test_session_event_limit(ctx):
    """A session lives long: its run's record is bounded too (limits.events),
    and a cell that floods trapped calls ends the session as a limit, with
    the kill in the result's denials and in the record."""
    path = wardtest.profile_with(ctx, "default", events=400)
    s = serve(ctx)
    r = s.ok("session.create", {"policy": path})
    sid, run_id = r["session_id"], r["run_id"]
    assert _main(s.run(sid, "x = 41\nx + 1")) == "42"
    r = s.run(sid, "import os\nfor i in range(100000):\n"
                   "    try: os.open('/usr/lib/nonexistent-ward-flood', 0)\n"
                   "    except OSError: pass\n")
    assert r["status"] == "limit" and r["session_closed"], r
    assert r["error"]["name"] == "SessionEnded" and "event limit reached: 400" in \
        r["error"]["value"], r
    assert {"syscall": "openat", "target": "/usr/lib/nonexistent-ward-flood",
            "action": "kill", "rule": "limits.events", "errno": None} in \
        r["policy"]["denials"], r
    s.err("run", {"session_id": sid, "code": "x"}, NO_SESSION)
    assert s.close() == 0
    run = ctx.sql("select * from runs where id=?", run_id)[0]
    assert run["status"] == "limit" and run["events"] == 401, run
    assert ctx.sql("select count(*) n from events where run_id=?", run_id)[0]["n"] == 401


def test_session_workdir_quota(ctx):
    """A session's workdir is a tmpfs of limits.disk_mb (default 1 GiB): its
    files can't fill the host's /tmp; files.write goes to it, and closing
    the session unmounts it."""
    if os.geteuid() != 0:
        raise wardtest.Skip("the workdir quota is a tmpfs ward mounts: root only")
    path = wardtest.profile_with(ctx, "default", disk_mb=16)
    s = serve(ctx)
    before = _workdirs()
    r = s.ok("session.create", {"policy": path})
    sid, run_id = r["session_id"], r["run_id"]
    (wd,) = _workdirs() - before
    s.ok("files.write", {"session_id": sid, "path": "in.txt", "text": "from the caller"})
    r = s.run(sid, "import os, tempfile\nst = os.statvfs('.')\n"
                   "(st.f_blocks * st.f_frsize >> 20, open('in.txt').read(), "
                   "os.path.isdir(tempfile.gettempdir()))")
    assert _main(r) == "(16, 'from the caller', True)", r
    r = s.run(sid, "try:\n    open('big', 'wb').write(b'x' * (32 << 20))\n"
                   "except OSError as e:\n    print(e.strerror)\n")
    assert _stdout(r) == "No space left on device\n", r
    # mounted in the session worker's own mount namespace, not the host's
    assert wardtest.quota_holders(wd), "mounted while the session lives"
    with open("/proc/self/mountinfo") as f:
        assert not any(l.split()[4] == wd for l in f), "not on the host"
    assert s.close() == 0
    assert wardtest.wait_until(lambda: not wardtest.quota_holders(wd), 10), \
        wardtest.quota_holders(wd)
    assert not os.path.exists(wd)
    layers = json.loads(ctx.sql("select layers from runs where id=?", run_id)[0]["layers"])
    q = [x for x in layers if x["name"] == "workdir-quota"][0]
    assert q["active"] and "16 MiB" in q["detail"], q


def test_session_quota_gone_with_a_killed_server(ctx):
    """ward serve SIGKILLed: its workers die with it, and their workdir
    quotas (in the workers' own mount namespaces) with them."""
    if os.geteuid() != 0:
        raise wardtest.Skip("the workdir quota is a tmpfs ward mounts: root only")
    s = serve(ctx)
    before = _workdirs()
    r = s.ok("session.create", {"language": "sh"})
    (wd,) = _workdirs() - before
    assert _stdout(s.run(r["session_id"], "head -c 4000000 /dev/zero > big; echo ok")) == "ok\n"
    assert wardtest.quota_holders(wd)
    s.p.kill()
    s.p.wait()
    assert wardtest.wait_until(lambda: not wardtest.quota_holders(wd), 30), \
        wardtest.quota_holders(wd)
    # the workdir itself, with the code's file, is left on the host until
    # the next ward's sweep finds its lock free
    assert os.path.exists(os.path.join(wd, "big")) or os.path.isdir(wd), wd
    assert ctx.run("pass").code == 0
    assert not os.path.exists(wd) and not os.path.exists(wd + ".lock"), wd
    shutil.rmtree(wd, ignore_errors=True)  # the workdir itself stays, as before


def _workdirs():
    return {d for d in glob.glob("/tmp/ward-*") if not d.endswith(".lock")}


def test_sessions_are_isolated(ctx):
    s = serve(ctx)
    before = _workdirs()
    a = s.create()
    (wa,) = _workdirs() - before  # a's workdir on the host
    b = s.create()
    s.ok("files.write", {"session_id": a, "path": "mine.txt", "text": "secret of a"})
    r = s.run(a, "import os\nos.getcwd()")
    assert _main(r).strip("'") == wardtest.HOME, r
    # each sees its own workdir at /home/user, and nothing of the other's
    r = s.run(b, "import os\nos.path.exists('mine.txt'), os.path.exists(%r)" % wa)
    assert _main(r) == "(False, False)", r
    r = s.run(b, "open(%r + '/mine.txt').read()" % wa)
    assert r["status"] == "error" and r["error"]["name"] in (
        "FileNotFoundError", "PermissionError"), r
    r = s.run(b, "import os\nos.path.exists(%r)" % wa)
    assert _main(r) == "False", r
    s.err("files.read", {"session_id": b, "path": "mine.txt"}, FILE)
    assert s.close() == 0


def test_eight_concurrent_sessions(ctx):
    s = serve(ctx)
    ids = [s.create(language=["python", "sh"][i % 2]) for i in range(8)]
    assert len(set(ids)) == 8
    for i, sid in enumerate(ids):
        code = "v = %d" % i if i % 2 == 0 else "v=%d" % i
        assert s.run(sid, code)["status"] == "ok"
    for i, sid in enumerate(ids):
        r = s.run(sid, "v" if i % 2 == 0 else "echo $v")
        assert (_main(r) if i % 2 == 0 else _stdout(r).strip()) == str(i), r
    assert len(s.ok("session.list", {})["sessions"]) == 8
    runs = {x["run_id"] for x in s.ok("session.list", {})["sessions"]}
    assert len(runs) == 8
    assert s.close() == 0  # EOF closes them all
    runs = ctx.sql("select status, cause from runs")
    assert {r["status"] for r in runs} == {"ok"}, runs


def _send(s, rid, method, params=None):
    req = {"id": rid, "method": method}
    if params is not None:
        req["params"] = params
    s.send_raw((json.dumps(req) + "\n").encode())


def _answers(s, n):
    """The next n answers (events left out), by id, with when each came."""
    t0, out = time.monotonic(), {}
    while len(out) < n:
        m = s.read()
        if "event" not in m:
            out[m["id"]] = (m, time.monotonic() - t0)
    return out


def test_sessions_run_in_parallel_and_control_is_answered_meanwhile(ctx):
    """8 sessions each sleeping 1 s take about 1 s together, not 8; the
    requests sent after them (list, create, files, ping, close) are
    answered while the cells run: out of order, matched by id."""
    s = serve(ctx)
    ids = [s.create() for _ in range(8)]
    spare = s.create()
    t0 = time.monotonic()
    for i, sid in enumerate(ids):
        _send(s, "run%d" % i, "run", {"session_id": sid, "code": "import time\ntime.sleep(1)\n7"})
    _send(s, "list", "session.list", {})
    _send(s, "write", "files.write", {"session_id": ids[0], "path": "d/x.txt", "text": "hi"})
    _send(s, "ping", "ping", {})
    _send(s, "close", "session.close", {"session_id": spare})
    _send(s, "create", "session.create", {"language": "sh"})
    got = _answers(s, 13)
    wall = time.monotonic() - t0
    assert wall < 2.5, (wall, {k: round(v[1], 2) for k, v in got.items()})
    for i in range(8):
        r = got["run%d" % i][0]["result"]
        assert r["status"] == "ok" and _main(r) == "7", r
    control = ("list", "write", "ping", "close", "create")
    assert max(got[k][1] for k in control) < min(got["run%d" % i][1] for i in range(8)), \
        {k: round(v[1], 2) for k, v in got.items()}
    lst = got["list"][0]["result"]["sessions"]
    assert sum(x["running"] for x in lst) >= 1, lst
    assert got["write"][0]["result"]["size"] == 2, got["write"]
    assert got["close"][0]["result"] == {"session_id": spare, "closed": True}
    assert s.close() == 0


def test_runs_on_one_session_wait_their_turn(ctx):
    s = serve(ctx)
    sid = s.create()
    for i in range(3):
        _send(s, i, "run", {"session_id": sid,
                            "code": "import time\ntime.sleep(0.3)\nseen = globals().get('seen', 0) + 1\nseen"})
    got = _answers(s, 3)
    assert sorted(_main(got[i][0]["result"]) for i in range(3)) == ["1", "2", "3"], got
    assert min(v[1] for v in got.values()) > 0.25 and max(v[1] for v in got.values()) > 0.85, got
    assert s.close() == 0


def test_cancel_method_interrupts_a_cell_and_drops_a_queued_run(ctx):
    s = serve(ctx)
    sid = s.create()
    _send(s, "long", "run", {"session_id": sid, "code": "import time\ntime.sleep(60)"})
    _send(s, "next", "run", {"session_id": sid, "code": "print('never')"})
    time.sleep(0.5)
    t0 = time.monotonic()
    _send(s, "c1", "cancel", {"id": "next"})
    _send(s, "c2", "cancel", {"id": "long"})
    got = _answers(s, 4)
    assert time.monotonic() - t0 < 5, got
    assert got["c1"][0]["result"] == {"id": "next", "cancelled": True}, got
    assert got["c2"][0]["result"] == {"id": "long", "cancelled": True}, got
    nxt, lng = got["next"][0]["result"], got["long"][0]["result"]
    assert nxt["status"] == "cancelled" and nxt["logs"]["stdout"] == [], nxt
    assert lng["status"] == "cancelled" and lng["error"]["name"] == "KeyboardInterrupt", lng
    # the session lives on; a cancel of nothing says so
    assert s.run(sid, "1 + 1")["status"] == "ok"
    assert s.ok("cancel", {"id": "nope"}) == {"id": "nope", "cancelled": False}
    s.err("cancel", {}, PARAMS)
    assert s.close() == 0
    cells = ctx.sql("select n, status from cells order by n")
    assert [(c["n"], c["status"]) for c in cells] == [(1, "cancelled"), (2, "ok")], cells


def test_client_that_disconnects_cancels_its_running_cells(ctx):
    s = serve(ctx)
    sid = s.create()
    run_id = s.ok("session.list", {})["sessions"][0]["run_id"]
    _send(s, 9, "run", {"session_id": sid, "code": "import time\ntime.sleep(60)"})
    assert wardtest.wait_until(
        lambda: ctx.sql("select count(*) as n from processes where run_id = ?", run_id)[0]["n"] >= 1)
    time.sleep(0.5)
    t0 = time.monotonic()
    s.p.stdin.close()
    s.p.stdout.close()  # the client is gone: nobody reads answers
    assert s.p.wait(timeout=20) == 0
    assert time.monotonic() - t0 < 10
    s.p.stderr.close()
    cells = ctx.sql("select status from cells where run_id = ?", run_id)
    assert [c["status"] for c in cells] == ["cancelled"], cells
    runs = ctx.sql("select status from runs where id = ?", run_id)
    assert runs[0]["status"] == "ok", runs


def test_end_of_input_answers_what_was_sent(ctx):
    """A client that only stops sending (a heredoc) still gets every answer."""
    p = subprocess.run([wardtest.ward_bin(), "serve", "-v", "--db", ctx.db],
                       input=b'{"id":0,"method":"session.create","params":{}}\n'
                             b'{"id":1,"method":"run","params":{"code":"import time\\ntime.sleep(0.5)\\n6*7"}}\n',
                       capture_output=True, timeout=60, cwd=ctx.tmp)
    assert p.returncode == 0, p.stderr
    r = {m["id"]: m for m in map(json.loads, p.stdout.splitlines())}
    assert r[1]["result"]["status"] == "ok" and _main(r[1]["result"]) == "42", r
    assert b"--listen" in p.stderr and b"one client" in p.stderr, p.stderr
    # -v: ward's milestones
    sid = r[0]["result"]["session_id"].encode()
    assert b"session " + sid + b" started" in p.stderr, p.stderr
    assert b"session " + sid + b" (run " in p.stderr and b"the server ends" in p.stderr, p.stderr


def test_close_ends_a_running_cell_promptly(ctx):
    s = serve(ctx)
    sid = s.create()
    _send(s, "run", "run", {"session_id": sid, "code": "import time\ntime.sleep(60)"})
    time.sleep(0.5)
    _send(s, "close", "session.close", {"session_id": sid})
    got = _answers(s, 2)
    assert got["close"][1] < 5, got
    r = got["run"][0]["result"]
    assert r["status"] == "cancelled" and r["session_closed"] is True, r
    msg = s.err("run", {"session_id": sid, "code": "1"}, NO_SESSION)
    assert "was closed" in msg, msg
    assert s.close() == 0


def test_session_lifetime_update_and_metadata(ctx):
    s = serve(ctx, "--max-life", "100")
    now = time.time() * 1000
    c = s.ok("session.create", {"life_s": 1, "metadata": {"user": "ann"}})
    assert abs(c["expires_ms"] - (now + 1000)) < 1500, c
    d = s.ok("session.create", {"life_s": 500})
    assert d["life_capped_from"] == 500 and abs(d["expires_ms"] - (now + 100000)) < 1500, d
    lst = {x["session_id"]: x for x in s.ok("session.list", {})["sessions"]}
    a = lst[c["session_id"]]
    assert a["metadata"] == {"user": "ann"} and a["running"] is False, a
    assert a["expires_ms"] == c["expires_ms"] and abs(a["started_ms"] - now) < 1500, a
    assert lst[d["session_id"]]["metadata"] == {}
    u = s.ok("session.update", {"session_id": d["session_id"], "life_s": 2})
    assert abs(u["expires_ms"] - (time.time() * 1000 + 2000)) < 1500, u
    s.err("session.update", {"session_id": d["session_id"]}, PARAMS)
    s.err("session.create", {"metadata": {"n": 1}}, PARAMS)
    time.sleep(2.5)
    for sid in (c["session_id"], d["session_id"]):
        msg = s.err("run", {"session_id": sid, "code": "1"}, NO_SESSION)
        assert "expired" in msg and "lifetime" in msg, msg
    assert s.close() == 0


def test_files_methods_mkdir_stat_list_remove_rename(ctx):
    s = serve(ctx)
    sid = s.create()
    f = dict(session_id=sid)
    w = s.ok("files.write", dict(f, path="a/b/c.txt", text="abc"))
    assert w["size"] == 3, w
    assert s.ok("files.mkdir", dict(f, path="x/y")) == {"path": "x/y", "created": True}
    assert s.ok("files.mkdir", dict(f, path="x/y")) == {"path": "x/y", "created": False}
    s.err("files.mkdir", dict(f, path="a/b/c.txt"), FILE)
    s.run(sid, "open('.hidden', 'w').write('h')\nimport os\nos.symlink('a', 'ln')")
    st = s.ok("files.stat", dict(f, path="a/b/c.txt"))
    assert st["type"] == "file" and st["name"] == "c.txt" and st["size"] == 3, st
    assert st["sha256"] == hashlib.sha256(b"abc").hexdigest() and st["mode"] == 0o644, st
    assert st["mtime_ms"] > 0
    assert s.ok("files.stat", dict(f, path="a"))["type"] == "dir"
    ln = s.ok("files.stat", dict(f, path="ln"))
    assert ln["type"] == "symlink" and "sha256" not in ln, ln
    msg = s.err("files.stat", dict(f, path="nope"), FILE)
    assert "no such file" in msg, msg
    top = {e["path"]: e["type"] for e in s.ok("files.list", f)["files"]}
    assert {"a": "dir", "x": "dir", ".hidden": "file", "ln": "symlink"}.items() <= top.items(), top
    assert "a/b" not in top
    sub = [e["path"] for e in s.ok("files.list", dict(f, path="a", depth=2))["files"]]
    assert sub == ["a/b", "a/b/c.txt"], sub
    s.err("files.list", dict(f, path="a/b/c.txt"), FILE)
    s.err("files.list", dict(f, depth=0), PARAMS)
    assert s.ok("files.rename", dict(f, **{"from": "a/b/c.txt", "to": "m/n.txt"})) == \
        {"from": "a/b/c.txt", "to": "m/n.txt"}
    assert s.ok("files.read", dict(f, path="m/n.txt"))["text"] == "abc"
    assert s.ok("files.remove", dict(f, path="a")) == {"path": "a", "removed": True}
    assert s.ok("files.remove", dict(f, path="ln")) == {"path": "ln", "removed": True}
    s.err("files.stat", dict(f, path="a"), FILE)
    s.err("files.remove", dict(f, path="."), FILE)
    s.err("files.remove", dict(f, path="../x"), FILE)
    r = s.run(sid, "import os\nsorted(os.listdir('.'))")
    assert "'a'" not in _main(r) and "'ln'" not in _main(r) and "'m'" in _main(r), r
    assert s.close() == 0


def test_sys_exit_comes_back_as_the_exit_code(ctx):
    s = serve(ctx)
    for lang, code in (("python", "import sys\nsys.exit(3)"), ("node", "process.exit(3)"),
                       ("sh", "exit 3")):
        sid = s.create(language=lang)
        r = s.run(sid, code)
        assert r["exit_code"] == 3 and r["status"] == "error", (lang, r)
    sid = s.create()
    assert s.run(sid, "raise SystemExit")["exit_code"] == 0
    assert s.run(sid, "1")["status"] == "ok"  # python's session lives on
    assert s.close() == 0


def test_too_long_request_line_is_answered_with_its_id(ctx):
    s = serve(ctx)
    s.send_raw(b'{"id": 77, "method": "run", "params": {"code": "' + b"x" * (17 << 20) + b'"}}\n')
    m = s.read()
    assert m["id"] == 77 and m["error"]["code"] == TOO_LARGE, m
    assert s.ok("session.list", {}) == {"sessions": []}
    assert s.close() == 0


def test_session_limit_and_expiry(ctx):
    s = serve(ctx, "--max-sessions", "2", "--idle", "1")
    a = s.create()
    s.create()
    msg = s.err("session.create", {}, LIMIT)
    assert "2 sessions" in msg, msg
    time.sleep(1.5)
    # idle sessions expired: room again, and the old id is gone
    msg = s.err("run", {"session_id": a, "code": "1"}, NO_SESSION)
    assert "expired" in msg and "idle" in msg, msg
    assert s.ok("session.list", {})["sessions"] == []
    s.create()
    assert s.close() == 0


def test_error_paths_keep_the_server_serving(ctx):
    s = serve(ctx)
    s.send_raw(b"{not json\n")
    m = s.read()
    assert m["id"] is None and m["error"]["code"] == PARSE, m
    s.send_raw(b"[1, 2]\n")
    assert s.read()["error"]["code"] == INVALID
    s.send_raw(b'{"id": 7}\n')
    m = s.read()
    assert m["id"] == 7 and m["error"]["code"] == INVALID, m
    s.send_raw(b'{"id": 8, "method": "run", "params": [1]}\n')
    assert s.read()["error"]["code"] == PARAMS
    s.err("no.such", {}, METHOD)
    s.err("session.close", {"session_id": "s-nope"}, NO_SESSION)
    s.err("run", {"session_id": "s-nope", "code": "1"}, NO_SESSION)
    s.err("files.list", {"session_id": "s-nope"}, NO_SESSION)
    s.err("session.close", {}, PARAMS)
    s.err("run", {}, PARAMS)
    s.err("run", {"code": 5}, PARAMS)
    s.err("run", {"code": "1", "timeout_s": -1}, PARAMS)
    s.err("run", {"code": "1", "stream": "yes"}, PARAMS)
    s.err("run", {"code": "1", "bogus": 1}, PARAMS)
    s.err("session.create", {"language": "cobol"}, PARAMS)
    s.err("session.create", {"env": {"A": 1}}, PARAMS)
    msg = s.err("session.create", {"profile": "no-such-profile"}, PARAMS)
    assert "no-such-profile" in msg or "profile" in msg, msg
    # an over-long line (> 16 MiB) is answered and skipped
    s.send_raw(b'{"id": 9, "method": "run", "params": {"code": "' + b"x" * (17 << 20) + b'"}}\n')
    m = s.read()
    assert m["error"]["code"] == TOO_LARGE, m
    # and the server still works
    assert _main(s.ok("run", {"code": "2 + 2"})) == "4"
    assert s.close() == 0


def test_policy_denials_are_reported_per_cell(ctx):
    s = serve(ctx)
    sid = s.create()
    r = s.run(sid, "try:\n    open('/etc/shadow').read()\nexcept OSError as e:\n"
                   "    print(type(e).__name__)")
    assert _stdout(r) == "PermissionError\n", r
    pol = r["policy"]
    assert pol["denied"] is True and pol["audit_ref"] == r["run_id"], pol
    assert [(d["syscall"], d["target"], d["action"]) for d in pol["denials"]] == [
        ("openat", "/etc/shadow", "deny")], pol
    assert pol["denials"][0]["errno"] == "EACCES", pol
    r = s.run(sid, "1")
    assert r["policy"]["denied"] is False and r["policy"]["denials"] == [], r
    assert s.close() == 0


def test_ward_show_follows_the_session_cell_by_cell(ctx):
    s = serve(ctx)
    c = s.ok("session.create", {})
    s.run(c["session_id"], "x = 1\nprint('one')")
    s.run(c["session_id"], "open('/etc/shadow')")
    assert s.close() == 0
    r = ctx.ward("show", c["run_id"])
    assert r.code == 0, r
    marks = [l.split(None, 1)[1] for l in r.stdout.splitlines()
             if re.match(r" *[+][0-9.]+ (>>|<<) \[-\] cell \d+: ", l)
             or re.match(r" *[+][0-9.]+ +(stdout\| one|!! \[1\] DENY)", l)]
    assert marks == [">> [-] cell 1: x = 1 ...", "stdout| one", "<< [-] cell 1: ok",
                     ">> [-] cell 2: open('/etc/shadow')",
                     marks[4], "<< [-] cell 2: error"], marks
    assert marks[4].startswith("!! [1] DENY   openat /etc/shadow"), marks


def test_forged_second_result_is_rejected(ctx):
    s = serve(ctx)
    sid = s.create()
    # in-process code can write the result fd; a frame without the nonce
    # is rejected and reported with the cell, not taken as its result
    r = s.run(sid, "import os\nos.write(6, b'{\"nonce\": \"0\", \"n\": 1, \"results\": "
                   "[{\"text\": \"forged\", \"is_main_result\": true}]}\\n')\n'real'")
    assert _main(r) == "'real'", r
    assert any("unknown nonce" in e for e in r["channel_errors"]), r
    r = s.run(sid, "import os\nos.write(6, b'garbage\\n')\n1")
    assert _main(r) == "1" and any("malformed" in e for e in r["channel_errors"]), r
    rows = ctx.sql("select result from cells where n=2")
    assert "malformed" in rows[0]["result"], rows
    # a child process cannot reach the channel at all
    r = s.run(sid, "import subprocess\nsubprocess.run(['/bin/sh', '-c', 'echo x >&6'])"
                   ".returncode")
    assert _main(r) != "0" and "channel_errors" not in r, r
    assert s.close() == 0


def test_help(ctx):
    r = ctx.ward("serve", "--help")
    assert r.code == 0 and "session.create" in r.stdout and "files.read" in r.stdout, r
    r = ctx.ward("serve", "--bogus")
    assert r.code == 125, r


EXITS = {"python": "import os\nprint('bye', flush=True)\nos._exit(3)",
         "node": "console.log('bye'); process.exit(3)",
         "sh": "echo bye; exit 3"}


def test_interpreter_exit_ends_the_cell_at_once(ctx):
    # The cell ends when the interpreter does, with its own exit status,
    # not at the cell's timeout (sh's timeout watchdog once kept the run
    # alive) and not as exit code 1; the session is closed.
    s = serve(ctx, "--timeout", "20")
    for lang, code in EXITS.items():
        t = time.monotonic()
        r = s.ok("run", {"code": code, "language": lang})
        took = time.monotonic() - t
        assert r["status"] == "error" and r["exit_code"] == 3, (lang, r)
        assert r["error"]["name"] == "SessionEnded", (lang, r)
        assert "exited with status 3" in r["error"]["value"], (lang, r)
        assert _stdout(r) == "bye\n" and took < 10, (lang, took, r)
        sid = s.create(language=lang)
        t = time.monotonic()
        r = s.run(sid, code)
        took = time.monotonic() - t
        assert r["exit_code"] == 3 and r["session_closed"] is True and took < 10, (lang, took, r)
        assert "the session is closed" in r["error"]["value"], r
        s.err("run", {"session_id": sid, "code": "1"}, NO_SESSION)
    # a signal: 128 + N, named
    r = s.ok("run", {"code": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"})
    assert r["exit_code"] == 137 and "SIGKILL" in r["error"]["value"], r
    assert s.close() == 0
    runs = ctx.sql("select status, exit_code from runs where language='sh'")
    assert {(x["status"], x["exit_code"]) for x in runs} == {("error", 3)}, runs


def test_tracebacks_name_only_the_code(ctx):
    s = serve(ctx)
    sid = s.create()
    r = s.run(sid, "import time\ndef f():\n    time.sleep(30)\nf()", timeout_s=0.5)
    tb = r["error"]["traceback"]
    assert r["status"] == "timeout" and "KeyboardInterrupt: cell timeout" in tb, r
    assert "_alarm" not in tb and "<string>" not in tb, tb
    assert re.findall(r'File "([^"]+)", line (\d+), in (\S+)', tb) == [
        ("<cell 1>", "4", "<module>"), ("<cell 1>", "3", "f")], tb
    s.run(sid, "def g():\n    raise KeyError('k')")
    r = s.run(sid, "try:\n    g()\nexcept KeyError as e:\n    raise ValueError('v') from e")
    tb = r["error"]["traceback"]
    assert r["error"]["name"] == "ValueError" and "KeyError: 'k'" in tb, r
    assert "<string>" not in tb and "_run" not in tb and "<cell 2>" in tb, tb
    r = s.run(sid, "1 +")
    assert r["error"]["name"] == "SyntaxError" and "<string>" not in r["error"]["traceback"], r
    # the session still works, and the driver is not exposed by a cancel
    # that comes between cells (SIGINT is ignored there)
    assert _main(s.run(sid, "2 + 2")) == "4"
    assert s.close() == 0


def test_audit_profile_reports_would_be_denials_per_cell(ctx):
    # Under --profile audit nothing is denied, but each cell's result
    # lists what would have been, every time (they were written in
    # batches and could be missing when the result was read).
    s = serve(ctx, "--profile", "audit")
    sid = s.create()
    for i in range(5):
        r = s.run(sid, "try:\n    open('/etc/shadow').close()\nexcept OSError:\n    pass\n%d" % i)
        assert _main(r) == str(i), r
        pol = r["policy"]
        assert [(d["syscall"], d["target"], d["action"]) for d in pol["denials"]] == [
            ("openat", "/etc/shadow", "audit")], (i, pol)
        assert pol["denied"] is True and pol["denials"][0]["rule"], pol
    r = s.ok("run", {"code": "open('/etc/shadow')"})
    assert [d["action"] for d in r["policy"]["denials"]] == ["audit"], r
    assert s.close() == 0


def test_max_timeout_caps_the_callers_timeout(ctx):
    s = serve(ctx, "--max-timeout", "1")
    t = time.monotonic()
    r = s.ok("run", {"code": "import time\ntime.sleep(20)", "timeout_s": 30})
    assert time.monotonic() - t < 10, r
    assert r["status"] == "timeout" and r["timeout_s"] == 1 and r["timeout_capped_from"] == 30, r
    sid = s.create(timeout_s=60)  # a session's default is capped too
    r = s.run(sid, "import time\ntime.sleep(20)")
    assert r["status"] == "timeout" and r["timeout_s"] == 1, r
    r = s.run(sid, "1", timeout_s=0.5)  # under the cap: as asked
    assert r["timeout_s"] == 0.5 and "timeout_capped_from" not in r, r
    assert s.close() == 0
    r = ctx.ward("serve", "--timeout", "30", "--max-timeout", "5")
    assert r.code == 125 and "--max-timeout" in r.stderr, r


def test_session_whose_run_cannot_be_recorded_fails_cleanly(ctx):
    """A session's run is recorded while its sandbox is set up, and its
    interpreter's execve waits for the record. When the record fails (here
    the database stays locked past ward's 10 s busy timeout), session.create
    answers an error that says why, nothing is left running, and the server
    goes on serving."""
    import sqlite3
    s = serve(ctx)
    assert _main(s.ok("run", {"code": "1+1"})) == "2"  # the schema exists
    lock = sqlite3.connect(ctx.db, isolation_level=None, timeout=1)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        r = s.call("session.create", {})
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert "error" in r and "locked" in r["error"]["message"], r
    assert s.ok("session.list", {})["sessions"] == []
    sid = s.create()
    assert _main(s.run(sid, "1+1")) == "2"
    assert s.close() == 0


def _bytes_of(parts, b64):
    """A stream's bytes from a result or events: base64 where it is given."""
    return b"".join(base64.b64decode(b) for b in b64) if b64 is not None else \
        "".join(parts).encode()


def test_output_that_is_not_utf8_comes_back_exactly(ctx):
    s = serve(ctx)
    sid = s.create()
    code = ("import os\nos.write(1, b'bin \\xff\\xfe\\x00 \\xc3( end\\n')\n"
            "os.write(2, b'caf\\xc3\\xa9\\n')")
    want = b"bin \xff\xfe\x00 \xc3( end\n"
    msgs = s.call_all("run", {"session_id": sid, "code": code, "stream": True})
    r = msgs[-1]["result"]
    logs = r["logs"]
    # the text as before (U+FFFD), and the bytes beside it, part for part
    assert "\ufffd" in _stdout(r) and len(logs["stdout_base64"]) == len(logs["stdout"]), logs
    assert _bytes_of(logs["stdout"], logs["stdout_base64"]) == want, logs
    assert logs["stderr"] == ["caf\u00e9\n"] and "stderr_base64" not in logs, logs
    # streamed: data_base64 on exactly the chunks that are not UTF-8
    ev = [e for e in msgs[:-1] if e["event"] == "stdout"]
    assert any("data_base64" in e for e in ev), ev
    assert b"".join(base64.b64decode(e["data_base64"]) if "data_base64" in e
                    else e["data"].encode() for e in ev) == want, ev
    assert all("data_base64" not in e for e in msgs[:-1] if e["event"] == "stderr"), msgs
    # head and tail are cut between characters: valid UTF-8 stays text only
    r = s.run(sid, "import sys\nsys.stdout.write('a' + '\u00e9' * 100000 + 'z')")
    head, tail = r["logs"]["stdout"]
    assert "stdout_base64" not in r["logs"], (head[-3:], tail[:3])
    assert head == "a" + "\u00e9" * (len(head) - 1) and tail == "\u00e9" * (len(tail) - 1) + "z"
    t = r["truncated"]
    assert t["stdout_bytes_returned"] == len((head + tail).encode()), t
    assert t["stdout_bytes_total"] == 200002, t
    assert s.close() == 0
