"""ward merge: runs of several databases in one, every run still
verifiable (ward verify --all) with the key and in the chain of runs its
own database gave it; tampering shows after the merge; duplicates
refused."""
import json
import os
import shutil
import sqlite3

import wardtest


def _db(ctx, name, codes):
    """A database with one run per code; returns its path and run ids."""
    db = ctx.path(name)
    ids = []
    for c in codes:
        r = ctx.ward("run", "--db", db, "--quiet", "-c", c, db=False)
        assert r.code in (0, 1), r
        con = sqlite3.connect(db)
        ids.append(con.execute("select id from runs order by started_ns desc"
                               " limit 1").fetchone()[0])
        con.close()
    return db, ids


def _two(ctx):
    a, ia = _db(ctx, "A.db", ["print('a1')", "open('/etc/shadow')"])
    data = ctx.write("in.csv", "x\n1\n")
    r = ctx.ward("run", "--db", ctx.path("B.db"), "--input", data, "-c",
                 "print(open('in.csv').read())", db=False)
    assert r.code == 0, r
    b, ib = _db(ctx, "B.db", ["import socket\ntry: socket.create_connection(('192.0.2.1', 80), 1)\n"
                              "except OSError: print('no')"])
    con = sqlite3.connect(b)
    ib = [x[0] for x in con.execute("select id from runs")]
    con.close()
    return a, ia, b, ib


def _verify(ctx, db, *args):
    return ctx.ward("verify", "--all", "--db", db, "--json", *args)


def _rows(db, q, *p):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(q, p).fetchall()
    finally:
        con.close()


def test_merged_runs_verify_with_their_own_keys(ctx):
    a, ia, b, ib = _two(ctx)
    out = ctx.path("ALL.db")
    r = ctx.ward("merge", a, b, "-o", out)
    assert r.code == 0, r
    assert "merged 2 runs from" in r.stdout and "A.db" in r.stdout, r
    assert oct(os.stat(out + ".keys").st_mode & 0o777) == "0o600"
    # every row as it was: the same runs, events, outputs, inputs
    for t in ("runs", "events", "outputs", "processes", "inputs"):
        n = sum(_rows(src, f"select count(*) from {t}")[0][0] for src in (a, b))
        assert _rows(out, f"select count(*) from {t}")[0][0] == n, t
    assert _rows(out, "select chain from runs where id = ?", ia[1]) == \
        _rows(a, "select chain from runs where id = ?", ia[1])
    v = _verify(ctx, out)
    assert v.code == 0, v
    j = json.loads(v.stdout)
    assert j["ok"] and j["tampered"] == 0 and j["runs_checked"] == 4, j
    for run in j["runs"]:
        assert run["verdict"] == "intact", run
        assert run.get("key_checked", True), run
    # the runs read as before: ward show on the merged database
    s = ctx.ward("show", "--db", out, ia[1], "--summary", db=False)
    assert s.code == 0 and "secret-shadow" in s.stdout, s
    # the merged database records runs of its own: its own chain
    r = ctx.ward("run", "--db", out, "-c", "print('own')", db=False)
    assert r.code == 0, r
    v = _verify(ctx, out)
    assert v.code == 0 and json.loads(v.stdout)["runs_checked"] == 5, v
    # a merged database merges again, with its chains
    r = ctx.ward("merge", out, "-o", ctx.path("AGAIN.db"))
    assert r.code == 0, r
    v = _verify(ctx, ctx.path("AGAIN.db"))
    assert v.code == 0 and json.loads(v.stdout)["runs_checked"] == 5, v


def test_tampering_shows_after_the_merge(ctx):
    a, ia, b, ib = _two(ctx)
    out = ctx.path("ALL.db")
    assert ctx.ward("merge", a, b, "-o", out).code == 0
    keep = ctx.path("keep")
    os.mkdir(keep)
    files = [f for f in os.listdir(ctx.tmp) if f.startswith("ALL.db")]
    for f in files:
        shutil.copy(ctx.path(f), keep)

    def restore():
        for f in files:
            shutil.copy(os.path.join(keep, f), ctx.tmp)

    def broken(sql, *p):
        restore()
        con = sqlite3.connect(out)
        con.execute(sql, p)
        con.commit()
        con.close()
        v = _verify(ctx, out)
        assert v.code == 1, (sql, v)
        return json.loads(v.stdout)

    # a merged run's event edited
    j = broken("update events set target = '/etc/passwd' where run_id = ? and seq = 2", ia[1])
    bad = [r for r in j["runs"] if r["verdict"] != "intact"]
    assert [r["run_id"] for r in bad] == [ia[1]], j
    # a merged run deleted: its chain says so
    j = broken("delete from runs where id = ?", ia[0])
    assert "missing" in json.dumps(j["database"]), j
    # a merged chain's head set back: its newest run looks deleted... or
    # the head no longer names it
    key, value = _rows(out, "select key, value from ward_meta where key = ?",
                       "merged_chain:" + json.loads(
                           _rows(a, "select chain from runs where id = ?",
                                 ia[0])[0][0])["key_id"])[0]
    meta = json.loads(value)
    head = json.loads(meta["head"])
    assert head["n"] == 2, head  # two runs sealed: the newest is #2
    head["n"] = 1
    meta["head"] = json.dumps(head)
    j = broken("update ward_meta set value = ? where key = ?", json.dumps(meta), key)
    assert "set back" in json.dumps(j["database"]), j
    restore()
    # without the merged keys, their runs are not checked: an error
    os.unlink(out + ".keys")
    v = _verify(ctx, out)
    assert v.code == 1, v
    restore()
    os.chmod(out + ".keys", 0o644)
    v = ctx.ward("verify", "--all", "--db", out)
    assert v.code == 125 and "ALL.db.keys" in v.stderr, v
    restore()
    assert _verify(ctx, out).code == 0


def test_a_tampered_input_stays_tampered(ctx):
    a, ia, b, ib = _two(ctx)
    con = sqlite3.connect(a)
    con.execute("update outputs set data = cast('x1\n' as blob) where run_id = ?", (ia[0],))
    con.commit()
    con.close()
    assert ctx.ward("verify", "--all", "--db", a).code == 1
    out = ctx.path("ALL.db")
    assert ctx.ward("merge", a, b, "-o", out).code == 0
    v = _verify(ctx, out)
    assert v.code == 1, v
    bad = [r["run_id"] for r in json.loads(v.stdout)["runs"] if r["verdict"] != "intact"]
    assert bad == [ia[0]], v.stdout


def test_duplicates_and_bad_input_refused(ctx):
    a, ia, b, ib = _two(ctx)
    out = ctx.path("ALL.db")
    assert ctx.ward("merge", a, "-o", out).code == 0
    before = _rows(out, "select count(*) from runs")[0][0]
    # A again, alone or with B: refused, nothing merged
    for args in ([a], [b, a], [a, a]):
        r = ctx.ward("merge", *args, "-o", out)
        assert r.code == 125 and "duplicates refused" in r.stderr, (args, r)
        assert ia[0] in r.stderr or ia[1] in r.stderr, r
    assert _rows(out, "select count(*) from runs")[0][0] == before
    # a copy of a database is the same runs
    for ext in ("", ".key"):
        shutil.copy(b + ext, ctx.path("C.db" + ext))
    r = ctx.ward("merge", b, ctx.path("C.db"), "-o", ctx.path("X.db"))
    assert r.code == 125 and "is in both" in r.stderr, r
    # a database without its key: its runs could not be verified
    os.rename(b + ".key", b + ".key.away")
    r = ctx.ward("merge", b, "-o", out)
    assert r.code == 125 and "B.db.key" in r.stderr, r
    os.rename(b + ".key.away", b + ".key")
    # a run still being written
    con = sqlite3.connect(b)
    con.execute("update runs set status = 'running' where id = ?", (ib[0],))
    con.commit()
    con.close()
    r = ctx.ward("merge", b, "-o", out)
    assert r.code == 125 and "still running" in r.stderr, r
    assert _rows(out, "select count(*) from runs")[0][0] == before
    for args in ([a], ["-o", out], [ctx.path("none.db"), "-o", out]):
        r = ctx.ward("merge", *args)
        assert r.code == 125, (args, r)


def test_batch_shards_merged_into_one_record(ctx):
    samples = ctx.write("s.jsonl", "".join(
        json.dumps({"id": f"x{i}", "language": "sh", "code": f"echo {i}"}) + "\n"
        for i in range(6)))
    dbs = []
    for i in (1, 2):
        db = ctx.path(f"shard{i}.db")
        r = ctx.ward("batch", "--db", db, "--out", ctx.path(f"r{i}.jsonl"),
                     "--shard", f"{i}/2", samples)
        assert r.code == 0, r
        dbs.append(db)
    out = ctx.path("ALL.db")
    r = ctx.ward("merge", *dbs, "-o", out)
    assert r.code == 0, r
    tags = sorted(json.loads(a[0])[json.loads(a[0]).index("--tag") + 1].split(":", 2)[2]
                  for a in _rows(out, "select argv from runs"))
    assert tags == [f"x{i}" for i in range(6)], tags
    v = _verify(ctx, out)
    assert v.code == 0 and json.loads(v.stdout)["runs_checked"] == 6, v
