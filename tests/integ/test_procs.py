"""Processes, threads and signals behave under ward as they do natively."""
import json
import re
import os
import subprocess
import sys

from wardtest import PYTHON, Skip, ward_bin


SIGNALS = r'''
import os, signal, time, sys
got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append("usr1"))
signal.signal(signal.SIGALRM, lambda *a: got.append("alrm"))
os.kill(os.getpid(), signal.SIGUSR1)
signal.setitimer(signal.ITIMER_REAL, 0.05)
time.sleep(0.3)
# a child stopped and continued (group-stop), then terminated by a signal
pid = os.fork()
if pid == 0:
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(7)
_, st = os.waitpid(pid, os.WUNTRACED)
stopped = os.WIFSTOPPED(st) and os.WSTOPSIG(st) == signal.SIGSTOP
os.kill(pid, signal.SIGCONT)
_, st = os.waitpid(pid, 0)
code = os.WEXITSTATUS(st)
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
os.kill(pid, signal.SIGTERM)
_, st = os.waitpid(pid, 0)
print(got, stopped, code, os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM)
'''


def test_signals_as_native(ctx):
    p = ctx.write("sig.py", SIGNALS)
    native = ctx.native([PYTHON, p])
    r = ctx.ward("run", p)
    assert r.code == 0, r
    assert r.stdout == native.stdout == "['usr1', 'alrm'] True 7 True\n", (r.stdout, native.stdout)
    run = ctx.last_run()
    assert not ctx.denials(run["id"])
    procs = ctx.sql("select * from processes where run_id=? and kind='process' order by serial", run["id"])
    assert [p["exit_code"] for p in procs[1:]] == [7, -1], procs
    assert procs[2]["signal"] == 15, procs


def test_killed_by_signal_exit_status(ctx):
    r = ctx.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")
    assert r.code == 128 + 11, r
    run = ctx.last_run()
    assert run["signal"] == 11 and run["status"] == "error"


def test_many_short_processes_and_pid_identity(ctx):
    code = ("import os\n"
            "for i in range(60):\n"
            "    pid = os.fork()\n"
            "    if pid == 0: os._exit(i % 5)\n"
            "    os.waitpid(pid, 0)\n"
            "print('done')\n")
    r = ctx.run(code)
    assert r.code == 0 and r.stdout == "done\n", r
    run = ctx.last_run()
    kids = ctx.sql("select * from processes where run_id=? and serial > 1", run["id"])
    assert len(kids) == 60, len(kids)
    assert sorted(k["exit_code"] for k in kids) == sorted(i % 5 for i in range(60))
    ident = {(k["pid"], k["start_ticks"], k["serial"]) for k in kids}
    assert len(ident) == 60 and all(k["parent_serial"] == 1 for k in kids)
    forks = ctx.events(run["id"], "syscall='clone'")
    assert len(forks) == 60, len(forks)


def test_threads_exec_from_thread(ctx):
    pol = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles", "default.json")))
    pol["exec"]["allow"].append("/usr/bin/true")
    path = ctx.write("p.json", json.dumps(pol))
    code = ("import os, threading, time\n"
            "def t():\n    os.execv('/usr/bin/true', ['true'])\n"
            "threading.Thread(target=t).start()\ntime.sleep(10)\nprint('not reached')\n")
    r = ctx.run(code, "--policy", path)
    assert r.code == 0 and r.stdout == "", r
    run = ctx.last_run()
    root = ctx.sql("select * from processes where run_id=? and serial=1", run["id"])[0]
    assert root["exe"] == "/usr/bin/true", root
    assert run["status"] == "ok"


def test_vfork_spawn_and_denied_exec_in_child(ctx):
    code = ("import os\n"
            "try:\n    os.posix_spawn('/bin/sh', ['sh', '-c', 'echo hi'], {})\n"
            "except PermissionError as e:\n    print('errno', e.errno, flush=True)\n"
            "pid = os.posix_spawn('/usr/bin/uname', ['uname', '-s'], {})\n"
            "print(os.waitpid(pid, 0)[1])\n")
    r = ctx.run(code)
    assert r.stdout == "errno 13\nLinux\n0\n", r
    run = ctx.last_run()
    assert [e["target"] for e in ctx.denials(run["id"])] == ["/usr/bin/dash"]


def _unless_busy(run):
    """run() (a ward run with -v; its result, or (result, json)), tried again
    up to three times while its pin ended because the code waited for its
    CPU: a loaded machine's own reason (tracer/pin.c; the test after
    test_pin_cpu checks it), not the one these tests look for."""
    for _ in range(3):
        out = run()
        r = out[0] if isinstance(out, tuple) else out
        if "unpinned: the code waited for its CPU" not in r.stderr:
            break
    return out


def test_pin_cpu(ctx):
    """--pin-cpu: the code shares one CPU with ward's supervisor while it has
    one thread; its second thread gets every CPU back."""
    if len(os.sched_getaffinity(0)) < 2:
        raise Skip("needs two CPUs")
    cpu = sorted(os.sched_getaffinity(0))[-1]
    code = ("import os, threading\n"
            "print(sorted(os.sched_getaffinity(0)))\n"
            "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
            "print(len(os.sched_getaffinity(0)) > 1)\n")
    r = _unless_busy(lambda: ctx.run(code, f"--pin-cpu={cpu}", "-v"))
    assert r.code == 0 and r.stdout == f"[{cpu}]\nTrue\n", r
    r = ctx.run("pass", "--pin-cpu=4096")
    assert r.code == 125 and "--pin-cpu" in r.stderr, r


def test_pinned_code_that_waits_for_its_cpu_gets_them_all(ctx):
    """Pinned, the code cannot move when other work takes its CPU: a run
    whose code keeps waiting for its CPU (here a busy loop outside ward
    pinned to the same CPU) gets every CPU back, and -v says why. (Alone
    on its CPU it keeps the pin: the test above.)"""
    if len(os.sched_getaffinity(0)) < 2:
        raise Skip("needs two CPUs")
    cpu = sorted(os.sched_getaffinity(0))[0]
    code = ("import os, time\n"
            "t = time.time()\n"
            "while time.time() - t < 0.8: pass\n"
            "print(len(os.sched_getaffinity(0)))\n")
    hog = subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c",
                            "import time\nt = time.time()\n"
                            "while time.time() - t < 20: pass\n"])
    try:
        r = ctx.run(code, f"--pin-cpu={cpu}", "-v")
    finally:
        hog.kill()
        hog.wait()
    assert r.code == 0, r
    assert r.stdout == f"{len(os.sched_getaffinity(0))}\n", r
    assert "unpinned: the code waited for its CPU" in r.stderr, r.stderr


def test_pinned_by_default_until_the_code_may_run_in_parallel(ctx):
    """ward run pins the code to ward's CPU by default (given a second CPU
    for the rest): a vfork child (subprocess) keeps the pin, a fork gives
    every process all CPUs back; --no-pin never pins."""
    cpus = len(os.sched_getaffinity(0))
    if cpus < 2:
        raise Skip("needs two CPUs")
    code = ("import os, subprocess, sys\n"
            "def n(): return len(os.sched_getaffinity(0))\n"
            "print('start', n(), flush=True)\n"
            "subprocess.run([sys.executable, '-c', 'import os; "
            "print(\"vfork child\", len(os.sched_getaffinity(0)), "
            "flush=True)'], check=True)\n"
            "print('after subprocess', n(), flush=True)\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    print('fork child', n(), flush=True); os._exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "print('after fork', n(), flush=True)\n")
    r = _unless_busy(lambda: ctx.run(code, "-v"))
    assert r.code == 0, r
    assert r.stdout == (f"start 1\nvfork child 1\nafter subprocess 1\n"
                        f"fork child {cpus}\nafter fork {cpus}\n"), r
    r = ctx.run("import os; print(len(os.sched_getaffinity(0)))", "--no-pin")
    assert r.code == 0 and r.stdout == f"{cpus}\n", r
    # one CPU given: nothing to share, nothing pinned, no error
    first = sorted(os.sched_getaffinity(0))[0]
    p = subprocess.run(["taskset", "-c", str(first), ward_bin(), "run",
                        "--db", ctx.db, "-c",
                        "import os; print(len(os.sched_getaffinity(0)))"],
                       capture_output=True, text=True, timeout=120,
                       cwd=ctx.tmp)
    assert p.returncode == 0 and p.stdout == "1\n", (p.stdout, p.stderr)


def test_pin_recorded_with_what_ended_it(ctx):
    """A pinned run's layers say which CPU it shared and what ended the
    pin (-v says it as it happens); an unpinned run has no such entry."""
    if len(os.sched_getaffinity(0)) < 2:
        raise Skip("needs two CPUs")
    cpu = sorted(os.sched_getaffinity(0))[-1]
    cases = {
        "print(1)": "the run ended",
        "import threading\nt = threading.Thread(target=print)\n"
        "t.start(); t.join()": "the code started a second thread",
        "import os\npid = os.fork()\nif pid == 0: os._exit(0)\n"
        "os.waitpid(pid, 0)":
            "the code started a process that may run alongside its parent",
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', '1'], check=True)":
            "the run ended",
    }
    for code, why in cases.items():
        r, j = _unless_busy(
            lambda: ctx.run_json(code, f"--pin-cpu={cpu}", "-v"))
        assert r.code == 0, r
        pin = [l for l in j["layers"] if l["name"] == "cpu-pin"]
        assert len(pin) == 1 and pin[0]["active"], (code, j["layers"])
        assert re.fullmatch(rf"CPU {cpu} shared with the supervisor for "
                            rf"\d+ ms, until {why}", pin[0]["detail"]), \
            (code, pin)
        assert f"unpinned: {why}" in r.stderr, (code, r.stderr)
        assert json.loads(ctx.last_run()["layers"]) == j["layers"]
    r, j = ctx.run_json("print(1)", "--no-pin")
    assert r.code == 0 and j["layers"], r
    assert not [l for l in j["layers"] if l["name"] == "cpu-pin"], j["layers"]


def test_runs_side_by_side_all_start(ctx):
    """The child is cloned while ward's record thread runs: it must take no
    lock that thread may hold (glibc's fork handlers, the set*id wrappers
    that signal every thread glibc knows of). Two runs at a time, 120 in
    all: each starts, prints and ends (a deadlocked child would hang its
    run until the timeout here)."""
    argv = [ward_bin(), "run", "--db", ctx.db, "-c", "print(1)"]
    for _ in range(60):
        ps = [subprocess.Popen(argv, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ctx.tmp)
              for _ in range(2)]
        for p in ps:
            try:
                out, err = p.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                for q in ps:
                    q.kill()
                    q.communicate()
                raise AssertionError("a run did not end within 30 s")
            assert p.returncode == 0 and out == "1\n", (p.returncode, out,
                                                         err)
