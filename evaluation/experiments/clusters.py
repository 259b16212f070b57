"""Gaussian clusters: streams where the cluster assumption holds, and where it misleads.

Semi-supervised learning from unlabeled rows rests on the cluster assumption: rows of one
class gather, so that the unlabeled rows show where the classes lie. `clusters` is a stream
where it holds (each class one Gaussian cluster); `clusters-across` has the very same rows
with a class that cuts across the clusters (the side of a random hyperplane through the
rows' median), where the unlabeled rows' structure points the wrong way.
"""

from __future__ import annotations

import numpy as np

#: Features, clusters and each cluster's standard deviation per feature.
N_FEATURES, N_CLUSTERS, SPREAD = 20, 10, 0.15


def clusters(seed: int, instances: int, across: bool = False):
    """`instances` rows `(x, y)` of the stream (`across`: classes that cut across the clusters);
    features in [0, 1], the clusters' centres drawn uniformly in [0.25, 0.75]."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.25, 0.75, (N_CLUSTERS, N_FEATURES))
    cluster = rng.integers(0, N_CLUSTERS, instances)
    X = np.clip(centres[cluster] + rng.normal(0.0, SPREAD, (instances, N_FEATURES)), 0.0, 1.0)
    y = cluster
    if across:
        side = X @ rng.normal(size=N_FEATURES)
        y = (side > np.median(side)).astype(np.int64)
    return [({j: float(v) for j, v in enumerate(row)}, int(c)) for row, c in zip(X, y)]


class Endless:
    """The `clusters` stream without end, as River's generators are (`n_features`, iterated
    afresh from its seed), drawn `block` rows at a time: what a scenario whose centres change
    takes its rows from (`drift`)."""

    n_features = N_FEATURES

    def __init__(self, seed: int, block: int = 1_000):
        self.seed, self.block = seed, block

    def __iter__(self):
        rng = np.random.default_rng(self.seed)
        centres = rng.uniform(0.25, 0.75, (N_CLUSTERS, N_FEATURES))
        while True:
            cluster = rng.integers(0, N_CLUSTERS, self.block)
            X = centres[cluster] + rng.normal(0.0, SPREAD, (self.block, N_FEATURES))
            for row, c in zip(np.clip(X, 0.0, 1.0), cluster):
                yield {j: float(v) for j, v in enumerate(row)}, int(c)
