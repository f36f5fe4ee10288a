#!/usr/bin/python3
"""The warm pool (issue 26, section 1): a new session's first pandas cell
with `ward serve --pool 2 --preload pandas` against a server without a
pool; a one-shot run from the pool against a warm cell; the memory of an
idle pooled sandbox. Medians; standard library only.

  first_cell   session.create, then `import pandas as pd;
               pd.DataFrame(...).median()`: the cell alone (request
               written to response read) and create + cell
  oneshot      `run` without session_id, code `1+1`, from the pool; and
               `1+1` in an open session (warm, back to back after the
               one-shot); and `1+1` in that session after the same idle
               gap as the one-shot (warm_idle: what a one-shot is compared
               with when both come after a pause)
  native       python3 -c 'import pandas ...', spawned and waited
  memory       RSS and PSS of each idle pooled sandbox (its worker and
               everything under it: the interpreter), pools of 2

Between samples the bench waits for the pool to refill (--gap seconds):
the target is the hand-out of a ready sandbox, not the refill rate.

Targets: first pandas cell <= 30 ms (median) with the pool; a one-shot
from the pool within 5 ms of a warm cell. Writes results/pool.json and
results/pool.md.

usage: bench/pool.py [--build DIR] [-n RUNS] [--gap SECONDS]
"""
import argparse
import json
import os
import shutil
import statistics as st
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sessions import ENV, Server, med_ms, native_start  # noqa: E402

CELL = "import pandas as pd; pd.DataFrame({'a': [1, 2, 3], 'b': [4.0, 5.5, 6.5]}).median()"


def first_cells(ward, db, n, gap, opts):
    """(cell seconds, create + cell seconds) of n new sessions."""
    srv = Server(ward, db, *opts)
    cell, total = [], []
    try:
        srv.ok("session.list", {})  # once the pool's first is ready
        time.sleep(gap)
        for _ in range(n):
            t_create, r = srv.ok("session.create", {})
            t_cell, res = srv.ok("run", {"session_id": r["session_id"], "code": CELL})
            if res["status"] != "ok":
                raise RuntimeError("first cell: %s" % res.get("error"))
            cell.append(t_cell)
            total.append(t_create + t_cell)
            srv.ok("session.close", {"session_id": r["session_id"]})
            time.sleep(gap)
    finally:
        srv.close()
    return cell, total


def oneshot_vs_warm(ward, db, n, gap, opts):
    srv = Server(ward, db, *opts)
    one, warm, idle = [], [], []
    try:
        srv.ok("session.list", {})
        time.sleep(gap)
        _, r = srv.ok("session.create", {})
        sid = r["session_id"]
        time.sleep(gap)
        for _ in range(n):
            t, res = srv.ok("run", {"session_id": sid, "code": "1+1"})
            idle.append(t)
            time.sleep(gap)
            t, res = srv.ok("run", {"code": "1+1"})
            one.append(t)
            for _ in range(5):
                t, res = srv.ok("run", {"session_id": sid, "code": "1+1"})
                warm.append(t)
            time.sleep(gap)
    finally:
        srv.close()
    return one, warm, idle


def tree(pid):
    """pid and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:  # the server's workers are its spawner thread's children
            for t in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def mem_kb(pid):
    """(rss, pss) of one process in kB."""
    rss = pss = 0
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def idle_memory(ward, db, gap, opts):
    """[(rss kB, pss kB)] of each idle pooled sandbox (worker + below)."""
    srv = Server(ward, db, *opts)
    try:
        srv.ok("session.list", {})
        time.sleep(gap * 2)  # both pooled sessions up and warm
        each = []
        for w in tree(srv.p.pid)[1:]:
            try:
                cmd = open("/proc/%d/cmdline" % w, "rb").read()
            except OSError:
                continue
            if b"--session-worker" not in cmd:
                continue
            rss = pss = 0
            for p in tree(w):
                r, s = mem_kb(p)
                rss += r
                pss += s
            each.append((rss, pss))
    finally:
        srv.close()
    return each


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("--gap", type=float, default=5.0,
                    help="seconds for the pool to refill between samples")
    a = ap.parse_args()
    ward = os.path.abspath(os.path.join(a.build, "ward"))
    tmp = tempfile.mkdtemp(prefix="ward-bench-pool-")
    db = os.path.join(tmp, "audit.db")
    pool = ["--pool", "2", "--preload", "pandas"]
    res = {"n": a.n, "gap_s": a.gap, "load": os.getloadavg(), "cell": CELL}
    try:
        c, t = first_cells(ward, db, a.n, a.gap, pool)
        res["pool_first_cell_ms"], res["pool_create_and_cell_ms"] = med_ms(c), med_ms(t)
        c, t = first_cells(ward, db, a.n, 0.5, [])
        res["fresh_first_cell_ms"], res["fresh_create_and_cell_ms"] = med_ms(c), med_ms(t)
        one, warm, idle = oneshot_vs_warm(ward, db, a.n, a.gap, pool)
        res["pool_oneshot_ms"], res["warm_cell_ms"] = med_ms(one), med_ms(warm)
        res["warm_cell_after_gap_ms"] = med_ms(idle)
        res["native_pandas_ms"] = med_ms(native_start(
            ["python3", "-c", CELL.replace("; pd.", "; print(pd.", 1) + ")"], a.n))
        m = idle_memory(ward, db, a.gap, pool)
        res["idle_pooled_pandas_kb"] = [{"rss": r, "pss": p} for r, p in m]
        m = idle_memory(ward, db, 1.0, ["--pool", "2"])
        res["idle_pooled_plain_kb"] = [{"rss": r, "pss": p} for r, p in m]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = os.path.join(HERE, "results")
    with open(os.path.join(out, "pool.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(out, "pool.md"), "w") as f:
        f.write(report(res))
    print(report(res))
    return 0


def report(r):
    def kb(lst, k):
        return "%.0f MiB" % (st.median(x[k] for x in lst) / 1024) if lst else "-"
    rows = [
        ("first pandas cell, --pool 2 --preload pandas", r["pool_first_cell_ms"], "<= 30 ms"),
        ("create + first pandas cell, pool", r["pool_create_and_cell_ms"], ""),
        ("first pandas cell, no pool", r["fresh_first_cell_ms"], ""),
        ("create + first pandas cell, no pool", r["fresh_create_and_cell_ms"], ""),
        ("native python3 -c 'import pandas ...'", r["native_pandas_ms"], ""),
        ("one-shot run `1+1` from the pool", r["pool_oneshot_ms"], "warm + 5 ms"),
        ("warm cell `1+1` (back to back)", r["warm_cell_ms"], ""),
        ("warm cell `1+1` after the same gap", r.get("warm_cell_after_gap_ms"), ""),
    ]
    s = ["# Warm pool (bench/pool.py)", "",
         "n=%d per row (medians), refill gap %.1f s, load %s" % (
             r["n"], r["gap_s"], " ".join("%.2f" % x for x in r["load"])), "",
         "| what | ms | target |", "|---|---|---|"]
    s += ["| %s | %s | %s |" % row for row in rows]
    s += ["", "| idle pooled sandbox (worker + interpreter) | RSS | PSS |", "|---|---|---|",
          "| --preload pandas | %s | %s |" % (kb(r["idle_pooled_pandas_kb"], "rss"),
                                             kb(r["idle_pooled_pandas_kb"], "pss")),
          "| no preload | %s | %s |" % (kb(r["idle_pooled_plain_kb"], "rss"),
                                       kb(r["idle_pooled_plain_kb"], "pss")), ""]
    return "\n".join(s)


if __name__ == "__main__":
    sys.exit(main())
