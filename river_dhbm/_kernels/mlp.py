"""Numba kernels of the pseudo-label MLP (Lee 2013), the paper's competitor.

The MLP reuses the shared layout and passes of `kernels` (see its docstring): the hidden
layers are the encoder columns `W^l, b^l` (`COL_W, COL_B`), the softmax output layer is the
TOP layer's label weights `U^L` and the class bias `d`. The label weights of the lower layers
and the recognition columns of the layout stay 0 and unused (the MLP predicts from its top
layer only). Its "relu" is the plain, unbounded rectifier (`kernels.RELU`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm._kernels.build import INNER

from river_dhbm._kernels.replay import step_rows
from river_dhbm._kernels.gradients import (
    adam_direction,
    net_backward,
    sgd_step,
)
from river_dhbm._kernels.network import (
    COL_B,
    COL_W,
    derivative,
    first_largest,
    forward_net,
    label_weights,
    layer,
    softmax_rows,
)

__all__ = ["mlp_proba", "mlp_step", "mlp_update", "top_proba", "top_softmax_delta"]


@njit(cache=True, **INNER)
def top_proba(act, n, theta, off, sizes, hcum, n_classes, P):
    """`P [n, C] = softmax(h^L @ U^L + d)`: the MLP's output from its top hidden layer."""
    L = sizes.shape[0] - 1
    top = layer(act, hcum, n, L - 1)
    U = label_weights(theta, off, sizes, L - 1, n_classes)
    d = theta[off[L, 1] : off[L, 1] + n_classes]
    P[:] = 0.0
    for r in range(n):
        for j in range(sizes[L]):
            a = top[r, j]
            if a != 0.0:
                for k in range(n_classes):
                    P[r, k] += a * U[j, k]
        for k in range(n_classes):
            P[r, k] += d[k]
    softmax_rows(P)


@njit(cache=True, **INNER)
def top_softmax_delta(act, n, P, target, wrow, theta, off, sizes, hcum, n_classes, kind, mask,
                      delta, grad):
    """Gradient of `sum_r wrow[r] * -log P[r, target[r]]` for the output of `top_proba`.

    Accumulates `dU^L = h^L^T G` and `dd = sum_r G[r]` into `grad` (`G = wrow (P - e_target)`)
    and adds the top layer's pre-activation delta `(G U^L^T) * phi'(h^L) * mask^L` into
    `delta` (pass it down with `gradients.net_backward`).
    """
    L = sizes.shape[0] - 1
    top = layer(act, hcum, n, L - 1)
    D = layer(delta, hcum, n, L - 1)
    U = label_weights(theta, off, sizes, L - 1, n_classes)
    gU = label_weights(grad, off, sizes, L - 1, n_classes)
    gd = grad[off[L, 1] : off[L, 1] + n_classes]
    use_mask = mask.size > 0
    M = layer(mask, hcum, n, L - 1) if use_mask else top
    G = np.empty(n_classes)
    for r in range(n):
        w = wrow[r]
        if w == 0.0:
            continue
        for k in range(n_classes):
            G[k] = w * P[r, k]
        G[target[r]] -= w
        for k in range(n_classes):
            gd[k] += G[k]
        for j in range(sizes[L]):
            a = top[r, j]
            s = 0.0
            for k in range(n_classes):
                gU[j, k] += a * G[k]
                s += G[k] * U[j, k]
            g = s * derivative(a, kind)
            if use_mask:
                g *= M[r, j]
            D[r, j] += g


@njit(cache=True)
def mlp_proba(X, theta, off, sizes, hcum, n_classes, kind, keep):
    """`p(y | x)` `[n, C]` of the prediction-mode network (hidden units times `keep`)."""
    n = X.shape[0]
    act = np.empty(n * hcum[-1])
    P = np.empty((n, n_classes))
    forward_net(X, theta, off, sizes, hcum, COL_W, COL_B, False, kind, np.empty(0), keep, act)
    top_proba(act, n, theta, off, sizes, hcum, n_classes, P)
    return P


@njit(cache=True)
def mlp_update(X, y, theta, off, sizes, hcum, n_classes, kind, mask, keep, lr, upper_lr, beta,
               grad, moments, step, steps, n_batch):
    """`steps` learning steps (`mlp_step`), in place: `X [n_batch + steps * R, D]` holds the
    mini-batch, then `R` replayed rows for each step; step `s` learns the mini-batch with its
    own `R` rows, with the same dropout mask, Adam's step number `step + s` (`moments`
    `[2 * theta.size]`, or empty for plain gradient steps). Returns the number of rows the
    first step pseudo-labeled."""
    rows = n_batch + (X.shape[0] - n_batch) // steps
    xs = np.empty((rows, X.shape[1]))
    ys = np.empty(rows, np.int64)
    first = 0
    for s in range(steps):
        step_rows(X, y, n_batch, s, steps, xs, ys)
        got = mlp_step(xs, ys, theta, off, sizes, hcum, n_classes, kind, mask, keep, lr,
                       upper_lr, beta, grad, moments, step + s)
        if s == 0:
            first = got
    return first


@njit(cache=True, **INNER)
def mlp_step(X, y, theta, off, sizes, hcum, n_classes, kind, mask, keep, lr, upper_lr, beta,
             grad, moments, step):
    """One gradient step on `CE(labeled) + beta * CE(pseudo-labeled)`, in place on `theta`
    (Adam's, update number `step`, when `moments` is not empty; a plain one otherwise).

    The first hidden layer and the output layer take the step `lr`, the hidden layers above
    the first (their weights and biases) the step `upper_lr`.

    `y` int64 `[n]` holds class indices, -1 for unlabeled rows. The pseudo-label of an
    unlabeled row is the argmax of the prediction-mode network before the step (Lee 2013,
    recomputed every step, a fixed target). The labeled term is averaged over the labeled rows
    and the pseudo-labeled term over the unlabeled rows. `mask` (flat 0/1 like the activities,
    or empty) drops hidden units and hence their error deltas. `grad` is a zeroed buffer of
    `theta`'s size (left zeroed). Returns the number of rows that got a pseudo-label.
    """
    n = X.shape[0]
    n_lab = 0
    for r in range(n):
        if y[r] >= 0:
            n_lab += 1
    n_unlab = n - n_lab
    use_unlab = n_unlab > 0 and beta != 0.0
    if n_classes == 0 or (n_lab == 0 and not use_unlab):
        return 0

    target = y.copy()
    wrow = np.zeros(n)
    if use_unlab:
        P0 = mlp_proba(X, theta, off, sizes, hcum, n_classes, kind, keep)
        for r in range(n):
            if y[r] < 0:
                target[r] = first_largest(P0[r])
                wrow[r] = beta / n_unlab
    for r in range(n):
        if y[r] >= 0:
            wrow[r] = 1.0 / n_lab

    act = np.empty(n * hcum[-1])
    delta = np.zeros(n * hcum[-1])
    P = np.empty((n, n_classes))
    forward_net(X, theta, off, sizes, hcum, COL_W, COL_B, False, kind, mask, 1.0, act)
    top_proba(act, n, theta, off, sizes, hcum, n_classes, P)
    top_softmax_delta(act, n, P, target, wrow, theta, off, sizes, hcum, n_classes, kind, mask,
                      delta, grad)
    net_backward(X, act, delta, theta, np.empty(0), off, sizes, hcum, COL_W, COL_B, False, kind,
                 mask, grad)
    if moments.size > 0:
        adam_direction(grad, moments, step)
    if upper_lr != lr:
        ratio = upper_lr / lr
        L = sizes.shape[0] - 1
        for l in range(1, L):
            for col, size in ((COL_W, sizes[l] * sizes[l + 1]), (COL_B, sizes[l + 1])):
                o = off[l, col]
                for i in range(size):
                    grad[o + i] *= ratio
    sgd_step(theta, grad, lr)
    return n_unlab if use_unlab else 0
