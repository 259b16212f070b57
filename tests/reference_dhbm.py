"""Plain numpy reference of the DHBM's mathematics (written for clarity, not speed).

Parameters are unpacked from the flat buffer into per-layer lists once, and every step of
`river_dhbm._kernels.dhbm.dhbm_update` / `dhbm_proba` is redone with matrix products, given
the same dropout masks and Gibbs noise. The objectives whose gradients the kernels compute
are written out too (`kl_loss`, `discriminative_loss`) for the finite-difference checks.
"""

from __future__ import annotations

import numpy as np

from river_dhbm._kernels.network import COL_B, COL_R, COL_RB, COL_U, COL_W


def unpack(theta, sizes, n_classes, off):
    """Per-layer views `W, b, U, R, r` (lists) and `c, d` of a flat buffer."""
    L = len(sizes) - 1
    P = {k: [] for k in "WbURr"}
    for l in range(L):
        fi, fo = sizes[l], sizes[l + 1]
        P["W"].append(theta[off[l, COL_W] : off[l, COL_W] + fi * fo].reshape(fi, fo))
        P["b"].append(theta[off[l, COL_B] : off[l, COL_B] + fo])
        P["U"].append(theta[off[l, COL_U] : off[l, COL_U] + fo * n_classes].reshape(fo, n_classes))
        P["R"].append(theta[off[l, COL_R] : off[l, COL_R] + fi * fo].reshape(fi, fo))
        P["r"].append(theta[off[l, COL_RB] : off[l, COL_RB] + fo])
    P["c"] = theta[off[L, 0] : off[L, 0] + sizes[0]]
    P["d"] = theta[off[L, 1] : off[L, 1] + n_classes]
    return P


def phi(z, kind):
    """Kinds as in `river_dhbm._kernels.network`: 0 sigmoid, 1 ReLU, 2 ReLU bounded to [0, 1]."""
    if kind == 1:
        return np.maximum(z, 0.0)
    if kind == 2:
        return np.clip(z, 0.0, 1.0)
    return 1.0 / (1.0 + np.exp(-z))


def dphi(a, kind):
    if kind == 1:
        return (a > 0).astype(float)
    if kind == 2:
        return ((a > 0) & (a < 1)).astype(float)
    return a * (1.0 - a)


def softmax(Z):
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def split(flat, sizes, n):
    """Per-layer `[n, H_l]` arrays of a flat activity buffer."""
    out, pos = [], 0
    for H in sizes[1:]:
        out.append(flat[pos : pos + n * H].reshape(n, H))
        pos += n * H
    return out


def recognition(X, P, kind, masks=None, scale=1.0):
    L = len(P["R"])
    v, below = [], X
    for l in range(L):
        k = 2.0 if l < L - 1 else 1.0
        a = phi(k * below @ P["R"][l] + P["r"][l], kind)
        if masks is not None:
            a = a * masks[l]
        a = a * scale
        v.append(a)
        below = a
    return v


def joint(v, P):
    return softmax(sum(h @ U for h, U in zip(v, P["U"])) + P["d"])


def sweep(X, mu, T, P, kind, masks=None, scale=1.0):
    """One bottom-up Gauss-Seidel mean-field sweep (returns a new list)."""
    L = len(mu)
    mu = [m.copy() for m in mu]
    for l in range(L):
        below = X if l == 0 else mu[l - 1]
        z = below @ P["W"][l] + T @ P["U"][l].T + P["b"][l]
        if l < L - 1:
            z = z + mu[l + 1] @ P["W"][l + 1].T
        a = phi(z, kind) * scale
        if masks is not None:
            a = a * masks[l]
        mu[l] = a
    return mu


def kl_loss(X, P, mu, wrow, kind, masks=None):
    """Weighted recognition objective of `v = recognition(X)` towards `mu` (eq. 11): cross
    entropy for sigmoid units, squared error / 2 for ReLU units, dropped units left out."""
    L = len(P["R"])
    total, below = 0.0, X
    for l in range(L):
        k = 2.0 if l < L - 1 else 1.0
        s = phi(k * below @ P["R"][l] + P["r"][l], kind)
        keep = np.ones_like(s) if masks is None else masks[l]
        if kind != 0:
            per = 0.5 * (s - mu[l]) ** 2
        else:
            per = -(mu[l] * np.log(s) + (1 - mu[l]) * np.log(1 - s))
        total += (wrow[:, None] * per * keep).sum()
        below = s * keep
    return total


def discriminative_loss(X, P, T, wrow, kind, masks=None):
    """`sum_r wrow[r] * (-sum_k T log p(k | x_r))` through the recognition network."""
    Pr = joint(recognition(X, P, kind, masks), P)
    return -(wrow[:, None] * T * np.log(Pr)).sum()


def update(X, y, theta, sizes, n_classes, off, kind, estimator, mf_steps, lr, alpha, beta,
           disc_weight, hard, mask, part_x, part_h, part_y, part_mask, noise_h, noise_v,
           moments=None, step=1):
    """The DHBM update, returning the new `theta`, particles and Adam moments (inputs
    untouched); plain gradient steps when `moments` is None."""
    theta = theta.copy()
    P = unpack(theta, sizes, n_classes, off)
    G = {k: [np.zeros_like(a) for a in P[k]] for k in "WbURr"}
    G["c"], G["d"] = np.zeros_like(P["c"]), np.zeros_like(P["d"])
    n, L = len(X), len(sizes) - 1
    masks = split(mask, sizes, n) if mask.size else None
    v = recognition(X, P, kind, masks)
    lab = y >= 0
    wrow = np.where(lab, alpha / max(lab.sum(), 1), beta / max((~lab).sum(), 1))
    C = n_classes
    Pr = joint(v, P) if C else np.zeros((n, 0))
    T = np.zeros((n, C))
    if C:
        T[lab, y[lab]] = 1.0
        if hard:
            T[~lab, Pr[~lab].argmax(1)] = 1.0
        else:
            T[~lab] = Pr[~lab]
    mu = [a.copy() for a in v]
    for _ in range(mf_steps):
        mu = sweep(X, mu, T, P, kind, masks)

    # recognition network: back-propagate KL + discriminative deltas
    delta = [np.zeros_like(a) for a in v]
    for l in range(L):
        keep = 1.0 if masks is None else masks[l]
        if mf_steps > 0:
            g = v[l] - mu[l]
            if kind != 0:
                g = g * dphi(v[l], kind)
            delta[l] += wrow[:, None] * g * keep
    if C and disc_weight:
        Gout = (disc_weight * wrow)[:, None] * (Pr - T)
        G["d"] += Gout.sum(0)
        for l in range(L):
            keep = 1.0 if masks is None else masks[l]
            G["U"][l] += v[l].T @ Gout
            delta[l] += (Gout @ P["U"][l].T) * dphi(v[l], kind) * keep
    for l in range(L - 1, -1, -1):
        k = 2.0 if l < L - 1 else 1.0
        below = X if l == 0 else v[l - 1]
        G["R"][l] += k * below.T @ delta[l]
        G["r"][l] += delta[l].sum(0)
        if l > 0:
            keep = 1.0 if masks is None else masks[l - 1]
            delta[l - 1] += k * (delta[l] @ P["R"][l].T) * dphi(v[l - 1], kind) * keep

    def phase(V0, H, Y, w, sign):
        for l in range(L):
            below = V0 if l == 0 else H[l - 1]
            G["W"][l] += sign * (below * w[:, None]).T @ H[l]
            G["b"][l] += sign * (w[:, None] * H[l]).sum(0)
            G["U"][l] += sign * (H[l] * w[:, None]).T @ Y
        G["c"] += sign * (w[:, None] * V0).sum(0)
        G["d"] += sign * (w[:, None] * Y).sum(0)

    phase(X, mu, T, wrow, -1.0)
    part_x, part_h, part_y = part_x.copy(), part_h.copy(), part_y.copy()
    if estimator == 0:
        xrec = phi(mu[0] @ P["W"][0].T + P["c"], 0)
        Y = joint(mu, P) if C else np.zeros((n, 0))
        neg = sweep(xrec, mu, Y, P, kind, masks)
        phase(xrec, neg, Y, wrow, 1.0)
    else:
        M = len(part_x)
        wneg = np.full(M, wrow.sum() / M)
        hs = split(part_h, sizes, M)
        eps = split(noise_h, sizes, M)
        pm = split(part_mask, sizes, M) if part_mask.size else None
        for l in range(L):
            below = part_x if l == 0 else hs[l - 1]
            z = below @ P["W"][l] + part_y @ P["U"][l].T + P["b"][l]
            if l < L - 1:
                z = z + hs[l + 1] @ P["W"][l + 1].T
            p = phi(z, kind)
            if kind != 0:  # noisy ReLU, bounded at 1 for kind 2
                s = np.maximum(z + np.sqrt(phi(z, 0)) * eps[l], 0.0)
                if kind == 2:
                    s = np.minimum(s, 1.0)
            else:
                s = (eps[l] < p).astype(float)
            if pm is not None:
                p, s = p * pm[l], s * pm[l]
            G["W"][l] += (below * wneg[:, None]).T @ p
            G["b"][l] += (wneg[:, None] * p).sum(0)
            G["U"][l] += (p * wneg[:, None]).T @ part_y
            hs[l] = s
        D = part_x.shape[1]
        xp = phi(hs[0] @ P["W"][0].T + P["c"], 0)
        G["c"] += (wneg[:, None] * xp).sum(0)
        part_x = (noise_v[: M * D].reshape(M, D) < xp).astype(float)
        if C:
            py = joint(hs, P)
            G["d"] += (wneg[:, None] * py).sum(0)
            u = noise_v[M * D :]
            pick = np.minimum((np.cumsum(py, 1) <= u[:, None]).sum(1), C - 1)
            part_y = np.eye(C)[pick]
        part_h = np.concatenate([h.ravel() for h in hs])

    grad = np.zeros_like(theta)
    Gflat = unpack(grad, sizes, n_classes, off)
    for k in "WbURr":
        for a, g in zip(Gflat[k], G[k]):
            a += g
    Gflat["c"] += G["c"]
    Gflat["d"] += G["d"]
    if moments is None:
        return theta - lr * grad, part_x, part_h, part_y, None
    m, v = np.split(moments, 2)
    m = 0.9 * m + 0.1 * grad
    v = 0.999 * v + 0.001 * grad**2
    step_ = lr * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return theta - step_, part_x, part_h, part_y, np.concatenate([m, v])


def proba(X, theta, sizes, n_classes, off, kind, scale, mf_steps):
    P = unpack(theta, sizes, n_classes, off)
    v = recognition(X, P, kind, None, scale)
    Pr = joint(v, P)
    for _ in range(mf_steps):
        v = sweep(X, v, Pr, P, kind, None, scale)
        Pr = joint(v, P)
    return Pr
