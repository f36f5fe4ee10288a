#!/usr/bin/python3
"""The official E2B SDK against `ward serve --listen`: sandbox create, the
first cell, a warm cell (`1+1`), a pandas chart cell, kill, and 8 sandboxes
at once (created together; a `time.sleep(1)` cell in each, target < 2.5 s).
Medians in ms. Needs node and tests/e2b/node_modules (tools/install-deps).
Writes results/e2b.json and results/e2b.md.

usage: bench/e2b.py [--build DIR] [--rounds N] [--warm N]
"""
import argparse
import json
import os
import shutil
import statistics as st
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEY = "bench-key"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warm", type=int, default=20, help="warm cells a round")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "e2b"))
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(ROOT, "tests", "e2b", "node_modules", "@e2b")):
        print("bench/e2b.py: tests/e2b/node_modules is missing (tools/install-deps); skipped",
              file=sys.stderr)
        return 0
    tmp = tempfile.mkdtemp(prefix="ward-e2b-bench-")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": tmp,
           "WARD_API_KEY": KEY}
    srv = subprocess.Popen([os.path.join(ROOT, a.build, "ward"), "serve", "--listen", "127.0.0.1:0",
                            "--db", os.path.join(tmp, "e2b.db")],
                           stdout=subprocess.PIPE, env=env, cwd=tmp)
    try:
        url = srv.stdout.readline().decode().split()[-1]
        p = subprocess.run(["/usr/bin/node", os.path.join(ROOT, "bench", "e2b.mjs"), str(a.rounds),
                            str(a.warm)], capture_output=True, text=True, timeout=1800,
                           env=dict(env, E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY=KEY))
        if p.returncode:
            print(p.stderr[-3000:], file=sys.stderr)
            return 1
        samples = json.loads(p.stdout.strip().splitlines()[-1])
    finally:
        srv.terminate()
        srv.wait(60)
        shutil.rmtree(tmp, ignore_errors=True)
    res = {"load": os.getloadavg(), "ncpu": os.cpu_count(), "rounds": a.rounds,
           "median_ms": {k: round(st.median(v), 2) for k, v in samples.items() if v},
           "samples_ms": samples}
    with open(a.out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    with open(a.out + ".md", "w") as f:
        f.write("# E2B SDK against ward serve --listen\n\n"
                f"{a.rounds} rounds ({a.warm} warm cells each), load {res['load'][0]:.2f}, "
                f"{res['ncpu']} CPUs; medians.\n\n| step | ms |\n|---|---|\n")
        for k, v in res["median_ms"].items():
            f.write(f"| {k} | {v} |\n")
    print(open(a.out + ".md").read())
    if res["median_ms"].get("parallel8_sleep1", 0) >= 2500:
        print("target missed: 8 parallel sleep(1) cells >= 2.5 s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
