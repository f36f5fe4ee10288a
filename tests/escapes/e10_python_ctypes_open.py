"""E10: Python's ctypes calls the raw openat syscall (no libc wrapper, no
Python file object): ward must decide it like any other openat."""
import ctypes, os, sys

args = dict(a.split("=", 1) for a in sys.argv[1:])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
fd = libc.syscall(257, ctypes.c_long(-100), args["secret"].encode(), os.O_RDONLY)
if fd < 0:
    print("RESULT", {13: "EACCES", 1: "EPERM", 2: "ENOENT"}.get(ctypes.get_errno(), "E?"), flush=True)
else:
    print("RESULT ok")
    print("GOT", os.read(fd, 200).decode(errors="replace"))
print("AFTER", flush=True)
