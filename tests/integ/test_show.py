"""ward runs and ward show: reading the record back, as text and JSON, and
their errors (exit 125 with a clear message)."""
import base64
import json
import os
import sqlite3


def _ids(ctx):
    return [r["id"] for r in ctx.sql("select id from runs order by started_ns desc")]


def test_runs_lists_newest_first(ctx):
    assert ctx.run("print(1)\nprint(2)").code == 0
    script = ctx.write("job.py", "print('job')\n")
    assert ctx.ward("run", script).code == 0
    ids = _ids(ctx)
    r = ctx.ward("runs")
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["ID", "STARTED", "STATUS", "EXIT"], lines
    assert [l.split()[0] for l in lines[1:]] == ids, (lines, ids)
    assert lines[1].rstrip().endswith("job.py") and " ok " in lines[1], lines
    assert lines[2].rstrip().endswith("print(1) ..."), lines
    r = ctx.ward("runs", "--limit", "1")
    assert r.code == 0 and len(r.stdout.splitlines()) == 2, r
    r = ctx.ward("runs", "--json")
    assert r.code == 0, r
    j = json.loads(r.stdout)
    assert [x["id"] for x in j] == ids
    assert j[0]["code_name"].endswith("job.py") and j[0]["exit_code"] == 0
    assert j[1]["code_first_line"] == "print(1)" and j[1]["code_bytes"] == 17
    assert j[1]["status"] == "ok" and j[1]["denials"] == 0 and j[1]["events"] > 0


def test_show_header_timeline_and_escaping(ctx):
    code = ("import sys\n"
            "print('hello', flush=True)\n"
            "try:\n    open('/etc/shadow')\nexcept OSError:\n    print('no', flush=True)\n"
            "print('\\x1b[31mred\\u202e', flush=True)\n"
            "sys.exit(4)\n")
    r = ctx.run(code)
    assert r.code == 4, r
    run_id = ctx.last_run()["id"]
    r = ctx.ward("show", "last")
    assert r.code == 0, r
    out = r.stdout
    assert out.startswith(f"run       {run_id}\n"), out
    assert "status    error, exit 4\n" in out, out
    assert "language  python, /usr/bin/python3\n" in out
    assert "  | print('hello', flush=True)\n" in out, "the code, line by line"
    tl = out.split("\ntimeline", 1)[1].splitlines()[1:]
    assert "[1] start" in tl[0] and "[1] exit   status 4" in tl[-1], tl
    deny = [l for l in tl if "DENY" in l]
    assert len(deny) == 1 and "!! [1] DENY   openat /etc/shadow -> EACCES, rule " in deny[0], deny
    assert any(l.strip() == "backtrace:" for l in tl), "backtrace under the denial"
    assert any(l.endswith("stdout| hello") for l in tl), tl
    assert "\x1b" not in out and "\u202e" not in out, "terminal controls must be escaped"
    assert "stdout| \\x1b[31mred\\u{202e}" in out, out
    # a unique prefix shows the same run
    r2 = ctx.ward("show", run_id[:5])
    assert r2.code == 0 and r2.stdout == out


def test_show_json(ctx):
    code = ("import sys\n"
            "sys.stdout.buffer.write(b'ok\\x00\\xff\\n'); sys.stdout.flush()\n"
            "print('caf\\u00e9', flush=True)\n"
            "try:\n    open('/etc/shadow')\nexcept OSError:\n    pass\n")
    r = ctx.run(code, text=False)
    assert r.code == 0, r
    run = ctx.last_run()
    r = ctx.ward("show", run["id"], "--json")
    assert r.code == 0, r
    j = json.loads(r.stdout)
    assert set(j) == {"run", "processes", "events", "outputs"}
    assert j["run"]["id"] == run["id"] and j["run"]["status"] == "ok"
    assert j["run"]["code"] == code and j["run"]["code_bytes"] == len(code.encode())
    assert "code_base64" not in j["run"]
    assert j["run"]["argv"][0] == "ward" and isinstance(j["run"]["limits"], dict)
    assert j["run"]["policy"]["version"] == 1
    assert [p["serial"] for p in j["processes"]] == list(range(1, len(j["processes"]) + 1))
    assert j["processes"][0]["parent_serial"] is None
    assert len(j["events"]) == run["events"]
    d = [e for e in j["events"] if e["decision"] == "deny"]
    assert len(d) == 1 and d[0]["errno"] == 13 and d[0]["errno_name"] == "EACCES", d
    assert d[0]["target"] == "/etc/shadow" and isinstance(d[0]["args"], dict)
    assert isinstance(d[0]["backtrace"], list)
    data = b"".join(base64.b64decode(o["base64"]) if "base64" in o else o["text"].encode()
                    for o in j["outputs"] if o["stream"] == "stdout")
    assert data == b"ok\x00\xff\ncaf\xc3\xa9\n", data
    lossy = [o for o in j["outputs"] if "base64" in o]
    assert lossy and all("\ufffd" in o["text"] for o in lossy)
    assert all(o["bytes"] == len(base64.b64decode(o["base64"])) for o in lossy)


def test_show_errors_exit_125(ctx):
    missing = ctx.path("none", "audit.db")
    for args in (["show", "--db", missing, "last"], ["runs", "--db", missing]):
        r = ctx.ward(*args, db=False)
        assert r.code == 125, r
        assert f"ward: no audit database at {missing} (run `ward run` first, or pass --db)" in r.stderr, r
    assert not os.path.exists(ctx.path("none")), "reading never creates the database"
    assert ctx.run("print(1)").code == 0
    r = ctx.ward("show", "xyz")
    assert r.code == 125 and f"ward: no run matches 'xyz' in {ctx.db}" in r.stderr, r
    # two runs sharing a prefix
    con = sqlite3.connect(ctx.db)
    with con:
        for i in (1, 2):
            con.execute("insert into runs(id, started_ns) values (?, ?)", (f"abcd00000000000{i}", i))
    con.close()
    r = ctx.ward("show", "abcd")
    assert r.code == 125 and "'abcd' matches more than one run" in r.stderr, r
    r = ctx.ward("show", "abcd00000000000")
    assert r.code == 125 and "more than one run" in r.stderr, r
    r = ctx.ward("show", "abcd000000000002")
    assert r.code == 0 and "status    running (no end recorded" in r.stdout, r
    r = ctx.ward("show")
    assert r.code == 125 and "which run?" in r.stderr, r
    r = ctx.ward("runs", "--limit", "many")
    assert r.code == 125 and "--limit" in r.stderr, r
    r = ctx.ward("show", "last", "--frobnicate")
    assert r.code == 125 and "--frobnicate" in r.stderr, r
    foreign = ctx.path("foreign.db")
    con = sqlite3.connect(foreign)
    con.execute("create table t(x)")
    con.close()
    r = ctx.ward("runs", "--db", foreign, db=False)
    assert r.code == 125 and "not a ward audit database" in r.stderr, r


def test_help_says_everything(ctx):
    r = ctx.ward("runs", "--help", db=False)
    assert r.code == 0, r
    for word in ("--db", "--limit", "--json", "ID", "STATUS", "DENIED", "exit status"):
        assert word in r.stdout, word
    r = ctx.ward("show", "--help", db=False)
    assert r.code == 0, r
    for word in ("RUN", "last", "--db", "--json", "base64", "errno_name", "!!", "exit status"):
        assert word in r.stdout, word
