"""Helpers for ward's integration tests (tests/run.py runs them).

Each test function gets a Ctx: a fresh temporary directory (removed after
the test), a database path inside it, and helpers to run ward and read the
record. Nothing here depends on PATH: interpreters are absolute.
"""
import json
import os
import signal
import socket
import sqlite3
import subprocess
import threading
import time

PYTHON = "/usr/bin/python3"
NODE = "/usr/bin/node"
SH = "/bin/sh"

_children = []


class Skip(Exception):
    pass


def ward_bin():
    return os.environ.get("WARD_BIN") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build", "ward")


def hooks_bin():
    """build/ward-test-hooks: ward with the switches only its tests use
    (-DWARD_TEST_HOOKS, e.g. WARD_TEST_SUPERVISOR_FS_OFF); build/ward has
    none of them."""
    p = os.path.join(os.path.dirname(ward_bin()), "ward-test-hooks")
    assert os.access(p, os.X_OK), f"{p}: no test-hooks build (make builds it)"
    return p


def bin_for(env):
    """The ward to run with env: build/ward-test-hooks when env sets a
    TEST ONLY switch (WARD_TEST_*: build/ward reads none), else build/ward."""
    if env and any(k.startswith("WARD_TEST_") for k in env):
        return hooks_bin()
    return ward_bin()


def native_env(workdir):
    """The environment ward gives the code, for native comparison runs."""
    return {"HOME": workdir, "TMPDIR": os.path.join(workdir, "tmp"),
            "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


class Result:
    def __init__(self, proc, stdout, stderr):
        self.code = proc.returncode
        self.stdout = stdout
        self.stderr = stderr

    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        return f"<exit {self.code} stdout={self.stdout[-600:]!r} stderr={self.stderr[-1500:]!r}>"


class Ctx:
    def __init__(self, tmp):
        self.tmp = tmp
        self.db = os.path.join(tmp, "audit.db")

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def write(self, name, text, mode=0o644):
        p = self.path(name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, mode)
        return p

    def ward(self, *args, stdin=None, timeout=120, env=None, db=True, text=True,
             binary=None):
        """Run `ward ARGS` (with --db for run/runs/show unless db=False),
        or binary ARGS (another build of ward; by default the test-hooks
        build when env sets a WARD_TEST_* switch)."""
        argv = [binary or bin_for(env)] + list(args)
        if db and len(args) > 0 and args[0] in ("run", "runs", "show"):
            argv[2:2] = ["--db", self.db]
        e = dict(os.environ) if env is None else env
        p = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout,
                           env=e, text=text, cwd=self.tmp)
        return Result(p, p.stdout, p.stderr)

    def run(self, code, *opts, lang=None, **kw):
        """ward run [opts] -c CODE."""
        args = ["run"] + list(opts)
        if lang:
            args += ["--lang", lang]
        return self.ward(*(args + ["-c", code]), **kw)

    def run_json(self, code, *opts, **kw):
        r = self.run(code, "--json", *opts, **kw)
        try:
            return r, r.json()
        except ValueError:
            raise AssertionError(f"--json did not print JSON: {r}")

    def native(self, argv, workdir=None, timeout=120):
        wd = workdir or self.path("native")
        os.makedirs(os.path.join(wd, "tmp"), exist_ok=True)
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           env=native_env(wd), cwd=wd, stdin=subprocess.DEVNULL)
        return Result(p, p.stdout, p.stderr)

    # ---- the record ----
    def sql(self, q, *params):
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            con.row_factory = sqlite3.Row
            return [dict(r) for r in con.execute(q, params)]
        finally:
            con.close()

    def last_run(self):
        rows = self.sql("select * from runs order by started_ns desc limit 1")
        assert rows, "no run recorded"
        return rows[0]

    def host_workdir(self, run=None):
        """The host's directory that was the run's workdir (runs.workdir is
        where the code saw it: /home/user in the run's own file tree)."""
        return host_workdir(run or self.last_run())

    def events(self, run_id, where="1", *params):
        return self.sql(f"select * from events where run_id=? and ({where}) order by seq",
                        run_id, *params)

    def denials(self, run_id):
        return self.events(run_id, "decision != 'allow'")


HOME = "/home/user"  # where a run shows the code its workdir


def host_workdir(run):
    """The host path of run's workdir, from its "workdir" layer."""
    for l in json.loads(run["layers"] or "[]"):
        if l["name"] == "workdir":
            return l["detail"].split(" of the host,", 1)[0]
    raise AssertionError(f"run {run['id']} has no workdir layer")


def listener(host="127.0.0.1"):
    """A loopback TCP listener that records whether anyone connected."""
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, 0))
    s.listen(8)
    s.settimeout(0.2)
    state = {"accepted": 0, "stop": False}

    def loop():
        while not state["stop"]:
            try:
                c, _ = s.accept()
                state["accepted"] += 1
                c.close()
            except OSError:
                pass
        s.close()
    t = threading.Thread(target=loop, daemon=True)
    t.start()

    def stop():
        state["stop"] = True
        t.join(2)
    return s.getsockname()[1], state, stop


def spawn(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    _children.append(p)
    return p


def proc_files(name, binary=False):
    """(pid, contents) of /proc/PID/name for every process whose file could
    be read."""
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/{name}", "rb" if binary else "r") as f:
                yield int(d), f.read()
        except OSError:
            pass


def pids_matching(marker):
    """pids of processes whose command line contains marker."""
    return [p for p, cmd in proc_files("cmdline", binary=True)
            if marker.encode() in cmd and p != os.getpid()]


def profile_with(ctx, name, **limits):
    """A policy file: the shipped profile name with these limits changed."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles", name + ".json")) as f:
        pol = json.load(f)
    pol["limits"].update(limits)
    path = os.path.join(ctx.tmp, "policy-%s.json" % "-".join(limits))
    with open(path, "w") as f:
        json.dump(pol, f)
    return path


def host_view_policy(ctx, name="default", **changes):
    """A policy file: the shipped profile with "view": "host" (the whole
    host read-only, as ward showed it before the policy's view), so that a
    test can show what another layer (Landlock, the supervisor alone) does
    about a file that exists inside."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "profiles", name + ".json")) as f:
        pol = json.load(f)
    pol["view"] = "host"
    pol["name"] = name + "-host-view"
    pol.update(changes)
    path = os.path.join(ctx.tmp, "policy-%s-host-view.json" % name)
    with open(path, "w") as f:
        json.dump(pol, f)
    return path


def fd_holders(path):
    """pids of processes that hold the file at path open (by inode: a
    file opened before it got its name, like ward's workdir locks, shows
    another name in /proc)."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{d}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                f = os.stat(f"/proc/{d}/fd/{fd}")
            except OSError:
                continue
            if (f.st_dev, f.st_ino) == (st.st_dev, st.st_ino):
                out.append(int(d))
                break
    return out


def descends(pid, root):
    """Whether pid is root or a descendant of it (by /proc's ppid)."""
    for _ in range(64):
        if pid == root:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid <= 1:
            return False
    return False


def quota_holders(mount_point):
    """pids of processes that see a workdir quota (ward's tmpfs) mounted at
    mount_point, in whatever mount namespace they are."""
    return [p for p, info in proc_files("mountinfo")
            if any(len(l.split()) > 4 and l.split()[4] == mount_point
                   and " ward-workdir " in l for l in info.splitlines())]


def ward_as_nobody(ctx, *args):
    """Run `ward ARGS` as uid/gid 65534 with HOME in the test's directory
    (its database there: pass --db os.path.join(home, ...)). Returns
    (CompletedProcess, home). Skips unless root with setpriv."""
    import shutil
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin")
    if os.geteuid() != 0 or not setpriv:
        raise Skip("needs root (to become an ordinary user) and setpriv")
    home = ctx.path("home")
    os.makedirs(home, exist_ok=True)
    os.chown(home, 65534, 65534)
    os.chmod(ctx.tmp, 0o755)
    argv = [setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups",
            "env", "HOME=" + home, ward_bin()] + [a(home) if callable(a) else a for a in args]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=home)
    return p, home


def wait_until(pred, timeout=10.0, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


def cleanup_workdirs(ctx):
    """Temporary workdirs of runs whose ward was killed (it could not remove
    them itself)."""
    import shutil
    if not os.path.exists(ctx.db):
        return
    try:
        rows = ctx.sql("select id, workdir, layers from runs")
    except Exception:
        return
    for r in rows:
        try:
            wd = host_workdir(r)  # runs.workdir is where the code saw it
        except (AssertionError, ValueError, TypeError):
            wd = r.get("workdir") or ""
        if wd.startswith("/tmp/ward-") and os.path.isdir(wd):
            shutil.rmtree(wd, ignore_errors=True)
        if wd.startswith("/tmp/ward-") and os.path.exists(wd + ".lock"):
            os.unlink(wd + ".lock")


def cleanup_processes():
    while _children:
        p = _children.pop()
        if p.poll() is None:
            p.kill()
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass


def require(path):
    if not os.path.exists(path):
        raise Skip(f"{path} is not installed")
