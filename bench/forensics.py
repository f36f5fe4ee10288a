#!/usr/bin/python3
"""Forensics at scale: `ward recheck --all` over many runs, and `ward
export` (jsonl and ocsf) of one large run; medians of wall time and peak
RSS over a few repetitions. Standard library only.

usage: bench/forensics.py [--build DIR] [--runs N] [--events N] [--reps N]
                          [--tmp DIR] [--out PREFIX]

It records 20 real runs with `ward run` (file reads and writes, a denied
read, a denied connect, a child process), clones them by SQL into --runs
runs with new ids (2,000), and grows one more clone into a run of --events
events (100,000). Each command runs through BUILD/helpers/maxrss (peak RSS
of the command alone). Writes PREFIX.json and PREFIX.md (default
bench/results/forensics).
"""
import argparse
import json
import os
import platform
import secrets
import shutil
import sqlite3
import statistics as st
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The real runs: what reviewers meet in practice, small and varied.
CODES = [
    "print('hello')",
    "import json\nprint(json.dumps({'a': [1, 2, 3]}))",
    "open('out.txt', 'w').write('x' * 1000)\nprint(open('out.txt').read()[:10])",
    "try:\n    open('/etc/shadow')\nexcept OSError as e:\n    print(e)",
    "import socket\ns = socket.socket()\ntry:\n    s.connect(('10.1.2.3', 80))\n"
    "except OSError as e:\n    print(e)",
    "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'print(1)'])",
    "import os\nfor i in range(20):\n    os.makedirs(f'd{i}', exist_ok=True)\n"
    "    open(f'd{i}/f', 'w').write(str(i))\nprint(sorted(os.listdir('.')))",
    "import csv, io\nw = csv.writer(io.StringIO())\nw.writerows([[1, 2]] * 100)\nprint('ok')",
    "import sys\nsys.stdout.buffer.write(bytes(range(256)))",
    "import os\nprint(os.listdir('/usr/lib')[:3])",
]


def record_runs(ward, db, n, env, tmp):
    for i in range(n):
        p = subprocess.run([ward, "run", "--db", db, "-c", CODES[i % len(CODES)]],
                           capture_output=True, env=env, cwd=tmp, timeout=120)
        if p.returncode not in (0, 1):
            sys.exit(f"ward run failed ({p.returncode}): {p.stderr[-500:]!r}")


def columns(con, table):
    return [r[1] for r in con.execute(f"pragma table_info({table})")]


def clone_run(con, cols, src, new, seq_extra=None):
    """Copies run src (its row, processes, events, outputs) as run new."""
    rc = cols["runs"]
    con.execute(f"insert into runs ({', '.join(rc)}) select "
                + ", ".join("?2" if c == "id" else c for c in rc)
                + " from runs where id = ?1", (src, new))
    for t in ("processes", "events", "outputs"):
        tc = cols[t]
        con.execute(f"insert into {t} ({', '.join(tc)}) select "
                    + ", ".join("?2" if c == "run_id" else c for c in tc)
                    + f" from {t} where run_id = ?1", (src, new))


def grow_events(con, cols, run_id, n):
    """Adds n events to run_id: copies of its events with new seqs."""
    base, count = con.execute("select max(seq), count(*) from events where run_id = ?",
                              (run_id,)).fetchone()
    sel = ", ".join("?2 + c.i" if c == "seq" else "e.ts_ns + c.i" if c == "ts_ns"
                    else f"e.{c}" for c in cols["events"])
    con.execute(
        "with recursive c(i) as (select 1 union all select i + 1 from c where i < ?3) "
        f"insert into events ({', '.join(cols['events'])}) select {sel} from c "
        "join events e on e.run_id = ?1 and e.seq = 1 + (c.i % ?4)",
        (run_id, base, n, count))
    con.execute("update runs set events = events + ? where id = ?", (n, run_id))


def build_db(ward, db, runs, events, env, tmp):
    record_runs(ward, db, 20, env, tmp)
    con = sqlite3.connect(db)
    con.execute("pragma journal_mode = wal")
    cols = {t: columns(con, t) for t in ("runs", "processes", "events", "outputs")}
    src = [r[0] for r in con.execute("select id from runs order by started_ns")]
    k = 0
    while len(src) + k < runs:
        clone_run(con, cols, src[k % len(src)], secrets.token_hex(8))
        k += 1
    big = secrets.token_hex(8)
    clone_run(con, cols, src[5], big)  # the run with a child process
    grow_events(con, cols, big, events)
    con.commit()
    con.execute("pragma wal_checkpoint(truncate)")
    n_runs, n_events = con.execute("select count(*), (select count(*) from events) "
                                   "from runs").fetchone()
    big_events = con.execute("select count(*) from events where run_id = ?",
                             (big,)).fetchone()[0]
    con.close()
    return big, n_runs, n_events, big_events


def measure(helper, argv, out, env):
    """(seconds, peak RSS KiB, exit status, CPU seconds) of argv, stdout
    to out."""
    t0 = time.monotonic()
    p = subprocess.run([helper, out] + argv, capture_output=True, text=True, env=env)
    took = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"maxrss failed: {p.stderr!r}")
    status, kb, cpu = p.stdout.split()
    return took, int(kb), int(status), float(cpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=2000, help="runs in the database")
    ap.add_argument("--events", type=int, default=100000, help="events of the large run")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions each")
    ap.add_argument("--tmp", default=None, help="directory for the database")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "forensics"))
    a = ap.parse_args()
    ward = os.path.join(ROOT, a.build, "ward")
    helper = os.path.join(ROOT, a.build, "helpers", "maxrss")
    for p in (ward, helper):
        if not os.access(p, os.X_OK):
            sys.exit(f"{p} is missing: make O={a.build} all")
    tmp = tempfile.mkdtemp(prefix="ward-forensics-", dir=a.tmp)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": tmp}
    db = os.path.join(tmp, "audit.db")
    notes = []
    results = {}
    load_before = os.getloadavg()
    try:
        t0 = time.monotonic()
        big, n_runs, n_events, big_events = build_db(ward, db, a.runs, a.events, env, tmp)
        setup_s = time.monotonic() - t0
        has_recheck = subprocess.run([ward, "recheck", "--help"], capture_output=True,
                                     env=env).returncode == 0
        cases = {}
        if has_recheck:
            cases["recheck --all --profile default"] = (
                [ward, "recheck", "--all", "--profile", "default", "--db", db],
                f"{n_runs} runs, {n_events} events")
        else:
            notes.append("ward recheck does not exist in this build: its line is skipped")
        for fmt in ("jsonl", "ocsf"):
            cases[f"export --format {fmt} (large run)"] = (
                [ward, "export", "--db", db, "--format", fmt, big],
                f"1 run, {big_events} events")
        out = os.path.join(tmp, "out")
        for rep in range(a.reps + 1):  # one untimed warm-up round
            for name, (argv, _) in cases.items():
                took, kb, status, cpu = measure(helper, argv, out, env)
                if status != 0:
                    sys.exit(f"{name}: exit {status}")
                if rep == 0:
                    continue
                r = results.setdefault(name, {"seconds": [], "cpu_seconds": [],
                                              "max_rss_kib": [], "status": status})
                r["seconds"].append(round(took, 3))
                r["cpu_seconds"].append(cpu)
                r["max_rss_kib"].append(kb)
                r["output_bytes"] = os.path.getsize(out)
        summary = {}
        for name, r in results.items():
            summary[name] = {"what": cases[name][1],
                             "median_s": st.median(r["seconds"]),
                             "median_cpu_s": st.median(r["cpu_seconds"]),
                             "median_rss_mib": round(st.median(r["max_rss_kib"]) / 1024, 1),
                             "max_rss_mib": round(max(r["max_rss_kib"]) / 1024, 1),
                             "output_mib": round(r["output_bytes"] / 2**20, 1)}
        doc = {
            "when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, kernel {platform.release()}",
            "load_before": load_before, "load_after": os.getloadavg(),
            "reps": a.reps, "runs": n_runs, "events": n_events,
            "large_run_events": big_events, "db_mib": round(os.path.getsize(db) / 2**20, 1),
            "setup_s": round(setup_s, 1), "raw": results, "summary": summary,
            "notes": notes,
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    md = [f"### ward forensics benchmark — {doc['when']}, {doc['machine']}",
          "",
          f"Database: {n_runs} runs ({20} recorded by `ward run`, the rest cloned by SQL with "
          f"new ids), {n_events} events, {doc['db_mib']} MiB; the large run has "
          f"{big_events} events. Median of {a.reps} timed repetitions after one warm-up; "
          "peak RSS and CPU time (user + system) of the command alone "
          "(tests/helpers/maxrss.c); on a loaded machine wall time exceeds CPU time.",
          "",
          "| command | input | median s | median CPU s | median peak RSS MiB | output MiB |",
          "|---|---|---:|---:|---:|---:|"]
    for name, s in summary.items():
        md.append(f"| `ward {name}` | {s['what']} | {s['median_s']:.2f} | "
                  f"{s['median_cpu_s']:.2f} | {s['median_rss_mib']} | {s['output_mib']} |")
    md.append("")
    md.append(f"Load average before: {' '.join(f'{x:.2f}' for x in doc['load_before'])}; "
              f"after: {' '.join(f'{x:.2f}' for x in doc['load_after'])}. "
              f"Building the database took {doc['setup_s']} s.")
    for n in notes:
        md.append(f"Note: {n}.")
    text = "\n".join(md) + "\n"
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
