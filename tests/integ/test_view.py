"""The run's file tree is the policy's view (tracer/view.c): what the policy
does not show does not exist inside, even where ward traps nothing (stat,
access, readlink, listing); the workdir is /home/user and no host path of
it reaches the code; nothing of the host's /proc, /sys/fs/cgroup, /home or
of another run shows; "view": "host" shows the host read-only (audit
mode's default) and still hides ward's own files."""
import json
import os
import shutil
import subprocess
import tempfile
import time

import wardtest
from wardtest import HOME, Skip

PROFILES = os.path.join(os.path.dirname(__file__), "..", "..", "profiles")


def profile(name="default"):
    with open(os.path.join(PROFILES, name + ".json")) as f:
        return json.load(f)


def write_policy(ctx, pol, name="policy.json"):
    path = ctx.path(name)
    with open(path, "w") as f:
        json.dump(pol, f)
    return path


# Probes every way of learning that a path exists, trapped or not; prints
# one line per path: "PATH stat=E lstat=E access=E readlink=E list=E
# open=E" with E an errno name ("ok" when it worked).
PROBE = r'''import errno, os, sys
def e(f):
    try:
        f()
        return "ok"
    except OSError as x:
        return errno.errorcode[x.errno]
for p in sys.argv[1:]:
    r = {"stat": e(lambda: os.stat(p)), "lstat": e(lambda: os.lstat(p)),
         "access": e(lambda: os.access(p, os.F_OK) or (_ for _ in ()).throw(
             FileNotFoundError(errno.ENOENT, p))),
         "readlink": e(lambda: os.readlink(p)),
         "list": e(lambda: os.listdir(p)),
         "open": e(lambda: open(p, "rb").close())}
    d = os.path.dirname(p)
    try:
        listed = os.path.basename(p) in os.listdir(d)
    except OSError:
        listed = False
    print(p, " ".join(f"{k}={v}" for k, v in r.items()), "listed=%s" % listed)
'''


def probe(ctx, paths, *opts):
    script = ctx.write("probe.py", PROBE)
    r = ctx.ward("run", *opts, script, "--", *paths)
    assert r.code == 0, r
    out = {}
    for line in r.stdout.splitlines():
        p, rest = line.split(" ", 1)
        out[p] = dict(kv.split("=") for kv in rest.split())
    assert sorted(out) == sorted(paths), (out, paths)
    return out


HIDDEN = ["/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh", "/root", "/root/.ssh",
          "/root/.bashrc", "/var/tmp", "/var/log", "/sys/fs/cgroup", "/boot", "/srv"]


def _absent(row):
    """Nothing but ENOENT (or the policy's EACCES for an open: listing a
    directory opens it)."""
    return (all(row[k] == "ENOENT" for k in ("stat", "lstat", "access", "readlink"))
            and row["open"] in ("ENOENT", "EACCES") and row["list"] in ("ENOENT", "EACCES")
            and row["listed"] == "False")


def test_what_the_policy_does_not_show_does_not_exist(ctx):
    for trap_stat in (False, True):
        pol = profile()
        pol["trap_stat"] = trap_stat
        pol["name"] = "default-trap-stat-%s" % trap_stat
        pf = write_policy(ctx, pol, "p%d.json" % trap_stat)
        got = probe(ctx, HIDDEN + ["/etc/passwd", "/usr/bin/python3"], "--policy", pf)
        for p in HIDDEN:
            if os.path.lexists(p):  # only what the host has proves anything
                assert _absent(got[p]), (trap_stat, p, got[p])
        # what the policy shows is there
        assert got["/etc/passwd"]["stat"] == "ok" and got["/etc/passwd"]["open"] == "ok", got
        assert got["/usr/bin/python3"]["stat"] == "ok", got
        run = ctx.last_run()
        # an open of what is not shown is still decided and recorded
        rows = ctx.events(run["id"], "syscall like 'open%' and target = '/etc/shadow'")
        assert rows and rows[0]["decision"] == "deny" and rows[0]["rule"] == "secret-shadow", rows
        if not trap_stat:
            # stat is not trapped: nothing recorded, and nothing learned
            assert not ctx.events(run["id"], "syscall in ('newfstatat', 'statx') and "
                                             "target = '/etc/shadow'")


def test_other_users_files_do_not_exist(ctx):
    if os.geteuid() != 0:
        raise Skip("makes a directory in /home: root only")
    d = tempfile.mkdtemp(prefix="ward-view-", dir="/home")
    try:
        with open(os.path.join(d, "notes"), "w") as f:
            f.write("another user's")
        got = probe(ctx, [d, os.path.join(d, "notes"), "/home"])
        assert _absent(got[d]) and _absent(got[os.path.join(d, "notes")]), got
        # /home holds only the workdir
        r = ctx.run(f"import os; print(os.path.isdir('/home/user'), os.path.exists({d!r}))")
        assert r.code == 0 and r.stdout == "True False\n", r
    finally:
        shutil.rmtree(d)


def test_a_deny_inside_a_shown_tree_takes_it_out(ctx):
    """A deny-read rule below a tree the policy shows: the tree is shown
    without it (ENOENT), its siblings are there."""
    base = tempfile.mkdtemp(prefix="ward-view-", dir="/var/tmp")
    try:
        os.chmod(base, 0o755)
        for name in ("public", "private"):
            os.mkdir(os.path.join(base, name))
            with open(os.path.join(base, name, "f"), "w") as f:
                f.write(name)
            os.chmod(os.path.join(base, name, "f"), 0o644)
        os.symlink("public/f", os.path.join(base, "link"))
        pol = profile()
        pol["fs"].insert(0, {"id": "base", "path": base, "allow": ["read", "stat"]})
        pol["fs"].insert(0, {"id": "no-private", "path": base + "/private",
                             "deny": ["read", "write", "stat"]})
        pf = write_policy(ctx, pol)
        got = probe(ctx, [base + "/private", base + "/private/f", base + "/public/f",
                          base + "/link"], "--policy", pf)
        assert _absent(got[base + "/private"]) and _absent(got[base + "/private/f"]), got
        assert got[base + "/public/f"]["open"] == "ok", got
        assert got[base + "/link"]["readlink"] == "ok" and got[base + "/link"]["open"] == "ok", got
        r = ctx.run(f"import os; print(sorted(os.listdir({base!r})))", "--policy", pf)
        assert r.code == 0 and r.stdout == "['link', 'public']\n", r
    finally:
        shutil.rmtree(base)


def test_the_record_is_hidden_in_every_view(ctx):
    """ward's database, its journal and its key never exist inside, even
    when the policy shows their directory, and in the host's view."""
    base = tempfile.mkdtemp(prefix="ward-view-db-", dir="/var/tmp")
    try:
        os.chmod(base, 0o755)
        db = os.path.join(base, "audit.db")
        with open(os.path.join(base, "sibling"), "w") as f:
            f.write("x")
        os.chmod(os.path.join(base, "sibling"), 0o644)
        pol = profile()
        pol["fs"].insert(0, {"id": "dbdir", "path": base, "allow": ["read", "stat"]})
        # a key's temporary file a crashed ward left behind, and a
        # journal: hidden by their names, not by what existed at the plan
        with open(db + ".key.x1Y2z3", "w") as f:
            f.write("k" * 64)
        os.chmod(db + ".key.x1Y2z3", 0o644)
        paths = [db, db + "-wal", db + ".key", db + ".key.x1Y2z3", db + "-journal",
                 os.path.join(base, "sibling")]
        for pf in (write_policy(ctx, pol), wardtest.host_view_policy(ctx)):
            script = ctx.write("probe.py", PROBE)
            # twice: the first run creates the database and its key
            for _ in range(2):
                r = ctx.ward("run", "--db", db, "--policy", pf, script, "--", *paths, db=False)
                assert r.code == 0, r
            got = {l.split(" ", 1)[0]: dict(kv.split("=") for kv in l.split(" ", 1)[1].split())
                   for l in r.stdout.splitlines()}
            for p in paths[:5]:
                assert os.path.exists(p) or p.endswith(("-wal", "-journal")), p
                assert _absent(got[p]), (pf, p, got[p])
            # the directory is there, and what else it holds
            assert got[paths[5]]["stat"] == "ok", got
    finally:
        shutil.rmtree(base)


def test_entries_that_come_and_go_while_runs_start(ctx):
    """A shown directory rebuilt entry by entry (something below it is
    hidden) whose other entries the host creates and removes all the
    time: an entry gone between the plan and the build is simply not
    there inside; no run fails to start."""
    import threading
    base = tempfile.mkdtemp(prefix="ward-view-churn-", dir="/var/tmp")
    stop = threading.Event()

    def churn():
        i = 0
        while not stop.is_set():
            p = os.path.join(base, "churn-%d" % (i % 64))
            try:
                if (i // 64) % 2:
                    os.unlink(p)
                else:
                    open(p, "w").close()
            except OSError:
                pass
            i += 1

    try:
        os.chmod(base, 0o755)
        os.mkdir(os.path.join(base, "hidden"))
        open(os.path.join(base, "kept"), "w").close()
        pol = profile()
        pol["fs"].insert(0, {"id": "churn", "path": base, "allow": ["read", "stat"]})
        pol["fs"].insert(0, {"id": "hide", "path": os.path.join(base, "hidden"),
                             "deny": ["read", "stat"]})
        pf = write_policy(ctx, pol)
        t = threading.Thread(target=churn)
        t.start()
        try:
            for _ in range(15):
                r = ctx.run(f"import os; print(sorted(x for x in os.listdir({base!r}) "
                            f"if not x.startswith('churn-')))", "--policy", pf)
                assert r.code == 0, r
                assert r.stdout == "['kept']\n", r
        finally:
            stop.set()
            t.join()
    finally:
        shutil.rmtree(base)


# What the code can see of itself: the host path of its workdir must not
# be in any of it.
SELF = r'''import os, sys, glob
print("cwd", os.getcwd(), os.path.realpath("."))
print("env", dict(os.environ))
print("argv", sys.argv)
for f in ("/proc/self/environ", "/proc/self/cmdline", "/proc/self/mounts",
          "/proc/self/mountstats", "/proc/self/mountinfo", "/proc/1/mountinfo",
          "/proc/self/cgroup", "/proc/self/stat", "/proc/self/maps"):
    try:
        print(f, open(f, "rb").read().decode(errors="replace"))
    except OSError as e:
        print(f, "errno", e.errno)
for l in ("/proc/self/cwd", "/proc/self/exe", "/proc/self/root", "/proc/self/fd/0"):
    print(l, os.readlink(l))
try:
    open("no/such/file")
except OSError as e:
    print("error", e)
open("mine.txt", "w").write("x")
print("abs", os.path.abspath("mine.txt"))
print("glob", glob.glob("/*"), glob.glob("/home/*"), glob.glob("/tmp/*"))
'''


def _no_host_path(text, *paths):
    for p in paths:
        assert p not in text, (p, text[:3000])


def test_workdir_is_home_user_and_no_host_path_reaches_the_code(ctx):
    script = ctx.write("self.py", SELF)
    # ward's own temporary workdir
    r = ctx.ward("run", script)
    assert r.code == 0, r
    host = ctx.host_workdir()
    assert host.startswith("/tmp/ward-") and ctx.last_run()["workdir"] == HOME
    assert f"cwd {HOME} {HOME}\n" in r.stdout and f"abs {HOME}/mine.txt\n" in r.stdout, r.stdout
    assert f"'HOME': '{HOME}'" in r.stdout and f"'TMPDIR': '{HOME}/tmp'" in r.stdout, r.stdout
    assert f"error [Errno 2] No such file or directory: 'no/such/file'" in r.stdout
    # mountinfo names each mount's source directory: not readable
    assert "/proc/self/mountinfo errno 13" in r.stdout, r.stdout
    assert "/proc/1/mountinfo errno 13" in r.stdout, r.stdout
    _no_host_path(r.stdout + r.stderr, host)
    # a given workdir below a directory only root may enter (mktemp -d):
    # the code does not walk the host's path to it, so it works
    if os.geteuid() != 0:
        raise Skip("the rest needs root (a directory the code's uid cannot enter)")
    top = tempfile.mkdtemp(prefix="ward-view-0700-")
    try:
        assert os.stat(top).st_mode & 0o777 == 0o700
        wd = os.path.join(top, "work")
        r = ctx.ward("run", "--workdir", wd, script)
        assert r.code == 0, r
        assert ctx.host_workdir() == wd
        assert open(os.path.join(wd, "mine.txt")).read() == "x"
        assert os.stat(top).st_uid == 0 and os.stat(top).st_mode & 0o777 == 0o700
        _no_host_path(r.stdout + r.stderr, wd, top)
        # the record names the host directory for the reviewer
        r2 = ctx.ward("show", "last", "--summary")
        assert r2.code == 0 and wd in r2.stdout, r2
    finally:
        shutil.rmtree(top)


def _wide_policy(ctx):
    """default, plus reading the run's own /proc and /sys as the view shows
    them, and writing its own /tmp and /dev/shm: what a curious run may do
    there."""
    pol = profile()
    pol["name"] = "default-wide"
    for path in ("/proc", "/sys", "/home"):
        pol["fs"].insert(0, {"path": path, "allow": ["read", "stat"]})
    # abstract unix sockets of its own name: bound, reached
    pol["net"]["rules"] += [
        {"family": "unix", "ops": ["bind", "connect"], "abstract": "wardrun"}]
    pol["syscalls"] = pol.get("syscalls", []) + [{"name": "shmget", "action": "allow"}]
    for path in ("/tmp", "/dev/shm"):
        pol["fs"].insert(0, {"path": path, "allow": ["read", "write", "create", "delete",
                                                     "stat"]})
    return write_policy(ctx, pol, "wide.json")


def test_the_workdir_is_not_at_its_host_path_even_in_a_shown_tree(ctx):
    base = tempfile.mkdtemp(prefix="ward-view-wd-", dir="/var/tmp")
    try:
        os.chmod(base, 0o755)
        wd = os.path.join(base, "work")
        with open(os.path.join(base, "other"), "w") as f:
            f.write("x")
        pol = profile()
        pol["fs"].insert(0, {"id": "base", "path": base, "allow": ["read", "stat"]})
        got = probe(ctx, [wd, os.path.join(base, "other")], "--workdir", wd,
                    "--policy", write_policy(ctx, pol))
        assert _absent(got[wd]), got
        assert got[os.path.join(base, "other")]["open"] == "ok", got
    finally:
        shutil.rmtree(base)


def test_wards_command_line_is_not_the_codes_to_read(ctx):
    """The run's init is ward's own code sharing ward's memory: its
    /proc/1/cmdline is ward's argv (the database's path, the workdir's).
    The code does not see the init at all (hidepid)."""
    wd = ctx.path("wd-visible")
    r = ctx.run("import os\n"
                "for p in ('/proc/1', '/proc/1/cmdline'):\n"
                "    print(p, os.path.exists(p))\n", "--workdir", wd, "--policy",
                _wide_policy(ctx))
    assert r.code == 0 and r.stdout == "/proc/1 False\n/proc/1/cmdline False\n", r


def test_no_host_proc_sys_or_cgroup_names(ctx):
    code = ("import os\n"
            "print([p for p in ('/sys/fs/cgroup', '/sys/kernel', '/sys/devices/system/cpu',"
            " '/sys/class', '/sys/devices/virtual') if os.path.exists(p)])\n"
            "print(set(l.rstrip().split(':', 2)[2] for l in open('/proc/self/cgroup')))\n"
            "print(os.uname().nodename)\n")
    r = ctx.run("import os\nprint(sorted(p for p in os.listdir('/proc') if p.isdigit()))\n"
                + code, "--policy", _wide_policy(ctx))
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    # the code; not the init (ward's own code), hidden (hidepid)
    assert lines[0] == "['2']", lines
    # where the policy shows all of /sys: still not /sys/fs/cgroup
    assert lines[1] == "['/sys/kernel', '/sys/devices/system/cpu', '/sys/class', " \
                       "'/sys/devices/virtual']", lines
    r = ctx.run("print()\n" + code)
    assert r.code == 0, r
    lines = r.stdout.splitlines()
    # /sys: the default profile's two trees; /sys/fs/cgroup never, even
    # where the policy shows all of /sys
    assert lines[1] == "['/sys/devices/system/cpu']", lines
    assert lines[2] == "{'/'}", lines
    assert lines[3] == "ward", lines


# Each run leaves traces of itself everywhere it can (its workdir, /tmp,
# /dev/shm, an abstract unix socket, a SysV shared memory segment, its
# pid), says it is ready, waits for the word to go (a file the test writes
# in its workdir), then looks for the other run's traces and for anything
# of it through every channel the code has. Tokens come reversed in argv:
# a run's own argv (in its /proc) must not hold them.
BOTH = r"""import ctypes, glob, os, socket, sys, time
mine, theirs = sys.argv[1][::-1], sys.argv[2][::-1]
their_wd = sys.argv[3]
libc = ctypes.CDLL(None, use_errno=True)
for d in (".", "/tmp", "/dev/shm"):
    open(os.path.join(d, mine), "w").write(mine)
s = socket.socket(socket.AF_UNIX); s.bind("\0" + mine)
shm = libc.shmget(int(mine[-6:], 16), 4096, 0o1666)
assert shm >= 0, ctypes.get_errno()
open("ready", "w").write("1")
while not os.path.exists("go") or not open("go").read().endswith("\n"):
    time.sleep(0.02)
their_pid = int(open("go").read())  # the other's code, on the host
found = []
def seen(where, what):
    found.append(f"{where}: {what}")
for d in (".", "/tmp", "/dev/shm", "/home", "/"):
    try:
        for root, dirs, files in os.walk(d):
            if root.startswith(("/proc", "/sys", "/usr")):
                continue
            for f in files + dirs:
                if theirs in f:
                    seen(d, os.path.join(root, f))
    except OSError:
        pass
for p in glob.glob("/proc/[0-9]*/cmdline") + glob.glob("/proc/[0-9]*/environ"):
    try:
        if theirs.encode() in open(p, "rb").read():
            seen("proc", p)
    except OSError:
        pass
pids = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
if not set(pids) <= {1, 2}:
    seen("pids", pids)
for f in ("/proc/net/unix", "/proc/sysvipc/shm", "/proc/self/mountinfo", "/proc/self/cgroup",
          "/proc/self/mounts", "/proc/locks"):
    try:
        data = open(f, "rb").read()
        if theirs.encode() in data or b"ward-slot" in data or their_wd.encode() in data:
            seen(f, "their token, a slot or their workdir")
    except OSError:
        pass
if libc.shmget(int(theirs[-6:], 16), 0, 0) >= 0:
    seen("sysv shm", theirs)
try:
    socket.socket(socket.AF_UNIX).connect("\0" + theirs)
    seen("abstract socket", theirs)
except OSError as e:
    if e.errno != 111:  # refused: nothing by that name here
        seen("abstract socket", e)
for p in (their_wd, os.path.join(their_wd, theirs), "/sys/fs/cgroup", "/var/tmp",
          f"/proc/{their_pid}"):
    if os.path.lexists(p):
        seen("path", p)
try:
    os.kill(their_pid, 0)
    seen("kill", their_pid)
except OSError:
    pass
print("FOUND" if found else "nothing", found, flush=True)
"""


def test_two_concurrent_runs_learn_nothing_of_each_other(ctx):
    """Two runs at once, each leaving traces and looking for the other's
    (and for the other) while the other lives."""
    both = ctx.write("both.py", BOTH)
    pf = _wide_policy(ctx)
    toks = ["wardrun" + os.urandom(3).hex() for _ in range(2)]
    wds = [ctx.path("wd-%d" % i) for i in range(2)]
    procs = []
    try:
        for i in range(2):
            # the other's host pid is not known yet: its ward's, found below
            procs.append(subprocess.Popen(
                [wardtest.ward_bin(), "run", "--db", ctx.db, "--workdir", wds[i], "--policy",
                 pf, both, "--", toks[i][::-1], toks[1 - i][::-1], wds[1 - i]],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ctx.tmp))
        for i in range(2):
            assert wardtest.wait_until(
                lambda: os.path.exists(os.path.join(wds[i], "ready")), 60), \
                procs[i].stderr.read() if procs[i].poll() is not None else "not ready"
        code_pids = []
        for i in range(2):
            # the traces are really there, seen from outside
            assert os.path.exists(os.path.join(wds[i], toks[i]))
            code_pids.append([p for p in wardtest.pids_matching(toks[i][::-1])
                              if os.readlink(f"/proc/{p}/exe").startswith("/usr/bin/python")][0])
        for i in range(2):
            with open(os.path.join(wds[i], "go"), "w") as f:
                f.write("%d\n" % code_pids[1 - i])
        for i in range(2):
            out, err = procs[i].communicate(timeout=120)
            assert procs[i].returncode == 0, err
            assert out.startswith("nothing"), out
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()


def test_host_view_is_audit_modes_default(ctx):
    got = probe(ctx, ["/var/tmp", "/etc/shadow", "/home"], "--profile", "audit")
    assert got["/var/tmp"]["stat"] == "ok", got
    # secrets stay hidden even there: deny rules take them out of every view
    assert _absent(got["/etc/shadow"]), got
    r = ctx.run("import os; print(os.listdir('/home'), os.getcwd())", "--profile", "audit")
    assert r.code == 0 and r.stdout == f"['user'] {HOME}\n", r
    layers = {l["name"]: l for l in json.loads(ctx.last_run()["layers"])}
    assert "the host read-only" in layers["namespaces"]["detail"], layers["namespaces"]


def test_bad_view_value_is_refused_with_its_place(ctx):
    pol = profile()
    pol["view"] = "everything"
    pf = write_policy(ctx, pol)
    r = ctx.ward("run", "--policy", pf, "-c", "print('RAN')")
    assert r.code == 125 and "RAN" not in r.stdout, r
    assert "view" in r.stderr and "policy" in r.stderr and "host" in r.stderr, r.stderr
