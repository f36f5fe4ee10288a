"""ward run: the command itself - arguments, exit status, environment,
workdir, --json, and ward's own errors (exit 125, clear message)."""
import json
import os
import stat

import wardtest
from wardtest import PYTHON


def test_hello_passes_output_and_exit_status(ctx):
    r = ctx.run("import sys; print('hello'); sys.stderr.write('warn\\n'); sys.exit(3)")
    assert r.code == 3, r
    assert r.stdout == "hello\n", r
    assert "warn\n" in r.stderr, r
    run = ctx.last_run()
    assert run["status"] == "error" and run["exit_code"] == 3, run


def test_file_and_stdin_and_script_args(ctx):
    p = ctx.write("prog.py", "import sys\nprint(sys.argv[1:], __file__.split('/')[-1])\n")
    r = ctx.ward("run", p, "--", "a", "b c")
    assert r.code == 0, r
    assert r.stdout == "['a', 'b c'] prog.py\n", r
    r = ctx.ward("run", "-", stdin="print(6*7)\n")
    assert r.code == 0 and r.stdout == "42\n", r
    run = ctx.last_run()
    assert run["code"] in (b"print(6*7)\n", "print(6*7)\n"), run["code"]
    assert run["code_name"] == "-"


def test_json_result_shape(ctx):
    r, j = ctx.run_json("print('out'); import sys; sys.stderr.write('err')")
    assert r.code == 0, r
    for k in ("run_id", "exit_code", "signal", "status", "timed_out", "duration_ms",
              "stdout", "stderr", "stdout_truncated", "stderr_truncated", "denials", "db"):
        assert k in j, (k, j)
    assert j["stdout"] == "out\n" and j["stderr"] == "err", j
    assert j["status"] == "ok" and j["exit_code"] == 0 and j["timed_out"] is False
    assert j["denials"] == [] and j["db"] == ctx.db
    assert ctx.last_run()["id"] == j["run_id"]


def test_environment_is_built_not_inherited(ctx):
    env = dict(os.environ, OPENAI_API_KEY="sk-secret-should-not-leak", KEEP_ME="yes")
    code = "import os, json; print(json.dumps(dict(os.environ)))"
    r = ctx.run(code, "--env", "KEEP_ME", "--env", "SET_ME=1", env=env)
    assert r.code == 0, r
    e = json.loads(r.stdout)
    assert "OPENAI_API_KEY" not in e, e
    assert e["KEEP_ME"] == "yes" and e["SET_ME"] == "1", e
    assert e["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert e["LANG"] == "C.UTF-8"
    # the code sees its workdir at /home/user, never the host's path
    assert ctx.last_run()["workdir"] == wardtest.HOME
    assert e["HOME"] == wardtest.HOME and e["TMPDIR"] == wardtest.HOME + "/tmp", e
    wd = ctx.host_workdir()
    assert wd.startswith("/tmp/ward-") and wd not in r.stdout, (wd, r.stdout)
    assert not os.path.exists(wd), "temporary workdir must be removed"


def test_workdir_keep_and_given(ctx):
    # by default the temporary workdir is gone when ward exits (removed
    # while the run's end is committed), its files recorded as artifacts
    r = ctx.run("import os; os.makedirs('a/b'); open('a/b/f.txt','w').write('x' * 5000)")
    assert r.code == 0, r
    run = ctx.last_run()
    assert run["workdir"] == wardtest.HOME
    assert not os.path.exists(ctx.host_workdir(run)), ctx.host_workdir(run)
    arts = ctx.sql("select path, size from artifacts where run_id=?", run["id"])
    assert [(a["path"], a["size"]) for a in arts] == [("a/b/f.txt", 5000)], arts
    r = ctx.run("open('made.txt','w').write('x')", "--keep")
    assert r.code == 0, r
    wd = ctx.host_workdir()
    try:
        assert os.path.exists(os.path.join(wd, "made.txt"))
        assert "workdir kept: " + wd in r.stderr, r.stderr
    finally:
        import shutil
        shutil.rmtree(wd, ignore_errors=True)
    given = ctx.path("wd")
    r = ctx.run("open('made.txt','w').write('y')", "--workdir", given)
    assert r.code == 0, r
    assert open(os.path.join(given, "made.txt")).read() == "y"


def test_runs_as_unprivileged_user_when_root(ctx):
    r = ctx.run("import os; print(os.getuid(), os.getgid(), os.geteuid())")
    assert r.code == 0, r
    if os.geteuid() == 0:
        assert r.stdout.split() == ["65534", "65534", "65534"], r
        assert ctx.last_run()["uid"] == 65534
    else:
        assert r.stdout.split()[0] == str(os.getuid())


def test_no_capabilities_no_new_privs_and_session(ctx):
    code = ("import os\n"
            "st = dict(l.split(':\\t',1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\n"
            "print(st['CapEff'].strip(), st['CapBnd'].strip(), st['NoNewPrivs'].strip(), st['Seccomp'].strip())\n"
            "print(os.getsid(0) == os.getpid())\n"
            "print(sorted(os.listdir('/proc/self/fd')))\n")
    r = ctx.run(code)
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    capeff, capbnd, nnp, seccomp = lines[0].split()
    assert int(capeff, 16) == 0 and nnp == "1" and seccomp == "2", lines
    if os.geteuid() == 0:
        assert int(capbnd, 16) == 0, lines
    assert lines[1] == "True", "the code runs in its own session"
    # 0, 1, 2 and the fd listdir itself opened: nothing of ward's leaks
    assert eval(lines[2]) == ["0", "1", "2", "3"], lines[2]


def test_bad_arguments_exit_125(ctx):
    for args in (["run"], ["run", "--lang", "cobol", "-c", "1"], ["run", "--timeout", "x", "-c", "1"],
                 ["run", "--memory", "12Q", "-c", "1"], ["run", "--nope", "-c", "1"], ["frobnicate"],
                 ["run", "--spin-us", "-1", "-c", "1"], ["run", "--spin-us", "x", "-c", "1"]):
        r = ctx.ward(*args)
        assert r.code == 125, (args, r)
        assert r.stderr.startswith("ward: "), (args, r)


def test_missing_file_and_profile_exit_125(ctx):
    r = ctx.ward("run", ctx.path("nope.py"))
    assert r.code == 125 and "nope.py" in r.stderr, r
    r = ctx.ward("run", "--profile", "nope", "-c", "1")
    assert r.code == 125 and "default" in r.stderr, r


def test_bad_policy_stops_before_running(ctx):
    marker = ctx.path("ran")
    pol = ctx.write("bad.json", '{\n  "version": 1,\n  "fs": [\n    {"path": "relative", "allow": ["read"]}\n  ]\n}\n')
    r = ctx.run(f"open({marker!r},'w')", "--policy", pol)
    assert r.code == 125, r
    assert "bad.json:4:" in r.stderr and "fs[0].path" in r.stderr, r
    assert not os.path.exists(marker)
    assert not os.path.exists(ctx.db) or not ctx.sql("select * from runs")


def test_unusable_database_means_no_run(ctx):
    # The sandbox is set up while the record is begun; the code's execve
    # waits for the record. The marker is where the code could write it
    # (its workdir), so only not running keeps it away.
    wd = ctx.path("wd")
    marker = os.path.join(wd, "ran")
    os.mkdir(ctx.path("ro"))
    bad = ctx.path("ro", "sub", "audit.db")
    os.chmod(ctx.path("ro"), 0o500)
    try:
        code = f"open({marker!r},'w')"
        if os.geteuid() == 0:
            bad = ctx.write("notadb", "this is not sqlite " * 100)
        import glob
        before = set(glob.glob("/tmp/ward-*"))
        r = ctx.ward("run", "--db", bad, "--workdir", wd, "-c", code, db=False)
        assert r.code == 125, r
        assert set(glob.glob("/tmp/ward-*")) <= before, "no workdir left behind"
        assert "audit" in r.stderr and bad in r.stderr, r
        assert not os.path.exists(marker), "the code must not run without a record"
    finally:
        os.chmod(ctx.path("ro"), 0o700)


def test_locked_database_means_no_run(ctx):
    """The record fails late (the database stays locked past ward's busy
    timeout) while the sandbox is already set up: the code's execve
    waits for the record, so the code never runs, and nothing is left.
    ward-faults (the same ward with the fault VFS, no fault given) waits
    2 s instead of build/ward's 10 (WARD_FAULT_BUSY_MS)."""
    import sqlite3
    import glob
    ctx.ward("run", "-c", "pass")  # the database exists, with its schema
    wd = ctx.path("wd")
    marker = os.path.join(wd, "ran")
    code = f"open({marker!r},'w').write('x')"
    lock = sqlite3.connect(ctx.db, isolation_level=None, timeout=1)
    try:
        lock.execute("BEGIN EXCLUSIVE")
        before = ctx.sql("select count(*) as n from runs")[0]["n"]
        faults = os.path.join(os.path.dirname(wardtest.ward_bin()), "ward-faults")
        r = ctx.ward("run", "--workdir", wd, "-c", code, timeout=60, binary=faults,
                     env=dict(os.environ, WARD_FAULT_BUSY_MS="2000"))
        assert r.code == 125, r
        assert "locked" in r.stderr and ctx.db in r.stderr, r
        assert not os.path.exists(marker), "the code ran without a record"
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    assert ctx.sql("select count(*) as n from runs")[0]["n"] == before
    for p in glob.glob("/proc/[0-9]*/cwd"):  # nothing of the run is left
        try:
            assert os.readlink(p) != wd, f"{p}: a process of the run is left"
        except OSError:
            pass


def test_policy_rule_on_read_sees_only_the_codes_reads(ctx):
    """ward's own set-up in the child reads its go byte before the filters
    are loaded: a policy rule on read or close never sees ward's calls, so
    the first event of the run is still the interpreter's execve."""
    pol = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..",
                                      "profiles", "default.json")))
    pol["syscalls"] = [{"name": "read", "action": "log"},
                       {"name": "close", "action": "log"}]
    pf = ctx.write("readlog.json", json.dumps(pol))
    r = ctx.run("print('ok')", "--policy", pf)
    assert r.code == 0 and r.stdout == "ok\n", r
    run = ctx.last_run()
    evs = ctx.sql("select syscall from events where run_id=? order by seq", run["id"])
    assert evs and evs[0]["syscall"] == "execve", evs[:5]
    assert any(e["syscall"] == "read" for e in evs), "the code's reads are logged"


def test_filter_built_in_unless_the_policy_names_syscalls(ctx):
    """A policy without raw syscall rules gets the program compiled when
    ward was built (no compile at each run); one with them gets its own,
    and its rule takes effect."""
    r = ctx.run("print('ok')", "-v")
    assert r.code == 0 and r.stdout == "ok\n", r
    assert "instructions, built in)" in r.stderr, r.stderr
    pol = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..",
                                      "profiles", "default.json")))
    pol["syscalls"] = [{"name": "getuid", "action": "log"}]
    pf = ctx.write("uidlog.json", json.dumps(pol))
    r = ctx.run("import os; print(os.getuid() >= 0)", "-v", "--policy", pf)
    assert r.code == 0 and r.stdout == "True\n", r
    assert "instructions, compiled for this policy)" in r.stderr, r.stderr
    run = ctx.last_run()
    evs = ctx.sql("select syscall from events where run_id=? and"
                  " syscall='getuid'", run["id"])
    assert evs, "the getuid rule stops the call at ward"

def test_database_default_location_and_mode(ctx):
    state = ctx.path("state")
    env = dict(os.environ, XDG_STATE_HOME=state)
    env.pop("WARD_DB", None)
    r = ctx.ward("run", "-c", "print(1)", env=env, db=False)
    assert r.code == 0, r
    db = os.path.join(state, "ward", "audit.db")
    assert os.path.exists(db), r
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    env["WARD_DB"] = ctx.path("other.db")
    r = ctx.ward("run", "-c", "print(1)", env=env, db=False)
    assert r.code == 0 and os.path.exists(ctx.path("other.db")), r


def test_help_says_everything(ctx):
    r = ctx.ward("--help")
    assert r.code == 0 and "run" in r.stdout and "show" in r.stdout
    r = ctx.ward("run", "--help")
    assert r.code == 0
    for opt in ("--lang", "--profile", "--policy", "--db", "--workdir", "--keep", "--timeout",
                "--cpu", "--memory", "--max-procs", "--max-output", "--json", "--quiet", "--env",
                "--spin-us", "--pin-cpu", "--memory-cgroup", "--no-cgroup", "--input"):
        assert opt in r.stdout, opt


def test_unprivileged_ward(ctx):
    """ward run by an ordinary user: same supervision, the code keeps that uid."""
    import shutil
    import subprocess
    from wardtest import Skip, ward_bin
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
    if os.geteuid() != 0 or not setpriv:
        raise Skip("needs root (to become an ordinary user) and setpriv")
    home = ctx.path("home")
    os.mkdir(home)
    os.chown(home, 65534, 65534)
    os.chmod(ctx.tmp, 0o755)
    db = os.path.join(home, "audit.db")
    code = ("import os\nprint(os.getuid())\n"
            "try:\n open('/etc/shadow')\nexcept PermissionError as e:\n print('errno', e.errno)\n")
    p = subprocess.run([setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups",
                        "env", "HOME=" + home, ward_bin(), "run", "--db", db, "-c", code],
                       capture_output=True, text=True, timeout=60, cwd=home)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout == "65534\nerrno 13\n", (p.stdout, p.stderr)
    con = __import__("sqlite3").connect(db)
    try:
        rows = con.execute("select target, decision from events where decision='deny'").fetchall()
    finally:
        con.close()
    assert rows == [("/etc/shadow", "deny")], rows


def test_spin_off_same_result(ctx):
    code = "import os\nfor i in range(50): os.stat('/usr')\nopen('f', 'w').write('x')\nprint(open('f').read())"
    for spin in ("0", "100"):
        r = ctx.run(code, "--spin-us", spin)
        assert r.code == 0 and r.stdout == "x\n", (spin, r)


# ---- output: the live stream, the record and --json (issue 23, section 1) ----

# 3 MiB on stdout in writes of 64 KiB, 2 KiB on stderr, in one write each
# (the numbers make every byte's place checkable)
FLOOD = ("import os\n"
         "data = b''.join(b'%07d\\n' % i for i in range(3 << 17))\n"
         "for i in range(0, len(data), 65536): os.write(1, data[i:i + 65536])\n"
         "os.write(2, b'E' * 2047 + b'\\n')\n")
FLOOD_OUT = b"".join(b"%07d\n" % i for i in range(3 << 17))


def _recorded(ctx, run_id, stream):
    return b"".join(r["data"] for r in ctx.sql(
        "select data from outputs where run_id=? and stream=? order by seq", run_id, stream))


def test_max_output_bounds_the_record_not_the_live_output(ctx):
    import hashlib
    assert len(FLOOD_OUT) == 3 << 20
    r = ctx.run(FLOOD, "--max-output", "1M", text=False)
    assert r.code == 0, r
    # the live user gets every byte the code wrote
    assert len(r.stdout) == len(FLOOD_OUT), len(r.stdout)
    assert hashlib.sha256(r.stdout).hexdigest() == hashlib.sha256(FLOOD_OUT).hexdigest()
    assert b"E" * 2047 + b"\n" in r.stderr, r
    assert (b"ward: stdout passed the run's output limit of 1048576 bytes; the rest is "
            b"passed on and counted, not recorded") in r.stderr, r.stderr[-500:]
    # the record keeps the bounded prefix and counts it all
    run = ctx.last_run()
    assert run["stdout_bytes"] == 3 << 20 and run["stdout_truncated"] == 1, run
    assert run["stderr_bytes"] == 2048 and run["stderr_truncated"] == 0, run
    assert _recorded(ctx, run["id"], "stdout") == FLOOD_OUT[:1 << 20]
    # --json: its stdout is the record's (bounded), its counts all, and it
    # says the record was truncated
    r, j = ctx.run_json(FLOOD, "--max-output", "1M")
    assert r.code == 0, r
    assert j["stdout"].encode() == FLOOD_OUT[:1 << 20], len(j["stdout"])
    assert j["stdout_bytes"] == 3 << 20 and j["stdout_truncated"] is True, j["stdout_bytes"]
    assert j["stderr"] == "E" * 2047 + "\n" and j["stderr_truncated"] is False
    assert _recorded(ctx, j["run_id"], "stdout").decode() == j["stdout"]


def test_json_gives_bytes_that_are_not_utf8_exactly(ctx):
    import base64
    code = ("import os\n"
            "os.write(1, b'bin \\xff\\xfe\\x00 \\xc3( \\xe2\\x82 end\\n')\n"
            "os.write(2, b'caf\\xc3\\xa9 ok\\n')\n")
    r, j = ctx.run_json(code)
    assert r.code == 0, r
    want = b"bin \xff\xfe\x00 \xc3( \xe2\x82 end\n"
    # the bytes, exactly, beside the text as before (U+FFFD for each bad byte)
    assert base64.b64decode(j["stdout_base64"], validate=True) == want, j
    t = j["stdout"]
    assert t.startswith("bin \ufffd\ufffd\x00 \ufffd( \ufffd") and t.endswith(" end\n"), t
    assert j["stdout_bytes"] == len(want)
    # valid UTF-8 has its text only
    assert j["stderr"] == "caf\u00e9 ok\n" and "stderr_base64" not in j, j
    # with no output at all, neither
    r, j = ctx.run_json("pass")
    assert j["stdout"] == "" and "stdout_base64" not in j and "stderr_base64" not in j, j
    # a record cut by --max-output in the middle of a character: the kept
    # bytes are not UTF-8, and they come exactly
    r, j = ctx.run_json("import os; os.write(1, b'ab' + '\u00e9'.encode() * 4)",
                        "--max-output", "3")
    assert j["stdout_truncated"] is True and j["stdout_bytes"] == 10, j
    assert base64.b64decode(j["stdout_base64"]) == b"ab\xc3", j
    assert j["stdout"] == "ab\ufffd", j
    r = ctx.ward("run", "--help")
    assert "stdout_base64" in r.stdout, r.stdout


def test_recorded_stderr_is_only_the_codes_bytes(ctx):
    # ward's denial lines go to ward's stderr, where the code's stderr
    # passes through: the live user sees both, the record only the code's
    code = ("import os\n"
            "for i in range(3):\n"
            "    os.write(2, b'before %d \\xff\\n' % i)\n"
            "    try: open('/etc/shadow')\n"
            "    except OSError: pass\n"
            "    os.write(2, b'after %d\\n' % i)\n"
            "os.write(1, b'out\\n')\n")
    want = b"".join(b"before %d \xff\nafter %d\n" % (i, i) for i in range(3))
    r = ctx.run(code, text=False)
    assert r.code == 0, r
    run = ctx.last_run()
    assert run["denials"] == 3, run
    ward_lines = [l for l in r.stderr.split(b"\n") if l.startswith(b"ward: ")]
    assert len(ward_lines) == 3 and all(b"ward: deny openat /etc/shadow" in l
                                        for l in ward_lines), r.stderr
    assert _recorded(ctx, run["id"], "stderr") == want
    assert run["stderr_bytes"] == len(want) and run["stderr_truncated"] == 0, run
    # live, ward's lines come whole, between the code's writes: taking them
    # out leaves the code's bytes as it wrote them
    live = b"".join(l + b"\n" for l in r.stderr.split(b"\n")[:-1] if not l.startswith(b"ward: "))
    assert live == want, r.stderr
    # and past the output limit, ward's notice is not in the record either
    r = ctx.run(code, "--max-output", "20", text=False)
    assert r.code == 0 and b"ward: stderr passed the run's output limit" in r.stderr, r
    run = ctx.last_run()
    assert _recorded(ctx, run["id"], "stderr") == want[:20], run
    assert run["stderr_bytes"] == len(want) and run["stderr_truncated"] == 1, run


def test_stdin_file_and_tag(ctx):
    data = ctx.write("in.txt", "line one\nline two\n")
    r = ctx.run("import sys; print(sys.stdin.read().upper(), end='')",
                "--stdin", data, "--tag", "mine:1")
    assert r.code == 0 and r.stdout == "LINE ONE\nLINE TWO\n", r
    argv = json.loads(ctx.last_run()["argv"])
    assert argv[argv.index("--tag") + 1] == "mine:1", argv
    # without --stdin the code reads nothing
    r = ctx.run("import sys; print(repr(sys.stdin.read()))")
    assert r.code == 0 and r.stdout == "''\n", r
    # the code cannot reach the file by its name through /dev/stdin
    r = ctx.run("print(open('/dev/stdin').read())", "--stdin", data)
    assert r.code == 1 and "line one" not in r.stdout, r
    runs = len(ctx.sql("select id from runs"))
    r = ctx.run("print(1)", "--stdin", ctx.path("missing.txt"))
    assert r.code == 125 and "--stdin" in r.stderr and "missing.txt" in r.stderr, r
    assert len(ctx.sql("select id from runs")) == runs
