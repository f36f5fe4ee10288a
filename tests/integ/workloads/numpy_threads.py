import threading
import numpy as np

results = [None] * 4


def work(i):
    a = np.arange(200 * 200, dtype=float).reshape(200, 200) / 1e4 + i
    for _ in range(3):
        b = a @ a
    results[i] = round(float(b.trace()), 3)


ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(results)
