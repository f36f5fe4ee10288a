# 4 Python threads x 6 numpy 600x600 matmuls (the GIL is released in BLAS)
import threading

import numpy as np

rng = np.random.default_rng(0)
a = rng.standard_normal((600, 600))
b = rng.standard_normal((600, 600))
res = [0.0] * 4


def work(k):
    m = a
    for _ in range(6):
        m = (m @ b) / 25.0
    res[k] = float(m.sum())


ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("threads", len(res), all(r == res[0] for r in res))
