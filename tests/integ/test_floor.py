"""ward's seccomp floor on arguments: prctl options, personality values,
terminal ioctls and clone flags. Each value is judged on its low 32 bits
(what the kernel reads), the same in every profile, and a refusal is an
honest EPERM with a row in the record (or, for clone, the kernel's kill)."""
import json
import os

HI = 0xdead000000000000  # junk in the high half of an int argument

PRELUDE = ("import ctypes, os\n"
           "libc = ctypes.CDLL(None, use_errno=True)\n"
           "L = ctypes.c_ulong\n"
           "def call(nr, *a):\n"
           "    r = libc.syscall(L(nr), *[L(x) for x in a])\n"
           "    return 'ok' if r >= 0 else os.strerror(ctypes.get_errno())\n")

# prctl = 157, personality = 135, ioctl = 16, clone = 56 (x86-64)
PROBES = PRELUDE + (
    "buf = ctypes.create_string_buffer(16)\n"
    f"print('set_name', call(157, {HI} | 15, ctypes.addressof(buf)))\n"
    f"print('get_name', call(157, {HI} | 16, ctypes.addressof(buf)))\n"
    "print('ptracer', call(157, 0x59616d61, 0xffffffffffffffff))\n"
    f"print('dumpable', call(157, {HI} | 4, 0))\n"
    "print('subreaper', call(157, 36, 1))\n"
    "print('query', call(135, 0xffffffff) )\n"
    f"print('per_linux', call(135, {HI}))\n"
    "print('no_aslr', call(135, 0x0040000))\n"
    f"print('tiocsti', call(16, 0, {HI} | 0x5412, ctypes.addressof(buf)))\n"
    "print('tcgets', call(16, 0, 0x5401, ctypes.addressof(buf)))\n")

EXPECTED = ("set_name ok\nget_name ok\nptracer Operation not permitted\n"
            "dumpable Operation not permitted\nsubreaper Operation not permitted\n"
            "query ok\nper_linux ok\nno_aslr Operation not permitted\n"
            "tiocsti Operation not permitted\n"
            # stdin is /dev/null: TCGETS reaches the kernel and says so
            "tcgets Inappropriate ioctl for device\n")


def floor_rows(ctx, run_id):
    return [(e["syscall"], e["decision"], e["errno"])
            for e in ctx.events(run_id, "rule = 'floor.args'")]


def check_probes(ctx, *opts):
    r, j = ctx.run_json(PROBES, *opts)
    assert r.code == 0 and j["stdout"] == EXPECTED, (opts, j)
    rows = floor_rows(ctx, j["run_id"])
    assert rows == [("prctl", "deny", 1)] * 3 + [("personality", "deny", 1),
                                                 ("ioctl", "deny", 1)], rows
    reasons = [e["reason"] for e in ctx.events(j["run_id"], "rule = 'floor.args'")]
    assert "prctl 0x59616d61" in reasons[0] and "0x5412" in reasons[4], reasons
    return j


def test_arg_floor_default_profile(ctx):
    j = check_probes(ctx)
    assert [d["rule"] for d in j["denials"]] == ["floor.args"] * 5, j["denials"]


def test_arg_floor_holds_in_audit_mode(ctx):
    """Audit mode turns the policy's denials into records; the floor stays."""
    j = check_probes(ctx, "--profile", "audit")
    assert all(d["action"] == "deny" for d in j["denials"]
               if d["rule"] == "floor.args"), j["denials"]


def test_arg_floor_beats_a_policy_rule(ctx):
    """A policy allowing prctl, personality and ioctl outright gets the
    floor all the same."""
    pol = json.load(open(os.path.join(os.path.dirname(__file__), "..", "..",
                                      "profiles", "default.json")))
    pol.setdefault("syscalls", [])
    pol["syscalls"] += [{"name": n, "action": "allow"}
                        for n in ("prctl", "personality", "ioctl")]
    path = ctx.write("p.json", json.dumps(pol))
    check_probes(ctx, "--policy", path)


def clone_with(ctx, flags):
    code = PRELUDE + ("print('before', flush=True)\n"
                      f"r = call(56, {HI} | {flags} | 17, 0, 0, 0, 0)\n"
                      "print('after', r, flush=True)\n")
    r = ctx.run(code, "--profile", "audit")
    return r


def test_clone_namespace_flags_killed_in_the_kernel(ctx):
    """CLONE_NEWUSER and CLONE_UNTRACED with junk in the high half: the
    process is killed before the clone happens (SIGSYS), even in audit
    mode, and no child is recorded."""
    for flags in (0x10000000, 0x00800000, 0x40000000):
        r = clone_with(ctx, flags)
        assert r.code == 128 + 31 and r.stdout == "before\n", (hex(flags), r)
        run = ctx.last_run()
        procs = ctx.sql("select count(*) n from processes where run_id=?", run["id"])
        assert procs[0]["n"] == 1, procs
        # the kernel killed it; the record still names the call
        assert run["status"] == "killed" and "clone.flags" in run["cause"], run
        e = ctx.events(run["id"], "decision = 'kill'")
        assert [(x["syscall"], x["rule"]) for x in e] == [("clone", "clone.flags")], e
        assert e[0]["target"] == "flags %#x" % (flags | 17), e
        assert "killed in the kernel" in e[0]["reason"], e


def test_kill_floor_named_in_the_record(ctx):
    """ptrace is killed in the kernel; the run is "killed" and the record
    names ptrace. A process that sends itself SIGSYS is not mistaken for
    a floor kill."""
    code = PRELUDE + "print('before', flush=True)\ncall(101, 16, 0, 0, 0)\nprint('after')\n"
    r = ctx.run(code)
    assert r.code == 128 + 31 and r.stdout == "before\n", r
    run = ctx.last_run()
    assert run["status"] == "killed" and "ptrace" in run["cause"], run
    e = ctx.events(run["id"], "decision = 'kill'")
    assert [(x["syscall"], x["rule"]) for x in e] == [("ptrace", "floor.kill")], e
    assert json.loads(e[0]["args"])["args"][0] == "0x10", e
    r = ctx.run("import os, signal\nos.kill(os.getpid(), signal.SIGSYS)")
    run = ctx.last_run()
    assert r.code == 128 + 31 and run["status"] == "error", (r, run)
    assert not ctx.events(run["id"], "decision = 'kill'")


def test_plain_fork_by_raw_clone_still_works(ctx):
    """The same raw clone without the floor's flags runs (high junk and
    all: clone reads 32 bits of its flags)."""
    code = PRELUDE + (f"r = libc.syscall(L(56), L({HI} | 17), L(0), L(0), L(0), L(0))\n"
                      "if r == 0:\n    os._exit(7)\n"
                      "print('parent', os.waitpid(r, 0)[1] >> 8)\n")
    r = ctx.run(code)
    assert r.code == 0 and r.stdout == "parent 7\n", r


MKNOD = ("import os, stat\n"
         "def mk(name, mode, dev=0):\n"
         "    try:\n"
         "        os.mknod(name, mode, dev)\n"
         "        return 'made'\n"
         "    except OSError as e:\n"
         "        return e.errno\n"
         "print('chr', mk('dev', stat.S_IFCHR | 0o600, os.makedev(1, 3)),\n"
         "      os.path.lexists('dev'))\n"
         # a whiteout (char 0:0) needs no CAP_MKNOD: only the floor stops it
         "print('whiteout', mk('wh', stat.S_IFCHR | 0o600, 0),\n"
         "      os.path.lexists('wh'))\n"
         "os.mkfifo('fifo')\n"
         "print('fifo', stat.S_ISFIFO(os.lstat('fifo').st_mode))\n"
         "print('sock', mk('sock', stat.S_IFSOCK | 0o600))\n")


def check_mknod(ctx, *opts):
    r, j = ctx.run_json(MKNOD, *opts)
    assert r.code == 0 and j["stdout"] == ("chr 1 False\nwhiteout 1 False\n"
                                           "fifo True\nsock made\n"), (opts, j)
    rows = ctx.events(j["run_id"], "syscall in ('mknod', 'mknodat')")
    got = [(e["decision"], e["rule"], e["errno"]) for e in rows]
    assert got[:2] == [("deny", "floor.mknod", 1)] * 2, got
    assert all(e["rule"] != "floor.mknod" for e in rows[2:]), got
    args = [json.loads(e["args"]) for e in rows]
    assert (args[0]["mode"], args[0]["type"], args[0]["dev"]) == \
        ("020600", "S_IFCHR", "1:3"), args[0]
    assert args[1]["dev"] == "0:0", args[1]
    assert [a["type"] for a in args[2:]] == ["S_IFIFO", "S_IFSOCK"], args
    assert "character device node (mode 020600)" in rows[0]["reason"], rows[0]
    assert not rows[0]["would_deny"], rows[0]
    return j


def test_mknod_device_floor(ctx):
    """A device node (char, block, a whiteout) in the workdir is refused
    EPERM though the fs rules let the code create files there; FIFOs and
    sockets are files the fs rules decide."""
    check_mknod(ctx)


def test_mknod_device_floor_holds_in_audit_mode(ctx):
    j = check_mknod(ctx, "--profile", "audit")
    assert [d["action"] for d in j["denials"]
            if d["rule"] == "floor.mknod"] == ["deny"] * 2, j["denials"]
