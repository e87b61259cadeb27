import os
import pickle

CACHE = "features.pkl"

def compute():
    return {i: i * i for i in range(1000)}

if os.path.exists(CACHE):
    with open(CACHE, "rb") as f:
        features = pickle.load(f)
else:
    features = compute()
    with open(CACHE, "wb") as f:
        pickle.dump(features, f)
print(len(features))
