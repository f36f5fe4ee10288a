"""ward runs and ward show: reading the record back, as text and JSON, and
their errors (exit 125 with a clear message)."""
import base64
import json
import os
import re
import signal
import sqlite3
import subprocess
import time

import wardtest


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
    assert "status    error, exit 4; 1 denied\n" in out, out
    assert "language  python, /usr/bin/python3\n" in out
    assert "  | print('hello', flush=True)\n" in out, "the code, line by line"
    tl = out.split("\ntimeline", 1)[1].splitlines()[1:]
    assert "[1] start" in tl[0] and "[1] exit   status 4" in tl[-1], tl
    deny = [l for l in tl if "DENY" in l]
    assert len(deny) == 1 and "!! [1] DENY   openat /etc/shadow -> EACCES, rule " in deny[0], deny
    assert any(l.strip().startswith("backtrace") and l.endswith(":") for l in tl), \
        "backtrace under the denial"
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
    for word in ("RUN", "last", "--db", "--json", "base64", "errno_name", "!!", "exit status",
                 "--summary", "--denied", "--syscall NAME", "aborted",
                 "symbols from the files as they are now", '"symbol"', ".dynsym"):
        assert word in r.stdout, word


SUMMARY_CODE = ("import subprocess, threading\n"
                "try:\n    open('/etc/shadow')\nexcept OSError:\n    pass\n"
                "subprocess.run(['uname', '-p'], check=True)\n"
                "t = threading.Thread(target=print, args=('from a thread',)); t.start(); t.join()\n"
                "for i in range(3):\n    open(f'f{i}.txt', 'w').close()\n")


def _summary_run(ctx):
    r = ctx.run(SUMMARY_CODE)
    assert r.code == 0, r
    run = ctx.last_run()
    assert run["denials"] == 1, run
    return run


def test_show_summary(ctx):
    run = _summary_run(ctx)
    rid = run["id"]
    r = ctx.ward("show", "last", "--summary")
    assert r.code == 0, r
    out = r.stdout
    lines = out.splitlines()
    assert len(lines) <= 34, out  # short: twelve of them are the layers
    assert lines[0] == f"run       {rid}", out
    # the verdict first: a run with a denial is not a plain ok
    assert lines[1] == "status    ok with denials, exit 0; 1 denied", out
    assert f"database  {os.path.realpath(ctx.db)}\n" in out, out
    assert "code      -c (python), policy default\n" in out, out
    # processes: python with its thread, and uname of [1]
    assert "processes: 2, and 1 thread\n" in out, out
    procs = [l for l in lines if l.startswith("  [")]
    assert len(procs) == 2, out
    assert procs[0].split()[:3] == ["[1]", "exit", "0"], procs
    assert procs[0].endswith(", 1 thread)"), procs
    assert procs[1].split()[:5] == ["[2]", "of", "[1]", "exit", "0"], procs
    assert "uname -p  (/usr/bin/uname)" in procs[1], procs
    # counts per syscall and decision, matching the database
    counts = ctx.sql("select syscall, sum(decision='allow') a, sum(decision='deny') d"
                     " from events where run_id=? group by syscall", rid)
    opens = [c for c in counts if c["syscall"] == "openat"][0]
    assert opens["d"] == 1 and opens["a"] > 3, counts
    want = f"{opens['a']} allowed, 1 denied"
    assert any(l.split() == ["openat"] + want.split() for l in lines), (want, out)
    assert f"syscalls: {run['events']} decided, {run['events'] - 1} allowed, 1 denied\n" in out, out
    execs = [c for c in counts if c["syscall"] == "execve"][0]
    assert any(l.split() == ["execve", str(execs["a"]), "allowed"] for l in lines), out
    # the denial: syscall, target, errno, rule, reason
    den = ctx.denials(rid)[0]
    i = lines.index("denials: 1")
    # the denials before the processes and the syscall counts
    assert i < lines.index("processes: 2, and 1 thread") < \
        [n for n, l in enumerate(lines) if l.startswith("syscalls: ")][0], out
    assert "[1] DENY openat /etc/shadow -> EACCES, rule secret-shadow" in lines[i + 1], lines[i + 1]
    assert lines[i + 2].strip() == den["reason"], (lines[i + 2], den)
    assert f"ward show --db {ctx.db} {rid} --denied " in out, "how to see more"
    # a run without denials says so
    assert ctx.run("print(1)").code == 0
    r = ctx.ward("show", "last", "--summary")
    assert r.code == 0 and "denials: none\n" in r.stdout, r
    assert "processes: 1\n" in r.stdout and "status    ok, exit 0\n" in r.stdout, r
    # the whole show and the tree say the same
    for opts in ((), ("--tree",)):
        r = ctx.ward("show", rid, *opts)
        assert r.stdout.splitlines()[1] == "status    ok with denials, exit 0; 1 denied", r
    # audit mode: would-be denials; a kill: the run's status
    assert ctx.run("try: open('/etc/shadow')\nexcept OSError: pass", "--profile", "audit").code == 0
    r = ctx.ward("show", "last", "--summary")
    assert "status    ok with would-be denials, exit 0; 1 would be denied\n" in r.stdout, r
    ctx.run("import ctypes\nctypes.CDLL(None).syscall(101, 0, 0, 0, 0)")
    r = ctx.ward("show", "last", "--summary")
    assert "status    killed, killed by SIGSYS; 1 killed\n" in r.stdout, r


def _timeline(out):
    """Timeline lines after the heading (and the 'only ...' line)."""
    tl = out.split("\ntimeline (", 1)[1].splitlines()[1:]
    assert tl and tl[0].startswith("only "), tl
    return tl[1:]


def test_show_denied_and_syscall_filters(ctx):
    run = _summary_run(ctx)
    r = ctx.ward("show", "last", "--denied")
    assert r.code == 0, r
    assert r.stdout.startswith(f"run       {run['id']}\n"), "the header stays"
    tl = _timeline(r.stdout)
    stamped = [l for l in tl if not l.startswith(" " * 19)]
    assert len(stamped) == 1, tl
    assert "!! [1] DENY   openat /etc/shadow -> EACCES, rule secret-shadow" in stamped[0], tl
    assert all("allow" not in l and "stdout|" not in l and "start" not in l for l in stamped)
    assert any(l.strip().startswith("args ") for l in tl), "arguments under the denial"

    r = ctx.ward("show", "last", "--syscall", "execve", "--syscall", "clone")
    assert r.code == 0, r
    tl = _timeline(r.stdout)
    stamped = [re.search(r"\] (allow|DENY|KILL) +(\S+)", l).groups()
               for l in tl if not l.startswith(" " * 19)]
    n = ctx.sql("select count(*) n from events where run_id=? and syscall in ('execve','clone')",
                run["id"])[0]["n"]
    assert len(stamped) == n and n >= 2, (stamped, n)
    assert all(s[0] == "allow" and s[1] in ("execve", "clone") for s in stamped), stamped

    r = ctx.ward("show", "last", "--syscall", "execve", "--denied")
    assert r.code == 0 and _timeline(r.stdout) == ["(none in this run)"], r
    r = ctx.ward("show", "last", "--syscall", "openat", "--denied")
    assert r.code == 0, r
    assert [l for l in _timeline(r.stdout) if "DENY" in l], r

    for bad in (["--summary", "--json"], ["--summary", "--syscall", "openat"]):
        r = ctx.ward("show", "last", *bad)
        assert r.code == 125 and "ward: show: " in r.stderr, (bad, r)


FRAME = re.compile(r"^ {21}#(\d+) +(\S+) (\S+)  \((/\S+)\+(0x[0-9a-f]+), ip (0x[0-9a-f]+)\)$")


def test_show_backtrace_symbols(ctx):
    r = ctx.run("try:\n    open('/etc/shadow')\nexcept OSError:\n    pass\n")
    assert r.code == 0, r
    run_id = ctx.last_run()["id"]
    r = ctx.ward("show", "last", "--denied")
    assert r.code == 0, r
    tl = _timeline(r.stdout)
    i = tl.index(" " * 19 + "backtrace (symbols from the files as they are now):")
    rest = tl[i + 1:]
    py = " " * 19 + "python (from untrusted memory):"  # the Python frames follow
    frames = [FRAME.match(l) for l in (rest[:rest.index(py)] if py in rest else rest)]
    assert frames and all(frames), tl[i + 1:]
    frames = [m.groups() for m in frames]
    assert [int(f[0]) for f in frames] == list(range(len(frames))), frames
    assert all(os.path.basename(f[3]) == f[1] for f in frames), frames
    libc = [f for f in frames if f[1].startswith("libc.so")]
    assert libc and libc[0] == frames[0], "the syscall is made in libc"
    assert "open" in frames[0][2] and re.fullmatch(r"[\w.]+\+0x[0-9a-f]+", frames[0][2]), frames[0]
    named = [f for f in frames if f[2] != "??"]
    assert len(named) >= 2, frames

    r = ctx.ward("show", "last", "--json")
    assert r.code == 0, r
    d = [e for e in r.json()["events"] if e["decision"] == "deny"]
    bt = d[0]["backtrace"]
    assert len(bt) == len(frames)
    assert all({"ip", "module", "offset"} <= set(f) for f in bt), bt
    assert [f.get("symbol", "??") for f in bt] == [f[2] for f in frames], (bt, frames)
    assert "open" in bt[0]["symbol"], bt[0]

    # modules that are gone, or not ELF any more: "??", nothing breaks
    junk = ctx.write("junk.so", "not an ELF file\n" * 100)
    bt = [{"ip": "0x1", "module": ctx.path("gone.so"), "offset": "0x10"},
          {"ip": "0x2", "module": junk, "offset": "0x20"},
          {"ip": "0x3", "module": "/dev/zero", "offset": "0x30"},
          {"ip": "0x4", "module": "relative.so", "offset": "0x40"},
          {"ip": "0x5", "module": frames[0][3], "offset": "not hex"},
          {"ip": "0x6", "module": frames[0][3], "offset": frames[0][4]},
          "odd"]
    con = sqlite3.connect(ctx.db)
    with con:
        con.execute("update events set backtrace=? where run_id=? and decision='deny'",
                    (json.dumps(bt), run_id))
    con.close()
    r = ctx.ward("show", "last", "--denied")
    assert r.code == 0, r
    tl = _timeline(r.stdout)
    i = tl.index(" " * 19 + "backtrace (symbols from the files as they are now):")
    assert [l.split()[2] for l in tl[i + 1:i + 6]] == ["??"] * 5, tl
    # frame #5 is taken as a return address (looked up a byte back), and
    # printed with its own offset: the same name as frame #0 above
    assert tl[i + 6].split()[2] == frames[0][2], tl
    assert tl[i + 7].strip() == '#6  "odd"', tl
    r = ctx.ward("show", "last", "--json")
    assert r.code == 0, r
    got = [e for e in r.json()["events"] if e["decision"] == "deny"][0]["backtrace"]
    assert [("symbol" in f) if isinstance(f, dict) else None for f in got] == \
        [False] * 5 + [True, None], got


def test_dead_ward_run_is_aborted_by_the_next_run(ctx):
    """A ward SIGKILLed mid-run: at once, every reader says its ward died
    and shows what was decided and printed; the next ward run closes it."""
    marker = f"reap-{os.getpid()}-{time.monotonic_ns()}"
    p = wardtest.spawn([wardtest.ward_bin(), "run", "--db", ctx.db, "-c",
                        f"import time  # {marker}\nprint('said before', flush=True)\n"
                        "time.sleep(0.3)\n"
                        "try:\n open('/etc/shadow')\nexcept OSError as e:\n print(e.errno, flush=True)\n"
                        "time.sleep(60)\n"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ctx.tmp)
    assert p.stdout.readline() == b"said before\n"
    assert p.stdout.readline() == b"13\n"

    def started():
        try:
            return ctx.sql("select count(*) n from processes")[0]["n"] > 0
        except sqlite3.Error:
            return False
    assert wardtest.wait_until(started, 20), "the run and its process were recorded"
    run = ctx.last_run()
    assert run["status"] == "running" and run["ward_pid"] == p.pid, run
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert run["boot_id"] == f.read().strip()
    assert run["host"] == os.uname().nodename
    # alive: running, not died
    r = ctx.ward("show", run["id"], "--summary")
    assert "status    running; 1 denied (no end recorded" in r.stdout, r
    assert ctx.ward("runs", "--json").json()[0]["ward_died"] is False
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)
    p.stdout.close()
    assert wardtest.wait_until(lambda: not wardtest.pids_matching(marker), 10), \
        "the code dies with its ward"
    # at once, before any other ward runs: every reader says so, and the
    # record keeps the denial and the output from before the kill
    r = ctx.ward("show", run["id"])
    assert f"status    running, ward died; 1 denied (its ward, pid {p.pid}, is gone" \
        in r.stdout, r
    assert "said before" in r.stdout and "/etc/shadow" in r.stdout, r
    j = ctx.ward("show", run["id"], "--json").json()
    assert j["run"]["ward_died"] is True and j["run"]["status"] == "running", j["run"]
    assert any(e["decision"] == "deny" and e["target"] == "/etc/shadow" for e in j["events"])
    row = [l for l in ctx.ward("runs").stdout.splitlines() if l.startswith(run["id"])]
    assert row and " died " in row[0], row
    assert ctx.ward("runs", "--json").json()[0]["ward_died"] is True
    r = ctx.ward("report", run["id"], "--db", ctx.db, "--format", "text")
    assert "running, ward died" in r.stdout, r.stdout[:2000]
    assert ctx.sql("select status from runs where id=?", run["id"])[0]["status"] == "running"

    assert ctx.run("print(1)").code == 0
    dead = ctx.sql("select * from runs where id=?", run["id"])[0]
    assert dead["status"] == "aborted", dead
    assert dead["cause"] == ("ward stopped before the run ended (killed or crashed); "
                             "the record holds what was written until then"), dead
    stamps = ctx.sql("select ts_ns t from events where run_id=?1"
                     " union all select ts_ns from outputs where run_id=?1"
                     " union all select start_ns from processes where run_id=?1"
                     " union all select exec_ns from processes where run_id=?1"
                     " union all select exit_ns from processes where run_id=?1", run["id"])
    latest = max([dead["started_ns"]] + [x["t"] for x in stamps if x["t"]])
    assert dead["ended_ns"] == latest and dead["ended_ns"] > dead["started_ns"], (dead, latest)
    assert dead["duration_ms"] == (dead["ended_ns"] - dead["started_ns"]) // 1000000
    assert dead["exit_code"] is None and dead["processes"] >= 1 and dead["events"] > 0, dead
    assert ctx.last_run()["status"] == "ok"
    r = ctx.ward("runs")
    row = [l for l in r.stdout.splitlines() if l.startswith(run["id"])]
    assert row and " aborted " in row[0], r
    r = ctx.ward("show", run["id"], "--summary")
    assert r.code == 0 and "status    aborted; 1 denied\ncause     ward stopped before the run ended" in r.stdout, r


def _local_ns(s):
    """'2026-01-01T10:00:00' in local time, as ns."""
    return int(time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%S"))) * 1000000000


def _runs_ids(ctx, *args):
    r = ctx.ward("runs", "--json", "--limit", "0", *args)
    assert r.code == 0, (args, r)
    return [x["id"] for x in r.json()]


def test_runs_filters(ctx):
    assert ctx.run("print(1)").code == 0
    ok_id = ctx.last_run()["id"]
    assert ctx.run("open('/etc/shadow')").code == 1
    err_id = ctx.last_run()["id"]
    assert ctx.run("echo hi", lang="sh").code == 0
    sh_id = ctx.last_run()["id"]
    old1, old2, live = "1000000000000001", "1000000000000002", "1000000000000003"
    con = sqlite3.connect(ctx.db)
    with con:
        con.execute("insert into runs(id, started_ns, status, language, denials, events)"
                    " values (?, ?, 'timeout', 'node', 3, 10)",
                    (old1, _local_ns("2026-01-01T10:00:00")))
        con.execute("insert into runs(id, started_ns, status, language, denials, events)"
                    " values (?, ?, 'ok', 'python', 0, 5)",
                    (old2, _local_ns("2025-06-01T12:00:00")))
        # a run without an end: no counters yet, a denial in its events
        con.execute("insert into runs(id, started_ns, status, language)"
                    " values (?, ?, 'running', 'python')", (live, _local_ns("2025-05-01T00:00:00")))
        con.execute("insert into events(run_id, seq, ts_ns, pid, tid, nr, syscall, decision)"
                    " values (?, 1, 1, 1, 1, 257, 'openat', 'deny')", (live,))
    con.close()
    assert _runs_ids(ctx) == [sh_id, err_id, ok_id, old1, old2, live]
    assert _runs_ids(ctx, "--status", "error") == [err_id]
    assert _runs_ids(ctx, "--status", "ok,timeout") == [sh_id, ok_id, old1, old2]
    assert _runs_ids(ctx, "--status", "ok", "--status", "running") == [sh_id, ok_id, old2, live]
    assert _runs_ids(ctx, "--denied") == [err_id, old1, live]
    assert _runs_ids(ctx, "--lang", "sh") == [sh_id]
    assert _runs_ids(ctx, "--lang", "node,sh") == [sh_id, old1]
    assert _runs_ids(ctx, "--since", "1h") == [sh_id, err_id, ok_id]
    assert _runs_ids(ctx, "--since", "30m", "--lang", "python") == [err_id, ok_id]
    assert _runs_ids(ctx, "--until", "2026-01-02") == [old1, old2, live]
    assert _runs_ids(ctx, "--since", "2026-01-01", "--until", "2026-01-01T23:59") == [old1]
    assert _runs_ids(ctx, "--since", "2026-01-01T10:00") == [sh_id, err_id, ok_id, old1]
    assert _runs_ids(ctx, "--since", "2026-01-01T10:00:01") == [sh_id, err_id, ok_id]
    assert _runs_ids(ctx, "--until", "2026-01-01 10:00:00") == [old1, old2, live]
    utc = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_local_ns("2025-06-01T12:00:00") // 10**9))
    assert _runs_ids(ctx, "--since", utc, "--until", utc) == [old2], utc
    assert _runs_ids(ctx, "--since", "2025-01-01", "--until", "now", "--status", "ok",
                     "--lang", "python") == [ok_id, old2]
    assert _runs_ids(ctx, "--denied", "--status", "ok") == []
    # with --limit: the most recent that match; and in the table
    assert _runs_ids(ctx, "--denied", "--limit", "2") == [err_id, old1]
    r = ctx.ward("runs", "--denied", "--until", "2026-06-01")
    assert r.code == 0, r
    assert [l.split()[0] for l in r.stdout.splitlines()[1:]] == [old1, live], r.stdout
    r = ctx.ward("runs", "--status", "killed")
    assert r.code == 0 and r.stdout.splitlines()[1:] == [], r


def test_runs_filter_errors_exit_125(ctx):
    assert ctx.run("print(1)").code == 0
    bad = [
        (["--status", "okk"], "runs: --status: 'okk' is not a status; give one of: running, ok, error,"),
        (["--status", ""], "--status needs a status"),
        (["--status", ",,"], "--status needs a status"),
        (["--lang", "ruby"], "runs: --lang: 'ruby' is not a language; give one of: python, node, sh"),
        (["--since", "yesterday"], "runs: --since: cannot read 'yesterday' as a time; give 2026-12-02T10:00"),
        (["--since", "2026-02-30"], "cannot read '2026-02-30' as a time"),
        (["--since", "2026-13-01"], "cannot read '2026-13-01'"),
        (["--until", "2026-12-02T25:00"], "--until: cannot read"),
        (["--since", "10x"], "cannot read '10x'"),
        (["--since", "1h30"], "cannot read '1h30'"),
        (["--since", "2026-12-02T10:00+25:00"], "cannot read"),
        (["--since", "1d", "--until", "2d"], "--since is after --until"),
        (["--since"], "--since needs a value"),
        # past what 64-bit nanoseconds hold (2262), or 100 years ago
        (["--since", "2999-01-01"], "cannot read '2999-01-01'"),
        (["--since", "99999999w"], "cannot read '99999999w'"),
    ]
    for args, msg in bad:
        r = ctx.ward("runs", *args)
        assert r.code == 125 and r.stdout == "", (args, r)
        assert "ward: " + msg in r.stderr or msg in r.stderr, (args, msg, r)
    r = ctx.ward("runs", "--help", db=False)
    for word in ("--status S[,S]", "--denied", "--since TIME", "--until TIME", "--lang L[,L]",
                 "2026-12-02T10:00", "30m", "2d"):
        assert word in r.stdout, word


def _stamped(out):
    """The timeline's stamped lines (no args/backtrace lines under them)."""
    return [l for l in _timeline(out) if not l.startswith(" " * 19)]


def _serial_of(line):
    return int(re.search(r"\[(\d+)\] ", line).group(1))


def test_show_path_pid_proc_filters(ctx):
    run = _summary_run(ctx)
    rid = run["id"]
    # --path: the target or the raw argument, fnmatch with * across /
    r = ctx.ward("show", "last", "--path", "/etc/*")
    assert r.code == 0, r
    lines = _stamped(r.stdout)
    n = ctx.sql("select count(*) n from events where run_id=? and"
                " (target glob '/etc/*' or raw glob '/etc/*')", rid)[0]["n"]
    assert len(lines) == n and n >= 2, (lines, n)
    assert all(" /etc/" in l for l in lines), lines
    assert any("DENY   openat /etc/shadow" in l for l in lines), lines
    r = ctx.ward("show", "last", "--path", "*f1.txt")
    lines = _stamped(r.stdout)
    assert len(lines) == 1 and "f1.txt" in lines[0] and "(given as f1.txt)" in lines[0], lines
    r = ctx.ward("show", "last", "--path", "*f1.txt", "--path", "*f2.txt")
    assert len(_stamped(r.stdout)) == 2, r.stdout
    r = ctx.ward("show", "last", "--path", "/etc/*", "--denied")
    lines = _stamped(r.stdout)
    assert len(lines) == 1 and "/etc/shadow" in lines[0], lines
    r = ctx.ward("show", "last", "--path", "/nowhere/*")
    assert _timeline(r.stdout) == ["(none in this run)"], r.stdout
    # --syscall with a comma list
    r = ctx.ward("show", "last", "--syscall", "execve,clone")
    n = ctx.sql("select count(*) n from events where run_id=? and syscall in ('execve','clone')",
                rid)[0]["n"]
    assert len(_stamped(r.stdout)) == n and n >= 2, r.stdout

    procs = ctx.sql("select * from processes where run_id=? order by serial", rid)
    uname = [p for p in procs if p["exe"] == "/usr/bin/uname"][0]
    thread = [p for p in procs if p["kind"] == "thread"][0]
    # --pid: that process's decisions and its start, exec and exit
    r = ctx.ward("show", "last", "--pid", str(uname["pid"]))
    assert r.code == 0, r
    lines = _stamped(r.stdout)
    n = ctx.sql("select count(*) n from events where run_id=? and (pid=?1 or tid=?1)".replace("?1", "?2"),
                rid, uname["pid"])[0]["n"]
    assert len(lines) == n + 3, (lines, n)
    assert all(_serial_of(l) == uname["serial"] for l in lines), lines
    assert "start  pid" in lines[0] and "exit   status 0" in lines[-1], lines
    assert not any("stdout|" in l for l in lines)
    # a thread's tid: only its own decisions and lines
    r = ctx.ward("show", "last", "--pid", str(thread["pid"]))
    assert all(_serial_of(l) == thread["serial"] for l in _stamped(r.stdout)), r.stdout
    # --proc 1: the interpreter and its thread, not uname
    r = ctx.ward("show", "last", "--proc", "1")
    serials = {_serial_of(l) for l in _stamped(r.stdout)}
    assert serials == {1, thread["serial"]}, serials
    r = ctx.ward("show", "last", "--proc", str(uname["serial"]), "--syscall", "execve")
    lines = _stamped(r.stdout)
    assert lines and all(_serial_of(l) == uname["serial"] and " execve " in l for l in lines), lines
    assert any("execve /usr/bin/uname," in l for l in lines), lines
    # AND: uname's pid and a path it never touched
    r = ctx.ward("show", "last", "--pid", str(uname["pid"]), "--path", "/etc/shadow")
    assert _timeline(r.stdout) == ["(none in this run)"], r.stdout

    # the same limits apply to --json
    r = ctx.ward("show", "last", "--json", "--denied")
    assert r.code == 0, r
    j = r.json()
    assert j["filter"] == {"denied": True}, j["filter"]
    assert [e["target"] for e in j["events"]] == ["/etc/shadow"], j["events"]
    assert j["outputs"] == [] and j["processes"] == [] and j["run"]["id"] == rid
    r = ctx.ward("show", "last", "--json", "--pid", str(uname["pid"]))
    j = r.json()
    assert [p["serial"] for p in j["processes"]] == [uname["serial"]], j["processes"]
    assert j["events"] and all(e["pid"] == uname["pid"] for e in j["events"]), j["events"]
    assert j["filter"] == {"pids": [uname["pid"]]}
    r = ctx.ward("show", "last", "--json", "--path", "/etc/*", "--syscall", "openat")
    j = r.json()
    assert all(e["syscall"] == "openat" for e in j["events"]) and len(j["events"]) >= 2, j["events"]
    assert j["filter"] == {"syscalls": ["openat"], "paths": ["/etc/*"]}
    r = ctx.ward("show", "last", "--json")
    assert "filter" not in r.json() and r.json()["outputs"], "no limits: everything"


TREE_CODE = ("import subprocess, threading, os\n"
             "try:\n    open('/etc/shadow')\nexcept OSError:\n    pass\n"
             "t = threading.Thread(target=lambda: open('t.txt', 'w').close()); t.start(); t.join()\n"
             "subprocess.run(['uname', '-p'], check=True)\n"
             "subprocess.run(['/bin/sh', '-c', 'uname -r; exit 3'])\n")


def test_show_tree(ctx):
    prof = ctx.write("tree.json", json.dumps({
        "version": 1, "name": "tree", "extends": "default",
        "exec": {"allow": ["/usr/bin/uname", "/usr/bin/dash", "/bin/sh", "/usr/bin/sh"]}}))
    r = ctx.run(TREE_CODE, "--policy", prof)
    if r.code != 0:
        r = ctx.run(TREE_CODE.replace("subprocess.run(['/bin/sh', '-c', 'uname -r; exit 3'])\n", ""))
    assert r.code == 0, r
    rid = ctx.last_run()["id"]
    procs = ctx.sql("select * from processes where run_id=? order by serial", rid)
    counts = {c["s"]: c for c in ctx.sql(
        "select proc_serial s, count(*) n, sum(decision<>'allow') d from events"
        " where run_id=? group by proc_serial", rid)}
    thread = [p for p in procs if p["kind"] == "thread"][0]
    unames = [p for p in procs if p["exe"] == "/usr/bin/uname"]
    r = ctx.ward("show", "last", "--tree")
    assert r.code == 0, r
    out = r.stdout
    assert out.startswith(f"run       {rid}\n") and "status    ok with denials, exit 0; 1 denied\n" in out, out
    tree = out.split("process tree (", 1)[1].splitlines()[2:]
    total1 = counts[1]["n"] + counts.get(thread["serial"], {"n": 0})["n"]
    assert re.match(r"^\[1\] /usr/bin/python3 -c .* \.\.\.  \(/usr/bin/python3[.\d]*\)  "
                    rf"pid {procs[0]['pid']}( \(ns pid 2\))?, exit 0, {total1} events, 1 denied$",
                    tree[0]), tree
    tl = [l for l in tree if f"thread [{thread['serial']}] tid {thread['pid']}" in l]
    assert len(tl) == 1 and re.match("^(\u251c|\u2514)\u2500 thread", tl[0]), tree
    n_t = counts.get(thread["serial"], {"n": 0})["n"]
    assert tl[0].endswith(f", {n_t} event{'s' if n_t != 1 else ''}"), tl
    first_uname = [l for l in tree if f"[{unames[0]['serial']}] uname -p  (/usr/bin/uname)" in l]
    n_u = counts[unames[0]["serial"]]["n"]
    assert len(first_uname) == 1 and first_uname[0].endswith(
        f"pid {unames[0]['pid']}, exit 0, {n_u} events"), (first_uname, tree)
    assert first_uname[0].startswith(("\u251c\u2500\u2500 [", "\u2514\u2500\u2500 [")), first_uname
    assert tree.index(tl[0]) < tree.index(first_uname[0]), "threads before child processes"
    if len(unames) > 1:  # uname run by sh: a grandchild, indented under sh
        sh = [p for p in procs if p["serial"] == unames[1]["parent_serial"]][0]
        shl = [l for l in tree if re.search(rf"\[{sh['serial']}\] (/bin/sh|sh) ", l)]
        assert len(shl) == 1 and "exit 3" in shl[0], (shl, tree)
        gl = [l for l in tree if f"[{unames[1]['serial']}] uname -r" in l]
        assert len(gl) == 1 and gl[0].startswith("    \u2514\u2500\u2500 ["), (gl, tree)
        assert tree.index(shl[0]) < tree.index(gl[0])

    # JSON
    r = ctx.ward("show", "last", "--tree", "--json")
    assert r.code == 0, r
    j = r.json()
    assert j["run"]["id"] == rid and len(j["tree"]) == 1, j.get("tree")
    root = j["tree"][0]
    assert root["serial"] == 1 and root["kind"] == "process" and root["events"] == total1
    assert root["denied"] == 1 and root["exit_code"] == 0 and root["argv"][0] == "/usr/bin/python3"
    assert [t["serial"] for t in root["threads"]] == [thread["serial"]]
    assert root["threads"][0]["events"] == n_t and "children" not in root["threads"][0]
    kids = root["children"]
    assert kids[0]["exe"] == "/usr/bin/uname" and kids[0]["events"] == n_u, kids

    def all_nodes(ns):
        for n in ns:
            yield n
            yield from all_nodes(n.get("threads", []) + n.get("children", []))
    assert sorted(n["serial"] for n in all_nodes(j["tree"])) == [p["serial"] for p in procs]
    assert sum(n["events"] for n in all_nodes(j["tree"]) if n["kind"] == "thread") + \
        sum(n["events"] - sum(t["events"] for t in n["threads"])
            for n in all_nodes(j["tree"]) if n["kind"] == "process") == ctx.last_run()["events"]

    # with limits: what is counted
    r = ctx.ward("show", "last", "--tree", "--denied")
    assert r.code == 0, r
    assert "only denied, killed and would-be-denied calls" in r.stdout, r.stdout
    assert re.search(r"^\[1\] .* exit 0, 1 event, 1 denied$", r.stdout, re.M), r.stdout
    assert re.search(rf"\[{unames[0]['serial']}\] uname -p .* exit 0, 0 events$", r.stdout, re.M)
    r = ctx.ward("show", "last", "--tree", "--json", "--syscall", "execve")
    j = r.json()
    assert j["filter"] == {"syscalls": ["execve"]}
    execs = {c["s"]: c["n"] for c in ctx.sql(
        "select proc_serial s, count(*) n from events where run_id=? and syscall='execve'"
        " group by proc_serial", rid)}
    for n in all_nodes(j["tree"]):
        own = n["events"] - sum(t["events"] for t in n.get("threads", []))
        assert own == execs.get(n["serial"], 0), (n["serial"], own, execs)
    assert j["tree"][0]["children"][0]["events"] >= 1


def test_show_filter_errors_exit_125(ctx):
    assert ctx.run("print(1)").code == 0
    bad = [
        (["--pid", "abc"], "show: --pid: 'abc' is not a pid"),
        (["--pid", "0"], "--pid: '0' is not a pid"),
        (["--proc", "-1"], "--proc: '-1' is not a process serial"),
        (["--syscall", "open at"], "--syscall: 'open at' is not a syscall name"),
        (["--syscall", ","], "--syscall needs a syscall name"),
        (["--path", ""], "--path needs a pattern"),
        (["--summary", "--tree"], "--summary does not go with --tree"),
        (["--summary", "--pid", "1"], "--summary does not go with"),
        (["--tree", "--frob"], "unknown option '--frob'"),
        (["--path"], "--path needs a value"),
    ]
    for args, msg in bad:
        r = ctx.ward("show", "last", *args)
        assert r.code == 125 and r.stdout == "", (args, r)
        assert msg in r.stderr and r.stderr.startswith("ward: "), (args, msg, r)
    r = ctx.ward("show", "fedcba9876543210", "--tree")
    assert r.code == 125 and "no run matches 'fedcba9876543210'" in r.stderr, r
    junk = ctx.path("junk.db")
    with open(junk, "wb") as f:
        f.write(b"\0garbage" * 500)
    r = ctx.ward("show", "--db", junk, "last", "--tree", db=False)
    assert r.code == 125 and junk in r.stderr, r
    r = ctx.ward("show", "--help", db=False)
    for word in ("--path GLOB", "--pid N", "--proc N", "--tree", "fnmatch", "NAME[,NAME]",
                 '"filter"', "children"):
        assert word in r.stdout, word
