import numpy as np

rng = np.random.default_rng(42)
samples = rng.normal(loc=3.0, scale=1.5, size=(1000, 3))
means = samples.mean(axis=0)
cov = np.cov(samples, rowvar=False)
print("means", np.round(means, 3))
print("covariance\n", np.round(cov, 3))
np.save("samples.npy", samples)
