# 5000 small files in $TMPDIR: create+write, then stat + open/read + unlink
import os
import tempfile

N = 5000
with tempfile.TemporaryDirectory() as d:
    for i in range(N):
        with open(os.path.join(d, f"f{i}.txt"), "w") as f:
            f.write("x" * 64)
    total = 0
    for i in range(N):
        p = os.path.join(d, f"f{i}.txt")
        total += os.stat(p).st_size
        with open(p) as f:
            total += len(f.read())
        os.unlink(p)
    print("bytes", total)
