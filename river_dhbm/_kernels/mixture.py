"""The aggregating mixture's one-row kernels (`river_dhbm.aggregating`): each expert's
calibration (a temperature), the Brier game's prediction from the experts' `p(y | x)` of one
row, the scoring of one labeled row and who leads, and the hybrid networks' experts and their
mixture of one row in one call. River's loop predicts and scores row by row, where numpy's
calls and Python's loops cost more than the arithmetic.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from river_dhbm._kernels.build import INNER, JIT
from river_dhbm._kernels.dhbm import dhbm_proba_row
from river_dhbm._kernels.linear import linear_proba
from river_dhbm._kernels.network import first_largest


#: The smallest probability a calibration takes the logarithm of.
TINY = 1e-12

#: The bounds of each expert's log temperature: a calibration sharpens or softens by a factor
#: of `e^3` at most.
LOG_TEMP_BOUND = 3.0

#: How many fewer errors than the aggregating algorithm's predictions an expert must have made,
#: on the labeled rows scored since the last restart, to be followed alone (`leader`): the
#: user counts errors, and the Brier score can prefer an expert that is right less often.
LEAD_MARGIN = 10.0

#: ... and how many standard deviations of that difference it must be, were the two equally
#: often right: on the `m` rows where one of them is right and the other not, the difference
#: of two equally good ones wanders by about `sqrt(m)`, and a fixed margin alone would hand a
#: long stream to whichever wandered ahead.
LEAD_DEVIATIONS = 2.0


@njit(**JIT, **INNER)
def calibrate(P, log_temps, Q):
    """Each expert's calibrated `p(y | x)` into `Q [E, K]`: `softmax(ln P_e / T_e)` with `T_e =
    exp(log_temps[e])`, `P_e` itself (to the bit) while its log temperature is 0."""
    E, K = P.shape
    for e in range(E):
        if log_temps[e] == 0.0:
            for k in range(K):
                Q[e, k] = P[e, k]
            continue
        inverse = math.exp(-log_temps[e])
        top = -np.inf
        for k in range(K):
            Q[e, k] = math.log(max(P[e, k], TINY)) * inverse
            top = max(top, Q[e, k])
        total = 0.0
        for k in range(K):
            Q[e, k] = math.exp(Q[e, k] - top)
            total += Q[e, k]
        for k in range(K):
            Q[e, k] /= total


@njit(**JIT, **INNER)
def substitute_row(Q, weights, out):
    """The aggregating algorithm's prediction for the Brier game into `out [K]`, from the
    experts' (calibrated) `Q [E, K]` and their `weights [E]`: `g(y) = -ln(sum_e w_e
    exp(-brier(Q_e, y)))`, `out_y = max(0, (s - g(y)) / 2)` with `s` such that `out` sums to
    1."""
    E, K = Q.shape
    norms = np.empty(E)
    for e in range(E):
        total = 1.0
        for k in range(K):
            total += Q[e, k] * Q[e, k]
        norms[e] = total
    g = np.empty(K)
    for k in range(K):
        mixed = 0.0
        for e in range(E):
            mixed += weights[e] * math.exp(2.0 * Q[e, k] - norms[e])
        g[k] = -math.log(mixed)
    ordered = np.empty(K)
    for k in range(K):  # insertion sort: K is small, and np.sort compiles a quicksort of its own
        j = k
        while j > 0 and ordered[j - 1] > g[k]:
            ordered[j] = ordered[j - 1]
            j -= 1
        ordered[j] = g[k]
    total, s = 0.0, 0.0
    for j in range(K):  # the classes with a share: a prefix of the ordered `g`
        total += ordered[j]
        candidate = (2.0 + total) / (j + 1)
        if candidate <= ordered[j]:
            break
        s = candidate
    for k in range(K):
        out[k] = max(0.0, (s - g[k]) / 2.0)


@njit(**JIT, **INNER)
def mix_row(P, weights, log_temps, out):
    """The mixture's prediction of one row into `out [K]`: the experts' `P [E, K]` calibrated
    (`calibrate`), then the Brier game's substitution with `weights [E]`."""
    Q = np.empty(P.shape)
    calibrate(P, log_temps, Q)
    substitute_row(Q, weights, out)


@njit(**JIT, **INNER)
def _brier(p, code):
    total = 1.0 - 2.0 * p[code]
    for k in range(p.shape[0]):
        total += p[k] * p[k]
    return total


@njit(**JIT, **INNER)
def grown_prior(log_prior, needs, evidence, e):
    """Expert `e`'s log prior after `evidence` labeled rows: `log_prior[e]`, plus `ln((evidence
    + 1) / needs[e])` when it grows with the labels (`needs[e] > 0`)."""
    if needs[e] > 0.0:
        return log_prior[e] + math.log((evidence + 1.0) / needs[e])
    return log_prior[e]


@njit(**JIT, **INNER)
def leader(errors):
    """The expert followed alone, `-1` for the aggregating algorithm: from `errors [1 + 2E]`,
    the algorithm's errors, each expert's, then for each expert the rows where exactly one of
    it and the algorithm was right, the expert with the fewest errors (the first of equals)
    among those whose errors are fewer than the algorithm's by `LEAD_MARGIN` and by
    `LEAD_DEVIATIONS` times the square root of those rows; none without `errors`."""
    lead = -1
    E = (errors.shape[0] - 1) // 2
    fewest = np.inf
    for e in range(E):
        ahead = errors[0] - errors[1 + e]
        if (ahead >= LEAD_MARGIN and ahead >= LEAD_DEVIATIONS * math.sqrt(errors[1 + E + e])
                and errors[1 + e] < fewest):
            lead, fewest = e, errors[1 + e]
    return lead


@njit(**JIT, **INNER)
def brier_weights(log_prior, needs, evidence, losses, weights):
    """The aggregating algorithm's `weights [E]`: the softmax of the grown priors
    (`grown_prior`) after `evidence` labels minus the `losses`."""
    E = weights.shape[0]
    top = -np.inf
    for e in range(E):
        weights[e] = grown_prior(log_prior, needs, evidence, e) - losses[e]
        top = max(top, weights[e])
    total = 0.0
    for e in range(E):
        weights[e] = math.exp(weights[e] - top)
        total += weights[e]
    for e in range(E):
        weights[e] /= total


@njit(**JIT)
def score_row(P, code, log_prior, needs, evidence, losses, weights, log_temps, step, gamma,
              errors):
    """Score one labeled row of class `code` predicted by the experts as `P [E, K]`: the
    aggregating algorithm's prediction with the weights of its scores so far and each expert's
    calibration into `gamma [K]`, its errors and each expert's counted in `errors [1 + 2E]`
    (`leader`; none when empty), each calibrated expert's Brier score added to `losses [E]`,
    the row counted in `evidence [1]`, then `weights` set: the algorithm's (`brier_weights`),
    or 1 on the `leader`'s and 0 elsewhere while one leads. Then each log temperature takes a
    gradient step of size `step` on its calibrated prediction's log loss, `d/dtau (-ln q_y) =
    z_y - sum_k q_k z_k` with `z = ln p / T` (bounded by `LOG_TEMP_BOUND`). Returns the
    algorithm's Brier score of the row (the bound's)."""
    E, K = P.shape
    Q = np.empty((E, K))
    calibrate(P, log_temps, Q)
    if leader(errors) >= 0:  # `weights` holds the leader's: the algorithm's are its scores'
        mixed = np.empty(E)
        brier_weights(log_prior, needs, evidence[0], losses, mixed)
        substitute_row(Q, mixed, gamma)
    else:
        substitute_row(Q, weights, gamma)
    if errors.shape[0]:
        wrong = first_largest(gamma) != code
        errors[0] += wrong
        for e in range(E):
            differs = first_largest(P[e]) != code
            errors[1 + e] += differs
            errors[1 + E + e] += differs != wrong
    evidence[0] += 1
    for e in range(E):
        losses[e] += _brier(Q[e], code)
    brier_weights(log_prior, needs, evidence[0], losses, weights)
    lead = leader(errors)
    if lead >= 0:
        for e in range(E):
            weights[e] = 0.0
        weights[lead] = 1.0
    if step > 0.0:
        for e in range(E):
            inverse = math.exp(-log_temps[e])
            expected = 0.0
            for k in range(K):
                expected += Q[e, k] * math.log(max(P[e, k], TINY)) * inverse
            slope = math.log(max(P[e, code], TINY)) * inverse - expected
            log_temps[e] = min(LOG_TEMP_BOUND, max(-LOG_TEMP_BOUND, log_temps[e] - step * slope))
    return _brier(gamma, code)


@njit(**JIT)
def score_rows(Ps, codes, log_prior, needs, evidence, losses, weights, log_temps, step,
               errors):
    """`score_row` of each labeled row `r` of `Ps [E, n, K]`, `codes [n]`, in order; returns
    the aggregating algorithm's Brier score of them all."""
    E, n, K = Ps.shape
    P = np.empty((E, K))
    gamma = np.empty(K)
    loss = 0.0
    for r in range(n):
        for e in range(E):
            for k in range(K):
                P[e, k] = Ps[e, r, k]
        loss += score_row(P, codes[r], log_prior, needs, evidence, losses, weights, log_temps,
                          step, gamma, errors)
    return loss


@njit(**JIT)
def hybrid_experts_row(X, theta, theta_twin, off, sizes, hcum, n_classes, kind, scale, act,
                       linear, weights, log_temps, P, out):
    """`predict_proba_one` of a DHBM or a DHDA with experts, in one call: each expert's `p(y |
    x)` of one row `X [1, D]` into `P [E, K]` (the network's recognition pass and joint
    predictor, `dhbm_proba_row`, with `theta`; its twin's with `theta_twin` when that is not
    empty; the linear expert's when `P` has a row left, `linear = (W, b, mean, m2, count)`),
    then their mixture with `weights [E]` and calibration `log_temps [E]` into `out [K]`
    (`mix_row`; the network's own when its weight is exactly 1, as `safety.predictive_proba`
    answers). `act` is the recognition
    pass's work (flat `>= hcum[L]`). Returns the index of the first largest of `out`."""
    dhbm_proba_row(X, theta, off, sizes, hcum, n_classes, kind, scale, act, P[0:1])
    e = 1
    if theta_twin.shape[0]:
        dhbm_proba_row(X, theta_twin, off, sizes, hcum, n_classes, kind, scale, act, P[1:2])
        e = 2
    if e < P.shape[0]:
        W, b, mean, m2, count = linear
        linear_proba(W, b, mean, m2, count, X, P[e : e + 1])
    if weights[0] == 1.0:
        for k in range(P.shape[1]):
            out[k] = P[0, k]
    else:
        mix_row(P, weights, log_temps, out)
    return first_largest(out)
