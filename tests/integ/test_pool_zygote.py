"""The warm pool's zygote (issue 26, "Share the warm-up's work"): with
--pool N --preload MODULES one template interpreter per server imports the
modules once, in a run of its own (code_name "zygote-template") in the same
database, and each pooled sandbox is a fork of it with its own sandbox and
run, whose record names the template's run. --pool-fork off makes each
pooled sandbox import for itself, as before.

These need ward's zygote in the tracer and the python driver
(tracer/zygote.c, drivers/python.py) and a system that allows it (root,
user namespaces): without it the pool falls back, and they fail.
"""
import glob
import json
import os
import signal
import subprocess
import time

import test_batch
import test_batch_pool
import wardtest
from test_serve import Serve

PY_SAMPLES = [s for s in test_batch_pool.SAMPLES if s.get("language", "python") == "python"]


def _templates(ctx):
    return ctx.sql("select * from runs where code_name = 'zygote-template' order by started_ns")


def _forked_from(ctx, run_id):
    """The run id a run's record says it was forked from (the tracer's
    "zygote" layer), or None."""
    row = ctx.sql("select layers from runs where id = ?", run_id)[0]
    for layer in json.loads(row["layers"] or "[]"):
        if layer["name"] == "zygote" and layer["active"]:
            return layer["detail"]
    return None


def _descendants(root):
    return {p for p, _ in wardtest.proc_files("stat") if p != root and wardtest.descends(p, root)}


def _brokers():
    return set(glob.glob("/tmp/ward-*/broker"))


def test_batch_samples_forked_from_one_template_match_fresh_runs(ctx):
    s = test_batch._jsonl(ctx, "s.jsonl", PY_SAMPLES)
    fresh_db, pool_db = ctx.path("fresh.db"), ctx.path("pool.db")
    fresh_out, pool_out = ctx.path("fresh.jsonl"), ctx.path("pool.jsonl")
    r1 = ctx.ward("batch", "--db", fresh_db, "--out", fresh_out, "--jobs", "2",
                  "--timeout", "3", s, timeout=300)
    r2 = ctx.ward("batch", "--db", pool_db, "--out", pool_out, "--jobs", "2",
                  "--timeout", "3", "--pool", "2", "--preload", "json", s, timeout=300)
    assert r1.code == 1 and r2.code == 1, (r1, r2)  # "wrong" fails
    assert "zygote" not in r2.stderr, r2.stderr  # no fallback said
    fresh, _ = test_batch_pool._record(fresh_db, fresh_out)
    pool, cells = test_batch_pool._record(pool_db, pool_out)
    assert sorted(fresh) == sorted(pool) == sorted(x["id"] for x in PY_SAMPLES)
    for k in fresh:
        assert fresh[k] == pool[k], (k, fresh[k], pool[k])
    # one template, ward's warm-up its code, in the same database
    ctx.db = pool_db
    tmpl = _templates(ctx)
    assert len(tmpl) == 1, tmpl
    assert b"json" in tmpl[0]["code"] and tmpl[0]["status"] == "ok", tmpl[0]
    # every sample's run is a fork of it, warm-up cell 0 and all
    for k, (line, *_rest) in pool.items():
        rid = test_batch._by_id(pool_out)[k]["run_id"]
        assert _forked_from(ctx, rid) and tmpl[0]["id"] in _forked_from(ctx, rid), (k, rid)
        assert json.loads(cells[k][0]["result"])["phase"] == "warmup", cells[k]


def test_batch_pool_fork_off_imports_in_each_sandbox(ctx):
    s = test_batch._jsonl(ctx, "s.jsonl", [{"id": "a", "code": "print(1)"}])
    r = ctx.ward("batch", "--db", ctx.db, "--pool", "1", "--preload", "json",
                 "--pool-fork", "off", s, timeout=120)
    assert r.code == 0, r
    assert _templates(ctx) == []
    rid = ctx.sql("select id from runs where code_name = 'session'")[0]["id"]
    assert _forked_from(ctx, rid) is None
    r = ctx.ward("batch", "--db", ctx.db, "--pool", "1", "--preload", "json",
                 "--pool-fork", "maybe", s)
    assert r.code == 125 and "--pool-fork maybe: give on or off" in r.stderr, r


def test_batch_pandas_samples_forked_from_a_template_match_fresh_runs(ctx):
    p = subprocess.run(["/usr/bin/python3", "-c", "import pandas"], capture_output=True)
    if p.returncode:
        raise wardtest.Skip("python3-pandas is not installed")
    code = ("import pandas as pd\n"
            "df = pd.DataFrame({'a': [1, 2, 3, %d]})\n"
            "print(df.a.median(), df.a.sum())\n")
    samples = [{"id": f"p{i}", "code": code % i} for i in range(4)]
    s = test_batch._jsonl(ctx, "p.jsonl", samples)
    fresh_db, pool_db = ctx.path("fresh.db"), ctx.path("pool.db")
    fresh_out, pool_out = ctx.path("fresh.jsonl"), ctx.path("pool.jsonl")
    r1 = ctx.ward("batch", "--db", fresh_db, "--out", fresh_out, "--jobs", "2", s,
                  timeout=600)
    r2 = ctx.ward("batch", "--db", pool_db, "--out", pool_out, "--jobs", "2",
                  "--pool", "2", "--preload", "pandas", s, timeout=600)
    assert r1.code == 0 and r2.code == 0, (r1, r2)
    fresh, _ = test_batch_pool._record(fresh_db, fresh_out)
    pool, _ = test_batch_pool._record(pool_db, pool_out)
    for k in fresh:
        assert fresh[k] == pool[k], (k, fresh[k], pool[k])
    assert pool["p3"][2]["stdout"] == b"2.5 9\n", pool["p3"]
    ctx.db = pool_db
    tmpl = _templates(ctx)
    assert len(tmpl) == 1 and b"pandas" in tmpl[0]["code"], tmpl
    for line in test_batch._lines(pool_out):
        assert tmpl[0]["id"] in (_forked_from(ctx, line["run_id"]) or ""), line


def _pool_full(ctx, n):
    """Until the pool has made n sandboxes (their runs begun, and a moment
    for their warm-ups)."""
    assert wardtest.wait_until(lambda: len(ctx.sql(
        "select id from runs where code_name = 'session'")) >= n, 60)
    time.sleep(1.5)


def test_forked_sessions_see_only_their_own_workdir(ctx):
    s = Serve(ctx, "--pool", "2", "--preload", "json")
    try:
        s.ok("session.list", {})
        _pool_full(ctx, 2)
        a = s.ok("session.create", {})
        b = s.ok("session.create", {})
        ra = s.run(a["session_id"], "open('mine.txt', 'w').write('a'); "
                                    "import os; print(sorted(os.listdir('.')))")
        rb = s.run(b["session_id"], "import os; print(sorted(os.listdir('.')), "
                                    "os.path.exists('mine.txt'))")
        assert "'mine.txt'" in "".join(ra["logs"]["stdout"]), ra
        assert "'mine.txt'" not in "".join(rb["logs"]["stdout"]), rb
        assert "".join(rb["logs"]["stdout"]).endswith("False\n"), rb
    finally:
        s.close()
    # each its own host workdir
    hosts = {wardtest.host_workdir(ctx.sql("select * from runs where id = ?",
                                            r["run_id"])[0]) for r in (a, b)}
    assert len(hosts) == 2, hosts
    # both forks of the one template (the record's layers: at the run's end)
    tmpl = _templates(ctx)
    assert len(tmpl) == 1, tmpl
    for r in (a, b):
        assert tmpl[0]["id"] in (_forked_from(ctx, r["run_id"]) or ""), r


def test_server_ends_its_template_and_leaves_no_process(ctx):
    before = _brokers()
    s = Serve(ctx, "--pool", "2", "--preload", "json")
    try:
        sid = s.ok("session.create", {})["session_id"]
        s.run(sid, "print(1)")
        tree = _descendants(s.p.pid)
        mine = _brokers() - before
        assert len(mine) == 1, (mine, before)
        assert len(_templates(ctx)) == 1
    finally:
        s.close()
    def left():
        return [p for p in tree if os.path.exists(f"/proc/{p}")]
    assert wardtest.wait_until(lambda: not left(), 15), left()
    assert not (mine & _brokers()), mine  # the broker's directory removed
    t = _templates(ctx)[0]
    assert t["status"] == "ok" and t["ended_ns"], t


def _template_interpreter(server):
    """The template's interpreter: the python3 under the server whose parent
    is no python3 (its forks are its descendants)."""
    cmd = dict(wardtest.proc_files("cmdline", binary=True))
    for p, c in cmd.items():
        if b"python3" in c and wardtest.descends(p, server):
            with open(f"/proc/{p}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if b"python3" not in cmd.get(ppid, b""):
                return p
    return None


def test_a_killed_template_is_replaced_and_the_pool_goes_on(ctx):
    s = Serve(ctx, "--pool", "1", "--preload", "json")
    try:
        s.ok("session.list", {})
        first = _templates(ctx)[0]["id"]
        a = s.ok("session.create", {})
        pid = _template_interpreter(s.p.pid)
        assert pid, "no template interpreter under the server"
        os.kill(pid, signal.SIGKILL)
        # the session forked from it goes on
        out = s.run(a["session_id"], "print(6 * 7)")
        assert "".join(out["logs"]["stdout"]) == "42\n", out
        # new sessions still come (the pool's own, or fresh), and a new
        # template is started
        for _ in range(3):
            r = s.ok("session.create", {})
            out = s.run(r["session_id"], "print(6 * 7)")
            assert "".join(out["logs"]["stdout"]) == "42\n", out
            time.sleep(1)
        assert wardtest.wait_until(lambda: len(_templates(ctx)) >= 2, 60), _templates(ctx)
        assert _templates(ctx)[0]["id"] == first
    finally:
        s.close()


def test_pool_fork_option_is_documented_and_checked_by_each_server(ctx):
    for cmd in ("serve", "mcp", "batch"):
        r = ctx.ward(cmd, "--help", db=False)
        assert r.code == 0 and "--pool-fork on|off" in r.stdout, (cmd, r)
    for cmd in ("serve", "mcp"):
        r = ctx.ward(cmd, "--pool", "1", "--pool-fork", "yes", db=False, stdin="")
        assert r.code == 125 and "--pool-fork yes: give on or off" in r.stderr, (cmd, r)
