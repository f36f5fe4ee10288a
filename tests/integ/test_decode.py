"""Decoding details the policy depends on."""
import json

import wardtest


def test_listen_knows_its_socket_family(ctx):
    """listen(fd) names no address: ward looks the socket's family up
    (a copy of the fd, getsockopt SO_DOMAIN), so a listen rule for one
    family matches it and not another family's socket."""
    with open(wardtest.__file__.replace("tests/integ/wardtest.py",
                                        "profiles/default.json")) as f:
        pol = json.load(f)
    pol["name"] = "listen-inet"
    pol["net"]["rules"] = [
        {"ops": ["bind"], "family": "inet", "addr": "127.0.0.1"},
        {"ops": ["listen"], "family": "inet"},
    ]
    pf = ctx.path("listen.json")
    with open(pf, "w") as f:
        json.dump(pol, f)
    code = ("import socket, os\n"
            "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "print('inet listening')\n"
            "u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            "try:\n"
            "  u.listen(); print('unix listening')\n"
            "except OSError as e: print('unix', e.errno)\n")
    r, j = ctx.run_json(code, "--policy", pf)
    assert r.code == 0 and j["stdout"] == "inet listening\nunix 13\n", j
    ev = ctx.events(j["run_id"], "syscall='listen'")
    assert [e["decision"] for e in ev] == ["allow", "deny"], ev
    assert json.loads(ev[0]["args"])["family"] == "AF_INET", ev[0]
    assert json.loads(ev[1]["args"])["family"] == "AF_UNIX", ev[1]
    assert ev[0]["rule"] == "net.rules[1]", ev[0]


def test_inotify_watch_needs_read(ctx):
    """A watch reveals the names and timing of accesses in a directory:
    it needs read on it (stat is not enough), in the workdir it works."""
    code = ("import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "fd = libc.inotify_init1(0)\n"
            "for d in (b'/var/log', b'.'):\n"
            "  w = libc.inotify_add_watch(fd, d, 0x100)\n"
            "  print(d.decode(), w >= 0, ctypes.get_errno() if w < 0 else 0)\n")
    r, j = ctx.run_json(code)
    assert r.code == 0 and j["stdout"] == "/var/log False 13\n. True 0\n", j
    ev = ctx.events(j["run_id"], "syscall='inotify_add_watch'")
    assert [e["decision"] for e in ev] == ["deny", "allow"], ev


def test_dev_stdout_reopens_as_natively(ctx):
    """The code's stdout and stderr are its own (the pipes belong to the
    code's uid): reopening /dev/stdout works as it does natively."""
    code = ("open('/dev/stdout', 'w').write('via /dev/stdout\\n')\n"
            "open('/dev/stderr', 'w').write('via /dev/stderr\\n')\n")
    r = ctx.run(code)
    assert r.code == 0, r
    assert r.stdout == "via /dev/stdout\n", r
    assert "via /dev/stderr\n" in r.stderr, r
