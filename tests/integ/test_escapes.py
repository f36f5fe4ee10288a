"""The escape corpus (tests/escapes/, README.md there): one attack per test.

Each case runs one small attack under ward with the default profile (a few
race cases add a harmless "decoy" peer or file to it, so that the race has
an allowed twin to flip from) and checks three things:

  outcome  what the attempt got: DENY:<errno> (it failed with that errno
           and the code lived on), KILL (SIGSYS or SIGKILL ended the run
           and the attack never printed AFTER), CONT (the call succeeded
           but reached nothing forbidden), ENOSYS. Alternatives with "|".
  canaries all untouched: a secret file (0644) and a writable file (0666)
           in a world-writable directory outside the sandbox (only ward
           protects them), a marker path outside and one inside the
           workdir, loopback TCP/UDP/unix/abstract listeners (zero
           connections or datagrams), a process outside the run running
           as the sandbox's uid (alive), and no process of the run left.
  audit    the rows the run must leave in the database.

C attacks (tests/escapes/*.c) are compiled here into a shared object with
attack(argc, argv) and loaded into python3 with ctypes, so they run as the
code ward supervises without any exec of ours. Python attacks (*.py) run as
the script itself. Both get the same key=value arguments.
"""
import ctypes
import json
import os
import secrets as rnd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import wardtest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SRC = os.path.join(ROOT, "tests", "escapes")
PROFILE = os.path.join(ROOT, "profiles", "default.json")
# Attempts a race case makes: 100,000 in `make test-full` (and by
# default); `make test` sets WARD_RACE_N lower to stay in minutes.
RACE_N = int(os.environ.get("WARD_RACE_N", "100000"))
# The static program the exec races (R07, R08, R14, R15) run (tests/helpers); each
# case runs a copy in its canary directory under /var/tmp, which the run's
# mount namespace shows (a checkout under /tmp would be hidden by the run's
# own /tmp).
PROBE = os.path.join(os.path.dirname(os.path.abspath(wardtest.ward_bin())),
                     "helpers", "exec_probe")
SANDBOX_UID = 65534

LAUNCHER = """import ctypes, sys
lib = ctypes.CDLL("./%s")
args = [a.encode() for a in sys.argv[1:]]
argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
sys.exit(lib.attack(len(args), argv))
"""


# ---------------------------------------------------------------- canaries

class Listeners:
    """Loopback peers the code must never reach: TCP, UDP, a unix socket
    in the secret directory and an abstract unix socket. Each counts what
    reached it. Decoys are peers a race case's policy allows."""

    def __init__(self, sdir):
        self.counts = {"tcp": 0, "udp": 0, "unix": 0, "abstract": 0,
                       "decoy-tcp": 0, "decoy-udp": 0}
        self.stop_flag = False
        self.socks = []
        self.tcp = self._stream(socket.AF_INET, ("127.0.0.1", 0), "tcp")
        self.decoy = self._stream(socket.AF_INET, ("127.0.0.1", 0), "decoy-tcp")
        self.usock_path = os.path.join(sdir, "sock")
        self.unix = self._stream(socket.AF_UNIX, self.usock_path, "unix")
        os.chmod(self.usock_path, 0o777)
        self.abstract_name = "ward-escape-" + rnd.token_hex(6)
        self.abstract = self._stream(socket.AF_UNIX, "\0" + self.abstract_name,
                                     "abstract")
        self.udp = self._dgram("udp")
        self.udecoy = self._dgram("decoy-udp")
        self.threads = []
        for s, name, kind in self.socks:
            t = threading.Thread(target=self._loop, args=(s, name, kind),
                                 daemon=True)
            t.start()
            self.threads.append(t)

    def _stream(self, fam, addr, name):
        s = socket.socket(fam, socket.SOCK_STREAM)
        if fam == socket.AF_INET:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(addr)
        s.listen(64)
        s.settimeout(0.1)
        self.socks.append((s, name, "stream"))
        return s

    def _dgram(self, name):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.settimeout(0.1)
        self.socks.append((s, name, "dgram"))
        return s

    def _loop(self, s, name, kind):
        while not self.stop_flag:
            try:
                if kind == "stream":
                    c, _ = s.accept()
                    c.close()
                else:
                    s.recv(65536)
                self.counts[name] += 1
            except OSError:
                pass

    def port(self, s):
        return s.getsockname()[1]

    def close(self):
        self.stop_flag = True
        for t in self.threads:
            t.join(2)
        for s, _, _ in self.socks:
            s.close()


def bystander(seconds):
    """A process outside the run, running as the sandbox's uid when we are
    root (so that only ward, not the kernel's permission checks, keeps the
    code from signalling or inspecting it). It lives longer than the case
    may take (it must be alive after it)."""
    def demote():
        if os.geteuid() == 0:
            os.setgid(SANDBOX_UID)
            os.setuid(SANDBOX_UID)
    return wardtest.spawn(["/bin/sleep", str(seconds)], preexec_fn=demote,
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)


def snapshot(path):
    """What a canary directory holds: names, modes, sizes, contents."""
    out = {}
    for name in sorted(os.listdir(path)):
        p = os.path.join(path, name)
        st = os.lstat(p)
        data = None
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as f:
                data = f.read()
        out[name] = (st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns, data)
    return out


# ---------------------------------------------------------------- one case

def policy_with_decoys(ctx, sdir, lst):
    """The default profile plus allowed twins for races: a read-only file
    in the secret directory, the decoy TCP and UDP ports. Nothing else."""
    with open(PROFILE) as f:
        pol = json.load(f)
    pol["name"] = "default+decoys"
    # No backtraces: each costs ward ~18 ms here, and a race makes
    # thousands of denials (the record is otherwise the same).
    pol["backtrace"] = []
    pol["fs"].append({"id": "decoy-file", "path": os.path.join(sdir, "decoy"),
                      "allow": ["read", "stat"]})
    pol["net"]["rules"] = [
        {"id": "decoy-tcp", "ops": ["connect", "send"], "family": "inet",
         "addr": "127.0.0.1", "port": lst.port(lst.decoy)},
        {"id": "decoy-udp", "ops": ["send"], "family": "inet",
         "addr": "127.0.0.1", "port": lst.port(lst.udecoy)},
    ]
    return pol


def proxy_policy(pol, lst, how):
    """W cases: ward's egress proxy. allowed.test (the decoy's port) is
    allowed; refused.test (the canary's port) is not; rebind*.test are
    allowed with the canary's port but resolve to loopback forms. how
    "private": net.allow_private names 127.0.0.1 (so allowed.test can reach
    the decoy); "strict": it names nothing (the rebinding case)."""
    dport, port = lst.port(lst.decoy), lst.port(lst.tcp)
    pol["name"] = "default+proxy"
    pol["net"]["allow_domains"] = [f"allowed.test:{dport}", f"rebind.test:{port}",
                                   f"rebind6.test:{port}", f"rebind0.test:{port}"]
    pol["net"]["hosts"] = {"allowed.test": "127.0.0.1", "refused.test": "127.0.0.1",
                           "rebind.test": "127.0.0.1",
                           "rebind6.test": "::ffff:127.0.0.1",
                           "rebind0.test": "0.0.0.0"}
    if how == "private":
        pol["net"]["allow_private"] = ["127.0.0.1"]


def compile_attack(ctx, src):
    so = ctx.path(os.path.basename(src)[:-2] + ".so")
    cc = ["gcc", "-std=gnu11", "-D_GNU_SOURCE", "-O1", "-Wall", "-Wextra",
          "-Werror", "-fPIC", "-shared", "-pthread", f"-DRACE_N={RACE_N}", "-o", so, src]
    p = subprocess.run(cc, capture_output=True, text=True)
    assert p.returncode == 0, f"cannot compile {src}:\n{p.stderr}"
    os.chmod(so, 0o644)
    return so


def alive(pid, ticks):
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
    except OSError:
        return False
    fields = st[st.rindex(")") + 2:].split()
    if fields[0] in ("Z", "X"):
        return False  # dead; only its parent has not reaped it yet
    return ticks is None or int(fields[19]) == ticks


def kill_all(pids):
    """SIGKILL what a failed case left behind (the test fails anyway, the
    machine stays clean); returns pids."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return pids


class Run:
    """What one case set up (canary paths, listeners, the bystander) and
    the result of its ward run."""


def run_case(ctx, case):
    if case.get("probe"):
        case["probe"](ctx)
    sdir = tempfile.mkdtemp(prefix="ward-escape-", dir="/var/tmp")
    lst = None
    by = None
    try:
        os.chmod(sdir, 0o777)
        probe = os.path.join(sdir, "exec_probe")
        if case.get("exec_probe"):
            shutil.copy(PROBE, probe)
            os.chmod(probe, 0o755)
        token = "SECRET-" + rnd.token_hex(12)
        secret = os.path.join(sdir, "flag")
        with open(secret, "w") as f:
            f.write(token + "\n")
        os.chmod(secret, 0o644)
        rw = os.path.join(sdir, "rw")
        with open(rw, "w") as f:
            f.write("untouched " + token + "\n")
        os.chmod(rw, 0o666)
        decoy = os.path.join(sdir, "decoy")
        with open(decoy, "w") as f:
            f.write("decoy\n")
        os.chmod(decoy, 0o666)
        marker = os.path.join(sdir, "marker")
        if case.get("watch") and os.geteuid() == 0:
            # U cases: a device node the code may name (char 1:3, what
            # /dev/null is); ward must never open it
            dev = os.path.join(sdir, "dev")
            os.mknod(dev, 0o20666, os.makedev(1, 3))
            os.chmod(dev, 0o666)
        lst = Listeners(sdir)
        by = bystander(case_limit(case) + 300)
        before = snapshot(sdir)

        wd = ctx.path("wd")
        limit = case_limit(case)
        # temp_workdir: ward's own temporary workdir (its quota), not one
        # given with --workdir (X05)
        opts = ([] if case.get("temp_workdir") else ["--workdir", wd]) + \
            ["--timeout", str(limit)]
        if case.get("race"):
            opts.append("--quiet")  # thousands of denial lines otherwise
        opts += case.get("opts", [])
        if case.get("decoys") or case.get("policy_patch") or case.get("view") \
                or case.get("proxy"):
            pol = policy_with_decoys(ctx, sdir, lst) if case.get("decoys") \
                else json.load(open(PROFILE))
            if case.get("exec_probe"):
                pol["exec"]["allow"].append(probe)
            if case.get("policy_patch"):
                case["policy_patch"](pol)
            if case.get("proxy"):
                proxy_policy(pol, lst, case["proxy"])
            if case.get("view"):
                pol["view"] = case["view"]
            pf = ctx.path("policy.json")
            with open(pf, "w") as f:
                json.dump(pol, f)
            opts += ["--policy", pf]
        src = os.path.join(SRC, case["src"])
        so = ""
        if src.endswith(".c"):
            so = compile_attack(ctx, src)
            script = ctx.write("launch.py", LAUNCHER % os.path.basename(so))
            opts += ["--input", so]
        else:
            script = src
        args = {
            "secret": secret, "token": token, "rw": rw, "sdir": sdir,
            "decoy": decoy, "marker": marker, "wmarker": "marker",
            # the workdir as the code sees it (its own file tree)
            "wd": wardtest.HOME,
            "port": lst.port(lst.tcp), "uport": lst.port(lst.udp),
            "dport": lst.port(lst.decoy), "udport": lst.port(lst.udecoy),
            "usock": lst.usock_path, "abstract": lst.abstract_name,
            "bystander": by.pid, "so": os.path.basename(so), "probe": probe,
        }
        argv = [f"{k}={v}" for k, v in args.items()]
        r = Run()
        r.wd, r.sdir, r.token, r.secret, r.rw, r.marker = wd, sdir, token, secret, rw, marker
        r.by, r.lst = by, lst
        r.env = None
        pass_fds = ()
        if case.get("inherit"):
            # An fd ward itself holds when it starts (N07): must not reach
            # the code.
            fd = os.open(secret, os.O_RDONLY)
            os.set_inheritable(fd, True)
            pass_fds = (fd,)
        try:
            if case.get("during"):
                r.result = case["during"](ctx, r, opts, script, argv, pass_fds)
            else:
                r.result = ward(ctx, opts, script, argv, pass_fds,
                                timeout=limit + 60,
                                env=RACE_ENV if case.get("race") and
                                not case.get("fs_race") else None)
        finally:
            for fd in pass_fds:
                os.close(fd)
        time.sleep(0.05)  # a datagram in flight reaches the canary first
        check(ctx, case, r, before)
    finally:
        if lst:
            lst.close()
        if by and by.poll() is None:
            by.kill()
            by.wait()
        shutil.rmtree(sdir, ignore_errors=True)


# Races on memory run without Landlock (as on a kernel that lacks it): it
# would refuse the secret in the kernel whatever the code's memory held, and
# the race must show that ward's argument copies hold on their own. Races on
# the file system (fs_race: R10, R11) keep it: a path's meaning can change
# after ward's check, and what holds there is Landlock and the read-only
# host (docs/security.md, "What ward does not claim yet"); without Landlock
# they leak.
RACE_ENV = dict(os.environ, WARD_TEST_LANDLOCK_ABI="0")


def ward(ctx, opts, script, argv, pass_fds=(), timeout=150, env=None):
    cmd = [wardtest.bin_for(env), "run", "--db", ctx.db] + opts + [script, "--"] + argv
    p = subprocess.run(cmd, capture_output=True, timeout=timeout, cwd=ctx.tmp,
                       pass_fds=pass_fds, stdin=subprocess.DEVNULL, env=env)
    return wardtest.Result(p, p.stdout.decode(errors="replace"),
                           p.stderr.decode(errors="replace"))


# ---------------------------------------------------------------- checks

def check(ctx, case, r, before):
    res = r.result
    out = res.stdout
    where = f"\n{res!r}"
    run = ctx.last_run()
    rid = run["id"]
    procs = ctx.sql("select * from processes where run_id=? order by serial", rid)

    # Nothing of the run survives ward.
    left = kill_all([p["pid"] for p in procs if alive(p["pid"], p["start_ticks"])])
    assert not left, f"processes of the run outlived ward: {left}{where}"
    # Independently of the record: any process still carrying the case's
    # arguments (every process of the run does, unless it exec'd).
    stray = kill_all([p for p in wardtest.pids_matching(r.sdir) if alive(p, None)])
    assert not stray, f"processes of the run outlived ward: {stray}{where}"
    # ward itself ended, and not by a fault of its own
    assert not getattr(r, "hung", False), \
        f"ward did not end (killed after {U_WALL + 40} s){where}"
    assert res.code is None or res.code >= 0, \
        f"ward died of signal {-res.code}{where}"

    # Canaries.
    assert r.token not in out and r.token not in res.stderr, f"the secret leaked{where}"
    stored = b"".join(row["data"] for row in ctx.sql(
        "select data from outputs where run_id=? order by seq", rid))
    assert r.token.encode() not in stored, "the secret is in the recorded output"
    after = snapshot(r.sdir)
    assert after == before, f"the secret directory changed:\n{before}\n{after}{where}"
    assert not os.path.lexists(r.marker), f"marker {r.marker} appeared{where}"
    assert not os.path.lexists(os.path.join(r.wd, "marker")), \
        f"the workdir marker appeared (a forbidden program ran){where}"
    for name in ("tcp", "udp", "unix", "abstract"):
        assert r.lst.counts[name] == 0, f"the {name} canary was reached{where}"
    assert r.by.poll() is None, f"the process outside the run died{where}"
    for line in out.splitlines():
        if line.startswith("WINS "):
            n, of = int(line.split()[1]), int(line.split()[3])
            assert n == 0, f"race won {n} times{where}"
            if case.get("race"):
                assert of >= case.get("race_n", RACE_N), f"race ran {of} times only{where}"

    # Outcome.
    killed = res.code in (128 + signal.SIGSYS, 128 + signal.SIGKILL) or \
        (procs and procs[0]["signal"] in (signal.SIGSYS, signal.SIGKILL))
    results = [l.split()[1] for l in out.splitlines() if l.startswith("RESULT ")]
    got = "KILL" if killed and "AFTER" not in out else \
        (f"DENY:{results[0]}" if results and results[0] != "ok" else
         ("CONT" if not killed else "KILLED-LATE"))
    want = [w if w in ("KILL", "CONT") else "DENY:" + w
            for w in case["expect"].split("|")]
    assert got in want, f"expected {case['expect']}, got {got}{where}"
    if got.startswith("DENY:"):
        assert "AFTER" in out, f"the code did not live on after the denial{where}"
    if case.get("race") and got == "CONT":
        assert "WINS " in out, f"the race did not finish{where}"

    # The record.
    for a in case.get("audit", []):
        audit_check(ctx, rid, run, procs, a, r, where)
    if case.get("extra"):
        case["extra"](ctx, r, run, procs)


def audit_check(ctx, rid, run, procs, a, r, where):
    kind = a[0]
    if kind == "event":
        want = {k: (v.format(secret=r.secret, rw=r.rw, sdir=r.sdir, wd=wardtest.HOME,
                              port=r.lst.port(r.lst.tcp),
                              dport=r.lst.port(r.lst.decoy))
                    if isinstance(v, str) else v) for k, v in a[1].items()}
        rows = ctx.events(rid)
        for row in rows:
            if all(match(row, k, v) for k, v in want.items()):
                return
        shown = [(x["syscall"], x["target"], x["decision"], x["rule"], x["errno"])
                 for x in rows if x["decision"] != "allow"][-12:]
        raise AssertionError(f"no events row with {want}; denials: {shown}{where}")
    if kind == "signal":
        sigs = [p["signal"] for p in procs]
        assert a[1] in sigs, f"no process of the run ended by signal {a[1]}: {sigs}{where}"
        return
    if kind == "run":
        for k, v in a[1].items():
            assert run[k] == v, f"runs.{k} is {run[k]!r}, expected {v!r}{where}"
        return
    if kind == "no-allow":
        # O_PATH opens are stat-like (the default profile allows stat
        # anywhere); what they could lead to is judged where it happens.
        rows = ctx.events(rid, "decision='allow' and syscall=? and target like ? "
                          "and coalesce(json_extract(args, '$.flags'), '') "
                          "not like '%O_PATH%'",
                          a[1], a[2].format(secret=r.secret, rw=r.rw, sdir=r.sdir) + "%")
        assert not rows, f"allowed {a[1]} on a canary: {rows[:3]}{where}"
        return
    raise AssertionError(f"unknown audit check {a}")


def match(row, k, v):
    if k == "target_prefix":
        return (row["target"] or "").startswith(v)
    if k == "target_suffix":
        return (row["target"] or "").endswith(v)
    if k == "syscall_in":
        return row["syscall"] in v
    if k == "errno_in":
        return row["errno"] in v
    if k == "decision_in":
        return row["decision"] in v
    return row[k] == v


# ---------------------------------------------------------------- the table
#
# expect: see the module's docstring. audit: ("event", {column: value})
# needs one events row matching all (target_prefix, errno_in, decision_in
# compare loosely); ("signal", N) a process of the run ended by signal N;
# ("run", {column: value}); ("no-allow", syscall, target-prefix) no allowed
# row of that syscall on a canary. Strings may name {secret} {rw} {sdir}
# {wd}.

SIGSYS = int(signal.SIGSYS)
KILLED = ("signal", SIGSYS)
RUN_OK = ("run", {"status": "ok"})


def ev(syscall, decision="deny", **kw):
    """An events row: syscall (or a tuple of names), decision, and columns."""
    d = {} if "decision_in" in kw else {"decision": decision}
    d["syscall_in" if isinstance(syscall, tuple) else "syscall"] = syscall
    d.update(kw)
    return ("event", d)


def floor_kill(name):
    """A kill by the seccomp floor: the process ended by SIGSYS, and the
    record names the call (ward reads it at the exit stop). name None: a
    number with no native name (x32), any kill row."""
    row = ev(name, decision="kill") if name else ("event", {"decision": "kill"})
    return [KILLED, row]


DENY_SECRET = ev("openat", target="{secret}", errno=13)
NO_ALLOW_SECRET = ("no-allow", "openat", "{secret}")


def _probe_int80(ctx):
    """int $0x80 needs the kernel's IA-32 emulation: without it the
    instruction faults (SIGSEGV) before any syscall or filter runs."""
    src = ctx.write("probe.c", "int main(void){long r;__asm__ volatile("
                    "\"int $0x80\":\"=a\"(r):\"a\"(20L));return r>0?0:1;}\n")
    exe = ctx.path("probe")
    subprocess.run(["gcc", "-o", exe, src], check=True)
    if subprocess.run([exe]).returncode != 0:
        raise wardtest.Skip("int $0x80 does not reach this kernel "
                            "(IA-32 emulation is off): nothing to filter")


def _probe_root(ctx):
    """The workdir quota is a tmpfs ward mounts, as root; an unprivileged
    ward mounts nothing and its run's layers say so."""
    if os.geteuid() != 0:
        raise wardtest.Skip("ward mounts the workdir quota as root only")


def _ward_killed(ctx, r, opts, script, argv, pass_fds):
    """T07: SIGKILL ward while its code makes trapped calls."""
    cmd = [wardtest.ward_bin(), "run", "--db", ctx.db] + opts + [script, "--"] + argv
    p = wardtest.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, cwd=ctx.tmp)
    line = p.stdout.readline().decode()
    assert "READY" in line, f"the attack did not start: {line!r}"
    assert wardtest.wait_until(lambda: len(wardtest.pids_matching(r.sdir)) >= 3, 10), \
        "the code and its child did not both start"
    os.kill(p.pid, signal.SIGKILL)
    out, err = p.communicate(timeout=30)
    gone = wardtest.wait_until(lambda: not wardtest.pids_matching(r.sdir), 10)
    left = kill_all(wardtest.pids_matching(r.sdir))
    assert gone, f"processes of the run outlived ward: {left}"
    res = wardtest.Result(p, out.decode(errors="replace"), err.decode(errors="replace"))
    res.code = 128 + signal.SIGKILL
    return res


def _argv_truthful(ctx, r, run, procs):
    """R07: each recorded argv is the one the program ran with."""
    # The children run one after another: the n-th uname row is the n-th
    # EXEC line (pids differ when the run has its own pid namespace).
    probe = os.path.join(r.sdir, "exec_probe")
    probes = [p for p in procs if p["exe"] == probe]
    lines = [l for l in r.result.stdout.splitlines() if l.startswith("EXEC ")]
    assert len(lines) >= RACE_N, f"only {len(lines)} execs"
    assert len(probes) == len(lines), f"{len(lines)} execs, {len(probes)} recorded"
    flipped = 0
    for line, p in zip(lines, probes):
        ran = (line.split(" ", 2) + [""])[2]  # the argv[1] it printed
        argv = json.loads(p["argv"])
        assert ran in ("-s", "-n"), f"exec_probe printed {ran!r}"
        assert argv[1:] == [ran], f"exec_probe ran with {ran} but the record says {argv}"
        flipped += ran == "-n"
    # the race was real: both values reached the new program
    assert 0 < flipped < len(lines), f"{flipped} of {len(lines)} saw the flip"


def _exec_check_if_killed(ctx, r, run, procs):
    """R06: a win is an exec of another program than the approved one; then
    the exec-event check must have killed the run. Without a win, ward saw
    the flipped name at times and denied it."""
    if run["status"] == "killed":
        rows = ctx.events(run["id"], "decision='kill' and syscall='exec-check'")
        assert rows, "killed, but no exec-check kill recorded"
    else:
        rows = ctx.events(run["id"], "decision='deny' and syscall='execve' "
                          "and target like '/usr/bin/dash%'")
        assert rows, "no denied execve of /usr/bin/dash recorded"


def _plain_tiocsti(ctx, r, run, procs):
    """N13: the plain request is refused as well (EPERM)."""
    assert "PLAIN EPERM" in r.result.stdout, r.result


def _no_leaked_fd(ctx, r, run, procs):
    """N12: no fd of ward's or of its parent's (the secret) is open."""
    fds = [l for l in r.result.stdout.splitlines() if l.startswith("FD ")]
    assert not any("ward-escape-" in l or ".db" in l for l in fds), fds


def _denied_all(n):
    def chk(ctx, r, run, procs):
        """every one of the opens of the secret was refused"""
        assert f"DENIED {n}" in r.result.stdout, r.result
    return chk


def _truncated(ctx, r, run, procs):
    """runs.stdout_truncated = 1 and stdout_bytes counts all 64 MiB."""
    assert run["stdout_truncated"] == 1 and run["stdout_bytes"] >= 64 << 20, run


def _record_bounded(ctx, r, run, procs):
    """runs.events: the 20,000 the limit allows and a kill per thread caught
    at it, no more; the rows are all there."""
    n = ctx.sql("select count(*) n from events where run_id=?", run["id"])[0]["n"]
    assert 20001 <= run["events"] <= 20005 and n == run["events"], (run["events"], n)
    assert run["cause"].startswith("event limit reached: 20000"), run["cause"]


def _disk_bounded(ctx, r, run, procs):
    """at most 96 MiB written (the workdir's tmpfs); root only: an
    unprivileged ward mounts nothing, and says so in the run's layers."""
    mb = [int(l.split()[1]) for l in r.result.stdout.splitlines() if l.startswith("MB ")]
    assert mb and 80 <= mb[0] <= 96, r.result.stdout
    q = [x for x in json.loads(run["layers"]) if x["name"] == "workdir-quota"][0]
    assert q["active"] and "96 MiB" in q["detail"], q


def _small_fsize(pol):
    pol["limits"]["fsize_mb"] = 64


def _probes_ran(ctx, r, run, procs):
    """R08, R14, R15: the probe really ran, every time (an exec that failed would
    leave the environment untested)."""
    probe = os.path.join(r.sdir, "exec_probe")
    n = sum(1 for p in procs if p["exe"] == probe)
    assert n >= RACE_N, f"exec_probe ran {n} times, not {RACE_N}"


def _fd_exec_check(ctx, r, run, procs):
    """R16: a win is the kernel executing dash through the flipped fd; the
    exec event's check must then have killed the run before dash ran
    (no marker: the canaries). Without a win, ward saw dash at the entry
    check at times and denied it."""
    if run["status"] == "killed":
        rows = ctx.events(run["id"], "decision='kill' and syscall='exec-check'")
        assert rows, "killed, but no exec-check kill recorded"
        assert any("dash" in (x["target"] or "") for x in rows), rows
    else:
        rows = ctx.events(run["id"], "decision='deny' and syscall='execveat'")
        assert rows, "no denied execveat recorded"


def _all_enoent(ctx, r, run, procs):
    """V01: every probe says the secret does not exist (an open of it may
    be decided: the policy's EACCES)."""
    probes = dict(l.split()[1:3] for l in r.result.stdout.splitlines()
                  if l.startswith("PROBE "))
    assert len(probes) == 8, r.result.stdout
    for what, got in probes.items():
        ok = ("ENOENT", "EACCES") if what in ("opendir", "open-path") else ("ENOENT",)
        assert got in ok, f"{what}: {got}"


def _no_host_path(ctx, r, run, procs):
    """V02: neither the workdir's host directory nor the test's own
    directory above it is in anything the code read."""
    out = r.result.stdout
    for p in (r.wd, ctx.tmp):
        assert p not in out, f"{p} reached the code"
    assert "FILE /proc/1/mountinfo EACCES" in out, out
    assert "CWD " + wardtest.HOME in out, out


def _no_other_run(ctx, r, run, procs):
    """V03: nothing of the bystander, no slot names."""
    out = r.result.stdout
    assert "PROBE bystander ENOENT" in out and "CGROUP no slot" in out, out

class OpenWatch:
    """Who opens some files while ward runs (U cases): fanotify FAN_OPEN
    marks on them, with FAN_REPORT_FID, so that the watch itself opens
    nothing (a FIFO or a device included). Root only; elsewhere it sees
    nothing. O_PATH opens are not opens to fanotify."""
    FAN_CLOEXEC, FAN_NONBLOCK, FAN_REPORT_FID = 0x1, 0x2, 0x200
    FAN_MARK_ADD, FAN_OPEN = 0x1, 0x20

    def __init__(self, paths):
        self.opens = []  # (pid, path)
        self.groups = []  # one fanotify group per file: it names the file
        if os.geteuid() != 0:
            return
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint,
                                       ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
        for p in paths:
            if not os.path.exists(p):
                continue
            fd = libc.fanotify_init(self.FAN_CLOEXEC | self.FAN_NONBLOCK |
                                    self.FAN_REPORT_FID, os.O_RDONLY)
            r = libc.fanotify_mark(fd, self.FAN_MARK_ADD, self.FAN_OPEN, -100,
                                   p.encode())
            assert fd >= 0 and r == 0, f"fanotify on {p}: {os.strerror(ctypes.get_errno())}"
            self.groups.append((fd, p))

    def close(self):
        """The opens seen, as (pid, path)."""
        for fd, path in self.groups:
            while True:
                try:
                    buf = os.read(fd, 65536)
                except BlockingIOError:
                    break
                at = 0
                while at + 24 <= len(buf):
                    event_len = int.from_bytes(buf[at:at + 4], "little")
                    pid = int.from_bytes(buf[at + 20:at + 24], "little", signed=True)
                    self.opens.append((pid, path))
                    at += max(event_len, 24)
            os.close(fd)
        self.groups = []
        return self.opens


U_WALL = 20  # seconds a U case may take; the old unwinder waited for ever


def _ward_watched(ctx, r, opts, script, argv, pass_fds):
    """U cases: ward run under a watch of who opens the secret, the device
    canary and /dev/zero, bounded in time (a hung ward is killed and the
    case fails)."""
    w = OpenWatch([r.secret, os.path.join(r.sdir, "dev"), "/dev/zero"])
    cmd = [wardtest.ward_bin(), "run", "--db", ctx.db] + opts + [script, "--"] + argv
    t0 = time.monotonic()
    p = wardtest.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, cwd=ctx.tmp, env=r.env)
    r.hung = False
    try:
        out, err = p.communicate(timeout=U_WALL + 40)
    except subprocess.TimeoutExpired:
        r.hung = True
        p.kill()
        out, err = p.communicate()
    r.elapsed = time.monotonic() - t0
    r.ward_pid = p.pid
    r.opens = w.close()
    res = wardtest.Result(p, out.decode(errors="replace"), err.decode(errors="replace"))
    return res


def unwinders_of(ward_pid):
    """Live unwinder helpers that ward ward_pid started (their argv says
    --ward=PID; a zombie left for init to reap is not alive)."""
    mark = f"--ward={ward_pid}".encode()
    return [p for p, cmd in wardtest.proc_files("cmdline", binary=True)
            if cmd.startswith(b"ward-unwinder\0") and mark in cmd and alive(p, None)]


def _unwind_safe(*more):
    """The U cases' common checks, then more."""
    def chk(ctx, r, run, procs):
        where = f"\n{r.result!r}"
        assert not r.hung, f"ward did not end (killed after {U_WALL + 40} s){where}"
        assert r.elapsed < U_WALL, f"ward took {r.elapsed:.1f} s{where}"
        by_ward = [o for o in r.opens if o[0] == r.ward_pid]
        assert not by_ward, f"ward itself opened {sorted(set(p for _, p in by_ward))}{where}"
        assert run["status"] == "ok", (run["status"], run["cause"])
        rows = ctx.events(run["id"], "decision='deny' and target=?", r.secret)
        assert rows and all(x["backtrace"] for x in rows), \
            f"a denial without its backtrace: {rows[:2]}{where}"
        assert wardtest.wait_until(lambda: not unwinders_of(r.ward_pid), 5), \
            f"unwinders outlived ward: {unwinders_of(r.ward_pid)}"
        for m in more:
            m(ctx, r, run, procs)
    chk.__doc__ = "U: ward ended in 20 s, opened none of the secret, the device canary, /dev/zero, recorded each denial with a backtrace, left no helper" + \
        "".join("; " + " ".join((m.__doc__ or "").split()) for m in more)
    return chk


def _stop_says(text):
    def chk(ctx, r, run, procs):
        rows = ctx.events(run["id"], "decision='deny' and target=?", r.secret)
        stops = [json.loads(x["backtrace"])[-1].get("stop", "") for x in rows]
        assert any(text in s for s in stops), f"no stop mark with {text!r}: {stops}"
    chk.__doc__ = f'a backtrace ends with a stop mark saying "{text}"'
    return chk


def _big_files(pol):
    pol["limits"]["fsize_mb"] = 4096


C = dict  # a case
# the U cases: a watch on ward's opens, a time bound (_unwind_safe)
U = dict(watch=True, during=_ward_watched, timeout=30)

CASES = [
    # ---- races: argument memory rewritten between ward's read and the kernel's
    C(id="R01", group="race", src="r01_thread_flip_open.c", race=True, decoys=True,
      what="sibling thread flips the openat path between a workdir file and the secret",
      expect="CONT", audit=[DENY_SECRET, NO_ALLOW_SECRET]),
    C(id="R02", group="race", src="r02_shared_memfd_flip.c", race=True, decoys=True,
      what="path in a MAP_SHARED memfd page rewritten by a forked sibling process",
      expect="CONT", audit=[DENY_SECRET, NO_ALLOW_SECRET]),
    C(id="R03", group="race", src="r03_proc_self_mem.c", race=True, decoys=True,
      what="rewrite the checked path through /proc/self/mem (ignores page protections)",
      expect="EACCES", audit=[ev("openat", target_suffix="/mem", errno=13)]),
    C(id="R04", group="race", src="r04_connect_sockaddr_flip.c", race=True, decoys=True,
      what="connect() sockaddr port flipped between the allowed decoy and the canary",
      expect="CONT", audit=[ev("connect", errno=111)]),
    C(id="R05", group="race", src="r05_sendmsg_name_flip.c", race=True, decoys=True,
      what="sendmsg() msg_name pointer flipped between the decoy and the canary",
      expect="CONT", audit=[ev("sendmsg", errno=111)]),
    C(id="R06", group="race", src="r06_execve_path_flip.c", race=True, decoys=True,
      what="execve path flipped between an allowed (missing) python3.99 and /bin/dash",
      expect="CONT|KILL", extra=_exec_check_if_killed),
    C(id="R07", group="race", src="r07_execve_argv_flip.c", race=True,
      decoys=True, exec_probe=True,
      what="argv of an allowed exec flipped by a parent thread: the record must be true",
      expect="CONT", extra=_argv_truthful),
    C(id="R08", group="race", src="r08_envp_preload_flip.c", race=True,
      decoys=True, exec_probe=True,
      what="an envp entry flipped to LD_PRELOAD=<workdir object> around an allowed exec",
      expect="CONT", audit=[ev("execve", decision="allow", target="{sdir}/exec_probe")],
      extra=_probes_ran),
    C(id="R09", group="race", src="r09_openat2_how_flip.c", race=True, decoys=True,
      what="openat2 open_how.flags flipped O_RDONLY -> O_WRONLY on a read-only file",
      expect="CONT", audit=[ev("openat2", target="{sdir}/decoy", errno=13)]),
    C(id="R10", group="race", src="r10_rename_dir_symlink.c", race=True, decoys=True, fs_race=True,
      what="workdir dir swapped with a symlink to the secret's dir (RENAME_EXCHANGE) during opens",
      expect="CONT", audit=[DENY_SECRET, NO_ALLOW_SECRET]),
    C(id="R11", group="race", src="r11_symlink_swap_last.c", race=True, decoys=True, fs_race=True,
      what="last component swapped between a file and a symlink to the secret",
      expect="CONT", audit=[DENY_SECRET, NO_ALLOW_SECRET]),
    C(id="R12", group="race", src="r12_signal_handler_flip.c", race=True, decoys=True,
      what="a SIGALRM handler flips the path being opened (interval timer storm)",
      expect="CONT", audit=[NO_ALLOW_SECRET]),
    C(id="R13", group="race", src="r13_private_file_map_flip.c", race=True, decoys=True,
      what="path in a read-only MAP_PRIVATE file mapping of a single-threaded victim, the file rewritten by a forked sibling",
      expect="CONT", audit=[DENY_SECRET, NO_ALLOW_SECRET]),

    C(id="R14", group="race", src="r14_vfork_env_private_flip.c", race=True,
      decoys=True, exec_probe=True,
      what="as R08 in the parent's private memory: a vfork child's environment stays in place only while nothing else can write it",
      expect="CONT", audit=[ev("execve", decision="allow", target="{sdir}/exec_probe")],
      extra=_probes_ran),
    C(id="R15", group="race", src="r15_vfork_env_shared_flip.c", race=True,
      decoys=True, exec_probe=True,
      what="a single-threaded parent's vfork children exec with an envp entry in a MAP_SHARED page a forked sibling flips to LD_PRELOAD",
      expect="CONT", audit=[ev("execve", decision="allow", target="{sdir}/exec_probe")],
      extra=_probes_ran),

    # ---- paths
    C(id="R16", group="race", src="r16_execveat_fd_flip.c", race=True, decoys=True,
      exec_probe=True,
      what="execveat(fd, \"\", AT_EMPTY_PATH) while a thread dup2s dash and an allowed "
           "program onto fd in turn: the exec event's check kills before dash runs",
      expect="CONT|KILL", extra=_fd_exec_check),
    C(id="P01", group="path", src="p01_dotdot.c", what="$WORKDIR/../../..<secret>",
      expect="EACCES", audit=[DENY_SECRET]),
    C(id="P02", group="path", src="p02_dirfd_root.c", what="openat(dirfd of /, relative path)",
      expect="EACCES", audit=[DENY_SECRET]),
    C(id="P03", group="path", src="p03_atfdcwd_high_bits.c",
      what="AT_FDCWD as 0x00000000ffffff9c with a relative ../ path",
      expect="EACCES", audit=[DENY_SECRET]),
    C(id="P04", group="path", src="p04_long_path.c", what="4000-byte path padded with /./",
      expect="EACCES|ENAMETOOLONG", audit=[ev("openat")]),
    C(id="P05", group="path", src="p05_symlink.c", what="workdir symlink to the secret",
      expect="EACCES", audit=[DENY_SECRET]),
    C(id="P06", group="path", src="p06_proc_self_root.c", what="/proc/self/root/<secret>",
      expect="ENOENT|EACCES", audit=[NO_ALLOW_SECRET],
      host_view=dict(expect="EACCES", audit=[DENY_SECRET])),
    C(id="P07", group="path", src="p07_opath_reopen.c",
      what="O_PATH fd on the secret, reopened through /proc/self/fd/N",
      expect="ENOENT|EACCES", audit=[NO_ALLOW_SECRET],
      host_view=dict(expect="EACCES", audit=[DENY_SECRET, NO_ALLOW_SECRET])),
    C(id="P08", group="path", src="p08_proc_1_root.c", what="/proc/1/root/<secret>",
      expect="EACCES|ENOENT", audit=[ev("openat")]),
    C(id="P09", group="path", src="p09_hardlink.c",
      what="hard link of the 0666 canary into the workdir, then write",
      expect="EACCES|EPERM", audit=[ev(("link", "linkat"))]),
    C(id="P10", group="path", src="p10_tmpfile_linkat.c",
      what="O_TMPFILE in the workdir, linkat into the secret's directory",
      expect="EACCES|ENOENT", audit=[ev("linkat")]),
    C(id="P11", group="path", src="p11_open_by_handle.c",
      what="name_to_handle_at + open_by_handle_at", expect="KILL", audit=floor_kill("name_to_handle_at")),
    C(id="P12", group="path", src="p12_mount_tmpfs.c", what="mount a tmpfs",
      expect="KILL", audit=floor_kill("mount")),
    C(id="P13", group="path", src="p13_fsopen.c", what="fsopen (new mount API)",
      expect="KILL", audit=floor_kill("fsopen")),
    C(id="P14", group="path", src="p14_unshare_userns.c",
      what="unshare(CLONE_NEWUSER|CLONE_NEWNS)", expect="KILL", audit=floor_kill("unshare")),
    C(id="P15", group="path", src="p15_chroot.c", what="chroot(.) then fchdir escape",
      expect="EPERM|ENOSYS", audit=[ev("chroot")]),
    C(id="P16", group="path", src="p16_mknod_mem.c", what="mknod char 1:1 (/dev/mem)",
      expect="EPERM|EACCES",
      audit=[ev(("mknod", "mknodat"), decision_in=("allow", "deny"), target="{wd}/mem")]),
    C(id="P17", group="path", src="p17_chmod_setuid_exec.c",
      what="chmod 4755 a workdir copy of a shell, exec it", expect="EACCES",
      audit=[ev("execve", target="{wd}/suid-sh", errno=13)]),
    C(id="P18", group="path", src="p18_creat_via_dangling.c",
      what="O_CREAT through a dangling workdir symlink to outside", expect="EACCES",
      audit=[ev("openat", target="{sdir}/marker", errno=13)]),
    C(id="P19", group="path", src="p19_truncate.c", what="truncate the canary by name",
      expect="EACCES", audit=[ev("truncate", target="{rw}")]),
    C(id="P20", group="path", src="p20_utimensat.c", what="utimensat on the canary",
      expect="EACCES", audit=[ev("utimensat", target="{rw}")]),
    C(id="P21", group="path", src="p21_setxattr.c", what="setxattr on the canary",
      expect="EACCES", audit=[ev("setxattr", target="{rw}")]),
    C(id="P22", group="path", src="p22_rename_out.c",
      what="rename the canary within its world-writable dir", expect="EACCES",
      audit=[ev("rename")]),
    C(id="P23", group="path", src="p23_unlink.c", what="unlink the canary",
      expect="EACCES", audit=[ev("unlink", target="{rw}")]),
    C(id="P24", group="path", src="p24_inotify.c",
      what="inotify watch on /root (secret-root denies even stat)",
      expect="EACCES", audit=[ev("inotify_add_watch", target="/root", errno=13)]),
    C(id="P25", group="path", src="p25_list_dir.c", what="list the secret's dir",
      expect="EACCES", audit=[ev("openat", target="{sdir}")]),
    C(id="P26", group="path", src="p26_proc_cwd_chain.c",
      what="workdir symlink to /var in the middle of the path", expect="ENOENT|EACCES",
      audit=[NO_ALLOW_SECRET], host_view=dict(expect="EACCES", audit=[DENY_SECRET])),

    # ---- exec and code loading
    C(id="E01", group="exec", src="e01_memfd_execveat.c",
      what="memfd copy of a shell + execveat(AT_EMPTY_PATH)", expect="EACCES|KILL",
      audit=[ev("execveat")]),
    C(id="E02", group="exec", src="e02_exec_workdir_copy.c",
      what="exec a workdir copy of a shell", expect="EACCES",
      audit=[ev("execve", target="{wd}/mysh", errno=13)]),
    C(id="E03", group="exec", src="e03_ldso_workdir.c",
      what="ld.so runs a workdir file", expect="EACCES", audit=[ev("execve", errno=13)]),
    C(id="E04", group="exec", src="e04_shebang_sh.c", what="#!/bin/sh script in the workdir",
      expect="EACCES", audit=[ev("execve", target="{wd}/script", errno=13)]),
    C(id="E05", group="exec", src="e05_shebang_python.c",
      what="#!/usr/bin/python3 script in the workdir (exec from the workdir)",
      expect="EACCES", audit=[ev("execve", target="{wd}/script.py", errno=13)]),
    C(id="E06", group="exec", src="e06_setuid_binary.c", what="exec setuid /usr/bin/passwd",
      expect="EACCES", audit=[ev("execve", errno=13)]),
    C(id="E07", group="exec", src="e07_ld_preload.c",
      what="allowed exec (uname) with LD_PRELOAD=<workdir object>", expect="CONT",
      audit=[ev("execve", decision="allow", target="/usr/bin/uname")]),
    C(id="E08", group="exec", src="e08_ld_audit.c",
      what="allowed exec (uname) with LD_AUDIT=<workdir object>", expect="CONT",
      audit=[ev("execve", decision="allow", target="/usr/bin/uname")]),
    C(id="E09", group="exec", src="e09_ptrace_traceme.c", what="ptrace(PTRACE_TRACEME)",
      expect="KILL", audit=floor_kill("ptrace")),
    C(id="E10", group="exec", src="e10_python_ctypes_open.py",
      what="Python ctypes raw syscall(openat) of the secret", expect="EACCES",
      audit=[DENY_SECRET]),
    C(id="E11", group="exec", src="e11_execveat_dirfd.c",
      what="execveat(dirfd of /bin, \"sh\")", expect="EACCES",
      audit=[ev("execveat", errno=13)]),
    C(id="E12", group="exec", src="e12_exec_proc_fd.c",
      what="exec /bin/dash through /proc/self/fd/N", expect="EACCES",
      audit=[ev("execve", errno=13)]),
    C(id="E13", group="exec", src="e13_personality.c",
      what="personality(READ_IMPLIES_EXEC)", expect="EPERM|ENOSYS",
      audit=[ev("personality")]),
    C(id="E14", group="exec", src="e14_vfork_denied_exec.c",
      what="vfork + execve of a denied program; the parent carries on", expect="EACCES",
      audit=[ev("execve", target_prefix="/usr/bin/dash", errno=13)]),
    C(id="E15", group="exec", src="e15_python_subprocess_sh.py",
      what="Python subprocess.run(['/bin/sh', ...])", expect="EACCES",
      audit=[ev("execve", errno=13)]),

    # ---- kernel interfaces that bypass the supervisor
    C(id="K01", group="kernel", src="k01_io_uring_setup.c", what="io_uring_setup",
      expect="KILL", audit=floor_kill("io_uring_setup")),
    C(id="K02", group="kernel", src="k02_io_uring_register.c", what="io_uring_register",
      expect="KILL", audit=floor_kill("io_uring_register")),
    C(id="K03", group="kernel", src="k03_int80_open.c", probe=_probe_int80,
      what="int $0x80 open (i386 nr 5) of the secret", expect="KILL", audit=floor_kill("i386")),
    C(id="K04", group="kernel", src="k04_int80_exit.c", probe=_probe_int80,
      what="int $0x80 exit (i386 nr 1)", expect="KILL", audit=floor_kill("i386")),
    C(id="K05", group="kernel", src="k05_x32_openat.c", what="x32 openat (nr | 0x40000000)",
      expect="KILL", audit=floor_kill(None)),
    C(id="K06", group="kernel", src="k06_jit_syscall.c",
      what="syscall instruction from a page the code wrote", expect="EACCES",
      audit=[DENY_SECRET]),
    C(id="K07", group="kernel", src="k07_bpf.c", what="bpf(BPF_PROG_LOAD)",
      expect="KILL", audit=floor_kill("bpf")),
    C(id="K08", group="kernel", src="k08_perf_event_open.c", what="perf_event_open",
      expect="KILL", audit=floor_kill("perf_event_open")),
    C(id="K09", group="kernel", src="k09_userfaultfd.c", what="userfaultfd",
      expect="KILL", audit=floor_kill("userfaultfd")),
    C(id="K10", group="kernel", src="k10_keyctl.c", what="keyctl", expect="KILL",
      audit=floor_kill("keyctl")),
    C(id="K11", group="kernel", src="k11_add_key.c", what="add_key", expect="KILL",
      audit=floor_kill("add_key")),
    C(id="K12", group="kernel", src="k12_process_vm_writev.c",
      what="process_vm_writev into the process outside", expect="KILL", audit=floor_kill("process_vm_writev")),
    C(id="K13", group="kernel", src="k13_pidfd_getfd.c", what="pidfd_open + pidfd_getfd",
      expect="KILL", audit=floor_kill("pidfd_getfd")),
    C(id="K14", group="kernel", src="k14_clone3_newuser.c", what="clone3 with CLONE_NEWUSER",
      expect="ENOSYS", audit=[RUN_OK]),
    C(id="K15", group="kernel", src="k15_clone_untraced.c",
      what="clone(CLONE_UNTRACED), the child opens the secret", expect="KILL",
      audit=[ev("clone", decision="kill")]),
    C(id="K16", group="kernel", src="k16_clone_newns.c",
      what="clone(CLONE_NEWUSER|CLONE_NEWNS)", expect="KILL",
      audit=[ev("clone", decision="kill")]),
    C(id="K17", group="kernel", src="k17_prctl_ptracer.c",
      what="prctl(PR_SET_PTRACER, ANY)", expect="EPERM", audit=[RUN_OK]),
    C(id="K18", group="kernel", src="k18_prctl_dumpable.c", what="prctl(PR_SET_DUMPABLE, 0)",
      expect="EPERM", audit=[RUN_OK]),
    C(id="K19", group="kernel", src="k19_iopl.c", what="iopl(3)", expect="KILL",
      audit=floor_kill("iopl")),
    C(id="K20", group="kernel", src="k20_modify_ldt.c", what="modify_ldt", expect="KILL",
      audit=floor_kill("modify_ldt")),
    C(id="K21", group="kernel", src="k21_init_module.c", what="init_module", expect="KILL",
      audit=floor_kill("init_module")),
    C(id="K22", group="kernel", src="k22_kexec_load.c", what="kexec_load", expect="KILL",
      audit=floor_kill("kexec_load")),
    C(id="K23", group="kernel", src="k23_ptrace_attach.c",
      what="ptrace(PTRACE_ATTACH) the process outside", expect="KILL", audit=floor_kill("ptrace")),
    C(id="K24", group="kernel", src="k24_setns.c", what="setns into init's net namespace",
      expect="KILL", audit=floor_kill("setns")),

    # ---- attacks on the supervisor
    C(id="T01", group="supervisor", src="t01_seccomp_user_notif.c",
      what="own seccomp filter with a USER_NOTIF listener on openat", expect="KILL",
      audit=floor_kill("seccomp")),
    C(id="T02", group="supervisor", src="t02_prctl_set_seccomp.c",
      what="prctl(PR_SET_SECCOMP) filter", expect="KILL", audit=floor_kill("prctl")),
    C(id="T03", group="supervisor", src="t03_kill_supervisor.c",
      what="kill(ward, SIGKILL)", expect="EPERM|ESRCH", audit=[ev("kill"), RUN_OK]),
    C(id="T04", group="supervisor", src="t04_stop_supervisor.c",
      what="kill(ward, SIGSTOP)", expect="EPERM|ESRCH", audit=[ev("kill"), RUN_OK]),
    C(id="T05", group="supervisor", src="t05_kill_all.c", what="kill(-1, SIGKILL)",
      expect="EPERM|ESRCH|CONT", audit=[ev("kill", decision_in=("deny", "allow"))]),
    C(id="T06", group="supervisor", src="t06_pidfd_signal.c",
      what="pidfd_open + pidfd_send_signal at the process outside",
      expect="EPERM|ESRCH|EACCES", audit=[ev("pidfd_open")]),
    C(id="T07", group="supervisor", src="t07_ward_killed.c", during=_ward_killed,
      what="ward SIGKILLed while the code and its child make trapped calls",
      expect="KILL"),
    C(id="T08", group="supervisor", src="t08_fork_bomb.c", what="fork bomb",
      expect="KILL", audit=[("run", {"status": "limit"})]),
    C(id="T09", group="supervisor", src="t09_thread_bomb.c",
      what="1000 threads making trapped calls", expect="CONT|KILL"),
    # a storm's progress depends on the scheduler: minutes under ASan on a
    # busy machine (one full `make asan` timed out at 60 s; alone: 10 s)
    C(id="T10", group="supervisor", src="t10_stop_cont_storm.c", timeout=180,
      what="SIGSTOP/SIGCONT storm during 2,000 trapped opens", expect="CONT",
      extra=_denied_all(100), audit=[DENY_SECRET, RUN_OK]),
    C(id="T11", group="supervisor", src="t11_restart_interrupt.c",
      what="SA_RESTART signal storm during denied opens", expect="EACCES",
      audit=[DENY_SECRET, RUN_OK]),

    # ---- ward's egress proxy (net.allow_domains)
    C(id="W01", group="proxy", src="w01_proxy_host_smuggle.py", proxy="private",
      what="CONNECT or absolute URI names the allowed host, Host (or user info, or a "
      "second Host) the refused one", expect="REFUSED",
      audit=[ev("proxy", rule="net.proxy-request", errno=111)]),
    C(id="W02", group="proxy", src="w02_proxy_dns_rebinding.py", proxy="strict",
      what="allowed names that resolve to 127.0.0.1, ::ffff:127.0.0.1 and 0.0.0.0 "
      "(the canary's port)", expect="REFUSED",
      audit=[ev("proxy", rule="net.proxy-address", raw="rebind.test:{port}"),
             ev("proxy", rule="net.proxy-address", raw="rebind6.test:{port}"),
             ev("proxy", rule="net.proxy-address", raw="rebind0.test:{port}")]),
    C(id="W03", group="proxy", src="w03_proxy_request_splitting.py", proxy="private",
      what="CR LF, bare LF or CR, folding, chunked or double Content-Length to split "
      "a second request for the refused host", expect="REFUSED",
      audit=[ev("proxy", rule="net.proxy-request")]),
    C(id="W04", group="proxy", src="w04_proxy_pipelined.py", proxy="private",
      what="two requests in one packet, the second for the refused host; CONNECT "
      "followed by plain HTTP for it", expect="CONT",
      audit=[ev("proxy", decision="allow", raw="allowed.test:{dport}"),
             ev("proxy", rule="net.proxy-sni")]),

    # ---- network and IPC
    C(id="N01", group="net", src="n01_v4mapped_connect.c",
      what="connect to ::ffff:127.0.0.1:<canary>", expect="ECONNREFUSED",
      audit=[ev("connect", errno=111)]),
    C(id="N02", group="net", src="n02_tcp_connect.c", what="connect to 127.0.0.1:<canary>",
      expect="ECONNREFUSED", audit=[ev("connect", errno=111)]),
    C(id="N03", group="net", src="n03_udp_sendto.c", what="UDP sendto without connect",
      expect="ECONNREFUSED", audit=[ev("sendto", errno=111)]),
    C(id="N04", group="net", src="n04_sendmmsg.c",
      what="sendmmsg whose second message names the canary", expect="ECONNREFUSED",
      audit=[ev("sendmmsg")]),
    C(id="N05", group="net", src="n05_af_packet.c", what="socket(AF_PACKET)",
      expect="EAFNOSUPPORT", audit=[ev("socket")]),
    C(id="N06", group="net", src="n06_af_netlink.c", what="socket(AF_NETLINK, ROUTE)",
      expect="EAFNOSUPPORT", audit=[ev("socket")]),
    C(id="N07", group="net", src="n07_af_alg.c", what="socket(AF_ALG)",
      expect="EAFNOSUPPORT", audit=[ev("socket")]),
    C(id="N08", group="net", src="n08_af_vsock.c", what="socket(AF_VSOCK)",
      expect="EAFNOSUPPORT", audit=[ev("socket")]),
    C(id="N09", group="net", src="n09_abstract_unix.c",
      what="connect to a host abstract unix socket", expect="ECONNREFUSED",
      audit=[ev("connect")]),
    C(id="N10", group="net", src="n10_unix_path_outside.c",
      what="connect to a unix socket outside the workdir",
      expect="ENOENT|ECONNREFUSED|EACCES", audit=[ev("connect", decision_in=("allow", "deny"))],
      host_view=dict(expect="ECONNREFUSED|EACCES", audit=[ev("connect")])),
    C(id="N11", group="net", src="n11_unix_symlink.c",
      what="the outside unix socket through a workdir symlink",
      expect="ENOENT|ECONNREFUSED|EACCES",
      audit=[ev("connect", decision_in=("allow", "deny"))],
      host_view=dict(expect="ECONNREFUSED|EACCES", audit=[ev("connect")])),
    C(id="N12", group="net", src="n12_inherited_fds.c", inherit=True,
      what="scan fds 3..1023 for anything inherited (ward started holding the secret)",
      expect="EBADF", extra=_no_leaked_fd, audit=[RUN_OK]),
    C(id="N13", group="net", src="n13_tiocsti.c",
      what="ioctl TIOCSTI, plain and with high bits set", expect="EPERM",
      extra=_plain_tiocsti, audit=[RUN_OK]),
    C(id="N14", group="net", src="n14_bind_listen.c", what="bind a loopback port",
      expect="EACCES", audit=[ev("bind", errno=13)]),
    C(id="N15", group="net", src="n15_proc_sysrq.c",
      what="open /proc/sys/kernel/core_pattern for writing", expect="EACCES",
      audit=[ev("openat", target="/proc/sys/kernel/core_pattern")]),
    C(id="N16", group="net", src="n16_proc_kallsyms.c", what="read /proc/kallsyms",
      expect="EACCES", audit=[ev("openat", target="/proc/kallsyms", errno=13)]),
    C(id="N17", group="net", src="n17_proc_self_exe_write.c",
      what="open /proc/self/exe for writing", expect="EACCES|ETXTBSY",
      audit=[ev("openat")]),

    # ---- resources
    C(id="X01", group="resource", src="x01_memory_bomb.c", opts=["--memory", "256M"],
      what="touch memory until it fails (--memory 256M)", expect="ENOMEM|KILL"),
    C(id="X02", group="resource", src="x02_disk_fill.c", policy_patch=_small_fsize,
      what="write until the file size limit (64 MiB here)", expect="EFBIG",
      audit=[RUN_OK]),
    C(id="X03", group="resource", src="x03_output_flood.c", opts=["--max-output", "1M"],
      what="64 MiB on stdout (--max-output 1M)", expect="CONT", extra=_truncated,
      audit=[RUN_OK]),
    C(id="X04", group="resource", src="x04_record_flood.c",
      opts=["--max-events", "20000"],
      what="4 threads flood ward's record with trapped calls (--max-events 20000)",
      expect="KILL", extra=_record_bounded,
      audit=[ev("openat", decision="kill", rule="limits.events"),
             ("run", {"status": "limit"})]),
    C(id="X05", group="resource", src="x05_workdir_fill.c", opts=["--max-disk", "96M"],
      temp_workdir=True, probe=_probe_root,
      what="fill the workdir file after file, each under the file size limit "
           "(--max-disk 96M; the attack stops itself at 256 MiB)", expect="ENOSPC",
      extra=_disk_bounded, audit=[RUN_OK]),
    # ---- the view: what the policy does not show does not exist
    C(id="V01", group="view", src="v01_existence_probes.c",
      what="stat, lstat, statx, access, faccessat2, readlink the secret, list its dir",
      expect="ENOENT", extra=_all_enoent),
    C(id="V02", group="view", src="v02_host_paths.c",
      what="find the workdir's host path: mount tables, environ, maps, cwd",
      expect="EACCES", extra=_no_host_path),
    C(id="V03", group="view", src="v03_other_runs.c",
      what="other runs and the host: /sys/fs/cgroup, a host process's /proc, slot names",
      expect="EACCES|ENOENT", extra=_no_other_run),


    # ---- the unwinder: files the code maps, met by ward's backtraces
    C(id="U01", group="unwind", src="u01_fifo_mapping.c", **U,
      what="the mapped file's name replaced by a FIFO (the plain name)",
      expect="EACCES", audit=[DENY_SECRET], extra=_unwind_safe()),
    C(id="U02", group="unwind", src="u02_fifo_deleted_name.c", **U,
      what="a FIFO named as the maps line shows the deleted mapped file (\"lib.so (deleted)\")",
      expect="EACCES", audit=[DENY_SECRET], extra=_unwind_safe()),
    C(id="U03", group="unwind", src="u03_symlink_device.c", **U,
      what="the mapped file's names made symlinks to a device node",
      expect="EACCES", audit=[DENY_SECRET], extra=_unwind_safe()),
    C(id="U04", group="unwind", src="u04_symlink_secret.c", **U,
      what="the mapped file's names made symlinks to the secret",
      expect="EACCES", audit=[DENY_SECRET], extra=_unwind_safe()),
    C(id="U05", group="unwind", src="u05_device_mapping.c", **U,
      what="a denial \"returning\" into a mapping of /dev/zero",
      expect="EACCES", audit=[DENY_SECRET],
      extra=_unwind_safe(_stop_says("is not a regular file (a character device)"))),
    C(id="U06", group="unwind", src="u06_elf_phoff.c", **U,
      what="an executable ELF mapping whose program headers lie far outside the file",
      expect="EACCES", audit=[DENY_SECRET],
      extra=_unwind_safe(_stop_says("is no usable ELF file"))),
    C(id="U07", group="unwind", src="u07_elf_truncated.c", **U,
      what="a shared object cut to 2 KiB, mapped executable past its end",
      expect="EACCES", audit=[DENY_SECRET], extra=_unwind_safe()),
    C(id="U08", group="unwind", src="u08_eh_frame_hdr.c", **U,
      what="an .eh_frame_hdr outside the file with a table of 2^31 entries",
      expect="EACCES", audit=[DENY_SECRET], extra=_unwind_safe()),
    C(id="U09", group="unwind", src="u09_eh_frame.c", **U,
      what="an FDE 1 GiB away; an FDE whose CIE pointer points at itself",
      expect="EACCES", audit=[DENY_SECRET], extra=_unwind_safe()),
    C(id="U10", group="unwind", src="u10_sparse_huge.c", policy_patch=_big_files, **U,
      what="a 3 GiB sparse file with an ELF at its start, mapped executable",
      expect="EACCES", audit=[DENY_SECRET],
      extra=_unwind_safe(_stop_says("is larger than 1 GiB"))),
    C(id="U11", group="unwind", src="u11_remap_race.c", **U,
      what="a thread swaps the file mapped at an address (a valid ELF, U06's) during 300 denials from it",
      expect="EACCES", audit=[DENY_SECRET], extra=_unwind_safe(_denied_all(300))),
    C(id="U12", group="unwind", src="u12_lease.c", **U,
      what="a write lease on the mapped file, its SIGIO ignored",
      expect="EACCES", audit=[DENY_SECRET],
      extra=_unwind_safe(_stop_says("a lease"))),
    C(id="U13", group="unwind", src="u13_python_named.c", **U,
      what="an ELF named python3.99 mapped below the interpreter, its names then symlinks to the secret",
      expect="EACCES", audit=[DENY_SECRET], extra=_unwind_safe()),
]


def case_limit(case):
    """The case's --timeout. Races make 100,000 attempts: minutes on a
    loaded 2-CPU machine; the exec races make 100,000 execs, and a VM here
    took ~1 ms per vfork+exec of the static probe natively (190 s for R08
    under ward, alone)."""
    if "timeout" in case:
        return case["timeout"]
    if case.get("exec_probe"):
        return 600
    return 240 if case.get("race") else 60


def _make(case):
    def t(ctx):
        run_case(ctx, case)
    t.__name__ = "test_" + case["id"]
    t.__doc__ = case["what"]
    t.time_limit = max(240, case_limit(case) + 90)  # tests/run.py
    return t


def _host_view_twin(case):
    """A case whose secret the default view hides (the attack gets ENOENT
    before ward is asked anything) also runs with "view": "host": the
    secret is there, and the supervisor must stand in the way alone."""
    twin = dict(case, id=case["id"] + "h", view="host",
                what=case["what"] + " (the host's view)")
    twin.update(case["host_view"])
    del twin["host_view"]
    return twin


CASES[:] = [c for case in CASES
            for c in ([case, _host_view_twin(case)] if case.get("host_view") else [case])]
# Races run in the host's view, as they run without Landlock: the secret
# must be there to race for, so that what holds is ward's own copies.
for _c in CASES:
    if _c.get("race"):
        _c.setdefault("view", "host")
for _c in CASES:
    globals()["test_" + _c["id"]] = _make(_c)


# ---------------------------------------------------------------- the README

GROUPS = {
    "race": "Races: argument memory changed between ward's read and the kernel's",
    "view": "The view: what the policy does not show does not exist",
    "path": "Paths and the file system",
    "exec": "Exec and code loading",
    "kernel": "Kernel interfaces that bypass or attack the supervisor",
    "supervisor": "Attacks on the supervisor",
    "net": "Network, IPC and /proc",
    "proxy": "Ward's egress proxy (net.allow_domains)",
    "resource": "Resources",
    "unwind": "Backtraces: files the code maps, met by ward's unwinder",
}


def _audit_text(c):
    out = []
    for a in c.get("audit", []):
        if a[0] == "event":
            d = dict(a[1])
            words = [d.pop("syscall", None) or "/".join(d.pop("syscall_in", ()))
                     or "(any call)"]
            if "decision" in d:
                words.append(d.pop("decision"))
            if "decision_in" in d:
                words.append("/".join(d.pop("decision_in")))
            words += [f"{k}={v}" for k, v in d.items()]
            out.append("events: " + " ".join(str(w) for w in words))
        elif a[0] == "signal":
            out.append(f"processes: signal={a[1]}")
        elif a[0] == "run":
            out.append("runs: " + ", ".join(f"{k}={v}" for k, v in a[1].items()))
        elif a[0] == "no-allow":
            out.append(f"no allowed {a[1]} of {a[2]}")
    if c.get("extra"):
        out.append(" ".join((c["extra"].__doc__ or c["extra"].__name__).split()))
    return "; ".join(out).replace("|", "\\|") or "(canaries only)"


def table():
    """The case tables of tests/escapes/README.md."""
    lines, group = [], None
    for c in CASES:
        if c["group"] != group:
            group = c["group"]
            lines += ["", f"### {GROUPS[group]}", "",
                      "| id | file | attack | expected | audit row |",
                      "|---|---|---|---|---|"]
        exp = " or ".join(x if x in ("KILL", "CONT") else "DENY:" + x
                          for x in c["expect"].split("|"))
        n = (f" ({c['race_n']} execs)" if c.get("race_n") else
             " (100,000 attempts)" if c.get("race") else "")
        what = c["what"].replace("|", "\\|")
        lines.append(f"| {c['id']} | `{c['src']}` | {what}{n} | {exp} | {_audit_text(c)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
