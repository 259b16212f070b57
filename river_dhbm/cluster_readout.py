"""The generative readout's second family: diagonal Gaussian clusters fitted to every row and
named by the labels (cluster-then-label), for streams whose classes are not product
distributions.

Waveform is the case: every instance mixes two of three base waves, so each class is a
segment, and the segments share their ends. Class-conditional models fitted to unlabeled rows
move away from the classes (measured in `docs/results.md`), but many small clusters, each
named by the labeled rows that fall in it, follow the segments: `CLUSTERS` components reach
about 0.165 at 0.1 % labels on the stationary Waveform, where the networks reach 0.17-0.19
from the labels alone.

How it learns (`cluster_learn`, one call per mini-batch):

- the first `WARM_ROWS` rows it may learn from (every row; the labeled ones only without
  `learn_unlabeled`) wait in a buffer; then `cluster_fit` runs `EM_STEPS` steps of batch EM on
  them, started from evenly spaced buffer rows with the buffer's variances (online EM started
  from single rows lets two components take every row: measured, 2 of 24 survived);
- afterwards each mini-batch is one stepwise EM step, its sums decaying over about
  `generative_readout.UNLABELED_WINDOW` rows;
- the labeled rows name the clusters: `names[c, k]` sums the posterior of cluster `c` over the
  labels of class `k`, decaying over about `generative_readout.LABELED_WINDOW` labels.

It predicts `p(y | x) = sum_c p(c | x) p(y | c)`, `p(y | c)` from the names smoothed by
`NAME_PRIOR` (classes no label has named get 0; uniform before the fit).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm.kernels import _JIT

__all__ = ["CLUSTERS", "WARM_ROWS", "cluster_fit", "cluster_learn", "cluster_posteriors",
           "cluster_proba"]

CLUSTERS = 24  # components (DESIGN: 12-24 named Gaussians reach 0.15-0.17 on Waveform)
WARM_ROWS = 5_000  # rows fitted by batch EM before the online steps
EM_STEPS = 30  # batch EM steps on the warm-up rows
VARIANCE_FLOOR = 0.05  # a cluster's variance floor, as a share of the warm-up rows' variance
NAME_PRIOR = 0.1  # pseudo-count of every class in every cluster's name
NEGLIGIBLE = 1e-9  # a row's posterior below which it adds nothing to a cluster's sums


@njit(**_JIT)
def _params(weights, sums, squares, floor, mu, inv_var, const):
    """Means, inverse variances and log-normalising constants (with the log weight)."""
    for c in range(weights.shape[0]):
        n = max(weights[c], 1e-12)
        const[c] = np.log(n)
        block = 1.0  # the variances' product over 8 attributes at a time: one log per 8
        for j in range(sums.shape[1]):
            m = sums[c, j] / n
            v = max(squares[c, j] / n - m * m, floor[j])
            mu[c, j] = m
            inv_var[c, j] = 1.0 / v
            block *= v
            if j % 8 == 7 or j == sums.shape[1] - 1:
                const[c] -= 0.5 * np.log(block)
                block = 1.0


@njit(**_JIT)
def cluster_posteriors(weights, sums, squares, floor, X, n, R):
    """`p(cluster | x)` of the first `n` rows of `X` into `R [n, CLUSTERS]`."""
    M, d = sums.shape
    mu, inv_var, const = np.empty((M, d)), np.empty((M, d)), np.empty(M)
    _params(weights, sums, squares, floor, mu, inv_var, const)
    for r in range(n):
        top = -np.inf
        for c in range(M):
            q = 0.0
            for j in range(d):
                e = X[r, j] - mu[c, j]
                q += e * e * inv_var[c, j]
            R[r, c] = const[c] - 0.5 * q
            top = max(top, R[r, c])
        z = 0.0
        for c in range(M):
            R[r, c] = np.exp(R[r, c] - top)
            z += R[r, c]
        for c in range(M):
            R[r, c] /= z


@njit(**_JIT)
def _accumulate(weights, sums, squares, X, R, rows, keep):
    """Decay the sums by `keep`, then add the rows `rows` (a bool mask) weighted by `R`."""
    M, d = sums.shape
    for c in range(M):
        weights[c] *= keep
        for j in range(d):
            sums[c, j] *= keep
            squares[c, j] *= keep
    for r in range(rows.shape[0]):
        if not rows[r]:
            continue
        for c in range(M):
            w = R[r, c]
            if w < NEGLIGIBLE:  # most clusters are far from a row: skip what cannot count
                continue
            weights[c] += w
            for j in range(d):
                sums[c, j] += w * X[r, j]
                squares[c, j] += w * X[r, j] * X[r, j]


@njit(**_JIT)
def cluster_fit(buffer, weights, sums, squares, floor):
    """Batch EM on the buffered rows, from evenly spaced rows as means, the rows' variances
    (whose `VARIANCE_FLOOR` share becomes `floor`) and equal weights."""
    N, d = buffer.shape
    M = weights.shape[0]
    for j in range(d):
        m = 0.0
        for r in range(N):
            m += buffer[r, j]
        m /= N
        v = 0.0
        for r in range(N):
            v += (buffer[r, j] - m) ** 2
        v = max(v / N, 1e-12)
        floor[j] = VARIANCE_FLOOR * v
        for c in range(M):
            x = buffer[c * (N // M), j]
            weights[c] = N / M
            sums[c, j] = weights[c] * x
            squares[c, j] = weights[c] * (v + x * x)
    R = np.empty((N, M))
    every = np.ones(N, dtype=np.bool_)
    for _ in range(EM_STEPS):
        cluster_posteriors(weights, sums, squares, floor, buffer, N, R)
        _accumulate(weights, sums, squares, buffer, R, every, 0.0)
    return R


@njit(**_JIT)
def _name(names, R, codes, keep):
    """Decay the names by `keep` and add each labeled row's cluster posterior to its class."""
    for c in range(names.shape[0]):
        for k in range(names.shape[1]):
            names[c, k] *= keep
    for r in range(codes.shape[0]):
        if codes[r] >= 0:
            for c in range(names.shape[0]):
                names[c, codes[r]] += R[r, c]


@njit(**_JIT)
def cluster_learn(weights, sums, squares, names, floor, buffer, buffer_codes, state, X, codes,
                  n, R, learn_unlabeled, window, label_window):
    """Learn the first `n` rows of `(X, codes)`: into the warm-up buffer until it is full (then
    `cluster_fit` and the buffer's labels name the clusters), afterwards one stepwise EM step
    with their posteriors `R` (`cluster_posteriors`, before this step). `state [2]` int64: rows
    buffered, whether the clusters are fitted. Without `learn_unlabeled` only the labeled rows
    count."""
    if state[1] == 0:
        for r in range(n):
            if (learn_unlabeled or codes[r] >= 0) and state[0] < buffer.shape[0]:
                for j in range(X.shape[1]):
                    buffer[state[0], j] = X[r, j]
                buffer_codes[state[0]] = codes[r]
                state[0] += 1
        if state[0] == buffer.shape[0]:
            R = cluster_fit(buffer, weights, sums, squares, floor)
            _name(names, R, buffer_codes, 1.0)
            state[1] = 1
        return
    rows = np.empty(n, dtype=np.bool_)
    learnt = 0
    labeled = 0
    for r in range(n):
        rows[r] = learn_unlabeled or codes[r] >= 0
        learnt += rows[r]
        labeled += codes[r] >= 0
    if learnt:
        _accumulate(weights, sums, squares, X, R, rows, (1.0 - 1.0 / window) ** learnt)
    if labeled:
        _name(names, R, codes[:n], (1.0 - 1.0 / label_window) ** labeled)


@njit(**_JIT)
def cluster_proba(names, state, R, out):
    """`p(y | x) = sum_c p(c | x) p(y | c)` of the rows whose cluster posteriors are `R`
    (`cluster_posteriors`) into `out [n, C]`; uniform before the fit (`R` unused)."""
    n, C = out.shape
    if state[1] == 0:
        for r in range(n):
            for k in range(C):
                out[r, k] = 1.0 / C
        return out
    M = names.shape[0]
    named = np.zeros(C, dtype=np.bool_)
    p_class = np.empty((M, C))
    for c in range(M):
        z = 0.0
        for k in range(C):
            z += names[c, k] + NAME_PRIOR
            named[k] |= names[c, k] > 0.0
        for k in range(C):
            p_class[c, k] = (names[c, k] + NAME_PRIOR) / z
    for r in range(n):
        z = 0.0
        for k in range(C):
            v = 0.0
            if named[k]:
                for c in range(M):
                    v += R[r, c] * p_class[c, k]
            out[r, k] = v
            z += v
        for k in range(C):
            out[r, k] = out[r, k] / z if z > 0.0 else 1.0 / C
    return out
