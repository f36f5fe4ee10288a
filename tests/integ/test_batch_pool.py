"""ward batch --pool N --preload MODULES: python samples run in sandboxes of
a warm pool, each used once; every sample gives the result line and the
record it gives without --pool (ids and durations aside), the warm-up is
the run's cell 0 and does not count for the sample."""
import json
import os
import signal
import sqlite3
import subprocess
import time

import test_batch
import wardtest

SAMPLES = [
    {"id": "hello", "code": "print('hi')", "expect_stdout": "hi\n"},
    {"id": "argv", "code": "import sys\nprint(sys.argv)", "args": ["a", "b c"]},
    {"id": "stdin", "code": "import sys\nprint(sys.stdin.read().upper())",
     "stdin": "abc\ndef"},
    {"id": "files", "code": "import os\nprint(sorted(os.listdir('.')))\n"
                            "print(open('data.txt').read())",
     "files": {"data.txt": "x=1"}},
    {"id": "exit3", "code": "import sys\nprint('bye')\nsys.exit(3)", "expect_exit": 3},
    {"id": "exit-text", "code": "import sys\nsys.exit('gone')"},
    {"id": "exc", "code": "def f():\n    raise ValueError('boom')\nf()"},
    {"id": "deny", "code": "open('/etc/shadow').read()"},
    {"id": "timeout", "code": "import time\nprint('start', flush=True)\ntime.sleep(30)"},
    {"id": "syntax", "code": "x = ("},
    {"id": "main", "code": "import sys\nprint(__name__, __file__, sys.path[0])\n"
                           "print(hasattr(__builtins__, 'display'), "
                           "'ward_display' in sys.modules)",
     "expect_stdout": "__main__ /home/user/main.py /home/user\nFalse False\n"},
    {"id": "segv", "code": "import ctypes\nctypes.string_at(0)"},
    {"id": "wrong", "code": "print('no')", "expect_stdout": "yes\n"},
    {"id": "js", "language": "node", "code": "console.log(6 * 7)"},
]


def _record(db, out):
    """{id: (line without ids and durations, the run's row, its stdout and
    stderr from the hand-out on, its denials)} and the pooled cells."""
    c = sqlite3.connect(db)
    c.row_factory = sqlite3.Row
    res, cells = {}, {}
    for line in test_batch._lines(out):
        rid = line.pop("run_id")
        line.pop("batch")
        line.pop("duration_ms")
        cs = {r["n"]: dict(r) for r in
              c.execute("select n, code, result from cells where run_id = ?", (rid,))}
        frm = json.loads(cs[0]["result"])["pool"]["handed_out_ns"] if 0 in cs else 0
        cells[line["id"]] = cs
        outs = {"stdout": b"", "stderr": b""}
        for o in c.execute("select stream, data, ts_ns from outputs where run_id = ? "
                           "order by seq", (rid,)):
            if o["ts_ns"] >= frm:
                d = o["data"]
                outs[o["stream"]] += d if isinstance(d, bytes) else d.encode()
        run = dict(c.execute("select status, exit_code, signal, cause from runs "
                             "where id = ?", (rid,)).fetchone())
        den = [tuple(r) for r in c.execute(
            "select syscall, decision, rule from events where run_id = ? and "
            "decision != 'allow' and ts_ns >= ? order by seq", (rid, frm))]
        ins = [tuple(r) for r in c.execute(
            "select n, name, size, sha256 from inputs where run_id = ? order by n",
            (rid,))]
        res[line["id"]] = (line, run, outs, den, ins)
    c.close()
    return res, cells


def test_pool_gives_the_same_lines_and_records(ctx):
    s = test_batch._jsonl(ctx, "s.jsonl", SAMPLES)
    script = ctx.write("tool.py", "import sys\nprint(sys.argv, __file__)\n")
    fresh_db, pool_db = ctx.path("fresh.db"), ctx.path("pool.db")
    fresh_out, pool_out = ctx.path("fresh.jsonl"), ctx.path("pool.jsonl")
    r1 = ctx.ward("batch", "--db", fresh_db, "--out", fresh_out, "--jobs", "2",
                  "--timeout", "3", s, script, timeout=300)
    r2 = ctx.ward("batch", "--db", pool_db, "--out", pool_out, "--jobs", "2",
                  "--timeout", "3", "--pool", "2", "--preload", "json,csv",
                  s, script, timeout=300)
    assert r1.code == 1 and r2.code == 1, (r1, r2)  # "wrong" fails
    fresh, _ = _record(fresh_db, fresh_out)
    pool, cells = _record(pool_db, pool_out)
    assert sorted(fresh) == sorted(pool) == sorted([x["id"] for x in SAMPLES] + [script])
    for k in fresh:
        assert fresh[k] == pool[k], (k, fresh[k], pool[k])
    # what the lines say, to be sure the comparison compared something
    assert pool["exit3"][0]["exit_code"] == 3 and pool["exit3"][0]["pass"] is True
    assert pool["timeout"][1]["status"] == "timeout", pool["timeout"]
    assert pool["timeout"][1]["cause"] == "wall time limit of 3000 ms reached"
    assert pool["deny"][0]["categories"] == ["secret_read"], pool["deny"]
    assert pool["segv"][0]["categories"] == ["crash"], pool["segv"]
    assert pool["stdin"][2]["stdout"] == b"ABC\nDEF\n"
    assert pool["argv"][2]["stdout"] == b"['main.py', 'a', 'b c']\n"
    assert pool["files"][4][0][1:3] == ("data.txt", 3), pool["files"]
    assert pool["main"][0]["pass"] is True, pool["main"]
    assert pool["syntax"][2]["stderr"].startswith(b'  File "/home/user/main.py", line 1')
    # python samples ran from the pool: the warm-up is cell 0, the code cell 1
    for k in pool:
        if k == "js":
            assert cells[k] == {}, cells[k]  # node: a fresh ward run
            continue
        warm = json.loads(cells[k][0]["result"])
        assert warm["phase"] == "warmup" and warm["pool"]["handed_out_ns"], warm
        assert "json" in cells[k][0]["code"] and "csv" in cells[k][0]["code"]
        script_cell = json.loads(cells[k][1]["result"])["script"]
        assert script_cell["tag"].endswith(":" + k), script_cell
    assert cells["hello"][1]["code"] == "print('hi')"
    # the pool made no more sandboxes than it used, less the ones left ready
    c = sqlite3.connect(pool_db)
    unused = c.execute("select count(*) from cells where n = 0 and "
                       "json_extract(result, '$.pool.closed_unused') is not null").fetchone()[0]
    # (and the zygote's template, whose run is ward's warm-up: no sample)
    runs = c.execute("select count(*) from runs where code_name != "
                     "'zygote-template'").fetchone()[0]
    c.close()
    assert runs == len(pool) + unused and unused <= 2, (runs, unused)


def test_pool_sigint_cancels_running_samples(ctx):
    s = test_batch._jsonl(ctx, "slow.jsonl", [
        {"id": f"s{i}", "code": f"import time\nprint({i}, flush=True)\ntime.sleep(30)"}
        for i in range(4)])
    out = ctx.path("r.jsonl")
    p = wardtest.spawn([wardtest.ward_bin(), "batch", "--db", ctx.db, "--out", out,
                        "--jobs", "2", "--pool", "2", s],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # both samples have printed: they run (no --preload: no warm-up output)
    def printed():
        try:
            return len(ctx.sql("select 1 from outputs where stream = 'stdout'")) >= 2
        except sqlite3.Error:  # not made yet
            return False
    assert wardtest.wait_until(printed, 60)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    res = test_batch._by_id(out)
    assert sorted(res) == ["s0", "s1"], res
    for line in res.values():
        assert line["status"] == "cancelled", line
        run = ctx.sql("select status, cause from runs where id = ?", line["run_id"])[0]
        assert run["status"] == "aborted" and "SIGTERM" in run["cause"], run


def test_pool_options(ctx):
    s = test_batch._jsonl(ctx, "one.jsonl", [{"id": "a", "code": "print(1)"}])
    r = ctx.ward("batch", "--db", ctx.db, "--preload", "json", s)
    assert r.code == 125 and "--preload needs --pool" in r.stderr, r
    r = ctx.ward("batch", "--db", ctx.db, "--pool", "0", s)
    assert r.code == 125 and "--pool" in r.stderr, r
    r = ctx.ward("batch", "--db", ctx.db, "--pool", "1", "--preload", "no_such_mod", s)
    assert r.code == 125 and "no_such_mod" in r.stderr, r
    # an option pooled sandboxes cannot give: every sample runs fresh, said once
    out = ctx.path("m.jsonl")
    r = ctx.ward("batch", "--db", ctx.db, "--out", out, "--pool", "1", "--memory",
                 "300M", s)
    assert r.code == 0 and "--memory is not given to pooled sandboxes" in r.stderr, r
    rid = test_batch._lines(out)[0]["run_id"]
    assert ctx.sql("select count(*) as n from cells where run_id = ?", rid)[0]["n"] == 0


def test_pool_resume_takes_a_finished_pooled_run_whose_line_was_lost(ctx):
    s = test_batch._jsonl(ctx, "q.jsonl", [
        {"id": f"q{i}", "code": f"print({i})", "expect_stdout": f"{i}\n"}
        for i in range(4)])
    out = ctx.path("r.jsonl")
    r = ctx.ward("batch", "--db", ctx.db, "--out", out, "--pool", "1",
                 "--preload", "json", s, timeout=300)
    assert r.code == 0, r
    lines = open(out).read().splitlines(True)
    full = test_batch._by_id(out)
    # the batch died after two pooled runs ended, before their lines
    with open(out, "w") as f:
        f.writelines(lines[:2])
    samples_runs = "select id from runs where code_name != 'zygote-template'"
    runs_before = len(ctx.sql(samples_runs))
    r = ctx.ward("batch", "--db", ctx.db, "--out", out, "--resume", "--pool", "1",
                 "--preload", "json", s, timeout=300)
    assert r.code == 0, r
    # no sample ran again (the pool's new sandbox is never handed out)
    assert len(ctx.sql(samples_runs)) <= runs_before + 1
    runs = ctx.sql("select r.id as id, c.result as result from runs r join cells c "
                   "on c.run_id = r.id and c.n = 1")
    assert len(runs) == 4, runs
    assert test_batch._by_id(out) == full, (test_batch._by_id(out), full)
    assert "2 done before" not in r.stdout and "4 done before" in r.stdout, r.stdout


def test_pool_with_a_policy_that_asks_runs_every_sample_fresh(ctx):
    """A pooled sandbox's control socket carries its one-shot limit, and a
    policy's ask rules need it for their questions: such a batch runs every
    sample fresh, says so once, and nobody answers a batch: the asked call
    is denied."""
    import json as _json
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "default.json")) as f:
        pol = _json.load(f)
    pol["fs"].append({"id": "ask-hosts", "path": "/etc/hosts", "ask": ["read"]})
    path = ctx.write("ask.json", _json.dumps(pol))
    s = test_batch._jsonl(ctx, "one.jsonl", [
        {"id": "a", "code": "try:\n open('/etc/hosts').read(); print('read')\n"
                            "except OSError as e: print('errno', e.errno)\n"}])
    out = ctx.path("a.jsonl")
    r = ctx.ward("batch", "--db", ctx.db, "--out", out, "--pool", "1", "--policy", path, s)
    assert r.code == 0 and r.stderr.count("the policy has ask rules") == 1, r
    line = test_batch._lines(out)[0]
    assert line["status"] == "ok", line
    rid = line["run_id"]
    assert ctx.sql("select count(*) as n from cells where run_id = ?", rid)[0]["n"] == 0
    ev = ctx.sql("select decision, rule from events where run_id = ? and target = '/etc/hosts'", rid)
    assert ev and all(e["decision"] == "deny" and e["rule"] == "ask-hosts" for e in ev), ev
