"""W02: DNS rebinding: names the policy allows (with the canary's port)
whose answer is loopback, in plain, IPv4-mapped and 0.0.0.0 forms. The
proxy judges the address after resolution: each is refused (403) and the
canary on 127.0.0.1 sees nothing."""
import socket, sys

args = dict(a.split("=", 1) for a in sys.argv[1:])
leaks = []
for name in ("rebind.test", "rebind6.test", "rebind0.test"):
    for req in (f"CONNECT {name}:{args['port']} HTTP/1.1\r\n\r\n",
                f"GET http://{name}:{args['port']}/ HTTP/1.1\r\n\r\n"):
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(req.encode())
        status = s.recv(4096).split(b"\r\n")[0]
        s.close()
        if b" 403 " not in status:
            leaks.append((req.split("\r\n")[0], status))
print("RESULT", "REFUSED" if not leaks else "LEAK %r" % leaks, flush=True)
print("AFTER", flush=True)
