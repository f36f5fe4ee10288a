#!/usr/bin/python3
"""Start-up alone: interleaved runs of native `python3 -c pass` and
`ward run -v -c pass` (ward, ward --no-cgroup, and a --base-ward binary if
given), and of the design's floor: the minitracer (bench/minitracer.c,
built into BUILD/bench/ when missing or older than its source) alone and,
as root, with the namespaces (--ns); median wall time of each and the
median time of each `-v` milestone. Standard library only.

usage: bench/startup.py [--build DIR] [--base-ward PATH] [-n RUNS]
                        [--out FILE.json]
"""
import argparse
import json
import os
import re
import shutil
import statistics as st
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import build_tool  # noqa: E402 (bench/bench.py, beside us)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MILESTONE = re.compile(r"ward: \[\s*([\d.]+) ms\] (.*)")


def milestone_key(msg):
    """The milestone's text with what changes per run (pids, paths, run
    ids) taken out, so runs can be grouped."""
    msg = re.sub(r"/\S+", "P", msg)
    msg = re.sub(r"run \w+ recorded", "run recorded", msg)
    return re.sub(r"\d+", "N", msg)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--base-ward", metavar="PATH")
    ap.add_argument("-n", type=int, default=20, help="timed runs each")
    ap.add_argument("--out", help="write the medians here (JSON)")
    a = ap.parse_args()
    ward = os.path.join(ROOT, a.build, "ward")
    tmp = tempfile.mkdtemp(prefix="ward-startup-")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "HOME": tmp}
    variants = {
        "native": ["/usr/bin/python3", "-c", "pass"],
        "ward": [ward, "run", "-v", "--db", f"{tmp}/ward.db", "-c", "pass"],
        "ward_nocg": [ward, "run", "-v", "--no-cgroup", "--db",
                      f"{tmp}/nocg.db", "-c", "pass"],
    }
    mt, why = build_tool("minitracer", os.path.join(ROOT, a.build, "bench"),
                         ["-lseccomp"])
    if why:
        print(f"startup.py: {why}", file=sys.stderr)
    if mt:
        variants["minitracer"] = [mt, "/usr/bin/python3", "-c", "pass"]
        if os.geteuid() == 0:
            variants["minitracer_ns"] = [mt, "--ns", "/usr/bin/python3",
                                         "-c", "pass"]
    if a.base_ward:
        variants["ward_base"] = [os.path.abspath(a.base_ward), "run", "-v",
                                 "--db", f"{tmp}/base.db", "-c", "pass"]
    names = list(variants)
    wall = {v: [] for v in names}
    marks = {v: {} for v in names}
    try:
        for r in range(-1, a.n):  # one untimed warm-up round
            k = (r + 1) % len(names)
            for v in names[k:] + names[:k]:
                t0 = time.monotonic()
                p = subprocess.run(variants[v], env=env, cwd=tmp,
                                   capture_output=True, text=True)
                ms = (time.monotonic() - t0) * 1e3
                if p.returncode != 0:
                    sys.exit(f"startup.py: {' '.join(variants[v])}: exit "
                             f"{p.returncode}: {p.stderr[-300:]}")
                if r < 0:
                    continue
                wall[v].append(ms)
                for line in p.stderr.splitlines():
                    m = MILESTONE.match(line)
                    if m:
                        marks[v].setdefault(milestone_key(m.group(2)),
                                            []).append(float(m.group(1)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    native = st.median(wall["native"])
    res = {}
    for v in names:
        med = st.median(wall[v])
        res[v] = {"runs": len(wall[v]), "wall_med_ms": med,
                  "wall_min_ms": min(wall[v]), "delta_med_ms": med - native,
                  "milestones_med_ms": {k: st.median(x)
                                        for k, x in marks[v].items()}}
        print(f"{v:13s} median {med:6.1f} ms (native {med - native:+.1f})")
        for k, x in res[v]["milestones_med_ms"].items():
            print(f"    {x:7.2f} ms  {k}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
