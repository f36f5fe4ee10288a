#!/usr/bin/python3
"""What a zygote for the warm pool would cost and save (issue 26, section
1; docs/performance.md, "The warm pool, and what it does not share yet"),
measured before it exists: one `ward run` (default profile) imports
pandas, runs the first pandas cell once (its lazily made state), and forks
N children, each of which runs the cell three times and waits. This is
NOT the zygote's isolation (the children share the run's namespaces and
supervisor): it measures only what forking a warm interpreter costs under
ward, against the pooled sandbox that imports for itself.

  import       the template's import of pandas: wall and CPU
  fork         os.fork() in the parent (wall), under ward (traced fork)
  cells        each child's first, second and third pandas cell: the
               first pays the copy-on-write faults of what it touches
  cpu          CPU per child (its cells included), from RUSAGE_CHILDREN
  memory       RSS and PSS of each idle child and the template, read from
               outside (/proc/PID/smaps_rollup of the run's python3s)

usage: bench/fork_probe.py [--build DIR] [-n CHILDREN] [--runs R]
"""
import argparse
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import time

CODE = r'''
import os, sys, time, resource
t0 = time.perf_counter(); c0 = time.process_time()
import pandas as pd
cell = lambda: pd.DataFrame({'a': [1, 2, 3], 'b': [4.0, 5.5, 6.5]}).median()
t1 = time.perf_counter(); c1 = time.process_time()
cell()
print("IMPORT %.1f %.1f" % (1000 * (t1 - t0), 1000 * (c1 - c0)), flush=True)
kids = []
for i in range(int(sys.argv[1])):
    r, w = os.pipe()
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        ms = []
        for _ in range(3):
            a = time.perf_counter(); cell(); ms.append(1000 * (time.perf_counter() - a))
        os.write(w, (" ".join("%.2f" % m for m in ms)).encode())
        os.close(w)
        time.sleep(60)
        os._exit(0)
    fork_ms = 1000 * (time.perf_counter() - t)
    os.close(w)
    print("CHILD %.2f %s" % (fork_ms, os.read(r, 200).decode()), flush=True)
    os.close(r)
    kids.append(pid)
print("IDLE", flush=True)
time.sleep(3)  # measured from outside meanwhile
for pid in kids:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("CPU %.1f" % (1000 * (ru.ru_utime + ru.ru_stime) / len(kids)), flush=True)
'''


def rollup(pid):
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            p = line.split()
            if p[0] in ("Rss:", "Pss:"):
                out[p[0][:-1].lower()] = int(p[1]) / 1024
    return out


def descendants(pid):
    """Every process under pid (by /proc's children lists)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for t in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, t)) as f:
                    kids = [int(k) for k in f.read().split()]
                out += kids
                todo += kids
        except OSError:
            pass
    return out


def one_run(ward, n, work):
    path = os.path.join(work, "probe.py")
    with open(path, "w") as f:
        f.write(CODE)
    p = subprocess.Popen([ward, "run", "--db", os.path.join(work, "a.db"), path, "--", str(n)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
    res = {"children": []}
    for line in p.stdout:
        w = line.split()
        if w[0] == "IMPORT":
            res["import_ms"], res["import_cpu_ms"] = float(w[1]), float(w[2])
        elif w[0] == "CHILD":
            res["children"].append({"fork_ms": float(w[1]), "cells_ms": [float(x) for x in w[2:]]})
        elif w[0] == "IDLE":
            time.sleep(0.5)
            pys = [q for q in descendants(p.pid)
                   if os.path.realpath("/proc/%d/exe" % q).startswith("/usr/bin/python3")]
            mem = {q: rollup(q) for q in pys}
            # the template is the python3 whose parent is not a python3
            tmpl = [q for q in pys if int(open("/proc/%d/stat" % q).read().rsplit(")", 1)[1].split()[1]) not in pys]
            res["template"] = mem[tmpl[0]] if tmpl else None
            res["child_mem"] = [m for q, m in mem.items() if q not in tmpl]
        elif w[0] == "CPU":
            res["cpu_per_child_ms"] = float(w[1])
    p.wait()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("-n", type=int, default=4, help="children per run")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    ward = os.path.join(a.build, "ward")
    runs = []
    with tempfile.TemporaryDirectory(prefix="ward-forkprobe-") as work:
        for _ in range(a.runs):
            runs.append(one_run(ward, a.n, work))
    kids = [c for r in runs for c in r["children"]]
    mem = [m for r in runs for m in r["child_mem"]]
    summary = {
        "import_ms": st.median(r["import_ms"] for r in runs),
        "import_cpu_ms": st.median(r["import_cpu_ms"] for r in runs),
        "fork_ms": st.median(c["fork_ms"] for c in kids),
        "first_cell_ms": st.median(c["cells_ms"][0] for c in kids),
        "second_cell_ms": st.median(c["cells_ms"][1] for c in kids),
        "cpu_per_child_ms": st.median(r["cpu_per_child_ms"] for r in runs),
        "child_rss_mib": st.median(m["rss"] for m in mem),
        "child_pss_mib": st.median(m["pss"] for m in mem),
        "template_rss_mib": st.median(r["template"]["rss"] for r in runs if r["template"]),
        "template_pss_mib": st.median(r["template"]["pss"] for r in runs if r["template"]),
        "children": len(kids),
    }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
