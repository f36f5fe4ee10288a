# plot two lines and bars with the Agg backend and save a PNG in $TMPDIR.
# HOME is fresh on every run (as under ward), so this includes matplotlib
# building its font cache in $HOME/.cache (fc-list is run once).
import os
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

x = np.linspace(0, 10, 500)
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(x, np.sin(x), label="sin")
ax.plot(x, np.cos(x), label="cos")
ax.bar(np.arange(10), np.arange(10) / 10.0, alpha=0.3)
ax.set_title("chart")
ax.legend()
with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "chart.png")
    fig.savefig(out, dpi=100)
    print("png bytes", os.path.getsize(out) > 1000)
