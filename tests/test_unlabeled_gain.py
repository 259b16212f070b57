"""What unlabeled rows are worth to each hybrid, against its own `learn_unlabeled=False`
ablation (the same rows, batches and draws), on small streams the development suite does not
hold: ten Gaussian clusters in 50 dimensions, where unlabeled rows carry the classes' shape,
and a noisy hyperplane, where they carry nothing and must not cost much."""

from __future__ import annotations

import numpy as np
import pytest

from river_dhbm import DHBM, DHDA, HSDA, SBEN

HYBRIDS = {"DHBM": DHBM, "DHDA": DHDA, "SBEN": SBEN}
#: The HSDA's unlabeled rows do not pay on the clusters (-0.003 +- 0.004, its Notes): it is held
#: to the second test only.
ALL = {**HYBRIDS, "HSDA": HSDA}


def _clusters(n, seed, k=10, d=50, sd=0.45):
    """`k` Gaussian clusters, centres uniform in the unit box, clipped to [0, 1]."""
    rng = np.random.default_rng(seed)
    centres = rng.random((k, d))
    y = rng.integers(0, k, n)
    return np.clip(centres[y] + rng.normal(0.0, sd, (n, d)), 0.0, 1.0), y


def _hyperplane(n, seed, d=10, noise=0.05):
    """Two classes split by a random hyperplane through the box's centre, 5 % labels flipped."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = ((X - 0.5) @ rng.normal(size=d) > 0).astype(int)
    flip = rng.random(n) < noise
    y[flip] = 1 - y[flip]
    return X, y


def _accuracy(model, X, y, labeled) -> float:
    """Prequential accuracy over the whole stream (test-then-train on the array path)."""
    codes = model.test_then_train_arrays(X, y, labeled)
    known = np.array(model.classes_ + [None], dtype=object)  # -1: no class known yet
    return float((known[codes] == y).mean())


def _gains(cls, make, ratio, seeds=(1, 2, 3), n=6000):
    gains = []
    for seed in seeds:
        X, y = make(n, seed)
        labeled = np.random.default_rng(seed + 10).random(n) < ratio
        gains.append(_accuracy(cls(seed=seed), X, y, labeled)
                     - _accuracy(cls(seed=seed, learn_unlabeled=False), X, y, labeled))
    return np.array(gains)


@pytest.mark.parametrize("name", HYBRIDS)
def test_unlabeled_rows_pay_where_the_classes_are_clusters(name):
    """0.5 % labels (about 30 of 6,000 rows); the gains measured over seeds 1-3 are in the
    message."""
    gains = _gains(HYBRIDS[name], _clusters, 0.005)
    assert gains.min() > 0.02, gains


@pytest.mark.parametrize("name", ALL)
def test_unlabeled_rows_cost_little_where_they_carry_nothing(name):
    """10 % labels on a noisy hyperplane (at 1 % the DHBM loses about 0.01: see its Notes)."""
    gains = _gains(ALL[name], _hyperplane, 0.1)
    assert gains.mean() > -0.01, gains


def test_the_gain_needs_the_unlabeled_rows():
    """The negative control of the gain: with every row labeled there is nothing unlabeled to
    learn from, and the model and its ablation are the same model."""
    X, y = _clusters(600, 1)
    labeled = np.ones(600, dtype=bool)
    assert _accuracy(DHBM(seed=1), X, y, labeled) == _accuracy(
        DHBM(seed=1, learn_unlabeled=False), X, y, labeled)
