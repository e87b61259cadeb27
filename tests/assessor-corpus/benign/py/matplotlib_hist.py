import numpy as np
import matplotlib.pyplot as plt

data = np.loadtxt("measurements.txt")
plt.hist(data, bins=40, color="steelblue")
plt.xlabel("value")
plt.ylabel("count")
plt.savefig("hist.png", dpi=150)
