"""The egress proxy (net.allow_domains): the code's only way out is ward's
proxy inside the run's network namespace. Loopback only: the origin
servers are threads of this test on 127.0.0.1, named with --add-host and
reachable because the policy's net.allow_private names 127.0.0.1."""
import json
import os
import socket
import threading
import http.server

from wardtest import listener, ward_as_nobody

PROFILE = os.path.join(os.path.dirname(__file__), "..", "..", "profiles", "default.json")


class Origin:
    """A loopback HTTP server that records each request's Host and path."""

    def __init__(self):
        seen = self.seen = []

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append((self.headers.get("Host"), self.path))
                body = b"origin says hi\n"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        self.t = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.t.start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class HelloSink:
    """A TCP server that keeps the first bytes of each connection (a TLS
    ClientHello, when the proxy forwards one) and closes it."""

    def __init__(self):
        self.got = []
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(8)
        self.s.settimeout(0.2)
        self.port = self.s.getsockname()[1]
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop:
            try:
                c, _ = self.s.accept()
            except OSError:
                continue
            c.settimeout(3)
            data = b""
            try:
                data = c.recv(65536)
            except OSError:
                pass
            self.got.append(data)
            c.close()

    def close(self):
        self.stop = True
        self.t.join(2)
        self.s.close()


def proxy_policy(ctx, domains, private=("127.0.0.1",), hosts=None, **net):
    with open(PROFILE) as f:
        pol = json.load(f)
    pol["net"]["allow_domains"] = domains
    if private is not None:
        pol["net"]["allow_private"] = list(private)
    if hosts:
        pol["net"]["hosts"] = hosts
    pol["net"].update(net)
    path = ctx.path("proxy-policy.json")
    with open(path, "w") as f:
        json.dump(pol, f)
    return path


def run(ctx, code, *opts):
    """ward run OPTS -c CODE -- ARGS (opts: everything before "--")."""
    opts = list(opts)
    i = opts.index("--") if "--" in opts else len(opts)
    return ctx.ward("run", *opts[:i], "-c", code, *opts[i:])


def proxy_rows(ctx):
    rid = ctx.last_run()["id"]
    rows = ctx.events(rid, "syscall = 'proxy'")
    for r in rows:
        r["args"] = json.loads(r["args"])
    return rows


GET = ("import urllib.request, urllib.error, sys\n"
       "try:\n"
       "    print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode())\n"
       "except urllib.error.HTTPError as e:\n"
       "    print('HTTP', e.code, e.read().decode())\n")


def test_allowed_name_through_http_proxy(ctx):
    o = Origin()
    try:
        pol = proxy_policy(ctx, [f"mirror.test:{o.port}"])
        r = run(ctx, GET, "--policy", pol, "--add-host", "mirror.test:127.0.0.1",
                    "--", f"http://mirror.test:{o.port}/simple/x?y=1")
    finally:
        o.close()
    assert r.code == 0 and "origin says hi" in r.stdout, r
    # the origin saw the name the code asked for, in origin form
    assert o.seen == [(f"mirror.test:{o.port}", "/simple/x?y=1")], o.seen
    rows = proxy_rows(ctx)
    assert len(rows) == 1, rows
    row = rows[0]
    assert row["decision"] == "allow" and row["rule"] == "net.allow_domains[0]", row
    a = row["args"]
    assert (a["name"], a["port"], a["addr"], a["method"]) == \
        ("mirror.test", o.port, "127.0.0.1", "GET"), a
    assert a["bytes_up"] > 50 and a["bytes_down"] > 15 and a["duration_ms"] >= 0, a
    assert row["target"] == f"127.0.0.1:{o.port}", row
    # the code's own connect went to the proxy, allowed by net.proxy
    conns = ctx.events(ctx.last_run()["id"], "syscall = 'connect'")
    assert conns and all(c["rule"] == "net.proxy" for c in conns), conns


def test_refused_name_is_told_and_recorded(ctx):
    port, state, stop = listener()
    try:
        pol = proxy_policy(ctx, ["mirror.test:443"])
        r = run(ctx, GET, "--policy", pol, "--add-host", "other.test:127.0.0.1",
                    "--", f"http://other.test:{port}/")
    finally:
        stop()
    assert r.code == 0, r
    assert f"HTTP 403 ward: proxy to other.test:{port}: no net.allow_domains entry" \
        in r.stdout, r
    assert state["accepted"] == 0
    rows = proxy_rows(ctx)
    assert [(x["decision"], x["rule"], x["errno"]) for x in rows] == \
        [("deny", "default", 111)], rows
    assert rows[0]["raw"] == f"other.test:{port}"
    # ward show lists it with the run's other decisions
    s = ctx.ward("show", ctx.last_run()["id"])
    assert f"DENY   proxy other.test:{port}" in s.stdout, s


TLS = ("import socket, ssl, sys\n"
       "name, port, sni = sys.argv[1], sys.argv[2], sys.argv[3]\n"
       "s = socket.create_connection(('127.0.0.1', 3128), timeout=10)\n"
       "s.sendall(f'CONNECT {name}:{port} HTTP/1.1\\r\\nHost: {name}:{port}\\r\\n\\r\\n'.encode())\n"
       "head = b''\n"
       "while b'\\r\\n\\r\\n' not in head:\n"
       "    b = s.recv(1)\n"
       "    if not b: break\n"
       "    head += b\n"
       "print('PROXY', head.split(b'\\r\\n')[0].decode())\n"
       "if b' 200 ' in head:\n"
       "    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)\n"
       "    c.check_hostname = False\n"
       "    c.verify_mode = ssl.CERT_NONE\n"
       "    try:\n"
       "        c.wrap_socket(s, server_hostname=sni)\n"
       "    except (OSError, ssl.SSLError) as e:\n"
       "        print('TLS ended', type(e).__name__)\n")


def test_connect_forwards_the_client_hello(ctx):
    sink = HelloSink()
    try:
        pol = proxy_policy(ctx, [f"*.tls.test:{sink.port}"])
        r = run(ctx, TLS, "--policy", pol, "--add-host", "a.tls.test:127.0.0.1",
                    "--", "a.tls.test", str(sink.port), "a.tls.test")
    finally:
        sink.close()
    assert r.code == 0 and "PROXY HTTP/1.1 200 Connection established" in r.stdout, r
    assert len(sink.got) == 1 and sink.got[0][:1] == b"\x16", sink.got
    assert b"a.tls.test" in sink.got[0]
    rows = proxy_rows(ctx)
    assert len(rows) == 1 and rows[0]["decision"] == "allow", rows
    assert rows[0]["args"]["sni"] == "a.tls.test" and rows[0]["args"]["method"] == "CONNECT"
    assert rows[0]["rule"] == "net.allow_domains[0]"


def test_sni_other_than_connect_name_is_refused(ctx):
    sink = HelloSink()
    try:
        pol = proxy_policy(ctx, [f"a.tls.test:{sink.port}"])
        r = run(ctx, TLS, "--policy", pol, "--add-host", "a.tls.test:127.0.0.1",
                    "--", "a.tls.test", str(sink.port), "refused.example")
    finally:
        sink.close()
    assert r.code == 0 and "TLS ended" in r.stdout, r
    # the origin got no byte of the hello
    assert all(g == b"" for g in sink.got), sink.got
    rows = proxy_rows(ctx)
    assert len(rows) == 1, rows
    assert (rows[0]["decision"], rows[0]["rule"]) == ("deny", "net.proxy-sni"), rows
    assert rows[0]["args"]["sni"] == "refused.example"
    assert "the TLS server name is refused.example" in rows[0]["reason"]


def test_metadata_address_refused_even_when_named(ctx):
    """A name the policy allows that resolves to the metadata address is
    refused: the address is judged after resolution."""
    pol = proxy_policy(ctx, ["evil.test:80", "lo.test:80"], private=None)
    code = GET + "urllib.request.urlopen\n"
    r = run(ctx, GET, "--policy", pol, "--add-host", "evil.test:169.254.169.254",
                "--", "http://evil.test/latest/meta-data/")
    assert r.code == 0 and "HTTP 403" in r.stdout and "cloud metadata" in r.stdout, r
    rows = proxy_rows(ctx)
    assert [(x["decision"], x["rule"]) for x in rows] == [("deny", "net.proxy-address")]
    assert rows[0]["args"]["addr"] == "169.254.169.254"
    # a loopback answer to a name, without net.allow_private naming it
    r = run(ctx, code.replace("urllib.request.urlopen\n", ""), "--policy", pol,
                "--add-host", "lo.test:::ffff:127.0.0.1", "--", "http://lo.test/")
    assert "HTTP 403" in r.stdout and "127.0.0.0/8 (loopback)" in r.stdout, r


def test_direct_connect_still_denied(ctx):
    port, state, stop = listener()
    try:
        pol = proxy_policy(ctx, [f"mirror.test:{port}"])
        code = ("import socket\n"
                "for a in [('127.0.0.1', %d), ('1.1.1.1', 443)]:\n"
                "    try:\n"
                "        socket.create_connection(a, timeout=5); print('CONNECTED')\n"
                "    except OSError as e:\n"
                "        print('ERR', e.errno)\n" % port)
        r = ctx.run(code, "--policy", pol)
    finally:
        stop()
    assert r.code == 0 and r.stdout.split() == ["ERR", "111", "ERR", "111"], r
    assert state["accepted"] == 0
    d = ctx.denials(ctx.last_run()["id"])
    assert sum(x["syscall"] == "connect" and x["rule"] == "default" for x in d) == 2, d


def test_policy_errors_name_the_place(ctx):
    with open(PROFILE) as f:
        pol = json.load(f)
    cases = [
        ({"allow_domains": ["pypi.org"]}, "net.allow_domains[0]", "needs a port"),
        ({"allow_domains": ["pypi.org:0"]}, "net.allow_domains[0]", "1 to 65535"),
        ({"allow_domains": ["*.:443"]}, "net.allow_domains[0]", "not a host name"),
        ({"allow_domains": "pypi.org:443"}, "net.allow_domains", "must be an array"),
        ({"hosts": {"m.test": "nope"}}, "net.hosts.m.test", "not an IPv4 or IPv6"),
        ({"allow_private": ["10.0.0.0/33"]}, "net.allow_private[0]", "CIDR"),
    ]
    for extra, where, msg in cases:
        p = dict(pol, net=dict(pol["net"], **extra))
        text = json.dumps(p, indent=1)
        path = ctx.write("bad.json", text)
        r = ctx.run("print(1)", "--policy", path)
        assert r.code == 125, (extra, r)
        assert f"{path}:" in r.stderr and f": {where}: " in r.stderr and msg in r.stderr, \
            (extra, r.stderr)
    r = ctx.run("print(1)", "--add-host", "no-ip-here")
    assert r.code == 125 and "--add-host \"no-ip-here\": must be NAME:IP" in r.stderr, r


def test_export_has_the_connection(ctx):
    o = Origin()
    try:
        pol = proxy_policy(ctx, [f"mirror.test:{o.port}"])
        r = run(ctx, GET, "--policy", pol, "--add-host", "mirror.test:127.0.0.1",
                    "--", f"http://mirror.test:{o.port}/")
    finally:
        o.close()
    assert r.code == 0, r
    rid = ctx.last_run()["id"]
    out = ctx.ward("export", "--db", ctx.db, rid)
    rows = [json.loads(l) for l in out.stdout.splitlines()]
    px = [x for x in rows if x.get("syscall") == "proxy" or
          (x.get("event") or {}).get("syscall") == "proxy"]
    assert out.code == 0 and px, out.stdout[:2000]
    out = ctx.ward("export", "--db", ctx.db, "--format", "ocsf", rid)
    px = [x for x in map(json.loads, out.stdout.splitlines())
          if x.get("unmapped", {}).get("ward", {}).get("syscall") == "proxy"]
    assert out.code == 0 and len(px) == 1, out.stdout[:2000]
    e = px[0]
    assert e["class_uid"] == 4001 and e["activity_name"] == "Open", e
    assert e["dst_endpoint"] == {"ip": "127.0.0.1", "port": o.port,
                                 "hostname": "mirror.test"}, e
    assert e["traffic"]["bytes_in"] > 0 and e["traffic"]["bytes_out"] > 0, e
    v = ctx.ward("verify", "--db", ctx.db, rid)
    assert v.code == 0 and "intact" in v.stdout, v


class Holder:
    """A loopback server that accepts and then never answers."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(64)
        self.s.settimeout(0.2)
        self.port = self.s.getsockname()[1]
        self.conns = []
        self.stop = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        while not self.stop:
            try:
                self.conns.append(self.s.accept()[0])
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.t.join(2)
        for c in self.conns:
            c.close()
        self.s.close()


def test_hostile_client_and_silent_origin_do_not_hold_ward(ctx):
    """Bounded: a head over 16 KiB is refused, 40 connections that never
    send a head and a relay to an origin that never answers do not keep the
    run (or ward) from ending when the code does."""
    import time
    h = Holder()
    try:
        pol = proxy_policy(ctx, [f"slow.test:{h.port}"])
        code = ("import socket, sys\n"
                "idle = [socket.create_connection(('127.0.0.1', 3128)) for _ in range(40)]\n"
                "s = socket.create_connection(('127.0.0.1', 3128), timeout=10)\n"
                "try:\n"
                "    s.sendall(b'GET http://slow.test/ HTTP/1.1\\r\\nX: ' + b'a' * 20000)\n"
                "except OSError:\n"
                "    pass\n"
                "print(s.recv(4096).split(b'\\r\\n')[0].decode(), flush=True)\n"
                "s = socket.create_connection(('127.0.0.1', 3128), timeout=10)\n"
                "s.sendall(f'GET http://slow.test:{sys.argv[1]}/ HTTP/1.1\\r\\n\\r\\n'.encode())\n"
                "print('sent', flush=True)\n"
                "import os; os._exit(0)\n")
        t0 = time.monotonic()
        r = run(ctx, code, "--policy", pol, "--add-host", "slow.test:127.0.0.1",
                "--", str(h.port))
        took = time.monotonic() - t0
    finally:
        h.close()
    assert r.code == 0 and r.stdout.split("\n")[:2] == ["HTTP/1.1 400 Bad Request", "sent"], r
    assert took < 8, f"the run took {took:.1f} s"
    rows = proxy_rows(ctx)
    assert any(x["rule"] == "net.proxy-request" and "over 16384" in x["reason"]
               for x in rows), rows
    # the relay to the silent origin was ended by the run's end, recorded
    assert any(x["decision"] == "allow" and x["raw"] == f"slow.test:{h.port}"
               for x in rows), rows


def test_as_an_ordinary_user(ctx):
    """ward as uid 65534 (a user namespace, no CAP_SYS_ADMIN of its own):
    the proxy's socket is made by the run's init and taken with
    pidfd_getfd; the code holds no socket of ward's when it starts."""
    o = Origin()
    try:
        pol = proxy_policy(ctx, [f"mirror.test:{o.port}"])
        os.chmod(pol, 0o644)
        code = ("import os, urllib.request\n"
                "n = 0\n"
                "for f in os.listdir('/proc/self/fd'):\n"
                "    try:\n"
                "        n += os.readlink('/proc/self/fd/' + f).startswith('socket:')\n"
                "    except OSError:\n"
                "        pass\n"
                "print('sockets at start:', n)\n"
                f"print(urllib.request.urlopen('http://mirror.test:{o.port}/u').read().decode())\n")
        p, home = ward_as_nobody(ctx, "run", "--db", lambda h: os.path.join(h, "a.db"),
                                 "--policy", pol, "--add-host", "mirror.test:127.0.0.1",
                                 "-c", code)
    finally:
        o.close()
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert p.stdout.split("\n")[:2] == ["sockets at start: 0", "origin says hi"], p.stdout


def test_batch_passes_add_host(ctx):
    o = Origin()
    try:
        pol = proxy_policy(ctx, [f"mirror.test:{o.port}"])
        s = ctx.write("s.jsonl", json.dumps(
            {"id": "fetch", "code": "import urllib.request\n"
             f"print(urllib.request.urlopen('http://mirror.test:{o.port}/b').read().decode().strip())",
             "expect_stdout": "origin says hi\n"}) + "\n")
        out = ctx.path("res.jsonl")
        r = ctx.ward("batch", "--db", ctx.db, "--out", out, "--policy", pol,
                     "--add-host", "mirror.test:127.0.0.1", s)
    finally:
        o.close()
    assert r.code == 0, r
    with open(out) as f:
        res = [json.loads(l) for l in f]
    assert len(res) == 1 and res[0]["pass"] is True, res
    assert o.seen == [(f"mirror.test:{o.port}", "/b")], o.seen


def test_recheck_judges_proxy_rows_again(ctx):
    """ward recheck decides a proxy row again by name, then by the address
    it reached: another allow_domains list or allow_private changes it."""
    o = Origin()
    try:
        pol = proxy_policy(ctx, [f"mirror.test:{o.port}", f"evil.test:{o.port}"])
        r = run(ctx, GET + "urllib.request.urlopen\n", "--policy", pol,
                "--add-host", "mirror.test:127.0.0.1",
                "--add-host", "evil.test:169.254.169.254",
                "--", f"http://mirror.test:{o.port}/")
        assert r.code == 0 and "origin says hi" in r.stdout, r
        r = run(ctx, GET, "--policy", pol, "--add-host", "evil.test:169.254.169.254",
                "--", f"http://evil.test:{o.port}/")
        assert "HTTP 403" in r.stdout, r
    finally:
        o.close()
    other = proxy_policy(ctx, [f"evil.test:{o.port}"],
                         private=("127.0.0.1", "169.254.169.254"))
    r = ctx.ward("recheck", "--db", ctx.db, "--all", "--policy", other, "--json")
    assert r.code == 0, r
    text = r.stdout
    assert "net.allow_domains[0] -> default" in ctx.ward(
        "recheck", "--db", ctx.db, "--all", "--policy", other).stdout
    assert "net.proxy-address -> net.allow_domains[0]" in ctx.ward(
        "recheck", "--db", ctx.db, "--all", "--policy", other).stdout, text


def test_session_cells_go_through_the_proxy(ctx):
    """ward serve: a session whose policy has allow_domains and net.hosts
    reaches the name from every cell, one proxy row per connection."""
    import subprocess
    from wardtest import ward_bin
    o = Origin()
    try:
        pol = proxy_policy(ctx, [f"mirror.test:{o.port}"],
                           hosts={"mirror.test": "127.0.0.1"})
        p = subprocess.Popen([ward_bin(), "serve", "--db", ctx.db], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=ctx.tmp)
        try:
            def call(i, method, params):
                p.stdin.write(json.dumps({"id": i, "method": method, "params": params}) + "\n")
                p.stdin.flush()
                return json.loads(p.stdout.readline())
            sid = call(1, "session.create", {"language": "python", "policy": pol}
                       )["result"]["session_id"]
            texts = []
            for i, path in ((2, "a"), (3, "b")):
                r = call(i, "run", {"session_id": sid, "code":
                                    "import urllib.request\n"
                                    f"urllib.request.urlopen('http://mirror.test:{o.port}/{path}')"
                                    ".read().decode()"})["result"]
                texts.append(r["results"][0]["text"])
        finally:
            p.stdin.close()
            p.wait(timeout=60)
    finally:
        o.close()
    assert texts == ["'origin says hi\\n'"] * 2, texts
    assert [s[1] for s in o.seen] == ["/a", "/b"], o.seen
    rows = ctx.sql("select raw, decision from events where syscall = 'proxy'")
    assert rows == [{"raw": f"mirror.test:{o.port}", "decision": "allow"}] * 2, rows
