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
