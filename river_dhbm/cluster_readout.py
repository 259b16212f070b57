"""The generative readout's second family: diagonal Gaussian clusters fitted to the recent rows
and named by the labels (cluster-then-label), for streams whose classes are not product
distributions.

Waveform is the case: every instance mixes two of three base waves, so each class is a
segment, and the segments share their ends. Class-conditional models fitted to unlabeled rows
move away from the classes (measured in `docs/results.md`), but many small clusters, each
named by the labeled rows that fall in it, follow the segments: on their own they reach about
0.17 at 0.1 % labels on the stationary Waveform and 0.175 on the drifting one (seeds 11-13),
where the DHBM's and DHDA's networks reach 0.18-0.19 and 0.25.

How it learns (`cluster_learn`, one call per mini-batch):

- the rows it may learn from (every row; the labeled ones only without `learn_unlabeled`) go
  into a ring of the last `BUFFER` rows (fewer for inputs wider than 250 features:
  `ring_rows`);
- when the ring first fills, and every `REFIT` rows after, `cluster_fit` runs batch EM on the
  ring twice: from evenly spaced ring rows (a fresh start, which is what follows drift:
  warm-started EM stays in the old concept's partition, measured 0.28-0.34 on the drifting
  Waveform at 0.1 % against 0.18-0.21 fresh) and from the clusters it has (which keeps a good
  fit on a stationary stream), and keeps the fit with the higher likelihood of the ring;
- the labeled rows name the clusters: `names[c, k]` sums the posterior of cluster `c` over the
  last `LABEL_RING` labels of class `k`, each decayed by `1 - 1 / LABELED_WINDOW` per newer
  label; after a refit the names are summed again from that ring.

It predicts `p(y | x) = sum_c p(c | x) p(y | c)`, `p(y | c)` from the names smoothed by
`NAME_PRIOR` (classes no label has named get 0; uniform before the first fit).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm.kernels import _JIT

__all__ = ["ClusterState", "cluster_learn", "cluster_posteriors", "cluster_proba", "ring_labels"]

# Chosen on Waveform at 0.1 % labels, seeds 11-13, the clusters alone (stationary / drifting):
# 24 clusters, 5,000 rows, a fit every 20,000: 0.183 / 0.186; every 5,000: 0.182 / 0.189; 36
# clusters 0.184 / 0.190; 16 clusters 0.177 / 0.185; 16 clusters, 10,000 rows, every 25,000:
# 0.167 / 0.175; every 50,000: 0.179 / 0.176. The fits are most of the readout's cost.
CLUSTERS = 16  # components
BUFFER = 10_000  # the recent rows a fit sees ...
RING_FLOATS = 2_500_000  # ... unless that would hold more numbers (20 MB): wide inputs get fewer
REFIT = 25_000  # rows between fits
EM_STEPS = 10  # batch EM steps from a fresh start
WARM_STEPS = 5  # batch EM steps from the clusters it has (already near an optimum)
VARIANCE_FLOOR = 0.05  # a cluster's variance floor, as a share of the ring's variance
NAME_PRIOR = 0.1  # pseudo-count of every class in every cluster's name
LABEL_RING = 1_000  # labeled rows kept to name the clusters (and the plane) again after a fit
LABELED_WINDOW = 250  # labels the names remember (1 / their decay rate)
_EMPTY = 1e-8  # a cluster whose weight falls below this keeps its previous parameters


@njit(**_JIT)
def cluster_posteriors(log_w, means, inv_var, X, n, R):
    """`p(cluster | x)` of the first `n` rows of `X` into `R [n, M]`; returns the rows' summed
    log-likelihood (up to a constant)."""
    M, d = means.shape
    # clusters innermost (transposed copies): the loop over them vectorises
    mu_t, iv_t = means.T.copy(), inv_var.T.copy()
    total = 0.0
    for r in range(n):
        for c in range(M):
            R[r, c] = 0.0
        for j in range(d):
            x = X[r, j]
            for c in range(M):
                e = x - mu_t[j, c]
                R[r, c] += e * e * iv_t[j, c]
        top = -np.inf
        for c in range(M):
            R[r, c] = log_w[c] - 0.5 * R[r, c]
            top = max(top, R[r, c])
        z = 0.0
        for c in range(M):
            # a cluster 40 nats below the best has a posterior under 1e-17: no exp for it
            R[r, c] = np.exp(R[r, c] - top) if R[r, c] - top > -40.0 else 0.0
            z += R[r, c]
        for c in range(M):
            R[r, c] /= z
        total += top + np.log(z)
    return total


@njit(**_JIT)
def _m_step(buffer, R, floor, log_w, means, inv_var):
    """Maximise the clusters' parameters for the posteriors `R` of the ring's rows."""
    N, d = buffer.shape
    M = means.shape[0]
    w = np.zeros(M)
    s = np.zeros((M, d))
    q = np.zeros((M, d))
    for r in range(N):
        for c in range(M):
            p = R[r, c]
            if p < 1e-9:  # most clusters are far from a row: skip what cannot count
                continue
            w[c] += p
            for j in range(d):
                x = buffer[r, j]
                s[c, j] += p * x
                q[c, j] += p * x * x
    for c in range(M):
        if w[c] < _EMPTY:
            log_w[c] = np.log(_EMPTY / N)
            continue
        log_w[c] = np.log(w[c] / N)
        for j in range(d):
            m = s[c, j] / w[c]
            means[c, j] = m
            var = q[c, j] / w[c] - m * m
            var = max(var, floor[j])
            # the log-normaliser enters through the weight: fold -0.5 log var into it
            log_w[c] -= 0.5 * np.log(var)
            inv_var[c, j] = 1.0 / var


@njit(**_JIT)
def _em(buffer, floor, log_w, means, inv_var, R, steps):
    """`steps` steps of batch EM on the ring from the given parameters; returns the ring's
    log-likelihood under the result."""
    N = buffer.shape[0]
    for _ in range(steps):
        cluster_posteriors(log_w, means, inv_var, buffer, N, R)
        _m_step(buffer, R, floor, log_w, means, inv_var)
    return cluster_posteriors(log_w, means, inv_var, buffer, N, R)


@njit(**_JIT)
def cluster_fit(buffer, floor, log_w, means, inv_var, fitted):
    """Fit the clusters to the ring: `EM_STEPS` of EM from evenly spaced ring rows with the
    ring's variances, and (when `fitted`) `WARM_STEPS` from the present parameters; keep the
    likelier."""
    N, d = buffer.shape
    M = means.shape[0]
    f_log_w, f_means, f_inv_var = np.empty(M), np.empty((M, d)), np.empty((M, d))
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
            f_means[c, j] = buffer[c * (N // M), j]
            f_inv_var[c, j] = 1.0 / v
    for c in range(M):
        f_log_w[c] = 0.0
    R = np.empty((N, M))
    fresh = _em(buffer, floor, f_log_w, f_means, f_inv_var, R, EM_STEPS)
    if fitted:
        warm = _em(buffer, floor, log_w, means, inv_var, R, WARM_STEPS)
        if warm >= fresh:
            return
    log_w[:] = f_log_w
    means[:] = f_means
    inv_var[:] = f_inv_var


@njit(**_JIT)
def _name(names, R, codes, n, keep):
    """Decay the names by `keep` per labeled row and add each one's cluster posterior (rows of
    `R`) to its class, in order."""
    for r in range(n):
        if codes[r] < 0:
            continue
        for c in range(names.shape[0]):
            for k in range(names.shape[1]):
                names[c, k] *= keep
            names[c, codes[r]] += R[r, c]


@njit(**_JIT)
def ring_labels(ring_X, ring_codes, state):
    """The labeled rows the label ring holds and their classes, oldest first."""
    L = ring_X.shape[0]
    held = min(state[2], L)
    Xl, cl = np.empty((held, ring_X.shape[1])), np.empty(held, np.int64)
    for i in range(held):
        slot = (state[2] - held + i) % L
        Xl[i], cl[i] = ring_X[slot], ring_codes[slot]
    return Xl, cl


@njit(**_JIT)
def cluster_learn(log_w, means, inv_var, floor, names, buffer, ring_X, ring_codes, state, X,
                  codes, n, learn_unlabeled, R):
    """Learn the first `n` rows of `(X, codes)` (codes: class index, -1 unlabeled; `R`: their
    posteriors under the clusters, once fitted); returns whether it refitted the clusters.
    `state [3]` int64: rows seen, whether fitted, labels seen."""
    B, L = buffer.shape[0], ring_X.shape[0]
    keep = 1.0 - 1.0 / LABELED_WINDOW
    due = False
    for r in range(n):
        if learn_unlabeled or codes[r] >= 0:
            buffer[state[0] % B] = X[r]
            state[0] += 1
            due |= state[0] == B or (state[0] > B and state[0] % REFIT == 0)
        if codes[r] >= 0:
            ring_X[state[2] % L] = X[r]
            ring_codes[state[2] % L] = codes[r]
            state[2] += 1
    if due:
        cluster_fit(buffer, floor, log_w, means, inv_var, state[1] == 1)
        state[1] = 1
        names[:] = 0.0
        Xl, cl = ring_labels(ring_X, ring_codes, state)
        held = cl.shape[0]
        Rl = np.empty((held, means.shape[0]))
        cluster_posteriors(log_w, means, inv_var, Xl, held, Rl)
        _name(names, Rl, cl, held, keep)
    elif state[1] == 1:
        _name(names, R, codes, n, keep)
    return due


@njit(**_JIT)
def cluster_proba(log_w, means, inv_var, names, fitted, X, out, R):
    """`p(y | x) = sum_c p(c | x) p(y | c)` of the rows `X` into `out [n, C]`, their cluster
    posteriors into `R [n, M]`; uniform before the first fit (`R` untouched)."""
    n, C = out.shape
    if not fitted:
        out[:] = 1.0 / C
        return out
    M = names.shape[0]
    cluster_posteriors(log_w, means, inv_var, X, n, R)
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


def ring_rows(n_features: int) -> int:
    """Rows in the ring of recent rows: `BUFFER`, fewer for inputs so wide that the ring would
    hold more than `RING_FLOATS` numbers (never fewer than 10 rows a cluster)."""
    return max(min(BUFFER, RING_FLOATS // max(n_features, 1)), 10 * CLUSTERS)


class ClusterState:
    """The clusters' arrays; grows a class at a time."""

    def __init__(self, n_features: int, n_classes: int = 0):
        M, d = CLUSTERS, n_features
        self.log_w, self.means, self.inv_var = np.zeros(M), np.zeros((M, d)), np.ones((M, d))
        self.floor = np.zeros(d)
        self.names = np.zeros((M, n_classes))
        self.buffer = np.zeros((ring_rows(d), d))
        self.ring_X, self.ring_codes = np.zeros((LABEL_RING, d)), np.zeros(LABEL_RING, np.int64)
        self.state = np.zeros(3, dtype=np.int64)

    def add_class(self) -> None:
        self.names = np.concatenate([self.names, np.zeros((CLUSTERS, 1))], axis=1)

    @property
    def arrays(self) -> tuple:
        """The arguments of `cluster_learn` before the rows."""
        return (self.log_w, self.means, self.inv_var, self.floor, self.names, self.buffer,
                self.ring_X, self.ring_codes, self.state)

    def learn(self, X: np.ndarray, codes: np.ndarray, learn_unlabeled: bool) -> bool:
        """Learn the rows; returns whether the clusters were refitted."""
        R = np.empty((len(X), CLUSTERS))
        if self.state[1] and (codes >= 0).any():  # only the labeled rows' posteriors are used
            cluster_posteriors(self.log_w, self.means, self.inv_var, X, len(X), R)
        return cluster_learn(*self.arrays, X, codes, len(X), learn_unlabeled, R)

    def proba(self, X: np.ndarray) -> np.ndarray:
        return cluster_proba(self.log_w, self.means, self.inv_var, self.names,
                             bool(self.state[1]), X, np.empty((len(X), self.names.shape[1])),
                             np.empty((len(X), CLUSTERS)))
