"""Memory and process limits as cgroups, by default where a hierarchy is
usable (v2 delegated, or v1's memory and pids hierarchies as root): the
kernel's OOM kill and a fork refused by pids.max end the run with status
"limit" and a cause; --no-cgroup keeps rlimits and ward's own count; where
no cgroup can be had ward says so once, records it, and runs on."""
import glob
import json
import os
import subprocess
import time

import wardtest
from wardtest import Skip, ward_as_nobody

# A process that forks children and never waits for them: the zombies hold
# pids (the kernel counts them) though ward no longer counts them as alive.
ZOMBIES = ("import os, time\nn = 0\n"
           "try:\n"
           "    for i in range(40):\n"
           "        if os.fork() == 0:\n"
           "            os._exit(0)\n"
           "        n += 1\n"
           "        time.sleep(0.01)\n"
           "    print('forked', n, flush=True)\n"
           "except OSError as e:\n"
           "    print('refused', e.errno, flush=True)\n"
           "    time.sleep(20)\n"
           "    print('ran on after the refusal', flush=True)\n")


def slots():
    return set(glob.glob("/sys/fs/cgroup/**/ward-slot-*", recursive=True))


def layers(j):
    return {l["name"]: l for l in j["layers"]}


def need_cgroups(j):
    l = layers(j)
    if not (l["cgroup-memory"]["active"] and l["cgroup-pids"]["active"]):
        raise Skip("no usable cgroup hierarchy here: %s / %s" % (
            l["cgroup-memory"]["detail"], l["cgroup-pids"]["detail"]))


def cleanup(before):
    for d in sorted(slots() - before, reverse=True):  # only what the test made
        try:
            os.rmdir(d)
        except OSError:
            pass


def test_cgroups_by_default_and_recorded(ctx):
    before = slots()
    try:
        r, j = ctx.run_json("print('hi')", "--memory", "300M", "--max-procs", "33")
        assert r.code == 0 and j["stdout"] == "hi\n", j
        need_cgroups(j)
        l = layers(j)
        assert j["memory_limit_by"] in ("cgroup v1", "cgroup v2"), j
        assert "300 MiB" in l["cgroup-memory"]["detail"], l
        assert "pids.max 34" in l["cgroup-pids"]["detail"], l
        # the limits are really in the kernel's files
        mem_dir = l["cgroup-memory"]["detail"].split(" ")[2].rstrip(":")
        pids_dir = l["cgroup-pids"]["detail"].split(" ")[2].rstrip(":")
        mem_file = "memory.max" if j["memory_limit_by"] == "cgroup v2" else "memory.limit_in_bytes"
        assert open(os.path.join(mem_dir, mem_file)).read().strip() == str(300 << 20)
        assert open(os.path.join(pids_dir, "pids.max")).read().strip() == "34"
        # and in the record
        recorded = json.loads(ctx.last_run()["layers"])
        names = {x["name"]: x["active"] for x in recorded}
        assert names["cgroup-memory"] and names["cgroup-pids"], recorded
        assert "no cgroup" not in r.stderr, r.stderr
        # rlimits always, but not the address space: the cgroup limits memory
        assert l["rlimits"]["active"] and "address space" not in l["rlimits"]["detail"], l
    finally:
        cleanup(before)


# Prints the code's memory and pids cgroups as it sees them (v1 lines
# "N:memory:/path"), then waits a little, in them.
WHERE = ("import time\n"
         "for line in open('/proc/self/cgroup'):\n"
         "    n, ctl, path = line.rstrip('\\n').split(':', 2)\n"
         "    if ctl in ('memory', 'pids'):\n"
         "        print(ctl, path, flush=True)\n"
         "time.sleep(1.5)\n")


def _tasks(slot):
    try:
        with open(os.path.join(slot, "tasks")) as f:
            return f.read().split()
    except OSError:
        return []


def test_v1_child_enters_its_cgroups_itself(ctx):
    """On v1 the child moves itself into its slots (writing "0" to their
    tasks files: no global lock, no RCU grace period in the kernel), and
    the code runs in them; the layers say so. The code sees its slots as
    the root of its cgroup namespace ("/"): not which slot of ward's."""
    before = slots()
    try:
        p = subprocess.Popen([wardtest.ward_bin(), "run", "--db", ctx.db, "--json",
                              "--memory", "300M", "--max-procs", "33", "-c", WHERE],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=ctx.tmp)
        busy = set()
        deadline = time.time() + 60
        while p.poll() is None and time.time() < deadline:
            busy |= {s for s in slots() if _tasks(s)}
            time.sleep(0.05)
        out, err = p.communicate(timeout=60)
        j = json.loads(out)
        assert p.returncode == 0, j
        need_cgroups(j)
        if j["memory_limit_by"] != "cgroup v1":
            raise Skip("memory is not on cgroup v1 here")
        l = layers(j)
        seen = dict(x.split(" ", 1) for x in j["stdout"].splitlines())
        for ctl, layer in (("memory", "cgroup-memory"), ("pids", "cgroup-pids")):
            d = l[layer]["detail"]
            assert "(entered by the child itself)" in d, d
            slot = d.split(" ")[2]
            mount = "/sys/fs/cgroup/" + ctl
            assert slot.startswith(mount + "/"), (slot, mount)
            assert slot in busy, (slot, busy)
            assert seen[ctl] == "/", seen
    finally:
        cleanup(before)


def test_no_cgroup_opts_out(ctx):
    r, j = ctx.run_json("x = b'x' * (400 << 20)\nprint('allocated')",
                        "--no-cgroup", "--memory", "256M")
    assert j["memory_limit_by"] == "rlimit", j
    assert r.code == 1 and "MemoryError" in j["stderr"], j
    l = layers(j)
    assert not l["cgroup-memory"]["active"] and not l["cgroup-pids"]["active"], l
    assert "--no-cgroup" in l["cgroup-pids"]["detail"], l
    assert l["rlimits"]["active"] and "address space 256 MiB" in l["rlimits"]["detail"], l
    assert "no cgroup" not in r.stderr, r.stderr  # asked for: no warning


def test_oom_kill_ends_the_run_by_default(ctx):
    before = slots()
    try:
        r, j = ctx.run_json("x = b'x' * (768 << 20)\nprint('allocated', len(x))",
                            "--memory", "256M")
        need_cgroups(j)
        run = ctx.last_run()
        assert r.code == 128 + 9 and run["status"] == "limit", (r, run)
        assert "memory limit of 256 MiB" in run["cause"], run
        assert "allocated" not in j["stdout"], j
    finally:
        cleanup(before)


def test_pids_limit_ends_the_run(ctx):
    """Zombies count in the pids cgroup: the kernel refuses the fork (EAGAIN
    in the code), and the run ends there with the process limit's status
    and cause, though the code would carry on."""
    before = slots()
    try:
        r, j = ctx.run_json(ZOMBIES, "--max-procs", "10", "--timeout", "60")
        need_cgroups(j)
        run = ctx.last_run()
        # the run may end before the code gets to say it was refused
        assert j["stdout"] in ("", "refused 11\n"), j
        assert run["status"] == "limit", run
        assert run["cause"] == "process limit of 10 processes and threads reached", run
        assert r.code == 128 + 9, r
    finally:
        cleanup(before)


def test_pids_limit_not_without_cgroup(ctx):
    """The same code under --no-cgroup: ward counts live processes only, so
    the exited children do not count and all 40 forks happen."""
    r, j = ctx.run_json(ZOMBIES, "--max-procs", "10", "--no-cgroup")
    assert j["stdout"] == "forked 40\n" and ctx.last_run()["status"] == "ok", j


def test_no_usable_cgroup_said_once_and_recorded(ctx):
    """An ordinary user cannot make cgroups here: ward says so on stderr,
    records the layers as inactive with the reason, and runs the code."""
    p, _ = ward_as_nobody(ctx, "run", "--db", lambda home: os.path.join(home, "audit.db"),
                          "--json", "-c", "print('ran')")
    j = json.loads(p.stdout)
    assert p.returncode == 0 and j["stdout"] == "ran\n", (p.stdout, p.stderr)
    l = layers(j)
    if l["cgroup-memory"]["active"]:
        raise Skip("this user can make cgroups here (delegated v2)")
    said = [x for x in p.stderr.splitlines() if "no cgroup for the run's" in x]
    assert len(said) == 1, p.stderr
    assert "memory and process limits" in said[0], said
    assert j["memory_limit_by"] == "rlimit", j
    assert l["cgroup-pids"]["detail"] and not l["cgroup-pids"]["active"], l
