#!/usr/bin/python3
"""ward batch against a shell loop of ward run over the same samples
(issue 26, section 2): N small Python samples (or pandas ones with
--pandas), each round runs `for f in ...; do ward run --json ...; done` in
/bin/sh and `ward batch --jobs J` over the same files, in alternating
order, each into a fresh database; medians of wall time, their ratio, and
a check that both gave every sample the same stdout, status and exit code.
Standard library only.

With --pool N [--preload MODULES] the batch runs its samples from a warm
pool (a pooled run's stdout is what it wrote from its hand-out on; the
pool's sandboxes never handed out are not samples). With --preload each
round also runs the batch with --pool-fork off: the pooled sandboxes are
then each importing the modules themselves instead of being forks of one
template interpreter (the zygote, whose own run is not a sample), and the
three are interleaved.

usage: bench/batch.py [--build DIR] [-n SAMPLES] [--jobs J] [--rounds R]
                      [--pandas] [--pool N [--preload MODULES]]
                      [--out FILE.json]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics as st
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SMALL = "import sys\nn = {i}\nprint(n, sum(range(n * 1000)), sys.argv[0][-10:])\n"
PANDAS = ("import pandas as pd\n"
          "df = pd.DataFrame({{'a': range({i} * 10), 'b': range({i} * 10)}})\n"
          "print({i}, df['a'].median(), len(df))\n")


def samples(d, n, pandas):
    os.makedirs(d)
    paths = []
    for i in range(n):
        p = os.path.join(d, f"s{i:03d}.py")
        with open(p, "w") as f:
            f.write((PANDAS if pandas else SMALL).format(i=i + 1))
        paths.append(p)
    return paths


def outcomes(db):
    """{script name: (stdout, status, exit_code)} from a database."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = {}
        for rid, name, status, code in con.execute(
                "select id, code_name, status, exit_code from runs "
                "where code_name != 'zygote-template'"):
            cells = {n: json.loads(r) for n, r in con.execute(
                "select n, result from cells where run_id = ?", (rid,))}
            since = 0
            if 0 in cells:  # pooled: the warm-up is ward's, the script cell 1
                if 1 not in cells:
                    continue  # a pooled sandbox never handed out
                name = cells[1]["script"]["name"]
                since = cells[0]["pool"]["handed_out_ns"]
            data = b"".join(bytes(r[0]) for r in con.execute(
                "select data from outputs where run_id = ? and stream = 'stdout' "
                "and ts_ns >= ? order by seq", (rid, since)))
            out[os.path.basename(name)] = (data, status, code)
        return out
    finally:
        con.close()


def forked(db):
    """(template runs, runs whose record says they were forked from one)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        t = con.execute("select count(*) from runs where code_name = "
                        "'zygote-template'").fetchone()[0]
        f = sum(1 for (l,) in con.execute("select layers from runs")
                if any(x["name"] == "zygote" and x["active"]
                       for x in json.loads(l or "[]")))
        return t, f
    finally:
        con.close()


def timed(argv, env, cwd):
    t = time.monotonic()
    p = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0,):
        sys.exit(f"{argv[:3]}... exited {p.returncode}: {p.stderr[-2000:]}")
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("-n", type=int, default=50, help="samples")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pandas", action="store_true", help="pandas samples")
    ap.add_argument("--pool", type=int, help="ward batch --pool N")
    ap.add_argument("--preload", help="ward batch --preload MODULES")
    ap.add_argument("--out", help="write the results here (JSON)")
    a = ap.parse_args()
    ward = os.path.join(ROOT, a.build, "ward")
    tmp = tempfile.mkdtemp(prefix="ward-bench-batch-", dir="/dev/shm")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": tmp}
    print(f"load average before: {os.getloadavg()}")
    try:
        files = samples(os.path.join(tmp, "samples"), a.n, a.pandas)
        variants = ["loop", "batch"] + (["batch-nofork"] if a.pool and a.preload else [])
        times = {v: [] for v in variants}
        same = True
        for r in range(a.rounds):
            k = r % len(variants)
            order = variants[k:] + variants[:k]
            dbs = {}
            for v in order:
                db = os.path.join(tmp, f"{v}-{r}.db")
                dbs[v] = db
                if v == "loop":
                    script = (f'for f in "$@"; do "{ward}" run --db "{db}" --json "$f"'
                              ' > /dev/null || exit 1; done')
                    argv = ["/bin/sh", "-c", script, "sh"] + files
                else:
                    argv = [ward, "batch", "--db", db, "--jobs", str(a.jobs),
                            "--progress", "none", "--out",
                            os.path.join(tmp, f"r-{v}-{r}.jsonl")]
                    if a.pool:
                        argv += ["--pool", str(a.pool)]
                    if a.preload:
                        argv += ["--preload", a.preload]
                    if v == "batch-nofork":
                        argv += ["--pool-fork", "off"]
                    argv += files
                times[v].append(timed(argv, env, tmp))
            lo = outcomes(dbs["loop"])
            ok = all(outcomes(dbs[v]) == lo for v in variants) and len(lo) == a.n
            same = same and ok
            zyg = {v: forked(dbs[v]) for v in variants if v != "loop"}
            print(f"round {r + 1}: " + ", ".join(
                f"{v} {times[v][-1]:.2f}s" for v in variants) +
                f"; (templates, forked runs): {zyg}; "
                f"same outputs and verdicts: {ok}", flush=True)
        res = {"loadavg_after": os.getloadavg(), "samples": a.n, "jobs": a.jobs, "rounds": a.rounds,
               "workload": "pandas" if a.pandas else "small",
               "pool": a.pool, "preload": a.preload,
               "cpus": len(os.sched_getaffinity(0)),
               "identical": same}
        for v in variants:
            key = v.replace("-", "_")
            res[key + "_s"] = st.median(times[v])
            res["all_" + key + "_s"] = times[v]
        res["speedup"] = res["loop_s"] / res["batch_s"]
        line = f"median: loop {res['loop_s']:.2f}s, batch {res['batch_s']:.2f}s: {res['speedup']:.2f}x"
        if "batch_nofork_s" in res:
            res["speedup_nofork"] = res["loop_s"] / res["batch_nofork_s"]
            line += (f"; batch --pool-fork off {res['batch_nofork_s']:.2f}s: "
                     f"{res['speedup_nofork']:.2f}x")
        print(line + f"; identical outputs and verdicts: {same}")
        if a.out:
            with open(a.out, "w") as f:
                json.dump(res, f, indent=1)
        return 0 if same else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
