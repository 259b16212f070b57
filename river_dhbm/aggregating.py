"""Vovk's aggregating algorithm for the Brier game over a model's experts
(`river_dhbm.safety`), with each expert calibrated and the expert that is right followed alone.

Each expert's cumulative Brier score `L_e` on the labeled rows (`sum_k (p_k - [y = k])^2` per
row, between 0 and 2) sets its weight, each row scored by every expert before any learns it,
a prior grown by `g_e = (n + 1) / needs_e` after `n` labels where the expert earns it:

    w_e = prior_e g_e exp(-L_e) / sum_f prior_f g_f exp(-L_f),

and the prediction `gamma` is the aggregating algorithm's for the Brier game (Vovk &
Zhdanov, Prediction with expert advice for the Brier game, JMLR 2009): with
`g(y) = -ln(sum_e w_e exp(-brier(p_e, y)))` for every class `y`, `gamma_y = max(0, (s - g(y))
/ 2)`, `s` such that `gamma` sums to 1. The Brier game is mixable at rate 1, so
`brier(gamma, y) <= g(y)` whatever `y`, and the cumulative Brier score of the predictions is
never more than `ln(needs_e / prior_e)` above an expert whose prior grows, `ln(n / prior_e)`
above one whose prior stays, for every expert at once, whatever the stream. With one weight
exactly 1, `gamma` is that expert's calibrated prediction.

The user counts errors, not Brier scores, and the Brier score can prefer a cautious expert to
one that is right more often. So the errors are counted too, the algorithm's and each
expert's, on the same labeled rows: an expert that has made `LEAD_MARGIN` (10) fewer errors
than the algorithm since the last restart, and `LEAD_DEVIATIONS` (2) standard deviations fewer
were the two equally good (`2 sqrt(m)`, `m` the rows where exactly one of them was right), is
followed alone (the one with the fewest), its weight 1, until it no longer is; the
algorithm's own weights and bound go on underneath. With few labels no expert gets that far
ahead, and the algorithm decides.

Why the Brier score and not the log loss (the aggregating algorithm's other classic game,
whose prediction is the plain mixture): the stream is judged by accuracy, and a network that
learns from unlabeled rows tends to be confident; the log loss punishes a confident mistake
without bound and handed the prediction to the twin where the network was the more accurate.
The Brier score stays within [0, 2] per row, like the 0/1 loss it sits above.
"""

from __future__ import annotations

import math

import numpy as np

from river_dhbm._kernels import entries
from river_dhbm._kernels import mixture as mixture_kernels
from river_dhbm._kernels.mixture import LEAD_DEVIATIONS, LEAD_MARGIN

__all__ = ["CALIBRATION_STEP", "LEAD_DEVIATIONS", "LEAD_MARGIN", "AggregatingMixture", "brier"]

#: The step of each expert's log temperature per labeled row (`AggregatingMixture`): flat on
#: the development suite between 0.02 and 0.1 (docs/results.md), 0.05 the middle.
CALIBRATION_STEP = 0.05


class AggregatingMixture:
    """The experts' calibrations and weights, from their scores on the labeled rows, and the
    aggregating algorithm's predictions.

    Each expert's `p(y | x)` enters the mixture calibrated, `softmax(ln p / T_e)`: its log
    temperature `ln T_e` starts at 0 (the expert as it is) and takes a gradient step of size
    `step` on the log loss of each labeled row it has just scored (bounded to [-3, 3]). A
    temperature keeps an expert's ranking of the classes, so its accuracy, and makes its
    Brier score measure what it knows rather than how boldly it says it: a network that is
    right more often but overconfident otherwise loses its weight to a cautious expert that is
    right less often (issue 54). The Brier game's bound then holds against each calibrated
    expert.

    An expert with `needs[e] >= 1` earns its prior: after `n` labeled rows since the last
    restart it is `priors[e] * (n + 1) / needs[e]` (normalised with the others'). The bound is
    then at most `ln(needs[e] / prior_e)` against such an expert, `ln(n / prior_e)` against one
    whose prior stays (the others' grow by `(n + 1) / n` a row; with `needs < 1` it fails).

    Parameters
    ----------
    priors
        Each expert's share of the prior (normalised to sum to 1).
    step
        The log temperatures' step (0: no calibration, Vovk's algorithm on the experts as
        they are).
    needs
        The labeled rows at which each expert's prior reaches its share (0, or `None`: fixed).

    Attributes
    ----------
    weights
        Each expert's weight in the predictions: the algorithm's, or 1 on the leader's and 0
        elsewhere while an expert leads (`errors`).
    losses
        Each calibrated expert's cumulative Brier score on the labeled rows scored since the
        last `restart`.
    log_temps
        Each expert's log temperature.
    loss_mixture
        The aggregating algorithm's, each row predicted with the weights of the labeled rows
        before it (the bound's; the model follows a leader's predictions instead).
    n_scored
        Labeled rows scored over the whole stream (not a class's first: no expert knew it).
    evidence
        Labeled rows scored since the last restart (`[1]`, the kernels count in place).
    errors
        On the rows scored since the last restart: the errors of the aggregating algorithm's
        predictions, each expert's, then for each expert the rows where exactly one of it and
        the algorithm was right. An expert with `LEAD_MARGIN` fewer errors than the algorithm,
        and twice the square root of those rows, is followed alone (the fewest errors), its
        weight 1 (`_kernels.mixture.leader`).

    """

    def __init__(self, priors, step: float = CALIBRATION_STEP, needs=None):
        priors = np.asarray(priors, dtype=float)
        self.log_prior = np.log(priors / priors.sum())
        self.needs = np.zeros(len(priors)) if needs is None else np.asarray(needs, dtype=float)
        self.step = float(step)
        self.losses = np.zeros(len(priors))
        self.log_temps = np.zeros(len(priors))
        self.loss_mixture = 0.0
        self.n_scored = 0
        self.evidence = np.zeros(1, dtype=np.int64)
        self.errors = np.zeros(1 + 2 * len(priors))
        self.weights = _weights(self.grown_prior())

    def __setstate__(self, state):
        # a mixture pickled before the calibration or the grown priors: its experts as they were
        state.setdefault("log_temps", np.zeros(len(state["losses"])))
        state.setdefault("step", 0.0)
        state.setdefault("needs", np.zeros(len(state["losses"])))
        state.setdefault("evidence", np.zeros(1, dtype=np.int64))
        state.setdefault("errors", np.zeros(0))  # no leader
        self.__dict__.update(state)

    def grown_prior(self) -> np.ndarray:
        """Each expert's log prior after the labeled rows since the last restart."""
        growth = np.log((self.evidence[0] + 1.0) / np.where(self.needs > 0.0, self.needs, 1.0))
        return self.log_prior + np.where(self.needs > 0.0, growth, 0.0)

    def restart(self) -> None:
        """Start every expert's score afresh: the weights return to the priors of no labels
        (each expert's calibration is kept: it is the expert's, not the concept's)."""
        self.losses[:] = 0.0
        self.evidence[0] = 0
        self.errors[:] = 0.0
        self.weights = _weights(self.grown_prior())

    def score(self, Ps, codes: np.ndarray) -> None:
        """Account labeled rows, in stream order: `Ps` holds each expert's `p(y | x)` of the
        rows `[n, K]`, predicted before any learnt them, `codes` their classes (int64 column
        indices). One kernel call."""
        if len(codes) == 0:
            return
        self.loss_mixture += mixture_kernels.score_rows(
            np.ascontiguousarray(np.stack(Ps)), np.ascontiguousarray(codes, dtype=np.int64),
            self.log_prior, self.needs, self.evidence, self.losses, self.weights,
            self.log_temps, self.step, self.errors)
        self.n_scored += len(codes)

    def calibrated(self, Ps) -> list:
        """Each expert's calibrated `p(y | x)` of rows `[n, K]` (`calibrate`)."""
        return [P if t == 0.0 else _calibrate(P, t) for P, t in zip(Ps, self.log_temps)]

    def mix(self, Ps) -> np.ndarray:
        """The mixture's `p(y | x)` of rows predicted by every expert `[n, K]` (the first
        expert's own when its weight is exactly 1, as `mix_row` answers)."""
        if self.weights[0] == 1.0:
            return Ps[0]
        return _substitute(self.calibrated(Ps), self.weights[None, :])

    def mix_row(self, P) -> list:
        """`mix` of one row, `P [E, K]` (or a list per expert), as a list: one kernel call
        (River's loop predicts row by row, and numpy's calls would cost more than the
        arithmetic)."""
        P = np.asarray(P, dtype=float)
        out = np.empty(P.shape[1])
        self.mix_row_into(P, out)
        return out.tolist()

    def mix_row_into(self, P: np.ndarray, out: np.ndarray) -> int:
        """`mix_row` of `P [E, K]` into `out [K]` (the first expert's own when its weight is
        exactly 1, as `predictive_proba` answers); the index of the first largest."""
        if self.weights[0] == 1.0:
            out[:] = P[0]
        else:
            entries.mix_row(P, self.weights, self.log_temps, out)
        return int(out.argmax())

    def score_row(self, P: np.ndarray, code: int) -> None:
        """`score` of one labeled row of class `code` predicted by the experts as `P [E, K]`,
        in one kernel call."""
        gamma = np.empty(P.shape[1])
        self.loss_mixture += mixture_kernels.score_row(P, code, self.log_prior, self.needs,
                                                       self.evidence, self.losses,
                                                       self.weights, self.log_temps,
                                                       self.step, gamma, self.errors)
        self.n_scored += 1


def _calibrate(P: np.ndarray, log_temp: float) -> np.ndarray:
    """`softmax(ln P / T)` of rows `[n, K]`, `T = exp(log_temp)` (as the kernels' `calibrate`)."""
    Z = np.log(np.maximum(P, mixture_kernels.TINY)) * math.exp(-log_temp)
    Z = np.exp(Z - Z.max(axis=1, keepdims=True))
    return Z / Z.sum(axis=1, keepdims=True)


def brier(P: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each row's Brier score `sum_k (P_k - [codes = k])^2`, from 0 (certain and right) to 2."""
    rows = np.arange(len(codes))
    return (P * P).sum(axis=1) - 2.0 * P[rows, codes] + 1.0


def _brier_per_class(P: np.ndarray) -> np.ndarray:
    """`[n, K]`: each row's Brier score were its class each of the `K`."""
    return (P * P).sum(axis=1, keepdims=True) - 2.0 * P + 1.0


def _substitute(Ps, W: np.ndarray) -> np.ndarray:
    """The aggregating algorithm's prediction for the Brier game from the experts' `Ps` and
    their weights `W [n or 1, experts]`: `gamma_y = max(0, (s - g(y)) / 2)` with `s` such that
    each row sums to 1 (the classes whose `g` is smallest share it)."""
    mixed = sum(W[:, e : e + 1] * np.exp(-_brier_per_class(P)) for e, P in enumerate(Ps))
    g = -np.log(mixed)
    n, k = g.shape
    ordered = np.sort(g, axis=1)
    # `s` if the `j` smallest `g` are the classes with gamma > 0; the largest such `j` holds
    candidates = (2.0 + np.cumsum(ordered, axis=1)) / np.arange(1, k + 1)
    active = (candidates > ordered).sum(axis=1)
    s = candidates[np.arange(n), active - 1]
    return np.maximum(0.0, (s[:, None] - g) / 2.0)


def _weights(log_weights: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, without overflow either way."""
    e = np.exp(log_weights - log_weights.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
