"""Gradients shared by the hybrid models' kernels: the KL and discriminative deltas of the
recognition network, back-propagation through it, the mean-field input of a layer and the plain
gradient step. Conventions as in `network` (flat `theta`, `off`, `hcum`); gradients
are of a LOSS and ACCUMULATED (`+=`) into `grad`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm._kernels.build import INNER, JIT

from river_dhbm._kernels.blas import gemm
from river_dhbm._kernels.network import (
    COL_B,
    COL_U,
    COL_W,
    SIGMOID,
    affine,
    borrow,
    derivative,
    label_weights,
    layer,
    matrix,
    times_transposed,
    vector,
)


@njit(**JIT, **INNER)
def kl_delta(act, mu, n, hcum, wrow, kind, mask, delta):
    """Local pre-activation gradient of the recognition objective, added into `delta`.

    Loss per row `r`, weighted by `wrow[r]`: for sigmoid units the KL / cross-entropy of
    paper eq. 11 `-sum mu log v + (1 - mu) log(1 - v)`, whose gradient with respect to the
    pre-activation is `v - mu`; for ReLU units the squared error `(v - mu)^2 / 2`, gradient
    `(v - mu) 1[v > 0]`. Dropped units (mask 0) contribute nothing. `act, mu, delta` flat.
    """
    use_mask = mask.size > 0
    for r in range(n):
        w = wrow[r]
        if w == 0.0:
            continue
        for l in range(hcum.shape[0] - 1):
            base = n * hcum[l]
            H = hcum[l + 1] - hcum[l]
            for j in range(H):
                idx = base + r * H + j
                v = act[idx]
                g = v - mu[idx]
                if kind != SIGMOID and derivative(v, kind) == 0.0:
                    g = 0.0
                if use_mask:
                    g *= mask[idx]
                delta[idx] += w * g


@njit(**JIT, **INNER)
def discriminative_delta(act, n, P, T, wrow, theta, theta_t, off, sizes, hcum, n_classes, kind,
                         mask, delta, grad):
    """Gradient of `sum_r wrow[r] * (-sum_k T[r, k] log P[r, k])`, `P` the joint predictor.

    `T [n, C]` are targets summing to 1 per row (one-hot, or soft proxy labels), `P [n, C]`
    the predictor's output for `act`. Accumulates `dU^l = v^l^T G`, `dd = sum_r G[r]` into
    `grad` (`G = wrow (P - T)`) and adds the back-propagated `(G U^l^T) * phi'(v^l) * mask`
    into `delta` (pre-activation of every layer; pass it on with `net_backward`). `theta_t`:
    the transposed mirror of `theta` or empty (see `times_transposed`).
    """
    L = sizes.shape[0] - 1
    G = np.empty((n, n_classes), act.dtype)
    for r in range(n):
        for k in range(n_classes):
            G[r, k] = wrow[r] * (P[r, k] - T[r, k])
    gd = borrow(grad, off[L, 1], (n_classes,))
    for r in range(n):
        for k in range(n_classes):
            gd[k] += G[r, k]
    use_mask = mask.size > 0
    for l in range(L):
        V = layer(act, hcum, n, l)
        Dl = layer(delta, hcum, n, l)
        gU = label_weights(grad, off, sizes, l, n_classes)
        Ml = layer(mask, hcum, n, l) if use_mask else V
        H = sizes[l + 1]
        gemm(V, G, gU, 1.0, 1.0, bool(True), bool(False))  # dU^l += v^l^T G
        S = np.empty((n, H), act.dtype)
        times_transposed(G, theta, theta_t, off[l, COL_U], H, n_classes, S, 0.0)  # G U^l^T
        for r in range(n):
            for j in range(H):
                g = S[r, j] * derivative(V[r, j], kind)
                if use_mask:
                    g *= Ml[r, j]
                Dl[r, j] += g


@njit(**JIT, **INNER)
def net_backward(X, act, delta, theta, theta_t, off, sizes, hcum, wcol, bcol, doubled, kind, mask,
                 grad):
    """Back-propagate pre-activation deltas through the network of `forward_net` (same
    `wcol, bcol, doubled, kind, mask`, `scale` 1), accumulating its weight and bias gradients.

    `delta` (flat like `act`) holds each layer's LOCAL gradient with respect to its
    pre-activation; from the top down, layer `l`'s total delta gives
    `grad[M^l] += k_l * v^{l-1}^T delta^l`, `grad[m^l] += sum_r delta^l`, and is passed down as
    `delta^{l-1} += k_l (delta^l M^l^T) * phi'(v^{l-1}) * mask^{l-1}`. `delta` is modified.
    `theta_t`: the transposed mirror of `theta` or empty (see `times_transposed`).
    """
    n = X.shape[0]
    L = sizes.shape[0] - 1
    use_mask = mask.size > 0
    for l in range(L - 1, -1, -1):
        k = 2.0 if (doubled and l < L - 1) else 1.0
        D = layer(delta, hcum, n, l)
        gM = matrix(grad, off, sizes, l, wcol)
        gm = vector(grad, off, sizes, l, bcol)
        below = X if l == 0 else layer(act, hcum, n, l - 1)
        H = sizes[l + 1]
        P = sizes[l]
        for r in range(n):
            for j in range(H):
                gm[j] += D[r, j]
        gemm(below, D, gM, k, 1.0, bool(True), bool(False))  # dM^l += k v^{l-1}^T delta^l
        if l > 0:
            Db = layer(delta, hcum, n, l - 1)
            Mb = layer(mask, hcum, n, l - 1) if use_mask else below
            S = np.empty((n, P), act.dtype)
            times_transposed(D, theta, theta_t, off[l, wcol], P, H, S, 0.0)  # delta^l M^l^T
            for r in range(n):
                for i in range(P):
                    g = k * S[r, i] * derivative(below[r, i], kind)
                    if use_mask:
                        g *= Mb[r, i]
                    Db[r, i] += g


@njit(**JIT, **INNER)
def adam_direction(grad, moments, step):
    """Replace `grad` by Adam's step direction (Kingma & Ba, 2015; beta1 0.9, beta2 0.999, eps
    1e-8), the bias-corrected `m / (sqrt(v) + eps)` of update number `step >= 1`, updating the
    moments `moments [2 * size]` (first moments, then second) in place."""
    size = grad.shape[0]
    b1, b2, eps = 0.9, 0.999, 1e-8
    # (m / c1) / (sqrt(v / c2) + eps) == m * (sqrt(c2) / c1) / (sqrt(v) + eps * sqrt(c2)):
    # one division per weight (Kingma & Ba's "more efficient" order)
    root_c2 = np.sqrt(1.0 - b2**step)
    scale = root_c2 / (1.0 - b1**step)
    eps_hat = eps * root_c2
    for i in range(size):
        g = grad[i]
        m = b1 * moments[i] + (1.0 - b1) * g
        v = b2 * moments[size + i] + (1.0 - b2) * g * g
        # moments of weights that stop receiving gradient decay geometrically; flush them
        # before they turn subnormal (subnormal arithmetic is ~100x slower)
        m = m if abs(m) > 1e-150 else 0.0
        v = v if v > 1e-300 else 0.0
        moments[i] = m
        moments[size + i] = v
        grad[i] = scale * m / (np.sqrt(v) + eps_hat)


@njit(**JIT, **INNER)
def sgd_step(theta, grad, lr):
    """`theta -= lr * grad`, then zero `grad`."""
    for i in range(theta.shape[0]):
        theta[i] -= lr * grad[i]
        grad[i] = 0.0


@njit(**JIT, **INNER)
def mean_field_input(below, above, T, theta, theta_t, off, sizes, l, n_classes, z):
    """Pre-activation of hidden layer `l` in the joint model (paper eqs. 3-4, with biases):
    `z [n, H_l] = below @ W^l + above @ (W^{l+1})^T + T @ (U^l)^T + b^l`.

    `below [n, H_{l-1}]`; `above [n, H_{l+1}]` (ignored when `l` is the top layer); `T [n, C]`
    label activities (ignored when it has no columns). Overwrites `z`. `theta_t`: the
    transposed mirror of `theta` or empty (see `times_transposed`).
    """
    L = sizes.shape[0] - 1
    affine(below, matrix(theta, off, sizes, l, COL_W), z, 1.0)
    if l < L - 1:
        times_transposed(above, theta, theta_t, off[l + 1, COL_W], sizes[l + 1], sizes[l + 2], z,
                         1.0)
    if T.shape[1] > 0:
        times_transposed(T, theta, theta_t, off[l, COL_U], sizes[l + 1], n_classes, z, 1.0)
    b = vector(theta, off, sizes, l, COL_B)
    n, H = z.shape
    for r in range(n):
        for j in range(H):
            z[r, j] += b[j]


@njit(**JIT, **INNER)
def subset_weights(y, n, alpha, beta, wrow):
    """Row weights that average each subset's gradient over its own rows: `alpha / n_lab` for
    the labeled rows (`y >= 0`) among the first `n`, `beta / n_unlab` for the others, into
    `wrow`."""
    n_lab = 0
    for r in range(n):
        if y[r] >= 0:
            n_lab += 1
    n_unlab = n - n_lab
    for r in range(n):
        wrow[r] = alpha / n_lab if y[r] >= 0 else beta / n_unlab


@njit(**JIT, **INNER)
def label_targets(y, P, n, n_classes, hard, T):
    """Targets `T [n, C]` of the first `n` rows: one-hot for the labeled rows (`y >= 0`); for
    the unlabeled ones the prediction `P` itself, or (`hard`) its first largest class one-hot."""
    for r in range(n):
        if y[r] >= 0:
            for k in range(n_classes):
                T[r, k] = 1.0 if k == y[r] else 0.0
        elif hard:
            best = 0
            for k in range(1, n_classes):
                if P[r, k] > P[r, best]:
                    best = k
            for k in range(n_classes):
                T[r, k] = 1.0 if k == best else 0.0
        else:
            for k in range(n_classes):
                T[r, k] = P[r, k]
