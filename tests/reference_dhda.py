"""Plain numpy reference of the DHDA's learning step (`river_dhbm._kernels.dhda`), for tests.

Parameters are per-layer lists in the shared orientation: `W[l]`, `R[l]` `[H_{l-1}, H_l]`,
`b[l]`, `rb[l]` `[H_l]`, `U[l]` `[H_l, C]`, plus `c` `[D]` and `d` `[C]` (`l = 0..L-1` is the
paper's layer `l + 1`). Dropout masks `m[l]` `[n, H_l]`; corruption masks of one sweep
`k[0]` `[n, D]` (input) and `k[l + 1]` `[n, H_l]` (hidden layers).
"""

from __future__ import annotations

import numpy as np

from reference_mlp import softmax


def phi(a, kind):
    """`kind`: "sigmoid", "relu", or "bounded_relu" (ReLU bounded to [0, 1])."""
    if kind == "relu":
        return np.maximum(a, 0.0)
    if kind == "bounded_relu":
        return np.clip(a, 0.0, 1.0)
    return 1.0 / (1.0 + np.exp(-a))


def phi_prime_from_output(h, kind):
    if kind == "relu":
        return (h > 0).astype(float)
    if kind == "bounded_relu":
        return ((h > 0) & (h < 1)).astype(float)
    return h * (1.0 - h)


def recognition(X, p, kind, m, scale=1.0):
    """`v^l = scale * m^l * phi(k_l v^{l-1} R^l + r^l)`, `k_l = 2` below the top layer."""
    L, v, out = len(p["R"]), X, []
    for l in range(L):
        k = 2.0 if l < L - 1 else 1.0
        v = scale * phi(k * v @ p["R"][l] + p["rb"][l], kind) * (m[l] if m is not None else 1.0)
        out.append(v)
    return out


def joint_proba(hs, p):
    return softmax(sum(h @ U for h, U in zip(hs, p["U"])) + p["d"])


def targets(y, P, hard):
    T = P.copy() if not hard else np.eye(P.shape[1])[P.argmax(axis=1)]
    T[y >= 0] = np.eye(P.shape[1])[y[y >= 0]]
    return T


def row_weights(y, alpha, beta):
    lab = y >= 0
    w = np.zeros(len(y))
    w[lab] = alpha / max(lab.sum(), 1)
    w[~lab] = beta / max((~lab).sum(), 1)
    return w


def sweep(X, mu, p, kind, m, k):
    """One Gauss-Seidel sweep of the corrupted encoders (paper eqs. 12-13), returning the new
    activities and the corrupted inputs each layer read from below and from above."""
    L, mu = len(p["W"]), list(mu)
    above_hat = [mu[l] * k[l + 1] for l in range(L)]  # old values, corrupted
    ins, tops = [], []
    for l in range(L):
        below_hat = X * k[0] if l == 0 else mu[l - 1] * k[l]
        top = above_hat[l + 1] if l < L - 1 else None
        z = below_hat @ p["W"][l] + p["b"][l]
        if top is not None:
            z = z + top @ p["W"][l + 1].T
        mu[l] = phi(z, kind) * m[l]
        ins.append(below_hat)
        tops.append(top)
    return mu, ins, tops


def encoders(ins, tops, p, kind, m):
    """The last sweep's activities as a function of the parameters, inputs frozen."""
    out = []
    for l in range(len(p["W"])):
        z = ins[l] @ p["W"][l] + p["b"][l]
        if tops[l] is not None:
            z = z + tops[l] @ p["W"][l + 1].T
        out.append(phi(z, kind) * m[l])
    return out


def model_loss(p, ins, tops, recon_targets, T, w, kind, loss, m):
    """sum_r w_r [ sum_l recon_l + NLL(T_r | a) ]: the DHDA's loss (paper eq. 15), per layer a
    tied hDA reconstructing its clean input; dropped units of a hidden input are not scored."""
    a = encoders(ins, tops, p, kind, m)
    dec_kind = "sigmoid" if loss == "ce" else kind
    J = 0.0
    for l in range(len(a)):
        bias = p["c"] if l == 0 else p["b"][l - 1]
        r = phi(a[l] @ p["W"][l].T + bias, dec_kind)
        u = recon_targets[l]
        keep = 1.0 if l == 0 else m[l - 1]
        if loss == "ce":
            e = -(u * np.log(r) + (1 - u) * np.log(1 - r))
        else:
            e = 0.5 * (r - u) ** 2
        J += np.sum(w[:, None] * keep * e)
    P = joint_proba(a, p)
    return J - np.sum(w * np.sum(T * np.log(P), axis=1))


def recognition_loss(p, X, mu, T, w, disc_weight, kind, m):
    """sum_r w_r [ KL(mu_r || v_r) + disc_weight * NLL(T_r | v_r) ] (squared error for ReLU)."""
    v = recognition(X, p, kind, m)
    J = 0.0
    for l in range(len(v)):
        if kind == "sigmoid":
            vv = np.clip(v[l], 1e-300, 1 - 1e-16)
            e = -(mu[l] * np.log(vv) + (1 - mu[l]) * np.log(1 - vv)) * m[l]
        else:
            e = 0.5 * (v[l] - mu[l]) ** 2 * m[l]
        J += np.sum(w[:, None] * e)
    if disc_weight:
        J -= disc_weight * np.sum(w * np.sum(T * np.log(joint_proba(v, p)), axis=1))
    return J


def statistics(X, y, p, kind, m, kappas, alpha, beta, hard):
    """Steps 1-3 of Algorithm 1: recognition, proxy targets, mean-field sweeps."""
    v = recognition(X, p, kind, m)
    T = targets(y, joint_proba(v, p), hard)
    w = row_weights(y, alpha, beta)
    mu, ins, tops = list(v), None, None
    for k in kappas:
        mu, ins, tops = sweep(X, mu, p, kind, m, k)
    recon_targets = [X] + [mu[l] for l in range(len(mu) - 1)]
    return v, T, w, mu, ins, tops, recon_targets


def total_loss(p, X, stats, kind, loss, m, disc_weight):
    v, T, w, mu, ins, tops, recon_targets = stats
    return model_loss(p, ins, tops, recon_targets, T, w, kind, loss, m) + recognition_loss(
        p, X, mu, T, w, disc_weight, kind, m
    )


def gradients(p, X, stats, kind, loss, m, disc_weight):
    """Hand-written back-propagation of `total_loss` (same keys as `p`)."""
    v, T, w, mu, ins, tops, recon_targets = stats
    L = len(p["W"])
    g = {key: [np.zeros_like(a) for a in p[key]] for key in ("W", "b", "U", "R", "rb")}
    g["c"], g["d"] = np.zeros_like(p["c"]), np.zeros_like(p["d"])
    a = encoders(ins, tops, p, kind, m)
    dec_kind = "sigmoid" if loss == "ce" else kind
    ga = [np.zeros_like(h) for h in a]
    for l in range(L):  # reconstruction of layer l's clean input through the tied decoder
        bias = p["c"] if l == 0 else p["b"][l - 1]
        r = phi(a[l] @ p["W"][l].T + bias, dec_kind)
        keep = 1.0 if l == 0 else m[l - 1]
        e = r - recon_targets[l]
        if loss == "mse":
            e = e * phi_prime_from_output(r, dec_kind)
        e = w[:, None] * keep * e
        g["W"][l] += e.T @ a[l]
        if l == 0:
            g["c"] += e.sum(axis=0)
        else:
            g["b"][l - 1] += e.sum(axis=0)
        ga[l] += e @ p["W"][l]
    G = w[:, None] * (joint_proba(a, p) - T)  # output term
    g["d"] += G.sum(axis=0)
    for l in range(L):
        g["U"][l] += a[l].T @ G
        ga[l] += G @ p["U"][l].T
    for l in range(L):  # into the encoders: from below (W^l) and from above (W^{l+1})
        delta = ga[l] * m[l] * phi_prime_from_output(a[l], kind)
        g["W"][l] += ins[l].T @ delta
        g["b"][l] += delta.sum(axis=0)
        if tops[l] is not None:
            g["W"][l + 1] += delta.T @ tops[l]
    # recognition network: KL to mu (+ discriminative term), back-propagated with doubling
    deltas = []
    for l in range(L):
        if kind == "sigmoid":
            deltas.append(w[:, None] * (v[l] - mu[l]) * m[l])
        else:
            deltas.append(w[:, None] * (v[l] - mu[l]) * phi_prime_from_output(v[l], kind) * m[l])
    if disc_weight:
        Gv = disc_weight * w[:, None] * (joint_proba(v, p) - T)
        g["d"] += Gv.sum(axis=0)
        for l in range(L):
            g["U"][l] += v[l].T @ Gv
            deltas[l] = deltas[l] + (Gv @ p["U"][l].T) * phi_prime_from_output(v[l], kind) * m[l]
    for l in reversed(range(L)):
        k = 2.0 if l < L - 1 else 1.0
        below = X if l == 0 else v[l - 1]
        g["R"][l] += k * below.T @ deltas[l]
        g["rb"][l] += deltas[l].sum(axis=0)
        if l > 0:
            deltas[l - 1] = deltas[l - 1] + k * (deltas[l] @ p["R"][l].T) * phi_prime_from_output(
                v[l - 1], kind
            ) * m[l - 1]
    return g


def step(g, lr, upper_lr):
    """The SGD step of the gradients `g` (keys of `gradients`): `lr` times those of the first
    layer, `c` and `d`, `upper_lr` times those of the layers above the first."""
    out = {key: [(lr if l == 0 else upper_lr) * a for l, a in enumerate(g[key])]
           for key in ("W", "b", "U", "R", "rb")}
    out["c"], out["d"] = lr * g["c"], lr * g["d"]
    return out


def proba(X, p, kind, keep):
    """Prediction: one recognition pass with the activities scaled by the keep probability."""
    return joint_proba(recognition(X, p, kind, None, scale=keep), p)


# --------------------------------------------------------------------------- HSDA
# Per-layer lists: W[l] [H_{l-1}, H_l], b[l] [H_l] (encoder bias), c[l] [H_{l-1}] (decoder
# bias), U[l] [H_l, C], d[l] [C]; `k[l]` is the corruption mask of layer l's input.


def hsda_forward(X, p, kind, m, scale=1.0, lw=None):
    """Clean pass: each layer's activities and the ensemble p(y|x) (the layers' predictions
    weighted by `lw`; None: their mean)."""
    hs, h = [], X
    L = len(p["W"])
    for l in range(L):
        h = scale * phi(h @ p["W"][l] + p["b"][l], kind) * (m[l] if m is not None else 1.0)
        hs.append(h)
    lw = np.full(L, 1.0 / L) if lw is None else lw
    P = sum(w * softmax(h @ U + d) for w, h, U, d in zip(lw, hs, p["U"], p["d"]))
    return hs, P


def hsda_track(X, y, p, kind, scale, decay, layer_loss):
    """The running log-losses after folding in the labeled rows `(X, y)` one by one."""
    hs, _ = hsda_forward(X, p, kind, None, scale)
    out = np.array(layer_loss, dtype=float)
    for l, h in enumerate(hs):
        P = softmax(h @ p["U"][l] + p["d"][l])
        for r in range(len(y)):
            out[l] += decay * (-np.log(max(P[r, y[r]], 1e-12)) - out[l])
    return out


def hsda_statistics(X, y, p, kind, m, alpha, beta, hard, lw=None):
    hs, P = hsda_forward(X, p, kind, m, lw=lw)
    return [X] + hs[:-1], targets(y, P, hard), row_weights(y, alpha, beta)


def hsda_layer_loss(p, l, u, k, T, w, kind, loss, m, in_keep):
    """Layer l's hybrid DAE loss on its (fixed) input u: reconstruction + own predictor NLL."""
    mu = phi((u * k) @ p["W"][l] + p["b"][l], kind) * m[l]
    dec_kind = "sigmoid" if loss == "ce" else kind
    r = phi(mu @ p["W"][l].T + p["c"][l], dec_kind)
    if loss == "ce":
        e = -(u * np.log(r) + (1 - u) * np.log(1 - r))
    else:
        e = 0.5 * (r - u) ** 2
    J = np.sum(w[:, None] * in_keep * e)
    return J - np.sum(w * np.sum(T * np.log(softmax(mu @ p["U"][l] + p["d"][l])), axis=1))


def hsda_total_loss(p, stats, k, kind, loss, m):
    inputs, T, w = stats
    return sum(
        hsda_layer_loss(p, l, inputs[l], k[l], T, w, kind, loss, m, 1.0 if l == 0 else m[l - 1])
        for l in range(len(p["W"]))
    )


def hsda_gradients(p, stats, k, kind, loss, m, disc=1.0):
    """Hand-written gradients of `hsda_total_loss` (inputs, targets, masks fixed), the
    predictors' loss weighted `disc`."""
    inputs, T, w = stats
    g = {key: [np.zeros_like(a) for a in p[key]] for key in ("W", "b", "c", "U", "d")}
    dec_kind = "sigmoid" if loss == "ce" else kind
    for l in range(len(p["W"])):
        u, uhat = inputs[l], inputs[l] * k[l]
        mu = phi(uhat @ p["W"][l] + p["b"][l], kind) * m[l]
        r = phi(mu @ p["W"][l].T + p["c"][l], dec_kind)
        e = r - u
        if loss == "mse":
            e = e * phi_prime_from_output(r, dec_kind)
        e = w[:, None] * (1.0 if l == 0 else m[l - 1]) * e
        g["W"][l] += e.T @ mu
        g["c"][l] += e.sum(axis=0)
        G = disc * w[:, None] * (softmax(mu @ p["U"][l] + p["d"][l]) - T)
        g["U"][l] += mu.T @ G
        g["d"][l] += G.sum(axis=0)
        delta = (e @ p["W"][l] + G @ p["U"][l].T) * m[l] * phi_prime_from_output(mu, kind)
        g["W"][l] += uhat.T @ delta
        g["b"][l] += delta.sum(axis=0)
    return g
