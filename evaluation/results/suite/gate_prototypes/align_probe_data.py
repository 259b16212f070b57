import numpy as np
def bananas(n, seed):
    import river.datasets as rd
    rows = list(rd.Bananas())
    rng = np.random.default_rng(seed); order = rng.permutation(len(rows))
    X = np.array([[r[0][k] for k in sorted(r[0])] for r in rows])[order]
    X = (X - X.min(0)) / (X.max(0) - X.min(0))
    y = np.array([int(r[1]) for r in rows])[order]
    return X[:n], y[:n]
