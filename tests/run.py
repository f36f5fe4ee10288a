#!/usr/bin/python3
"""ward's test runner: unit test binaries (TAP) and integration tests (Python).

Usage: tests/run.py [--build DIR] [-k SUBSTRING] [--unit-only | --integ-only]

Unit tests are build/tests/test-* programs printing TAP ("ok N - what",
"not ok N - what", "# SKIP"), run side by side (they share nothing). Integration tests are the test_* functions of
tests/integ/test_*.py; each gets a fresh temporary directory (removed after)
and may raise wardtest.Skip. They run one after the other: they share
the host's cgroup slots, its /tmp/ward-* workdirs (swept by every ward),
CPU pinning and timing, so side by side they would measure each other. The last line is "N passed, N failed, N skipped".
"""
import argparse, concurrent.futures, importlib.util, inspect, os, re, shutil, signal, subprocess, sys, tempfile, time, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "integ"))

counts = {"passed": 0, "failed": 0, "skipped": 0}
failures = []
durations = []  # (seconds, test): the slowest are listed at the end


def record(kind, name, detail=""):
    counts[kind] += 1
    tag = {"passed": "ok  ", "failed": "FAIL", "skipped": "skip"}[kind]
    print(f"{tag} {name}{(' - ' + detail) if detail and kind != 'passed' else ''}", flush=True)
    if kind == "failed":
        failures.append(name)


TAP = re.compile(r"^(not ok|ok)\b\s*\d*\s*-?\s*(.*)$")


def exec_unit(path):
    """Runs one unit test binary: its CompletedProcess, or None when it
    timed out. Unit tests share nothing (each has its own temporary
    directory), so main() runs them side by side."""
    try:
        return subprocess.run([path], capture_output=True, text=True, errors="replace",
                              timeout=300, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return None


def report_unit(path, p):
    name = os.path.basename(path)
    if p is None:
        record("failed", f"{name}: timed out")
        return
    seen = 0
    for line in p.stdout.splitlines():
        m = TAP.match(line)
        if not m:
            continue
        seen += 1
        status, desc = m.group(1), m.group(2)
        full = f"{name}: {desc}"
        if "# SKIP" in desc:
            record("skipped", full, desc.split("# SKIP", 1)[1].strip())
        elif status == "ok":
            record("passed", full)
        else:
            record("failed", full)
            for l in p.stdout.splitlines():
                if l.startswith("#"):
                    print("     " + l)
    if p.returncode != 0 or seen == 0:
        record("failed", f"{name}: exited {p.returncode} after {seen} results")
        sys.stdout.write(p.stderr[-4000:])


class Timeout(Exception):
    pass


def run_integ(path, keyword):
    import wardtest
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except Exception:
        record("failed", f"{os.path.basename(path)}: import", traceback.format_exc())
        return
    for fname, fn in inspect.getmembers(mod, inspect.isfunction):
        if not fname.startswith("test_") or fn.__module__ != mod.__name__:
            continue
        full = f"{os.path.basename(path)[:-3]}.{fname}"
        if keyword and keyword not in full:
            continue
        tmp = tempfile.mkdtemp(prefix="ward-test-")
        os.chmod(tmp, 0o755)
        t0 = time.monotonic()

        # a test may ask for more (the escape corpus' exec races)
        limit = getattr(fn, "time_limit", 240)

        def on_alarm(*_):
            raise Timeout(f"test took longer than {limit} s")
        signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(limit)
        ctx = wardtest.Ctx(tmp)
        try:
            fn(ctx)
            record("passed", full)
        except wardtest.Skip as e:
            record("skipped", full, str(e))
        except Exception:
            record("failed", full, "\n" + traceback.format_exc())
        finally:
            signal.alarm(0)
            wardtest.cleanup_processes()
            wardtest.cleanup_workdirs(ctx)
            shutil.rmtree(tmp, ignore_errors=True)
        durations.append((time.monotonic() - t0, full))
        if os.environ.get("WARD_TEST_TIMES"):
            print(f"     {time.monotonic() - t0:.2f}s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("-k", dest="keyword", default="")
    ap.add_argument("--unit-only", action="store_true")
    ap.add_argument("--integ-only", action="store_true")
    ap.add_argument("--ward", help="the ward binary to test (default: BUILD/ward)")
    a = ap.parse_args()
    build = os.path.abspath(os.path.join(ROOT, a.build))
    os.environ["WARD_BUILD"] = build
    os.environ["WARD_BIN"] = os.path.abspath(a.ward) if a.ward else os.path.join(build, "ward")
    if not a.integ_only:
        udir = os.path.join(build, "tests")
        units = [os.path.join(udir, f) for f in sorted(os.listdir(udir))
                 if os.path.isdir(udir) and f.startswith("test-") and (not a.keyword or a.keyword in f)
                 and not f.endswith((".o", ".d")) and os.access(os.path.join(udir, f), os.X_OK)
                 and os.path.isfile(os.path.join(udir, f))] if os.path.isdir(udir) else []
        # side by side (they share nothing), reported in order
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for path, p in zip(units, pool.map(exec_unit, units)):
                report_unit(path, p)
    if not a.unit_only:
        idir = os.path.join(HERE, "integ")
        for f in sorted(os.listdir(idir)):
            if f.startswith("test_") and f.endswith(".py"):
                run_integ(os.path.join(idir, f), a.keyword)
    if durations:
        slow = sorted(durations, reverse=True)[:10]
        print("\nslowest: " + ", ".join(f"{n} {d:.0f}s" for d, n in slow))
        print(f"integration tests: {sum(d for d, _ in durations):.0f} s in all")
    if failures:
        print("\nfailed:")
        for f in failures:
            print("  " + f)
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] or not (counts["passed"]) else 0


if __name__ == "__main__":
    sys.exit(main())
