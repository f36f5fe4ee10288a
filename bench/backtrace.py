#!/usr/bin/python3
"""What a backtrace costs a denial: a Python script makes N denied opens
under `ward run`, once with the default profile (a native backtrace and
the Python frames at each denial) and once with "backtrace": [] (none);
the cost of one backtrace is the difference of the median gaps between
consecutive denials (events.ts_ns), and of the runs' wall times over N.
Runs are interleaved, ROUNDS of each; medians. Standard library only.

usage: bench/backtrace.py [--ward PATH]... [--n 200] [--rounds 7]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics as st
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CODE = """
for i in range({n}):
    try:
        open('/etc/shadow')
    except OSError:
        pass
"""


def one(ward, db, policy, n):
    t0 = time.monotonic()
    p = subprocess.run([ward, "run", "--quiet", "--db", db, "--policy", policy, "-c",
                        CODE.format(n=n)], capture_output=True, text=True)
    wall = time.monotonic() - t0
    assert p.returncode == 0, p.stderr[-500:]
    con = sqlite3.connect(db)
    rid = con.execute("select id from runs order by started_ns desc limit 1").fetchone()[0]
    rows = con.execute(
        "select seq, ts_ns from events where run_id=? and decision='deny' "
        "and target='/etc/shadow' order by seq", (rid,)).fetchall()
    # the first denial: from the event before it (the helper starts there)
    before = con.execute("select ts_ns from events where run_id=? and seq=?",
                         (rid, rows[0][0] - 1)).fetchone()[0]
    con.close()
    ts = [r[1] for r in rows]
    assert len(ts) == n, len(ts)
    gaps = [(b - a) / 1e6 for a, b in zip(ts, ts[1:])]
    return wall, st.median(gaps), (ts[0] - before) / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ward", action="append")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    wards = a.ward or [os.path.join(ROOT, "build", "ward")]
    tmp = tempfile.mkdtemp(prefix="ward-btbench-")
    try:
        with open(os.path.join(ROOT, "profiles", "default.json")) as f:
            pol = json.load(f)
        on = os.path.join(tmp, "on.json")
        off = os.path.join(tmp, "off.json")
        json.dump(pol, open(on, "w"))
        pol["backtrace"] = []
        json.dump(pol, open(off, "w"))
        res = {w: {"on": [], "off": []} for w in wards}
        for r in range(a.rounds):
            for w in wards:
                for kind, policy in (("on", on), ("off", off)):
                    db = os.path.join(tmp, f"{r}-{wards.index(w)}-{kind}.db")
                    res[w][kind].append(one(w, db, policy, a.n))
        for w in wards:
            on_ = res[w]["on"]
            off_ = res[w]["off"]
            gap_on = st.median(x[1] for x in on_)
            gap_off = st.median(x[1] for x in off_)
            wall_on = st.median(x[0] for x in on_)
            wall_off = st.median(x[0] for x in off_)
            first = st.median(x[2] for x in on_) - st.median(x[2] for x in off_)
            print(f"{w}: median gap between denials {gap_on:.3f} ms with backtraces, "
                  f"{gap_off:.3f} ms without: {gap_on - gap_off:.3f} ms a backtrace; "
                  f"wall {wall_on:.3f} s vs {wall_off:.3f} s: "
                  f"{(wall_on - wall_off) * 1000 / a.n:.3f} ms a denial; "
                  f"first denial's extra {first:.2f} ms ({a.rounds} rounds, {a.n} denials)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
