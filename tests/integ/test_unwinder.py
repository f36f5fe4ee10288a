"""The unwinder helper (tracer/uwhelper.c, tracer/unwinder.c): backtraces
are unwound in a process of their own, unprivileged and sandboxed, that
ward kills when it fails or is late; a denial is recorded and answered
whatever the helper does, and nothing the code maps can make ward wait.

WARD_TEST_UNWINDER (TEST ONLY, read by ward) makes the helper crash, stall
or answer garbage at the run's Nth unwinding request ("always": every one),
or fail to start ("nostart")."""
import json
import os
import signal
import subprocess
import time

import wardtest

HERE = os.path.dirname(os.path.abspath(__file__))
ESCAPES = os.path.join(os.path.dirname(HERE), "escapes")

FIVE = ("import sys\n"
        "for i in range(5):\n"
        "    try:\n"
        "        open('/etc/shadow')\n"
        "    except OSError as e:\n"
        "        print('denied', i, e.errno, flush=True)\n"
        "print('done')\n")
FIVE_OUT = "".join(f"denied {i} 13\n" for i in range(5)) + "done\n"


def helpers_of(ward_pid):
    """Live unwinder helpers of ward ward_pid (their argv names it)."""
    mark = f"--ward={ward_pid}".encode()
    out = []
    for pid, cmd in wardtest.proc_files("cmdline", binary=True):
        if not cmd.startswith(b"ward-unwinder\0") or mark not in cmd:
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state not in ("Z", "X"):
            out.append(pid)
    return out


def status_of(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)


def run_watched(ctx, code, env_extra=None, *opts):
    """ward run -c code, in the background: (Popen, ward's pid)."""
    env = dict(os.environ, **(env_extra or {}))
    p = wardtest.spawn([wardtest.bin_for(env), "run", "--db", ctx.db] + list(opts) +
                       ["-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, cwd=ctx.tmp, env=env, text=True)
    return p


def shadow_denials(ctx):
    run = ctx.last_run()
    rows = ctx.events(run["id"], "decision='deny' and target='/etc/shadow'")
    return run, [json.loads(r["backtrace"]) if r["backtrace"] else None for r in rows]


def test_unwinder_is_sandboxed_and_not_wards_child(ctx):
    if os.geteuid() != 0:
        raise wardtest.Skip("the helper drops to uid 65534 only when ward is root")
    code = ("import sys, time\n"
            "try:\n"
            "    open('/etc/shadow')\n"
            "except OSError:\n"
            "    print('READY', flush=True)\n"
            "time.sleep(30)\n")
    p = run_watched(ctx, code, None, "--timeout", "60")
    try:
        assert p.stdout.readline() == "READY\n"
        assert wardtest.wait_until(lambda: helpers_of(p.pid), 5), "no helper found"
        hs = helpers_of(p.pid)
        assert len(hs) == 1, hs
        st = status_of(hs[0])
        assert st["Uid"].split() == ["65534"] * 4, st["Uid"]
        assert st["Gid"].split() == ["65534"] * 4, st["Gid"]
        assert st["Groups"].strip() == "", st["Groups"]
        assert st["Seccomp"].strip() == "2" and st["NoNewPrivs"].strip() == "1", st
        assert int(st["CapEff"], 16) == 0 and int(st["CapPrm"], 16) == 0, st
        assert int(st["PPid"]) != p.pid, "the helper is ward's child"
        assert st["Name"].strip() == "ward-unwinder", st["Name"]
        # non-dumpable (its /proc files are root's): its memory is not the
        # code's to read, though the code runs as the same uid
        assert os.stat(f"/proc/{hs[0]}/mem").st_uid == 0
        # only its socket and standard fds, plus what libunwind opened
        # before the filter (no file of the code's is kept after a request)
        fds = {os.readlink(f"/proc/{hs[0]}/fd/{n}") for n in os.listdir(f"/proc/{hs[0]}/fd")}
        assert not any("shadow" in f for f in fds), fds
        helper = hs[0]
    finally:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=30)
    assert wardtest.wait_until(lambda: not helpers_of(p.pid), 5), \
        f"the helper outlived ward: {helpers_of(p.pid)}"
    run = ctx.last_run()
    assert run["status"] == "aborted", run["status"]
    assert helper not in helpers_of(p.pid)


def test_unwinder_killed_mid_denial(ctx):
    """The helper dies (SIGSEGV) at the second denial's backtrace: that
    denial is recorded with the frame ward can prove and why it stops
    there, the run goes on, later denials are unwound by a new helper."""
    env = dict(os.environ, WARD_TEST_UNWINDER="crash:2")
    r = ctx.run(FIVE, env=env)
    assert r.code == 0 and r.stdout == FIVE_OUT, r
    run, bts = shadow_denials(ctx)
    assert run["status"] == "ok" and len(bts) == 5, (run["status"], bts)
    assert len(bts[1]) == 1 and bts[1][0]["stop"] == "the unwinder died (SIGSEGV)", bts[1]
    assert bts[1][0]["module"].endswith("libc.so.6"), bts[1]
    for bt in bts[:1] + bts[2:]:
        assert len(bt) >= 3 and not any("stop" in f for f in bt), bt
    assert "native backtraces" not in r.stderr, r.stderr
    # said by ward show and ward report
    s = ctx.ward("show", "last")
    assert "(unwinding stopped: the unwinder died (SIGSEGV))" in s.stdout, s.stdout
    s = ctx.ward("report", "last", "--db", ctx.db, "--format", "text")
    assert "(unwinding stopped: the unwinder died (SIGSEGV))" in s.stdout, s.stdout


def test_unwinder_late_is_killed_within_the_budget(ctx):
    """A helper that never answers is killed after the 250 ms budget: the
    denial waits no longer, and the run goes on."""
    env = dict(os.environ, WARD_TEST_UNWINDER="stall:2")
    t0 = time.monotonic()
    r = ctx.run(FIVE, env=env)
    took = time.monotonic() - t0
    assert r.code == 0 and r.stdout == FIVE_OUT, r
    run, bts = shadow_denials(ctx)
    assert bts[1][-1]["stop"] == "the unwinder timed out after 250 ms", bts[1]
    assert all(len(bt) >= 3 for bt in bts[:1] + bts[2:]), bts
    ev = ctx.events(run["id"], "decision='deny' and target='/etc/shadow'")
    assert 0.24 < (ev[1]["ts_ns"] - ev[0]["ts_ns"]) / 1e9 < 2, "the budget was not spent"
    assert took < 20, took


def test_unwinder_malformed_answer(ctx):
    env = dict(os.environ, WARD_TEST_UNWINDER="garbage:1")
    r = ctx.run(FIVE, env=env)
    assert r.code == 0 and r.stdout == FIVE_OUT, r
    _, bts = shadow_denials(ctx)
    assert bts[0] == [dict(bts[0][0], stop="the unwinder sent a malformed reply")], bts[0]
    assert all(len(bt) >= 3 for bt in bts[1:]), bts


def test_unwinder_off_after_three_failures(ctx):
    """Every helper crashes: three failures, then no more helpers in this
    run; every denial is still recorded, with the frame ward proves."""
    env = dict(os.environ, WARD_TEST_UNWINDER="crash:always")
    p = run_watched(ctx, FIVE, {"WARD_TEST_UNWINDER": "crash:always"})
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and out == FIVE_OUT, (out, err)
    _, bts = shadow_denials(ctx)
    assert [bt[-1]["stop"] for bt in bts] == \
        ["the unwinder died (SIGSEGV)"] * 3 + \
        ["the unwinder is off for the rest of this run after 3 failures"] * 2, bts
    assert all(len(bt) == 1 for bt in bts), bts
    assert wardtest.wait_until(lambda: not helpers_of(p.pid), 5), helpers_of(p.pid)
    # the next run starts afresh
    r = ctx.run(FIVE, env=dict(env, WARD_TEST_UNWINDER="crash:1"))
    _, bts = shadow_denials(ctx)
    assert [len(bt) == 1 for bt in bts] == [True, False, False, False, False], bts


def test_unwinder_cannot_start(ctx):
    """No helper can be started: each denial is recorded and answered with
    the frame ward proves, ward says so once."""
    r = ctx.run(FIVE, env=dict(os.environ, WARD_TEST_UNWINDER="nostart"))
    assert r.code == 0 and r.stdout == FIVE_OUT, r
    assert r.stderr.count("the unwinder could not be started") == 1, r.stderr
    _, bts = shadow_denials(ctx)
    assert len(bts) == 5 and all(len(bt) == 1 for bt in bts), bts
    assert bts[0][0]["stop"].startswith("the unwinder could not be started"), bts[0]


def test_unwinder_many_mappings(ctx):
    """/proc/PID/maps past 64 KiB and past the 8,192 mappings ward sends:
    anonymous mappings are left out first, the files and the stack stay,
    and the frames are unwound as usual."""
    code = ("import mmap\n"
            "keep = [mmap.mmap(-1, 4096) for _ in range(9000)]\n"
            "try:\n"
            "    open('/etc/shadow')\n"
            "except OSError:\n"
            "    print('denied', len(keep))\n")
    r = ctx.run(code)
    assert r.code == 0 and r.stdout == "denied 9000\n", r
    _, bts = shadow_denials(ctx)
    bt = bts[0]
    assert len(bt) >= 3 and not any("stop" in f for f in bt), bt
    assert bt[0]["module"].endswith("libc.so.6"), bt
    assert any(f["module"].endswith("python3.11") for f in bt), bt


# The code of the two tests below: every way it has to make a backtrace
# wait, over and over, until it is stopped (escape cases U01, U02, U12).
BLOCKER = r'''
#include "escape.h"
#include "unwind.h"
#include <signal.h>

int attack(int argc, char **argv)
{
	static uint8_t img[ESC_SIZE];
	char a[64], b[64];

	signal(SIGIO, SIG_IGN);
	esc_elf(img, ESC_GOOD);
	say("READY");
	for (int i = 0;; i++) {
		unsigned long base;
		int fd;

		/* a FIFO at both names of a deleted mapped file */
		snprintf(a, sizeof(a), "f%d.so", i);
		snprintf(b, sizeof(b), "f%d.so (deleted)", i);
		base = elf_mapped(a, ESC_GOOD);
		unlink(a);
		mkfifo(a, 0666);
		mkfifo(b, 0666);
		deny_from(ARG("secret"), base + ESC_RET);
		munmap((void *)base, ESC_SIZE);
		unlink(a);
		unlink(b);
		/* a leased one */
		snprintf(a, sizeof(a), "l%d.so", i);
		write_file(a, img, sizeof(img));
		fd = open(a, O_RDONLY);
		base = (unsigned long)mmap(NULL, ESC_SIZE, PROT_READ | PROT_EXEC,
					   MAP_PRIVATE, fd, 0);
		fcntl(fd, F_SETLEASE, F_WRLCK);
		deny_from(ARG("secret"), base + ESC_RET);
		munmap((void *)base, ESC_SIZE);
		close(fd);
		unlink(a);
	}
	return 0;
}
'''

LAUNCHER = """import ctypes, sys
lib = ctypes.CDLL("./blocker.so")
args = [a.encode() for a in sys.argv[1:]]
argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
sys.exit(lib.attack(len(args), argv))
"""


def blocker(ctx):
    src = ctx.write("blocker.c", BLOCKER)
    so = ctx.path("blocker.so")
    subprocess.run(["gcc", "-std=gnu11", "-D_GNU_SOURCE", "-O1", "-Wall", "-Werror",
                    "-fPIC", "-shared", "-I", ESCAPES, "-o", so, src], check=True)
    os.chmod(so, 0o644)
    return so, ctx.write("launch.py", LAUNCHER)


def start_blocker(ctx, *opts):
    so, script = blocker(ctx)
    return wardtest.spawn([wardtest.ward_bin(), "run", "--db", ctx.db, "--quiet",
                           "--input", so] + list(opts) +
                          [script, "--", "secret=/etc/shadow"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, cwd=ctx.tmp, text=True)


def test_timeout_ends_a_run_whose_backtraces_would_block(ctx):
    t0 = time.monotonic()
    p = start_blocker(ctx, "--timeout", "5")
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise AssertionError("--timeout 5 did not end the run in 30 s")
    took = time.monotonic() - t0
    assert took < 10, f"the run took {took:.1f} s"
    assert out.startswith("READY\n") and p.returncode == 124, (p.returncode, out[-300:], err[-500:])
    run = ctx.last_run()
    assert run["status"] == "timeout" and "wall time" in run["cause"], run
    rows = ctx.events(run["id"], "decision='deny' and target='/etc/shadow'")
    assert len(rows) >= 2 and all(r["backtrace"] for r in rows), len(rows)
    assert wardtest.wait_until(lambda: not helpers_of(p.pid), 5), helpers_of(p.pid)


def test_sigterm_ends_a_run_whose_backtraces_would_block(ctx):
    p = start_blocker(ctx, "--timeout", "60")
    assert p.stdout.readline() == "READY\n"
    time.sleep(1.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise AssertionError("SIGTERM did not end the run in 30 s")
    assert time.monotonic() - t0 < 3, "SIGTERM took long to end the run"
    run = ctx.last_run()
    assert run["status"] == "aborted" and "SIGTERM" in run["cause"], run
    assert wardtest.wait_until(lambda: not helpers_of(p.pid), 5), helpers_of(p.pid)
