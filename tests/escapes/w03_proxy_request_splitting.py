"""W03: request splitting: a CR LF (or a bare LF, or a bare CR) inside the
request target or a header, so that a lenient parser would see a second
request line or Host naming the refused host. Each must be refused whole
(400) and the canary see nothing."""
import socket, sys

args = dict(a.split("=", 1) for a in sys.argv[1:])
ok, bad = f"allowed.test:{args['dport']}", f"refused.test:{args['port']}"
tries = [
    f"GET http://{ok}/\r\nGET http://{bad}/ HTTP/1.1\r\n\r\n",
    f"GET http://{ok}/ HTTP/1.1\nHost: {bad}\n\n",
    f"GET http://{ok}/ HTTP/1.1\r\nX: y\rHost: {bad}\r\n\r\n",
    f"CONNECT {ok}\r\nCONNECT {bad} HTTP/1.1\r\n\r\n",
    f"GET http://{ok}/ HTTP/1.1\r\nX: a\r\n Host: {bad}\r\n\r\n",
    f"GET http://{ok}/%0d%0aHost:{bad} HTTP/1.1\r\nHost: {bad}\r\n\r\n",
    f"GET http://{ok}/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET http://{bad}/ HTTP/1.1\r\n\r\n",
    f"GET http://{ok}/ HTTP/1.1\r\nContent-Length: 0\r\nContent-Length: 60\r\n\r\nGET http://{bad}/ HTTP/1.1\r\n\r\n",
]
leaks = []
for req in tries:
    s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    s.sendall(req.encode())
    status = s.recv(4096).split(b"\r\n")[0]
    s.close()
    if b" 400 " not in status:
        leaks.append((req.split("\r\n")[0], status))
print("RESULT", "REFUSED" if not leaks else "LEAK %r" % leaks, flush=True)
print("AFTER", flush=True)
