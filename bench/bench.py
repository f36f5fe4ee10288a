#!/usr/bin/python3
"""ward's benchmark (`make bench`). Python standard library only.

Every round runs every variant of a workload once, the variant order rotated
per round; wall time is the monotonic clock around posix_spawn..wait4, CPU
time the child's user+sys from wait4. A variant's ratio is the median over
rounds of variant/native *in the same round* (robust against the machine
speeding up and slowing down, which this VM does). Pinned variants (taskset -c
0: tracer and tracee share CPU 0) are compared with the pinned native run.

Variants (W = the workload, copied into a fresh directory that is the cwd,
HOME and, with tmp/, TMPDIR of each native-like run; ward makes its own):
  native           /usr/bin/python3 W
  ward             ward run --quiet --db DB --policy bench/policy-bench.json W
                   (ward's defaults: pinned to the CPU it starts on while
                   the code runs one thread at a time)
  ward_nocg        the same with --no-cgroup (the cgroups' start-up cost)
  ward_nopin       the same with --no-pin (ward run pins the code and its
                   supervisor to one CPU by default: what that saves)
  ward_base        the same run by a baseline ward binary (--base-ward PATH,
                   e.g. one built from an older commit), with its own audit
                   database since an older binary may not read a newer
                   schema; skipped with a note when not given or when it
                   fails its check run
  ward_stat        the same with "trap_stat": true (the stat family trapped)
  minitracer       BUILD/bench/minitracer /usr/bin/python3 W (design trap set)
  minitracer_stat  BUILD/bench/minitracer --stat ... (design set + stat family)
  minitracer_ns    BUILD/bench/minitracer --ns ... (the design set, the code
                   in new pid, mount, net, ipc and uts namespaces as under
                   ward, without ward's other mounts: the floor with the
                   namespaces; root only)
  strace           strace -f -qq --seccomp-bpf -e trace=%file,%process,%network
                   -o /dev/null /usr/bin/python3 W
  native_pin, minitracer_pin: the same under taskset -c 0; ward_pin: ward
  --pin-cpu=0 (ward pins its supervisor thread and the code to CPU 0 and
  its audit thread to the other CPUs)
Plus a micro-benchmark (bench/micro_trap.c): ns per trapped openat and per
allowed getppid, timed inside the process, natively, under minitracer and
under ward with --no-pin (and under the --base-ward binary); ward_pin there
is ward pinned to CPU 0 (its default, on a fixed CPU).

A variant that exits non-zero (or times out) is reported as a failure, never
averaged in; after --max-fail failures on a workload it is dropped for the
remaining rounds of that workload.

usage: bench.py [--build DIR] [--base-ward PATH] [--rounds N] [--quick]
                [--only NAME[,NAME]] [--variants V[,V]] [--no-micro]
                [--out FILE.json]
`make bench BENCH_ARGS="--base-ward /path/to/old/ward"` passes options on.
"""
import argparse
import json
import math
import os
import platform
import random
import re
import shutil
import signal
import sqlite3
import statistics as st
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = "/usr/bin/python3"
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"
WORKLOADS = ["print_hello", "pandas_median", "matplotlib_chart", "fs_heavy",
             "subprocess_spawn", "threads"]
QUICK_WORKLOADS = ["print_hello", "pandas_median", "fs_heavy",
                   "subprocess_spawn"]
ALL_VARIANTS = ["native", "ward", "ward_nocg", "ward_nopin", "ward_base",
                "ward_stat",
                "minitracer",
                "minitracer_stat", "minitracer_ns", "strace", "native_pin",
                "ward_pin",
                "minitracer_pin"]
PIN_BASE = "native_pin"
# Path the micro-benchmark opens: readable under the default profile
# ("/usr" allows read), absent, so the call is allowed and fails with ENOENT.
MICRO_PATH = "/usr/lib/nonexistent-ward-bench"
TARGET_OVERHEAD = 1.25   # ward's overhead <= 1.25 x minitracer's
TARGET_STARTUP_MS = 10.0  # ward's start-up <= native + 10 ms
# Stretch targets: ward's ratio vs native on these workloads.
STRETCH = {"pandas_median": 1.10, "fs_heavy": 1.30}


def default_run_root():
    """/dev/shm when it is a tmpfs, else the system's temporary directory."""
    try:
        with open("/proc/mounts") as f:
            for line in f:
                dev, mnt, fstype = line.split()[:3]
                if mnt == "/dev/shm" and fstype == "tmpfs":
                    return "/dev/shm"
    except OSError:
        pass
    return tempfile.gettempdir()


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- running

def run_once(argv, cwd, env, out_path, err_path, timeout):
    """Spawn argv (stdin /dev/null, stdout/stderr to files) in its own
    session; returns wall/cpu seconds, exit code, timed_out."""
    fi = os.open(os.devnull, os.O_RDONLY)
    fo = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    fe = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    old = os.getcwd()
    os.chdir(cwd)
    timed_out = []
    try:
        t0 = time.monotonic()
        pid = os.posix_spawn(argv[0], argv, env, setsid=True,
                             file_actions=[(os.POSIX_SPAWN_DUP2, fi, 0),
                                           (os.POSIX_SPAWN_DUP2, fo, 1),
                                           (os.POSIX_SPAWN_DUP2, fe, 2)])

        def kill():
            timed_out.append(True)
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        timer = threading.Timer(timeout, kill)
        timer.start()
        try:
            _, status, ru = os.wait4(pid, 0)
        except BaseException:  # ^C or SIGTERM: take the run down with us
            kill()
            os.waitpid(pid, 0)
            raise
        finally:
            timer.cancel()
        t1 = time.monotonic()
    finally:
        os.chdir(old)
        for fd in (fi, fo, fe):
            os.close(fd)
    return {"wall": t1 - t0, "cpu": ru.ru_utime + ru.ru_stime,
            "rc": os.waitstatus_to_exitcode(status),
            "timed_out": bool(timed_out)}


def tail(path, n=600):
    try:
        with open(path, "rb") as f:
            data = f.read()
        return data[-n:].decode("utf-8", "replace")
    except OSError:
        return ""


def build_tool(name, bdir, extra=()):
    """bench/NAME.c built into BDIR/NAME when missing or older than its
    source: (path, None), or (None, why) when it cannot be built. Also
    used by startup.py."""
    src = os.path.join(HERE, name + ".c")
    out = os.path.join(bdir, name)
    os.makedirs(bdir, exist_ok=True)
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(src):
        return out, None
    cmd = ["cc", "-O2", "-Wall", "-Wextra", "-o", out, src, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (f"cannot build {name}: {' '.join(cmd)}: "
                      f"{p.stderr.strip()[-400:]}")
    return out, None


class Bench:
    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(os.path.join(ROOT, args.build)
                                     if not os.path.isabs(args.build)
                                     else args.build)
        self.bdir = os.path.join(self.build, "bench")
        self.tmp = tempfile.mkdtemp(prefix="ward-bench-")
        # Run directories (cwd, HOME, TMPDIR; ward's --workdir) go on a
        # tmpfs by default: on ext4, creating files soon after many were
        # deleted makes the inode allocator skip the recently deleted ones
        # (ext4 recently_deleted()), so fs_heavy slows down 5-10x depending
        # on what ran in the last 30 s. The audit databases stay in self.tmp
        # (on disk, as ward's default database is).
        self.wroot = tempfile.mkdtemp(prefix="ward-bench-runs-",
                                      dir=args.tmp or default_run_root())
        os.chmod(self.wroot, 0o755)  # ward's code runs as nobody when root
        self.home = os.path.join(self.tmp, "home")
        os.mkdir(self.home)
        self.env = {"PATH": CLEAN_PATH, "HOME": self.home, "LANG": "C.UTF-8"}
        self.notes = []
        self.tools = {}
        self.run_no = 0

    def note(self, msg):
        log("note: " + msg)
        self.notes.append(msg)

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)
        shutil.rmtree(self.wroot, ignore_errors=True)

    # ------------------------------------------------------------ setup

    def compile(self, name, extra=()):
        out, err = build_tool(name, self.bdir, extra)
        if err:
            self.note(err)
        return out

    def write_policies(self):
        """bench/policy-bench.json = profiles/default.json + exec of
        /usr/bin/true, regenerated on every run so it follows the profile;
        the _stat variant also traps the stat family; the micro policy also
        allows exec of micro_trap (and sh, for the fallback)."""
        src = os.path.join(ROOT, "profiles", "default.json")
        if not os.path.exists(src):
            self.note("profiles/default.json missing: ward variants use "
                      "--profile default (subprocess_spawn will be denied)")
            return None
        with open(src) as f:
            base = json.load(f)
        base["name"] = "bench"
        base["description"] = ("generated by bench/bench.py from "
                               "profiles/default.json, plus exec of "
                               "/usr/bin/true; do not edit")
        base.setdefault("exec", {}).setdefault("allow", []).append(
            "/usr/bin/true")
        base.setdefault("limits", {})["wall_s"] = max(
            300, base["limits"].get("wall_s", 0))
        pols = {}
        for name, extra in (("policy-bench.json", {"trap_stat": False}),
                            ("policy-bench-stat.json", {"trap_stat": True})):
            p = dict(base, **extra)
            path = os.path.join(HERE, name)
            with open(path, "w") as f:
                json.dump(p, f, indent=1)
                f.write("\n")
            pols["stat" if extra["trap_stat"] else "design"] = path
        if self.tools.get("micro_trap"):
            p = json.loads(json.dumps(base))
            p["exec"]["allow"] += [self.tools["micro_trap"], "/bin/sh",
                                   "/usr/bin/sh", "/bin/dash",
                                   "/usr/bin/dash"]
            path = os.path.join(self.bdir, "policy-micro.json")
            with open(path, "w") as f:
                json.dump(p, f, indent=1)
            pols["micro"] = path
        return pols

    def setup(self):
        a = self.args
        self.tools["minitracer"] = self.compile("minitracer", ["-lseccomp"])
        self.tools["micro_trap"] = self.compile("micro_trap")
        self.tools["strace"] = shutil.which("strace", path=CLEAN_PATH)
        self.tools["taskset"] = shutil.which("taskset", path=CLEAN_PATH)
        ward = os.path.join(self.build, "ward")
        self.tools["ward"] = ward if os.access(ward, os.X_OK) else None
        self.tools["ward_base"] = None
        if a.base_ward:
            base = os.path.abspath(a.base_ward)
            if os.access(base, os.X_OK):
                self.tools["ward_base"] = base
            else:
                self.note(f"--base-ward {base}: not an executable file; "
                          "ward_base skipped")
        self.pols = self.write_policies() or {}
        # One database per ward variant; the base binary's are its own
        # (an older ward may not read a newer schema).
        self.dbs = {v: os.path.join(self.tmp, f"audit-{v}.db")
                    for v in ("ward", "ward_nocg", "ward_nopin",
                              "ward_base", "ward_stat",
                              "ward_pin", "micro", "micro_base")}
        if not self.tools["ward"]:
            self.note(f"{ward} not built: ward variants skipped")
        else:
            self.ward_ok = self.check_ward("ward")
        if self.tools["ward_base"]:
            self.base_ok = self.check_ward("ward_base")
        elif not a.base_ward:
            self.note("no --base-ward given: ward_base skipped")
        if not self.tools["strace"]:
            self.note("strace not installed: strace variant skipped")
        if not self.tools["taskset"]:
            self.note("taskset not found: pinned variants skipped")
        if not self.tools["minitracer"]:
            self.note("minitracer not built: minitracer variants skipped")
        if os.geteuid() != 0:
            self.note("not root: minitracer_ns (new namespaces) skipped")
        want = a.variants.split(",") if a.variants else ALL_VARIANTS
        for v in want:
            if v not in ALL_VARIANTS:
                sys.exit(f"bench.py: unknown variant {v} "
                         f"(one of {', '.join(ALL_VARIANTS)})")
        if "native" not in want:
            want = ["native"] + want
        if any(v.endswith("_pin") for v in want) and PIN_BASE not in want:
            want.append(PIN_BASE)
        self.variants = [v for v in ALL_VARIANTS
                         if v in want and self.available(v)]

    def available(self, v):
        if v == "ward_base":
            return bool(self.tools["ward_base"] and self.base_ok)
        if v.startswith("ward") and not (self.tools["ward"] and self.ward_ok):
            return False
        if v.startswith("minitracer") and not self.tools["minitracer"]:
            return False
        if v == "minitracer_ns" and os.geteuid() != 0:
            return False
        if v == "strace" and not self.tools["strace"]:
            return False
        if v.endswith("_pin") and not self.tools["taskset"]:
            return False
        return True

    def ward_argv(self, db, policy, *rest, binary="ward"):
        argv = [self.tools[binary], "run", "--quiet", "--db", db]
        argv += ["--policy", policy] if policy else ["--profile", "default"]
        return argv + list(rest)

    def check_ward(self, binary):
        """One `ward run -c 'print(1)'` before anything is timed; binary is
        "ward" or "ward_base"."""
        argv = self.ward_argv(self.dbs[binary], self.pols.get("design"),
                              "-c", "print(1)", binary=binary)
        out, err = (os.path.join(self.tmp, "check." + s)
                    for s in ("out", "err"))
        r = run_once(argv, self.tmp, self.env, out, err, 60)
        got = tail(out).strip()
        if r["rc"] != 0 or got != "1":
            self.note(f"{binary} does not work: `{' '.join(argv)}` -> "
                      f"exit {r['rc']}{' (timeout)' if r['timed_out'] else ''}"
                      f", stdout {got!r}, stderr {tail(err).strip()!r}; "
                      f"{binary} variants skipped")
            return False
        log(f"{binary} check ok ({r['wall'] * 1000:.0f} ms)")
        return True

    # ------------------------------------------------------------ variants

    def argv_for(self, v, wpath, rdir):
        base = os.path.basename(wpath)
        pin = [self.tools["taskset"], "-c", "0"] if v.endswith("_pin") else []
        kind = v[:-4] if v.endswith("_pin") else v
        if kind == "native":
            argv = [PY, base]
        elif kind == "ward" and pin:
            # ward pins itself (--pin-cpu): its main thread shares CPU 0
            # with the code, its audit thread gets the other CPUs.
            return self.ward_argv(self.dbs["ward_pin"], self.pols.get("design"),
                                  "--pin-cpu=0", "--workdir", rdir, wpath)
        elif kind == "ward":
            argv = self.ward_argv(self.dbs["ward"], self.pols.get("design"),
                                  "--workdir", rdir, wpath)
        elif kind == "ward_nopin":
            argv = self.ward_argv(self.dbs["ward_nopin"],
                                  self.pols.get("design"), "--no-pin",
                                  "--workdir", rdir, wpath)
        elif kind == "ward_nocg":
            argv = self.ward_argv(self.dbs["ward_nocg"],
                                  self.pols.get("design"), "--no-cgroup",
                                  "--workdir", rdir, wpath)
        elif kind == "ward_base":
            argv = self.ward_argv(self.dbs["ward_base"],
                                  self.pols.get("design"), "--workdir", rdir,
                                  wpath, binary="ward_base")
        elif kind == "ward_stat":
            argv = self.ward_argv(self.dbs["ward_stat"], self.pols.get("stat"),
                                  "--workdir", rdir, wpath)
        elif kind == "minitracer":
            argv = [self.tools["minitracer"], "-v", PY, base]
        elif kind == "minitracer_stat":
            argv = [self.tools["minitracer"], "-v", "--stat", PY, base]
        elif kind == "minitracer_ns":
            argv = [self.tools["minitracer"], "-v", "--ns", PY, base]
        elif kind == "strace":
            argv = [self.tools["strace"], "-f", "-qq", "--seccomp-bpf", "-e",
                    "trace=%file,%process,%network", "-o", "/dev/null",
                    PY, base]
        else:
            raise ValueError(v)
        return pin + argv

    def run_variant(self, v, wname):
        """One timed run of variant v on workload wname; returns a record."""
        self.run_no += 1
        wpath = os.path.join(HERE, "workloads", wname + ".py")
        rdir = os.path.join(self.wroot, f"run{self.run_no}")
        out, err = (os.path.join(self.tmp, "last." + s) for s in ("out", "err"))
        argv = self.argv_for(v, wpath, rdir)
        if v.startswith("ward"):
            # ward makes rdir (and rdir/tmp), copies W, builds the env
            env, cwd = self.env, self.tmp
        else:
            os.makedirs(os.path.join(rdir, "tmp"))
            shutil.copy(wpath, rdir)
            env = dict(self.env, HOME=rdir, TMPDIR=os.path.join(rdir, "tmp"))
            cwd = rdir
        r = run_once(argv, cwd, env, out, err, self.args.timeout)
        shutil.rmtree(rdir, ignore_errors=True)
        r["ok"] = r["rc"] == 0 and not r["timed_out"] and tail(out).strip() != ""
        if v.startswith("minitracer"):
            m = re.search(r"minitracer: stops (\d+)", tail(err, 200))
            r["stops"] = int(m.group(1)) if m else None
        elif v.startswith("ward"):
            self.ward_record(v, r)
        if not r["ok"]:
            r["argv"] = argv
            r["stdout_tail"] = tail(out, 300)
            r["stderr_tail"] = tail(err)
        return r

    def ward_record(self, v, r):
        """Stops of the last ward run, from its audit database."""
        db = self.dbs[v]
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
            try:
                row = con.execute("SELECT id, status FROM runs "
                                  "ORDER BY started_ns DESC LIMIT 1").fetchone()
                r["run_id"], r["run_status"] = row
                n, den = con.execute(
                    "SELECT count(*), coalesce(sum(decision <> 'allow'), 0) "
                    "FROM events WHERE run_id = ?", (row[0],)).fetchone()
                r["stops"], r["denials"] = n, den
                if den:
                    r["denial_examples"] = [list(x) for x in con.execute(
                        "SELECT syscall, target, raw, rule, reason FROM events"
                        " WHERE run_id = ? AND decision <> 'allow' "
                        "ORDER BY seq LIMIT 3", (row[0],))]
            finally:
                con.close()
        except Exception as e:  # the record is information, not a gate
            r["stops"] = None
            r["db_error"] = str(e)

    # ------------------------------------------------------------ rounds

    def workloads(self):
        a = self.args
        names = QUICK_WORKLOADS if a.quick else WORKLOADS
        if a.only:
            names = [n for n in a.only.split(",") if n != "micro"]
            for n in names:
                if not os.path.exists(os.path.join(HERE, "workloads",
                                                   n + ".py")):
                    sys.exit(f"bench.py: no workload {n} in bench/workloads")
        return names

    def run_rounds(self, names):
        a = self.args
        res = {w: {v: [] for v in self.variants} for w in names}
        fails = {w: {v: 0 for v in self.variants} for w in names}
        t_start = time.monotonic()
        for r in range(-a.warmup, a.rounds):
            for w in names:
                k = r % len(self.variants)
                order = self.variants[k:] + self.variants[:k]
                for v in order:
                    if fails[w][v] >= a.max_fail:
                        continue
                    rec = self.run_variant(v, w)
                    rec["round"] = r
                    if not rec["ok"]:
                        fails[w][v] += 1
                        log(f"  FAIL {w}/{v} round {r}: exit {rec['rc']}"
                            f"{' timeout' if rec['timed_out'] else ''}: "
                            f"{rec['stderr_tail'].strip()[-300:]!r}")
                        if fails[w][v] >= a.max_fail:
                            log(f"  {w}/{v}: dropped after {a.max_fail} "
                                "failures")
                    res[w][v].append(rec)
            kind = "warm-up" if r < 0 else f"round {r + 1}/{a.rounds}"
            log(f"{kind} done, {time.monotonic() - t_start:.0f} s elapsed")
        return res

    # ------------------------------------------------------------ micro

    def micro(self):
        a = self.args
        mt = self.tools.get("micro_trap")
        if not mt:
            return None
        n = str(a.micro_n)
        variants = {"native": [mt, n, MICRO_PATH]}
        if self.tools["minitracer"]:
            variants["minitracer"] = [self.tools["minitracer"], "-v", mt, n,
                                      MICRO_PATH]
        methods = {}
        for v, ok in (("ward", self.ward_ok), ("ward_base", self.base_ok)):
            if self.tools[v] and ok and self.pols.get("micro"):
                m = self.micro_ward_method(mt, n, v)
                if m:
                    methods[v] = m[0]
                    variants[v] = m[1]
        method = methods.get("ward") or methods.get("ward_base")
        # unpinned, as minitracer runs (and ward_base when it knows
        # --no-pin: a base that pins by default would otherwise be
        # compared pinned with ward unpinned); ward_pin below is ward's
        # default (pinned) on CPU 0
        for v in ("ward", "ward_base"):
            if v in variants and self.knows_no_pin(v):
                w = variants[v]
                w.insert(w.index("run") + 1, "--no-pin")
        if self.tools["taskset"]:
            for v in list(variants):
                if v.startswith("ward"):  # ward pins itself
                    w = [x for x in variants[v] if x != "--no-pin"]
                    w.insert(w.index("run") + 1, "--pin-cpu=0")
                    variants[v + "_pin"] = w
                    continue
                variants[v + "_pin"] = [self.tools["taskset"], "-c", "0"] + \
                    variants[v]
        out, err = (os.path.join(self.tmp, "micro." + s) for s in ("out", "err"))
        raw = {v: [] for v in variants}
        names = list(variants)
        for rep in range(a.micro_reps):
            k = rep % len(names)
            for v in names[k:] + names[:k]:
                r = run_once(variants[v], self.tmp, self.env, out, err,
                             a.timeout)
                try:
                    line = [x for x in tail(out, 400).splitlines()
                            if x.startswith("{")][-1]
                    r.update(json.loads(line))
                    r["ok"] = r["rc"] == 0
                except (IndexError, ValueError):
                    r["ok"] = False
                if not r["ok"]:
                    r["stderr_tail"] = tail(err)
                    log(f"  FAIL micro/{v}: exit {r['rc']}: "
                        f"{r['stderr_tail'].strip()[-300:]!r}")
                raw[v].append(r)
        log("micro-benchmark done")
        summ = {}
        for v, runs in raw.items():
            base = raw["native_pin" if v.endswith("_pin") else "native"]
            ok = [r for r in runs if r["ok"]]
            s = {"n_ok": len(ok), "n_fail": len(runs) - len(ok)}
            if ok:
                s["trapped_ns"] = st.median(r["trapped_ns"] for r in ok)
                s["allowed_ns"] = st.median(r["allowed_ns"] for r in ok)
                pairs = [(r, b) for r, b in zip(runs, base)
                         if r["ok"] and b["ok"]]
                if pairs:
                    s["trapped_delta_ns"] = st.median(
                        r["trapped_ns"] - b["trapped_ns"] for r, b in pairs)
                    s["allowed_delta_ns"] = st.median(
                        r["allowed_ns"] - b["allowed_ns"] for r, b in pairs)
            summ[v] = s
        return {"n": a.micro_n, "path": MICRO_PATH, "argv": variants,
                "ward_method": method, "ward_methods": methods,
                "raw": raw, "summary": summ}

    def knows_no_pin(self, binary):
        """Whether this ward binary has --no-pin (older ones never pin)."""
        r = subprocess.run([self.tools[binary], "run", "--help"],
                           capture_output=True, text=True, timeout=30)
        return "--no-pin" in r.stdout + r.stderr

    def micro_ward_method(self, mt, n, binary):
        """Find how ward (binary: "ward" or "ward_base") can run a bare
        binary: as the --interpreter of a dummy script, else through
        sh -c."""
        dummy = os.path.join(self.tmp, "micro.txt")
        with open(dummy, "w") as f:
            f.write("micro_trap ignores this file\n")
        db = self.dbs["micro_base" if binary == "ward_base" else "micro"]
        cands = [
            ("--interpreter", self.ward_argv(
                db, self.pols["micro"], "--interpreter", mt, dummy, "--", n,
                MICRO_PATH, binary=binary)),
            ("sh -c", self.ward_argv(
                db, self.pols["micro"], "--lang", "sh", "-c",
                f"exec {mt} {n} {MICRO_PATH}", binary=binary)),
        ]
        out, err = (os.path.join(self.tmp, "mcheck." + s) for s in ("out", "err"))
        for name, argv in cands:
            r = run_once(argv, self.tmp, self.env, out, err, self.args.timeout)
            if r["rc"] == 0 and '"trapped_ns"' in tail(out):
                log(f"micro under {binary}: {name} works")
                return name, argv
            self.note(f"micro under {binary} via {name}: "
                      f"`{' '.join(argv)}` -> "
                      f"exit {r['rc']}, stdout {tail(out, 200).strip()!r}, "
                      f"stderr {tail(err, 300).strip()!r}")
        return None

    # ------------------------------------------------------------ summary


# ---------------------------------------------------------------- analysis

# How sure a verdict is. This VM's speed drifts by a quarter from one run
# to the next (native matplotlib: 0.71-1.10 s in one 15-round run), so a
# quotient of two medians of differences moves a lot between benchmarks
# (matplotlib's was 0.88, 1.32, 1.53 and 2.96 in four full runs). Each
# verdict therefore comes with a 95% percentile-bootstrap interval over the
# rounds: the rounds are resampled with replacement, a round's runs kept
# together (they ran side by side), and the statistic recomputed for each
# resample. "met": the whole interval is within the target; "missed": all
# of it is beyond; "not resolved": this run's noise spans the target (more
# rounds narrow it). Seeded, so a report is reproducible from its raw data.
BOOT_N = 2000
BOOT_SEED = 20261205
BOOT_LEVEL = 0.95


def paired_walls(vs, names):
    """Wall seconds of the variants `names` (a workload's raw runs `vs`),
    one tuple per round in which every one of them ran ok."""
    by = [{r["round"]: r["wall"] for r in vs.get(n, [])
           if r["ok"] and r["round"] >= 0} for n in names]
    common = set(by[0]).intersection(*by[1:]) if by else set()
    return [tuple(d[k] for d in by) for k in sorted(common)]


def quotient_of(rows):
    """(base, ward, minitracer) rows: median ward delta over median
    minitracer delta; infinite when the minitracer's is not positive."""
    da = st.median(w - b for b, w, _ in rows)
    dm = st.median(m - b for b, _, m in rows)
    return da / dm if dm > 0 else math.inf


def delta_ms_of(rows):
    """(base, variant) rows: the median difference in ms."""
    return st.median((v - b) * 1e3 for b, v in rows)


def bootstrap_ci(rows, stat, n=BOOT_N, seed=BOOT_SEED, level=BOOT_LEVEL):
    """The central `level` interval of stat over n resamples of rows (with
    replacement, same size); None for fewer than 3 rows."""
    if len(rows) < 3:
        return None
    rng = random.Random(seed)
    k = len(rows)
    vals = sorted(stat([rows[rng.randrange(k)] for _ in range(k)])
                  for _ in range(n))
    lo = vals[int(n * (1 - level) / 2)]
    hi = vals[min(n - 1, int(n * (1 + level) / 2))]
    return (lo, hi)


def verdict(ci, limit):
    """met / missed / not resolved for an upper limit, from the interval."""
    if ci is None:
        return "too few rounds"
    if ci[1] <= limit:
        return "met"
    if ci[0] > limit:
        return "missed"
    return "not resolved"


def summarize(res):
    summ = {}
    for w, vs in res.items():
        summ[w] = {}
        for v, runs in vs.items():
            timed = [r for r in runs if r["round"] >= 0]
            ok = [r for r in timed if r["ok"]]
            s = {"n_ok": len(ok), "n_fail": len(timed) - len(ok)}
            fails = [r for r in runs if not r["ok"]]
            if fails:
                f = fails[0]
                s["first_failure"] = {k: f.get(k) for k in (
                    "round", "rc", "timed_out", "argv", "stdout_tail",
                    "stderr_tail")}
            if ok:
                s["wall_med_ms"] = st.median(r["wall"] for r in ok) * 1e3
                s["wall_min_ms"] = min(r["wall"] for r in ok) * 1e3
                s["wall_max_ms"] = max(r["wall"] for r in ok) * 1e3
                s["cpu_med_ms"] = st.median(r["cpu"] for r in ok) * 1e3
                stops = [r["stops"] for r in ok if r.get("stops") is not None]
                if stops:
                    s["stops_med"] = st.median(stops)
                den = [r["denials"] for r in ok if "denials" in r]
                if den:
                    s["denials_max"] = max(den)
                ex = [r["denial_examples"] for r in ok
                      if r.get("denial_examples")]
                if ex:
                    s["denial_examples"] = ex[0]
                bname = PIN_BASE if v.endswith("_pin") else "native"
                s["base"] = bname
                base = {r["round"]: r for r in vs.get(bname, [])
                        if r["ok"] and r["round"] >= 0}
                pairs = [(r, base[r["round"]]) for r in ok
                         if r["round"] in base]
                if pairs:
                    s["ratio_med"] = st.median(r["wall"] / b["wall"]
                                               for r, b in pairs)
                    s["delta_med_ms"] = st.median(
                        (r["wall"] - b["wall"]) * 1e3 for r, b in pairs)
                    s["cpu_ratio_med"] = st.median(
                        r["cpu"] / b["cpu"] for r, b in pairs if b["cpu"])
            summ[w][v] = s
    return summ

def targets(summ, res):
    out = {"overhead": {}, "startup": None, "startup_by_variant": {},
           "stretch": {}}
    for w, vs in summ.items():
        row = {}
        for ward_v, mini_v in (("ward", "minitracer"),
                               ("ward_nocg", "minitracer"),
                               ("ward_nopin", "minitracer"),
                               ("ward_base", "minitracer"),
                               ("ward_stat", "minitracer_stat"),
                               ("ward_pin", "minitracer_pin")):
            a, b = vs.get(ward_v, {}), vs.get(mini_v, {})
            if "delta_med_ms" in a and "delta_med_ms" in b:
                da, db = a["delta_med_ms"], b["delta_med_ms"]
                q = da / db if db > 0 else None
                ci = bootstrap_ci(paired_walls(
                    res.get(w, {}), [a["base"], ward_v, mini_v]),
                    quotient_of)
                row[ward_v] = {
                    "ward_delta_ms": da, "minitracer_delta_ms": db,
                    "quotient": q,
                    "pass": (q is not None and q <= TARGET_OVERHEAD),
                    "ci": ci, "verdict": verdict(ci, TARGET_OVERHEAD)}
        out["overhead"][w] = row
    for v in ("ward", "ward_nocg", "ward_nopin", "ward_base"):
        h = summ.get("print_hello", {}).get(v, {})
        if "delta_med_ms" in h:
            ci = bootstrap_ci(paired_walls(res.get("print_hello", {}),
                                           ["native", v]), delta_ms_of)
            out["startup_by_variant"][v] = {
                "ward_delta_ms": h["delta_med_ms"],
                "limit_ms": TARGET_STARTUP_MS,
                "pass": h["delta_med_ms"] <= TARGET_STARTUP_MS,
                "ci": ci, "verdict": verdict(ci, TARGET_STARTUP_MS)}
    out["startup"] = out["startup_by_variant"].get("ward")
    # The design's own floor on this machine: what the minitracer (no
    # policy, no audit, no namespaces, no Landlock) adds to start-up.
    # A start-up limit below it cannot be met here by any ward.
    for v in ("minitracer", "minitracer_pin", "minitracer_ns"):
        h = summ.get("print_hello", {}).get(v, {})
        if "delta_med_ms" in h:
            out.setdefault("startup_floor", {})[v] = h["delta_med_ms"]
    for w, limit in STRETCH.items():
        for v in ("ward", "ward_base", "ward_pin"):
            r = summ.get(w, {}).get(v, {}).get("ratio_med")
            if r is not None:
                out["stretch"].setdefault(w, {})[v] = {
                    "ratio": r, "limit": limit, "pass": r <= limit}
    return out


# ---------------------------------------------------------------- report

def cell(s, show_abs=False):
    if not s:
        return "–"
    if s.get("n_ok", 0) == 0:
        ff = s.get("first_failure", {})
        why = "timeout" if ff.get("timed_out") else f"exit {ff.get('rc')}"
        return f"**FAIL** {s['n_fail']}/{s['n_fail']} ({why})"
    txt = (f"{s['wall_med_ms']:.0f} ms" if show_abs or "ratio_med" not in s
           else f"{s['ratio_med']:.2f}× ({s['delta_med_ms']:+.0f} ms)")
    if s.get("n_fail"):
        txt += f" **{s['n_fail']} failed**"
    if s.get("denials_max"):
        txt += f" ({s['denials_max']} denials)"
    return txt


def ci_note(x, spec, unit=""):
    """'; 95% CI lo–hi: verdict' for a target row that has an interval."""
    if "verdict" not in x:  # a report made before the intervals
        return ""
    ci = x.get("ci")
    if not ci:
        return f"; {x['verdict']}"

    def f(v):
        return "∞" if math.isinf(v) else format(v, spec)
    return (f"; {BOOT_LEVEL:.0%} CI {f(ci[0])}–{f(ci[1])}{unit}: "
            f"{x['verdict']}")


def stops_cell(vs):
    def g(v):
        x = vs.get(v, {}).get("stops_med")
        return "–" if x is None else f"{x:.0f}"
    base = f" (base {g('ward_base')})" if "ward_base" in vs else ""
    return (f"{g('ward')}{base} / {g('minitracer')} "
            f"(stat: {g('ward_stat')} / {g('minitracer_stat')})")


def markdown(result):
    L = []
    summ, variants = result["summary"], result["variants"]
    cols = [v for v in ["ward", "ward_base", "ward_nocg", "ward_nopin",
                        "ward_stat",
                        "minitracer", "minitracer_stat", "minitracer_ns",
                        "strace"]
            if v in variants]
    pcols = [v for v in ["ward_pin", "minitracer_pin"] if v in variants]
    L.append(f"### ward benchmark — {result['rounds']} interleaved rounds, "
             f"{result['env']['date']}, {result['env']['host']}")
    L.append("")
    L.append("Cells: median of per-round ratios vs native in the same round "
             "(Δ = median per-round difference). Pinned variants (native and "
             "minitracer under `taskset -c 0`, ward with `--pin-cpu=0`) "
             "are compared with pinned native. Run directories in "
             f"{result['env']['run_root']}, audit databases in "
             f"{result['env']['db_dir']}.")
    L.append("")
    hdr = ["workload", "native ms"] + cols
    if pcols:
        hdr += ["native pinned ms"] + [c.replace("_pin", " pinned")
                                       for c in pcols]
    # ward's count is its audit rows (one per decision); an allowed call
    # with copied arguments also stops at its exit, which is not counted.
    hdr += ["events ward / stops minitracer"]
    L.append("| " + " | ".join(hdr) + " |")
    L.append("|" + "---|" * len(hdr))
    for w, vs in summ.items():
        row = [w, cell(vs.get("native"), True)]
        row += [cell(vs.get(c)) for c in cols]
        if pcols:
            row += [cell(vs.get("native_pin"), True)]
            row += [cell(vs.get(c)) for c in pcols]
        row += [stops_cell(vs)]
        L.append("| " + " | ".join(row) + " |")
    t = result["targets"]
    L.append("")
    L.append(f"Targets: ward's overhead ≤ {TARGET_OVERHEAD}× minitracer's "
             "(quotient of median Δ ms, same trap set); start-up ≤ native + "
             f"{TARGET_STARTUP_MS:.0f} ms (print_hello). PASS/FAIL is the "
             f"median's; the {BOOT_LEVEL:.0%} interval (percentile bootstrap "
             f"over the rounds, {BOOT_N} resamples, a round's runs kept "
             "together) says whether this run settles it: met (all of the "
             "interval within the target), missed (all of it beyond), not "
             "resolved (the noise spans the target; more rounds narrow it).")
    L.append("")
    qcols = [k for k in ("ward", "ward_base", "ward_nocg", "ward_nopin",
                         "ward_stat",
                         "ward_pin") if k in variants]
    qhdr = {"ward": "ward Δ / minitracer Δ",
            "ward_base": "ward_base Δ / minitracer Δ",
            "ward_nocg": "ward_nocg Δ / minitracer Δ",
            "ward_nopin": "ward_nopin Δ / minitracer Δ",
            "ward_stat": "ward_stat Δ / minitracer_stat Δ",
            "ward_pin": "pinned: ward Δ / minitracer Δ"}
    L.append("| workload | " + " | ".join(qhdr[k] for k in qcols) + " |")
    L.append("|---|" + "---|" * len(qcols))
    for w, row in t["overhead"].items():
        def q(k):
            x = row.get(k)
            if not x:
                return "–"
            if x["quotient"] is None:
                return (f"n/a (minitracer Δ {x['minitracer_delta_ms']:+.0f} "
                        f"ms){ci_note(x, '.2f')}")
            return (f"{x['quotient']:.2f} ({x['ward_delta_ms']:+.0f} / "
                    f"{x['minitracer_delta_ms']:+.0f} ms) "
                    f"{'PASS' if x['pass'] else '**FAIL**'}"
                    f"{ci_note(x, '.2f')}")
        L.append(f"| {w} | " + " | ".join(q(k) for k in qcols) + " |")
    if t.get("startup_by_variant"):
        L.append("")
        L.append(f"Start-up (print_hello, limit native + "
                 f"{TARGET_STARTUP_MS:.0f} ms): " + "; ".join(
                     f"{v} native + {s['ward_delta_ms']:.1f} ms "
                     f"{'PASS' if s['pass'] else '**FAIL**'}"
                     f"{ci_note(s, '.1f', ' ms')}"
                     for v, s in t["startup_by_variant"].items()))
        fl = t.get("startup_floor", {})
        if fl:
            L.append("")
            L.append("The design's floor for start-up on this machine "
                     "(the minitracer: same trap set, no policy, audit or "
                     "kernel floors; minitracer_ns: with the namespaces): "
                     + "; ".join(
                         f"{v} native + {d:.1f} ms"
                         + (" (above the start-up limit)"
                            if d > TARGET_STARTUP_MS else "")
                         for v, d in fl.items()))
    if t.get("stretch"):
        L.append("")
        L.append("Stretch targets (ratio vs native): " + "; ".join(
            f"{w} {v} {x['ratio']:.2f}× (≤ {x['limit']:.2f}) "
            f"{'PASS' if x['pass'] else 'not met'}"
            for w, vs in t["stretch"].items() for v, x in vs.items()))
    m = result.get("micro")
    if m:
        L.append("")
        L.append(f"Micro-benchmark (bench/micro_trap.c, {m['n']} × "
                 f"openat(\"{m['path']}\") trapped, {m['n']} × getppid "
                 "allowed in the kernel; ns per call, medians"
                 + "".join(f"; {v} via {how}" for v, how in
                           m.get("ward_methods", {}).items()) + "):")
        L.append("")
        L.append("| variant | trapped openat ns | Δ vs native ns | "
                 "getppid ns | runs ok |")
        L.append("|---|---:|---:|---:|---:|")
        for v, s in m["summary"].items():
            if not s["n_ok"]:
                L.append(f"| {v} | **FAIL** | | | 0/{s['n_fail']} |")
                continue
            L.append(f"| {v} | {s['trapped_ns']:.0f} | "
                     f"{s.get('trapped_delta_ns', 0):+.0f} | "
                     f"{s['allowed_ns']:.0f} | {s['n_ok']}/"
                     f"{s['n_ok'] + s['n_fail']} |")
    fails = [(w, v, s["first_failure"]) for w, vs in summ.items()
             for v, s in vs.items() if "first_failure" in s]
    dens = [(w, v, s) for w, vs in summ.items() for v, s in vs.items()
            if s.get("denial_examples")]
    if dens:
        L.append("")
        L.append("Denials in successful ward runs (the bench policy should "
                 "allow everything the workloads do):")
        for w, v, s in dens:
            ex = "; ".join(f"{d[0]} {d[1] or d[2]!r} rule={d[3]} ({d[4]})"
                           for d in s["denial_examples"])
            L.append(f"- {w}/{v}: up to {s['denials_max']} per run, e.g. {ex}")
    if fails or result["notes"]:
        L.append("")
        L.append("Notes and failures:")
        for n in result["notes"]:
            L.append(f"- {n}")
        for w, v, f in fails:
            L.append(f"- {w}/{v} failed (round {f['round']}, exit {f['rc']}"
                     f"{', timeout' if f['timed_out'] else ''}): "
                     f"`{' '.join(f['argv'])}`; stderr: "
                     f"{f['stderr_tail'].strip()[-300:]!r}")
    L.append("")
    L.append(f"Total bench time {result['elapsed_s']:.0f} s; load average "
             f"before {result['env']['loadavg_before']}, after "
             f"{result['env']['loadavg_after']}.")
    return "\n".join(L)


def env_info(b):
    def cmd(argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True,
                                  timeout=20).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": f"{platform.machine()}, {os.cpu_count()} CPUs, kernel "
                f"{platform.release()}",
        "python": cmd([PY, "--version"]),
        "git": cmd(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]),
        "ward": b.tools.get("ward"),
        "strace": cmd([b.tools["strace"], "-V"]).splitlines()[0]
        if b.tools.get("strace") else None,
        "loadavg_before": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def write_result(result, out):
    md = markdown(result)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.splitext(out)[0] + ".md", "w") as f:
        f.write(md + "\n")
    return md


def report_again(path, out):
    """--report: the analysis of this file, on a stored result's raw runs."""
    try:
        with open(path) as f:
            result = json.load(f)
        raw = result["raw"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write(f"bench.py: --report {path}: not a stored result "
                         f"of bench.py ({e})\n")
        return 2
    result["summary"] = summarize(raw)
    result["targets"] = targets(result["summary"], raw)
    print(write_result(result, out) if out else markdown(result))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build",
                    help="build dir with ward (relative to the repo root)")
    ap.add_argument("--base-ward", metavar="PATH",
                    help="a baseline ward binary (e.g. built from an older "
                    "commit) for the ward_base variant")
    ap.add_argument("--rounds", type=int, default=None,
                    help="timed rounds (default 5; --quick: 2)")
    ap.add_argument("--warmup", type=int, default=1,
                    help="untimed rounds first (default 1)")
    ap.add_argument("--quick", action="store_true",
                    help="2 rounds, 4 workloads, short micro-benchmark")
    ap.add_argument("--only", help="workloads (comma list); 'micro' = "
                    "only the micro-benchmark")
    ap.add_argument("--variants", help="comma list of variants "
                    f"({', '.join(ALL_VARIANTS)}); native always runs")
    ap.add_argument("--no-micro", action="store_true")
    ap.add_argument("--micro-n", type=int, default=None)
    ap.add_argument("--micro-reps", type=int, default=None)
    ap.add_argument("--max-fail", type=int, default=2,
                    help="drop a variant from a workload after N failures")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds per run before it is killed")
    ap.add_argument("--tmp", help="where the runs' directories go (default: "
                    "/dev/shm when it is a tmpfs; give /tmp to measure on "
                    "disk)")
    ap.add_argument("--out", help="where the results go (default "
                    "bench/results/latest.json, and .md beside it)")
    ap.add_argument("--report", metavar="FILE.json",
                    help="run nothing: analyse the raw runs of a stored "
                    "result again (medians, targets, intervals) and print "
                    "the report; written back only to an --out given")
    a = ap.parse_args()
    if a.report:
        return report_again(a.report, a.out)
    if a.out is None:
        a.out = os.path.join(HERE, "results", "latest.json")
    if a.rounds is None:
        a.rounds = 2 if a.quick else 5
    if a.micro_n is None:
        a.micro_n = 5000 if a.quick else 20000
    if a.micro_reps is None:
        a.micro_reps = 2 if a.quick else 3

    # SIGTERM unwinds like ^C, so the running child is killed and the
    # temporary directories are removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    t0 = time.monotonic()
    b = Bench(a)
    try:
        b.ward_ok = b.base_ok = False
        b.setup()
        env = env_info(b)
        env["run_root"] = os.path.dirname(b.wroot)
        env["db_dir"] = os.path.dirname(b.tmp)
        log(f"variants: {', '.join(b.variants)}")
        names = b.workloads()
        if a.only and names == []:
            res = {}
        else:
            res = b.run_rounds(names)
        micro = None
        if not a.no_micro and (not a.only or "micro" in a.only.split(",")):
            micro = b.micro()
        summ = summarize(res)
        env["loadavg_after"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        result = {"env": env, "rounds": a.rounds, "warmup": a.warmup,
                  "quick": a.quick, "variants": b.variants,
                  "policies": b.pols, "notes": b.notes, "raw": res,
                  "summary": summ, "targets": targets(summ, res),
                  "micro": micro, "elapsed_s": time.monotonic() - t0}
    finally:
        b.cleanup()
    print(write_result(result, a.out))
    log(f"raw results: {a.out}")
    failed = any(s.get("n_fail") for vs in summ.values() for s in vs.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
