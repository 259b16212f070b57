"""The DHBM's learning step and prediction, each ONE Numba call per mini-batch.

Layouts follow `river_dhbm._kernels.network` (flat `theta`/`grad` with the `off` table, flat hidden
activities with `hcum`). All randomness arrives as arrays drawn by the model's generator.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm._kernels.build import INNER, JIT

from river_dhbm._kernels.dhbm_phases import (
    add_phase,
    mean_field_sweep,
    reconstruct,
    sap_sweep,
)
from river_dhbm._kernels.gradients import (
    adam_direction,
    discriminative_delta,
    kl_delta,
    label_targets,
    net_backward,
    sgd_step,
    subset_weights,
)
from river_dhbm._kernels.network import (
    COL_R,
    COL_RB,
    activate,
    borrow,
    borrowed,
    first_largest,
    forward_net,
    joint_proba,
    label_weights,
    layer,
    matrix,
    softmax_rows,
    transpose_weights,
    vector,
)
from river_dhbm._kernels.replay import (
    NO_PROXY_LABELS,
    confident_labels,
    memory_push,
    memory_replay,
    step_rows,
)

MF = 0
SAP = 1

#: The work arrays `dhbm_update` and `dhbm_test_then_train` take, in their order (`alloc_work`).
WORK = ("act", "mu", "neg", "delta", "zbuf", "xrec", "P", "T", "Y", "wrow", "wdisc", "mirror")

#: `JIT` for a body inlined into its callers in Numba's IR (no compiled library of its own;
#: branches on the constants its callers pass are pruned there).
_INLINE = dict(JIT, inline="always")


def alloc_work(n: int, sizes, hcum, n_classes: int, n_particles: int, dtype,
               mirror_size: int) -> dict:
    """The work arrays of an update of `n` rows (`WORK`, and `first_P`), zeros of `dtype`:
    `act, mu, neg, delta` flat `n * hcum[L]`, `zbuf` as wide as the widest layer times the
    rows or particles, `xrec [n, D]`, `P, T, Y, first_P [n, C]`, `wrow, wdisc [n]`, and
    `mirror` of `mirror_size` (the weights' transposes, rebuilt by every update by
    `network.transpose_weights`; 0: none)."""
    A, D = n * int(hcum[-1]), int(sizes[0])
    wide = max(n, n_particles, 1) * int(sizes.max())
    return dict(
        act=np.zeros(A, dtype), mu=np.zeros(A, dtype), neg=np.zeros(A, dtype),
        delta=np.zeros(A, dtype), zbuf=np.zeros(wide, dtype), xrec=np.zeros((n, D), dtype),
        P=np.zeros((n, n_classes), dtype), T=np.zeros((n, n_classes), dtype),
        Y=np.zeros((n, n_classes), dtype), wrow=np.zeros(n, dtype), wdisc=np.zeros(n, dtype),
        first_P=np.zeros((n, n_classes), dtype), mirror=np.zeros(mirror_size, dtype),
    )


def _update_kernel(estimator: int):
    """The DHBM's update kernel (`dhbm_update`) for the likelihood-gradient `estimator` (MF or
    SAP). The steps' loop is written here and `update_body` is inlined into it in Numba's IR,
    where the constant estimator prunes the other estimator's branch before it is typed (the
    mean-field kernel never compiles `sap_sweep`): one level of inlining, whose copy of the
    body costs a fraction of a second of the first use per level. (Numba keys the cached
    kernels of a closure on its closure's values too: the two kernels never share a cache
    entry.)"""

    @njit(**JIT)
    def dhbm_update(X, y, net, optimiser, settings, mask, particles, work, steps, n_batch,
                    first_P):
        """`steps` learning steps of the DHBM on a mixed mini-batch (paper Algorithm 1), in
        place. Its specification is the numpy reference `tests/reference_dhbm.py` (`update`),
        which the tests hold it to.

        The arguments, grouped by meaning:

        - `X [n_batch + steps * R, D]`: the mini-batch, then `R` replayed rows for each step;
          step `s` learns the mini-batch with its own `R` rows (`replay.step_rows`): a stream
          shows each row once, and fresh memory rows at every step keep the extra steps from
          fitting one small batch's noise. `y` int64 class indices (-1 unlabeled);
        - `net = (theta, off, sizes, hcum, n_classes, kind)`: the flat parameters, their
          layout (`parameters.param_layout`, `parameters.hidden_offsets`), the class count
          and the hidden units' kind;
        - `optimiser = (grad, moments, step)`: the gradient buffer (zero on entry and exit),
          Adam's moments (flat `[2 * theta.size]`; empty: plain gradient steps) and Adam's
          update number of the first step (`>= 1`; step `s` is `step + s`);
        - `settings = (mf_steps, lr, alpha, beta, confidence, disc_weight, hard)`;
        - `mask`: the dropout mask of the hidden units (flat, may be empty);
        - `particles = (part_x, part_h, part_y, part_mask, noise_h, noise_v)`: SAP's persistent
          particles, their dropout mask and the update's draws (empty for MF); the sweeps
          split `noise_h, noise_v` evenly between the steps;
        - `work = (act, mu, neg, delta, zbuf, xrec, P, T, Y, wrow, wdisc, mirror)`
          (`alloc_work`, `WORK`): `act, mu, neg, delta` flat `>= n * hcum[L]`, `xrec [>= n,
          D]`, `P, T, Y [>= n, C]`, `wrow, wdisc [>= n]` (their first `n` rows are used: a
          step's rows), `mirror` of `theta`'s length for the weights' transposes
          (`network.transpose_weights`, rebuilt here) or empty for none;
        - `first_P [n_batch, C]` (or no rows) receives each mini-batch row's `p(y | v)` of the
          first step, before any learning: without dropout, the prediction (`dhbm_proba`).

        Each step, on its `n` rows:

        1. recognition pass `v = Q_rec(X)` with dropout `mask` -> `act`;
        2. `P = p(y | v)`; an unlabeled row whose largest probability reaches `confidence` gets
           its predicted class in `y` (in place: a proxy label, learnt as a labeled row, from
           the first step only; `NO_PROXY_LABELS`: none); targets `T`: one-hot for labeled
           rows, for unlabeled rows `P` itself (`hard` False) or its one-hot argmax (`hard`);
        3. `mu = v`, then `mf_steps` clamped mean-field sweeps (x and `T` clamped) -> `mu`;
        4. row weights `alpha / n_lab` (labeled) and `beta / n_unlab` (unlabeled): each subset's
           gradient is averaged over its own rows;
        5. recognition step on the KL(mu || v) of every layer, plus `disc_weight` times the
           gradient of `-log p(T | v)` back-propagated through `U`, `d` and the recognition
           network;
        6. likelihood gradient: positive statistics `(X, mu, T)`; negative statistics from one
           free-running mean-field step (the MF estimator: `xrec = sigmoid(mu^1 W^1^T + c)`,
           `Y = p(y | mu)` soft, then one clamped sweep from `mu` given `(xrec, Y)` -> `neg`)
           or from the persistent particles (SAP, see `sap_sweep`: as many sweeps as
           `noise_h` holds draws for, the statistics from the last);
        7. `theta -= lr * grad` (grad holds the loss gradient: minus the likelihood gradient),
           or an Adam step when `moments` is not empty (see `adam_step`).
        """
        theta, off, sizes, hcum, C, kind = net
        grad, moments, step = optimiser
        mf_steps, lr, alpha, beta, confidence, disc_weight, hard = settings
        part_x, part_h, part_y, part_mask, noise_h, noise_v = particles
        P = work[6]  # the first step's `p(y | v)`: the prediction, kept in `first_P`
        n = n_batch
        rows = n + (X.shape[0] - n) // steps
        xs = np.empty((rows, X.shape[1]), X.dtype)
        ys = np.empty(rows, np.int64)
        hs = noise_h.shape[0] // steps
        vs = noise_v.shape[0] // steps
        for s in range(steps):
            step_rows(X, y, n, s, steps, xs, ys)  # `y` holds the first step's proxy labels
            drawn = (part_x, part_h, part_y, part_mask, noise_h[s * hs : (s + 1) * hs],
                     noise_v[s * vs : (s + 1) * vs])
            gate = confidence if s == 0 else NO_PROXY_LABELS
            if estimator == MF:  # a constant: one call is left, and inlined
                update_body(xs, ys, theta, grad, off, sizes, hcum, C, kind, MF, mf_steps, lr,
                            alpha, beta, gate, disc_weight, hard, mask, drawn, work,
                            moments, step + s)
            else:
                update_body(xs, ys, theta, grad, off, sizes, hcum, C, kind, SAP, mf_steps, lr,
                            alpha, beta, gate, disc_weight, hard, mask, drawn, work,
                            moments, step + s)
            if s == 0:
                _keep_first(P, C, n, first_P)
                for r in range(n):
                    y[r] = ys[r]

    return dhbm_update


#: `steps` learning steps of the DHBM on a mixed mini-batch (see `_update_kernel`'s kernel for
#: the algorithm) with the mean-field estimator: the kernel of the default settings, which never
#: compiles the SAP negative phase (`sap_sweep`, about a second of the first use) ...
dhbm_update_mf = _update_kernel(MF)
#: ... and with the persistent particles (`estimator="sap"`).
dhbm_update_sap = _update_kernel(SAP)
#: The estimator's code (`MF`, `SAP`) -> its update kernel.
UPDATE_KERNELS = {MF: dhbm_update_mf, SAP: dhbm_update_sap}


@njit(**JIT, **INNER)
def _keep_first(P, C, n, first_P):
    """`first_P[r]` = `P`'s flat row `r` of `C` classes, for the first `n` rows (none when
    `first_P` has no rows)."""
    for r in range(min(n, first_P.shape[0])):
        row = borrow(P, r * C, (C,))
        for k in range(C):
            first_P[r, k] = row[k]


@njit(**_INLINE)
def update_body(X, y, theta, grad, off, sizes, hcum, n_classes, kind, estimator, mf_steps, lr,
                alpha, beta, confidence, disc_weight, hard, mask, particles, work, moments, step):
    """`dhbm_update`'s body, inlined into each entry kernel in Numba's IR: there a constant
    `estimator` prunes the other estimator's branch before it is typed or compiled. The
    particles and work arrays come as two tuples: Python passes a call of more than 30
    arguments as `*args`, which Numba does not inline."""
    part_x, part_h, part_y, part_mask, noise_h, noise_v = particles
    act, mu, neg, delta, zbuf, xrec, P, T, Y, wrow, wdisc, theta_t = work
    # the buffers as borrowed views: no reference counting in the calls below (`borrowed`)
    theta, grad, theta_t = borrowed(theta), borrowed(grad), borrowed(theta_t)
    moments, off, sizes, hcum = borrowed(moments), borrowed(off), borrowed(sizes), borrowed(hcum)
    act, mu, neg, delta = borrowed(act), borrowed(mu), borrowed(neg), borrowed(delta)
    zbuf, xrec, P, T, Y = borrowed(zbuf), borrowed(xrec), borrowed(P), borrowed(T), borrowed(Y)
    wrow, wdisc = borrowed(wrow), borrowed(wdisc)
    n, D = X.shape
    L = sizes.shape[0] - 1
    A = n * hcum[L]
    C = n_classes
    xrec, P, T, Y = borrow(xrec, 0, (n, D)), borrow(P, 0, (n, C)), borrow(T, 0, (n, C)), borrow(
        Y, 0, (n, C))
    wrow, wdisc = borrow(wrow, 0, (n,)), borrow(wdisc, 0, (n,))
    if theta_t.size > 0:
        transpose_weights(theta, off, sizes, C, theta_t)
    forward_net(X, theta, off, sizes, hcum, COL_R, COL_RB, True, kind, mask, 1.0, act)
    if C > 0:
        joint_proba(act, n, theta, off, sizes, hcum, C, P)
        if confidence <= 1.0:
            confident_labels(y, P, n, confidence)

    subset_weights(y, n, alpha, beta, wrow)
    for r in range(n):
        wdisc[r] = disc_weight * wrow[r]
    if C > 0:
        label_targets(y, P, n, C, hard, T)

    for i in range(A):
        mu[i] = act[i]
    for s in range(mf_steps):
        mean_field_sweep(X, mu, T, theta, theta_t, off, sizes, hcum, C, kind, mask, 1.0, zbuf)

    # recognition network: KL towards the mean-field posterior + discriminative term
    for i in range(A):
        delta[i] = 0.0
    if mf_steps > 0:
        kl_delta(act, mu, n, hcum, wrow, kind, mask, delta)
    if C > 0 and disc_weight != 0.0:
        discriminative_delta(act, n, P, T, wdisc, theta, theta_t, off, sizes, hcum, C, kind,
                             mask, delta, grad)
    net_backward(X, act, delta, theta, theta_t, off, sizes, hcum, COL_R, COL_RB, True, kind, mask,
                 grad)

    # model: positive phase minus negative phase (as a loss gradient: negative minus positive)
    add_phase(X, mu, T, wrow, -1.0, grad, off, sizes, hcum, C, zbuf)
    if estimator == MF:
        reconstruct(layer(mu, hcum, n, 0), theta, theta_t, off, sizes, xrec)
        if C > 0 and mf_steps == 0:  # mu is the recognition pass: p(y | mu) is P
            for r in range(n):  # loops: a slice assignment compiles its error paths too
                for k in range(C):
                    Y[r, k] = P[r, k]
        elif C > 0:
            joint_proba(mu, n, theta, off, sizes, hcum, C, Y)
        for i in range(A):
            neg[i] = mu[i]
        mean_field_sweep(xrec, neg, Y, theta, theta_t, off, sizes, hcum, C, kind, mask, 1.0, zbuf)
        add_phase(xrec, neg, Y, wrow, 1.0, grad, off, sizes, hcum, C, zbuf)
    else:
        wsum = 0.0
        for r in range(n):
            wsum += wrow[r]
        M = part_x.shape[0]
        # `noise_h, noise_v` hold the draws of K sweeps; the statistics are the last one's
        K = noise_h.shape[0] // (M * hcum[L])
        for s in range(K):
            sap_sweep(part_x, part_h, part_y, part_mask,
                      borrow(noise_h, s * M * hcum[L], (M * hcum[L],)),
                      borrow(noise_v, s * (M * D + M), (M * D + M,)),
                      wsum / M if s == K - 1 else 0.0, theta, theta_t, grad, off, sizes, hcum, C,
                      kind, zbuf)

    if moments.size > 0:
        adam_step(theta, grad, moments, lr, step)
    else:
        for i in range(theta.shape[0]):
            theta[i] -= lr * grad[i]
            grad[i] = 0.0


@njit(**JIT)
def dhbm_test_then_train(X, codes, predicted, net, optimiser, schedule, settings, particles,
                         work, memory, first_P):
    """Prequential test-then-train over whole mini-batches in ONE call (estimator MF, no
    dropout: nothing random): `dhbm_update_mf` on each block of `n = P.shape[0] - replay` rows
    of `X` in turn, with `codes` as its `y`; `predicted [len(X)]` receives each row's most
    probable class BEFORE its update: the argmax of the first step's `P`, which is the
    prediction (`dhbm_proba` with scale 1). `first_P [>= n, C]` is work space.

    `net`, `particles` (the MF's: no mask, no draws) and `work` are `dhbm_update`'s;
    `optimiser = (grad, moments, first_step)`, Adam's step numbers running on from
    `first_step`; `schedule = (lrs, alphas, betas, disc_weights, steps)` holds block `b`'s
    `lr`, `alpha`, `beta`, `disc_weight` and step count (int64) at `b`; `settings = (mf_steps,
    hard, confidence, labeled_seen, warm_up)`; `memory = (mem_X, mem_y, mem_rows, mem_state,
    uniforms, replay, now, horizon)`: each update also learns `replay` rows of the label memory
    `(mem_X, mem_y, mem_rows, mem_state)` per step, drawn by the next `steps[b] * replay` of
    `uniforms` once the rows `horizon` stream rows old have left, then stores the block's
    labels there (block `b` ends at stream row `now + b * n`), and makes proxy labels at
    `confidence` once `warm_up` labeled rows have been seen since the last change
    (`labeled_seen` of them before this run), as `scarce_labels.learning_batch` does."""
    learner = (net, optimiser, schedule, settings, particles, work, memory, first_P)
    adam = optimiser[2]
    steps = schedule[4]
    confidence, labeled_seen, warm_up = settings[2], settings[3], settings[4]
    replay, now = memory[5], memory[6]
    n = work[6].shape[0] - replay
    D = X.shape[1]
    most = replay * steps.max() if steps.shape[0] else 0  # memory rows of the longest update
    Xa = np.empty((n + most, D), X.dtype)
    ya = np.empty(n + most, dtype=np.int64)
    used = 0  # uniforms drawn so far
    for b in range(X.shape[0] // n):
        for r in range(b * n, (b + 1) * n):
            if codes[r] >= 0:
                labeled_seen += 1
        gate = confidence if labeled_seen >= warm_up else NO_PROXY_LABELS
        used = learn_block(borrow(X, b * n * D, (n, D)), borrow(codes, b * n, (n,)), n, b,
                           now + b * n, gate, adam, used, learner, Xa, ya)
        adam += steps[b]
        for r in range(n):
            predicted[b * n + r] = first_largest(first_P[r])


@njit(**JIT, **INNER)
def learn_block(X, codes, n, b, now, gate, adam, used, learner, Xa, ya):
    """Update `b` of a run (`dhbm_test_then_train`, whose arguments `learner` groups) on the
    first `n` rows of `X`, `codes`, which end at stream row `now`: the label memory's rows
    replayed (the run's `uniforms` from `used` on) and the block's labels stored, then
    `dhbm_update_mf` from Adam's step `adam`, with proxy labels at `gate` (into the work
    arrays `Xa`, `ya`). Returns the uniforms drawn so far."""
    net, optimiser, schedule, settings, particles, work, memory, first_P = learner
    lrs, alphas, betas, disc_weights, steps = schedule
    mem_X, mem_y, mem_rows, mem_state, uniforms, replay = memory[:6]
    drawn = steps[b] * replay
    m = memory_replay(mem_X, mem_y, mem_rows, mem_state, X, codes, n,
                      uniforms[used : used + drawn], Xa, ya, now, memory[7])
    memory_push(mem_X, mem_y, mem_rows, mem_state, X, codes, n, now)
    dhbm_update_mf(borrow(Xa, 0, (m, X.shape[1])), borrow(ya, 0, (m,)), net,
                   (optimiser[0], optimiser[1], adam),
                   (settings[0], lrs[b], alphas[b], betas[b], gate, disc_weights[b], settings[1]),
                   particles[3], particles, work, steps[b], n, first_P)
    return used + drawn


@njit(**JIT, **INNER)
def adam_step(theta, grad, moments, lr, step):
    """Adam (Kingma & Ba, 2015; `gradients.adam_direction`) on the flat buffer: `theta -= lr *
    direction`, then zero `grad`. `moments [2 * size]`: first moments, then second moments."""
    adam_direction(grad, moments, step)
    sgd_step(theta, grad, lr)


@njit(**JIT)
def dhbm_proba(X, theta, off, sizes, hcum, n_classes, kind, scale, act, P):
    """`p(y | x)` `[n, C]` into `P`: the recognition pass (activities scaled by the dropout
    keep probability `scale`) into `act` (flat `>= n * hcum[L]`), then the joint predictor."""
    n = X.shape[0]
    empty = np.empty(0, theta.dtype)
    forward_net(X, theta, off, sizes, hcum, COL_R, COL_RB, True, kind, empty, scale, act)
    joint_proba(act, n, theta, off, sizes, hcum, n_classes, P)


@njit(**JIT, **INNER)
def dhbm_proba_row(X, theta, off, sizes, hcum, n_classes, kind, scale, act, P):
    """`dhbm_proba` of ONE row `X [1, D]` into `P [1, C]`, in
    plain loops: for one row the calls into BLAS and the views cost several times the
    arithmetic (River's per-instance predictions). `act` flat `>= hcum[L]`. Sums run in the
    order of the inputs, so the result matches `dhbm_proba` to round-off, not bitwise.
    Returns the index of the first largest probability (`predict_one`'s answer)."""
    L = sizes.shape[0] - 1
    for l in range(L):
        fan_in, H = sizes[l], sizes[l + 1]
        M = matrix(theta, off, sizes, l, COL_R)
        bias = vector(theta, off, sizes, l, COL_RB)
        below = X[0] if l == 0 else act[hcum[l - 1] : hcum[l]]
        out = act[hcum[l] : hcum[l + 1]]
        for j in range(H):
            out[j] = 0.0
        for i in range(fan_in):
            a = below[i]
            for j in range(H):
                out[j] += a * M[i, j]
        k = 2.0 if l < L - 1 else 1.0  # the recognition network's weight doubling
        for j in range(H):
            out[j] = activate(k * out[j] + bias[j], kind) * scale
    z = P[0]
    d = theta[off[L, 1] : off[L, 1] + n_classes]
    for c in range(n_classes):
        z[c] = d[c]
    for l in range(L):
        U = label_weights(theta, off, sizes, l, n_classes)
        for j in range(hcum[l + 1] - hcum[l]):
            a = act[hcum[l] + j]
            for c in range(n_classes):
                z[c] += a * U[j, c]
    softmax_rows(P)
    return first_largest(z)  # as the fused run's predictions (`dhbm_test_then_train`)
