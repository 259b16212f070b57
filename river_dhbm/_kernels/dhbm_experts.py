"""The DHBM with the experts beside it (`river_dhbm.safety`) over whole mini-batches in ONE call:
each mini-batch predicted by the network, its twin and the linear expert and by their mixture,
its labeled rows scored, then every expert updated, as `minibatch.mixed_flush` does batch after
batch (`river_dhbm.fused_run`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm._kernels.build import INNER, JIT
from river_dhbm._kernels.dhbm import dhbm_proba, learn_block
from river_dhbm._kernels.linear import linear_learn, linear_proba
from river_dhbm._kernels.mixture import mix_row, score_row
from river_dhbm._kernels.network import borrow, first_largest
from river_dhbm._kernels.replay import NO_PROXY_LABELS


@njit(**JIT)
def dhbm_experts_run(X, codes, predicted, network, twin, linear, mixture, hold, net_pred,
                     twin_pred):
    """Test-then-train of a DHBM with experts over whole mini-batches of `X`, `codes` (-1
    unlabeled), in one call.

    - `network`, `twin`: each DHBM's `dhbm_test_then_train` arguments `(net, optimiser,
      schedule, settings, particles, work, memory, first_P)`, block `b` of the twin being
      the labeled rows of block `b`; a model without a twin passes `network` twice, and
      `has_twin` False;
    - `linear = (W, b, mean, m2, count, uniforms, rate, present)`: the linear expert, which
      learns each block after the network, `steps` gradient steps of its own, each with
      `replay` rows of the network's memory while that holds any (the next of `uniforms`);
    - `mixture = (log_prior, needs, evidence, losses, weights, log_temps, step, errors,
      has_twin)`, updated in place by each labeled row's scores (`score_row`).

    `predicted` receives the mixture's prediction of each row with the weights before its
    block, `net_pred` and `twin_pred` the network's and the twin's (of the labeled rows; -1
    elsewhere) before their update, for their drift detectors. The linear expert does not
    learn the last `hold` blocks (0 or 1): a restart due after them comes first (the
    caller's). Returns the mixture's Brier score added, the rows scored and the linear
    expert's uniforms drawn."""
    net, optimiser, schedule, settings, particles, work, memory, first_P = network
    theta, off, sizes, hcum, C, kind = net
    mem_X, mem_y, mem_rows, mem_state, _, replay, now, horizon = memory
    W, bias, mean, m2, count, lin_u, rate, has_linear = linear
    log_prior, needs, evidence, losses, weights, log_temps, step, errors, has_twin = mixture
    n = work[6].shape[0] - replay
    D = X.shape[1]
    E = weights.shape[0]
    most = replay * max(schedule[4].max(), twin[2][4].max()) if schedule[4].shape[0] else 0
    Xa = np.empty((n + most, D))
    ya = np.empty(n + most, dtype=np.int64)
    Xl = np.empty((n, D))
    cl = np.empty(n, dtype=np.int64)
    Ps = np.empty((E, n, C))
    act = np.empty(n * hcum[-1])
    Pr = np.empty((E, C))
    out = np.empty(C)
    seen, seen_twin = settings[3], twin[3][3]
    adam, adam_twin = optimiser[2], twin[1][2]
    used = used_twin = used_lin = scored = 0
    loss = 0.0
    blocks = X.shape[0] // n
    for b in range(blocks):
        # borrowed views, as every block `learn_block` learns: it compiles once for all
        Xb, cb = borrow(X, b * n * D, (n, D)), borrow(codes, b * n, (n,))
        held = b >= blocks - hold
        # every expert's prediction before any learns the block
        dhbm_proba(Xb, theta, off, sizes, hcum, C, kind, 1.0, act, Ps[0])
        if has_twin:
            dhbm_proba(Xb, twin[0][0], off, sizes, hcum, C, kind, 1.0, act, Ps[1])
        if has_linear:
            linear_proba(W, bias, mean, m2, count, Xb, Ps[E - 1])
        for r in range(n):
            _row_of(Ps, r, Pr)
            if weights[0] == 1.0:
                predicted[b * n + r] = first_largest(Pr[0])
            else:
                mix_row(Pr, weights, log_temps, out)
                predicted[b * n + r] = first_largest(out)
        for r in range(n):
            if cb[r] >= 0:
                _row_of(Ps, r, Pr)
                loss += score_row(Pr, cb[r], log_prior, needs, evidence, losses, weights,
                                  log_temps, step, out, errors)
                scored += 1
        k = 0  # the block's labeled rows, the twin's block
        for r in range(n):
            if cb[r] >= 0:
                for j in range(D):  # a loop: a slice assignment compiles its error paths too
                    Xl[k, j] = Xb[r, j]
                cl[k] = cb[r]
                k += 1
        seen += k
        gate = settings[2] if seen >= settings[4] else NO_PROXY_LABELS
        used = learn_block(Xb, cb, n, b, now + b * n, gate, adam, used, network, Xa, ya)
        adam += schedule[4][b]
        for r in range(n):
            net_pred[b * n + r] = first_largest(first_P[r])
        if has_twin:
            seen_twin += k
            gate = twin[3][2] if seen_twin >= twin[3][4] else NO_PROXY_LABELS
            used_twin = learn_block(borrow(Xl, 0, (k, D)), borrow(cl, 0, (k,)), k, b,
                                    now + b * n, gate, adam_twin, used_twin, twin, Xa, ya)
            adam_twin += twin[2][4][b]
            j = 0
            for r in range(n):
                twin_pred[b * n + r] = -1
                if cb[r] >= 0:
                    twin_pred[b * n + r] = first_largest(twin[7][j])
                    j += 1
        if has_linear and not held:  # after the network: its memory holds the block's labels
            steps = schedule[4][b]
            drawn = steps * replay if mem_state[0] > 0 else 0
            linear_learn(W, bias, mean, m2, count, Xb, cb, n, mem_X, mem_y, mem_rows, mem_state,
                         lin_u[used_lin : used_lin + drawn], steps, now + b * n, horizon, rate,
                         Xa, ya)
            used_lin += drawn
    return loss, scored, used_lin


@njit(**JIT, **INNER)
def _row_of(Ps, r, Pr):
    """`Pr [E, C]` = row `r` of each expert's `Ps [E, n, C]`."""
    for e in range(Ps.shape[0]):
        for c in range(Ps.shape[2]):
            Pr[e, c] = Ps[e, r, c]
