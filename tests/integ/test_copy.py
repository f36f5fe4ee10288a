"""Checked arguments are copied where the code cannot change them
(tracer/copy.c): what the kernel uses is what ward decided on."""
import json
import os
import shutil
import subprocess
import tempfile

import wardtest
from wardtest import Skip

# The in-test races: 20,000 rounds in `make test-full` (WARD_RACE_N
# 100,000), a fifth of WARD_RACE_N in `make test`, which stays in minutes.
ROUNDS = min(20000, max(2000, int(os.environ.get("WARD_RACE_N", "100000")) // 5))

RACE_C = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char buf[4096] = "ok.txt";
static atomic_int stop;
static const char *secret;

static void put(const char *s)
{
	size_t n = strlen(s) + 1;
	for (size_t i = 0; i < n; i++)
		((volatile char *)buf)[i] = s[i];
}

static void *flip(void *a)
{
	(void)a;
	while (!atomic_load(&stop)) {
		put(secret);
		put("ok.txt");
	}
	return NULL;
}

/* Opens buf while a sibling thread flips it between an allowed name and
 * the secret; returns how often the secret was read. */
int race(const char *path, int n, int *denied)
{
	pthread_t th;
	int wins = 0;

	secret = path;
	*denied = 0;
	pthread_create(&th, NULL, flip, NULL);
	time_t end = time(NULL) + 20; /* bounded on a slow machine */
	for (int i = 0; i < n && time(NULL) < end; i++) {
		int fd = open(buf, O_RDONLY);
		char r[64] = { 0 };
		if (fd < 0) {
			(*denied)++;
			continue;
		}
		if (read(fd, r, sizeof(r) - 1) > 0 && strstr(r, "CANARY"))
			wins++;
		close(fd);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	return wins;
}
"""


def build_so(ctx, name, src):
    """A shared object in the run's workdir, loaded by the code with
    ctypes (the default profile reads the workdir)."""
    wd = ctx.path("wd")
    os.makedirs(wd, exist_ok=True)
    c = ctx.write(name + ".c", src)
    so = os.path.join(wd, name + ".so")
    p = subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-pthread", "-o", so, c],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip("no C compiler: " + p.stderr[:200])
    return wd


def secret_file():
    """A canary outside the sandbox, readable by anyone: only ward's checks
    keep the code from it."""
    d = tempfile.mkdtemp(prefix="ward-canary-", dir="/var/tmp")  # seen in the run
    os.chmod(d, 0o755)
    p = os.path.join(d, "flag")
    with open(p, "w") as f:
        f.write("CANARY-7d1f\n")
    os.chmod(p, 0o644)
    return d, p


def test_path_flipped_by_a_thread_is_never_used(ctx):
    wd = build_so(ctx, "race", RACE_C)
    with open(os.path.join(wd, "ok.txt"), "w") as f:
        f.write("harmless\n")
    d, secret = secret_file()
    try:
        code = ("import ctypes\n"
                "l = ctypes.CDLL('./race.so')\n"
                "den = ctypes.c_int(0)\n"
                f"w = l.race({secret!r}.encode(), {ROUNDS}, "
                "ctypes.byref(den))\n"
                "print('wins', w, 'denied', den.value)\n")
        # ROUNDS rounds here (the escape corpus runs WARD_RACE_N); each
        # round is two stops, and a loaded 2-CPU machine makes them slow
        # without Landlock (it would refuse the secret in the kernel,
        # whatever the memory held): the copies must hold on their own
        r, j = ctx.run_json(code, "--workdir", wd, "--timeout", "300",
                            "--cpu", "300", timeout=400,
                            env=dict(os.environ, WARD_TEST_LANDLOCK_ABI="0"))
        assert r.code == 0, (r.code, j["status"], j.get("cause"), j["stdout"])
        words = j["stdout"].split()
        assert words[0] == "wins" and words[1] == "0", j["stdout"]
        # the race was real: ward saw the secret name many times, denied it
        denied = int(words[3])
        assert denied > 0, j["stdout"]
        rows = ctx.events(j["run_id"], "decision='deny' and target=?", secret)
        assert rows and rows[0]["errno"] == 13, rows[:1]
    finally:
        os.unlink(secret)
        os.rmdir(d)


SENDMMSG_C = r"""
#define _GNU_SOURCE
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Two messages over a socketpair; returns sendmmsg's result, the msg_len
 * the kernel (or ward) wrote for the first, and what the peer read. */
int mm(unsigned *len0, char *got, int n)
{
	int sv[2];
	struct mmsghdr m[2];
	struct iovec iov[2] = { { "hello", 5 }, { "world!", 6 } };
	int r;

	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
		return -100;
	memset(m, 0, sizeof(m));
	m[0].msg_hdr.msg_iov = &iov[0];
	m[0].msg_hdr.msg_iovlen = 1;
	m[1].msg_hdr.msg_iov = &iov[1];
	m[1].msg_hdr.msg_iovlen = 1;
	r = sendmmsg(sv[0], m, 2, 0);
	*len0 = m[0].msg_len;
	memset(got, 0, n);
	if (recv(sv[1], got, n - 1, MSG_DONTWAIT) < 0)
		got[0] = '?';
	close(sv[0]);
	close(sv[1]);
	return r;
}
"""


def test_sendmmsg_sends_the_first_message_from_the_copy(ctx):
    wd = build_so(ctx, "mm", SENDMMSG_C)
    code = ("import ctypes\n"
            "l = ctypes.CDLL('./mm.so')\n"
            "n = ctypes.c_uint(0); g = ctypes.create_string_buffer(32)\n"
            "r = l.mm(ctypes.byref(n), g, 32)\n"
            "print(r, n.value, g.value.decode())\n")
    r, j = ctx.run_json(code, "--workdir", wd)
    assert r.code == 0, (r, j)
    # one message sent (a partial sendmmsg, as the kernel may answer), its
    # msg_len written back into the code's own array
    assert j["stdout"] == "1 5 hello\n", j["stdout"]
    rows = ctx.events(j["run_id"], "syscall='sendmmsg'")
    assert rows and rows[0]["decision"] == "allow", rows


def test_loader_variables_are_stripped_on_exec(ctx):
    code = ("import subprocess, sys\n"
            "env = {'LD_PRELOAD': '/nonexistent/evil.so', 'LD_AUDIT': 'x',\n"
            "       'KEEP_ME': 'yes', 'PATH': '/usr/bin:/bin'}\n"
            "out = subprocess.run([sys.executable, '-c',\n"
            "  'import os; print(os.environ.get(\"LD_PRELOAD\"), "
            "os.environ.get(\"LD_AUDIT\"), os.environ.get(\"KEEP_ME\"))'],\n"
            "  env=env, capture_output=True, text=True)\n"
            "print(out.stdout.strip(), out.returncode)\n")
    r, j = ctx.run_json(code)
    assert r.code == 0, (r, j)
    assert j["stdout"] == "None None yes 0\n", j
    rows = [e for e in ctx.events(j["run_id"], "syscall='execve'")
            if "env_removed" in json.loads(e["args"])]
    assert rows, "the exec records what was removed"
    assert json.loads(rows[0]["args"])["env_removed"] == ["LD_PRELOAD", "LD_AUDIT"]


def test_proc_mem_is_the_floor_even_in_audit_mode(ctx):
    code = ("import os\n"
            "for p in ('/proc/self/mem', f'/proc/{os.getpid()}/mem',\n"
            "          f'/proc/self/task/{os.getpid()}/mem'):\n"
            "  try:\n"
            "    os.open(p, os.O_RDWR); print('OPENED', p)\n"
            "  except PermissionError as e: print('errno', e.errno)\n")
    for profile in ("default", "audit"):
        r, j = ctx.run_json(code, "--profile", profile)
        assert r.code == 0 and j["stdout"] == "errno 13\n" * 3, (profile, j)
        rows = ctx.denials(j["run_id"])
        assert len(rows) == 3 and all(e["rule"] == "proc.mem" for e in rows), rows


def test_program_swapped_at_the_approved_name_never_runs(ctx):
    """The exec check at PTRACE_EVENT_EXEC compares the file, not only the
    name: a program swapped in after the check is caught (here: the
    approved name is re-pointed by a symlink swap in a loop)."""
    wd = ctx.path("wdx")
    os.makedirs(wd)
    code = ("import os, subprocess, threading, sys\n"
            "os.symlink(sys.executable, 'py')\n"
            "stop = False\n"
            "def swap():\n"
            "  while not stop:\n"
            "    try:\n"
            "      os.symlink('/bin/sh', 'tmp-link'); os.rename('tmp-link', 'py')\n"
            "      os.symlink(sys.executable, 'tmp-link'); os.rename('tmp-link', 'py')\n"
            "    except OSError: pass\n"
            "t = threading.Thread(target=swap); t.start()\n"
            "ran = {'py': 0, 'sh': 0, 'denied': 0}\n"
            "try:\n"
            "  for i in range(300):\n"
            "    try:\n"
            "      out = subprocess.run(['./py', '-c', 'print(1)'], capture_output=True, text=True).stdout\n"
            "      ran['py' if out == '1\\n' else 'sh'] += 1\n"
            "    except PermissionError: ran['denied'] += 1\n"
            "finally:\n"
            "  stop = True; t.join()\n"
            "print(ran)\n")
    r = ctx.run(code, "--workdir", wd, "--timeout", "120")
    run = ctx.last_run()
    exes = [p["exe"] or "" for p in
            ctx.sql("select exe from processes where run_id=?", run["id"])]
    if run["status"] == "killed":
        # caught at PTRACE_EVENT_EXEC, before the new image ran at all
        kills = [e for e in ctx.denials(run["id"]) if e["decision"] == "kill"]
        assert kills and kills[0]["syscall"] == "exec-check", kills
        assert kills[0]["target"].endswith("/sh") or "sh" in kills[0]["target"], kills
    else:
        # every exec ran python: /bin/sh never started
        assert r.code == 0 and "'sh': 0" in r.stdout, r
        assert not [e for e in exes if e.endswith("/sh") or e.endswith("/dash")], exes


def test_the_record_names_the_copies_layer(ctx):
    r, j = ctx.run_json("pass")
    assert r.code == 0, j
    layers = {l["name"]: l for l in j["layers"]}
    cp = layers["argument-copies"]
    assert cp["active"], cp
    # this machine's kernel (6.18) has mseal: the area is sealed
    assert "sealed with mseal" in cp["detail"], cp
    stored = json.loads(ctx.last_run()["layers"])
    assert any(l["name"] == "argument-copies" for l in stored), stored


def test_all_slots_held_fails_with_eagain_and_recovers(ctx):
    """64 threads blocked in a checked open (of a FIFO with no writer) hold
    every slot of the scratch area; one more checked call fails EAGAIN
    (recorded, rule "copy") instead of waiting or killing the run, and
    the run goes on once the blocked calls return."""
    import errno
    import time
    from wardtest import ward_bin
    wd = ctx.path("wdf")
    os.makedirs(wd)
    fifo = os.path.join(wd, "fifo")
    os.mkfifo(fifo, 0o666)
    with open(os.path.join(wd, "ok.txt"), "w") as f:
        f.write("ok\n")
    os.chmod(wd, 0o777)
    code = ("import os, threading, time\n"
            "def reader():\n"
            "  fd = os.open('fifo', os.O_RDONLY); os.close(fd)\n"
            "ts = [threading.Thread(target=reader) for i in range(64)]\n"
            "[t.start() for t in ts]\n"
            "time.sleep(3)\n"
            "try:\n"
            "  os.open('ok.txt', os.O_RDONLY); print('opened', flush=True)\n"
            "except OSError as e: print('errno', e.errno, flush=True)\n"
            "[t.join() for t in ts]\n"
            "print('done', flush=True)\n")
    p = subprocess.Popen([ward_bin(), "run", "--db", ctx.db, "--workdir", wd,
                          "--timeout", "60", "-c", code],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = p.stdout.readline()
        # release the 64 readers from outside the run; O_NONBLOCK: ENXIO
        # while no reader has the FIFO open, so that a run that ended
        # early fails here with its stderr instead of blocking the test
        deadline = time.monotonic() + 60
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                if (e.errno != errno.ENXIO or p.poll() is not None
                        or time.monotonic() > deadline):
                    if p.poll() is None:
                        p.kill()
                    raise AssertionError(("no reader holds the FIFO", first,
                                          p.wait(), p.stderr.read()[-800:]))
                time.sleep(0.05)
        os.close(fd)
        rest = p.stdout.read()
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert first == "errno 11\n", (first, p.stderr.read()[-500:])
    assert rest == "done\n" and p.returncode == 0, (rest, p.returncode)
    run = ctx.last_run()
    rows = [e for e in ctx.denials(run["id"]) if e["rule"] == "copy"]
    assert rows and rows[0]["errno"] == 11 and rows[0]["target"].endswith("/ok.txt"), rows


def test_open_files_limit_ends_the_run_with_its_cause(ctx):
    """The open-files limit is seen at the exit stop of a checked open:
    EMFILE ends the run with status limit and the cause recorded."""
    code = ("import os\n"
            "fds = []\n"
            "try:\n"
            "  while True: fds.append(os.open('.', os.O_RDONLY))\n"
            "except OSError as e: print('errno', e.errno, flush=True)\n"
            "print('went on')\n")
    r, j = ctx.run_json(code)
    assert j["status"] == "limit", j
    assert j["cause"].startswith("open files limit of 1024 reached"), j
    assert "went on" not in j["stdout"], j
    run = ctx.last_run()
    assert run["status"] == "limit" and "open files" in run["cause"], run


ENOMEM_PY = r"""
import ctypes, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
# the path lives in a MAP_SHARED page: its open always needs a copy
shared = mmap.mmap(-1, 4096)
shared.write(b".\0")
path = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(shared)))
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
maps = []
for size in (1 << 24, 1 << 20, 1 << 16, 1 << 12):
    while True:  # the whole address-space limit, PROT_NONE
        p = libc.mmap(None, size, 0, 0x22 | 0x4000, -1, 0)
        if p is None or p == ctypes.c_void_p(-1).value:
            break
        maps.append((p, size))
def child():
    pid = os.fork()
    if pid == 0:
        fd = libc.open(path, os.O_RDONLY)
        if fd >= 0:
            os.close(fd); print('child opened', flush=True)
        else:
            print('child errno', ctypes.get_errno(), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
child()
for p, size in maps:
    libc.munmap(p, size)
child()
"""


def test_no_room_for_the_area_fails_the_call_not_the_rule(ctx):
    """A forked child whose address space is full (rlimit) cannot get its
    scratch area: its checked open fails ENOMEM (recorded, rule "copy"),
    never runs without its copy, and works once there is room again."""
    r, j = ctx.run_json(ENOMEM_PY, "--no-cgroup", "--memory", "256M")
    assert r.code == 0, j
    assert j["stdout"] == "child errno 12\nchild opened\n", j
    d = [e for e in ctx.denials(j["run_id"]) if e["rule"] == "copy"]
    assert d and d[0]["errno"] == 12 and d[0]["syscall"] == "openat", d


def _copy_counts(j):
    """(copied, in place) from the argument-copies layer of a run."""
    import re
    d = {l["name"]: l for l in j["layers"]}["argument-copies"]["detail"]
    m = re.search(r"(\d+) copied, (\d+) in place", d)
    assert m, d
    return int(m.group(1)), int(m.group(2))


def test_literals_of_files_the_code_cannot_write_stay_in_place(ctx):
    """ld.so's and Python's own literal paths live in private mappings of
    root-owned files nobody else may write: nothing of the run can change
    them, so they need no copy (as root, where ward can look the file up
    through /proc/PID/map_files). A path in a private mapping of a file the
    code may write is copied: a sibling could rewrite the file (R13)."""
    r, j = ctx.run_json("pass")
    assert r.code == 0, j
    copied, in_place = _copy_counts(j)
    if os.geteuid() == 0:
        assert copied == 0 and in_place >= 20, (copied, in_place)
    code = ("import ctypes, mmap, os\n"
            "with open('p', 'wb') as f:\n"
            "    f.write(b'/usr/lib/nonexistent-ward-p'.ljust(4096, bytes(1)))\n"
            "f = open('p', 'r+b')\n"
            "m = mmap.mmap(f.fileno(), 4096, access=mmap.ACCESS_COPY)\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "a = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(m)))\n"
            "print([libc.open(a, 0) for i in range(10)].count(-1))\n")
    r, j = ctx.run_json(code)
    assert r.code == 0 and j["stdout"] == "10\n", j
    copied2, _ = _copy_counts(j)
    assert copied2 >= copied + 10, (copied, copied2)


def with_second_thread(body):
    """Python code that runs body while a second thread of the process
    waits."""
    return ("import threading\n"
            "ev = threading.Event()\n"
            "t = threading.Thread(target=ev.wait); t.start()\n" +
            body + "ev.set(); t.join()\n")


OPENS = ("import os, threading\n"
         "def opens(tag):\n"
         "  for i in range(40):\n"
         "    try: os.open('/usr/lib/nonexistent-%s-%d' % (tag, i), os.O_RDONLY)\n"
         "    except OSError: pass\n")


def test_arguments_private_to_their_only_thread_stay_in_place(ctx):
    """A single-threaded process's checked opens need no copy (nothing but
    the stopped thread could change its heap while the syscall runs), so
    they pay no exit stop; the same opens from a process that has a second
    thread are copied. WARD_TEST_COPY_ALWAYS=1 (as on a kernel without
    PROCMAP_QUERY) copies them all."""
    r, j = ctx.run_json(OPENS + "opens('alone')\n")
    assert r.code == 0, j
    copied, in_place = _copy_counts(j)
    assert in_place >= 40, (copied, in_place)

    r, j = ctx.run_json(OPENS + with_second_thread("opens('threaded')\n"))
    assert r.code == 0, j
    copied2, in_place2 = _copy_counts(j)
    # python's own start-up opens are in place; the 40 opens made while
    # the second thread lived are copied
    assert copied2 >= copied + 40, (copied, copied2)
    assert in_place2 < in_place + 40, (in_place, in_place2)

    env = dict(os.environ, WARD_TEST_COPY_ALWAYS="1")
    r, j = ctx.run_json(OPENS + "opens('forced')\n", env=env)
    assert r.code == 0, j
    copied3, in_place3 = _copy_counts(j)
    assert in_place3 == 0 and copied3 >= 40, (copied3, in_place3)


SPAWN = ("import subprocess\n"
         "def spawn(n, **kw):\n"
         "    for i in range(n):\n"
         "        subprocess.run(['/usr/bin/uname', '-s'], check=True,\n"
         "                       stdout=subprocess.DEVNULL, **kw)\n")


def test_vfork_childs_exec_stays_in_place_while_only_it_can_write(ctx):
    """A vfork child (Python's subprocess) shares its parent's memory, but
    the thread that vforked it waits in the kernel until it execs: when
    that thread is the parent's only one, the execve's path and
    environment need no copy and no exit stop. With a second thread in
    the parent they are copied, and so is an environment ward strips a
    loader variable from."""
    r, j = ctx.run_json(SPAWN + "spawn(0)\n")
    assert r.code == 0, j
    base, _ = _copy_counts(j)
    r, j = ctx.run_json(SPAWN + "spawn(5)\n")
    assert r.code == 0, j
    copied, in_place = _copy_counts(j)
    assert copied == base, (base, copied, in_place)

    r, j = ctx.run_json(SPAWN + with_second_thread("spawn(5)\n"))
    assert r.code == 0, j
    copied2, _ = _copy_counts(j)
    assert copied2 >= base + 5, (base, copied2)

    r, j = ctx.run_json(SPAWN + "spawn(5, env={'LD_PRELOAD': 'x.so'})\n")
    assert r.code == 0, j
    copied3, _ = _copy_counts(j)
    assert copied3 >= base + 5, (base, copied3)


def test_child_that_stops_before_its_parents_event_waits_for_it(ctx):
    """A new child's first stop may reach ward before its parent's
    vfork/fork/clone event (a slow supervisor: here ward's main thread
    under strace). ward holds the child until the event names it, so it
    knows it from the event (no /proc look-up) and a vfork child as one:
    its execs stay in place as in the test above."""
    strace = shutil.which("strace")
    if not strace:
        raise Skip("no strace here")
    r, j = ctx.run_json(SPAWN + "spawn(0)\n")
    base, _ = _copy_counts(j)
    argv = [strace, "-qq", "-o", "/dev/null", "-e", "trace=ptrace,wait4",
            wardtest.ward_bin(), "run", "--db", ctx.db, "--json", "-c",
            SPAWN + "spawn(20)\nprint('spawned')\n"]
    # LeakSanitizer cannot work under ptrace: off for this run of an
    # ASan build (`make asan`)
    env = dict(os.environ, ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "") +
                                         ":detect_leaks=0").lstrip(":"))
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       cwd=ctx.tmp, env=env)
    assert p.returncode == 0, (p.stdout[-500:], p.stderr[-1500:])
    j = json.loads(p.stdout)
    assert j["stdout"] == "spawned\n", j
    copied, in_place = _copy_counts(j)
    assert copied == base, (base, copied, in_place)
    procs = ctx.sql("select exe from processes where run_id = ?", j["run_id"])
    assert sum(1 for x in procs if x["exe"] == "/usr/bin/uname") == 20, procs


def _vm_reads(ctx, code):
    """ward run -c CODE with ward's main thread (the supervisor's loop)
    under strace: its process_vm_readv calls, and the run's JSON."""
    argv = [shutil.which("strace"), "-qq", "-c", "-e",
            "trace=process_vm_readv", "-o", ctx.path("vm.txt"),
            wardtest.ward_bin(), "run", "--db", ctx.db, "--json", "-c", code]
    env = dict(os.environ, ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "") +
                                         ":detect_leaks=0").lstrip(":"))
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       cwd=ctx.tmp, env=env)
    assert p.returncode == 0, (p.stdout[-500:], p.stderr[-1500:])
    calls = 0
    for line in open(ctx.path("vm.txt")):
        f = line.split()
        if f and f[-1] == "process_vm_readv":
            calls = int(f[3])
    return calls, json.loads(p.stdout)


def test_an_execs_environment_is_read_a_page_at_a_time(ctx):
    """The strings of an exec's environment (and argv) mostly lie a few to
    a page: ward reads each page once, not each string, and the pointer
    array a run at a time. 60 more variables cost ward a handful of reads,
    not two each; what the child gets and the record says stay exact."""
    if not shutil.which("strace"):
        raise Skip("no strace here")
    code = ("import os, subprocess\n"
            "env = {'PATH': '/usr/bin', 'K': 'v'}\n"
            "env.update({'X%02d' % i: 'v' * 20 for i in range(N)})\n"
            "out = subprocess.run(['/usr/bin/python3', '-c', "
            "'import os; print(len(os.environ), os.environ[\"K\"])'], "
            "env=env, capture_output=True, text=True).stdout\n"
            "print(out.strip())\n")
    few, j1 = _vm_reads(ctx, code.replace("range(N)", "range(0)"))
    many, j2 = _vm_reads(ctx, code.replace("range(N)", "range(60)"))
    n1, k1 = j1["stdout"].split()
    n2, k2 = j2["stdout"].split()
    assert k1 == k2 == "v" and int(n2) - int(n1) == 60, (j1, j2)
    assert many - few < 20, (few, many)
    ex = [e for e in ctx.events(j2["run_id"], "syscall='execve'")
          if e["target"] == "/usr/bin/python3.11" or "python3" in e["target"]]
    assert ex and all(e["decision"] == "allow" for e in ex), ex


def test_arguments_in_memory_the_kernel_writes_later_are_copied(ctx):
    """After an allowed io_setup (Linux AIO completes into the process's
    memory later, from the kernel), the process's checked arguments are
    always copied."""
    import copy as _copy
    pol = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..",
                                      "profiles", "default.json")))
    pol = _copy.deepcopy(pol)
    pol.setdefault("syscalls", []).append({"name": "io_setup", "action": "allow"})
    pfile = ctx.write("aio.json", json.dumps(pol))
    code = (OPENS +
            "import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "ctx = ctypes.c_ulong(0)\n"
            "rc = libc.syscall(206, 8, ctypes.byref(ctx))\n"
            "print('io_setup', rc, ctypes.get_errno(), flush=True)\n"
            "opens('after-aio')\n")
    r, j = ctx.run_json(code, "--policy", pfile)
    assert r.code == 0 and "io_setup 0 0" in j["stdout"], j
    copied, in_place = _copy_counts(j)
    assert copied >= 40, (copied, in_place)
