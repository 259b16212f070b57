"""The generative readout's third family: the classes as blurred segments in the principal
plane of the recent rows, shaped by the unlabeled rows and named by the labels.

The unlabeled rows teach where the signal lies and what shape it has, the labels what it means.
Waveform is the case: each instance is a random mix of two of three base waves plus noise, so
the classes are the three edges of a triangle in a 2-D plane, and the other 38 directions (19
of the 21 wave attributes' noise and the 19 noise attributes) are noise. The plane's variances
stand far above the rest (stationary Waveform, 10,000 rows: 0.174 and 0.066 against a median
of 0.013), so the leading two principal directions of a few thousand unlabeled rows find it.
In it each class is a segment (a uniform mix along a line) blurred by the noise, a model of
four numbers per class; semi-supervised EM fits the segments to the ring's unlabeled rows,
started from and anchored by the labels. Alone, on the stationary Waveform (tuning seeds, the
DHDA's readout): 0.136 at 0.1 % labels (the Bayes error 0.133), where one Gaussian per class
fitted to the labels alone reached 0.145 and the named clusters 0.17. Where the leading
directions carry no class signal (LED: the largest variance is 1.9 times the median) the
unlabeled rows are not used (`SIGNAL`), it predicts poorly and the choice passes it by.

How it learns (`plane_learn`, one call per mini-batch, after `cluster_learn` filled the rings):

- when the clusters are refitted (`refitted`), the plane is fitted too: the ring's mean and its
  two leading principal directions (`PLANE_DIM`); the classes' labeled moments are summed again
  from the label ring, projected; then, if the plane stands out of the noise, `EM_STEPS` of
  semi-supervised EM share the ring's rows among the named classes (`unlabeled`);
- between fits every labeled row adds its projection to its class's labeled moments, which
  decay by `1 - 1 / PLANE_WINDOW` per label; the ring's shares stay until the next fit.

A class's segment comes from the sum of its labeled and unlabeled moments (`_segments`): the
midpoint is their mean, the direction their leading principal one, the half-length `L` such
that a uniform segment blurred by the noise has their variance along it (`L^2 / 3` plus the
noise's variance, the ring's mean variance off the plane), and the spread across it theirs plus
`RIDGE`. Its density is a Gaussian across times the blurred uniform along
(`(Phi((L - t) / s) - Phi((-L - t) / s)) / 2L`). The prior is the class's share of the summed
weights. Classes no label in the ring has named get 0; uniform before the first fit, and for
rows farther from the plane than a labeled row may lie (the rows of a new concept after a
drift, until the next fit: the plane has no opinion on them). Without `learn_unlabeled` the
ring holds the labeled rows only and no EM runs.

Why segments: semi-supervised EM with one Gaussian per class moves the classes off the edges
(the edges are not Gaussian and share their ends; measured 0.150-0.206 against 0.144-0.178 for
the labels alone), while the segments fit them (prototype, stationary Waveform, 150 labels:
0.140-0.142 against 0.148-0.151 for Gaussians of the labels alone).
"""

from __future__ import annotations

import math

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
# The ring's rows shape the segments only where the plane stands out of the noise: its second
# variance at least this many times the mean variance off it (every 25,000 rows of 200,000,
# both Waveform streams: 4.9-6.0; both LED streams: 1.2)
SIGNAL = 3.0
EM_STEPS = 10  # semi-supervised EM steps at each fit
W, S0, S1, S00, S01, S11 = range(6)  # the columns of `moments`: weight, sums, sums of products
RIDGE_AT, FAR_AT, NOISE_AT = range(3)  # the entries of `limits`
# the columns of a class's segment: log prior, midpoint, direction, half-length, the variance
# across it, and the constant of its log-density
LOG_PRIOR, M0, M1, V0, V1, HALF, ACROSS, CONST = range(8)
_SQRT_HALF = np.sqrt(0.5)
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


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
    `limits` the ridge (`RIDGE` times the ring's mean variance per attribute), the farthest a
    labeled row may lie from the plane (`OFF_PLANE` standard deviations above the ring's mean
    squared distance) and the noise's variance (the ring's mean variance off the plane).
    Returns whether the plane stands out of the noise (`SIGNAL`)."""
    N, d = buffer.shape
    for j in range(d):
        center[j] = buffer[:, j].sum() / N
    D = buffer - center
    cov = D.T @ D / N
    values, vectors = np.linalg.eigh(cov)  # ascending
    for i in range(min(PLANE_DIM, d)):  # a single feature is its own plane
        basis[i] = vectors[:, d - 1 - i]
    limits[RIDGE_AT] = max(RIDGE * np.trace(cov) / d, 1e-12)
    off = np.empty(N)
    for r in range(N):
        off[r] = _project(center, basis, buffer[r])[2]
    limits[FAR_AT] = off.mean() + OFF_PLANE * off.std()
    if d <= PLANE_DIM:
        limits[NOISE_AT] = limits[RIDGE_AT]
        return False
    limits[NOISE_AT] = max(off.mean() / (d - PLANE_DIM), limits[RIDGE_AT])
    return values[d - PLANE_DIM] >= SIGNAL * limits[NOISE_AT]


@njit(**_JIT)
def _add(moments, center, basis, limits, X, codes, n, keep):
    """Decay every class's moments by `keep` per labeled row and add each one's projection to
    its class, in order (not the rows farther from the plane than `limits[FAR_AT]`)."""
    for r in range(n):
        k = codes[r]
        if k < 0:
            continue
        moments *= keep
        z0, z1, off = _project(center, basis, X[r])
        if off > limits[FAR_AT]:  # a row of another concept (drift): it would blur the classes
            continue
        _accumulate(moments[k], 1.0, z0, z1)


@njit(**_JIT)
def _accumulate(row, w, z0, z1):
    """Add the point `(z0, z1)` with weight `w` to a class's moments `row`."""
    row[W] += w
    row[S0] += w * z0
    row[S1] += w * z1
    row[S00] += w * z0 * z0
    row[S01] += w * z0 * z1
    row[S11] += w * z1 * z1


@njit(**_JIT)
def _segments(moments, unlabeled, limits, seg):
    """Each class's segment (`seg [C, 8]`) from its labeled and unlabeled moments: the midpoint
    is their mean, the direction their leading principal one, the half-length `L` such that a
    uniform segment blurred by the noise has their variance along it (`L^2 / 3 + noise`), and
    the variance across it theirs plus the ridge. Unnamed classes get a log prior of -inf."""
    total = moments[:, W].sum() + unlabeled[:, W].sum()
    ridge, noise = limits[RIDGE_AT], limits[NOISE_AT]
    for k in range(seg.shape[0]):
        w = moments[k, W] + unlabeled[k, W]
        if moments[k, W] <= 0.0:  # unnamed (with it `w`, which adds shares >= 0, is > 0)
            seg[k, LOG_PRIOR] = -np.inf
            continue
        m = (moments[k] + unlabeled[k]) / w
        c00, c01, c11 = m[S00] - m[S0] ** 2, m[S01] - m[S0] * m[S1], m[S11] - m[S1] ** 2
        half_trace = 0.5 * (c00 + c11)
        spread = np.sqrt(0.25 * (c00 - c11) ** 2 + c01 * c01)
        angle = 0.5 * np.arctan2(2.0 * c01, c00 - c11)
        half = np.sqrt(3.0 * max(half_trace + spread - noise, ridge))
        across = max(half_trace - spread, 0.0) + ridge
        seg[k, LOG_PRIOR] = np.log(w / total)
        seg[k, M0], seg[k, M1] = m[S0], m[S1]
        seg[k, V0], seg[k, V1] = np.cos(angle), np.sin(angle)
        seg[k, HALF], seg[k, ACROSS] = half, across
        seg[k, CONST] = seg[k, LOG_PRIOR] - 0.5 * np.log(across) - np.log(2.0 * half)


@njit(**_JIT)
def _log_gap(a, b):
    """`log(Phi(a) - Phi(b))` for `a >= b` (`Phi` the standard normal distribution), accurate
    in both tails."""
    if a < 0.0:  # both in the lower tail: the mirror image
        a, b = -b, -a
    if b > 0.0:  # both in the upper tail
        gap = 0.5 * (math.erfc(b * _SQRT_HALF) - math.erfc(a * _SQRT_HALF))
        if gap > 1e-300:
            return np.log(gap)
        return -0.5 * b * b - np.log(b) - _LOG_SQRT_2PI  # the tail beyond b, past underflow
    return np.log(max(1.0 - 0.5 * math.erfc(a * _SQRT_HALF) - 0.5 * math.erfc(-b * _SQRT_HALF),
                      1e-300))


@njit(**_JIT)
def _log_joint(seg, sd, z0, z1, out):
    """`log p(y = k) + log p(z | k)` of the point `(z0, z1)` into `out [C]`; returns the
    largest."""
    top = -np.inf
    for k in range(seg.shape[0]):
        if seg[k, LOG_PRIOR] == -np.inf:
            out[k] = -np.inf
            continue
        e0, e1 = z0 - seg[k, M0], z1 - seg[k, M1]
        along = e0 * seg[k, V0] + e1 * seg[k, V1]
        across = e1 * seg[k, V0] - e0 * seg[k, V1]
        half = seg[k, HALF]
        out[k] = (seg[k, CONST] - 0.5 * across * across / seg[k, ACROSS]
                  + _log_gap((half - along) / sd, (-half - along) / sd))
        top = max(top, out[k])
    return top


@njit(**_JIT)
def normalise_row(row, top):
    """`row` (log-scores whose largest is `top`) into probabilities, in place; uniform when
    every entry is -inf (no class named yet). The readout's class units use it too."""
    z = 0.0
    for k in range(row.shape[0]):
        row[k] = np.exp(row[k] - top) if row[k] > -np.inf else 0.0
        z += row[k]
    for k in range(row.shape[0]):
        row[k] = row[k] / z if z > 0.0 else 1.0 / row.shape[0]


@njit(**_JIT)
def _shape_by_the_ring(buffer, center, basis, moments, unlabeled, limits):
    """Semi-supervised EM (`EM_STEPS`) of the classes' segments: each step gives every ring row
    near the plane to the named classes by their posteriors and sums the shares into
    `unlabeled`, which joins the labels' `moments` in the next step's segments."""
    C = moments.shape[0]
    if (moments[:, W] > 0.0).sum() < 2:
        return
    Z = np.empty((buffer.shape[0], 2))
    n = 0
    for r in range(buffer.shape[0]):
        z0, z1, off = _project(center, basis, buffer[r])
        if off <= limits[FAR_AT]:
            Z[n, 0], Z[n, 1] = z0, z1
            n += 1
    seg, q = np.empty((C, 8)), np.empty(C)
    sd = np.sqrt(limits[NOISE_AT])
    for _ in range(EM_STEPS):
        _segments(moments, unlabeled, limits, seg)
        unlabeled[:] = 0.0
        for r in range(n):
            normalise_row(q, _log_joint(seg, sd, Z[r, 0], Z[r, 1], q))
            for k in range(C):
                if q[k] > 0.0:
                    _accumulate(unlabeled[k], q[k], Z[r, 0], Z[r, 1])


@njit(**_JIT)
def plane_learn(center, basis, moments, unlabeled, limits, buffer, ring_X, ring_codes, state,
                refitted, X, codes, n, learn_unlabeled):
    """Learn the first `n` rows of `(X, codes)` (codes: class index, -1 unlabeled) after
    `cluster_learn` put them in the clusters' rings (`buffer`, `ring_X`, `ring_codes`, `state`)
    and said whether it refitted."""
    keep = 1.0 - 1.0 / PLANE_WINDOW
    if refitted:
        stands_out = _fit_plane(buffer, center, basis, limits)
        moments[:] = 0.0
        unlabeled[:] = 0.0
        Xl, cl = ring_labels(ring_X, ring_codes, state)
        _add(moments, center, basis, limits, Xl, cl, cl.shape[0], keep)
        if learn_unlabeled and stands_out:
            _shape_by_the_ring(buffer, center, basis, moments, unlabeled, limits)
    elif state[1] == 1:
        _add(moments, center, basis, limits, X, codes, n, keep)


@njit(**_JIT)
def plane_proba(center, basis, moments, unlabeled, limits, fitted, X, out):
    """`p(y | x)` of the rows `X` under the classes' segments in the plane into `out [n, C]`;
    uniform before the first fit."""
    n, C = out.shape
    if not fitted:
        out[:] = 1.0 / C
        return out
    seg = np.empty((C, 8))
    _segments(moments, unlabeled, limits, seg)
    sd = np.sqrt(limits[NOISE_AT])
    for r in range(n):
        z0, z1, off = _project(center, basis, X[r])
        if off > limits[FAR_AT]:  # not a row of the plane's concept (a drift): no opinion
            out[r] = 1.0 / C
            continue
        normalise_row(out[r], _log_joint(seg, sd, z0, z1, out[r]))
    return out


class PlaneState:
    """The plane's arrays (`center [d]`, `basis [PLANE_DIM, d]`, the labeled rows' `moments
    [C, 6]` and the ring's shares of them, `unlabeled [C, 6]`, and `limits [3]`: the ridge, the
    farthest a labeled row may lie from the plane, the noise's variance); grows a class at a
    time."""

    def __init__(self, n_features: int, n_classes: int = 0):
        self.center = np.zeros(n_features)
        self.basis = np.zeros((PLANE_DIM, n_features))
        self.moments = np.zeros((n_classes, 6))
        self.unlabeled = np.zeros((n_classes, 6))
        self.limits = np.array([1.0, np.inf, 1.0])

    def add_class(self) -> None:
        self.moments = np.concatenate([self.moments, np.zeros((1, 6))])
        self.unlabeled = np.concatenate([self.unlabeled, np.zeros((1, 6))])

    @property
    def arrays(self) -> tuple:
        """The arguments of `plane_learn` and `plane_proba` before the rings."""
        return self.center, self.basis, self.moments, self.unlabeled, self.limits
