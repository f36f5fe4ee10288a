"""W01: smuggle a refused host past the proxy's name check: the CONNECT
target or absolute URI names the allowed host, a Host header (or a second
Host) names the refused one. The proxy must refuse the request (400),
reaching nobody; the refused host (the canary) must see nothing."""
import socket, sys

args = dict(a.split("=", 1) for a in sys.argv[1:])
ok, bad = f"allowed.test:{args['dport']}", f"refused.test:{args['port']}"
tries = [
    f"CONNECT {ok} HTTP/1.1\r\nHost: {bad}\r\n\r\n",
    f"GET http://{ok}/ HTTP/1.1\r\nHost: {bad}\r\n\r\n",
    f"GET http://{ok}/ HTTP/1.1\r\nHost: {ok}\r\nHost: {bad}\r\n\r\n",
    f"GET http://{ok}@{bad}/ HTTP/1.1\r\n\r\n",
    f"GET http://{bad}/ HTTP/1.1\r\nHost: {ok}\r\n\r\n",
    f"GET / HTTP/1.1\r\nHost: {bad}\r\n\r\n",
]
leaks = []
for req in tries:
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(req.encode())
    status = s.recv(4096).split(b"\r\n")[0]
    s.close()
    if b" 400 " not in status and b" 403 " not in status:
        leaks.append((req.split("\r\n")[0], status))
print("RESULT", "REFUSED" if not leaks else "LEAK %r" % leaks, flush=True)
print("AFTER", flush=True)
