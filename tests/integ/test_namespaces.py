"""Namespaces as a kernel floor: the run has its own pid (and /proc),
mount, net, ipc and uts namespaces (and a user namespace when ward is not
root). Each test shows the floor holding on its own: with the audit profile
(the supervisor denies nothing) wherever the policy could have stopped the
code instead."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile

from wardtest import Skip, listener, proc_files, ward_bin


def ns_layer(j):
    found = [l for l in j["layers"] if l["name"] == "namespaces"]
    assert len(found) == 1, j["layers"]
    return found[0]


def test_layer_recorded(ctx):
    r, j = ctx.run_json("print(1)")
    assert r.code == 0, r
    l = ns_layer(j)
    assert l["active"] is True, l
    for part in ("pid", "mount", "net (loopback only)", "ipc", "uts"):
        assert part in l["detail"], l
    assert json.loads(ctx.last_run()["layers"]) == j["layers"]


def test_pid_namespace_hides_host_processes(ctx):
    me = os.getpid()
    code = ("import os\n"
            "print(os.getpid(), os.getppid())\n"
            f"print(os.path.exists('/proc/{me}'))\n"
            "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n")
    r = ctx.run(code, "--profile", "audit")
    assert r.code == 0, r
    pid, ppid = r.stdout.splitlines()[0].split()
    # pid 1 is ward's init; the code is its first child
    assert (pid, ppid) == ("2", "1"), r
    # the init is not in the code's /proc (hidepid)
    assert r.stdout.splitlines()[1:] == ["False", "[2]"], r
    # the init is ward's, not the code's: one process recorded
    procs = ctx.sql("select * from processes where run_id=?", ctx.last_run()["id"])
    assert len(procs) == 1 and procs[0]["exe"].startswith("/usr/bin/python3"), procs


def test_show_names_the_pid_the_code_saw(ctx):
    """The record keeps host pids; ward show and --tree add the first
    process's pid in the run's namespace (2: the init forks it first), the
    one its getpid() returned, and nothing for later processes (the record
    cannot say theirs)."""
    code = ("import os\nprint(os.getpid(), flush=True)\n"
            "if os.fork() == 0:\n    print(os.getpid())\n    os._exit(0)\n"
            "os.wait()\n")
    r = ctx.run(code)
    assert r.code == 0 and r.stdout.split()[0] == "2", r
    rid = ctx.last_run()["id"]
    procs = ctx.sql("select * from processes where run_id=? order by serial", rid)
    assert len(procs) == 2 and procs[0]["pid"] != 2, procs
    r = ctx.ward("show", rid)
    starts = [l for l in r.stdout.splitlines() if " start  pid " in l]
    assert r.code == 0 and len(starts) == 2, r
    assert starts[0].endswith(f"[1] start  pid {procs[0]['pid']} (ns pid 2), "
                              f"process, ppid {procs[0]['ppid']}"), starts
    assert "ns pid" not in starts[1], starts
    r = ctx.ward("show", rid, "--tree")
    tree = r.stdout.split("process tree (", 1)[1].splitlines()
    assert r.code == 0 and sum("(ns pid 2)" in l for l in tree) == 1, tree
    assert [l for l in tree if l.startswith("[1] ")][0].count(
        f"pid {procs[0]['pid']} (ns pid 2), exit 0") == 1, tree


def test_sigterm_to_self_as_native(ctx):
    code = ("import os, signal, sys\nprint('before', flush=True)\n"
            "os.kill(os.getpid(), signal.SIGTERM)\nprint('after')\n")
    native = ctx.native(["/usr/bin/python3", "-c", code])
    r = ctx.run(code)
    assert native.code == -signal.SIGTERM and native.stdout == "before\n", native
    assert r.code == 128 + signal.SIGTERM and r.stdout == "before\n", r
    run = ctx.last_run()
    assert run["signal"] == signal.SIGTERM, run
    kills = ctx.events(run["id"], "syscall='kill'")
    assert kills and kills[0]["decision"] == "allow", kills
    args = json.loads(kills[0]["args"])
    # the code's pid 2 and ward's number for it are both recorded
    assert args["pid"] == 2 and args["host_pid"] > 2, args


def test_signal_to_host_process_fails(ctx):
    me = os.getpid()
    code = ("import os\n"
            f"try:\n os.kill({me}, 0); print('REACHED')\n"
            "except OSError as e: print(type(e).__name__)\n")
    # the policy says no...
    r = ctx.run(code)
    assert r.code == 0 and r.stdout == "PermissionError\n", r
    d = [e for e in ctx.denials(ctx.last_run()["id"]) if e["syscall"] == "kill"]
    assert d and json.loads(d[0]["args"])["pid"] == me, d
    # ...and without the policy the kernel cannot find the pid at all
    r = ctx.run(code, "--profile", "audit")
    assert r.code == 0 and r.stdout == "ProcessLookupError\n", r


def test_hostname_is_the_runs_own(ctx):
    code = ("import socket, os\nprint(socket.gethostname())\n"
            "try:\n socket.sethostname('pwned'); print('SET')\n"
            "except OSError as e: print(e.errno)\n")
    r = ctx.run(code, "--profile", "audit")
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    assert lines[0] == "ward" and lines[0] != socket.gethostname(), r
    assert lines[1] != "SET" and socket.gethostname() != "pwned", r


def test_ipc_and_net_namespaces_differ(ctx):
    code = ("import os\n"
            "for n in ('ipc', 'uts', 'net', 'pid', 'mnt'):\n"
            " print(n, os.readlink('/proc/self/ns/' + n))\n")
    r = ctx.run(code, "--profile", "audit")
    assert r.code == 0, r
    inside = dict(l.split() for l in r.stdout.splitlines())
    for n in ("ipc", "uts", "pid", "mnt"):
        assert inside[n] != os.readlink(f"/proc/self/ns/{n}"), (n, inside)
    # audit mode lets the code reach any peer: the host's network stays
    assert inside["net"] == os.readlink("/proc/self/ns/net"), inside


def loopback_policy(ctx):
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles",
                           "default.json")) as f:
        p = json.load(f)
    p["name"] = "loopback"
    p["net"]["rules"] = [{"id": "lo", "ops": ["connect", "send", "bind"],
                          "family": "inet", "addr": "127.0.0.0/8"}]
    return ctx.write("loopback.json", json.dumps(p))


def test_host_loopback_unreachable_even_if_allowed(ctx):
    port, state, stop = listener()
    try:
        code = ("import socket\n"
                "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                "u.bind(('127.0.0.1', 0)); u.sendto(b'ping', u.getsockname())\n"
                "if u.recv(4) == b'ping': print('own lo ok')\n"
                "s = socket.socket()\n"
                f"try:\n s.connect(('127.0.0.1', {port})); print('CONNECTED')\n"
                "except OSError as e: print(e.errno)\n")
        r, j = ctx.run_json(code, "--policy", loopback_policy(ctx))
        assert r.code == 0 and j["stdout"] == "own lo ok\n111\n", j
        assert "net (loopback only)" in ns_layer(j)["detail"], j["layers"]
        # the policy allowed the connect: the namespace refused it
        ev = [e for e in ctx.events(j["run_id"], "syscall='connect'")
              if e["target"] == f"127.0.0.1:{port}"]
        assert ev and ev[0]["decision"] == "allow", ev
    finally:
        stop()
    assert state["accepted"] == 0


def test_tmp_is_private(ctx):
    name = f"ward-ns-test-{os.getpid()}-{os.urandom(4).hex()}"
    host_marker = tempfile.mkdtemp(prefix="ward-ns-host-", dir="/tmp")
    try:
        code = (f"open('/tmp/{name}', 'w').write('x')\n"
                f"open('/dev/shm/{name}', 'w').write('x')\n"
                "import os\n"
                f"print('{name}' in os.listdir('/tmp'), '{name}' in os.listdir('/dev/shm'))\n"
                f"print(os.path.exists({host_marker!r}))\n")
        r = ctx.run(code, "--profile", "audit")
        assert r.code == 0 and r.stdout == "True True\nFalse\n", r
    finally:
        os.rmdir(host_marker)
    assert not os.path.exists(f"/tmp/{name}") and not os.path.exists(f"/dev/shm/{name}")


def test_host_files_read_only_even_in_audit_mode(ctx):
    d = tempfile.mkdtemp(prefix="ward-ns-test-", dir="/var/tmp")
    try:
        os.chmod(d, 0o777)
        canary = os.path.join(d, "canary")
        with open(canary, "w") as f:
            f.write("original")
        os.chmod(canary, 0o666)
        code = ("import os\n"
                f"for p in ({canary!r}, {os.path.join(d, 'new')!r}):\n"
                " try:\n  open(p, 'a').write('pwned'); print('WROTE')\n"
                " except OSError as e: print(e.errno)\n"
                "open('in-workdir', 'w').write('ok'); print('workdir ok')\n")
        r, j = ctx.run_json(code, "--profile", "audit")
        assert r.code == 0 and j["stdout"] == "30\n30\nworkdir ok\n", j
        assert open(canary).read() == "original"
        assert os.listdir(d) == ["canary"]
        # ptrace let it through (audit mode): the mount namespace stopped it
        ev = ctx.events(j["run_id"], "target=?", canary)
        assert ev and all(e["decision"] == "allow" for e in ev), ev
    finally:
        shutil.rmtree(d)


def test_symlink_into_proc_resolved_as_the_code_sees_it(ctx):
    # /proc/self reached through a link made by the code is its own
    # /proc/self, as the kernel will open it: the mem rule holds
    code = ("import os\nos.symlink('/proc/self', 'me')\n"
            "try:\n open('me/mem', 'rb'); print('OPENED')\n"
            "except OSError as e: print(e.errno)\n"
            "print(open('me/status').read().split()[1])\n"
            "try:\n open('/dev/stdout', 'w'); print('stdout ok')\n"
            "except OSError as e: print(e.errno)\n")
    r = ctx.run(code)
    # /dev/stdout is the pipe ward made (the code's own, as natively;
    # ward allowed what it resolved: the pipe)
    assert r.code == 0 and r.stdout.splitlines() == ["13", "python3", "stdout ok"], r
    run = ctx.last_run()
    ev = ctx.events(run["id"], "raw='/dev/stdout'")
    assert ev and ev[0]["target"].startswith("pipe:[") and ev[0]["decision"] == "allow", ev
    d = [e for e in ctx.denials(run["id"]) if e["raw"] == "me/mem"]
    assert d and d[0]["decision"] == "deny", d
    assert d[0]["target"].startswith("/proc/") and d[0]["target"].endswith("/mem")


def test_unprivileged_ward_gets_a_user_namespace(ctx):
    nobody = 65534
    home = ctx.path("nobody")
    os.mkdir(home)
    os.chown(home, nobody, nobody)
    os.chmod(ctx.tmp, 0o711)
    code = ("import os\nprint(os.getpid(), os.getuid(), os.getgid())\n"
            "open('f', 'w').write('x'); print(sorted(os.listdir('.')))\n")

    def drop():
        os.setgroups([])
        os.setgid(nobody)
        os.setuid(nobody)
    p = subprocess.run([ward_bin(), "run", "--json", "--db", os.path.join(home, "a.db"),
                        "--workdir", os.path.join(home, "wd"), "-c", code],
                       preexec_fn=drop, capture_output=True, text=True, timeout=120,
                       cwd=home, env={"HOME": home, "PATH": "/usr/bin:/bin"})
    if "namespaces are not available" in p.stderr:
        raise Skip("the kernel refuses user namespaces to ordinary users: " + p.stderr.strip())
    assert p.returncode == 0, (p.stdout, p.stderr)
    j = json.loads(p.stdout)
    assert j["stdout"] == f"2 {nobody} {nobody}\n['f', 'tmp']\n", j
    l = ns_layer(j)
    assert l["active"] and "user" in l["detail"], l
    assert os.stat(os.path.join(home, "wd", "f")).st_uid == nobody


# A launcher whose seccomp filter makes clone(CLONE_NEWPID) fail with
# EPERM, as a kernel that refuses namespaces would; ward runs under it.
NO_NS_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWPID, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return 99;
	execv(argv[1], argv + 1);
	return 98;
}
"""


def test_refused_namespaces_said_recorded_and_required(ctx):
    src = ctx.write("no_ns.c", NO_NS_C)
    launcher = ctx.path("no_ns")
    if not shutil.which("cc"):
        raise Skip("no C compiler (cc) to build the launcher")
    p = subprocess.run(["cc", "-O2", "-o", launcher, src], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    base = [launcher, ward_bin(), "run", "--db", ctx.db]
    code = "import os\nprint(os.getpid() > 2)\n"
    p = subprocess.run(base + ["--json", "-c", code], capture_output=True, text=True,
                       timeout=120, cwd=ctx.tmp)
    assert p.returncode == 0, (p.stdout, p.stderr)
    j = json.loads(p.stdout)
    # the run went on, in the host's pid namespace, and says so once
    assert j["stdout"] == "True\n", j
    assert p.stderr.count("namespaces are not available (clone: Operation not permitted)") == 1, p.stderr
    l = ns_layer(j)
    assert l["active"] is False and "refused" in l["detail"], l
    # no pid namespace: ward show names no namespace pid
    r = ctx.ward("show", j["run_id"])
    assert r.code == 0 and "start  pid" in r.stdout and "ns pid" not in r.stdout, r
    # --require makes the missing layer fatal: ward's error, nothing runs
    p = subprocess.run(base + ["--require", "namespaces", "-c", "print('RAN')"],
                       capture_output=True, text=True, timeout=120, cwd=ctx.tmp)
    assert p.returncode == 125 and "RAN" not in p.stdout, (p.stdout, p.stderr)
    assert "required layer namespaces is not active" in p.stderr, p.stderr
    assert "goes on without them" not in p.stderr, p.stderr
    # without a mount namespace the workdir is at its host path, which the
    # code must then walk: a workdir below a directory only root may enter
    # is refused before anything is handed to the code's uid, and the
    # message says how to mend it
    if os.geteuid() == 0:
        top = tempfile.mkdtemp(prefix="ward-ns-0700-")
        try:
            wd = os.path.join(top, "work")
            os.mkdir(wd, 0o755)
            p = subprocess.run(base + ["--workdir", wd, "-c", "print('RAN')"],
                               capture_output=True, text=True, timeout=120, cwd=ctx.tmp)
            assert p.returncode == 125 and "RAN" not in p.stdout, (p.stdout, p.stderr)
            assert f"{top} is not searchable by uid 65534" in p.stderr, p.stderr
            assert f"chmod o+x" in p.stderr, p.stderr
            st = os.stat(wd)
            assert (st.st_uid, st.st_gid) == (0, 0), "the workdir was handed over before the refusal"
        finally:
            shutil.rmtree(top)


def _children_of(pid):
    """(pid, NSpid fields) of pid's children."""
    out = []
    for p, status in proc_files("status"):
        st = dict(l.split(":", 1) for l in status.splitlines() if ":" in l)
        if int(st["PPid"]) == pid:
            out.append((p, st["NSpid"].split()))
    return out


def _same_vm(a, b):
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    SYS_kcmp, KCMP_VM = 312, 1
    r = libc.syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0)
    assert r >= 0, os.strerror(ctypes.get_errno())
    return r == 0


def test_the_init_shares_wards_memory_and_the_code_has_its_own(ctx):
    """ward makes no copy of itself to start a run (start.c): the run's
    init is cloned with CLONE_VM and keeps ward's memory for the whole run
    (only its reaping loop runs there); the code's process, cloned by it
    with CLONE_VM|CLONE_VFORK, has a memory of its own once it has execed.
    ward has no other child."""
    if os.uname().machine != "x86_64":
        raise Skip("the kcmp number used here is x86_64's")
    if os.geteuid() != 0:
        raise Skip("kcmp of ward's processes needs root here")
    code = "import time\nprint('up', flush=True)\ntime.sleep(60)\n"
    p = subprocess.Popen([ward_bin(), "run", "--db", ctx.db, "--timeout", "90",
                          "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=ctx.tmp)
    try:
        assert p.stdout.readline() == "up\n"
        kids = _children_of(p.pid)
        assert len(kids) == 1, kids
        init, nspid = kids[0]
        assert nspid[-1] == "1", nspid  # pid 1 of the run's namespace
        assert _same_vm(p.pid, init)
        code_procs = _children_of(init)
        assert len(code_procs) == 1 and code_procs[0][1][-1] == "2", code_procs
        with open(f"/proc/{code_procs[0][0]}/comm") as f:
            assert f.read().startswith("python3")
        assert not _same_vm(p.pid, code_procs[0][0])
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
    assert p.returncode != 0 and "aborted" in err, (p.returncode, err)
    assert _children_of(p.pid) == []


def test_wards_environment_is_out_of_the_codes_reach_through_the_init(ctx):
    """The run's init shares ward's memory, environment included
    (start.c). Even with the audit profile (the supervisor denies nothing)
    the code cannot read it through /proc/1/environ: the run's /proc is
    mounted with hidepid, and the init is hidden from the code (as root it
    is another uid; without root it holds capabilities in the run's user
    namespace that the code does not: the kernel's ptrace access check)."""
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
    secret = "ward-secret-" + os.urandom(6).hex()
    code = ("for p in ('/proc/1/environ', '/proc/1/task/1/environ'):\n"
            " try: print(open(p, 'rb').read().hex())\n"
            " except OSError as e: print(type(e).__name__)\n")
    home = ctx.path("home")
    os.makedirs(home, exist_ok=True)
    os.chown(home, 65534, 65534)
    os.chmod(ctx.tmp, 0o755)
    env = {"HOME": home, "PATH": "/usr/bin:/bin", "AGENT_API_KEY": secret}
    runs = [[]]
    if os.geteuid() == 0 and setpriv:
        runs.append([setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups"])
    for i, pre in enumerate(runs):
        p = subprocess.run(pre + [ward_bin(), "run", "--profile", "audit", "--db",
                                  os.path.join(home, f"a{i}.db"), "-c", code],
                           capture_output=True, text=True, timeout=120, cwd=home, env=env)
        if "namespaces are not available" in p.stderr:
            continue
        assert p.returncode == 0, (pre, p.stdout, p.stderr)
        # the init is hidden from the code's /proc (hidepid: another uid
        # as root; without root, capabilities the code lacks)
        assert p.stdout.splitlines() == ["FileNotFoundError"] * 2, (pre, p.stdout)
        assert secret.encode().hex() not in p.stdout
