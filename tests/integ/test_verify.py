"""ward verify: the hash chain of each run and its seal. Real runs are made
with ward run, then the SQLite file is tampered with in every way a forger
could (edit, delete, insert, reorder, the run row, its processes, a chain
recomputed without the key); each must be caught with its place named. Also:
an independent implementation of docs/schema.md's "The hash chain" checks
ward's hashes, and the database is out of the code's reach."""
import hashlib
import hmac
import json
import os
import shutil
import sqlite3
import struct

import wardtest

CODE = ("import os, sys\n"
        "print('one', flush=True)\n"
        "sys.stderr.write('two\\n'); sys.stderr.flush()\n"
        "try:\n    open('/etc/shadow')\nexcept OSError:\n    print('denied', flush=True)\n"
        "pid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\n"
        "print('three', flush=True)\n")


def _run(ctx, code=CODE):
    r, j = ctx.run_json(code)
    assert r.code == 0, r
    return j


def _verify(ctx, *args, db=None):
    return ctx.ward("verify", "--db", db or ctx.db, *args)


def _tamper(ctx, sql, *params):
    con = sqlite3.connect(ctx.db)
    try:
        con.execute(sql, params)
        con.commit()
    finally:
        con.close()


def _problems(ctx, run_id, *args):
    r = _verify(ctx, run_id, "--json", *args)
    assert r.code in (0, 1), r
    j = json.loads(r.stdout)
    return r, j, j["runs"][0]["problems"]


def _named(problems, table, row=None, column=None):
    return [p for p in problems if p["table"] == table and
            (row is None or p["row"] == row) and
            (column is None or p["column"] == column)]


# ---------------------------------------------------------------- intact

def test_verify_intact_text_and_json(ctx):
    j = _run(ctx)
    rid = j["run_id"]
    # ward run --json gives the seal to keep elsewhere
    assert len(j["chain"]["seal"]) == 64 and j["chain"]["alg"] == "hmac-sha256", j
    r = _verify(ctx, rid)
    assert r.code == 0, r
    assert r.stdout.startswith(f"{rid}: intact (ok; "), r
    assert j["chain"]["seal"] in r.stdout, r
    r = _verify(ctx, rid[:6], "--json")
    assert r.code == 0, r
    v = json.loads(r.stdout)
    assert v["ok"] and v["key"]["available"] and v["tampered"] == 0, v
    run = v["runs"][0]
    assert run["verdict"] == "intact" and run["key_checked"] and run["seal_checked"], run
    assert run["events"] == len(ctx.events(rid)) and run["outputs"] >= 3, run
    assert run["seal"] == j["chain"]["seal"] and run["problems"] == [], run
    last = ctx.sql("select hash from events where run_id=? order by seq desc limit 1", rid)[0]
    assert run["heads"]["events"] == last["hash"][:64], (run, last)
    # the anchored seal matches
    assert _verify(ctx, rid, "--seal", j["chain"]["seal"]).code == 0
    # the key: next to the database, mode 0600
    st = os.stat(ctx.db + ".key")
    assert st.st_mode & 0o777 == 0o600, oct(st.st_mode)


def test_a_key_that_is_not_the_sealing_one_is_an_error(ctx):
    """A wrong key (another valid one) never falls back silently to the
    links: the verdict says so, and verify fails."""
    rid = _run(ctx)["run_id"]
    other = ctx.path("other.key")
    with open(other, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    os.chmod(other, 0o600)
    r = _verify(ctx, rid, "--key", other)
    assert r.code == 1, r
    assert r.stdout.startswith(f"{rid}: wrong-key (ok; "), r
    assert "is not the one that sealed the run" in r.stdout and "--key FILE" in r.stdout, r
    assert "links only" not in r.stdout, r
    r = _verify(ctx, rid, "--key", other, "--json")
    assert r.code == 1, r
    v = json.loads(r.stdout)
    assert not v["ok"] and v["runs"][0]["verdict"] == "wrong-key", v
    assert not v["runs"][0]["key_checked"], v
    # the right key: intact again; no key at all: links only, exit 0
    assert _verify(ctx, rid).code == 0
    os.rename(ctx.db + ".key", ctx.db + ".key.away")
    try:
        r = _verify(ctx, rid)
        assert r.code == 0 and "links only, no key" in r.stdout, r
    finally:
        os.rename(ctx.db + ".key.away", ctx.db + ".key")


def test_verify_all_and_strict(ctx):
    a, b = _run(ctx)["run_id"], _run(ctx, "print('b')")["run_id"]
    r = _verify(ctx, "--all")
    assert r.code == 0, r
    assert f"{a}: intact" in r.stdout and f"{b}: intact" in r.stdout, r
    assert "verify: 2 runs: 2 intact or not checkable, 0 tampered" in r.stdout, r
    _tamper(ctx, "update outputs set data = x'00' where run_id = ? and seq = 1", b)
    r = _verify(ctx, "--all")
    assert r.code == 1, r
    assert f"{a}: intact" in r.stdout and f"{b}: TAMPERED" in r.stdout, r
    assert "  outputs seq 1: changed" in r.stdout, r
    # a run made before the chain (schema version 3): unchained, exit 0;
    # --strict fails. Make one: an older run looks like this.
    _tamper(ctx, "update outputs set data = x'62' where run_id = ? and seq = 1", b)
    old = "0123456789abcdef"
    _tamper(ctx, "insert into runs(id, started_ns, status) values (?, 1000, 'ok')", old)
    r = _verify(ctx, old)
    assert r.code == 0, r
    assert f"{old}: unchained (recorded before the hash chain" in r.stdout, r
    r = _verify(ctx, old, "--strict")
    assert r.code == 1, r


def test_verify_version3_file(ctx):
    """A database from before the chain (schema version 3), read as it is:
    every run unchained, exit 0; --strict fails."""
    rid = _run(ctx, "print(1)")["run_id"]
    con = sqlite3.connect(ctx.db)
    con.executescript("ALTER TABLE runs DROP COLUMN env; ALTER TABLE runs DROP COLUMN chain;"
                      "ALTER TABLE events DROP COLUMN pyframes; ALTER TABLE events DROP COLUMN hash;"
                      "ALTER TABLE outputs DROP COLUMN hash; DROP TABLE inputs;"
                      "PRAGMA user_version = 3;")
    con.close()
    os.unlink(ctx.db + ".key")
    r = _verify(ctx, "--all")
    assert r.code == 0 and f"{rid}: unchained (recorded before the hash chain" in r.stdout, r
    assert _verify(ctx, "--all", "--strict").code == 1
    assert ctx.sql("pragma user_version")[0]["user_version"] == 3, "verify never migrates"


def test_run_of_a_killed_ward(ctx):
    """ward SIGKILLed mid-run: the run is 'running' (rows checked, no seal
    yet); the next ward run closes it as aborted and seals it (sealed_by
    reaper); then it verifies intact, and an edit of its rows is caught."""
    import signal
    import subprocess
    marker = "ward-verify-kill-%d" % os.getpid()
    code = f"import time\nprint('before', flush=True)\ntime.sleep(60)  # {marker}"
    p = wardtest.spawn([wardtest.ward_bin(), "run", "--db", ctx.db, "-c", code],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wardtest.wait_until(lambda: len(wardtest.pids_matching(marker)) >= 2)

    def printed():
        # ward records the run while the sandbox is set up: its processes
        # exist before the database has its tables
        try:
            return ctx.sql("select count(*) n from outputs")[0]["n"] >= 1
        except sqlite3.OperationalError:
            return False
    assert wardtest.wait_until(printed)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert wardtest.wait_until(lambda: not wardtest.pids_matching(marker), 5)
    rid = ctx.last_run()["id"]
    r, j, p_ = _problems(ctx, rid)
    assert r.code == 0 and j["runs"][0]["verdict"] == "running" and p_ == [], r
    assert _verify(ctx, rid, "--strict").code == 1
    _run(ctx, "print(2)")  # closes the dead ward's run
    row = ctx.sql("select status, chain from runs where id = ?", rid)[0]
    assert row["status"] == "aborted" and json.loads(row["chain"])["sealed_by"] == "reaper", row
    r = _verify(ctx, rid)
    assert r.code == 0 and f"{rid}: intact (aborted; " in r.stdout, r
    _tamper(ctx, "update runs set cause = 'fine' where id = ?", rid)
    r = _verify(ctx, rid)
    assert r.code == 1 and "runs.cause: changed" in r.stdout, r


def test_verify_session_run(ctx):
    """A session of ward serve is one run: sealed at its end like ward run."""
    import test_serve
    s = test_serve.serve(ctx)
    c = s.ok("session.create", {})
    assert s.run(c["session_id"], "print(6 * 7)")["status"] == "ok"
    s.ok("session.close", {"session_id": c["session_id"]})
    assert s.close() == 0
    rid = c["run_id"]
    chain = json.loads(ctx.sql("select chain from runs where id = ?", rid)[0]["chain"])
    assert chain["cells_sealed_by"] == "server" and len(chain["cells"]) == 1, chain
    r = _verify(ctx, rid)
    assert r.code == 0 and f"{rid}: intact (ok; " in r.stdout, r
    assert "not sealed" not in r.stdout, r
    _tamper(ctx, "update cells set code = 'print(41)' where run_id = ?", rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and _named(p, "cells", 1) and len(p) == 1, p
    _tamper(ctx, "update outputs set data = ? where run_id = ?", b"41\n", rid)
    r = _verify(ctx, rid)
    assert r.code == 1 and "  outputs seq 1: changed" in r.stdout, r


def test_run_artifacts_sealed(ctx):
    """ward run's own artifacts (cell 0, the files its code wrote) are
    written before its end and sealed with it."""
    rid = _run(ctx, "open('made.txt', 'w').write('x')")["run_id"]
    arts = ctx.sql("select path from artifacts where run_id = ?", rid)
    assert [a["path"] for a in arts] == ["made.txt"], arts
    assert _verify(ctx, rid).code == 0
    _tamper(ctx, "update artifacts set sha256 = ? where run_id = ?", "0" * 64, rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and _named(p, "artifacts") and len(p) == 1, p


# ---------------------------------------------------------------- tampering

def test_edit_event_field(ctx):
    rid = _run(ctx)["run_id"]
    seq = ctx.denials(rid)[0]["seq"]
    _tamper(ctx, "update events set decision='allow', errno=0 where run_id=? and seq=?", rid, seq)
    r, j, p = _problems(ctx, rid)
    assert r.code == 1 and not j["ok"] and j["runs"][0]["verdict"] == "tampered", r
    assert _named(p, "events", seq) and len(p) == 1, p
    assert "changed" in p[0]["what"], p
    r = _verify(ctx, rid)
    assert r.code == 1 and f"  events seq {seq}: changed" in r.stdout, r


def test_edit_output_data(ctx):
    rid = _run(ctx)["run_id"]
    seq = ctx.sql("select seq from outputs where run_id=? and instr(data, ?) > 0",
                  rid, b"one\n")[0]["seq"]  # chunks may join: find it
    _tamper(ctx, "update outputs set data=cast(replace(data, ?, ?) as blob) where run_id=? and seq=?",
            b"one\n", b"eno\n", rid, seq)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and _named(p, "outputs", seq) and len(p) == 1, p


def test_delete_event_and_output(ctx):
    rid = _run(ctx)["run_id"]
    n = len(ctx.events(rid))
    _tamper(ctx, "delete from events where run_id=? and seq=5", rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1, r
    miss = _named(p, "events", 5)
    assert miss and "deleted" in miss[0]["what"], p
    # the last row gone: the seal's count says so
    _tamper(ctx, "delete from events where run_id=? and seq=?", rid, n)
    _tamper(ctx, "delete from outputs where run_id=? and seq=1", rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1, r
    assert any("deleted" in x["what"] and x["row"] == n for x in _named(p, "events")), p
    assert any("deleted" in x["what"] for x in _named(p, "outputs", 1)), p


def test_delete_last_output(ctx):
    rid = _run(ctx)["run_id"]
    m = ctx.sql("select max(seq) m from outputs where run_id=?", rid)[0]["m"]
    _tamper(ctx, "delete from outputs where run_id=? and seq=?", rid, m)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and _named(p, "outputs", m), p
    assert "deleted" in _named(p, "outputs", m)[0]["what"], p


def test_insert_forged_event(ctx):
    rid = _run(ctx)["run_id"]
    last = ctx.events(rid)[-1]
    forged = dict(last, seq=last["seq"] + 1, syscall="openat", target="/etc/passwd")
    cols = ",".join(forged)
    _tamper(ctx, f"insert into events({cols}) values ({','.join('?' * len(forged))})",
            *forged.values())
    r, _, p = _problems(ctx, rid)
    assert r.code == 1, r
    ins = _named(p, "events", last["seq"] + 1)
    assert ins and any("inserted" in x["what"] for x in ins), p


def test_reorder_events(ctx):
    rid = _run(ctx)["run_id"]
    _tamper(ctx, "update events set seq = -1 where run_id=? and seq=3", rid)
    _tamper(ctx, "update events set seq = 3 where run_id=? and seq=4", rid)
    _tamper(ctx, "update events set seq = 4 where run_id=? and seq=-1", rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1, r
    assert _named(p, "events", 3) and _named(p, "events", 4), p
    assert {x["row"] for x in p} == {3, 4}, p  # not 5: it still follows old 4


def test_edit_run_row(ctx):
    for col, val in (("exit_code", 0), ("status", "error"), ("policy_json", "{}"),
                     ("code", b"print('harmless')"), ("cause", "nothing")):
        r, j = ctx.run_json("import sys; sys.exit(3)" if col == "exit_code" else CODE)
        rid = j["run_id"]
        _tamper(ctx, f"update runs set {col} = ? where id = ?", val, rid)
        r, _, p = _problems(ctx, rid)
        assert r.code == 1, (col, r)
        assert _named(p, "runs", column=col), (col, p)
        r = _verify(ctx, rid)
        assert f"  runs.{col}: changed" in r.stdout, (col, r)


def test_edit_input_and_env(ctx):
    """The files a run was given (inputs) and its --env are sealed too."""
    src = ctx.write("data.txt", "42\n")
    r, j = ctx.run_json("print(open('data.txt').read())", "--input", src, "--env", "K=v")
    assert r.code == 0, r
    rid = j["run_id"]
    assert _verify(ctx, rid).code == 0
    _tamper(ctx, "update inputs set data = ?, sha256 = ? where run_id = ? and n = 1",
            b"41\n", hashlib.sha256(b"41\n").hexdigest(), rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and _named(p, "inputs", 1) and len(p) == 1, p
    _tamper(ctx, "update runs set env = '[]' where id = ?", rid)
    r, _, p = _problems(ctx, rid)
    assert _named(p, "runs", column="env"), p


def test_edit_process_row(ctx):
    rid = _run(ctx)["run_id"]
    procs = ctx.sql("select serial, exe from processes where run_id=? and kind='process' "
                    "order by serial", rid)
    assert len(procs) >= 2, procs
    s = procs[1]["serial"]
    _tamper(ctx, "update processes set exe='/usr/bin/harmless', exit_code=0 "
            "where run_id=? and serial=?", rid, s)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and _named(p, "processes", s) and len(p) == 1, p
    _tamper(ctx, "delete from processes where run_id=? and serial=?", rid,
            ctx.sql("select max(serial) m from processes where run_id=?", rid)[0]["m"])
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and any("deleted" in x["what"] for x in _named(p, "processes")), p


def _run_with_setup(ctx):
    from test_phases import setup_policy
    r, j = ctx.run_json(CODE, "--policy", setup_policy(ctx),
                        "--setup-code", "open('made', 'w').write('x')")
    assert r.code == 0 and j["setup"]["status"] == "ok", r
    return j["run_id"]


def test_edit_delete_insert_phase_row(ctx):
    """The phases rows (ward run --setup) are sealed: each column edited, a
    row deleted, one inserted, each named with its row n."""
    rid = _run_with_setup(ctx)
    assert _verify(ctx, rid).code == 0
    other = _run(ctx, "print(1)")["run_id"]
    for col, val in (("run_id", other), ("n", 7), ("name", "main"), ("started_ns", 1),
                     ("ended_ns", 2), ("first_serial", 5), ("last_serial", 9),
                     ("status", "ok2"), ("exit_code", 4), ("cause", "none"),
                     ("code", b"print('other setup')"), ("layers", "[]")):
        old = ctx.sql(f"select {col} v from phases where run_id=? and n=1", rid)[0]["v"]
        _tamper(ctx, f"update phases set {col}=? where run_id=? and n=1", val, rid)
        r, _, p = _problems(ctx, rid)
        assert r.code == 1 and p, (col, p)
        assert all(x["table"] == "phases" for x in p), (col, p)
        if col not in ("run_id", "n"):  # (those move the row away)
            assert _named(p, "phases", 1) and len(p) == 1, (col, p)
            assert "changed" in p[0]["what"], (col, p)
        r = _verify(ctx, rid)
        assert "phases" in r.stdout, (col, r)
        # put it back: intact again
        key = {"run_id": (other, 1), "n": (rid, val)}.get(col, (rid, 1))
        _tamper(ctx, f"update phases set {col}=? where run_id=? and n=?", old, *key)
        assert _verify(ctx, rid).code == 0, col
    assert _verify(ctx, other).code == 0
    _tamper(ctx, "delete from phases where run_id=? and n=2", rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and len(p) == 1 and "deleted" in p[0]["what"], p
    assert p[0]["table"] == "phases", p
    _tamper(ctx, "insert into phases(run_id, n, name, started_ns, ended_ns, first_serial,"
            " last_serial, status) values (?, 2, 'main', 1, 2, 0, 0, 'ok')", rid)
    _tamper(ctx, "insert into phases(run_id, n, name, started_ns, ended_ns, first_serial,"
            " last_serial, status) values (?, 3, 'setup', 1, 2, 0, 0, 'ok')", rid)
    r, _, p = _problems(ctx, rid)
    assert _named(p, "phases", 3), p
    assert "inserted" in _named(p, "phases", 3)[0]["what"], p


def test_phases_inserted_into_a_run_without(ctx):
    """A run without a setup has no phases, and the seal says so."""
    rid = _run(ctx)["run_id"]
    _tamper(ctx, "insert into phases(run_id, n, name, started_ns, ended_ns, first_serial,"
            " last_serial, status, code) values (?, 1, 'setup', 1, 2, 0, 0, 'ok', x'78')", rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and _named(p, "phases", 1), p
    assert "inserted" in p[0]["what"], p


def test_seal_removed_or_chain_stripped(ctx):
    rid = _run(ctx)["run_id"]
    _tamper(ctx, "update runs set chain = NULL where id = ?", rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and _named(p, "runs", column="chain"), p
    # every hash gone too: made to look like a run from before the chain
    _tamper(ctx, "update events set hash = NULL where run_id = ?", rid)
    _tamper(ctx, "update outputs set hash = NULL where run_id = ?", rid)
    r, _, p = _problems(ctx, rid)
    assert r.code == 1 and _named(p, "runs", column="chain"), p
    assert "removed" in p[0]["what"], p


# ------------------------------------------- the chain, by another program

def _enc(v, t):
    t = t.decode() if isinstance(t, bytes) else t
    if t == "null":
        return b"N"
    if t == "integer":
        return b"I" + struct.pack(">q", v)
    if t == "text":
        return b"T" + struct.pack(">Q", len(v)) + v
    assert t == "blob", t
    return b"B" + struct.pack(">Q", len(v)) + v


EVENT_COLS = ["run_id", "seq", "ts_ns", "pid", "tid", "proc_serial", "nr", "syscall",
              "args", "raw", "target", "decision", "rule", "reason", "errno",
              "would_deny", "backtrace", "pyframes", "result"]
# columns hashed only when not NULL (docs/schema.md): events.result
OPTIONAL = {"result"}
OUTPUT_COLS = ["run_id", "seq", "ts_ns", "stream", "data"]
RUN_COLS = ["id", "started_ns", "ended_ns", "duration_ms", "argv", "language",
            "interpreter", "code_name", "code", "code_sha256", "policy_name",
            "policy_json", "policy_sha256", "workdir", "limits", "uid", "exit_code",
            "signal", "status", "cause", "stdout_bytes", "stderr_bytes",
            "stdout_truncated", "stderr_truncated", "events", "denials", "processes",
            "host", "kernel", "ward_version", "ward_pid", "ward_start_ticks", "boot_id",
            "layers", "env"]
PROC_COLS = ["run_id", "serial", "parent_serial", "pid", "tgid", "ppid", "kind",
             "start_ns", "start_ticks", "exe", "argv", "exec_ns", "exit_ns",
             "exit_code", "signal"]
INPUT_COLS = ["run_id", "n", "name", "size", "sha256", "data"]
PHASE_COLS = ["run_id", "n", "name", "started_ns", "ended_ns", "first_serial",
              "last_serial", "status", "exit_code", "cause", "code", "layers"]


def _rows(con, table, cols, where, order, *params):
    sel = ", ".join(f"{c}, typeof({c})" for c in cols)
    out = []
    for row in con.execute(f"select {sel} from {table} where {where} order by {order}", params):
        out.append([(row[2 * i], row[2 * i + 1]) for i in range(len(cols))])
    return out


def _record(table, row, cols=()):
    return _enc(table.encode(), "text") + b"".join(
        _enc(v, t) for (v, t), c in zip(row, list(cols) + [None] * len(row))
        if not (c in OPTIONAL and t in ("null", b"null")))


def _key(ctx):
    return bytes.fromhex(open(ctx.db + ".key").read().strip())


def _tag(key, data):
    return hmac.new(key, data, hashlib.sha256).digest()


def _links(con, rid, table, cols, key=None):
    """(seq, hash text) for each row, recomputed from the columns."""
    link, out = bytes(32), []
    for row in _rows(con, table, cols, "run_id = ?", "seq", rid):
        link = hashlib.sha256(link + _record(table, row, cols)).digest()
        text = link.hex()
        if key:
            text += ":" + _tag(key, b"ward-link-v1" + link)[:16].hex()
        out.append((row[1][0], text))
    return out


def _seal_link(chain):
    """The chain of runs' part of a version 2 seal (docs/schema.md)."""
    out = _enc(chain["n"], "integer")
    if chain["prev"] is None:
        return out + b"N" + b"N"
    return (out + _enc(chain["prev"]["run"].encode(), "text") +
            _enc(bytes.fromhex(chain["prev"]["seal"]), "blob"))


def test_chain_matches_docs(ctx):
    """docs/schema.md's serialization, written again here: the same hashes,
    tags and seal as ward's."""
    rid = _run_with_setup(ctx)
    key = _key(ctx)
    con = sqlite3.connect(ctx.db)
    con.text_factory = bytes
    try:
        for table, cols in (("events", EVENT_COLS), ("outputs", OUTPUT_COLS)):
            want = _links(con, rid, table, cols, key)
            got = [(s, h.decode()) for s, h in
                   con.execute(f"select seq, hash from {table} where run_id=? order by seq", (rid,))]
            assert want == got and got, (table, want[:2], got[:2])
        chain = json.loads(con.execute("select chain from runs where id=?", (rid,)).fetchone()[0])
        run = _rows(con, "runs", RUN_COLS, "id = ?", "id", rid)[0]
        run_tags = [_tag(key, _enc(b"runs", "text") + _enc(c.encode(), "text") + _enc(v, t))[:16]
                    for c, (v, t) in zip(RUN_COLS, run)]
        assert [t.hex() for t in run_tags] == chain["run"], chain
        proc_tags = [_tag(key, _record("processes", r))[:16]
                     for r in _rows(con, "processes", PROC_COLS, "run_id = ?", "serial", rid)]
        assert [t.hex() for t in proc_tags] == chain["processes"], chain
        input_tags = [_tag(key, _record("inputs", r))[:16]
                      for r in _rows(con, "inputs", INPUT_COLS, "run_id = ?", "n", rid)]
        phase_tags = [_tag(key, _record("phases", r))[:16]
                      for r in _rows(con, "phases", PHASE_COLS, "run_id = ?", "n", rid)]
        assert len(phase_tags) == 2, "a run with a setup and its code"
        assert [t.hex() for t in phase_tags] == chain["phases"], chain
        assert chain["version"] == 3, chain
        msg = _enc(b"ward-seal-v3", "text") + _enc(rid.encode(), "text")
        msg += _seal_link(chain)
        for table in ("events", "outputs"):
            msg += _enc(chain[table]["count"], "integer")
            msg += _enc(bytes.fromhex(chain[table]["head"]), "blob")
        for tags in (run_tags, proc_tags, input_tags, phase_tags):
            msg += _enc(len(tags), "integer") + b"".join(_enc(t, "blob") for t in tags)
        assert _tag(key, msg).hex() == chain["seal"], chain
        assert chain["key_id"] == hashlib.sha256(b"ward-key-id-v1" + key).hexdigest()[:16]
    finally:
        con.close()


def test_forger_without_key_recomputes_chain(ctx):
    """Someone who can write the database but not read its key edits an
    event and recomputes the plain SHA-256 chain (and the heads in the seal):
    the links all agree, the keyed tags do not."""
    rid = _run(ctx)["run_id"]
    seq = ctx.denials(rid)[0]["seq"]
    con = sqlite3.connect(ctx.db)
    con.text_factory = bytes
    try:
        con.execute("update events set decision='allow', errno=0, rule=NULL "
                    "where run_id=? and seq=?", (rid, seq))
        old = dict(con.execute("select seq, hash from events where run_id=?", (rid,)).fetchall())
        new = _links(con, rid, "events", EVENT_COLS)
        for s, h in new:  # the tag cannot be made: keep the old one
            tag = old[s].decode().split(":")[1]
            con.execute("update events set hash=? where run_id=? and seq=?",
                        (f"{h}:{tag}", rid, s))
        chain = json.loads(con.execute("select chain from runs where id=?", (rid,)).fetchone()[0])
        chain["events"]["head"] = new[-1][1]
        con.execute("update runs set chain=? where id=?", (json.dumps(chain), rid))
        con.commit()
    finally:
        con.close()
    r, _, p = _problems(ctx, rid)
    assert r.code == 1, r
    first = sorted(x["row"] for x in _named(p, "events"))[0]
    assert first == seq, p
    assert "forged" in _named(p, "events", seq)[0]["what"], p
    assert _named(p, "runs", column="chain"), p  # the seal covers the head
    # Without the key, only the links are checked: the forgery passes
    # them, and ward verify says what it could not check.
    hidden = ctx.path("elsewhere.key")
    shutil.move(ctx.db + ".key", hidden)
    try:
        r = _verify(ctx, rid)
        assert r.code == 0, r
        assert "only the chains' links, counts and heads are checked" in r.stderr, r
        assert "links only, no key" in r.stdout, r
        assert _verify(ctx, rid, "--strict").code == 1
        # a plain edit is still caught by the links alone
        _tamper(ctx, "update events set target='/x' where run_id=? and seq=1", rid)
        r = _verify(ctx, rid)
        assert r.code == 1 and "  events seq 1: changed" in r.stdout, r
        # --key names a key kept elsewhere
        r = _verify(ctx, rid, "--key", hidden)
        assert r.code == 1 and "forged" in r.stdout, r
    finally:
        shutil.move(hidden, ctx.db + ".key")


def test_seal_anchor_catches_a_key_holder(ctx):
    """Whoever holds the key can seal a rewrite again; a seal kept
    elsewhere (ward run --json) does not match it any more."""
    j = _run(ctx)
    rid, seal = j["run_id"], j["chain"]["seal"]
    other = "0" * 64
    r = _verify(ctx, rid, "--seal", other)
    assert r.code == 1 and "--seal" in r.stdout, r
    assert _verify(ctx, rid, "--seal", seal).code == 0


# ---------------------------------------------------------------- errors

def test_verify_errors(ctx):
    r = ctx.ward("verify", "--help")
    assert r.code == 0 and "usage: ward verify" in r.stdout, r
    _run(ctx, "print(1)")
    for args, words in (((), "which runs?"),
                        (("ffffffffffff",), "no run matches 'ffffffffffff'"),
                        (("--all", "last"), "not both"),
                        (("--bogus",), "unknown option"),
                        (("--seal", "abc", "last"), "64 hex digits")):
        r = _verify(ctx, *args)
        assert r.code == 125 and words in r.stderr, (args, r)
        assert r.stderr.count("\n") == 1, r
    # foreign, corrupt and missing databases
    foreign = ctx.path("foreign.db")
    con = sqlite3.connect(foreign)
    con.execute("create table t(x)")
    con.commit()
    con.close()
    r = _verify(ctx, "--all", db=foreign)
    assert r.code == 125 and "not a ward audit database" in r.stderr, r
    junk = ctx.write("junk.db", "this is not a database at all\n" * 100)
    r = _verify(ctx, "--all", db=junk)
    assert r.code == 125 and "junk.db" in r.stderr, r
    r = _verify(ctx, "--all", db=ctx.path("missing.db"))
    assert r.code == 125 and "missing.db" in r.stderr, r
    # a key that others may read is not trusted
    os.chmod(ctx.db + ".key", 0o644)
    try:
        r = _verify(ctx, "last")
        assert r.code == 125 and "chmod 600" in r.stderr, r
    finally:
        os.chmod(ctx.db + ".key", 0o600)
    # a key that is not a key
    bad = ctx.write("bad.key", "nope\n", mode=0o600)
    r = _verify(ctx, "last", "--key", bad)
    assert r.code == 125 and "not a ward chain key" in r.stderr, r


# ------------------------------------------------ the record out of reach

def test_db_inside_workdir_is_refused(ctx):
    wd = ctx.path("wd")
    os.makedirs(wd)
    for db in (os.path.join(wd, "audit.db"), os.path.join(wd, "sub", "x.db")):
        r = ctx.ward("run", "--workdir", wd, "--db", db, "-c", "print(1)", db=False)
        assert r.code == 125, r
        assert "is inside the workdir" in r.stderr and "choose a database outside" in r.stderr, r
        assert not os.path.exists(db), db
    # the same through $WARD_DB, and a workdir above the database
    env = dict(os.environ, WARD_DB=os.path.join(wd, "env.db"))
    r = ctx.ward("run", "--workdir", wd, "-c", "print(1)", db=False, env=env)
    assert r.code == 125 and "is inside the workdir" in r.stderr, r
    r = ctx.ward("run", "--workdir", ctx.tmp, "-c", "print(1)")
    assert r.code == 125 and "is inside the workdir" in r.stderr, r
    assert not os.path.exists(ctx.db)


TOUCH = """import json, os
DB = {db!r}
D = os.path.dirname(DB)
tries = [("read db", lambda: open(DB, "rb").read(1)),
         ("write db", lambda: open(DB, "r+b")),
         ("append wal", lambda: open(DB + "-wal", "ab")),
         ("create shm", lambda: open(DB + "-shm", "w")),
         ("read key", lambda: open(DB + ".key").read()),
         ("unlink db", lambda: os.unlink(DB)),
         ("rename key", lambda: os.rename(DB + ".key", D + "/k2")),
         ("replace db", lambda: os.rename(D + "/other", DB)),
         ("rename dir", lambda: os.rename(D, D + "-moved"))]
res = {{}}
for name, f in tries:
    try:
        f()
        res[name] = "done"
    except OSError as e:
        res[name] = e.errno
print(json.dumps(res))
"""


def test_code_cannot_touch_the_record(ctx):
    """A database the code can see (not under the run's private /tmp), a
    policy that grants its directory, and audit mode: every access to the
    database, its -wal, -shm and key, and renaming its directory fail, and
    the record says ward's floor denied them."""
    import tempfile
    d = tempfile.mkdtemp(prefix="ward-verify-", dir="/var/tmp")
    try:
        os.chmod(d, 0o755)
        db = os.path.join(d, "audit.db")
        with open(os.path.join(d, "other"), "w") as f:
            f.write("x")
        assert ctx.ward("run", "--db", db, "-c", "print(1)", db=False).code == 0
        pol = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..",
                                          "profiles", "default.json")))
        pol["name"] = "grants-the-db-dir"
        pol["fs"].append({"id": "dbdir", "path": d,
                          "allow": ["read", "write", "create", "delete", "stat"]})
        pfile = ctx.write("pol.json", json.dumps(pol))
        for opts in (["--policy", pfile], ["--profile", "audit"]):
            r = ctx.ward("run", "--db", db, *opts, "-c", TOUCH.format(db=db), db=False)
            assert r.code == 0, (opts, r)
            res = json.loads(r.stdout.splitlines()[-1])
            assert all(v == 13 for v in res.values()), (opts, res)
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            rid = con.execute("select id from runs order by started_ns desc limit 1").fetchone()[0]
            rows = con.execute("select target, rule, decision from events where run_id=? "
                               "and rule='floor.record'", (rid,)).fetchall()
            con.close()
            targets = {t for t, _, dec in rows if dec == "deny"}
            for t in (db, db + "-wal", db + "-shm", db + ".key", f"{d} -> {d}-moved"):
                assert t in targets, (opts, t, rows)
            assert os.path.isdir(d) and os.path.getsize(db) > 0
            r = ctx.ward("verify", "--db", db, "--all")
            assert r.code == 0, r
    finally:
        shutil.rmtree(d, ignore_errors=True)
