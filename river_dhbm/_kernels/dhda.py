"""The DHDA's learning step (mean-field back-propagation, paper Algorithm 3) and prediction,
each ONE Numba call per mini-batch.

Layouts follow `river_dhbm._kernels.network` (flat `theta`/`grad` with the `off` table, flat hidden
activities with `hcum`). Corruption masks arrive as arrays drawn by the model's generator:
`kappa` holds, for each of the `mf_steps` sweeps, an input block `[n, D]` followed by a hidden
block laid out like the activities (`n * hcum[L]`); an empty `kappa` means no corruption.
`kind` and `dec_kind` are the unit kinds of `kernels` (the models pass `BOUNDED_RELU` for
"relu").
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm._kernels.build import INNER

from river_dhbm._kernels.blas import gemm
from river_dhbm._kernels.replay import step_rows
from river_dhbm._kernels.gradients import (
    adam_direction,
    discriminative_delta,
    kl_delta,
    label_targets,
    mean_field_input,
    net_backward,
    sgd_step,
    subset_weights,
)
from river_dhbm._kernels.network import (
    COL_B,
    COL_R,
    COL_RB,
    COL_U,
    COL_W,
    MIRROR_MAX_WIDTH,
    activate,
    derivative,
    forward_net,
    joint_proba,
    layer,
    matrix,
    times_transposed,
    transpose_weights,
    vector,
    widest,
)

__all__ = [
    "dhda_proba",
    "dhda_sweep",
    "dhda_update",
    "encoder_backward",
    "reconstruction_delta",
    "scale_upper_layers",
]


@njit(cache=True, **INNER)
def dhda_sweep(X, mu, kappa_x, kappa_h, mask, theta, theta_t, off, sizes, hcum, n_classes, kind,
               xhat, below_hat, above_hat, zbuf):
    """One bottom-up (Gauss-Seidel) sweep of the corrupted encoders (paper eqs. 12-13):
    `mu^l <- mask^l * phi(hat(mu^{l-1}) W^l + hat(mu^{l+1}) W^{l+1}^T + b^l)`, in place.

    `hat(.)` is masking corruption: the input times `kappa_x [n, D]`, a hidden layer times its
    block of `kappa_h` (flat like `mu`); both empty means no corruption. The layer below is
    read after its update in this sweep, the layer above before it. On return `xhat [n, D]`,
    `below_hat` and `above_hat` (flat like `mu`) hold the corrupted inputs the sweep read: layer
    `l` read `xhat` (l = 0) or block `l - 1` of `below_hat`, and block `l + 1` of `above_hat`.
    The encoders have no label input (eq. 12). `zbuf` flat work `>= n * max H`; `theta_t` the
    transposed mirror of `theta` or empty (`kernels.times_transposed`).
    """
    n, D = X.shape
    L = sizes.shape[0] - 1
    A = n * hcum[L]
    corrupt = kappa_x.size > 0
    use_mask = mask.size > 0
    no_labels = np.empty((n, 0), X.dtype)
    for r in range(n):
        for i in range(D):
            xhat[r, i] = X[r, i] * kappa_x[r, i] if corrupt else X[r, i]
    for i in range(A):
        above_hat[i] = mu[i] * kappa_h[i] if corrupt else mu[i]
    for l in range(L):
        H = sizes[l + 1]
        z = zbuf[: n * H].reshape((n, H))
        below = xhat if l == 0 else layer(below_hat, hcum, n, l - 1)
        above = layer(above_hat, hcum, n, l + 1) if l < L - 1 else below
        mean_field_input(below, above, no_labels, theta, theta_t, off, sizes, l, n_classes, z)
        out = layer(mu, hcum, n, l)
        hat = layer(below_hat, hcum, n, l)
        k = layer(kappa_h, hcum, n, l) if corrupt else out
        m = layer(mask, hcum, n, l) if use_mask else out
        for r in range(n):
            for j in range(H):
                a = activate(z[r, j], kind)
                if use_mask:
                    a *= m[r, j]
                out[r, j] = a
                hat[r, j] = a * k[r, j] if corrupt else a


@njit(cache=True, **INNER)
def reconstruction_delta(mu, X, wrow, theta, theta_t, off, sizes, hcum, kind, dec_kind, mse,
                         mask, in_mask, grad, delta):
    """Reconstruction terms of the loss: layer `l` decodes its clean input through its tied
    weights, `r = phi_dec(mu^l W^l^T + bias)` (bias `c` for the input, `b^{l-1}` for a hidden
    layer), scored by cross-entropy (`mse` False, `dec_kind` sigmoid) or `(r - u)^2 / 2`
    against `u = X` or `mu^{l-1}`, weighted `wrow[r]`; dropped units of a hidden input (mask 0)
    are not scored, nor are the input units where `in_mask [n, D]` is 0 (empty: all scored).

    Accumulates the decoder gradients (`W^l` as `e^T mu^l`, the bias as `sum_r e`, with
    `e = dloss/d(pre-activation)`) into `grad`, and adds `(e W^l) * phi'(mu^l) * mask^l`, the
    error reaching layer `l`'s pre-activation, into `delta` (flat like `mu`). `theta_t`: the
    transposed mirror of `theta` or empty (`kernels.times_transposed`).
    """
    n, D = X.shape
    L = sizes.shape[0] - 1
    use_mask = mask.size > 0
    for l in range(L):
        P, H = sizes[l], sizes[l + 1]
        W = matrix(theta, off, sizes, l, COL_W)
        gW = matrix(grad, off, sizes, l, COL_W)
        a = layer(mu, hcum, n, l)
        if l == 0:
            u = X
            bias = theta[off[L, 0] : off[L, 0] + D]
            gbias = grad[off[L, 0] : off[L, 0] + D]
        else:
            u = layer(mu, hcum, n, l - 1)
            bias = vector(theta, off, sizes, l - 1, COL_B)
            gbias = vector(grad, off, sizes, l - 1, COL_B)
        if l == 0:
            score_in = in_mask.size > 0
            keep_in = in_mask if score_in else u
        else:
            score_in = use_mask
            keep_in = layer(mask, hcum, n, l - 1) if use_mask else u
        Dl = layer(delta, hcum, n, l)
        Ml = layer(mask, hcum, n, l) if use_mask else a
        E = np.empty((n, P), mu.dtype)
        times_transposed(a, theta, theta_t, off[l, COL_W], P, H, E, 0.0)  # mu^l W^l^T
        for r in range(n):
            w = wrow[r]
            for i in range(P):
                rec = activate(E[r, i] + bias[i], dec_kind)
                g = w * (rec - u[r, i])
                if mse:
                    g *= derivative(rec, dec_kind)
                if score_in:
                    g *= keep_in[r, i]
                E[r, i] = g
                gbias[i] += g
        gemm(E, a, gW, 1.0, 1.0, bool(True), bool(False))  # decoder weights: e^T mu^l
        back = np.empty((n, H), mu.dtype)
        gemm(E, W, back, 1.0, 0.0, bool(False), bool(False))  # error reaching layer l: e W^l
        for r in range(n):
            for j in range(H):
                g = back[r, j] * derivative(a[r, j], kind)
                if use_mask:
                    g *= Ml[r, j]
                Dl[r, j] += g


@njit(cache=True, **INNER)
def encoder_backward(xhat, below_hat, above_hat, delta, n, sizes, hcum, off, grad):
    """Encoder gradients from the pre-activation `delta` of each layer (flat like the
    activities), with the sweep's corrupted inputs held fixed: `W^l += hat(below)^T delta^l`,
    `b^l += sum_r delta^l`, and the top-down path `W^{l+1} += delta^l^T hat(above)`.
    """
    L = sizes.shape[0] - 1
    for l in range(L):
        Dl = layer(delta, hcum, n, l)
        below = xhat if l == 0 else layer(below_hat, hcum, n, l - 1)
        gW = matrix(grad, off, sizes, l, COL_W)
        gb = vector(grad, off, sizes, l, COL_B)
        H, P = sizes[l + 1], sizes[l]
        for r in range(n):
            for j in range(H):
                gb[j] += Dl[r, j]
        gemm(below, Dl, gW, 1.0, 1.0, bool(True), bool(False))
        if l < L - 1:
            above = layer(above_hat, hcum, n, l + 1)
            gemm(Dl, above, matrix(grad, off, sizes, l + 1, COL_W), 1.0, 1.0, bool(True),
                 bool(False))


@njit(cache=True)
def dhda_update(X, y, theta, grad, off, sizes, hcum, n_classes, kind, dec_kind, mse, mf_steps,
                lr, upper_lr, alpha, beta, disc_weight, hard, mask, kappa, moments, step, steps,
                n_batch):
    """`steps` learning steps of the DHDA (`dhda_step`), in place: `X [n_batch + steps * R,
    D]` holds the mini-batch, then `R` replayed rows for each step; step `s` learns the
    mini-batch with its own `R` rows (as `dhbm_kernels.dhbm_update`), with the same masks.
    With `moments` (Adam's, `[2 * theta.size]`; empty: plain gradient steps) step `s` is
    Adam's step number `step + s`."""
    rows = n_batch + (X.shape[0] - n_batch) // steps
    xs = np.empty((rows, X.shape[1]), X.dtype)
    ys = np.empty(rows, np.int64)
    for s in range(steps):
        step_rows(X, y, n_batch, s, steps, xs, ys)
        dhda_step(xs, ys, theta, grad, off, sizes, hcum, n_classes, kind, dec_kind, mse, mf_steps,
                  lr, upper_lr, alpha, beta, disc_weight, hard, mask, kappa, moments, step + s)


@njit(cache=True, inline="always")  # one caller: typed there, optimised once
def dhda_step(X, y, theta, grad, off, sizes, hcum, n_classes, kind, dec_kind, mse, mf_steps,
              lr, upper_lr, alpha, beta, disc_weight, hard, mask, kappa, moments, step):
    """One learning step of the DHDA on a mixed mini-batch (paper Algorithms 1 and 3), in place.

    `X [n, D]`, `y [n]` int64 class indices (-1 unlabeled). Steps:
    1. recognition pass `v = Q_rec(X)` with dropout `mask` (flat, may be empty);
    2. targets `T`: one-hot labels; for unlabeled rows `p(y | v)` (`hard` False) or its
       one-hot argmax; row weights `alpha / n_lab` and `beta / n_unlab`;
    3. `mu = v`, then `mf_steps` (>= 1) corrupted encoder sweeps (`dhda_sweep`);
    4. recognition step: KL(mu || v) of every layer plus `disc_weight` times `-log p(T | v)`;
    5. model step: exact gradient, with the last sweep's corrupted inputs held fixed, of
       `sum_r wrow[r] (sum_l recon_l + -log p(T_r | mu_r))`, the output error reaching every
       layer through `U^l` and each reconstruction error through the tied `W^l`, with the
       dropout masks on the deltas;
    6. `theta -= lr * grad` (`grad` zeroed buffer of `theta`'s size, left zeroed), except
       the parameters of the layers above the first (`W^l, b^l, U^l, R^l, r^l`, `l >= 2`),
       which step by `upper_lr`; with `moments` not empty, `grad` is first replaced by Adam's
       direction (`gradients.adam_direction`, update number `step`).
    """
    n, D = X.shape
    L = sizes.shape[0] - 1
    A = n * hcum[L]
    C = n_classes
    dtype = theta.dtype  # float64, or float32 throughout (`X` too)
    act = np.empty(A, dtype)
    mu = np.empty(A, dtype)
    delta = np.zeros(A, dtype)
    below_hat = np.empty(A, dtype)
    above_hat = np.empty(A, dtype)
    xhat = np.empty((n, D), dtype)
    wide = n * widest(sizes)
    zbuf = np.empty(wide, dtype)
    P = np.empty((n, C), dtype)
    T = np.zeros((n, C), dtype)
    wrow = np.zeros(n)
    wdisc = np.zeros(n)
    # the weights' transposes (`kernels.times_transposed`), for narrow networks only
    mirror = np.empty(theta.size if widest(sizes) <= MIRROR_MAX_WIDTH else 0, dtype)
    if mirror.size > 0:
        transpose_weights(theta, off, sizes, C, mirror)

    forward_net(X, theta, off, sizes, hcum, COL_R, COL_RB, True, kind, mask, 1.0, act)
    subset_weights(y, n, alpha, beta, wrow)
    for r in range(n):
        wdisc[r] = disc_weight * wrow[r]
    if C > 0:  # before the first label only the reconstructions learn
        joint_proba(act, n, theta, off, sizes, hcum, C, P)
        label_targets(y, P, n, C, hard, T)

    for i in range(A):
        mu[i] = act[i]
    stride = n * D + A
    for s in range(mf_steps):
        if kappa.size > 0:
            kx = kappa[s * stride : s * stride + n * D].reshape((n, D))
            kh = kappa[s * stride + n * D : (s + 1) * stride]
        else:
            kx = kappa.reshape((0, D))
            kh = kappa
        dhda_sweep(X, mu, kx, kh, mask, theta, mirror, off, sizes, hcum, C, kind, xhat, below_hat,
                   above_hat, zbuf)

    # recognition network: KL towards the mean-field activities + discriminative term
    kl_delta(act, mu, n, hcum, wrow, kind, mask, delta)
    if C > 0 and disc_weight != 0.0:
        discriminative_delta(act, n, P, T, wdisc, theta, mirror, off, sizes, hcum, C, kind, mask,
                             delta, grad)
    net_backward(X, act, delta, theta, mirror, off, sizes, hcum, COL_R, COL_RB, True, kind, mask,
                 grad)

    # model: output term and reconstructions, back-propagated into the encoders
    for i in range(A):
        delta[i] = 0.0
    if C > 0:
        joint_proba(mu, n, theta, off, sizes, hcum, C, P)
        discriminative_delta(mu, n, P, T, wrow, theta, mirror, off, sizes, hcum, C, kind, mask,
                             delta, grad)
    reconstruction_delta(mu, X, wrow, theta, mirror, off, sizes, hcum, kind, dec_kind, mse, mask,
                         xhat[:0], grad, delta)
    encoder_backward(xhat, below_hat, above_hat, delta, n, sizes, hcum, off, grad)
    if moments.size > 0:
        adam_direction(grad, moments, step)
    if upper_lr != lr:
        scale_upper_layers(grad, off, sizes, C, upper_lr / lr)
    sgd_step(theta, grad, lr)


@njit(cache=True, inline="always")  # one caller: typed there, optimised once
def scale_upper_layers(grad, off, sizes, n_classes, ratio):
    """Multiply the entries of every layer above the first (`W^l, b^l, U^l, R^l, r^l`, layers
    `l >= 1` in code) by `ratio`, in place; the first layer, `c` and `d` keep theirs."""
    L = sizes.shape[0] - 1
    for l in range(1, L):
        fan_in, fan_out = sizes[l], sizes[l + 1]
        for col in range(5):
            if col == COL_W or col == COL_R:
                size = fan_in * fan_out
            elif col == COL_U:
                size = fan_out * n_classes
            else:
                size = fan_out
            o = off[l, col]
            for i in range(size):
                grad[o + i] *= ratio


@njit(cache=True)
def dhda_proba(X, theta, off, sizes, hcum, n_classes, kind, scale):
    """`p(y | x)` `[n, C]`: one recognition pass (activities scaled by the dropout keep
    probability `scale`), then the joint predictor (paper eq. 6)."""
    n = X.shape[0]
    act = np.empty(n * hcum[-1], theta.dtype)
    P = np.empty((n, n_classes), theta.dtype)
    forward_net(X, theta, off, sizes, hcum, COL_R, COL_RB, True, kind, np.empty(0, theta.dtype),
                scale, act)
    joint_proba(act, n, theta, off, sizes, hcum, n_classes, P)
    return P
