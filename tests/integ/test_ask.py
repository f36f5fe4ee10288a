"""The "ask" rule action (docs/policy.md, docs/agents.md): a trapped call
waits while ward asks, then is allowed once, allowed for the run, or
denied; no answer in ask_timeout, or nobody to ask, denies. Over ward
serve (JSON lines), ward run on a terminal (a pty) and without one; other
threads of the code keep running while one waits; the record says who
answered what, and when."""
import json
import os
import pty
import re
import select
import subprocess
import time

import wardtest
from test_serve import Serve, _stdout

ASKED = "/etc/hostname"


def _default():
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "default.json")) as f:
        return json.load(f)


def _policy(ctx, timeout=None, name="ask.json"):
    """The default profile with an ask rule for reading ASKED."""
    pol = _default()
    pol["fs"].append({"id": "ask-hostname", "path": ASKED, "ask": ["read"]})
    if timeout is not None:
        pol["ask_timeout"] = timeout
    return ctx.write(name, json.dumps(pol))


READ = ("def read():\n"
        "    try:\n"
        "        return open(%r).read().strip() and 'read'\n"
        "    except PermissionError:\n"
        "        return 'denied'\n") % ASKED


class AskServe(Serve):
    """A serve client that answers each "ask" event with the next answer
    (after a pause), and keeps the events."""

    def run_answering(self, sid, code, answers, pause=0.0):
        self.n += 1
        rid = self.n
        self.send_raw((json.dumps({"id": rid, "method": "run", "params": {
            "session_id": sid, "code": code}}) + "\n").encode())
        asks, acks = [], []
        while True:
            m = self.read()
            if m.get("event") == "ask":
                asks.append(m["ask"])
                if answers:
                    time.sleep(pause)
                    self.n += 1
                    acks.append(self.n)
                    self.send_raw((json.dumps({"id": self.n, "method": "ask.answer", "params": {
                        "id": m["ask"]["id"], "answer": answers.pop(0),
                        "by": "test client"}}) + "\n").encode())
                continue
            if m.get("id") in acks:
                assert "result" in m, m
                continue
            assert m.get("id") == rid, m
            return m["result"], asks


def test_serve_allow_once_always_and_deny(ctx):
    s = AskServe(ctx)
    sid = s.create(policy=_policy(ctx))
    r, asks = s.run_answering(sid, READ + "print(read(), read(), read())",
                              ["allow_once", "deny", "allow_always"])
    assert _stdout(r) == "read denied read\n", r
    assert len(asks) == 3, asks
    a = asks[0]
    assert a["session_id"] == sid and a["rule"] == "ask-hostname", a
    assert a["target"] == ASKED and a["syscall"] == "openat", a
    assert "read of /etc/hostname" in a["question"] and a["timeout_ms"] == 30000, a
    # allowed for the rest of the run: not asked again, in a later cell too
    r, asks = s.run_answering(sid, READ + "print(read(), read())", [])
    assert _stdout(r) == "read read\n" and asks == [], (r, asks)
    # the record: who answered what
    rows = ctx.events(r["run_id"], "rule = 'ask-hostname'")
    got = [(e["decision"], e["reason"].split("; asked: ")[1].split(" by ")[0]
            if "; asked: " in e["reason"] else "earlier") for e in rows]
    assert got == [("allow", "allow_once"), ("deny", "deny"), ("allow", "allow_always"),
                   ("allow", "earlier"), ("allow", "earlier")], got
    assert "by serve: test client at 20" in rows[0]["reason"], rows[0]
    # ward show prints the question and the answer of an allowed call too
    shown = ctx.ward("show", r["run_id"]).stdout
    # (the fd is the hub's next free one: its command reader holds some)
    assert re.search(r"allow  openat /etc/hostname = \d+, rule ask-hostname: read of "
                     r"/etc/hostname: ask by ask-hostname; asked: allow_once by serve: "
                     r"test client at ", shown), shown
    exported = ctx.ward("export", r["run_id"], "--db", ctx.db, db=False).stdout
    assert "asked: allow_always by serve: test client" in exported, exported[-2000:]
    assert rows[1]["errno"] == 13 and rows[1]["result"] == -13, rows[1]
    # nothing waits; an answer to a question that no longer waits is refused
    assert s.ok("ask.list", {}) == {"asks": []}
    s.err("ask.answer", {"id": asks and asks[0]["id"] or "ask-1", "answer": "deny"}, -32602)
    s.err("ask.answer", {"id": "ask-1", "answer": "maybe"}, -32602)
    assert s.close() == 0
    v = ctx.ward("verify", "--all", "--db", ctx.db, db=False)
    assert v.code == 0, v  # the rows of asked calls are in the chain


def test_serve_no_answer_in_ask_timeout_denies(ctx):
    s = AskServe(ctx)
    sid = s.create(policy=_policy(ctx, timeout=1))
    t0 = time.monotonic()
    r, asks = s.run_answering(sid, READ + "print(read())", [])
    took = time.monotonic() - t0
    assert _stdout(r) == "denied\n" and len(asks) == 1, (r, asks)
    assert 0.9 <= took < 10, took
    rows = ctx.events(r["run_id"], "rule = 'ask-hostname'")
    assert [e["decision"] for e in rows] == ["deny"], rows
    assert "deny by ward (no answer within ask_timeout)" in rows[0]["reason"], rows
    assert s.close() == 0


def test_other_threads_run_while_one_waits(ctx):
    """A thread waits on its question for 1.5 s; the main thread goes on
    opening files (trapped calls, decided by ward) meanwhile."""
    s = AskServe(ctx)
    sid = s.create(policy=_policy(ctx))
    code = READ + (
        "import threading, time\n"
        "done = []\n"
        "t = threading.Thread(target=lambda: done.append(read()))\n"
        "t.start()\n"
        "n = 0\n"
        "t0 = time.monotonic()\n"
        "while not done and time.monotonic() - t0 < 20:\n"
        "    open('/etc/passwd').close(); n += 1\n"
        "t.join()\n"
        "print(done[0], n, round(time.monotonic() - t0, 1))\n")
    r, asks = s.run_answering(sid, code, ["allow_once"], pause=1.5)
    what, n, secs = _stdout(r).split()
    assert what == "read" and len(asks) == 1, r
    assert float(secs) >= 1.4, r
    assert int(n) > 200, r  # hundreds of decided opens while it waited
    assert s.close() == 0


def test_run_without_terminal_denies_at_once(ctx):
    pol = _policy(ctx)
    t0 = time.monotonic()
    r = ctx.run(READ + "print(read())", "--policy", pol, stdin="")
    took = time.monotonic() - t0
    assert r.code == 0 and r.stdout == "denied\n", r
    assert took < 10, took  # not the 30 s ask_timeout
    run = ctx.last_run()
    rows = ctx.events(run["id"], "rule = 'ask-hostname'")
    assert [e["decision"] for e in rows] == ["deny"], rows
    assert "deny by ward (nobody to ask)" in rows[0]["reason"], rows


def _pty_run(ctx, code, keys, policy=None):
    """ward run on a terminal: each prompt answered with the next key."""
    policy = policy or _policy(ctx)
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(ctx.tmp)
        os.execv(wardtest.ward_bin(), ["ward", "run", "--db", ctx.db, "--policy",
                                       policy, "-c", code])
    out, end = b"", time.time() + 60
    try:
        while time.time() < end:
            r, _, _ = select.select([fd], [], [], 0.5)
            if not r:
                continue
            try:
                d = os.read(fd, 4096)
            except OSError:
                break
            if not d:
                break
            out += d
            while keys and out.count(b"[d]eny?") > len(keys_sent):
                k = keys.pop(0)
                keys_sent.append(k)
                os.write(fd, k)
    finally:
        os.close(fd)
        _, st = os.waitpid(pid, 0)
    return out.decode(errors="replace"), os.waitstatus_to_exitcode(st)


keys_sent = []


def test_run_prompts_on_the_terminal(ctx):
    keys_sent.clear()
    out, code = _pty_run(ctx, READ + "print(read(), read(), read(), read(), flush=True)",
                         [b"o\n", b"d\n", b"a\n"])
    assert code == 0, out
    assert out.count("ward: the code asks: read of /etc/hostname: ask by ask-hostname") == 3, out
    assert "read denied read read" in out, out
    run = ctx.last_run()
    rows = ctx.events(run["id"], "rule = 'ask-hostname'")
    assert [e["decision"] for e in rows] == ["allow", "deny", "allow", "allow"], rows
    assert "by ward run: terminal /dev/pts/" in rows[0]["reason"], rows


# ---- ward mcp: elicitation with the official SDK client ----

MCP_DIR = os.path.join(os.path.dirname(__file__), "..", "mcp")


def _sdk_ask(ctx, *mode):
    wardtest.require(wardtest.NODE)
    if not os.path.isdir(os.path.join(MCP_DIR, "node_modules", "@modelcontextprotocol", "sdk")):
        raise wardtest.Skip("tests/mcp/node_modules is missing: run tools/install-deps "
                            "(npm ci --prefix tests/mcp) to install the MCP SDK client")
    p = subprocess.run([wardtest.NODE, os.path.join(MCP_DIR, "ask.mjs"), wardtest.ward_bin(),
                        ctx.db, _policy(ctx, timeout=2)] + list(mode),
                       capture_output=True, text=True, timeout=120, cwd=ctx.tmp)
    assert p.returncode == 0, p.stderr[-6000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def _answers(ctx, run_id):
    return [(e["decision"], e["reason"].split("; ")[-1])
            for e in ctx.events(run_id, "rule = 'ask-hostname'")]


def test_mcp_elicitation_allow_once_always_deny_and_timeout(ctx):
    seen = _sdk_ask(ctx)
    assert seen["stdout"] == ["read denied read read\n", "denied\n"], seen
    assert len(seen["asked"]) == 4, seen  # the fourth read of the first run is not asked
    first = seen["asked"][0]
    assert "read of /etc/hostname: ask by ask-hostname" in first["message"], first
    assert first["ask"]["rule"] == "ask-hostname" and first["ask"]["target"] == ASKED, first
    assert first["schema"]["properties"]["answer"]["enum"] == [
        "allow_once", "allow_always", "deny"], first
    got = _answers(ctx, seen["run_ids"][0])
    assert [d for d, _ in got] == ["allow", "deny", "allow", "allow"], got
    assert got[0][1].startswith("asked: allow_once by mcp: ward-ask-test 2.0.0 at "), got
    assert got[2][1].startswith("asked: allow_always by mcp: ward-ask-test 2.0.0"), got
    assert got[3][1] == "allowed for the run by an earlier answer", got
    # the second session: no answer within ask_timeout (2 s)
    assert 1900 <= seen["timeout_ms"] < 3400, seen
    got = _answers(ctx, seen["run_ids"][1])
    assert got == [("deny", got[0][1])] and "no answer within ask_timeout" in got[0][1], got


def test_mcp_client_without_elicitation_is_never_asked(ctx):
    seen = _sdk_ask(ctx, "noelicit")
    assert seen["stdout"] == ["denied denied denied denied\n"], seen
    got = _answers(ctx, seen["run_ids"][0])
    assert [d for d, _ in got] == ["deny"] * 4, got
    assert "no elicitation capability" in got[0][1], got


# ---- ward serve --listen: GET /ward/asks, POST /ward/asks/ID ----

def test_listen_lists_and_answers_questions(ctx):
    import http.client
    import threading
    from test_e2b import Server, KEY
    s = Server(ctx, "--policy", _policy(ctx))
    sb = s.create()
    h = {"E2b-Sandbox-Id": sb["sandboxID"], "X-Access-Token": sb["envdAccessToken"],
         "Content-Type": "application/json"}
    out = []

    def execute():
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        c.request("POST", "/execute", json.dumps({"code": READ + "print(read(), read())"}), h)
        out.append(c.getresponse().read())
        c.close()

    t = threading.Thread(target=execute)
    t.start()
    key = {"X-API-Key": KEY, "Content-Type": "application/json"}
    for answer in ("allow_once", "deny"):
        asks = []
        deadline = time.monotonic() + 20
        while not asks and time.monotonic() < deadline:
            st, _, data = s.request("GET", "/ward/asks", headers=key)
            assert st == 200, (st, data)
            asks = json.loads(data)["asks"]
            time.sleep(0.05)
        assert len(asks) == 1, asks
        a = asks[0]
        assert a["session_id"] == sb["sandboxID"] and a["rule"] == "ask-hostname", a
        st, _, data = s.request("POST", "/ward/asks/" + a["id"], {"answer": answer, "by": "op"},
                                headers=key)
        assert st == 200 and json.loads(data) == {"id": a["id"], "answer": answer}, (st, data)
        # answered: it waits no more, a second answer is refused
        st, _, data = s.request("POST", "/ward/asks/" + a["id"], {"answer": "allow_once"},
                                headers=key)
        assert st == 400 and b"no question" in data, (st, data)
    t.join(60)
    lines = [json.loads(x) for x in out[0].splitlines()]
    assert {"type": "stdout", "text": "read denied\n"} in [
        {k: x.get(k) for k in ("type", "text")} for x in lines], lines
    # the key is required; a bad answer is a 400
    assert s.request("GET", "/ward/asks")[0] == 401
    st, _, data = s.request("POST", "/ward/asks/ask-1", {"answer": "sure"}, headers=key)
    assert st == 400 and b"allow_once" in data, (st, data)
    s.stop()
    runs = ctx.sql("select distinct run_id from events where rule = 'ask-hostname'")
    assert len(runs) == 1, runs
    rows = ctx.events(runs[0]["run_id"], "rule = 'ask-hostname'")
    assert [e["decision"] for e in rows] == ["allow", "deny"], rows
    assert "by http: op at " in rows[0]["reason"], rows


def test_wall_limit_while_asking_ends_the_run_and_records_the_question(ctx):
    """The wall-time limit runs on while a call waits: the run (a session's
    worker, whose wall limit is --max-life) ends at it as any run does, and
    the question is recorded as unanswered."""
    s = AskServe(ctx, "--max-life", "3")
    sid = s.create(policy=_policy(ctx))
    t0 = time.monotonic()
    r, asks = s.run_answering(sid, READ + "print(read())", [])
    took = time.monotonic() - t0
    assert len(asks) == 1 and r["status"] != "ok", (r, asks)
    assert took < 15, took  # not the 30 s ask_timeout
    run = ctx.sql("select status, cause from runs where id = ?", r["run_id"])[0]
    assert run["status"] == "timeout", run
    rows = ctx.events(r["run_id"], "rule = 'ask-hostname'")
    assert [e["decision"] for e in rows] == ["kill"], rows
    assert "asked: unanswered (the thread ended while it waited" in rows[0]["reason"], rows
    assert s.close() == 0
    v = ctx.ward("verify", "--all", "--db", ctx.db, db=False)
    assert v.code == 0, v


# ---- the worker channel fails closed ----

def _worker_answering(ctx, how):
    """A session worker (`ward serve --session-worker`, as the server starts
    it: control socket on fd 3, cells on 4, results on 5) whose policy asks
    before the interpreter reads its encodings package; the question is
    answered by how(control socket). Returns the rows of the ask rule."""
    import socket
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "default.json")) as f:
        pol = json.load(f)
    pol["fs"].append({"id": "ask-enc", "path": "/usr/lib/python3.11/encodings",
                      "ask": ["read"]})
    pfile = ctx.write("enc.json", json.dumps(pol))
    wd = ctx.path("wd")
    os.makedirs(os.path.join(wd, "tmp"))
    os.chmod(wd, 0o777)
    os.chmod(os.path.join(wd, "tmp"), 0o777)
    ctl, ctl_w = socket.socketpair()
    cells, cells_w = socket.socketpair()
    r, w = os.pipe()
    high = [os.dup2(fd, 100 + i) for i, fd in enumerate((ctl_w.fileno(), cells_w.fileno(), w))]

    def fds():
        for i, fd in enumerate(high):
            os.dup2(fd, 3 + i)

    p = subprocess.Popen([wardtest.ward_bin(), "serve", "--session-worker"], preexec_fn=fds,
                         pass_fds=(3, 4, 5), stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for fd in high + [w, r]:
        os.close(fd)
    ctl_w.close()
    cells_w.close()
    ctl.sendall((json.dumps({"language": "python", "db": ctx.db, "workdir": wd,
                             "max_life_s": 30, "policy": pfile}) + "\n").encode())
    lines = ctl.makefile("rb")
    seen = []
    try:
        for line in lines:
            m = json.loads(line)
            seen.append(sorted(m))
            if "ask" in m:
                how(ctl)
            if "end" in m:
                break
        assert p.wait(timeout=60) == 0
    finally:
        lines.close()
        ctl.close()
        cells.close()
        if p.poll() is None:
            p.kill()
            p.wait()
    assert seen[0] == ["run_id"] and ["ask"] in seen and seen[-1] == ["end"], seen
    return [(e["decision"], e["reason"]) for e in ctx.events(
        ctx.last_run()["id"], "rule = 'ask-enc'")]


def test_worker_garbled_answer_denies(ctx):
    rows = _worker_answering(ctx, lambda s: s.sendall(b'{"answer": "yes please"}\n'))
    assert rows and all(d == "deny" for d, _ in rows), rows
    assert "asked: deny by ward (a garbled answer)" in rows[0][1], rows
    # and nothing is asked again on that channel: every later one is denied
    assert all("deny by ward" in why for _, why in rows[1:]), rows


def test_worker_closed_channel_denies(ctx):
    import socket
    rows = _worker_answering(ctx, lambda s: s.shutdown(socket.SHUT_WR))
    assert rows and all(d == "deny" for d, _ in rows), rows
    assert "asked: deny by ward (the asker is gone)" in rows[0][1], rows


def test_cancel_ends_the_wait(ctx):
    """A cell cancelled, or past its timeout, while its call waits: the
    question is denied at once (the code's thread can take the interrupt),
    the session lives on."""
    s = AskServe(ctx)
    sid = s.create(policy=_policy(ctx))
    code = READ + "print(read(), flush=True)\nimport time\ntime.sleep(30)"
    # cancel
    s.n += 1
    rid = s.n
    s.send_raw((json.dumps({"id": rid, "method": "run", "params": {
        "session_id": sid, "code": code}}) + "\n").encode())
    m = s.read()
    assert m.get("event") == "ask", m
    t0 = time.monotonic()
    s.send_raw((json.dumps({"id": "c", "method": "cancel", "params": {"id": rid}}) + "\n").encode())
    while True:
        m = s.read()
        if m.get("id") == rid:
            break
    r = m["result"]
    assert r["status"] == "cancelled" and not r.get("session_closed"), r
    assert time.monotonic() - t0 < 5, r
    # denied, and the interrupt then reached the thread
    assert r["error"]["name"] == "KeyboardInterrupt", r
    assert r["policy"]["denials"][0]["rule"] == "ask-hostname", r
    r2 = s.run(sid, "print('alive')")
    assert _stdout(r2) == "alive\n", r2
    rows = ctx.events(r["run_id"], "rule = 'ask-hostname'")
    assert [e["decision"] for e in rows][:1] == ["deny"], rows
    assert "asked: deny by ward: the cell was interrupted" in rows[0]["reason"], rows
    assert s.close() == 0


def test_cell_timeout_while_asking(ctx):
    s = AskServe(ctx)
    sid = s.create(policy=_policy(ctx), timeout_s=1)
    t0 = time.monotonic()
    r, asks = s.run_answering(sid, READ + "print(read())", [])
    # denied at the cell's time limit; the code caught the PermissionError
    # and ended just then (or the driver's interrupt came first)
    assert len(asks) == 1 and r["status"] in ("ok", "timeout"), r
    assert time.monotonic() - t0 < 5, r
    assert _stdout(r) == "denied\n" or r["error"]["name"] == "KeyboardInterrupt", r
    assert [d["rule"] for d in r["policy"]["denials"]] == ["ask-hostname"], r
    rows = ctx.events(r["run_id"], "rule = 'ask-hostname'")
    assert len(rows) == 1 and rows[0]["decision"] == "deny", rows
    assert "asked: deny by ward: the cell's time was up" in rows[0]["reason"], rows
    assert s.run(sid, "print('alive')")["logs"]["stdout"] == ["alive\n"]
    assert s.close() == 0


# ---- the egress proxy asks (net.ask_domains) ----

def _proxy_ask_policy(ctx, port, timeout=None):
    """The default profile whose proxy asks before it connects to
    asked.test:PORT (a loopback origin of this test, named by net.hosts),
    and connects to free.test:PORT without asking."""
    pol = _default()
    pol["net"]["ask_domains"] = [f"asked.test:{port}"]
    pol["net"]["allow_domains"] = [f"free.test:{port}"]
    pol["net"]["hosts"] = {"asked.test": "127.0.0.1", "free.test": "127.0.0.1"}
    pol["net"]["allow_private"] = ["127.0.0.1"]
    if timeout is not None:
        pol["ask_timeout"] = timeout
    return ctx.write("proxy-ask.json", json.dumps(pol))


def _get(port, path):
    return ("import urllib.request, urllib.error\n"
            "try:\n"
            f"    print(urllib.request.urlopen('http://asked.test:{port}/{path}', timeout=30)"
            ".read().decode().strip())\n"
            "except urllib.error.HTTPError as e:\n"
            "    print('HTTP', e.code, e.read().decode().strip())\n")


def _proxy_rows(ctx, run_id):
    return [(e["decision"], e["rule"], e["reason"])
            for e in ctx.events(run_id, "syscall = 'proxy'")]


def test_proxy_asks_allow_once_deny_always(ctx):
    """A name of net.ask_domains: each connection asks (allow_once for one,
    deny for the next); allow_always holds for the rest of the run, a later
    cell is not asked again. The code's other threads run while the proxy
    waits."""
    from test_proxy import Origin
    o = Origin()
    s = AskServe(ctx)
    try:
        sid = s.create(policy=_proxy_ask_policy(ctx, o.port))
        code = (_get(o.port, "a") + _get(o.port, "b") + _get(o.port, "c"))
        r, asks = s.run_answering(sid, code, ["allow_once", "deny", "allow_always"],
                                  pause=0.3)
        out = _stdout(r).splitlines()
        assert out[0] == "origin says hi" and out[2] == "origin says hi", r
        assert out[1].startswith(f"HTTP 403 ward: proxy to asked.test:{o.port}: ask by "
                                 "net.ask_domains[0]; asked: deny by serve: test client"), out
        assert len(asks) == 3, asks
        a = asks[0]
        assert a["syscall"] == "proxy" and a["target"] == f"asked.test:{o.port}", a
        assert a["rule"] == "net.ask_domains[0]" and a["session_id"] == sid, a
        assert a["question"] == f"proxy to asked.test:{o.port}: ask by net.ask_domains[0]", a
        r2, asks2 = s.run_answering(sid, _get(o.port, "d"), [])
        assert _stdout(r2) == "origin says hi\n" and asks2 == [], (r2, asks2)
    finally:
        rc = s.close()
        o.close()
    assert rc == 0, rc  # ward serve ended cleanly (ASan: no report)
    assert [p for _, p in o.seen] == ["/a", "/c", "/d"], o.seen
    rows = _proxy_rows(ctx, r["run_id"])
    got = [(d, why.split("; ", 1)[1].split(" at ")[0]) for d, _, why in rows]
    assert got == [("allow", "asked: allow_once by serve: test client"),
                   ("deny", "asked: deny by serve: test client"),
                   ("allow", "asked: allow_always by serve: test client"),
                   ("allow", "allowed for the run by an earlier answer")], rows
    assert all(rule == "net.ask_domains[0]" for _, rule, _ in rows), rows
    assert "by serve: test client at 20" in rows[0][2] and " ms" in rows[0][2], rows
    shown = ctx.ward("show", r["run_id"]).stdout
    assert "asked: allow_once by serve: test client" in shown, shown
    v = ctx.ward("verify", "--all", "--db", ctx.db, db=False)
    assert v.code == 0, v


def test_proxy_ask_no_answer_in_ask_timeout_denies(ctx):
    from test_proxy import Origin
    o = Origin()
    s = AskServe(ctx)
    try:
        sid = s.create(policy=_proxy_ask_policy(ctx, o.port, timeout=1))
        t0 = time.monotonic()
        r, asks = s.run_answering(sid, _get(o.port, "t"), [])
        took = time.monotonic() - t0
    finally:
        rc = s.close()
        o.close()
    assert rc == 0, rc  # ward serve ended cleanly (ASan: no report)
    assert len(asks) == 1 and o.seen == [], (asks, o.seen)
    assert _stdout(r).startswith("HTTP 403 ward: proxy to asked.test:"), r
    assert 0.9 <= took < 10, took
    rows = _proxy_rows(ctx, r["run_id"])
    assert [d for d, _, _ in rows] == ["deny"], rows
    assert "asked: deny by ward (no answer within ask_timeout)" in rows[0][2], rows


def test_proxy_ask_nobody_to_ask_denies(ctx):
    """ward run without a terminal: nobody to ask, the proxy refuses at once."""
    from test_proxy import Origin
    o = Origin()
    try:
        r = ctx.run(_get(o.port, "n"), "--policy", _proxy_ask_policy(ctx, o.port), stdin="")
    finally:
        o.close()
    assert r.code == 0 and r.stdout.startswith("HTTP 403 ward: proxy to asked.test:"), r
    assert "asked: deny by ward (nobody to ask)" in r.stdout and o.seen == [], r


def test_proxy_ask_run_end_wakes_the_wait(ctx):
    """The run ends (the session worker's wall limit, --max-life) while a
    connection waits on its question: the wait ends with the run, denied,
    and the row says so; the code's other threads ran meanwhile."""
    from test_proxy import Origin
    o = Origin()
    s = AskServe(ctx, "--max-life", "3")
    try:
        sid = s.create(policy=_proxy_ask_policy(ctx, o.port))
        code = ("import threading, time\n"
                "n = [0]\n"
                "def opens():\n"
                "    while True:\n"
                "        open('/etc/passwd').close(); n[0] += 1\n"
                "        if n[0] == 300: print('opened', flush=True)\n"
                "threading.Thread(target=opens, daemon=True).start()\n"
                + _get(o.port, "end"))
        t0 = time.monotonic()
        r, asks = s.run_answering(sid, code, [])
        took = time.monotonic() - t0
    finally:
        rc = s.close()
        o.close()
    assert rc == 0, rc  # ward serve ended cleanly (ASan: no report)
    assert len(asks) == 1 and r["status"] != "ok" and o.seen == [], (r, asks)
    assert took < 15, took  # not the 30 s ask_timeout
    assert "opened\n" in "".join(r["logs"]["stdout"]), r
    rows = _proxy_rows(ctx, r["run_id"])
    assert [d for d, _, _ in rows] == ["deny"], rows
    # the run's end wakes the wait; a slow machine (ASan) may first see the
    # worker interrupt the cell, which denies its questions by id
    assert ("asked: deny by ward (the run ended while it waited)" in rows[0][2]
            or "asked: deny by ward: the cell was interrupted" in rows[0][2]), rows


def test_proxy_other_connections_go_on_while_one_waits(ctx):
    """A connection waits 1.5 s on its question; another, to a name
    allow_domains allows, is served meanwhile."""
    from test_proxy import Origin
    o = Origin()
    s = AskServe(ctx)
    try:
        sid = s.create(policy=_proxy_ask_policy(ctx, o.port))
        code = ("import threading, time, urllib.request\n"
                "def get(name, path):\n"
                f"    return urllib.request.urlopen(f'http://{{name}}:{o.port}/{{path}}', "
                "timeout=30).read().decode().strip()\n"
                "got = []\n"
                "t = threading.Thread(target=lambda: got.append(get('asked.test', 'slow')))\n"
                "t0 = time.monotonic()\n"
                "t.start()\n"
                "time.sleep(0.3)\n"
                "free = get('free.test', 'fast')\n"
                "took_free = time.monotonic() - t0\n"
                "t.join()\n"
                "print(free, got[0], round(took_free, 2), round(time.monotonic() - t0, 2), "
                "sep='|')\n")
        r, asks = s.run_answering(sid, code, ["allow_once"], pause=1.5)
    finally:
        rc = s.close()
        o.close()
    assert rc == 0, rc
    free, asked, took_free, took_all = _stdout(r).strip().split("|")
    assert free == asked == "origin says hi", r
    assert len(asks) == 1 and asks[0]["target"].startswith("asked.test:"), asks
    assert float(took_free) < 1.2 and float(took_all) >= 1.4, r
    assert [p for _, p in o.seen] == ["/fast", "/slow"], o.seen


def test_proxy_ask_on_the_terminal(ctx):
    """ward run on a terminal: the proxy's question is prompted there; once
    allowed, deny, then allow for the run (the fourth request not asked)."""
    from test_proxy import Origin
    o = Origin()
    keys_sent.clear()
    try:
        out, code = _pty_run(ctx, "".join(_get(o.port, p) for p in "abcd"),
                             [b"o\n", b"d\n", b"a\n"],
                             policy=_proxy_ask_policy(ctx, o.port))
    finally:
        o.close()
    assert code == 0, out
    assert out.count(f"ward: the code asks: proxy to asked.test:{o.port}: ask by "
                     "net.ask_domains[0]") == 3, out
    assert [p for _, p in o.seen] == ["/a", "/c", "/d"], (o.seen, out)
    rows = _proxy_rows(ctx, ctx.last_run()["id"])
    assert [d for d, _, _ in rows] == ["allow", "deny", "allow", "allow"], rows
    assert "by ward run: terminal /dev/pts/" in rows[0][2], rows
