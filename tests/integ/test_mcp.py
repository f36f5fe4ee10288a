"""`ward mcp`: the Model Context Protocol server (issue 4, section 3).

Raw JSON-RPC over the server's stdin/stdout for the lifecycle, version
negotiation and every error path; the official MCP SDK client (node,
tests/mcp/e2e.mjs) end to end; the tools in all three languages.
"""
import base64
import json
import os
import queue
import shutil
import subprocess
import threading

import wardtest
from wardtest import Skip

HERE = os.path.dirname(os.path.abspath(__file__))
MCP_DIR = os.path.join(os.path.dirname(HERE), "mcp")
LATEST = "2025-11-25"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Mcp:
    """A `ward mcp` process spoken to line by line."""

    def __init__(self, ctx, *args):
        self.proc = wardtest.spawn(
            [wardtest.ward_bin(), "mcp", "--db", ctx.db] + list(args),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=ctx.tmp)
        self.lines = queue.Queue()
        self.stderr = []
        self.next_id = 0
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines),
                         daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    @staticmethod
    def _pump(f, q):
        for line in f:
            q.put(line)
        q.put(None)

    def _drain(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def send_raw(self, data):
        if isinstance(data, str):
            data = data.encode()
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg):
        self.send_raw(json.dumps(msg) + "\n")

    def recv(self, timeout=120):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message from ward mcp in {timeout} s; stderr: {''.join(self.stderr)[-2000:]}")
        assert line is not None, f"ward mcp closed stdout; stderr: {''.join(self.stderr)[-2000:]}"
        assert line.endswith(b"\n") and line.count(b"\n") == 1, line
        return json.loads(line)

    def request(self, method, params=None, timeout=120):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        while True:
            r = self.recv(timeout)
            if r.get("method") == "notifications/progress":
                continue
            assert r.get("id") == self.next_id, r
            return r

    def initialize(self, version=LATEST):
        r = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "test_mcp", "version": "1"}})
        assert "result" in r, r
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r["result"]

    def call(self, tool, **args):
        r = self.request("tools/call", {"name": tool, "arguments": args})
        assert "result" in r, r
        return r["result"]

    def close(self):
        self.proc.stdin.close()
        code = self.proc.wait(60)
        return code


def text_of(result):
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


def error_code(resp):
    assert "error" in resp and "result" not in resp, resp
    assert isinstance(resp["error"]["message"], str) and resp["error"]["message"], resp
    return resp["error"]["code"]


def main_text(result):
    mains = [r for r in result["structuredContent"]["results"] if r.get("is_main_result")]
    return mains[0].get("text") if mains else None


# ---- the command ----

def test_mcp_help(ctx):
    r = ctx.ward("mcp", "--help", db=False)
    assert r.code == 0, r
    for word in ("run_code", "create_session", "read_file", '"args": ["mcp"]', "2025-11-25"):
        assert word in r.stdout, (word, r.stdout)
    r = ctx.ward("--help", db=False)
    assert "mcp" in r.stdout
    r = ctx.ward("mcp", "--bogus", db=False)
    assert r.code == 125 and "--bogus" in r.stderr, r
    r = ctx.ward("mcp", "--timeout", "-1", db=False)
    assert r.code == 125 and "--timeout" in r.stderr, r


# ---- lifecycle and negotiation ----

def test_mcp_negotiation(ctx):
    m = Mcp(ctx)
    # Before initialize only ping is served.
    assert m.request("ping")["result"] == {}
    assert error_code(m.request("tools/list")) == -32600
    res = m.initialize("2025-06-18")
    assert res["protocolVersion"] == "2025-06-18"      # the client's, since ward speaks it
    assert res["serverInfo"]["name"] == "ward" and res["serverInfo"]["version"]
    assert "tools" in res["capabilities"]
    assert error_code(m.request("initialize", {"protocolVersion": LATEST})) == -32600
    tools = {t["name"]: t for t in m.request("tools/list")["result"]["tools"]}
    assert set(tools) == {"run_code", "create_session", "list_sessions", "close_session",
                          "write_file", "read_file", "list_files"}, tools
    for t in tools.values():
        assert t["inputSchema"]["type"] == "object" and t["description"] and t["title"], t
    assert tools["run_code"]["inputSchema"]["required"] == ["code"]
    assert set(tools["run_code"]["inputSchema"]["properties"]) == {
        "code", "language", "session_id", "timeout_s"}
    assert tools["run_code"]["outputSchema"]["type"] == "object"
    assert tools["list_sessions"]["annotations"]["readOnlyHint"] is True
    assert error_code(m.request("tools/list", {"cursor": "x"})) == -32602
    assert m.close() == 0

    # A version ward does not know gets ward's newest; the client decides.
    m = Mcp(ctx)
    assert m.initialize("2099-01-01")["protocolVersion"] == LATEST
    m.close()
    # The oldest revision: no structuredContent or outputSchema, which it
    # does not define.
    m = Mcp(ctx)
    assert m.initialize("2024-11-05")["protocolVersion"] == "2024-11-05"
    tools = m.request("tools/list")["result"]["tools"]
    assert all("outputSchema" not in t and "annotations" not in t for t in tools), tools
    m.close()


# ---- protocol errors: a JSON-RPC error each, and the server goes on ----

def test_mcp_protocol_errors(ctx):
    m = Mcp(ctx, "--max-request", "4096")
    m.initialize()

    def ping_still_works():
        assert m.request("ping")["result"] == {}

    m.send_raw("{this is not json\n")
    r = m.recv()
    assert error_code(r) == -32700 and r["id"] is None, r
    assert "column" in r["error"]["message"]
    ping_still_works()
    m.send_raw(b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}\n')  # not UTF-8
    assert error_code(m.recv()) == -32700
    m.send_raw("42\n")
    assert error_code(m.recv()) == -32600
    m.send({"id": 7, "method": "ping"})                  # no "jsonrpc": "2.0"
    r = m.recv()
    assert error_code(r) == -32600 and r["id"] == 7, r
    m.send({"jsonrpc": "2.0", "id": True, "method": "ping"})
    assert error_code(m.recv()) == -32600
    m.send({"jsonrpc": "2.0", "id": None, "method": "ping"})
    assert error_code(m.recv()) == -32600
    ping_still_works()

    r = m.request("resources/list")
    assert error_code(r) == -32601 and "resources/list" in r["error"]["message"], r
    assert error_code(m.request("tools/call", [1, 2])) == -32602
    assert error_code(m.request("tools/call", {"arguments": {}})) == -32602
    assert error_code(m.request("tools/call", {"name": "run_code", "arguments": "x"})) == -32602
    r = m.request("tools/call", {"name": "rm_rf", "arguments": {}})
    assert error_code(r) == -32602 and "rm_rf" in r["error"]["message"], r

    # A notification gets no answer: the next message is the ping's.
    m.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 99}})
    ping_still_works()
    # A response from the client (ward sends no requests) is ignored too.
    m.send({"jsonrpc": "2.0", "id": 99, "result": {}})
    ping_still_works()

    # A line over --max-request is refused whole, and the next one served.
    m.send_raw('{"jsonrpc": "2.0", "id": 5, "method": "ping", "pad": "' + "x" * 10000 + '"}\n')
    r = m.recv()
    assert error_code(r) == -32600 and "4096" in r["error"]["message"], r
    ping_still_works()

    # Batches: the answers in an array, none for notifications.
    m.send([{"jsonrpc": "2.0", "id": "a", "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "b", "method": "nope"}])
    r = m.recv()
    assert isinstance(r, list) and [x["id"] for x in r] == ["a", "b"], r
    assert r[0]["result"] == {} and r[1]["error"]["code"] == -32601
    m.send([])
    assert error_code(m.recv()) == -32600
    ping_still_works()
    assert m.close() == 0, m.stderr


def test_mcp_tool_argument_errors(ctx):
    """Mistakes in a tool's arguments are tool results with isError, so the
    model reads them and can correct itself (SEP-1303)."""
    m = Mcp(ctx)
    m.initialize()
    r = m.call("run_code", code="1", policy="/tmp/allow-all.json")
    assert r["isError"] is True and "policy" in text_of(r) and "code, language" in text_of(r), r
    r = m.call("run_code", language="python")
    assert r["isError"] is True and "code" in text_of(r), r
    r = m.call("run_code", code=12)
    assert r["isError"] is True and "code" in text_of(r), r
    r = m.call("run_code", code="1", session_id="no-such-session")
    assert r["isError"] is True and "no-such-session" in text_of(r), r
    for tool, args in (("close_session", {}), ("list_files", {"session_id": "nope"}),
                       ("read_file", {"session_id": "nope", "path": "x"}),
                       ("write_file", {"session_id": "nope", "path": "x", "text": "y"})):
        r = m.call(tool, **args)
        assert r["isError"] is True and text_of(r), (tool, r)
    assert m.request("ping")["result"] == {}
    assert m.close() == 0


# ---- the tools ----

def test_mcp_python_session(ctx):
    m = Mcp(ctx)
    m.initialize()
    one = m.call("run_code", code="print('once'); 6 * 7")
    assert not one.get("isError"), one
    assert "".join(one["structuredContent"]["logs"]["stdout"]) == "once\n"
    assert "once" in text_of(one)

    s = m.call("create_session", language="python")
    sid = s["structuredContent"]["session_id"]
    a = m.call("run_code", session_id=sid, code="import math\nx = math.sqrt(16)")
    assert not a.get("isError"), a
    b = m.call("run_code", session_id=sid, code="x * 10")
    assert main_text(b) == "40.0", b
    assert b["structuredContent"]["execution_count"] == 2
    assert "result: 40.0" in text_of(b)

    # An exception: isError, the error in text and structure; the session lives on.
    e = m.call("run_code", session_id=sid, code="{}['missing']")
    assert e["isError"] is True
    assert e["structuredContent"]["error"]["name"] == "KeyError"
    assert "error: KeyError" in text_of(e) and "Traceback" in text_of(e)
    assert main_text(m.call("run_code", session_id=sid, code="x")) == "4.0"

    # A denial is summarised (the code caught it, so no isError).
    d = m.call("run_code", session_id=sid, code=(
        "try:\n    open('/etc/shadow').read()\nexcept PermissionError as e:\n    print('denied', e.errno)"))
    assert not d.get("isError"), d
    assert d["structuredContent"]["policy"]["denied"] and d["structuredContent"]["policy"]["denials"]
    t = text_of(d)
    assert "denied" in t and "/etc/shadow" in t and "EACCES" in t, t

    # A timeout is an error result that says so.
    t = m.call("run_code", session_id=sid, code="import time\ntime.sleep(60)", timeout_s=1)
    assert t["isError"] is True, t
    assert t["structuredContent"]["status"] == "timeout", t["structuredContent"]
    assert "interrupted at its time limit" in text_of(t), text_of(t)
    assert main_text(m.call("run_code", session_id=sid, code="x")) == "4.0"
    # A cell that swallows the interrupt: the session is ended, and said so.
    t = m.call("run_code", session_id=sid, timeout_s=1, code=(
        "import time\nwhile True:\n    try:\n        time.sleep(60)\n"
        "    except KeyboardInterrupt:\n        pass"))
    assert t["isError"] is True and "session was ended" in text_of(t), text_of(t)
    gone = m.call("run_code", session_id=sid, code="x")
    assert gone["isError"] is True, gone
    sid = m.call("create_session")["structuredContent"]["session_id"]

    # A policy kill (ptrace is on the floor's kill list) is an error result
    # that names the call.
    k = m.call("run_code", code="import ctypes\nctypes.CDLL(None).syscall(101, 0, 0, 0, 0)")
    assert k["isError"] is True and k["structuredContent"]["status"] == "killed", k
    assert "kill ptrace (rule" in text_of(k), text_of(k)

    # Long output comes back as head and tail with the counts.
    big = m.call("run_code", code="for i in range(200000): print('line', i)")
    bt = text_of(big)
    assert "line 0\n" in bt and "line 199999" in bt and "left out" in bt, bt[:300]
    assert len(bt) < 20000

    listed = m.call("list_sessions")["structuredContent"]["sessions"]
    assert [x["session_id"] for x in listed] == [sid]
    assert m.call("close_session", session_id=sid).get("isError") is not True
    assert m.call("list_sessions")["structuredContent"]["sessions"] == []
    assert m.close() == 0
    # Each session is one run in the record, next to the one-shot runs.
    runs = ctx.sql("select id, language from runs")
    assert s["structuredContent"]["run_id"] in [r["id"] for r in runs], runs


def test_mcp_node_and_sh_sessions(ctx):
    wardtest.require(wardtest.NODE)
    m = Mcp(ctx)
    m.initialize()
    node = m.call("create_session", language="node")["structuredContent"]["session_id"]
    r = m.call("run_code", session_id=node, code="globalThis.n = 20; console.log('set')")
    assert not r.get("isError") and "set" in text_of(r), r
    r = m.call("run_code", session_id=node, code="console.log(n + 1)")
    assert "".join(r["structuredContent"]["logs"]["stdout"]) == "21\n", r
    r = m.call("run_code", session_id=node, code="null.x")
    assert r["isError"] is True and "TypeError" in text_of(r), r

    r = m.call("run_code", language="node", code="[1, 2, 3].map(x => x * 2).join('+')")
    assert main_text(r) == "'2+4+6'", r  # util.inspect, as node's REPL shows it
    r = m.call("run_code", language="sh", code="echo one-shot; ls /nonexistent")
    assert r["isError"] is True and "one-shot" in text_of(r) and "nonexistent" in text_of(r), r

    sh = m.call("create_session", language="sh")["structuredContent"]["session_id"]
    r = m.call("run_code", session_id=sh, code="mkdir -p sub && cd sub && V=kept")
    assert not r.get("isError"), r
    r = m.call("run_code", session_id=sh, code='echo "$V $(basename "$PWD")"')
    assert "".join(r["structuredContent"]["logs"]["stdout"]) == "kept sub\n", r
    r = m.call("run_code", session_id=sh, code="false")
    assert r["isError"] is True, r
    assert m.close() == 0


def test_mcp_files_and_chart(ctx):
    m = Mcp(ctx)
    m.initialize()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    w = m.call("write_file", session_id=sid, path="data.csv", text="a,b\n1,2\n3,4\n")
    assert not w.get("isError") and w["structuredContent"]["size"] == 12, w
    r = m.call("run_code", session_id=sid, code=(
        "import csv\nrows = list(csv.DictReader(open('data.csv')))\n"
        "open('sum.txt', 'w').write(str(sum(int(r['b']) for r in rows)))\n"
        "import matplotlib.pyplot as plt\nplt.bar([r['a'] for r in rows], [int(r['b']) for r in rows])\n"
        "plt.savefig('chart.png')\nplt.show()"))
    assert not r.get("isError"), text_of(r)
    images = [c for c in r["content"] if c["type"] == "image"]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png", r["content"]
    assert base64.b64decode(images[0]["data"]).startswith(PNG_MAGIC)
    assert "image: image/png" in text_of(r)

    t = m.call("read_file", session_id=sid, path="sum.txt")
    assert text_of(t) == "6" and t["structuredContent"]["size"] == 1, t
    png = m.call("read_file", session_id=sid, path="chart.png")
    img = [c for c in png["content"] if c["type"] == "image"]
    assert img and base64.b64decode(img[0]["data"]).startswith(PNG_MAGIC), png["content"]
    raw = bytes(range(256))
    m.call("write_file", session_id=sid, path="blob.bin", base64=base64.b64encode(raw).decode())
    b = m.call("read_file", session_id=sid, path="blob.bin")
    res = [c for c in b["content"] if c["type"] == "resource"]
    assert res and base64.b64decode(res[0]["resource"]["blob"]) == raw, b["content"]
    names = {f["path"] for f in m.call("list_files", session_id=sid)["structuredContent"]["files"]}
    assert {"data.csv", "sum.txt", "chart.png", "blob.bin"} <= names, names
    missing = m.call("read_file", session_id=sid, path="nothing-here.txt")
    assert missing["isError"] is True and "nothing-here.txt" in text_of(missing), missing
    assert m.close() == 0


def test_mcp_large_reads_and_results_are_capped_with_a_note(ctx):
    """A file larger than a response carries (1 MiB) comes back as its head
    and tail with a note (text) or as only the note (bytes), and is left
    out of structuredContent too: not a response of many MiB. A revision
    before resource links (2025-03-26) gets no link to the cell's files;
    results are capped there as well."""
    m = Mcp(ctx)
    m.initialize("2025-03-26")
    sid = json.loads(text_of(m.call("create_session")))["session_id"]
    r = m.call("run_code", session_id=sid, code=(
        "import os\nopen('big.txt', 'w').write('head' + 'y' * 5000000 + 'tail')\n"
        "open('big.bin', 'wb').write(b'\\xff' * 3000000)\n"
        "from ward_display import Markdown\nMarkdown('m' * 1100000)"))
    assert [c["type"] for c in r["content"]] == ["text"], r["content"]  # no links, no markdown
    assert "files created or changed: big.bin (3000000 bytes) big.txt (5000008 bytes)" in text_of(r), r
    assert "text/markdown: 1100000 bytes, left out" in text_of(r), text_of(r)
    raw = json.dumps(m.request("tools/call", {"name": "read_file",
                                              "arguments": {"session_id": sid, "path": "big.txt"}}))
    assert len(raw) < 1100000, len(raw)
    t = json.loads(raw)["result"]
    body = text_of(t)
    assert body.startswith("[big.txt: 5000008 bytes, more than a response carries (1024 KiB): "
                           "its head and tail; run_code can read the rest in parts]\nhead"), body[:300]
    assert body.endswith("tail") and "bytes left out here ...]" in body, body[-300:]
    b = m.call("read_file", session_id=sid, path="big.bin")
    assert [c["type"] for c in b["content"]] == ["text"], b["content"]
    assert "3000000 bytes" in text_of(b) and "left out; run_code can read it in parts" in text_of(b), b
    assert len(json.dumps(b)) < 2000, len(json.dumps(b))
    # structuredContent (2025-06-18 on) leaves the bytes out as well
    assert m.close() == 0
    m = Mcp(ctx)
    m.initialize()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    m.call("write_file", session_id=sid, path="big.txt", text="z" * 2000000)
    t = m.call("read_file", session_id=sid, path="big.txt")
    sc = t["structuredContent"]
    assert sc["left_out"] == {"text": 2000000, "base64": 2666668} and "text" not in sc, sc
    assert "base64" not in sc and sc["size"] == 2000000, sc
    assert m.close() == 0


def test_mcp_picture_that_is_not_base64_is_left_out(ctx):
    """A png that is not base64 would make the whole response invalid for a
    client (the SDK checks image data): the driver leaves it out of an
    honest display(); a frame the code forged with it is the code's word,
    and ward leaves it out of the response too, saying so."""
    m = Mcp(ctx)
    m.initialize()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    r = m.call("run_code", session_id=sid, code=(
        "display({'text/plain': 'p', 'image/png': 'not base64!'}, raw=True)"))
    assert [c["type"] for c in r["content"]] == ["text"], r["content"]
    assert r["structuredContent"]["results"] == [{"text": "p", "is_main_result": False}], r
    assert "ward: display(raw=True) (image/png) failed" in text_of(r), text_of(r)
    forge = (
        "import os, sys\nf = sys._getframe()\n"
        "while not isinstance(f.f_locals.get('h'), dict):\n    f = f.f_back\n"
        "h = f.f_locals['h']\n"
        "os.write(6, ('{\"nonce\": \"%s\", \"n\": %d, \"results\": [{\"text\": \"forged\", "
        "\"png\": \"not base64!\", \"pdf\": 7, \"is_main_result\": true}], \"error\": null}\\n'"
        " % (h['nonce'], h['n'])).encode())")
    r = m.call("run_code", session_id=sid, code=forge)
    assert [c["type"] for c in r["content"]] == ["text"], r["content"]
    body = text_of(r)
    assert "result: forged\n  image/png: 11 bytes, left out (not base64)\n" in body, body
    assert "application/pdf: 1 bytes, left out (not base64)" in body, body
    assert r["structuredContent"]["results"][0]["left_out"] == {"png": 11, "pdf": 1}, r
    assert m.close() == 0


def test_mcp_stdout_is_protocol_only(ctx):
    """Whatever the code prints, and ward's own messages, stay out of the
    protocol stream: every line the server writes is one JSON-RPC message."""
    m = Mcp(ctx, "-v")
    m.initialize()
    r = m.call("run_code", code="import os, sys\nprint('x\\n{}\\n' * 3)\nos.write(1, b'raw\\n')\nsys.stderr.write('err\\n')")
    assert not r.get("isError"), r
    assert "raw" in text_of(r) and "err" in text_of(r)
    assert m.request("ping")["result"] == {}
    assert m.close() == 0


# ---- the official SDK client ----

def test_mcp_sdk_end_to_end(ctx):
    wardtest.require(wardtest.NODE)
    if not os.path.isdir(os.path.join(MCP_DIR, "node_modules", "@modelcontextprotocol", "sdk")):
        raise Skip("tests/mcp/node_modules is missing: run tools/install-deps "
                   "(npm ci --prefix tests/mcp) to install the MCP SDK client")
    p = subprocess.run([wardtest.NODE, os.path.join(MCP_DIR, "e2e.mjs"), wardtest.ward_bin(), ctx.db],
                       capture_output=True, text=True, timeout=200, cwd=ctx.tmp)
    assert p.returncode == 0, p.stderr[-6000:]
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert seen["state_kept"] and seen["png_bytes"] > 1000 and seen["progress"] >= 1, seen
    assert seen["rich"] == 4, seen  # html, markdown, png, a resource link
    assert {"in.txt", "out.txt"} <= set(seen["files"]), seen
    # The session is one run in the record, its cells in order.
    runs = ctx.sql("select id from runs where id = ?", seen["session_run_id"])
    assert runs, seen


def test_mcp_idle_session_expires_while_client_is_quiet(ctx):
    """Sessions expire on --idle even when no request comes (the server
    checks while it waits for input); the run ends in the record."""
    m = Mcp(ctx, "--idle", "1")
    m.initialize()
    s = m.call("create_session")["structuredContent"]
    assert not m.call("run_code", session_id=s["session_id"], code="v = 1").get("isError")

    def ended():
        rows = ctx.sql("select ended_ns from runs where id = ?", s["run_id"])
        return rows and rows[0]["ended_ns"]
    assert wardtest.wait_until(ended, timeout=60), ctx.sql("select * from runs")
    r = m.call("run_code", session_id=s["session_id"], code="v")
    assert r["isError"] is True and s["session_id"] in text_of(r), r
    assert m.close() == 0


def descendants(pid):
    """pids of every process below pid, by /proc/PID/stat's parent field."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parent[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def test_mcp_sessions_end_with_the_server(ctx):
    """An agent that kills its MCP server takes the sessions with it: no
    supervisor or interpreter outlives ward mcp."""
    import signal
    m = Mcp(ctx)
    m.initialize()
    for lang in ("python", "sh"):
        sid = m.call("create_session", language=lang)["structuredContent"]["session_id"]
        assert not m.call("run_code", session_id=sid, code="echo x" if lang == "sh" else "1").get("isError")
    left = descendants(m.proc.pid)
    assert len(left) >= 4, left      # per session: its supervisor and the interpreter
    m.proc.send_signal(signal.SIGKILL)
    m.proc.wait(30)

    def gone():
        return not [p for p in left if os.path.exists(f"/proc/{p}")]
    assert wardtest.wait_until(gone, timeout=60), \
        [open(f"/proc/{p}/cmdline").read() for p in left if os.path.exists(f"/proc/{p}")]


# ---- concurrency, cancellation, the operator's cap ----

def _start_call(m, tool, progress=None, **args):
    """Sends a tools/call without waiting; returns its id."""
    m.next_id += 1
    params = {"name": tool, "arguments": args}
    if progress is not None:
        params["_meta"] = {"progressToken": progress}
    m.send({"jsonrpc": "2.0", "id": m.next_id, "method": "tools/call", "params": params})
    return m.next_id


def _until(m, pred, timeout=60):
    """Messages up to and including the first one pred accepts."""
    seen = []
    while True:
        r = m.recv(timeout)
        seen.append(r)
        if pred(r):
            return seen


def _started(token):
    return lambda r: (r.get("method") == "notifications/progress"
                      and r["params"]["progressToken"] == token
                      and "started" in r["params"].get("message", ""))


def _cancel(m, rid):
    m.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": "test"}})


def test_mcp_answers_ping_and_tools_list_while_a_cell_runs(ctx):
    import time
    m = Mcp(ctx)
    m.initialize()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    slow = _start_call(m, "run_code", progress="p1", session_id=sid,
                       code="import time\nprint('started', flush=True)\ntime.sleep(4)\n'done'")
    _until(m, _started("p1"))
    t = time.monotonic()
    m.send({"jsonrpc": "2.0", "id": "ping-1", "method": "ping"})
    m.send({"jsonrpc": "2.0", "id": "list-1", "method": "tools/list"})
    got = _until(m, lambda r: r.get("id") == "list-1")
    ids = [r.get("id") for r in got if "id" in r]
    assert ids == ["ping-1", "list-1"], got  # before the cell's answer
    assert time.monotonic() - t < 2, got
    assert [x["name"] for x in got[-1]["result"]["tools"]][0] == "run_code"
    done = _until(m, lambda r: r.get("id") == slow)[-1]
    assert done["result"]["structuredContent"]["results"][0]["text"] == "'done'", done
    assert m.close() == 0


def test_mcp_cancel_interrupts_the_running_cell(ctx):
    import time
    m = Mcp(ctx)
    m.initialize()
    langs = {"python": ("x = 7\n", "import time\nprint('started', flush=True)\ntime.sleep(30)", "x"),
             "sh": ("x=7", "echo started; sleep 30", "echo $x")}
    if wardtest.NODE:
        langs["node"] = ("var x = 7", "console.log('started'); for (;;) {}", "x")
    for i, (lang, (setup, code, probe)) in enumerate(langs.items()):
        s = m.call("create_session", language=lang)["structuredContent"]
        assert not m.call("run_code", session_id=s["session_id"], code=setup).get("isError")
        tok = "c%d" % i
        rid = _start_call(m, "run_code", progress=tok, session_id=s["session_id"], code=code)
        _until(m, _started(tok))
        t = time.monotonic()
        _cancel(m, rid)
        # no answer for the cancelled call; the next one is answered, and
        # the session kept its state: the cell was interrupted, not the
        # interpreter
        r = m.request("tools/call", {"name": "run_code",
                                     "arguments": {"session_id": s["session_id"], "code": probe}})
        assert time.monotonic() - t < 10, (lang, r)
        assert "structuredContent" in r.get("result", {}), (lang, r)
        st = r["result"]["structuredContent"]
        assert st["execution_count"] == 3 and "7" in (text_of(r["result"])), (lang, r)
        cells = ctx.sql("select n, status from cells where run_id=? order by n", s["run_id"])
        assert [(c["n"], c["status"]) for c in cells] == [
            (1, "ok"), (2, "cancelled"), (3, "ok")], (lang, cells)
        res = json.loads(ctx.sql("select result from cells where run_id=? and n=2",
                                 s["run_id"])[0]["result"])
        assert res["interrupted"] is True and res["error"], (lang, res)
    assert m.close() == 0


def test_mcp_cancel_ends_a_node_cells_wait_for_its_promise(ctx):
    # 'started' comes from the wait (a cancel just as the script ends:
    # test_mcp_node_cancels_right_after_a_script_ends_are_never_lost)
    if not wardtest.NODE:
        raise Skip("node is not installed")
    m = Mcp(ctx)
    m.initialize()
    s = m.call("create_session", language="node")["structuredContent"]
    assert not m.call("run_code", session_id=s["session_id"], code="var x = 7").get("isError")
    rid = _start_call(m, "run_code", progress="w", session_id=s["session_id"],
                      code="new Promise(() => setTimeout(() => console.log('started'), 50))")
    _until(m, _started("w"))
    _cancel(m, rid)
    r = m.request("tools/call", {"name": "run_code",
                                 "arguments": {"session_id": s["session_id"], "code": "x"}})
    cells = ctx.sql("select n, status, result from cells where run_id=? order by n",
                    s["run_id"])
    st = r["result"].get("structuredContent") or {}
    assert [x["text"] for x in st.get("results", [])] == ["7"], (r, cells)
    assert [(c["n"], c["status"]) for c in cells] == [(1, "ok"), (2, "cancelled"), (3, "ok")], cells
    assert m.close() == 0


def test_mcp_cancel_drops_a_queued_call(ctx):
    m = Mcp(ctx)
    m.initialize()
    sid = m.call("create_session")["structuredContent"]["session_id"]
    a = _start_call(m, "run_code", progress="qa", session_id=sid,
                    code="import time\nprint('started', flush=True)\ntime.sleep(3)\n'a'")
    _until(m, _started("qa"))
    b = _start_call(m, "run_code", session_id=sid, code="ran_b = True")
    _cancel(m, b)
    _cancel(m, "no-such-request")  # ignored
    got = _until(m, lambda r: r.get("id") == a)
    assert not [r for r in got if r.get("id") == b], got
    r = m.call("run_code", session_id=sid, code="'ran_b' in globals()")
    assert main_text(r) == "False" and r["structuredContent"]["execution_count"] == 2, r
    assert m.request("ping")["result"] == {}
    assert m.close() == 0


def test_mcp_max_timeout_caps_the_models_timeout(ctx):
    import time
    m = Mcp(ctx, "--max-timeout", "1")
    m.initialize()
    t = time.monotonic()
    r = m.call("run_code", code="import time\ntime.sleep(20)", timeout_s=600)
    assert time.monotonic() - t < 10, r
    st = r["structuredContent"]
    assert r["isError"] is True and st["status"] == "timeout", st
    assert st["timeout_s"] == 1 and st["timeout_capped_from"] == 600, st
    assert "above the server's cap" in text_of(r), text_of(r)
    assert m.close() == 0
    r = ctx.ward("mcp", "--timeout", "30", "--max-timeout", "5")
    assert r.code == 125 and "--max-timeout" in r.stderr, r


def test_mcp_batch_with_a_call_is_answered_as_one_array(ctx):
    m = Mcp(ctx)
    m.initialize()
    m.send([{"jsonrpc": "2.0", "id": "b1", "method": "ping"},
            {"jsonrpc": "2.0", "id": "b2", "method": "tools/call",
             "params": {"name": "run_code", "arguments": {"code": "6 * 7"}}},
            {"jsonrpc": "2.0", "method": "notifications/cancelled",
             "params": {"requestId": "nothing"}}])
    r = m.recv()
    assert isinstance(r, list) and [x["id"] for x in r] == ["b1", "b2"], r
    assert r[1]["result"]["structuredContent"]["results"][0]["text"] == "42", r
    m.send([{"jsonrpc": "2.0", "id": "b3", "method": "ping"}])  # no call: at once
    assert m.recv() == [{"jsonrpc": "2.0", "id": "b3", "result": {}}]
    assert m.close() == 0


def _node_cancel_rounds(ctx, setup, code, probe, want, rounds):
    """A node session: setup, then rounds of (code cancelled once it printed
    'started', probe whose main result must be want). Every cancelled cell
    must be recorded so and the session must live on."""
    if not wardtest.NODE:
        raise Skip("node is not installed")
    m = Mcp(ctx)
    m.initialize()
    s = m.call("create_session", language="node")["structuredContent"]
    sid = s["session_id"]
    r = m.call("run_code", session_id=sid, code=setup)
    assert not r.get("isError"), r
    for i in range(rounds):
        tok = "c%d" % i
        rid = _start_call(m, "run_code", progress=tok, session_id=sid, code=code)
        _until(m, _started(tok))
        _cancel(m, rid)
        r = m.call("run_code", session_id=sid, code=probe)
        st = r.get("structuredContent") or {}
        assert [x["text"] for x in st.get("results", [])] == [want], (i, r)
    cells = ctx.sql("select n, status from cells where run_id=? order by n", s["run_id"])
    assert [c["status"] for c in cells] == ["ok"] + ["cancelled", "ok"] * rounds, cells
    assert m.close() == 0


def test_mcp_node_cancels_right_after_a_script_ends_are_never_lost(ctx):
    # Each cell prints 'started' from its script and returns a promise that
    # never settles: the cancel lands just as Node ends the script. A cancel
    # lost there (Node's breakOnSigint being taken down) left the driver
    # waiting until the grace and the session ended; a SIGINT posted there
    # interrupted the next cell.
    _node_cancel_rounds(ctx, "var x = 7", "console.log('started'); new Promise(() => {})",
                        "x", "7", 12)


def test_mcp_node_cell_is_cancelled_while_the_code_listens_for_sigint(ctx):
    # a cell of a server-like program listens for SIGINT itself; the next
    # cells can still be cancelled, and the listener stays the code's (a
    # cell's script sees none: vm takes them off while it runs)
    _node_cancel_rounds(ctx, "var hits = 0; process.on('SIGINT', () => { hits++; }); 1",
                        "console.log('started'); for (;;) {}",
                        "new Promise((ok) => setTimeout(() => "
                        "ok(process.listenerCount('SIGINT')), 5))", "1", 2)


def test_mcp_output_that_is_not_utf8_comes_back_exactly(ctx):
    m = Mcp(ctx)
    m.initialize()
    tools = m.request("tools/list")["result"]["tools"]
    logs = [t for t in tools if t["name"] == "run_code"][0]["outputSchema"]["properties"]["logs"]
    assert "stdout_base64" in logs["properties"], logs
    r = m.call("run_code", code="import os\nos.write(1, b'bin \\xff end\\n')")
    sc = r["structuredContent"]["logs"]
    assert "".join(sc["stdout"]) == "bin \ufffd end\n", sc
    assert b"".join(base64.b64decode(b) for b in sc["stdout_base64"]) == b"bin \xff end\n", sc
    assert "stderr_base64" not in sc, sc
    t = text_of(r)
    assert "stdout (10 bytes" in t and "not UTF-8" in t and "stdout_base64" in t, t
    assert m.close() == 0


# ---- concurrency, the end, rough edges (issue 25) ----

def test_mcp_calls_on_several_sessions_run_in_parallel(ctx):
    """One MCP server, 4 sessions, 4 tools/call at once each sleeping 1 s:
    about 1 s together; list_sessions and a file write are answered
    while they run, and cancelling one call leaves the others alone."""
    import time
    m = Mcp(ctx)
    m.initialize()
    sids = [m.call("create_session")["structuredContent"]["session_id"] for _ in range(5)]
    t0 = time.monotonic()
    calls = [_start_call(m, "run_code", session_id=sid, code="import time\ntime.sleep(1)\n'slept'")
             for sid in sids[:4]]
    doomed = _start_call(m, "run_code", progress="d", session_id=sids[4],
                         code="import time\nprint('started', flush=True)\ntime.sleep(60)")
    wr = _start_call(m, "write_file", session_id=sids[0], path="a/b.txt", text="x")
    got, when = {}, {}

    def note(r):
        if "id" in r:
            got[r["id"]], when[r["id"]] = r, time.monotonic() - t0
    for r in _until(m, _started("d")):
        note(r)
    # list_sessions, answered while the cells run: asked again until it
    # sees the 4 cells running (their threads start in any order), each
    # answer before the cells end
    lists = []
    while True:
        lst = _start_call(m, "list_sessions")
        lists.append(lst)
        while lst not in got:
            note(m.recv(30))
        running = [x for x in got[lst]["result"]["structuredContent"]["sessions"]
                   if x["running"]]
        if len(running) >= 4 or time.monotonic() - t0 > 0.8:
            break
        time.sleep(0.02)
    _cancel(m, doomed)
    while len(got) < 5 + len(lists):
        note(m.recv(30))
    wall = time.monotonic() - t0
    assert doomed not in got, got
    assert wall < 2.5, (wall, when)
    for c in calls:
        assert main_text(got[c]["result"]) == "'slept'", got[c]
    assert when[lst] < min(when[c] for c in calls) and when[wr] < min(when[c] for c in calls), when
    assert len(running) >= 4, got[lst]
    assert m.close() == 0


def _sdk_close(ctx, *args):
    wardtest.require(wardtest.NODE)
    if not os.path.isdir(os.path.join(MCP_DIR, "node_modules", "@modelcontextprotocol", "sdk")):
        raise Skip("tests/mcp/node_modules is missing: run tools/install-deps")
    p = subprocess.run([wardtest.NODE, os.path.join(MCP_DIR, "close.mjs"), wardtest.ward_bin(),
                        ctx.db] + list(args), capture_output=True, text=True, timeout=120,
                       cwd=ctx.tmp)
    assert p.returncode == 0, p.stderr[-4000:]
    seen = json.loads(p.stdout.strip().splitlines()[-1])
    assert "Sanitizer" not in seen["stderr"], seen["stderr"]
    return seen


def test_mcp_sessions_of_a_client_that_closes_are_closed_by_it(ctx):
    """The SDK client's close (stdin ended, SIGTERM 2 s later if ward has not
    exited) leaves every session's run ended "ok" (closed by the client),
    not aborted: the call thread that forked the workers used to end
    before the sessions were closed (PR_SET_PDEATHSIG)."""
    seen = _sdk_close(ctx)
    assert seen["close_ms"] < 2000, seen  # it exited by itself
    runs = ctx.sql("select id, status, cause from runs where id in (%s)" %
                   ",".join("?" * len(seen["ids"])), *seen["ids"])
    assert len(runs) == 6 and {(r["status"], r["cause"]) for r in runs} == {("ok", None)}, runs


def test_mcp_client_that_closes_during_a_long_cell_cancels_it(ctx):
    """A cell still running when the client closes: the SDK's SIGTERM
    cancels it and the sessions are closed in order."""
    seen = _sdk_close(ctx, "running")
    assert seen["close_ms"] < 6000, seen
    runs = ctx.sql("select id, status, cause from runs where id in (%s)" %
                   ",".join("?" * len(seen["ids"])), *seen["ids"])
    assert {(r["status"], r["cause"]) for r in runs} == {("ok", None)}, runs
    cells = ctx.sql("select status from cells where run_id = ? order by n", seen["ids"][0])
    assert [c["status"] for c in cells] == ["ok", "cancelled"], cells


def test_mcp_bad_policy_stops_it_at_start(ctx):
    p = subprocess.run([wardtest.ward_bin(), "mcp", "--db", ctx.db, "--policy",
                        os.path.join(ctx.tmp, "missing.json")],
                       input=b"", capture_output=True, timeout=30, cwd=ctx.tmp)
    assert p.returncode == 125 and b"--policy" in p.stderr and b"missing.json" in p.stderr, p
    assert p.stdout == b"", p


def test_mcp_errors_name_the_tools_and_long_lines_keep_their_id(ctx):
    m = Mcp(ctx, "--max-request", "2000", "-v")
    m.initialize()
    r = m.call("run_code", session_id="s-nope", code="1")
    assert r["isError"] is True, r
    t = text_of(r)
    assert "list_sessions" in t and "session.list" not in t, t
    r = m.call("read_file", session_id="s-nope", path="x")
    assert "run_code failed" not in text_of(r) and "read_file failed" in text_of(r), r
    m.send_raw('{"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "run_code", '
               '"arguments": {"code": "%s"}}}\n' % ("x" * 5000))
    r = m.recv()
    assert r["id"] == 41 and error_code(r) == -32600 and "--max-request" in r["error"]["message"], r
    assert m.request("ping")["result"] == {}
    assert m.close() == 0
