"""The warm pool (issue 26, section 1): `ward serve` and `ward mcp` with
--pool N --preload MODULES hand out sessions started ahead, each once,
whose interpreter has imported the modules in ward's own warm-up cell
(cell 0 of its run, marked "phase": "warmup", with the hand-out time or
why it was never used); sessions for other settings start fresh.

fractions and decimal stand for pandas here: cheap to import, and neither
is imported by the session driver itself, so sys.modules tells.
"""
import json
import os
import re
import subprocess
import time

import wardtest
from test_serve import Serve
from test_mcp import Mcp
from test_e2b import Server as E2bServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRELOAD = "fractions,decimal"
PROBE = ("import sys; print('fractions' in sys.modules, 'decimal' in sys.modules, "
         "sorted(k for k in globals() if 'ward' in k))")


def warmup_of(ctx, run_id):
    """The warm-up cell (n 0) of a run, its result parsed, or None."""
    rows = ctx.sql("select * from cells where run_id=? and n=0", run_id)
    if not rows:
        return None
    row = rows[0]
    row["result"] = json.loads(row["result"])
    return row


def out_of(res):
    return "".join(res["logs"]["stdout"])


def test_pool_hands_out_warm_sessions_once_and_refills(ctx):
    s = Serve(ctx, "--pool", "2", "--preload", PRELOAD)
    seen_sids, seen_runs = set(), set()
    try:
        s.ok("session.list", {})  # answered once the pool's first is ready
        for i in range(4):
            t0 = time.time_ns()
            r = s.ok("session.create", {})
            sid, run_id = r["session_id"], r["run_id"]
            assert sid not in seen_sids and run_id not in seen_runs, (i, sid, run_id)
            seen_sids.add(sid)
            seen_runs.add(run_id)
            # started ahead: its run began before the create
            run = ctx.sql("select started_ns from runs where id=?", run_id)[0]
            assert run["started_ns"] < t0, (i, run, t0)
            # ward's warm-up is cell 0, marked, with the hand-out time
            w = warmup_of(ctx, run_id)
            assert w, f"session {i}: no warm-up cell in run {run_id}"
            assert w["result"]["phase"] == "warmup" and w["status"] == "ok", w
            assert "fractions" in w["code"] and "decimal" in w["code"], w["code"]
            handed = w["result"]["pool"]["handed_out_ns"]
            assert w["ended_ns"] <= handed and t0 <= handed <= time.time_ns(), (w, t0)
            assert w["result"]["pool"]["closed_unused"] is None, w
            # the caller's first cell: modules there, no name of ward's bound
            res = s.run(sid, PROBE)
            assert out_of(res) == "True True []\n", res
            assert res["execution_count"] == 1, res
            cells = ctx.sql("select n from cells where run_id=? order by n", run_id)
            assert [c["n"] for c in cells] == [0, 1], cells
            # nothing of the session before
            res = s.run(sid, "print('secret' in globals()); secret = %d" % i)
            assert out_of(res) == "False\n", (i, res)
            # each later one comes from the pool refilled behind it (a
            # fork of the zygote's template: ~0.1-0.3 s)
            time.sleep(1.2)
        # a one-shot run from the pool too
        res = s.ok("run", {"code": PROBE})
        assert out_of(res) == "True True []\n", res
        assert res["run_id"] not in seen_runs
        assert warmup_of(ctx, res["run_id"])["result"]["pool"]["handed_out_ns"]
        time.sleep(1.2)
    finally:
        assert s.close() == 0
    # the pool's unused sessions closed at the end, the cause recorded
    unused = [r for r in ctx.sql("select run_id, result from cells where n=0")
              if json.loads(r["result"])["pool"]["closed_unused"]]
    assert len(unused) == 2, unused
    for u in unused:
        assert json.loads(u["result"])["pool"] == {"handed_out_ns": None,
                                                   "closed_unused": "the server ended"}, u
        run = ctx.sql("select ended_ns, status from runs where id=?", u["run_id"])[0]
        assert run["ended_ns"] and run["status"] == "ok", run
        assert u["run_id"] not in seen_runs
        shown = ctx.ward("show", u["run_id"]).stdout
        assert "ward's warm-up, --preload; the session was never handed out: the server ended" \
            in shown, shown[-2000:]
    shown = ctx.ward("show", sorted(seen_runs)[0]).stdout
    assert "ward's warm-up, --preload; the session was handed out at +" in shown, shown[-2000:]


def test_pool_other_settings_start_fresh(ctx):
    s = Serve(ctx, "--pool", "1", "--preload", PRELOAD)
    try:
        for params in ({"language": "sh"}, {"env": {"A": "1"}}, {"memory_mb": 512},
                       {"profile": "audit"}):
            r = s.ok("session.create", params)
            assert warmup_of(ctx, r["run_id"]) is None, (params, r)
            if params.get("language") != "sh":
                res = s.run(r["session_id"], PROBE)
                assert out_of(res).startswith("False False"), (params, res)
            s.ok("session.close", {"session_id": r["session_id"]})
        # the pool's own is still there for settings that match
        r = s.ok("session.create", {"language": "python", "profile": "default",
                                    "metadata": {"k": "v"}, "timeout_s": 5})
        assert warmup_of(ctx, r["run_id"]), r
        assert out_of(s.run(r["session_id"], PROBE)) == "True True []\n"
    finally:
        assert s.close() == 0


def test_pool_session_is_not_expired_while_it_waits(ctx):
    s = Serve(ctx, "--pool", "1", "--idle", "1")
    try:
        time.sleep(2.5)  # longer than --idle, with calls that expire sessions
        s.ok("session.list", {})
        r = s.ok("session.create", {})
        w = warmup_of(ctx, r["run_id"])
        # without --preload the warm-up is empty: no cell, only the hand-out
        assert w is None, w
        run = ctx.sql("select started_ns from runs where id=?", r["run_id"])[0]
        assert time.time_ns() - run["started_ns"] > 2e9, run
        assert out_of(s.run(r["session_id"], "print(6 * 7)")) == "42\n"
    finally:
        assert s.close() == 0


def test_pool_preload_that_fails_stops_the_server(ctx):
    policy = json.load(open(os.path.join(ROOT, "profiles", "default.json")))
    policy["name"] = "no-fractions"
    policy["fs"].append({"id": "no-fractions", "path": "/usr/lib/python3.11/fractions.py",
                         "deny": ["read"]})
    pfile = ctx.write("no-fractions.json", json.dumps(policy))
    cases = [
        (["--pool", "1", "--preload", "json,no_such_module_x"], "no_such_module_x"),
        (["--pool", "1", "--policy", pfile, "--preload", "decimal,fractions"],
         "cannot import fractions"),
        (["--pool", "1", "--preload", "json;os"], "'json;os' is not a module name"),
        (["--preload", "json"], "--preload needs --pool"),
        (["--pool", "0"], "--pool 0"),
    ]
    for cmd in ("serve", "mcp"):
        for args, word in cases:
            r = ctx.ward(cmd, "--db", ctx.db, *args, stdin="", timeout=60)
            assert r.code == 125, (cmd, args, r)
            assert word in r.stderr, (cmd, args, r)


def test_pool_mcp(ctx):
    m = Mcp(ctx, "--pool", "1", "--preload", PRELOAD)
    m.initialize()
    r = m.call("run_code", code=PROBE)
    assert "".join(r["structuredContent"]["logs"]["stdout"]) == "True True []\n", r
    assert warmup_of(ctx, r["structuredContent"]["run_id"]), r
    assert m.close() == 0


def test_pool_e2b_listen(ctx):
    s = E2bServer(ctx, "--pool", "1", "--preload", PRELOAD)
    try:
        s.create()
    finally:
        s.stop()
    rows = [json.loads(r["result"])["pool"] for r in ctx.sql("select result from cells where n=0")]
    assert sum(1 for p in rows if p["handed_out_ns"]) == 1, rows


def test_pool_preloaded_pandas_is_wards_warmup_in_the_record(ctx):
    """--preload pandas: the caller's first pandas cell finds it imported,
    and the record tells ward's imports (before the hand-out) from the
    caller's cell."""
    if subprocess.run(["/usr/bin/python3", "-c", "import pandas"],
                      capture_output=True).returncode:
        raise wardtest.Skip("pandas is not installed for /usr/bin/python3")
    s = Serve(ctx, "--pool", "1", "--preload", "pandas")
    try:
        r = s.ok("session.create", {})
        res = s.run(r["session_id"], "import sys; print('pandas' in sys.modules)\n"
                    "import pandas as pd; pd.DataFrame({'a': [1, 2, 3]}).median()")
        assert out_of(res) == "True\n" and res["status"] == "ok", res
    finally:
        assert s.close() == 0
    w = warmup_of(ctx, r["run_id"])
    handed = w["result"]["pool"]["handed_out_ns"]
    # the imports are in the run the sandbox was forked from (the zygote's
    # template: its "zygote" layer names it), else in its own
    run = ctx.sql("select layers from runs where id=?", r["run_id"])[0]
    zyg = [l["detail"] for l in json.loads(run["layers"]) if l["name"] == "zygote"]
    origin = re.search(r"[0-9a-f]{16}", zyg[0]).group(0) if zyg else r["run_id"]
    opened = ctx.events(origin, "syscall='openat' and target like '%/pandas/%'")
    assert opened, "no pandas file opened in run %s" % origin
    # every pandas file was opened by ward's warm-up, before the hand-out
    assert all(e["ts_ns"] < handed for e in opened), [e for e in opened if e["ts_ns"] >= handed][:3]
    late = ctx.events(r["run_id"], "syscall='openat' and target like '%/pandas/%' "
                      "and ts_ns >= ?", handed)
    assert not late, late[:3]
    cell1 = ctx.sql("select started_ns from cells where run_id=? and n=1", r["run_id"])[0]
    assert handed <= cell1["started_ns"], (handed, cell1)
