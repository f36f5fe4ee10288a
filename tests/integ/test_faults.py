"""Durability under faults (issue 23, section 2): real faults, not mocks.

The fault-injection build (build/ward-faults, audit/faults.c) fails the Nth
write, sync or lock SQLite makes with EIO, ENOSPC or BUSY; the sweep runs
a small script once per fault point. The real cases use a real full tmpfs,
a real second SQLite connection holding the lock, the database deleted or
replaced mid-run, and a power loss (EXT4_IOC_SHUTDOWN on a loop-mounted
ext4). After every fault the invariants hold:

- the database is whole and no committed row is lost (rows seen committed
  before the fault are still there);
- no run has a hole in its events' or outputs' sequence;
- no run claims "ok" (or ward exit 0) unless its record is complete;
- when the record can no longer be written the code stops at once: what
  the user saw is what was recorded (or, when even the end cannot be
  written, at most the documented window more);
- ward says what happened and exits 125 when the record failed.
"""
import fcntl
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time

import wardtest

FULL = os.environ.get("WARD_TEST_FULL") == "1"
INTERNAL = 125  # ward's own errors (README)

# The code of the sweep: output before and after a denial, a subprocess.
SWEEP_CODE = """\
import os
for i in range(30):
    print("line", i, flush=True)
try:
    open("/etc/shadow")
except OSError as e:
    print("denied", e.errno, flush=True)
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
for i in range(30, 60):
    print("line", i, flush=True)
print("done", flush=True)
"""


def faults_bin():
    p = os.path.join(os.path.dirname(wardtest.ward_bin()), "ward-faults")
    assert os.access(p, os.X_OK), f"{p}: no fault-injection build (make builds it)"
    return p


def ward_env(**extra):
    e = dict(os.environ)
    for k in ("WARD_FAULT", "WARD_FAULT_LOG", "WARD_FAULT_BUSY_MS"):
        e.pop(k, None)
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run_ward(argv, env=None, timeout=60, binary=None):
    p = subprocess.run([binary or wardtest.ward_bin()] + argv, capture_output=True,
                       timeout=timeout, env=env or ward_env())
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


# ------------------------------- invariants -------------------------------

def db_rows(db):
    # read-only: the last connection to close would checkpoint and delete
    # the WAL (and ward's reserve past it)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        con.row_factory = sqlite3.Row
        assert con.execute("pragma integrity_check").fetchone()[0] == "ok"
        runs = [dict(r) for r in con.execute("select * from runs order by started_ns")]
        ev = {}
        for r in con.execute("select run_id, seq, hash from events order by run_id, seq"):
            ev.setdefault(r[0], []).append((r[1], r[2]))
        out = {}
        for r in con.execute("select run_id, seq, stream, data, hash from outputs order by run_id, seq"):
            out.setdefault(r[0], []).append((r[1], r[2], bytes(r[3]), r[4]))
        procs = {}
        for r in con.execute("select run_id, count(*) from processes group by run_id"):
            procs[r[0]] = r[1]
        return runs, ev, out, procs
    finally:
        con.close()


def recorded_stdout(outs):
    return b"".join(o[2] for o in outs if o[1] == "stdout")


def check_invariants(db, before=None, what=""):
    """The invariants on the whole database; before: an earlier db_rows()
    whose committed rows must all still be there. Returns db_rows()."""
    rows = db_rows(db)
    runs, ev, out, procs = rows
    for run in runs:
        rid = run["id"]
        seqs = [s for s, _ in ev.get(rid, [])]
        assert seqs == list(range(1, len(seqs) + 1)), f"{what}: run {rid}: hole in events: {seqs[:5]}..{seqs[-5:]}"
        oseqs = [o[0] for o in out.get(rid, [])]
        assert oseqs == list(range(1, len(oseqs) + 1)), f"{what}: run {rid}: hole in outputs: {oseqs}"
        if run["status"] == "ok":
            assert run["events"] == len(seqs), f"{what}: run {rid} ok with {len(seqs)} of {run['events']} events"
            assert run["stdout_bytes"] == len(recorded_stdout(out.get(rid, []))) or run["stdout_truncated"], \
                f"{what}: run {rid} ok but its output is not all recorded"
            assert run["processes"] == procs.get(rid, 0), f"{what}: run {rid}: processes"
            assert run["chain"], f"{what}: run {rid} ok but not sealed"
    if before:
        bruns, bev, bout, _ = before
        ids = {r["id"] for r in runs}
        for r in bruns:
            assert r["id"] in ids, f"{what}: committed run {r['id']} lost"
        for rid, l in bev.items():
            assert ev.get(rid, [])[:len(l)] == l, f"{what}: committed events of {rid} lost or changed"
        for rid, l in out.items() if False else bout.items():
            assert out.get(rid, [])[:len(l)] == l, f"{what}: committed outputs of {rid} lost or changed"
    return rows


def verify_all(db, what=""):
    code, out, err = run_ward(["verify", "--db", db, "--all", "--json"])
    assert code == 0, f"{what}: ward verify: exit {code}: {out[-2000:]!r} {err[-2000:]}"
    j = json.loads(out)
    for r in j["runs"]:
        assert r["verdict"] in ("intact", "running", "unsealed"), f"{what}: {r}"
    return j


def check_run_result(db, code, stdout, stderr, what, window=0):
    """ward's answer and the run's record agree: exit 0 only with a whole
    record, the user saw nothing the record lacks (beyond window lines when
    the end could not be recorded), a failed record says so."""
    runs, ev, out, procs = db_rows(db)
    run = runs[-1] if runs else None
    if code == 0:
        assert run and run["status"] == "ok", f"{what}: exit 0 but the run is {run and run['status']}: {stderr}"
        assert recorded_stdout(out.get(run["id"], [])) == stdout, f"{what}: exit 0 but output differs from the record"
        return "ok"
    assert code == INTERNAL, f"{what}: exit {code}: {stderr}"
    assert "audit database" in stderr, f"{what}: {stderr}"
    assert "malformed" not in stderr, f"{what}: {stderr}"
    if run is None or not stdout:
        return "refused"
    rec = recorded_stdout(out.get(run["id"], []))
    if run["status"] == "running":
        # the end could not be written: what the user saw beyond the
        # record is bounded
        assert stdout.startswith(rec) or rec.startswith(stdout), f"{what}: output diverges"
        extra = max(0, len(stdout) - len(rec))
        assert extra <= window, f"{what}: the user saw {extra} bytes not recorded"
        return "running"
    assert run["status"] == "error", f"{what}: {run['status']} {run['cause']}"
    assert "audit database" in (run["cause"] or ""), f"{what}: cause {run['cause']!r}"
    assert rec.startswith(stdout) or stdout.startswith(rec), f"{what}: output diverges"
    if "rows could not be written" in run["cause"] or "row could not be written" in run["cause"]:
        # the end written with what fitted of the queue: it says so
        assert len(stdout) - len(rec) <= window, f"{what}: the user saw {stdout[len(rec):]!r}, not recorded"
        return "error, rows lost at the end"
    assert len(stdout) <= len(rec), f"{what}: the user saw {stdout[len(rec):]!r}, not recorded"
    if b"denied" in stdout:  # the code went past its denial: it is on record
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            n = con.execute("select count(*) from events where run_id = ? and decision = 'deny'",
                            (run["id"],)).fetchone()[0]
        finally:
            con.close()
        assert n == 1, f"{what}: the code went past a denial that is not recorded"
    return "error"


# ---------------------------------- sweep ----------------------------------

def _template(ctx):
    """A database with one run in it (made with the fault build, no fault),
    and the number of write/sync/lock calls of one sweep run after it."""
    tdir = ctx.path("template")
    os.makedirs(tdir)
    db = os.path.join(tdir, "audit.db")
    log = ctx.path("counts")
    code, _, err = run_ward(["run", "--db", db, "-c", "print('first')"], binary=faults_bin())
    assert code == 0, err
    shutil.copytree(tdir, ctx.path("probe"))
    pdb = ctx.path("probe", "audit.db")
    code, out, err = run_ward(["run", "--db", pdb, "-c", SWEEP_CODE], binary=faults_bin(),
                              env=ward_env(WARD_FAULT_LOG=log))
    assert code == 0 and out.endswith(b"done\n"), (code, err)
    with open(log) as f:
        line = f.read().split("\n")[0].split()
    counts = dict(zip(line[0::2], line[1::2]))
    return tdir, {k: int(counts[k]) for k in ("write", "sync", "lock")}


def _points(n, budget):
    """1..n, all of them or about budget of them spread evenly (always the
    first and last few)."""
    if n <= budget:
        return list(range(1, n + 1))
    step = n / budget
    pts = {1, 2, n - 1, n} | {int(1 + i * step) for i in range(budget)}
    return sorted(p for p in pts if 1 <= p <= n)


def _sweep_one(ctx, tdir, spec, i):
    d = ctx.path(f"s{i}")
    shutil.copytree(tdir, d)
    db = os.path.join(d, "audit.db")
    before = db_rows(db)
    code, out, err = run_ward(["run", "--db", db, "-c", SWEEP_CODE], binary=faults_bin(),
                              env=ward_env(WARD_FAULT=spec, WARD_FAULT_BUSY_MS=200))
    what = f"WARD_FAULT={spec}"
    check_invariants(db, before, what)
    kind = check_run_result(db, code, out, err, what, window=WINDOW_BYTES)
    # the next ward (no fault) finds the database usable, closes a run left
    # running, and everything verifies
    code2, out2, err2 = run_ward(["run", "--db", db, "-c", "print('next')"])
    assert code2 == 0 and out2 == b"next\n", f"{what}: the next run: {code2} {err2}"
    check_invariants(db, None, what + " then a run")
    verify_all(db, what)
    shutil.rmtree(d, ignore_errors=True)
    return kind


# How much output the user can have seen that is not recorded, when even
# the run's end cannot be written (docs/security.md, "The record"): the
# batch queued but not yet committed, at most AUDIT_BATCH_ROWS chunks and
# AUDIT_BATCH_BYTES (and the chunk that filled it, 64 KiB); nothing is
# passed on once a commit failed.
WINDOW_BYTES = (1 << 20) + (64 << 10)
# How far the code can run ahead of its record in trapped calls: the
# tracer's queue (EVQ_WINDOW) and the writer's batch (AUDIT_BATCH_ROWS).
EVENT_WINDOW = 1024 + 256


def test_fault_sweep(ctx):
    """Every write, sync and lock point of a run failed in turn (make test:
    a spread of them; make test-full: all), once and for good; and the WAL
    unable to grow past a few sizes (a disk full)."""
    tdir, counts = _template(ctx)
    budget = 10000 if FULL else 6
    specs = []
    # a lock busy for good is the real case below (a second connection):
    # here, SQLite's own retries of a busy WAL-index lock would take 10 s
    for kind, errs, persist in (("write", ("EIO", "ENOSPC"), True), ("sync", ("EIO",), True),
                                ("lock", ("EIO",), True), ("lock", ("BUSY",), False)):
        for n in _points(counts[kind], budget):
            for e in errs:
                specs.append(f"{kind}:{n}:{e}")
                if persist:
                    specs.append(f"{kind}:{n}+:{e}")
    # a disk that fills up: the WAL cannot grow more than a few KiB .. 1 MiB
    wal = os.path.getsize(os.path.join(tdir, "audit.db-wal"))
    for extra in ((4, 12, 24, 40, 64, 100, 160, 256, 400, 640, 1024) if FULL else (12, 64, 256)):
        specs.append(f"wal:{wal + extra * 1024}:ENOSPC")
    seen = {}
    t0 = time.monotonic()
    for i, spec in enumerate(specs):
        k = _sweep_one(ctx, tdir, spec, i)
        seen[k] = seen.get(k, 0) + 1
    print(f"     {len(specs)} faults over {counts} in {time.monotonic() - t0:.1f}s: {seen}")
    assert seen.get("error", 0) + seen.get("running", 0) > 0, seen


test_fault_sweep.time_limit = 3000


# ------------------------------- real faults -------------------------------

def _mount(*argv):
    p = subprocess.run(["mount"] + list(argv), capture_output=True, text=True)
    if p.returncode != 0:
        raise wardtest.Skip(f"mount {' '.join(argv)}: {p.stderr.strip()}")


def _umount(path):
    for _ in range(50):
        if subprocess.run(["umount", path], capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    subprocess.run(["umount", "-l", path], capture_output=True)


RESERVE = 4 << 20  # AUDIT_RESERVE_BYTES


def fill_disk(mnt, leave):
    st = os.statvfs(mnt)
    free = st.f_bavail * st.f_frsize
    with open(os.path.join(mnt, "filler"), "wb") as f:
        f.write(b"\0" * max(0, free - leave))


def _lines(b):
    return b.count(b"\n")


class _Reader:
    """ward's stdout read on a thread, as the user sees it."""

    def __init__(self, p):
        self.p, self.data, self.lock = p, b"", threading.Lock()
        self.t = threading.Thread(target=self._loop, daemon=True)
        self.t.start()

    def _loop(self):
        while True:
            b = self.p.stdout.read1(65536) if hasattr(self.p.stdout, "read1") else os.read(self.p.stdout.fileno(), 65536)
            if not b:
                return
            with self.lock:
                self.data += b

    def get(self):
        with self.lock:
            return self.data

    def wait_for(self, needle, timeout=20):
        return wardtest.wait_until(lambda: needle in self.get(), timeout, 0.01)


def _start(argv, env=None, binary=None):
    p = wardtest.spawn([binary or wardtest.ward_bin()] + argv, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env or ward_env())
    return p, _Reader(p)


def _finish(p, reader, timeout=30):
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError("ward did not stop")
    reader.t.join(5)
    return p.returncode, reader.get(), p.stderr.read().decode(errors="replace")


# Prints numbered lines as fast as it can, each followed by a trapped call
# (an open of a file that is not there), N lines.
BUSY_CODE = """\
import os, sys
for i in range({n}):
    print("line %d" % i + "{pad}", flush=True)
    try:
        open("nothere-%d" % (i % 7))
    except OSError:
        pass
print("done", flush=True)
"""


def test_disk_full_mid_run(ctx):
    """A real full disk (tmpfs) while the code writes: the run is stopped,
    exit 125 saying the disk is full, no hole, the user saw no more than
    the record holds, the run's end says the audit database failed; with
    room again the next run goes on and everything verifies."""
    mnt = ctx.path("full")
    os.makedirs(mnt)
    _mount("-t", "tmpfs", "-o", "size=24m,mode=0755", "tmpfs", mnt)
    try:
        db = os.path.join(mnt, "audit.db")
        code, out, err = run_ward(["run", "--db", db, "-c", "print('first')"])
        assert code == 0, err
        before = db_rows(db)
        # ~600 KiB left (beyond the reserve ward keeps past the WAL for a
        # run's end, docs/security.md, made by the first run): some of the
        # code's output fits, not all
        wal = os.stat(db + "-wal")
        held = max(0, wal.st_blocks * 512 - wal.st_size)
        fill_disk(mnt, 600 * 1024 + max(0, RESERVE - held))
        code, out, err = run_ward(["run", "--db", db, "-c", BUSY_CODE.format(n=20000, pad=" " + "x" * 500)], timeout=120)
        assert code == INTERNAL, (code, err)
        assert b"done" not in out, "the code ran to its end"
        assert "full" in err, err
        assert "malformed" not in err, err
        check_invariants(db, before, "disk full")
        runs, ev, outs, _ = db_rows(db)
        run = runs[-1]
        rec = recorded_stdout(outs.get(run["id"], []))
        assert out.startswith(rec) or rec.startswith(out), "the output and its record diverge"
        unrecorded = _lines(out) - _lines(rec)
        # the reserve past the WAL: the end, with the cause, always fits
        assert run["status"] == "error" and "full" in (run["cause"] or ""), (run["status"], run["cause"])
        assert unrecorded <= 0, f"{unrecorded} lines seen, not recorded"
        assert len(ev.get(run["id"], [])) == run["events"], "the run's events not all recorded"
        os.unlink(os.path.join(mnt, "filler"))
        code, out, err = run_ward(["run", "--db", db, "-c", "print('next')"])
        assert code == 0 and out == b"next\n", err
        check_invariants(db, before, "disk full, then room")
        verify_all(db, "disk full")
    finally:
        _umount(mnt)


def _hold_lock(db, started, release):
    con = sqlite3.connect(db, timeout=30, isolation_level=None)
    try:
        con.execute("begin exclusive")
        started.set()
        release.wait(60)
        con.execute("commit")
    finally:
        con.close()


def test_lock_held_past_busy_timeout(ctx):
    """Another connection holds the write lock longer than ward's busy
    timeout while the code runs busily: the code is held back, then
    stopped (exit 125, "locked"), not run on unrecorded; the record has no
    hole and holds what the user saw."""
    code, out, err = run_ward(["run", "--db", ctx.db, "-c", "print('first')"])
    assert code == 0, err
    before = db_rows(ctx.db)
    env = ward_env(WARD_FAULT_BUSY_MS=500)  # no fault: a shorter busy timeout
    p, rd = _start(["run", "--db", ctx.db, "-c", BUSY_CODE.format(n=200000, pad="")], env=env,
                   binary=faults_bin())
    assert rd.wait_for(b"line 200\n"), rd.get()[-200:]
    started, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_lock, args=(ctx.db, started, release))
    holder.start()
    try:
        assert started.wait(10)
        at_lock = _lines(rd.get())
        # past two busy timeouts: the run is stopped; its end, tried three
        # times, is written once the lock is free
        time.sleep(1.2)
        during = _lines(rd.get()) - at_lock
    finally:
        release.set()
        holder.join(10)
    code, out, err = _finish(p, rd)
    # held back: at most the window went by with the lock held (each line
    # is a trapped call: EVQ_WINDOW events and one batch, docs/security.md)
    assert during <= EVENT_WINDOW, f"{during} lines printed while the record was locked"
    assert b"done" not in out
    check_invariants(ctx.db, before, "lock held")
    runs, ev, outs, _ = db_rows(ctx.db)
    run = runs[-1]
    rec = recorded_stdout(outs.get(run["id"], []))
    unrecorded = _lines(out) - _lines(rec)
    assert len(ev.get(run["id"], [])) == run["events"], \
        f"{len(ev.get(run['id'], []))} of the run's {run['events']} events recorded"
    assert run["status"] == "error" and "locked" in run["cause"], (run["status"], run["cause"])
    assert unrecorded <= 0, f"{unrecorded} lines seen, not recorded"
    assert code == INTERNAL and "locked" in err, (code, err)
    code, out, err = run_ward(["run", "--db", ctx.db, "-c", "print('next')"])
    assert code == 0, err
    verify_all(ctx.db, "lock held")


# Prints a line every 20 ms for 10 s.
SLOW_CODE = """\
import time
for i in range(500):
    print("tick %d" % i, flush=True)
    time.sleep(0.02)
print("done", flush=True)
"""


def _db_gone_mid_run(ctx, change):
    code, out, err = run_ward(["run", "--db", ctx.db, "-c", "print('first')"])
    assert code == 0, err
    p, rd = _start(["run", "--json", "--db", ctx.db, "-c", SLOW_CODE])
    def ticks():  # the run's output is being committed
        try:
            return ctx.sql("select count(*) n from outputs o join runs r on r.id = o.run_id"
                           " where r.status = 'running'")[0]["n"] >= 5
        except sqlite3.OperationalError:
            return False
    assert wardtest.wait_until(ticks, 10, 0.02), rd.get()
    change()
    t0 = time.monotonic()
    code, out, err = _finish(p, rd)
    took = time.monotonic() - t0
    assert code == INTERNAL, (code, out[-300:], err)
    assert took < 3, f"ward stopped {took:.1f}s after the database was changed"
    j = json.loads(out)
    assert j["status"] == "error" and "tick 499" not in j["stdout"], j["status"]
    assert not (j.get("chain") or {}).get("seal"), "a seal printed for a run in no database"
    return j, err


def test_database_deleted_mid_run(ctx):
    """The database file deleted while the code runs: ward notices, stops
    the code, exits 125 and says so (no seal, no "ok")."""
    j, err = _db_gone_mid_run(ctx, lambda: os.unlink(ctx.db))
    assert "deleted" in err and "database" in err, err


def test_database_replaced_mid_run(ctx):
    """The database file replaced (renamed over) while the code runs."""
    other = ctx.path("other.db")

    def replace():
        con = sqlite3.connect(other)
        con.execute("create table x(y)")
        con.close()
        os.rename(other, ctx.db)
    j, err = _db_gone_mid_run(ctx, replace)
    assert "replaced" in err, err


EXT4_IOC_SHUTDOWN = 0x8004587D  # _IOR('X', 125, __u32)
EXT4_GOING_FLAGS_NOLOGFLUSH = 2  # as a power cut: the journal not flushed

# One denial, then a line saying the code went past it, then a wait.
POWER_CODE = """\
import time
print("begun", flush=True)
try:
    open("/etc/shadow")
except OSError:
    pass
print("past the denial", flush=True)
time.sleep(30)  # ward-power-loss-marker
"""


def test_power_loss_keeps_the_run_and_its_denials(ctx):
    """A power cut (EXT4_IOC_SHUTDOWN without flushing the journal, on a
    loop-mounted ext4) once the code has started and gone past a denial:
    after remounting, the run's row and the denial are there, each time."""
    if not shutil.which("mkfs.ext4"):
        raise wardtest.Skip("no mkfs.ext4")
    img, mnt = ctx.path("disk.img"), ctx.path("ext4")
    os.makedirs(mnt)
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", img], check=True, capture_output=True)
    trials = 4
    for trial in range(trials):
        _mount("-o", "loop", img, mnt)
        mounted = True
        try:
            db = os.path.join(mnt, "audit.db")
            if trial == 0:
                code, out, err = run_ward(["run", "--db", db, "-c", "print('first')"])
                assert code == 0, err
            subprocess.run(["sync", "-f", db], check=True)
            p, rd = _start(["run", "--db", db, "-c", POWER_CODE])
            assert rd.wait_for(b"past the denial"), (rd.get(), p.poll())
            fd = os.open(mnt, os.O_RDONLY)
            try:
                fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, EXT4_GOING_FLAGS_NOLOGFLUSH.to_bytes(4, "little"))
            finally:
                os.close(fd)
            p.kill()
            p.wait()
            # the code's mount namespace holds the file system too: the
            # next mount would find it (still shut down) until it is gone
            assert wardtest.wait_until(lambda: not wardtest.pids_matching("ward-power-loss-marker"), 10)
            _umount(mnt)
            assert wardtest.wait_until(lambda: not subprocess.run(
                ["losetup", "-j", img], capture_output=True, text=True).stdout.strip(), 10)
            mounted = False
            _mount("-o", "loop", img, mnt)
            mounted = True
            # what is on the disk, copied off it (not its -shm: the index
            # SQLite rebuilds from the WAL)
            cp = ctx.path(f"after{trial}")
            os.makedirs(cp)
            for f in ("audit.db", "audit.db-wal"):
                if os.path.exists(os.path.join(mnt, f)):
                    shutil.copy(os.path.join(mnt, f), cp)
            db = os.path.join(cp, "audit.db")
            con = sqlite3.connect(f"file:{db}?mode=rw", uri=True)
            try:
                runs = con.execute("select id, status from runs order by started_ns").fetchall()
                assert len(runs) == trial + 2, f"trial {trial}: the run left no trace: {runs}"
                rid = runs[-1][0]
                den = con.execute("select count(*) from events where run_id = ? and decision = 'deny'"
                                  " and target = '/etc/shadow'", (rid,)).fetchone()[0]
                assert den == 1, f"trial {trial}: the denial is not on disk"
            finally:
                con.close()
            check_invariants(db, None, f"power loss {trial}")
        finally:
            if mounted:
                _umount(mnt)


def test_run_killed_before_its_first_batch_is_running(ctx):
    """ward SIGKILLed after the run's row, before any event or output was
    committed: `ward verify` says running (exit 0), not TAMPERED."""
    code, out, err = run_ward(["run", "--db", ctx.db, "-c", "print('first')"])
    assert code == 0, err
    for attempt in range(20):
        p = wardtest.spawn([wardtest.ward_bin(), "run", "--db", ctx.db, "-c", "while True: pass"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        con = sqlite3.connect(f"file:{ctx.db}?mode=ro", uri=True, timeout=10)
        n0 = attempt + 1
        try:
            while con.execute("select count(*) from runs").fetchone()[0] <= n0 and p.poll() is None:
                pass
            p.send_signal(signal.SIGSTOP)
            rid = con.execute("select id from runs order by started_ns desc limit 1").fetchone()[0]
            rows = con.execute("select (select count(*) from events where run_id = ?1)"
                               " + (select count(*) from outputs where run_id = ?1)", (rid,)).fetchone()[0]
        finally:
            con.close()
            p.kill()
            p.wait()
        if rows == 0:
            break
    else:
        raise AssertionError("ward always committed a batch before it could be stopped")
    code, out, err = run_ward(["verify", "--db", ctx.db, rid])
    assert code == 0 and f"{rid}: running" in out.decode(), (code, out, err)
    # the next run closes it, sealed by the reaper: intact
    code, out, err = run_ward(["run", "--db", ctx.db, "-c", "print(2)"])
    assert code == 0, err
    code, out, err = run_ward(["verify", "--db", ctx.db, rid])
    assert code == 0 and f"{rid}: intact (aborted" in out.decode(), (code, out, err)


def test_eio_is_reported_as_an_io_error(ctx):
    """A read the disk fails with EIO (the unix VFS's SQLITE_IOERR_CORRUPTFS,
    which SQLite turns into "database disk image is malformed") is reported
    as an I/O error by ward run, show and verify."""
    code, out, err = run_ward(["run", "--db", ctx.db, "-c", SWEEP_CODE])
    assert code == 0, err
    seen = 0
    for argv in (["show", "--db", ctx.db, "last"], ["verify", "--db", ctx.db, "--all"],
                 ["run", "--db", ctx.db, "-c", SWEEP_CODE]):
        log = ctx.path("reads")
        if os.path.exists(log):
            os.unlink(log)
        d = ctx.path("probe")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(ctx.tmp, d, ignore=shutil.ignore_patterns("probe", "reads", "e*"))
        pargv = [a.replace(ctx.db, os.path.join(d, "audit.db")) for a in argv]
        c, _, e = run_ward(pargv, binary=faults_bin(), env=ward_env(WARD_FAULT_LOG=log))
        assert c == 0, e
        with open(log) as f:
            reads = int(f.read().split()[9])
        for n in _points(reads, 40 if FULL else 8):
            d = ctx.path(f"e{argv[0]}{n}")
            shutil.copytree(ctx.tmp, d, ignore=shutil.ignore_patterns("probe", "reads", "e*"))
            pargv = [a.replace(ctx.db, os.path.join(d, "audit.db")) for a in argv]
            c, out, e = run_ward(pargv, binary=faults_bin(), env=ward_env(WARD_FAULT=f"read:{n}:EIO"))
            assert "malformed" not in e, f"{argv[0]} read:{n}:EIO: {e}"
            if c != 0:
                assert "I/O error" in e or "Input/output error" in e, f"{argv[0]} read:{n}:EIO: {e}"
                seen += 1
            shutil.rmtree(d, ignore_errors=True)
    assert seen > 0
