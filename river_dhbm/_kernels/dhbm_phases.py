"""The DHBM's phases: the statistics of a phase, the mean-field sweep, the reconstruction of the
input and the SAP estimator's persistent particles (its Gibbs sweep). `dhbm_kernels` composes
them into one learning step per mini-batch. Layouts as in `river_dhbm._kernels.network`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm._kernels.build import INNER, JIT

from river_dhbm._kernels.blas import gemm
from river_dhbm._kernels.gradients import mean_field_input
from river_dhbm._kernels.network import (
    BOUNDED_RELU,
    COL_B,
    COL_W,
    SIGMOID,
    activate,
    borrow,
    joint_proba,
    label_weights,
    layer,
    matrix,
    sigmoid,
    times_transposed,
    vector,
)


@njit(**JIT, **INNER)
def add_outer(A, B, w, scale, out):
    """`out [P, H] += scale * sum_r w[r] A[r]^T B[r]` for `A [n, P]`, `B [n, H]`, `w [n]`."""
    n, P = A.shape
    Aw = np.empty((n, P), A.dtype)
    for r in range(n):
        a = scale * w[r]
        for i in range(P):
            Aw[r, i] = a * A[r, i]
    gemm(Aw, B, out, 1.0, 1.0, bool(True), bool(False))


@njit(**JIT, **INNER)
def add_rows(A, w, scale, out):
    """`out [H] += scale * sum_r w[r] A[r]` for `A [n, H]`."""
    n, H = A.shape
    for r in range(n):
        a = scale * w[r]
        if a != 0.0:
            for j in range(H):
                out[j] += a * A[r, j]


@njit(**JIT, **INNER)
def mean_field_sweep(X, mu, T, theta, theta_t, off, sizes, hcum, n_classes, kind, mask, scale,
                     zbuf):
    """One bottom-up (Gauss-Seidel) sweep of the hidden mean-field equations, in place.

    `mu^l <- scale * mask^l * phi(mu^{l-1} W^l + mu^{l+1} W^{l+1}^T + T U^l^T + b^l)` for
    `l = 1..L` with `mu^0 = X [n, D]` clamped and label activities `T [n, C]` clamped; each
    layer uses the freshly updated layer below and the previous value of the layer above.
    `mu, mask` flat like the activities (`mask` may be empty); `zbuf` flat work `>= n * max H`;
    `theta_t` the transposed mirror of `theta` or empty (`kernels.times_transposed`).
    """
    n = X.shape[0]
    L = sizes.shape[0] - 1
    use_mask = mask.size > 0
    for l in range(L):
        H = sizes[l + 1]
        z = borrow(zbuf, 0, (n, H))
        below = X if l == 0 else layer(mu, hcum, n, l - 1)
        above = layer(mu, hcum, n, l + 1) if l < L - 1 else below
        mean_field_input(below, above, T, theta, theta_t, off, sizes, l, n_classes, z)
        out = layer(mu, hcum, n, l)
        m = layer(mask, hcum, n, l) if use_mask else out
        for r in range(n):
            for j in range(H):
                a = activate(z[r, j], kind) * scale
                if use_mask:
                    a *= m[r, j]
                out[r, j] = a


@njit(**JIT, **INNER)
def reconstruct(H1, theta, theta_t, off, sizes, xrec):
    """Visible mean-field `xrec [n, D] = sigmoid(h^1 W^1^T + c)` (visible units are logistic;
    `theta_t` the transposed mirror of `theta` or empty)."""
    L = sizes.shape[0] - 1
    n, D = xrec.shape
    c = borrow(theta, off[L, 0], (D,))
    for r in range(n):
        for i in range(D):
            xrec[r, i] = c[i]
    times_transposed(H1, theta, theta_t, off[0, COL_W], D, sizes[1], xrec, 1.0)
    for r in range(n):
        for i in range(D):
            xrec[r, i] = sigmoid(xrec[r, i])


@njit(**JIT, **INNER)
def add_phase(V0, H, Y, w, scale, grad, off, sizes, hcum, n_classes, work):
    """Add `scale * sum_r w[r] * stats` of one phase to `grad`: `v^{l-1}^T h^l` to `W^l`,
    `h^l` to `b^l`, `h^l^T y` to `U^l`, `v^0` to `c`, `y` to `d`. `V0 [n, D]`, `H` flat;
    `work` flat scratch `>= n * max H` holds each layer's weighted rows `scale w[r] h^l[r]`."""
    n = V0.shape[0]
    L = sizes.shape[0] - 1
    for l in range(L):
        below = V0 if l == 0 else layer(H, hcum, n, l - 1)
        h = layer(H, hcum, n, l)
        size = sizes[l + 1]
        hw = borrow(work, 0, (n, size))
        gb = vector(grad, off, sizes, l, COL_B)
        for r in range(n):
            a = scale * w[r]
            for j in range(size):
                hw[r, j] = a * h[r, j]
                gb[j] += hw[r, j]
        gemm(below, hw, matrix(grad, off, sizes, l, COL_W), 1.0, 1.0, bool(True), bool(False))
        if n_classes > 0:
            gemm(hw, Y, label_weights(grad, off, sizes, l, n_classes), 1.0, 1.0, bool(True),
                 bool(False))
    add_rows(V0, w, scale, borrow(grad, off[L, 0], (sizes[0],)))
    if n_classes > 0:
        add_rows(Y, w, scale, borrow(grad, off[L, 1], (n_classes,)))


@njit(**JIT, **INNER)
def sap_sweep(part_x, part_h, part_y, part_mask, noise_h, noise_v, wneg, theta, theta_t, grad,
              off, sizes, hcum, n_classes, kind, zbuf):
    """Advance the `M` persistent particles by one block Gibbs sweep and subtract their
    (Rao-Blackwellised) statistics, each weighted `wneg`, from the likelihood gradient
    (`wneg == 0`: the particles move, nothing is added).

    Order: `h^1 .. h^L` (each given the current state of its neighbours and `y`), then `x`
    given `h^1`, then `y` given all `h`. Each block's statistics pair its conditional
    probabilities with the neighbour states it was computed from, which is unbiased for a
    chain at equilibrium. Hidden samples: Bernoulli (sigmoid units, `noise_h` uniforms) or
    noisy ReLU `max(0, z + sqrt(sigmoid(z)) eps)` (`noise_h` standard normals); dropped units
    (`part_mask` 0) are 0. `part_x [M, D]`, `part_h` flat `[M * hcum[L]]`, `part_y [M, C]`
    one-hot; `noise_v` uniforms `[M * D + M]`; `zbuf >= M * max(D, H)` work; `theta_t` the
    transposed mirror of `theta` or empty.
    """
    M, D = part_x.shape
    L = sizes.shape[0] - 1
    use_mask = part_mask.size > 0
    wvec = np.full(M, wneg)
    for l in range(L):
        H = sizes[l + 1]
        z = borrow(zbuf, 0, (M, H))
        below = part_x if l == 0 else layer(part_h, hcum, M, l - 1)
        above = layer(part_h, hcum, M, l + 1) if l < L - 1 else below
        mean_field_input(below, above, part_y, theta, theta_t, off, sizes, l, n_classes, z)
        state = layer(part_h, hcum, M, l)
        eps = layer(noise_h, hcum, M, l)
        m = layer(part_mask, hcum, M, l) if use_mask else state
        for r in range(M):
            for j in range(H):
                p = activate(z[r, j], kind)
                if kind != SIGMOID:
                    s = z[r, j] + np.sqrt(sigmoid(z[r, j])) * eps[r, j]
                    s = s if s > 0.0 else 0.0
                    if kind == BOUNDED_RELU and s > 1.0:
                        s = 1.0
                else:
                    s = 1.0 if eps[r, j] < p else 0.0
                if use_mask:
                    p *= m[r, j]
                    s *= m[r, j]
                z[r, j] = p
                state[r, j] = s
        if wneg == 0.0:  # a sweep that only moves the particles
            continue
        add_outer(below, z, wvec, 1.0, matrix(grad, off, sizes, l, COL_W))
        add_rows(z, wvec, 1.0, vector(grad, off, sizes, l, COL_B))
        if n_classes > 0:
            add_outer(z, part_y, wvec, 1.0, label_weights(grad, off, sizes, l, n_classes))
    xp = borrow(zbuf, 0, (M, D))
    reconstruct(layer(part_h, hcum, M, 0), theta, theta_t, off, sizes, xp)
    if wneg != 0.0:
        add_rows(xp, wvec, 1.0, borrow(grad, off[L, 0], (D,)))
    for r in range(M):
        for i in range(D):
            part_x[r, i] = 1.0 if noise_v[r * D + i] < xp[r, i] else 0.0
    if n_classes > 0:
        ybuf = np.empty((M, n_classes), part_h.dtype)
        joint_proba(part_h, M, theta, off, sizes, hcum, n_classes, ybuf)
        if wneg != 0.0:
            add_rows(ybuf, wvec, 1.0, borrow(grad, off[L, 1], (n_classes,)))
        for r in range(M):
            u = noise_v[M * D + r]
            pick = n_classes - 1
            acc = 0.0
            for k in range(n_classes):
                acc += ybuf[r, k]
                if u < acc:
                    pick = k
                    break
            for k in range(n_classes):
                part_y[r, k] = 1.0 if k == pick else 0.0
