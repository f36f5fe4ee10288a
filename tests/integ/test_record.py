"""What the audit database holds after a run: the run, every process, every
decided syscall with its rule, every byte of output with a timestamp."""
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess

import wardtest


def test_run_row_describes_the_run(ctx):
    code = "print('hi')"
    r = ctx.run(code)
    assert r.code == 0, r
    run = ctx.last_run()
    assert run["status"] == "ok" and run["exit_code"] == 0 and run["signal"] in (0, None)
    assert run["code_sha256"] == hashlib.sha256(code.encode()).hexdigest()
    assert run["language"] == "python" and run["interpreter"] == "/usr/bin/python3"
    assert run["policy_name"] == "default"
    assert run["policy_sha256"] == hashlib.sha256(run["policy_json"].encode()).hexdigest()
    assert json.loads(run["policy_json"])["version"] == 1
    assert json.loads(run["argv"])[1:3] == ["run", "--db"]
    assert run["host"] == platform.node() and platform.release() in run["kernel"]
    assert run["ward_version"] and run["ended_ns"] >= run["started_ns"]
    lim = json.loads(run["limits"])
    assert lim["wall_ms"] > 0 and lim["procs"] > 0 and lim["output_bytes"] > 0
    assert run["stdout_bytes"] == 3 and run["events"] > 0


def test_every_output_byte_with_timestamp(ctx):
    code = ("import sys, time\n"
            "for i in range(5):\n"
            "    print('line', i, flush=True); time.sleep(0.05)\n"
            "sys.stderr.buffer.write(b'E\\x00\\xff'); sys.stderr.flush()\n"
            "sys.stdout.buffer.write(b'\\x00\\x01\\xfe bin'); sys.stdout.flush()\n")
    r = ctx.ward("run", "-c", code, text=False)
    assert r.code == 0, r
    run = ctx.last_run()
    rows = ctx.sql("select * from outputs where run_id=? order by seq", run["id"])
    out = b"".join(x["data"] for x in rows if x["stream"] == "stdout")
    err = b"".join(x["data"] for x in rows if x["stream"] == "stderr")
    assert out == r.stdout and out.endswith(b"\x00\x01\xfe bin"), out
    assert err == r.stderr == b"E\x00\xff", (err, r.stderr)
    ts = [x["ts_ns"] for x in rows]
    assert ts == sorted(ts) and ts[0] >= run["started_ns"]
    assert len([x for x in rows if x["stream"] == "stdout"]) >= 3, "chunks as they came (not one blob at exit)"


def test_processes_and_their_tree(ctx):
    r = ctx.run("import pandas; print('ok')")
    assert r.code == 0, r
    run = ctx.last_run()
    procs = ctx.sql("select * from processes where run_id=? order by serial", run["id"])
    root = procs[0]
    assert root["serial"] == 1 and root["parent_serial"] in (0, None) and root["kind"] == "process"
    assert root["exit_code"] == 0 and root["exit_ns"] >= root["start_ns"]
    assert json.loads(root["argv"])[0] == "/usr/bin/python3"
    uname = [p for p in procs if p["exe"] == "/usr/bin/uname"]
    assert uname and uname[0]["parent_serial"] == 1 and uname[0]["ppid"] == root["pid"], procs
    assert json.loads(uname[0]["argv"]) == ["uname", "-p"]
    assert uname[0]["start_ticks"] > 0 and uname[0]["exec_ns"]
    assert run["processes"] == len(procs)


def test_events_name_rule_and_decision(ctx):
    code = "open('data.txt','w').write('x'); print(open('data.txt').read())"
    r = ctx.run(code)
    assert r.code == 0, r
    run = ctx.last_run()
    evs = ctx.events(run["id"], "target = ?", run["workdir"] + "/data.txt")
    assert len(evs) == 2, evs
    for e in evs:
        assert e["decision"] == "allow" and e["rule"] and e["rule"] != "default", e
        assert e["syscall"] == "openat" and e["nr"] == 257 and e["pid"] == e["tid"]
        assert e["raw"] == "data.txt"
    assert "O_CREAT" in json.loads(evs[0]["args"])["flags"]
    first = ctx.events(run["id"], "seq = 1")[0]
    assert first["syscall"] == "execve" and first["target"].startswith("/usr/bin/python3")
    seqs = [e["seq"] for e in ctx.events(run["id"])]
    assert seqs == list(range(1, len(seqs) + 1))
    assert run["events"] == len(seqs)


def test_denial_has_reason_and_backtrace(ctx):
    r = ctx.run("open('/etc/shadow')")
    assert r.code == 1
    assert "/etc/shadow" in r.stderr and "EACCES" in r.stderr, r.stderr
    d = ctx.denials(ctx.last_run()["id"])[0]
    assert d["reason"] and "/etc/shadow" in d["reason"], d
    bt = json.loads(d["backtrace"])
    assert len(bt) >= 3, bt
    assert any("libc" in f["module"] for f in bt), bt
    assert any("python3" in f["module"] for f in bt), bt
    assert all(f["ip"].startswith("0x") and f["offset"].startswith("0x") for f in bt)
    # unwound to the stack's end: no frame says the walk stopped early
    assert not any("stop" in f for f in bt), bt


def test_backtraces_load_libunwind_only_when_taken(ctx):
    # ward links no libunwind (its unwinder helper loads it at the first
    # backtrace: every start of ward saved its loading); without it a
    # denial is still recorded and answered, with no frames, and ward says
    # why
    dyn = subprocess.run(["readelf", "-d", wardtest.ward_bin()], capture_output=True,
                         text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", dyn)
    assert needed and not any("unwind" in n or "lzma" in n for n in needed), needed
    if os.geteuid() != 0 or not shutil.which("unshare"):
        raise wardtest.Skip("hiding libunwind needs root and unshare(1)")
    # (the unwinder helper, ward re-executed, loads libunwind-x86_64; ward
    # once loaded libunwind-ptrace too: both are hidden)
    libs = sorted({l.split("=>")[-1].strip() for l in subprocess.run(
        ["ldconfig", "-p"], capture_output=True, text=True).stdout.splitlines()
        if ("libunwind-ptrace.so" in l or "libunwind-x86_64.so" in l) and "=>" in l})
    assert libs, "libunwind is not installed"
    script = ctx.write("hide.sh", 'while [ "$1" != -- ]; do mount --bind /dev/null "$1" || exit 1; '
                       'shift; done; shift; exec "$@"\n')
    argv = ["unshare", "-m", "sh", script] + libs + ["--", wardtest.ward_bin(), "run",
                                                     "--db", ctx.db, "-c", "open('/etc/shadow')"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ctx.tmp)
    assert p.returncode == 1 and "PermissionError" in p.stderr, (p.returncode, p.stderr)
    assert "native backtraces are off" in p.stderr and "libunwind" in p.stderr, p.stderr
    assert p.stderr.count("native backtraces are off") == 1, p.stderr
    d = ctx.denials(ctx.last_run()["id"])[0]
    assert d["target"] == "/etc/shadow" and d["backtrace"] is None, d
    run = ctx.last_run()
    assert run["status"] == "error" and run["exit_code"] == 1, run


def test_run_end_syncs_its_wal_not_the_directory(ctx):
    # The run's end is durable: its commit syncs the WAL. The WAL ward
    # keeps from run to run is opened without O_CREAT, so SQLite does not
    # sync its directory again at every run (it does where it creates it)
    if not shutil.which("strace"):
        raise wardtest.Skip("strace is not installed")
    assert ctx.run("print(1)").code == 0  # the database and its WAL exist
    log = ctx.path("strace.log")
    # strace follows ward's main thread only (no -f), the one that ends
    # the run; ward's tracing of its child is not disturbed
    # (an ASan build's leak check cannot run under ptrace: off for this run)
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    p = subprocess.run(["strace", "-y", "-e", "trace=fsync,fdatasync", "-e", "signal=none",
                        "-o", log, wardtest.ward_bin(), "run", "--db", ctx.db, "-c", "print(2)"],
                       capture_output=True, text=True, timeout=120, cwd=ctx.tmp, env=env)
    assert p.returncode == 0 and p.stdout == "2\n", (p.returncode, p.stderr)
    syncs = [l for l in open(log).read().splitlines() if "sync(" in l]
    # the WAL at the commit; then the copy of the WAL into the database
    # file (audit/anchor.c) syncs both
    assert syncs and all(ctx.db + "-wal>" in l or ctx.db + ">" in l for l in syncs), syncs
    assert ctx.db + "-wal>" in syncs[0], syncs
    assert ctx.last_run()["status"] == "ok"


def test_wards_starting_at_once_on_a_new_database(ctx):
    # Three wards at once on a file that does not exist yet, 30 times: all
    # run. One read the header before another's new schema committed and
    # the objects after it ("not a ward audit database"), or found the file
    # busy while another turned it to WAL mode ("database is locked"):
    # 5-14 of 180 such runs failed before.
    fails = []
    for i in range(30):
        db = ctx.path("new-%d.db" % i)
        ps = [subprocess.Popen([wardtest.ward_bin(), "run", "--db", db, "-c", "print(1)"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=ctx.tmp) for _ in range(3)]
        for p in ps:
            out, err = p.communicate(timeout=120)
            if p.returncode != 0 or out != "1\n":
                fails.append((p.returncode, err[-300:]))
    assert not fails, fails


def test_audit_profile_records_would_be_denials(ctx):
    # outside the workdir the run can write only its own private /tmp
    # (mount namespace): the write happens there, not on the host
    target = "/tmp/ward-audit-%d-%s" % (os.getpid(), os.urandom(4).hex())
    r = ctx.run(f"open({target!r}, 'w').write('x'); print('wrote')", "--profile", "audit")
    assert r.code == 0 and r.stdout == "wrote\n", r
    assert not os.path.exists(target)
    run = ctx.last_run()
    e = ctx.events(run["id"], "target = ?", target)[0]
    assert e["decision"] == "allow" and e["would_deny"] == 1 and e["rule"] == "default", e
    assert run["policy_name"] == "audit"


def test_stat_family_is_a_policy_choice(ctx):
    import copy
    pol = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles", "default.json")))
    on = copy.deepcopy(pol)
    on["trap_stat"] = True
    path = ctx.write("stat.json", json.dumps(on))
    code = ("import os\nos.stat('/usr/lib')\nprint(os.path.exists('/etc/passwd'))\n"
            "r, w = os.pipe()\nprint(oct(os.fstat(r).st_mode))\n")
    r = ctx.run(code, "--policy", path)
    assert r.code == 0 and r.stdout == "True\n0o10600\n", r
    run_id = ctx.last_run()["id"]
    assert ctx.events(run_id, "syscall='newfstatat' and target='/usr/lib'")
    assert not ctx.denials(run_id), ctx.denials(run_id)
    assert ctx.events(run_id, "rule='fd.anonymous' and target like 'pipe:%'")
    r = ctx.run(code)
    assert r.code == 0
    assert not ctx.events(ctx.last_run()["id"], "syscall='newfstatat'")


def test_many_denials_all_recorded_few_printed(ctx):
    code = ("for i in range(120):\n"
            "    try: open('/etc/shadow')\n"
            "    except PermissionError: pass\n"
            "print('done')\n")
    r = ctx.run(code)
    assert r.code == 0 and r.stdout == "done\n", r
    lines = [l for l in r.stderr.splitlines() if l.startswith("ward: deny")]
    assert len(lines) == 50, len(lines)
    assert "recorded, not printed" in r.stderr
    run = ctx.last_run()
    assert run["denials"] == 120 and len(ctx.denials(run["id"])) == 120


def test_the_database_is_opened_ahead_and_a_refused_run_touches_none(ctx):
    """ward opens an existing database on a thread of its own from its
    start (tools/run/runrec.h, ward_record_preopen), while it loads the policy
    and sets the sandbox up; the run row is still written before the code
    may start. A run refused before its record creates no database, and
    leaves an existing one as it was."""
    bad = ctx.write("bad.json", '{"version": 1, "no_such_key": 1}\n')
    r = ctx.ward("run", "--policy", bad, "-c", "print(1)")
    assert r.code == 125 and "no_such_key" in r.stderr, r
    assert not os.path.exists(ctx.db)
    # the first run creates it: nothing to open ahead
    r = ctx.ward("run", "-v", "-c", "print(1)")
    assert r.code == 0 and "opened ahead" not in r.stderr, r
    r = ctx.ward("run", "-v", "-c", "print(2)")
    assert r.code == 0 and r.stdout == "2\n", r
    lines = r.stderr.splitlines()
    ahead = [i for i, l in enumerate(lines) if "audit database opened ahead of the record" in l]
    recorded = [i for i, l in enumerate(lines) if "may start" in l]
    execd = [i for i, l in enumerate(lines) if "] exec /usr/bin/python3" in l]
    assert len(ahead) == 1 and recorded and execd, r.stderr
    assert ahead[0] < recorded[0] < execd[0], r.stderr

    def files():
        return {s: open(ctx.db + s, "rb").read() for s in ("", "-wal")
                if os.path.exists(ctx.db + s)}
    before = files()
    runs = len(ctx.sql("select id from runs"))
    for args in (["--policy", bad], ["--interpreter", ctx.path("none")],
                 ["--timeout", "nonsense"]):
        r = ctx.ward("run", *args, "-c", "print(1)")
        assert r.code == 125, (args, r)
    assert files() == before
    assert len(ctx.sql("select id from runs")) == runs == 2


def test_the_record_is_begun_on_the_thread_that_opened_the_database(ctx):
    """The thread that opens an existing database ahead then writes the
    run's row itself (tracer_opts.record_run_on): no thread is made for
    it. A record that fails there (a key others can read) still stops the
    run before any code runs."""
    here = "the record begun on the thread that opened the database"
    r = ctx.ward("run", "-v", "-c", "print(1)")  # creates it: nothing ahead
    assert r.code == 0 and here not in r.stderr, r
    r = ctx.ward("run", "-v", "-c", "print(2)")
    assert r.code == 0 and r.stdout == "2\n", r
    lines = r.stderr.splitlines()
    at = {k: [i for i, l in enumerate(lines) if k in l]
          for k in ("opened ahead", here, "may start", "] exec /usr/bin/python3")}
    assert all(len(v) == 1 for v in at.values()), r.stderr
    assert (at["opened ahead"][0] < at[here][0] < at["may start"][0]
            < at["] exec /usr/bin/python3"][0]), r.stderr
    runs = len(ctx.sql("select id from runs"))
    os.chmod(ctx.db + ".key", 0o644)
    try:
        r = ctx.ward("run", "-v", "-c", "print('ran', flush=True)")
    finally:
        os.chmod(ctx.db + ".key", 0o600)
    assert r.code == 125 and here in r.stderr and "chmod 600" in r.stderr, r
    assert r.stdout == "" and "] exec " not in r.stderr, "the code ran: %r" % r
    assert len(ctx.sql("select id from runs")) == runs
    assert ctx.ward("run", "-c", "print(3)").stdout == "3\n"


def test_a_pause_in_the_first_second_commits_the_record_so_far(ctx):
    """In a run's first second the output thread commits what is recorded
    as soon as the code pauses (5 ms without a trapped call or output):
    the record of the interpreter's start is written while it runs, not
    after its end, when ward's exit would wait for it. Visible to another
    reader during the pause."""
    code = ("import sys, time\nopen('mark.txt', 'w').write('x')\n"
            "print('paused', flush=True)\ntime.sleep(30)\n")
    p = wardtest.spawn([wardtest.ward_bin(), "run", "-v", "--db", ctx.db, "-c", code],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ctx.tmp)
    try:
        assert p.stdout.readline() == "paused\n"

        def seen():
            try:
                return ctx.sql("select count(*) n from events where target like '%/mark.txt'"
                               " and decision = 'allow'")[0]["n"] == 1
            except Exception:
                return False
        # during the sleep: the open of mark.txt is committed
        assert wardtest.wait_until(seen, timeout=20)
        assert p.poll() is None
    finally:
        p.terminate()
        out, err = p.communicate(timeout=30)
    lines = err.splitlines()
    early = [i for i, l in enumerate(lines) if "the record so far committed, while the code runs" in l]
    gone = [i for i, l in enumerate(lines) if "last tracee gone" in l]
    assert early and gone and early[0] < gone[0], err


def test_raw_is_the_address_or_pid_as_passed(ctx):
    """events.raw holds what the code passed, before ward's translations:
    the v4-mapped address as written, a relative unix path as given, the
    abstract name, the pid in the code's own pid namespace (docs/schema.md)."""
    port, state, stop = wardtest.listener()
    code = f"""
import os, signal, socket
for fam, host in ((socket.AF_INET6, '::ffff:127.0.0.1'), (socket.AF_INET, '127.0.0.1')):
    s = socket.socket(fam)
    try:
        s.connect((host, {port}))
    except OSError as e:
        print('connect', e.errno)
    s.close()
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for to in ('\\0ward-abstract\\0x', 'rel/sock'):
    try:
        u.sendto(b'x', to)
    except OSError as e:
        print('sendto', e.errno)
os.kill(os.getpid(), 0)
try:
    os.kill(-4242, 0)
except OSError as e:
    print('kill', e.errno)
fd = os.pidfd_open(os.getpid())
signal.pidfd_send_signal(fd, 0)
"""
    try:
        r = ctx.run(code)
    finally:
        stop()
    assert r.code == 0, r
    assert state["accepted"] == 0, "the default profile reaches no peer"
    run = ctx.last_run()
    rows = ctx.events(run["id"], "syscall in ('socket', 'connect', 'sendto', 'kill', "
                      "'pidfd_open', 'pidfd_send_signal')")
    got = [(e["syscall"], e["raw"], e["target"]) for e in rows if e["syscall"] != "socket"]
    # the code's own getpid(): 2 in its pid namespace, when it has one
    pid = [int(g[1][4:]) for g in got if g[0] == "kill" and g[1] != "pid -4242"][0]
    if any(l["name"] == "namespaces" and l["active"] for l in json.loads(run["layers"])):
        assert pid == 2, got
    assert got[:4] == [
        ("connect", f"[::ffff:127.0.0.1]:{port}", f"127.0.0.1:{port}"),
        ("connect", f"127.0.0.1:{port}", f"127.0.0.1:{port}"),
        ("sendto", "unix:@ward-abstract\\0x", "unix:@ward-abstract\\0x"),
        ("sendto", "unix:rel/sock", f"unix:{run['workdir']}/rel/sock"),
    ], got
    assert got[4:6] == [("kill", f"pid {pid}", f"pid {pid}"),
                        ("kill", "pid -4242", "pid -4242")], got
    assert got[6][:2] == ("pidfd_open", f"pid {pid}"), got
    assert got[7][0] == "pidfd_send_signal" and re.fullmatch(r"pidfd \d+", got[7][1]), got
    # sockets name no address: no raw
    assert all(e["raw"] is None for e in rows if e["syscall"] == "socket"), rows
