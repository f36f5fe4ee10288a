"""W04: two requests in one packet: the first to the allowed host (the
decoy), the second to the refused one. The proxy forwards one request per
connection (the first's head and its Content-Length body) and drops the
rest: the canary sees nothing. Also a CONNECT to the allowed host whose
"ClientHello" is a plain request for the refused one (CONNECT carries TLS
only)."""
import socket, sys

args = dict(a.split("=", 1) for a in sys.argv[1:])
ok, bad = f"allowed.test:{args['dport']}", f"refused.test:{args['port']}"
first = f"GET http://{ok}/ HTTP/1.1\r\nHost: {ok}\r\nContent-Length: 2\r\n\r\nhi"
second = f"GET http://{bad}/ HTTP/1.1\r\nHost: {bad}\r\n\r\n"
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall((first + second).encode())
try:
    while s.recv(4096):
        pass
except OSError:
    pass
s.close()
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
s.sendall(f"CONNECT {ok} HTTP/1.1\r\n\r\n{second}".encode())
got = b""
try:
    while True:
        b = s.recv(4096)
        if not b:
            break
        got += b
except OSError:
    pass
s.close()
print("RESULT", "ok" if got.startswith(b"HTTP/1.1 200 ") and
      got.count(b"HTTP/1.1") == 1 else "ODD %r" % got[:200], flush=True)
print("AFTER", flush=True)
