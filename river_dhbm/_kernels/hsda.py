"""The HSDA's learning steps and prediction (the DHDA's layer-wise predecessor), each ONE Numba
call per mini-batch. Layouts follow `network`; the layer blocks are described below.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm._kernels.build import INNER
from river_dhbm._kernels.dhda import dhda_sweep, encoder_backward, reconstruction_delta
from river_dhbm._kernels.gradients import (
    adam_direction,
    discriminative_delta,
    label_targets,
    sgd_step,
    subset_weights,
)
from river_dhbm._kernels.network import (
    COL_B,
    COL_W,
    forward_net,
    joint_proba,
    layer,
    widest,
)
from river_dhbm._kernels.replay import step_rows

# --------------------------------------------------------------------------- HSDA
# The layer-wise predecessor: layer l is a one-hidden-layer hybrid DAE of its own, laid out by
# `parameters.param_layout((H_{l-1}, H_l), C)` (encoder/decoder W, encoder bias b, predictor U,
# decoder bias c, predictor bias d; its recognition columns unused) at `theta[bases[l]:]`,
# with offsets table `offs[l]`.


@njit(cache=True, **INNER)
def _sub(sizes, l):
    """`(sizes of layer l's own net, its hidden offsets)`."""
    sub = sizes[l : l + 2]
    hc = np.zeros(2, dtype=np.int64)
    hc[1] = sizes[l + 1]
    return sub, hc


@njit(cache=True, **INNER)
def hsda_forward(X, theta, bases, offs, sizes, hcum, n_classes, kind, mask, scale, lw, act, P):
    """Clean bottom-up pass of the stack and its ensemble prediction.

    `h^l = scale * mask^l * phi(h^{l-1} W^l + b^l)` into `act` (flat, layout `hcum`), and
    `P [n, C]` the average over layers of each layer's own `softmax(h^l U^l + d^l)`, layer
    `l` weighted by `lw[l]` (`lw` sums to 1).
    """
    n = X.shape[0]
    L = sizes.shape[0] - 1
    use_mask = mask.size > 0
    Pl = np.empty((n, n_classes))
    P[:] = 0.0
    for l in range(L):
        sub, hc = _sub(sizes, l)
        th = theta[bases[l] : bases[l + 1]]
        below = X if l == 0 else layer(act, hcum, n, l - 1)
        out = act[n * hcum[l] : n * hcum[l + 1]]
        m = mask[n * hcum[l] : n * hcum[l + 1]] if use_mask else mask
        forward_net(below, th, offs[l], sub, hc, COL_W, COL_B, False, kind, m, scale, out)
        if n_classes > 0:
            joint_proba(out, n, th, offs[l], sub, hc, n_classes, Pl)
            for r in range(n):
                for k in range(n_classes):
                    P[r, k] += lw[l] * Pl[r, k]


@njit(cache=True)
def hsda_track_layers(X, y, theta, bases, offs, sizes, hcum, n_classes, kind, scale, decay,
                      layer_loss):
    """Fold each layer's log-loss on the labeled rows `(X, y)` (class indices >= 0) into its
    running mean `layer_loss[l]`, row by row: `layer_loss[l] += decay * (-log p_l(y_r | x_r)
    - layer_loss[l])`, `p_l` the layer's own predictor on the clean pass (activities scaled
    by `scale`); probabilities are floored at 1e-12."""
    n = X.shape[0]
    L = sizes.shape[0] - 1
    if n == 0 or n_classes == 0:
        return
    act = np.empty(n * hcum[-1])
    Pl = np.empty((n, n_classes))
    for l in range(L):
        sub, hc = _sub(sizes, l)
        th = theta[bases[l] : bases[l + 1]]
        below = X if l == 0 else layer(act, hcum, n, l - 1)
        out = act[n * hcum[l] : n * hcum[l + 1]]
        forward_net(below, th, offs[l], sub, hc, COL_W, COL_B, False, kind, act[:0], scale, out)
        joint_proba(out, n, th, offs[l], sub, hc, n_classes, Pl)
        for r in range(n):
            nll = -np.log(max(Pl[r, y[r]], 1e-12))
            layer_loss[l] += decay * (nll - layer_loss[l])


@njit(cache=True)
def hsda_update(X, y, theta, grad, bases, offs, sizes, hcum, n_classes, kind, dec_kind, mse, lr,
                alpha, beta, disc_weight, hard, mask, kappa, lw, moments, step, steps, n_batch):
    """`steps` learning steps of the HSDA (`hsda_step`), in place: `X [n_batch + steps * R,
    D]` holds the mini-batch, then `R` replayed rows for each step; step `s` learns the
    mini-batch with its own `R` rows (`replay.step_rows`, as `dhda_update`), with the
    same dropout and corruption masks. With `moments` (Adam's, `[2 * theta.size]`; empty:
    plain gradient steps) step `s` is Adam's step number `step + s`."""
    rows = n_batch + (X.shape[0] - n_batch) // steps
    xs = np.empty((rows, X.shape[1]), X.dtype)
    ys = np.empty(rows, np.int64)
    for s in range(steps):
        step_rows(X, y, n_batch, s, steps, xs, ys)
        hsda_step(xs, ys, theta, grad, bases, offs, sizes, hcum, n_classes, kind, dec_kind, mse,
                  lr, alpha, beta, disc_weight, hard, mask, kappa, lw, moments, step + s)


@njit(cache=True, inline="always")  # one caller: typed there, optimised once
def hsda_step(X, y, theta, grad, bases, offs, sizes, hcum, n_classes, kind, dec_kind, mse, lr,
              alpha, beta, disc_weight, hard, mask, kappa, lw, moments, step):
    """One learning step of the HSDA on a mixed mini-batch, in place.

    1. clean pass (dropout `mask`) -> each layer's input, and the ensemble `p(y | x)` (layer
       weights `lw`);
    2. targets `T` (labels; for unlabeled rows the ensemble probabilities, or their argmax when
       `hard`) and row weights `alpha / n_lab`, `beta / n_unlab`;
    3. every layer `l`, on its input `u` (X, or the clean `h^{l-1}`) held fixed: corrupted
       encoding `mu = mask^l * phi(hat(u) W^l + b^l)` (`kappa` block of the layer's input,
       flat, or empty for no corruption), then the exact gradient of
       `sum_r wrow[r] (recon(u | mu) + disc_weight * -log p_l(T_r | mu))` of its own
       parameters (dropped input units are not scored);
    4. `theta -= lr * grad` for all layers at once; with `moments` not empty, `grad` is first
       replaced by Adam's direction (`gradients.adam_direction`, update number `step`).
    """
    n = X.shape[0]
    L = sizes.shape[0] - 1
    C = n_classes
    act = np.empty(n * hcum[L])
    P = np.empty((n, C))
    T = np.zeros((n, C))
    wrow = np.zeros(n)
    wdisc = np.zeros(n)
    no_mirror = np.empty(0)  # the products read the transposes from theta itself
    hsda_forward(X, theta, bases, offs, sizes, hcum, C, kind, mask, 1.0, lw, act, P)
    subset_weights(y, n, alpha, beta, wrow)
    for r in range(n):
        wdisc[r] = disc_weight * wrow[r]
    label_targets(y, P, n, C, hard, T)

    use_mask = mask.size > 0
    corrupt = kappa.size > 0
    wide = n * widest(sizes)
    zbuf = np.empty(wide)
    k_off = 0
    for l in range(L):
        sub, hc = _sub(sizes, l)
        P_in, H = sizes[l], sizes[l + 1]
        th = theta[bases[l] : bases[l + 1]]
        gr = grad[bases[l] : bases[l + 1]]
        u = X if l == 0 else layer(act, hcum, n, l - 1)
        in_mask = layer(mask, hcum, n, l - 1) if (l > 0 and use_mask) else X[:0]
        m = mask[n * hcum[l] : n * hcum[l + 1]] if use_mask else mask
        uhat = np.empty((n, P_in))
        for r in range(n):
            for i in range(P_in):
                uhat[r, i] = u[r, i] * kappa[k_off + r * P_in + i] if corrupt else u[r, i]
        k_off += n * P_in
        mu = np.empty(n * H)
        delta = np.zeros(n * H)
        xhat = np.empty((n, P_in))
        spare = np.empty(n * H)
        dhda_sweep(uhat, mu, kappa[:0].reshape((0, P_in)), kappa[:0], m, th, no_mirror, offs[l],
                   sub, hc, C, kind, xhat, spare, spare, zbuf)
        if C > 0:
            Pl = np.empty((n, C))
            joint_proba(mu, n, th, offs[l], sub, hc, C, Pl)
            discriminative_delta(mu, n, Pl, T, wdisc, th, no_mirror, offs[l], sub, hc, C, kind, m,
                                 delta, gr)
        reconstruction_delta(mu, u, wrow, th, no_mirror, offs[l], sub, hc, kind, dec_kind, mse, m,
                             in_mask, gr, delta)
        encoder_backward(xhat, spare, spare, delta, n, sub, hc, offs[l], gr)
    if moments.size > 0:
        adam_direction(grad, moments, step)
    sgd_step(theta, grad, lr)


@njit(cache=True)
def hsda_proba(X, theta, bases, offs, sizes, hcum, n_classes, kind, scale, lw):
    """Ensemble `p(y | x)` `[n, C]`: the average of the layers' own predictors, weighted by
    `lw`, on the clean pass (activities scaled by the dropout keep probability `scale`)."""
    n = X.shape[0]
    act = np.empty(n * hcum[-1])
    P = np.empty((n, n_classes))
    hsda_forward(X, theta, bases, offs, sizes, hcum, n_classes, kind, np.empty(0), scale, lw, act,
                 P)
    return P
