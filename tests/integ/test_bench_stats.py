"""bench/bench.py's analysis (no benchmark is run, nothing is timed): the
bootstrap intervals behind each target's verdict, the pairing of runs by
round, and --report on a stored result."""
import importlib.util
import io
import json
import os
import random
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def bench():
    spec = importlib.util.spec_from_file_location(
        "ward_bench", os.path.join(ROOT, "bench", "bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(rnd, wall, ok=True):
    return {"round": rnd, "wall": wall, "cpu": wall, "ok": ok}


def rows3(n, ward_over, mini_over, noise, seed=7):
    """(native, ward, minitracer) walls for n rounds: each round's speed
    drifts by up to +-noise (shared by its three runs, as on the VM), and
    each run has 1% jitter of its own."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        speed = 1 + rng.uniform(-noise, noise)
        base = 0.400 * speed

        def j():
            return 1 + rng.uniform(-0.01, 0.01)
        out.append((base * j(), (base + ward_over * speed) * j(),
                    (base + mini_over * speed) * j()))
    return out


def test_bench_quotient_interval_settles_clear_cases(ctx):
    b = bench()
    # ward's overhead twice the minitracer's, little noise: missed
    rows = rows3(15, 0.200, 0.100, 0.02)
    q = b.quotient_of(rows)
    ci = b.bootstrap_ci(rows, b.quotient_of)
    assert 1.5 < q < 2.6, q
    assert ci[0] <= q <= ci[1] and ci[0] > 1.25, ci
    assert b.verdict(ci, 1.25) == "missed"
    # equal overheads, little noise: met
    rows = rows3(15, 0.100, 0.100, 0.02)
    ci = b.bootstrap_ci(rows, b.quotient_of)
    assert ci[1] <= 1.25, ci
    assert b.verdict(ci, 1.25) == "met"
    # reproducible: the same data, the same interval
    assert b.bootstrap_ci(rows, b.quotient_of) == ci


def test_bench_quotient_interval_reports_noise(ctx):
    b = bench()
    # small overheads under the VM's +-25% drift: a quotient, but the
    # interval spans the target, so the verdict is not claimed either way
    rows = rows3(7, 0.012, 0.010, 0.25, seed=3)
    ci = b.bootstrap_ci(rows, b.quotient_of)
    assert ci[0] <= 1.25 < ci[1], ci
    assert b.verdict(ci, 1.25) == "not resolved"
    # a minitracer overhead that is zero in a resample: an infinite bound
    rows = [(1.0, 1.1, 1.0), (1.0, 1.1, 1.0), (1.0, 1.1, 1.05)]
    assert b.quotient_of(rows) == float("inf")
    assert b.bootstrap_ci(rows, b.quotient_of)[1] == float("inf")
    # too few rounds: no interval, no verdict
    assert b.bootstrap_ci(rows[:2], b.quotient_of) is None
    assert b.verdict(None, 1.25) == "too few rounds"


def test_bench_pairs_runs_by_round(ctx):
    b = bench()
    vs = {"native": [run(-1, 9.0), run(0, 1.0), run(1, 1.1), run(2, 1.2)],
          "ward": [run(-1, 9.0), run(0, 1.5), run(1, 9.9, ok=False),
                   run(2, 1.7)],
          "minitracer": [run(0, 1.2), run(2, 1.3)]}
    # the warm-up round and the round where ward failed are left out
    assert b.paired_walls(vs, ["native", "ward", "minitracer"]) == [
        (1.0, 1.5, 1.2), (1.2, 1.7, 1.3)]
    assert b.paired_walls(vs, ["native", "ward"]) == [(1.0, 1.5),
                                                       (1.2, 1.7)]
    assert b.delta_ms_of([(1.0, 1.5), (1.2, 1.7)]) == 500.0


def stored_result(rounds):
    rng = random.Random(11)
    raw = {"print_hello": {"native": [], "ward": [], "minitracer": []},
           "pandas_median": {"native": [], "ward": [], "minitracer": []}}
    for r in range(-1, rounds):
        for w, (wo, mo) in (("print_hello", (0.027, 0.006)),
                            ("pandas_median", (0.110, 0.100))):
            s = 1 + rng.uniform(-0.02, 0.02)
            base = (0.033 if w == "print_hello" else 0.420) * s
            raw[w]["native"].append(run(r, base))
            raw[w]["ward"].append(run(r, base + wo * s))
            raw[w]["minitracer"].append(run(r, base + mo * s))
    return {"env": {"date": "2026-12-05 12:00:00 UTC", "host": "test",
                    "run_root": "/dev/shm", "db_dir": "/tmp",
                    "loadavg_before": "0", "loadavg_after": "0"},
            "rounds": rounds, "warmup": 1, "quick": False,
            "variants": ["native", "ward", "minitracer"], "policies": {},
            "notes": [], "raw": raw, "summary": {}, "targets": {},
            "micro": None, "elapsed_s": 1.0}


def test_bench_report_again(ctx):
    b = bench()
    src = os.path.join(ctx.tmp, "stored.json")
    with open(src, "w") as f:
        json.dump(stored_result(9), f)
    out = io.StringIO()
    with redirect_stdout(out):
        assert b.report_again(src, None) == 0
    md = out.getvalue()
    # start-up +27 ms against a 10 ms limit, settled by the interval
    line = [x for x in md.splitlines() if x.startswith("Start-up")][0]
    assert re.search(r"ward native \+ 2[67]\.\d ms \*\*FAIL\*\*; 95% CI "
                     r"2\d\.\d–2\d\.\d ms: missed$", line), line
    q = [x for x in md.splitlines() if x.startswith("| print_hello |")
         and "Δ" not in x][-1]
    assert "**FAIL**; 95% CI" in q and "missed" in q, q
    q = [x for x in md.splitlines() if x.startswith("| pandas_median |")][-1]
    assert "PASS; 95% CI" in q and ": met" in q, q
    # printed only: the stored file is left as it was
    with open(src) as f:
        assert json.load(f)["targets"] == {}
    # with --out, the analysis is written there (json and md)
    dst = os.path.join(ctx.tmp, "again.json")
    with redirect_stdout(io.StringIO()):
        assert b.report_again(src, dst) == 0
    with open(dst) as f:
        t = json.load(f)["targets"]
    assert t["startup"]["verdict"] == "missed"
    assert t["overhead"]["pandas_median"]["ward"]["verdict"] == "met"
    with open(os.path.join(ctx.tmp, "again.md")) as f:
        assert "95% CI" in f.read()


def test_bench_report_bad_file(ctx):
    bad = os.path.join(ctx.tmp, "bad.json")
    with open(bad, "w") as f:
        f.write("{not json")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench",
                                                     "bench.py"),
                        "--report", bad], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2, p
    assert f"--report {bad}: not a stored result of bench.py" in p.stderr
    assert p.stdout == ""
    err = io.StringIO()
    with redirect_stderr(err):
        assert bench().report_again(os.path.join(ctx.tmp, "none.json"),
                                    None) == 2
    assert "not a stored result" in err.getvalue()
