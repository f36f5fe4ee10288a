"""ward replay: a run's output written again from the record, byte for byte
and with its timing; decisions interleaved; sessions' cells; truncated
records; and its errors (exit 125 with a clear message)."""
import os
import re
import sqlite3
import subprocess
import time

import wardtest

# stdout and stderr with NULs, invalid UTF-8, a terminal escape, \r, and no
# final newline; interleaved chunks (each flushed)
TRICKY = (
    "import os, sys\n"
    "w = lambda fd, b: os.write(fd, b)\n"
    "w(1, b'first\\x00line\\xff\\xfe\\r\\n')\n"
    "w(2, b'err: \\x1b[31mred\\x1b[0m\\n')\n"
    "w(1, b'caf\\xc3\\xa9 \\xe2\\x80\\xae rtl \\xc3')\n"
    "w(2, b'no newline at the end')\n"
    "w(1, bytes(range(256)))\n"
    "w(1, b'last, no newline')\n")
TRICKY_OUT = (b"first\x00line\xff\xfe\r\ncaf\xc3\xa9 \xe2\x80\xae rtl \xc3" + bytes(range(256)) +
              b"last, no newline")
TRICKY_ERR = b"err: \x1b[31mred\x1b[0m\nno newline at the end"


def replay(ctx, *args, timeout=60):
    """ward replay --db DB ARGS, bytes in and out."""
    return ctx.ward("replay", "--db", ctx.db, *args, text=False, timeout=timeout)


def _record(ctx, run_id, stream):
    rows = ctx.sql("select data from outputs where run_id=? and stream=? order by seq",
                   run_id, stream)
    return b"".join(bytes(r["data"]) for r in rows)


def test_replay_is_byte_identical(ctx):
    r = ctx.run(TRICKY, text=False)
    assert r.code == 0, r
    assert r.stdout == TRICKY_OUT, r.stdout
    run_id = ctx.last_run()["id"]
    assert _record(ctx, run_id, "stdout") == TRICKY_OUT
    for args in (["last", "--instant"], [run_id[:6], "--speed", "50"]):
        p = replay(ctx, *args)
        assert p.code == 0, p
        assert p.stdout == TRICKY_OUT, p.stdout
        assert p.stderr == TRICKY_ERR, p.stderr
    p = replay(ctx, "last", "--instant", "--stream", "stdout")
    assert p.code == 0 and p.stdout == TRICKY_OUT and p.stderr == b"", p
    p = replay(ctx, "last", "--instant", "--stream", "stderr")
    assert p.code == 0 and p.stdout == b"" and p.stderr == TRICKY_ERR, p
    # --escape: the same text, made safe for a terminal
    p = replay(ctx, "last", "--instant", "--escape", "--stream", "stdout")
    assert p.code == 0, p
    assert p.stdout.startswith(b"first\\x00line\\xff\\xfe\\r\n"), p.stdout
    assert b"\\u{202e}" in p.stdout and b"\x1b" not in p.stdout and b"\x00" not in p.stdout


SLEEPY = ("import sys, time\n"
          "print('before', flush=True)\n"
          "time.sleep(1)\n"
          "print('after', flush=True)\n"
          "print('to stderr', file=sys.stderr, flush=True)\n")


def _schedule(p):
    lines = p.stdout.decode().splitlines()
    return [(float(l.split()[0]), l.split(None, 1)[1]) for l in lines]


def test_replay_keeps_the_timing(ctx):
    assert ctx.run(SLEEPY).code == 0
    run = ctx.last_run()
    outs = ctx.sql("select ts_ns, stream, length(data) n from outputs where run_id=? order by seq",
                   run["id"])
    assert len(outs) == 3, outs
    # the schedule: deterministic, from the recorded times
    p = replay(ctx, "last", "--timeline")
    assert p.code == 0, p
    sched = _schedule(p)
    assert [s[1] for s in sched] == ["stdout 7", "stdout 6", "stderr 10"], sched
    want = [(o["ts_ns"] - run["started_ns"]) / 1e9 for o in outs]
    assert all(abs(a - b) < 2e-6 for a, (b, _) in zip(want, sched)), (want, sched)
    assert sched[1][0] - sched[0][0] >= 0.95, sched
    fast = _schedule(replay(ctx, "last", "--timeline", "--speed", "4"))
    assert all(abs(f[0] - s[0] / 4) < 2e-6 for f, s in zip(fast, sched)), (fast, sched)
    capped = _schedule(replay(ctx, "last", "--timeline", "--max-pause", "0.1"))
    assert capped[1][0] - capped[0][0] <= 0.1 + 1e-6, capped
    assert capped[0][0] == min(sched[0][0], 0.1) or capped[0][0] <= 0.1 + 1e-6, capped
    # and for real (wide margins)
    t = time.monotonic()
    p = replay(ctx, "last", "--speed", "1")
    took1 = time.monotonic() - t
    assert p.code == 0 and p.stdout == b"before\nafter\n" and p.stderr == b"to stderr\n", p
    assert took1 >= 0.7, took1
    t = time.monotonic()
    p = replay(ctx, "last", "--instant")
    took = time.monotonic() - t
    assert p.code == 0 and p.stdout == b"before\nafter\n", p
    # < 0.5 s; on a loaded machine (or under ASan) at least 0.6 s less than
    # the real-time replay, whose start costs the same
    assert took < max(0.5, took1 - 0.6), (took, took1)
    t = time.monotonic()
    p = replay(ctx, "last", "--speed", "10")
    assert p.code == 0 and p.stdout == b"before\nafter\n", p
    took10 = time.monotonic() - t
    assert took10 < max(0.7, took1 - 0.5), (took10, took1)


DENYING = ("import os, sys\n"
           "print('before', flush=True)\n"
           "os.write(2, b'partial')\n"
           "try:\n    open('/etc/shadow')\nexcept OSError:\n    pass\n"
           "print('after', flush=True)\n")

DENIED_LINE = re.compile(
    r"^ward \+\d+\.\d{6} \[1\] \u2717 DENIED openat /etc/shadow -> EACCES "
    r"\(rule secret-shadow: .+\)$")


def test_replay_interleaves_decisions(ctx):
    assert ctx.run(DENYING).code == 0
    run = ctx.last_run()
    p = replay(ctx, "last", "--instant", "--decisions", "--color", "never")
    assert p.code == 0, p
    assert p.stdout == b"before\nafter\n", "stdout stays the code's own"
    err = p.stderr.decode().splitlines()
    # the denial where it happened: after "before"'s decisions, and on a
    # line of its own after the code's "partial"
    assert err.count("partial") == 1, err
    i = err.index("partial")
    denied = [l for l in err if "DENIED" in l]
    assert len(denied) == 1 and DENIED_LINE.match(denied[0]), denied
    assert err.index(denied[0]) > i, err
    allowed = [l for l in err if re.match(r"^ward \+\d+\.\d{6} \[\d+\]   allow  \S+", l)]
    n_allow = ctx.sql("select count(*) n from events where run_id=? and decision='allow'",
                      run["id"])[0]["n"]
    assert len(allowed) == n_allow and n_allow > 5, (len(allowed), n_allow)
    assert "\x1b" not in p.stderr.decode(), "no colour unless asked or on a terminal"
    # decisions in time order, with the output: stamps never go back
    stamps = [float(l.split()[1]) for l in err if l.startswith("ward +")]
    assert stamps == sorted(stamps), stamps

    # --denied: only the denial
    p = replay(ctx, "last", "--instant", "--denied", "--color", "never")
    assert p.code == 0 and p.stdout == b"before\nafter\n", p
    lines = p.stderr.decode().splitlines()
    assert lines == ["partial", denied[0]], lines

    # --color always: the marker in red, the line reset
    p = replay(ctx, "last", "--instant", "--denied", "--color", "always")
    assert "\x1b[1;31mward +" in p.stderr.decode() and "\u2717 DENIED" in p.stderr.decode(), p
    assert p.stderr.decode().rstrip("\n").endswith("\x1b[0m"), p

    # --decisions-to FILE: stderr is the code's alone
    f = ctx.path("decisions.txt")
    p = replay(ctx, "last", "--instant", "--decisions", "--decisions-to", f)
    assert p.code == 0 and p.stdout == b"before\nafter\n" and p.stderr == b"partial", p
    with open(f, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert len([l for l in lines if DENIED_LINE.match(l)]) == 1, lines
    assert len(lines) == n_allow + 1 and all(l.startswith("ward +") for l in lines), lines

    # the schedule lists decisions too
    p = replay(ctx, "last", "--timeline", "--denied")
    assert p.code == 0, p
    assert [l.split(None, 1)[1] for l in p.stdout.decode().splitlines()] == \
        ["stdout 7", "stderr 7", "decision deny openat /etc/shadow", "stdout 6"], p.stdout


def test_replay_of_a_truncated_record(ctx):
    code = ("import os, sys\n"
            "for i in range(200):\n    os.write(1, b'%05d' % i + b'x' * 95)\n"
            "os.write(2, b'E' * 5000)\n")
    r = ctx.run(code, "--max-output", "1000", text=False)
    assert r.code == 0, r
    run = ctx.last_run()
    assert run["stdout_truncated"] == 1 and run["stdout_bytes"] == 20000, run
    kept = _record(ctx, run["id"], "stdout")
    kept_err = _record(ctx, run["id"], "stderr")
    assert 0 < len(kept) < 20000 and kept == b"".join(
        b"%05d" % i + b"x" * 95 for i in range(200))[:len(kept)]
    p = replay(ctx, "last", "--instant")
    assert p.code == 0, p
    assert p.stdout == kept, "exactly what was kept"
    assert p.stderr.startswith(kept_err), p.stderr[:100]
    notes = p.stderr[len(kept_err):].decode()
    assert notes.startswith("\n"), "a note starts on its own line"
    assert (f"ward: replay: the record of stdout was truncated (ward run --max-output): "
            f"{len(kept)} of 20000 bytes kept, {20000 - len(kept)} bytes not kept") in notes, notes
    assert f"{len(kept_err)} of 5000 bytes kept, {5000 - len(kept_err)} bytes not kept" in notes
    p = replay(ctx, "last", "--instant", "-q")
    assert p.code == 0 and p.stderr == kept_err, p
    p = replay(ctx, "last", "--instant", "--stream", "stdout")
    assert b"stderr" not in p.stderr and b"of 20000 bytes kept" in p.stderr, p


def test_replay_of_a_session_cell(ctx):
    from test_serve import Serve
    s = Serve(ctx)
    sid = s.create()
    assert s.run(sid, "print('one')")["status"] == "ok"
    assert s.run(sid, "import time, sys\nprint('two', flush=True)\ntime.sleep(0.3)\n"
                      "sys.stdout.write('three')")["status"] == "ok"
    assert s.run(sid, "print('four')")["status"] == "ok"
    assert s.close() == 0
    run_id = ctx.last_run()["id"]
    p = replay(ctx, run_id, "--instant", "--cell", "2")
    assert p.code == 0 and p.stdout == b"two\nthree" and p.stderr == b"", p
    p = replay(ctx, run_id, "--instant")
    assert p.code == 0 and p.stdout == b"one\ntwo\nthreefour\n", p
    # the cell's own clock: its first chunk comes soon after its start
    sched = _schedule(replay(ctx, run_id, "--timeline", "--cell", "2"))
    assert [x[1] for x in sched] == ["stdout 4", "stdout 5"], sched
    assert sched[0][0] < 0.3 and sched[1][0] - sched[0][0] >= 0.25, sched
    # with decisions: where each cell starts and ends, in order
    p = replay(ctx, run_id, "--instant", "--denied", "--color", "never")
    assert p.code == 0 and p.stdout == b"one\ntwo\nthreefour\n", p
    marks = [re.sub(r"^ward \+\d+\.\d{6} ", "", l) for l in p.stderr.decode().splitlines()]
    assert marks == [">> cell 1: print('one')", "<< cell 1: ok",
                     ">> cell 2: import time, sys ...", "<< cell 2: ok",
                     ">> cell 3: print('four')", "<< cell 3: ok"], marks
    p = replay(ctx, run_id, "--timeline", "--decisions", "--cell", "2")
    lines = [l.split(None, 1)[1] for l in p.stdout.decode().splitlines()]
    assert lines[0] == "cell 2 start" and lines[-1] == "cell 2 end ok", lines
    assert "stdout 4" in lines and "stdout 5" in lines, lines
    assert p.stdout.decode().splitlines()[0].startswith("0.000000 "), p.stdout
    p = replay(ctx, run_id, "--instant", "--cell", "9")
    assert p.code == 125, p
    assert f"ward: replay: run {run_id} has no cell 9 (its cells are 1 to 3)" in p.stderr.decode()
    # a run that is not a session
    assert ctx.run("print(1)").code == 0
    p = replay(ctx, "last", "--cell", "1")
    assert p.code == 125 and b"has no cells: --cell is for the sessions" in p.stderr, p


def test_replay_errors_exit_125(ctx):
    missing = ctx.path("none", "audit.db")
    p = ctx.ward("replay", "--db", missing, "last", text=False)
    assert p.code == 125 and b"no audit database at" in p.stderr, p
    assert not os.path.exists(ctx.path("none"))
    assert ctx.run("print('x')").code == 0
    p = replay(ctx, "0123456789abcdef")
    assert p.code == 125, p
    assert f"ward: no run matches '0123456789abcdef' in {ctx.db}".encode() in p.stderr, p
    p = replay(ctx, "not-an-id")
    assert p.code == 125 and b"no run matches 'not-an-id'" in p.stderr, p
    bad = [
        (["last", "--speed", "0"], "--speed: '0' is not a speed"),
        (["last", "--speed", "fast"], "--speed: 'fast' is not a speed"),
        (["last", "--speed", "-2"], "is not a speed"),
        (["last", "--speed", "nan"], "is not a speed"),
        (["last", "--instant", "--speed", "2"], "--instant and --speed exclude each other"),
        (["last", "--stream", "both"], "--stream: 'both' is not stdout or stderr"),
        (["last", "--cell", "0"], "--cell: '0' is not a cell number"),
        (["last", "--cell", "x"], "is not a cell number"),
        (["last", "--max-pause", "-1"], "is not a number of seconds"),
        (["last", "--color", "sometimes"], "is not auto, always or never"),
        (["last", "--decisions-to", ctx.path("d.txt")], "--decisions-to needs --decisions"),
        (["last", "--decisions", "--decisions-to", ctx.path("no", "such", "dir")],
         "--decisions-to: cannot write"),
        (["last", "--frobnicate"], "unknown option '--frobnicate'"),
        (["last", "--speed"], "--speed needs a value"),
        ([], "which run?"),
        (["last", "extra"], "unexpected argument 'extra'"),
    ]
    for args, msg in bad:
        p = replay(ctx, *args)
        assert p.code == 125, (args, p)
        assert p.stdout == b"", (args, p)
        assert ("ward: " in p.stderr.decode()) and msg in p.stderr.decode(), (args, msg, p)
    # a foreign database, and one that is not a database at all
    foreign = ctx.path("foreign.db")
    con = sqlite3.connect(foreign)
    con.execute("create table t(x)")
    con.close()
    p = ctx.ward("replay", "--db", foreign, "last", text=False)
    assert p.code == 125 and b"not a ward audit database" in p.stderr, p
    junk = ctx.path("junk.db")
    with open(junk, "wb") as f:
        f.write(b"this is not sqlite\n" * 200)
    p = ctx.ward("replay", "--db", junk, "last", text=False)
    assert p.code == 125 and junk.encode() in p.stderr, p
    # a run with no end recorded: replayed, with a note
    con = sqlite3.connect(ctx.db)
    with con:
        con.execute("insert into runs(id, started_ns, status) values ('abcdef0000000001', 1, 'running')")
    con.close()
    p = replay(ctx, "abcdef", "--instant")
    assert p.code == 0 and p.stdout == b"", p
    assert b"run abcdef0000000001 has no end recorded (still running, or its ward died)" in p.stderr


def test_replay_help(ctx):
    p = ctx.ward("replay", "--help", db=False)
    assert p.code == 0, p
    for word in ("RUN", "last", "--db", "--speed N", "--instant", "--max-pause", "--stream",
                 "--cell N", "--decisions", "--denied", "--decisions-to", "--color",
                 "--escape", "--timeline", "\u2717 DENIED", "byte for", "truncated",
                 "exit status", "125"):
        assert word in p.stdout, word
    p = ctx.ward("--help", db=False)
    assert "replay" in p.stdout, p


def test_replay_marks_what_audit_mode_would_deny(ctx):
    r = ctx.run("try:\n    open('/etc/shadow')\nexcept OSError:\n    pass\nprint('end')",
                "--profile", "audit")
    assert r.code == 0, r
    assert ctx.sql("select count(*) n from events where run_id=? and would_deny",
                   ctx.last_run()["id"])[0]["n"] >= 1
    p = replay(ctx, "last", "--instant", "--denied", "--color", "always")
    assert p.code == 0 and p.stdout == b"end\n", p
    lines = p.stderr.decode().splitlines()
    shadow = [l for l in lines if "/etc/shadow" in l]
    assert len(shadow) == 1, lines
    assert shadow[0].startswith("\x1b[33mward +") and "[1] ? would deny openat /etc/shadow" in shadow[0] and " (rule " in shadow[0], shadow
    assert "DENIED" not in p.stderr.decode(), "allowed in audit mode: not marked as stopped"
