"""Plain numpy reference of the pseudo-label MLP math (`river_dhbm._kernels.mlp`), for tests.

Written for clarity, one layer per list entry: `Ws[l]` is `[H_{l+1}, H_l]`, `bs[l]` is
`[H_{l+1}]`, `V` is `[H_L, C]`, `d` is `[C]`; `masks[l]` is the 0/1 dropout mask `[B, H_{l+1}]`.
"""

from __future__ import annotations

import numpy as np


def phi(a, activation):
    return 1.0 / (1.0 + np.exp(-a)) if activation == "sigmoid" else np.maximum(a, 0.0)


def phi_prime(a, activation):
    if activation == "sigmoid":
        s = phi(a, activation)
        return s * (1.0 - s)
    return (a > 0).astype(float)


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def forward(X, Ws, bs, V, d, activation, masks=None, keep=1.0):
    """Pre-activations, hidden states and p(y|x). With `masks` (training) each hidden layer is
    multiplied by its mask; without (prediction) by the keep probability."""
    pre, hs, h = [], [], X
    for l, (W, b) in enumerate(zip(Ws, bs)):
        a = h @ W.T + b
        h = phi(a, activation) * (masks[l] if masks is not None else keep)
        pre.append(a)
        hs.append(h)
    return pre, hs, softmax(h @ V + d)


def pseudo_targets(X, y, Ws, bs, V, d, activation, keep):
    """One-hot targets: the label where known, else the argmax of the prediction-mode net."""
    C = V.shape[1]
    _, _, P = forward(X, Ws, bs, V, d, activation, keep=keep)
    t = np.where(y >= 0, y, P.argmax(axis=1))
    return np.eye(C)[t]


def row_weights(y, beta):
    """1/n_lab for labeled rows, beta/n_unlab for unlabeled rows (each term averaged on its own)."""
    lab = y >= 0
    w = np.zeros(len(y))
    if lab.any():
        w[lab] = 1.0 / lab.sum()
    if (~lab).any():
        w[~lab] = beta / (~lab).sum()
    return w


def loss(X, T, w, Ws, bs, V, d, activation, masks):
    """sum_i w_i * CE(T_i, p(y|x_i)) with the dropout masks fixed."""
    _, _, P = forward(X, Ws, bs, V, d, activation, masks=masks)
    return -np.sum(w * np.sum(T * np.log(P), axis=1))


def gradients(X, T, w, Ws, bs, V, d, activation, masks):
    """Back-propagated gradients of `loss` (lists dWs, dbs, then dV, dd)."""
    pre, hs, P = forward(X, Ws, bs, V, d, activation, masks=masks)
    G = w[:, None] * (P - T)
    dV, dd = hs[-1].T @ G, G.sum(axis=0)
    delta = G @ V.T
    dWs, dbs = [None] * len(Ws), [None] * len(Ws)
    for l in reversed(range(len(Ws))):
        delta = delta * masks[l] * phi_prime(pre[l], activation)
        below = hs[l - 1] if l > 0 else X
        dWs[l], dbs[l] = delta.T @ below, delta.sum(axis=0)
        delta = delta @ Ws[l]
    return dWs, dbs, dV, dd


def update(X, y, Ws, bs, V, d, activation, masks, keep, learning_rate, beta,
           upper_learning_rate=None):
    """One SGD step of the pseudo-label MLP, returning new (Ws, bs, V, d); the hidden layers
    above the first step by `upper_learning_rate` (default: `learning_rate`)."""
    T = pseudo_targets(X, y, Ws, bs, V, d, activation, keep)
    w = row_weights(y, beta)
    dWs, dbs, dV, dd = gradients(X, T, w, Ws, bs, V, d, activation, masks)
    up = learning_rate if upper_learning_rate is None else upper_learning_rate
    steps = [learning_rate if l == 0 else up for l in range(len(Ws))]
    Ws = [W - s * g for W, s, g in zip(Ws, steps, dWs)]
    bs = [b - s * g for b, s, g in zip(bs, steps, dbs)]
    return Ws, bs, V - learning_rate * dV, d - learning_rate * dd
