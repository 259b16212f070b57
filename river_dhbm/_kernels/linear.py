"""The linear expert's kernels (`river_dhbm.linear_expert`): its softmax over standardized
inputs, and its update, one call per mini-batch.

The inputs are standardized by the running mean and variance of every row the expert has seen,
labeled or not (`mean`, `m2`: Welford's sums, `count [1]`); a feature that has not varied yet
is left unscaled.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from river_dhbm._kernels.build import INNER, JIT
from river_dhbm._kernels.replay import memory_replay

#: Precision of the Gaussian prior on each weight of a standardized feature and each bias: the
#: objective is the log loss summed over the labeled rows the expert can replay plus
#: `PRIOR_PRECISION / 2 * (|W|^2 + |b|^2)`, as scikit-learn's `LogisticRegression(C=1)` with
#: the biases under the prior too. A step's mean gradient over its rows gets `PRIOR_PRECISION /
#: rows held` times the parameters: with a few hundred noisy labels they stay near zero unless
#: the labels agree. The biases too: with a handful of labels (0.1 % of a stream), a prior on
#: the weights alone let the biases decide, and the expert predicted the majority class.
PRIOR_PRECISION = 1.0


@njit(**JIT, **INNER)
def _softmax_row(W, b, mean, scale, x, z, p):
    """`p = softmax(W z + b)` of one row `x`, `z` its standardized values (written)."""
    d = x.shape[0]
    for j in range(d):
        z[j] = (x[j] - mean[j]) * scale[j]
    K = W.shape[0]
    top = -np.inf
    for k in range(K):
        s = b[k]
        for j in range(d):
            s += W[k, j] * z[j]
        p[k] = s
        top = max(top, s)
    total = 0.0
    for k in range(K):
        p[k] = math.exp(p[k] - top)
        total += p[k]
    for k in range(K):
        p[k] /= total


@njit(**JIT, **INNER)
def _scale(m2, count, scale):
    """`1 / standard deviation` of each feature, 1 where it has not varied."""
    for j in range(m2.shape[0]):
        var = m2[j] / count[0] if count[0] > 0 else 0.0
        scale[j] = 1.0 / math.sqrt(var) if var > 1e-18 else 1.0


@njit(**JIT, **INNER)
def linear_proba(W, b, mean, m2, count, X, out):
    """`p(y | x)` of the rows of `X` into `out [n, K]`."""
    d = X.shape[1]
    scale = np.empty(d)
    _scale(m2, count, scale)
    z = np.empty(d)
    for r in range(X.shape[0]):
        _softmax_row(W, b, mean, scale, X[r], z, out[r])


@njit(**JIT)
def linear_learn(W, b, mean, m2, count, X, codes, n, mem_X, mem_y, mem_rows, mem_state, u,
                 steps, now, horizon, rate, out_X, out_codes):
    """One update of the linear expert on the first `n` rows of the mini-batch `(X, codes)`
    (-1 unlabeled): every row joins the running mean and variance, then `steps` gradient
    steps of the softmax's log loss, each averaged over the batch's labeled rows and its own
    share of the replayed rows of the label memory, one per uniform in `u` (`memory_replay`,
    into the work arrays `out_X`, `out_codes`)."""
    d = X.shape[1]
    for r in range(n):  # Welford's running sums
        count[0] += 1
        for j in range(d):
            delta = X[r, j] - mean[j]
            mean[j] += delta / count[0]
            m2[j] += delta * (X[r, j] - mean[j])
    K = W.shape[0]
    scale = np.empty(d)
    _scale(m2, count, scale)
    z = np.empty(d)
    p = np.empty(K)
    grad_W = np.empty((K, d))
    grad_b = np.empty(K)
    R = u.shape[0] // steps
    for s in range(steps):
        m = memory_replay(mem_X, mem_y, mem_rows, mem_state, X, codes, n,
                          u[s * R : (s + 1) * R], out_X, out_codes, now, horizon)
        grad_W[:] = 0.0
        grad_b[:] = 0.0
        learnt = 0
        for r in range(m):
            c = out_codes[r]
            if c < 0:
                continue
            learnt += 1
            _softmax_row(W, b, mean, scale, out_X[r], z, p)
            p[c] -= 1.0
            for k in range(K):
                grad_b[k] += p[k]
                for j in range(d):
                    grad_W[k, j] += p[k] * z[j]
        if learnt == 0:
            return
        step = rate / learnt
        decay = 1.0 - rate * PRIOR_PRECISION / max(mem_state[0], learnt)
        for k in range(K):
            b[k] = decay * b[k] - step * grad_b[k]
            for j in range(d):
                W[k, j] = decay * W[k, j] - step * grad_W[k, j]
