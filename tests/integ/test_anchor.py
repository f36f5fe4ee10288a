"""Tamper evidence beyond one run (issue 23, section 3): the chain of runs
(each seal commits to its place and to the run sealed before it), the seal
log outside the database (ward run --seal-log, ward verify --seal-log), and
the WAL (copied into the database file after each run; a WAL that lost
committed transactions is reported, with the runs it affects)."""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time

import wardtest
import test_verify as tv


def _runs(ctx, n, *opts):
    ids = []
    for i in range(n):
        r, j = ctx.run_json(f"print({i})", *opts)
        assert r.code == 0, r
        ids.append(j["run_id"])
    return ids


def _exec(ctx, *sql, db=None):
    con = sqlite3.connect(db or ctx.db)
    try:
        con.execute("pragma foreign_keys = on")
        for q in sql:
            con.execute(*q) if isinstance(q, tuple) else con.execute(q)
        con.commit()
    finally:
        con.close()


def _chain(ctx, rid):
    return json.loads(ctx.sql("select chain from runs where id = ?", rid)[0]["chain"])


def _db_problems(r):
    j = json.loads(r.stdout)
    return j, j["database"]["problems"]


# ---------------------------------------------------------- chain of runs

def test_chain_of_runs_catches_deleted_and_inserted_runs(ctx):
    a, b, c, d = _runs(ctx, 4)
    # each seal names its place and the run sealed before it
    assert _chain(ctx, a)["n"] == 1 and _chain(ctx, a)["prev"] is None
    for prev, rid in ((a, b), (b, c), (c, d)):
        ch = _chain(ctx, rid)
        assert ch["prev"] == {"run": prev, "seal": _chain(ctx, prev)["seal"]}, ch
    r = tv._verify(ctx, "--all")
    assert r.code == 0, r
    assert f"chain of runs: intact (4 runs linked in seal order, #1 to #4, the newest run {d})" \
        in r.stdout, r
    # a whole run deleted (its rows go with it): every run left is intact,
    # the chain names the one that is gone
    _exec(ctx, ("delete from runs where id = ?", (b,)))
    r = tv._verify(ctx, "--all")
    assert r.code == 1, r
    assert "database: NOT INTACT" in r.stdout, r
    assert f"  chain of runs #2: run {b} (sealed #2, before run {c}) is missing: deleted" \
        in r.stdout, r
    for rid in (a, c, d):
        assert f"{rid}: intact" in r.stdout, r
    # the newest deleted too
    _exec(ctx, ("delete from runs where id = ?", (d,)))
    r = tv._verify(ctx, "--all", "--json")
    assert r.code == 1, r
    j, p = _db_problems(r)
    assert not j["ok"], j
    what = [x["what"] for x in p if x["table"] == "chain of runs"]
    assert any(f"run {d} (sealed #4, the newest seal) is missing" in w for w in what), p
    # a run inserted with a place copied from another
    _exec(ctx, ("insert into runs(id, started_ns, status, chain) select '0123456789abcdef',"
                " started_ns, status, chain from runs where id = ?", (c,)))
    r = tv._verify(ctx, "--all")
    assert r.code == 1, r
    assert f"both have place #3: a run was inserted" in r.stdout, r


def test_verify_one_run_checks_its_neighbours(ctx):
    """ward verify RUN checks RUN's two links, not only its own rows: the
    run sealed before it, the run sealed after it, or the chain's head."""
    a, b, c, d = _runs(ctx, 4)
    for rid in (a, b, c, d):
        r = tv._verify(ctx, rid)
        assert r.code == 0 and f"{rid}: intact" in r.stdout, r
    _exec(ctx, ("delete from runs where id = ?", (b,)))
    # the run after the deleted one: its predecessor is gone
    r = tv._verify(ctx, c)
    assert r.code == 1 and f"{c}: TAMPERED" in r.stdout, r
    assert f"  chain of runs #2: run {b} (sealed #2, before run {c}) is missing: deleted" \
        in r.stdout, r
    # the run before it: its successor is gone
    r = tv._verify(ctx, a, "--json")
    assert r.code == 1, r
    run = json.loads(r.stdout)["runs"][0]
    assert run["verdict"] == "tampered", run
    assert any(f"the run sealed after run {a} (#2) is missing: deleted" in x["what"]
               for x in run["problems"]), run
    # a run whose neighbours are whole is still intact
    r = tv._verify(ctx, d)
    assert r.code == 0 and f"{d}: intact" in r.stdout, r
    # the newest run deleted: the one before it is no longer the head's
    _exec(ctx, ("delete from runs where id = ?", (d,)))
    r = tv._verify(ctx, c)
    assert r.code == 1 and f"the runs sealed after run {c} (#4 to #4, the newest run {d})" \
        in r.stdout, r
    # a run put in another's place: both see it
    a2, b2, c2 = _runs(ctx, 3)
    ch = _chain(ctx, b2)
    ch["prev"]["seal"] = "0" * 64
    _exec(ctx, ("update runs set chain = ? where id = ?", (json.dumps(ch), b2)))
    r = tv._verify(ctx, a2)
    assert r.code == 1 and f"names run {a2} (seal 0000000000000000...) as sealed before it" \
        in r.stdout, r


def test_chain_of_runs_moved_run(ctx):
    """A seal that names another place than its own is caught by its own
    seal (the place is sealed) and by the chain."""
    a, b, c = _runs(ctx, 3)
    ch = _chain(ctx, c)
    ch["n"] = 2
    _exec(ctx, ("update runs set chain = ? where id = ?", (json.dumps(ch), c)))
    r = tv._verify(ctx, "--all")
    assert r.code == 1, r
    assert f"{c}: TAMPERED" in r.stdout and "the seal does not match" in r.stdout, r
    assert "both have place #2" in r.stdout, r


def test_chain_of_runs_concurrent_and_reaped_runs_are_honest(ctx):
    """Wards writing one database at once, and a run whose ward was killed
    (sealed later by the reaper, in its own place): an honest history
    verifies intact."""
    marker = "ward-anchor-kill-%d" % os.getpid()
    code = f"import time\nprint('before', flush=True)\ntime.sleep(60)  # {marker}"
    k = wardtest.spawn([wardtest.ward_bin(), "run", "--db", ctx.db, "-c", code],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wardtest.wait_until(lambda: len(wardtest.pids_matching(marker)) >= 2)
    ps = [subprocess.Popen([wardtest.ward_bin(), "run", "--db", ctx.db, "-c",
                            f"import time\nfor i in range(20):\n    print(i)\n    time.sleep(0.01)\n"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
          for _ in range(4)]
    time.sleep(0.3)
    k.send_signal(signal.SIGKILL)
    k.wait()
    for p in ps:
        assert p.wait(60) == 0, p.stderr.read()
    assert wardtest.wait_until(lambda: not wardtest.pids_matching(marker), 5)
    # the killed run is 'running', outside the chain, unless a ward that
    # began after the kill reaped it already
    r = tv._verify(ctx, "--all")
    assert r.code == 0, r
    assert "chain of runs: intact (4 runs linked" in r.stdout or \
        "chain of runs: intact (5 runs linked" in r.stdout, r
    _runs(ctx, 1)  # reaps the killed run (if still running): sealed in the next place
    r = tv._verify(ctx, "--all", "--json")
    assert r.code == 0, r
    j = json.loads(r.stdout)
    assert j["database"]["chain_of_runs"]["linked"] == 6, j
    ns = sorted(x["n"] for x in j["runs"])
    assert ns == [1, 2, 3, 4, 5, 6], j


def test_version1_seals_still_verify(ctx):
    """A run sealed before the chain of runs (seal version 1) verifies as it
    did, and is counted apart from the chain."""
    a, b = _runs(ctx, 2)
    key = tv._key(ctx)
    con = sqlite3.connect(ctx.db)
    con.text_factory = bytes
    try:
        ch = json.loads(con.execute("select chain from runs where id=?", (a,)).fetchone()[0])
        ch["version"] = 1
        del ch["n"], ch["prev"]
        _reseal(con, key, a, ch)
        # b was sealed after a's version 2 seal: make it the first of the chain
        cb = json.loads(con.execute("select chain from runs where id=?", (b,)).fetchone()[0])
        cb["n"], cb["prev"] = 1, None
        _reseal(con, key, b, cb)
        con.execute("update ward_meta set value=? where key='run_chain_head'",
                    (json.dumps({"n": 1, "run": b, "seal": cb["seal"]}),))
        con.commit()
    finally:
        con.close()
    r = tv._verify(ctx, "--all")
    assert r.code == 0, r
    assert f"{a}: intact" in r.stdout and f"{b}: intact" in r.stdout, r
    assert "1 run linked in seal order, #1 to #1" in r.stdout, r
    assert "1 sealed before the chain" in r.stdout, r


def test_version2_seals_still_verify(ctx):
    """A run with phases sealed before the seal covered them (version 2, as
    the first wards with phases wrote it) verifies intact; the same run
    sealed now (version 3) does not when a phase row is edited."""
    rid = tv._run_with_setup(ctx)
    key = tv._key(ctx)
    con = sqlite3.connect(ctx.db)
    con.text_factory = bytes
    try:
        ch = json.loads(con.execute("select chain from runs where id=?", (rid,)).fetchone()[0])
        assert ch["version"] == 3 and len(ch["phases"]) == 2, ch
        ch["version"] = 2
        del ch["phases"]
        _reseal(con, key, rid, ch)
        con.execute("update ward_meta set value=? where key='run_chain_head'",
                    (json.dumps({"n": ch["n"], "run": rid, "seal": ch["seal"]}),))
        con.commit()
    finally:
        con.close()
    r = tv._verify(ctx, "--all")
    assert r.code == 0 and f"{rid}: intact" in r.stdout, r
    rid3 = tv._run_with_setup(ctx)
    tv._tamper(ctx, "update phases set status='ok' where run_id=? and n=2", rid3)
    tv._tamper(ctx, "update phases set exit_code=0, status='ok' where run_id=? and n=1", rid3)
    tv._tamper(ctx, "update phases set cause='edited' where run_id=? and n=1", rid3)
    r = tv._verify(ctx, "--all")
    assert r.code == 1 and f"{rid}: intact" in r.stdout, r
    assert f"{rid3}: TAMPERED" in r.stdout and "phases" in r.stdout, r


# ------------------------------------------------ a key holder's rewrite

def _cells_seal(key, rid, seal, ch):
    msg = tv._enc(b"ward-cells-v1", "text") + tv._enc(rid.encode(), "text")
    msg += tv._enc(seal, "blob")
    for part in ("cells", "artifacts"):
        msg += tv._enc(len(ch[part]), "integer")
        msg += b"".join(tv._enc(bytes.fromhex(t), "blob") for t in ch[part])
    return tv._tag(key, msg)


def _reseal(con, key, rid, ch):
    """Seal rid again as ward would, with the key (what root can do); a
    version 1 seal as ward sealed before the chain of runs, version 2 as
    before the phases were sealed."""
    run = tv._rows(con, "runs", tv.RUN_COLS, "id = ?", "id", rid)[0]
    ch["run"] = [tv._tag(key, tv._enc(b"runs", "text") + tv._enc(c.encode(), "text") +
                         tv._enc(v, t))[:16].hex() for c, (v, t) in zip(tv.RUN_COLS, run)]
    v = ch["version"]
    msg = tv._enc(b"ward-seal-v%d" % v, "text")
    msg += tv._enc(rid.encode(), "text") + (tv._seal_link(ch) if v >= 2 else b"")
    for table in ("events", "outputs"):
        msg += tv._enc(ch[table]["count"], "integer")
        msg += tv._enc(bytes.fromhex(ch[table]["head"]), "blob")
    for part in ("run", "processes", "inputs") + (("phases",) if v >= 3 else ()):
        msg += tv._enc(len(ch[part]), "integer")
        msg += b"".join(tv._enc(bytes.fromhex(t), "blob") for t in ch[part])
    seal = tv._tag(key, msg)
    ch["seal"] = seal.hex()
    if "cells_seal" in ch:
        ch["cells_seal"] = _cells_seal(key, rid, seal, ch).hex()
    con.execute("update runs set chain=? where id=?", (json.dumps(ch), rid))


CELL_COLS = ["run_id", "n", "code", "started_ns", "ended_ns", "status", "result"]
ART_COLS = ["run_id", "cell", "path", "size", "sha256", "ts_ns"]


def _recells(ctx, rid, sql):
    """Change rid's cells or artifacts with sql (rid bound to its ?) and
    seal them again with the key."""
    key = tv._key(ctx)
    con = sqlite3.connect(ctx.db)
    con.text_factory = bytes
    try:
        con.execute(sql, (rid,) if "?" in sql else ())
        ch = json.loads(con.execute("select chain from runs where id=?", (rid,)).fetchone()[0])
        for table, cols, order in (("cells", CELL_COLS, "n"),
                                   ("artifacts", ART_COLS, "cell, path, ts_ns, size, sha256")):
            ch[table] = [tv._tag(key, tv._record(table, row))[:16].hex() for row in
                         tv._rows(con, table, cols, "run_id = ?", order, rid)]
        ch["cells_seal"] = _cells_seal(key, rid, bytes.fromhex(ch["seal"]), ch).hex()
        con.execute("update runs set chain=? where id=?", (json.dumps(ch), rid))
        con.commit()
    finally:
        con.close()


def test_seal_log_catches_a_key_holder(ctx):
    log = ctx.path("seals.log")
    a, b, c = _runs(ctx, 3, "--seal-log", log)
    lines = [json.loads(x) for x in open(log)]
    assert [(x["n"], x["run"]) for x in lines] == [(1, a), (2, b), (3, c)], lines
    assert all(x["cells_seal"] == _chain(ctx, x["run"])["cells_seal"] for x in lines), lines
    assert lines[1]["prev_run"] == a and lines[1]["prev"] == lines[0]["seal"], lines
    assert all(x["seal"] == _chain(ctx, x["run"])["seal"] for x in lines), lines
    assert lines[0]["db"] == os.path.realpath(ctx.db) and lines[0]["time"].endswith("Z"), lines
    assert os.stat(log).st_mode & 0o777 == 0o600
    r = tv._verify(ctx, "--seal-log", log)
    assert r.code == 0, r
    assert f"seal log {log}: intact (3 lines from #1; 0 runs sealed before its first line)" \
        in r.stdout, r
    # root (the key at hand) rewrites the newest run and seals it again:
    # the database alone cannot tell
    key = tv._key(ctx)
    con = sqlite3.connect(ctx.db)
    con.text_factory = bytes
    try:
        con.execute("update runs set cause='nothing happened' where id=?", (c,))
        ch = json.loads(con.execute("select chain from runs where id=?", (c,)).fetchone()[0])
        _reseal(con, key, c, ch)
        con.execute("update ward_meta set value=? where key='run_chain_head'",
                    (json.dumps({"n": 3, "run": c, "seal": ch["seal"]}),))
        con.commit()
    finally:
        con.close()
    r = tv._verify(ctx, "--all")
    assert r.code == 0 and f"{c}: intact" in r.stdout, r
    r = tv._verify(ctx, "--seal-log", log)
    assert r.code == 1, r
    assert f"  seal log line 3: run {c}: its seal is not the one logged at " in r.stdout, r
    # the newest run deleted and the head set back: no trace in the
    # database; the seal log names it
    _exec(ctx, ("delete from runs where id = ?", (c,)),
          ("update ward_meta set value=? where key='run_chain_head'",
           (json.dumps({"n": 2, "run": b, "seal": _chain(ctx, b)["seal"]}),)))
    r = tv._verify(ctx, "--all")
    assert r.code == 0, r
    r = tv._verify(ctx, "--all", "--seal-log", log)
    assert r.code == 1, r
    assert f"seal log line 3: run {c} (sealed #3 at " in r.stdout, r
    assert "is in the seal log but not in the database: deleted" in r.stdout, r
    # an artifact added to run a, its cells seal made again with the key
    _recells(ctx, a, "insert into artifacts values (?, 0, 'x.txt', 1, '%s', 1)" % ("0" * 64))
    assert tv._verify(ctx, a).code == 0
    r = tv._verify(ctx, "--seal-log", log)
    assert r.code == 1, r
    assert f"seal log line 1: run {a}: its cells and artifacts are not the ones sealed" \
        in r.stdout, r


def test_seal_log_names_unlogged_runs_and_foreign_lines(ctx):
    log = ctx.path("seals.log")
    _runs(ctx, 1)  # before the log: not checked against it
    a, = _runs(ctx, 1, "--seal-log", log)
    b, = _runs(ctx, 1)  # a ward without the log
    r = tv._verify(ctx, "--seal-log", log)
    assert r.code == 1, r
    assert f"chain of runs #3: run {b} (#3) is sealed in the database but has no line " \
        "in the seal log" in r.stdout, r
    # WARD_SEAL_LOG does the same as --seal-log
    env = dict(os.environ, WARD_SEAL_LOG=log)
    r = ctx.run("print(1)", "--json", env=env)
    assert r.code == 0, r
    assert json.loads(open(log).read().splitlines()[-1])["run"] == r.json()["run_id"]
    # a line from another database (another key)
    with open(log, "a") as f:
        f.write(json.dumps({"ward_seal": 1, "n": 9, "run": "f" * 16, "seal": "0" * 64,
                            "key_id": "0" * 16}) + "\n")
        f.write("garbage\n")
    r = tv._verify(ctx, "--seal-log", log)
    assert r.code == 1, r
    assert "seal log line 3: run ffffffffffffffff (#9) was sealed with key 0000000000000000" \
        in r.stdout, r
    assert "seal log line 4: not a ward seal line: garbage" in r.stdout, r


def test_seal_log_errors(ctx):
    # refused before any code runs
    r = ctx.run("print(1)", "--seal-log", "/dev/null")
    assert r.code == 125 and "--seal-log /dev/null: not a regular file" in r.stderr, r
    r = ctx.run("print(1)", "--seal-log", ctx.path("no", "such", "dir", "log"))
    assert r.code == 125 and "No such file or directory" in r.stderr, r
    assert not os.path.exists(ctx.db) or not ctx.sql("select id from runs"), "no run"
    _runs(ctx, 1)
    r = tv._verify(ctx, "--all", "--seal-log", ctx.path("missing.log"))
    assert r.code == 125 and "missing.log" in r.stderr, r


def test_seal_log_write_failure_is_an_error(ctx):
    """The seal log's file system is full: the run is recorded and sealed,
    ward says the log lacks it and exits 125; verify names the run."""
    mnt = ctx.path("small")
    os.makedirs(mnt)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", mnt],
                      capture_output=True).returncode:
        raise wardtest.Skip("cannot mount a small tmpfs (not root?)")
    try:
        log = os.path.join(mnt, "seals.log")
        a, = _runs(ctx, 1, "--seal-log", log)
        line = open(log).read()
        with open(log, "a") as f:  # the same line again: no room left
            f.write(line * (4096 // len(line) - 1))
        size = os.path.getsize(log)
        r = ctx.run("print(1)", "--seal-log", log)
        assert r.code == 125, r
        assert "the run is recorded and sealed in" in r.stderr, r
        assert "but its seal is not in the log" in r.stderr, r
        assert "No space left on device" in r.stderr, r
        assert os.path.getsize(log) == size, "no torn line left"
        rid = ctx.last_run()["id"]
        assert tv._verify(ctx, rid).code == 0
        r = tv._verify(ctx, "--seal-log", log)
        assert r.code == 1 and f"run {rid} (#2) is sealed in the database but has no line" \
            in r.stdout, r
        assert f"{a}" not in r.stdout.split("database: NOT INTACT")[1], r
    finally:
        subprocess.run(["umount", mnt])


def test_session_seal_log(ctx):
    """ward serve --seal-log: a session's seal goes to the log too."""
    import test_serve
    log = ctx.path("seals.log")
    s = test_serve.serve(ctx, "--seal-log", log)
    c = s.ok("session.create", {})
    assert s.run(c["session_id"], "print(6 * 7)")["status"] == "ok"
    s.ok("session.close", {"session_id": c["session_id"]})
    assert s.close() == 0
    lines = [json.loads(x) for x in open(log)]
    rid = c["run_id"]
    # the worker's seal of the run, then the server's seal of its cells
    assert [(x["run"], x.get("kind"), x["sealed_by"]) for x in lines] == \
        [(rid, None, "ward"), (rid, "cells", "server")], lines
    ch = _chain(ctx, rid)
    assert lines[1]["seal"] == ch["seal"] and lines[1]["cells_seal"] == ch["cells_seal"], lines
    assert tv._verify(ctx, "--seal-log", log).code == 0
    # root rewrites a cell and seals the cells again: only the log tells
    _recells(ctx, rid, "update cells set code='print(41)' where run_id = ?")
    assert tv._verify(ctx, rid).code == 0
    r = tv._verify(ctx, "--seal-log", log)
    assert r.code == 1, r
    assert f"seal log line 2: run {rid}: its cells and artifacts are not the ones sealed at " \
        in r.stdout, r


# ------------------------------------------------------------------ WAL

def _reader(ctx):
    """A reader holding a snapshot: the runs after it stay in the WAL."""
    p = subprocess.Popen(["/usr/bin/python3", "-c",
                          "import sqlite3, sys, time\n"
                          f"c = sqlite3.connect({ctx.db!r}, isolation_level=None)\n"
                          "c.execute('begin'); c.execute('select count(*) from runs').fetchall()\n"
                          "print('held', flush=True); time.sleep(120)\n"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "held\n"
    return p


def test_wal_is_copied_into_the_database_after_each_run(ctx):
    """After each run's end the database file holds the record: the WAL
    can go without losing a run."""
    ids = _runs(ctx, 3)
    os.unlink(ctx.db + "-wal")
    os.unlink(ctx.db + "-shm")
    r = tv._verify(ctx, "--all")
    assert r.code == 0, r
    for rid in ids:
        assert f"{rid}: intact" in r.stdout, r
    assert "3 runs linked" in r.stdout, r


def test_lost_wal_is_reported_with_the_runs_it_took(ctx):
    log = ctx.path("seals.log")
    os.environ["WARD_SEAL_LOG"] = log  # as --seal-log
    try:
        a, = _runs(ctx, 1)
        p = _reader(ctx)
        b, c = _runs(ctx, 2)
    finally:
        del os.environ["WARD_SEAL_LOG"]
    p.kill()  # no checkpoint at its close
    p.wait()
    # two copies of the files as they are: the WAL deleted, the WAL cut
    copies = {}
    for name in ("cut", "damaged"):
        copies[name] = ctx.path(name, "audit.db")
        os.makedirs(ctx.path(name))
        for suffix in ("", "-wal", "-shm", ".key"):
            shutil.copy2(ctx.db + suffix, copies[name] + suffix)
    os.unlink(ctx.db + "-wal")
    r = tv._verify(ctx, "--all")
    assert r.code == 1, r
    assert f"{a}: intact" in r.stdout and b not in r.stdout, r
    assert f"audit.db-wal is missing: the transactions in its frames" in r.stdout, r
    assert f"runs affected: those sealed after #1 (run {a}, the newest seal" in r.stdout, r
    # the seal log names the runs that are gone
    r = tv._verify(ctx, "--seal-log", log)
    assert r.code == 1, r
    for rid, n in ((b, 2), (c, 3)):
        assert f"run {rid} (sealed #{n} at " in r.stdout, r
    # a ward that opens the database finds the loss and keeps it: every
    # later verify says so
    _runs(ctx, 1)
    for _ in range(2):
        r = tv._verify(ctx, "--all", "--json")
        assert r.code == 1, r
        j, p_ = _db_problems(r)
        assert any(x["table"] == "WAL" and "found by a ward at" in x["what"] and
                   "is missing" in x["what"] for x in p_), p_
    # the WAL cut short in the middle
    db2 = copies["cut"]
    size = os.path.getsize(db2 + "-wal")
    os.truncate(db2 + "-wal", size // 2)
    r = tv._verify(ctx, "--all", db=db2)
    assert r.code == 1, r
    assert "audit.db-wal is cut short: committed frames" in r.stdout, r
    # one byte changed in the middle: SQLite would stop reading there
    db3 = copies["damaged"]
    with open(db3 + "-wal", "r+b") as f:
        f.seek(size // 2)
        b = f.read(1)
        f.seek(size // 2)
        f.write(bytes([b[0] ^ 0xff]))
    r = tv._verify(ctx, "--all", db=db3)
    assert r.code == 1, r
    assert "audit.db-wal is damaged: committed frames" in r.stdout, r


def test_a_head_that_is_not_wards_stops_runs_before_their_code(ctx):
    a, = _runs(ctx, 1)
    _exec(ctx, "update ward_meta set value = 'x' where key = 'run_chain_head'")
    marker = ctx.path("ran")
    r = ctx.run(f"open({marker!r}, 'w')")
    assert r.code == 125 and "ward_meta's run_chain_head is not ward's" in r.stderr, r
    assert "DELETE FROM ward_meta WHERE key = 'run_chain_head'" in r.stderr, r
    assert not os.path.exists(marker)
    r = tv._verify(ctx, "--all")
    assert r.code == 1 and "run_chain_head is not ward's: edited" in r.stdout, r
    # what the message says to do: the chain starts again, verify says so
    _exec(ctx, "delete from ward_meta where key = 'run_chain_head'")
    b, = _runs(ctx, 1)
    r = tv._verify(ctx, "--all")
    assert r.code == 1 and f"runs {a} and {b} both have place #1" in r.stdout or \
        f"runs {b} and {a} both have place #1" in r.stdout, r


def test_seal_syslog(ctx):
    """--seal-syslog: each seal goes to the system log too, one datagram
    per seal that `journalctl -o cat` gives back as a seal log
    ($WARD_SEAL_SYSLOG names the socket: here the test's own)."""
    import socket
    sock_path = ctx.path("log.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    s.settimeout(5)
    try:
        env = dict(os.environ, WARD_SEAL_SYSLOG=sock_path)
        ids = []
        for i in range(2):
            r = ctx.run(f"print({i})", "--json", env=env)
            assert r.code == 0, r
            ids.append(r.json()["run_id"])
        msgs = [s.recv(4096).decode() for _ in ids]
    finally:
        s.close()
    assert all(m.startswith("<85>ward-seal: {") for m in msgs), msgs
    lines = [m.split(": ", 1)[1] for m in msgs]
    assert [json.loads(x)["run"] for x in lines] == ids, lines
    log = ctx.write("from-journal.log", "".join(x + "\n" for x in lines))
    assert tv._verify(ctx, "--seal-log", log).code == 0
    # nobody listening: said before the code runs
    marker = ctx.path("ran")
    r = ctx.run(f"open({marker!r}, 'w')", env=env)
    assert r.code == 125 and f"system log {sock_path}: Connection refused" in r.stderr, r
    assert not os.path.exists(marker)
    r = ctx.run("print(1)", "--seal-syslog")
    if os.path.exists("/dev/log"):
        assert r.code == 0, r
    else:
        assert r.code == 125 and "system log /dev/log: No such file" in r.stderr, r


def test_the_code_cannot_reach_the_seal_log(ctx):
    """The seal log is ward's, like the database: refused inside the
    workdir (the only place the code can write); elsewhere hidden from the
    code even when the policy shows its directory."""
    wd = ctx.path("wd")
    os.makedirs(wd)
    r = ctx.run("print(1)", "--workdir", wd, "--seal-log", os.path.join(wd, "seals.log"))
    assert r.code == 125 and "seal log" in r.stderr and "inside the workdir" in r.stderr, r
    # (not below /tmp: the run has its own)
    d = tempfile.mkdtemp(prefix="ward-seal-log-", dir="/var/tmp")
    os.chmod(d, 0o755)
    log = os.path.join(d, "seals.log")
    with open(os.path.join(d, "other"), "w") as f:
        f.write("x")
    os.chmod(os.path.join(d, "other"), 0o644)
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "default.json")) as f:
        pol = json.load(f)
    pol["fs"].insert(0, {"id": "logs", "path": d, "allow": ["read", "stat"]})
    pf = ctx.path("logs-policy.json")
    with open(pf, "w") as f:
        json.dump(pol, f)
    code = (f"import os\nprint(open({os.path.join(d, 'other')!r}).read())\n"
            f"print(sorted(os.listdir({d!r})))\n"
            f"try:\n    open({log!r}).read()\n    print('read')\n"
            f"except OSError as e:\n    print('refused', e.errno)\n")
    try:
        for _ in range(2):  # the second run: the log exists
            r = ctx.run(code, "--policy", pf, "--seal-log", log)
            # not listed; an open is the floor's (EACCES) or finds nothing
            assert r.code == 0 and r.stdout in ("x\n['other']\nrefused 2\n",
                                                "x\n['other']\nrefused 13\n"), r
        assert os.path.getsize(log) > 0
    finally:
        shutil.rmtree(d)
