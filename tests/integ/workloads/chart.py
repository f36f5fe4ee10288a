import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
ax.plot([1, 2, 3, 4], [1, 4, 9, 16], label="squares")
ax.bar([1, 2, 3, 4], [2, 3, 1, 4], alpha=0.3)
ax.legend()
fig.savefig("chart.png")
print("saved")
