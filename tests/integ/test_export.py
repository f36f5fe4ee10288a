"""ward export: JSON Lines (every row of a run, round-tripped against the
database and against what the code wrote), OCSF (class, activity and
disposition of real decisions; the required fields of each class), --all
and --since, bad input (exit 125), and bounded memory on a run of 100,000
events."""
import base64
import json
import os
import shutil
import sqlite3
import subprocess
import time

import wardtest

# The code of the round-trip run: an allowed write, a denied read, a
# denied connect, a child process, a syscall without a class of its own,
# and output that is not UTF-8.
CODE = r"""
import os, socket, subprocess, sys
open('made.txt', 'w').write('x')
open('made.txt').read()
try:
    open('/etc/shadow')
except OSError:
    pass
s = socket.socket()
try:
    s.connect(('10.9.8.7', 8080))
except OSError:
    pass
subprocess.run([sys.executable, '-c', 'print("child")'])
import ctypes
ctypes.CDLL(None).syscall(103, 10, 0, 0)  # syslog: no rule, denied (ENOSYS)
sys.stdout.buffer.write(b'bin\xff\xfe\x00end\n')
sys.stdout.flush()
sys.stderr.write('to stderr\n')
print('caf\u00e9')
"""
STDOUT = b'child\nbin\xff\xfe\x00end\ncaf\xc3\xa9\n'


def _export(ctx, *args, text=True):
    return ctx.ward("export", "--db", ctx.db, *args, db=False, text=text)


def _lines(r):
    assert r.code == 0, r
    return [json.loads(l) for l in r.stdout.splitlines()]


def _bytes_of(obj, key):
    enc = obj.get(key + "_encoding", "utf-8")
    if enc == "base64":
        return base64.b64decode(obj[key])
    return obj[key].encode()


def _real_run(ctx):
    r = ctx.run(CODE, text=False)
    assert r.code == 0, r
    return ctx.last_run()["id"]


def test_export_help(ctx):
    r = ctx.ward("export", "--help", db=False)
    assert r.code == 0, r
    for word in ("--format", "jsonl", "ocsf", "--all", "--since", "-o", "125"):
        assert word in r.stdout, word
    assert "export" in ctx.ward("--help", db=False).stdout


def test_export_jsonl_round_trip(ctx):
    run_id = _real_run(ctx)
    objs = _lines(_export(ctx, run_id[:6]))
    assert all(o["run_id"] == run_id for o in objs)
    types = [o["type"] for o in objs]
    assert types[0] == "run" and types[-1] == "end", types
    # the documented order: run, inputs, processes, events, outputs, ...
    order = ["run", "input", "process", "event", "output", "cell", "artifact", "end"]
    assert [order.index(t) for t in types] == sorted(order.index(t) for t in types)

    run = ctx.sql("select * from runs where id = ?", run_id)[0]
    head = objs[0]
    for k, v in run.items():
        if k == "id":
            continue
        if isinstance(v, bytes):
            assert _bytes_of(head, k) == v, k
        else:
            assert head[k] == v, (k, head.get(k), v)
    assert "chain" in head, "the v4 hash-chain column of runs is exported"

    # every events row exactly once, with all its fields
    rows = ctx.sql("select * from events where run_id = ? order by seq", run_id)
    evs = [o for o in objs if o["type"] == "event"]
    assert len(rows) == len(evs) > 10, (len(rows), len(evs))
    assert sorted(e["seq"] for e in evs) == [r["seq"] for r in rows]
    for row, ev in zip(rows, evs):
        want = {k: v for k, v in row.items() if k != "run_id"}
        got = {k: v for k, v in ev.items() if k not in ("type", "run_id")}
        assert got == want, (got, want)
    assert "hash" in evs[0], "events.hash is exported"
    assert any(e["decision"] == "deny" and e["target"] == "/etc/shadow" for e in evs)

    procs = [o for o in objs if o["type"] == "process"]
    assert len(procs) == len(ctx.sql("select 1 from processes where run_id = ?", run_id)) >= 2

    # output bytes: exactly what the code wrote, chunk by chunk
    outs = [o for o in objs if o["type"] == "output"]
    db_outs = ctx.sql("select * from outputs where run_id = ? order by seq", run_id)
    assert [o["seq"] for o in outs] == [r["seq"] for r in db_outs]
    for o, r in zip(outs, db_outs):
        assert _bytes_of(o, "data") == r["data"], (o, r)
        assert o["data_encoding"] in ("utf-8", "base64")
        assert "hash" in o
    out = b"".join(_bytes_of(o, "data") for o in outs if o["stream"] == "stdout")
    err = b"".join(_bytes_of(o, "data") for o in outs if o["stream"] == "stderr")
    assert out == STDOUT, out
    assert err == b"to stderr\n", err
    assert any(o["data_encoding"] == "base64" for o in outs), "not-UTF-8 bytes as base64"

    # the other tables, row for row (the run's artifacts: made.txt)
    for typ, table, key in (("process", "processes", "serial"), ("artifact", "artifacts", "path"),
                            ("cell", "cells", "n"), ("input", "inputs", "n")):
        try:
            want = ctx.sql(f"select * from {table} where run_id = ? order by {key}", run_id)
        except sqlite3.OperationalError:
            want = []
        got = sorted((o for o in objs if o["type"] == typ), key=lambda o: o[key])
        assert [{k: v for k, v in o.items() if not k.endswith("_encoding")
                 and k not in ("type", "run_id")} for o in got] == \
            [{k: v for k, v in r.items() if k != "run_id"} for r in want], typ
    assert any(o["type"] == "artifact" and o["path"] == "made.txt" for o in objs)

    end = objs[-1]
    assert end["events"] == len(evs) and end["outputs"] == len(outs)
    assert end["processes"] == len(procs) and end["inputs"] == 0


def _required_ok(o):
    """The attributes OCSF 1.1.0 requires of every class ward emits."""
    cls, act = o["class_uid"], o["activity_id"]
    for k in ("category_uid", "severity_id", "time", "type_uid", "metadata"):
        assert k in o, (k, o)
    assert o["type_uid"] == cls * 100 + act, o
    assert isinstance(o["time"], int) and o["time"] > 1.5e12, o["time"]
    md = o["metadata"]
    assert md["version"] == "1.1.0" and md["product"]["name"] == "ward"
    assert md["product"]["vendor_name"] and md["product"]["version"]
    assert o["severity_id"] in (0, 1, 2, 3, 4, 5, 6, 99)
    assert o["action_id"] in (0, 1, 2) and o["disposition_id"] in range(0, 28)
    if cls in (1001, 1003, 1007):
        assert o["category_uid"] == 1
        assert "actor" in o and "device" in o, o
        assert o["device"]["type_id"] == 0 and o["device"]["os"]["type_id"] == 200
        assert o["device"]["hostname"]
    if cls == 1001:
        assert o["file"]["name"] is not None and "type_id" in o["file"], o
    elif cls == 1007:
        assert isinstance(o["process"], dict), o
    elif cls == 1003:
        assert o["kernel"]["name"] and o["kernel"]["type_id"] == 2
    elif cls == 4001:
        assert o["category_uid"] == 4
        assert "src_endpoint" in o and "dst_endpoint" in o, o
        assert "direction_id" in o["connection_info"]
    else:
        raise AssertionError(f"unexpected class {cls}")


def test_export_ocsf_classes_and_dispositions(ctx):
    run_id = _real_run(ctx)
    r = _export(ctx, "--format", "ocsf", run_id)
    objs = _lines(r)
    for o in objs:
        _required_ok(o)
    ev = {o["unmapped"]["ward"]["seq"]: o for o in objs if "unmapped" in o}
    rows = ctx.events(run_id)

    def one(pred):
        hits = [row for row in rows if pred(row)]
        assert hits, "no such event"
        return ev[hits[0]["seq"]]

    # an allowed open (read of a workdir file)
    o = one(lambda e: e["syscall"].startswith("open") and e["decision"] == "allow"
            and (e["target"] or "").endswith("/made.txt")
            and json.loads(e["args"]).get("access") == "read")
    assert (o["class_uid"], o["activity_id"], o["activity_name"]) == (1001, 2, "Read")
    assert (o["action_id"], o["disposition_id"], o["disposition"]) == (1, 1, "Allowed")
    assert o["severity_id"] == 1 and o["file"]["path"].endswith("/made.txt")
    # the file it created
    o = one(lambda e: e["syscall"].startswith("open") and e["decision"] == "allow"
            and "create" in json.loads(e["args"]).get("access", ""))
    assert (o["class_uid"], o["activity_id"]) == (1001, 1)
    # a denied open
    o = one(lambda e: e["target"] == "/etc/shadow")
    assert (o["class_uid"], o["activity_id"]) == (1001, 2)
    assert (o["action_id"], o["action"], o["disposition_id"], o["disposition"]) == \
        (2, "Denied", 2, "Blocked")
    assert o["severity_id"] >= 3 and o["status_code"] == "EACCES", o
    assert o["actor"]["process"]["pid"] > 0 and o["actor"]["process"]["name"]
    # a denied connect
    o = one(lambda e: e["syscall"] == "connect")
    assert (o["class_uid"], o["activity_id"], o["activity_name"]) == (4001, 1, "Open")
    assert (o["action_id"], o["disposition_id"]) == (2, 2)
    assert o["dst_endpoint"] == {"ip": "10.9.8.7", "port": 8080}, o["dst_endpoint"]
    assert o["connection_info"]["protocol_ver_id"] == 4
    # a syscall of no other class: Kernel Activity, Invoke
    o = one(lambda e: e["syscall"] == "syslog")
    assert (o["class_uid"], o["activity_id"], o["disposition_id"]) == (1003, 4, 2), o
    assert o["kernel"] == {"name": "syslog", "type_id": 2, "type": "System Call"}
    assert o["status_code"] == "ENOSYS"
    # process launches (from the process table) and exits
    procs = ctx.sql("select * from processes where run_id = ? and kind = 'process'"
                    " order by serial", run_id)
    launch = [o for o in objs if o["metadata"]["uid"].endswith("-p%d" % procs[1]["serial"])]
    assert len(launch) == 1, launch
    o = launch[0]
    assert (o["class_uid"], o["activity_id"], o["activity_name"]) == (1007, 1, "Launch")
    assert o["process"]["pid"] == procs[1]["pid"]
    assert o["actor"]["process"]["pid"] == procs[0]["pid"], "the parent launched it"
    assert o["time"] == procs[1]["start_ns"] // 1000000
    exits = [o for o in objs if o["class_uid"] == 1007 and o["activity_id"] == 2]
    assert len(exits) == len([p for p in procs if p["exit_ns"] is not None]) >= 2
    assert all(o["exit_code"] == 0 for o in exits)
    # the allowed exec of the child interpreter
    o = one(lambda e: e["syscall"] == "execve" and e["seq"] > 1)
    assert (o["class_uid"], o["activity_id"], o["disposition_id"]) == (1007, 1, 1)
    assert "-c" in o["process"]["cmd_line"]
    # every event is there once, but allowed forks (their Launch stands for them)
    forks = [e for e in rows if e["syscall"] in ("clone", "clone3", "fork", "vfork")
             and e["decision"] == "allow"]
    assert sorted(ev) == sorted(e["seq"] for e in rows if e not in forks)
    assert len(objs) == len(ev) + len(procs) + len(exits)
    if forks:
        assert "clone/fork/vfork" in r.stderr, r


def test_export_all_since_and_output_file(ctx):
    assert ctx.run("print(1)").code == 0
    assert ctx.run("print(2)").code == 0
    ids = [r["id"] for r in ctx.sql("select id from runs order by started_ns")]
    objs = _lines(_export(ctx, "--all"))
    assert [o["run_id"] for o in objs if o["type"] == "run"] == ids
    assert [o["run_id"] for o in objs if o["type"] == "end"] == ids
    assert _lines(_export(ctx, "--since", "1h")) == objs
    assert _lines(_export(ctx, "--all", "--since", "1h")) == objs
    r = _export(ctx, "--since", "2200-01-01")
    assert r.code == 0 and r.stdout == "", r
    # ocsf of every run, to a file
    out = ctx.path("all.ocsf")
    r = _export(ctx, "--all", "--format", "ocsf", "-o", out)
    assert r.code == 0 and r.stdout == "", r
    with open(out) as f:
        got = {json.loads(l)["metadata"]["correlation_uid"] for l in f}
    assert got == set(ids)
    assert os.stat(out).st_mode & 0o777 == 0o600
    # two runs named, in the order given
    objs = _lines(_export(ctx, ids[1], ids[0]))
    assert [o["run_id"] for o in objs if o["type"] == "run"] == [ids[1], ids[0]]


def test_export_bad_input(ctx):
    assert ctx.run("print(1)").code == 0
    run_id = ctx.last_run()["id"]

    def bad(r, *words):
        assert r.code == 125, r
        assert r.stdout == "", r
        for w in words:
            assert w in r.stderr, (w, r)

    bad(_export(ctx, "ffffffffffff"), "no run matches 'ffffffffffff'", ctx.db)
    bad(_export(ctx, run_id, "ffffffffffff"), "no run matches 'ffffffffffff'")
    bad(_export(ctx), "--all")
    bad(_export(ctx, run_id, "--all"), "not both")
    bad(_export(ctx, "--all", "--format", "xml"), "'xml'")
    bad(_export(ctx, "--since", "yesterday-ish"), "not a time")
    bad(_export(ctx, "--all", "--bogus"), "--bogus")
    # corrupt and foreign databases
    junk = ctx.path("junk.db")
    with open(junk, "wb") as f:
        f.write(os.urandom(8192))
    r = ctx.ward("export", "--db", junk, "--all", db=False)
    bad(r, junk)
    foreign = ctx.path("foreign.db")
    con = sqlite3.connect(foreign)
    con.execute("create table t(x)")
    con.commit()
    con.close()
    r = ctx.ward("export", "--db", foreign, "--all", db=False)
    bad(r, foreign)
    r = ctx.ward("export", "--db", ctx.path("missing.db"), "--all", db=False)
    bad(r, "missing.db")
    # an output that cannot be written: nothing left behind
    for out in (ctx.path("no", "such", "dir.jsonl"), ctx.tmp):
        bad(_export(ctx, "--all", "-o", out), out)
    assert not os.path.exists(ctx.path("no"))


def _grow(db, run_id, n):
    """Adds n events to run_id by SQL (copies of its events, new seqs)."""
    con = sqlite3.connect(db)
    cols = [r[1] for r in con.execute("pragma table_info(events)")]
    base = con.execute("select max(seq) from events where run_id = ?", (run_id,)).fetchone()[0]
    tmpl = con.execute("select count(*) from events where run_id = ?", (run_id,)).fetchone()[0]
    sel = ", ".join(
        "?2 + c.i" if c == "seq" else
        "e.ts_ns + c.i" if c == "ts_ns" else f"e.{c}" for c in cols)
    con.execute(
        f"with recursive c(i) as (select 1 union all select i + 1 from c where i < ?3) "
        f"insert into events ({', '.join(cols)}) select {sel} from c join events e "
        f"on e.run_id = ?1 and e.seq = 1 + (c.i % ?4)",
        (run_id, base, n, tmpl))
    con.execute("update runs set events = events + ? where id = ?", (n, run_id))
    con.commit()
    con.close()


def _measure(argv, out_path, env):
    """Runs argv with stdout to out_path through tests/helpers/maxrss.c;
    returns (status, max RSS bytes). (Python cannot measure its own child:
    the child's peak includes the test runner's pages until its exec.)"""
    helper = os.path.join(os.path.dirname(wardtest.ward_bin()), "helpers", "maxrss")
    assert os.access(helper, os.X_OK), f"{helper} not built (make all)"
    p = subprocess.run([helper, out_path] + argv, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p
    status, kb = p.stdout.split()[:2]
    return int(status), int(kb) * 1024


def test_export_large_run_bounded_memory(ctx):
    r = ctx.run("import os\nfor i in range(50):\n    os.path.exists('x')\n")
    assert r.code == 0, r
    run_id = ctx.last_run()["id"]
    env = dict(os.environ, ASAN_OPTIONS="quarantine_size_mb=1:" +
               os.environ.get("ASAN_OPTIONS", ""))
    argv = [wardtest.ward_bin(), "export", "--db", ctx.db, run_id, "--format"]
    # ward's own peak on the small run, then the same run grown by SQL
    small = {fmt: _measure(argv + [fmt], ctx.path("small." + fmt), env)[1]
             for fmt in ("jsonl", "ocsf")}
    n = 100000
    _grow(ctx.db, run_id, n)
    total = ctx.sql("select count(*) as n from events where run_id = ?", run_id)[0]["n"]
    assert total > n
    for fmt in ("jsonl", "ocsf"):
        out = ctx.path("big." + fmt)
        t0 = time.monotonic()
        code, rss = _measure(argv + [fmt], out, env)
        took = time.monotonic() - t0
        assert code == 0, code
        size = os.path.getsize(out)
        with open(out, "rb") as f:
            lines = sum(1 for _ in f)
        assert lines >= total, (lines, total)
        # Loading the run would grow ward by about the output's size (the
        # rows at least); streaming grows it by a small fraction, and its
        # peak stays under a fixed bound (ASan's allocator included).
        assert size > 40 << 20, size
        grew = rss - small[fmt]
        assert grew < size / 4 and rss < 96 << 20, (fmt, small[fmt], rss, size)
        print(f"{fmt}: {total} events, {size >> 20} MiB out, max RSS {rss >> 20} MiB "
              f"({small[fmt] >> 20} MiB for the run before it grew), {took:.1f} s")
