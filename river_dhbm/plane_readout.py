"""The generative readout's third family: Gaussian classes in the principal plane of the recent
rows (quadratic discriminant analysis of the labeled rows after an unsupervised projection).

The unlabeled rows teach where the signal lies, the labels what it means. Waveform is the case:
each instance is a random mix of two of three base waves plus noise, so the classes are the
three edges of a triangle in a 2-D plane, and the other 38 directions (19 of the 21 wave
attributes' noise and the 19 noise attributes) are noise. The plane's variances stand far above
the rest (stationary Waveform, 10,000 rows: 0.174 and 0.066 against a median of 0.013), so the
leading two principal directions of a few thousand unlabeled rows find it; in it a few dozen
labels per class fit each edge's Gaussian. Alone, on the stationary Waveform (seeds 11-13):
0.143 at 0.1 % labels and at 1 % (the named clusters 0.176 / 0.162, the Bayes error 0.133).
On the held-out seeds every hybrid predicts with it at 0.1 %: 0.148 on the stationary stream
and 0.155 on the drifting one, against 0.164-0.224 for their labeled-only ablations
(`docs/results.md`). Where the leading directions carry no class signal (LED: the largest
variance is 1.9 times the median) it predicts poorly and the choice passes it by.

How it learns (`plane_learn`, one call per mini-batch, after `cluster_learn` filled the rings):

- when the clusters are refitted (`refitted`), the plane is fitted too: the ring's mean and its
  two leading principal directions (`PLANE_DIM`), and the classes' moments are summed again
  from the label ring, projected;
- between fits every labeled row adds its projection to its class's moments; all moments decay
  by `1 - 1 / PLANE_WINDOW` per label.

It predicts with each class's Gaussian in the plane (mean and covariance from its moments, plus
`RIDGE` times the ring's mean variance per attribute on the diagonal; prior from the decayed
label counts). Classes no label in the ring has named get 0; uniform before the first fit.
Without `learn_unlabeled` the ring holds the labeled rows only, so the plane comes from them.

Why not fit the classes to the unlabeled rows in the plane too: semi-supervised EM with one
Gaussian per class moves them off the edges (the edges are not Gaussian and share their ends):
measured 0.150-0.206 against 0.144-0.178 for the labeled rows alone.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm.cluster_readout import ring_labels
from river_dhbm.kernels import _JIT

__all__ = ["PlaneState", "plane_learn", "plane_proba"]

PLANE_DIM = 2  # principal directions kept (Waveform's signal plane)
# The ridge as a share of the ring's mean variance per attribute (stationary / drifting
# Waveform at 1 % labels, seeds 11-13, a fixed ridge of 1e-2 / 1e-3 / 1e-4 on inputs in [0, 1]
# whose variance is about 0.016: 0.144 / 0.143 / 0.143 and 0.152 / 0.145 / 0.146)
RIDGE = 0.05
# A labeled row farther from the plane than the ring's mean squared distance plus this many
# standard deviations is left out: after a drift the labels of the old concept lie far off the
# new plane (drifting Waveform, seeds 11-12: 1.0 on average against the ring's 0.35-0.38, whose
# standard deviation is 0.09)
OFF_PLANE = 4.0
# Labels the moments remember (1 / their decay rate). Longer than the clusters' names: the
# labels of another concept are left out by their distance from the plane, not by their age
# (tuning seeds, DHDA, stationary / drifting Waveform at 1 %: 250 labels 0.143 / 0.146, 2,000
# with a label ring of 1,000 0.140 / 0.145)
PLANE_WINDOW = 2_000
W, S0, S1, S00, S01, S11 = range(6)  # the columns of `moments`: weight, sums, sums of products


@njit(**_JIT)
def _project(center, basis, x):
    """The coordinates of `x` in the plane and its squared distance from it."""
    z0 = z1 = norm = 0.0
    for j in range(x.shape[0]):
        e = x[j] - center[j]
        z0 += basis[0, j] * e
        z1 += basis[1, j] * e
        norm += e * e
    return z0, z1, norm - z0 * z0 - z1 * z1


@njit(**_JIT)
def _fit_plane(buffer, center, basis, limits):
    """The ring's mean into `center`, its leading principal directions into `basis`; into
    `limits` the ridge (`RIDGE` times the ring's mean variance per attribute) and the farthest a
    labeled row may lie from the plane (`OFF_PLANE` standard deviations above the ring's mean
    squared distance)."""
    N, d = buffer.shape
    for j in range(d):
        center[j] = buffer[:, j].sum() / N
    D = buffer - center
    cov = D.T @ D / N
    values, vectors = np.linalg.eigh(cov)  # ascending
    for i in range(min(PLANE_DIM, d)):  # a single feature is its own plane
        basis[i] = vectors[:, d - 1 - i]
    limits[0] = max(RIDGE * np.trace(cov) / d, 1e-12)
    off = np.empty(N)
    for r in range(N):
        off[r] = _project(center, basis, buffer[r])[2]
    limits[1] = off.mean() + OFF_PLANE * off.std()


@njit(**_JIT)
def _add(moments, center, basis, limits, X, codes, n, keep):
    """Decay every class's moments by `keep` per labeled row and add each one's projection to
    its class, in order (not the rows farther from the plane than `limits[1]`)."""
    for r in range(n):
        k = codes[r]
        if k < 0:
            continue
        moments *= keep
        z0, z1, off = _project(center, basis, X[r])
        if off > limits[1]:  # a row of another concept (drift): it would blur the classes
            continue
        moments[k, W] += 1.0
        moments[k, S0] += z0
        moments[k, S1] += z1
        moments[k, S00] += z0 * z0
        moments[k, S01] += z0 * z1
        moments[k, S11] += z1 * z1


@njit(**_JIT)
def plane_learn(center, basis, moments, limits, buffer, ring_X, ring_codes, state, refitted, X,
                codes, n):
    """Learn the first `n` rows of `(X, codes)` (codes: class index, -1 unlabeled) after
    `cluster_learn` put them in the clusters' rings (`buffer`, `ring_X`, `ring_codes`, `state`)
    and said whether it refitted."""
    keep = 1.0 - 1.0 / PLANE_WINDOW
    if refitted:
        _fit_plane(buffer, center, basis, limits)
        moments[:] = 0.0
        Xl, cl = ring_labels(ring_X, ring_codes, state)
        _add(moments, center, basis, limits, Xl, cl, cl.shape[0], keep)
    elif state[1] == 1:
        _add(moments, center, basis, limits, X, codes, n, keep)


@njit(**_JIT)
def plane_proba(center, basis, moments, limits, fitted, X, out):
    """`p(y | x)` of the rows `X` under the classes' Gaussians in the plane into `out [n, C]`;
    uniform before the first fit."""
    n, C = out.shape
    if not fitted:
        out[:] = 1.0 / C
        return out
    total = moments[:, W].sum()
    log_prior, m0, m1 = np.empty(C), np.empty(C), np.empty(C)
    i00, i01, i11, half_log_det = np.empty(C), np.empty(C), np.empty(C), np.empty(C)
    for k in range(C):
        w = moments[k, W]
        if w <= 0.0:
            log_prior[k] = -np.inf
            continue
        log_prior[k] = np.log(w / total)
        m0[k], m1[k] = moments[k, S0] / w, moments[k, S1] / w
        c00 = moments[k, S00] / w - m0[k] * m0[k] + limits[0]
        c01 = moments[k, S01] / w - m0[k] * m1[k]
        c11 = moments[k, S11] / w - m1[k] * m1[k] + limits[0]
        det = max(c00 * c11 - c01 * c01, 1e-300)
        i00[k], i01[k], i11[k] = c11 / det, -c01 / det, c00 / det
        half_log_det[k] = 0.5 * np.log(det)
    for r in range(n):
        z0, z1, _ = _project(center, basis, X[r])
        top = -np.inf
        for k in range(C):
            if log_prior[k] == -np.inf:
                out[r, k] = -np.inf
                continue
            e0, e1 = z0 - m0[k], z1 - m1[k]
            quad = e0 * e0 * i00[k] + 2.0 * e0 * e1 * i01[k] + e1 * e1 * i11[k]
            out[r, k] = log_prior[k] - half_log_det[k] - 0.5 * quad
            top = max(top, out[r, k])
        z = 0.0
        for k in range(C):
            out[r, k] = np.exp(out[r, k] - top) if out[r, k] > -np.inf else 0.0
            z += out[r, k]
        for k in range(C):
            out[r, k] = out[r, k] / z if z > 0.0 else 1.0 / C
    return out


class PlaneState:
    """The plane's arrays (`center [d]`, `basis [PLANE_DIM, d]`, the classes' `moments [C, 6]`,
    `limits [2]`: the ridge and the farthest a labeled row may lie from the plane); grows a
    class at a time."""

    def __init__(self, n_features: int, n_classes: int = 0):
        self.center = np.zeros(n_features)
        self.basis = np.zeros((PLANE_DIM, n_features))
        self.moments = np.zeros((n_classes, 6))
        self.limits = np.array([1.0, np.inf])

    def add_class(self) -> None:
        self.moments = np.concatenate([self.moments, np.zeros((1, 6))])

    @property
    def arrays(self) -> tuple:
        """The arguments of `plane_learn` and `plane_proba` before the rings."""
        return self.center, self.basis, self.moments, self.limits

