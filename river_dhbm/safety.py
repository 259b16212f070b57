"""Unlabeled rows that never cost: the hybrid and its discriminative twin, combined by Vovk's
aggregating algorithm for the Brier game.

A hybrid learns from unlabeled rows, and on some streams they mislead it (clusters that cut
across the classes). Its twin is the same model, same settings and seed, with
`learn_unlabeled=False`: it learns the labeled rows of each mini-batch and its own replay of
them, which is the labeled-only ablation's learning rule (the ablation weighs its unlabeled
rows 0). Each expert's cumulative Brier score `L` on the labeled rows (`sum_k (p_k - [y =
k])^2` per row, between 0 and 2) sets its weight, each row scored by both experts before
either learns it:

    w = PRIOR exp(-L_hybrid) / (PRIOR exp(-L_hybrid) + (1 - PRIOR) exp(-L_twin)),

and the prediction `gamma` is the aggregating algorithm's for the Brier game (Vovk &
Zhdanov, Prediction with expert advice for the Brier game, JMLR 2009): with
`g(y) = -ln(w exp(-brier(p_hybrid, y)) + (1 - w) exp(-brier(p_twin, y)))` for every class
`y`, `gamma_y = max(0, (s - g(y)) / 2)`, `s` such that `gamma` sums to 1. The Brier game is
mixable at rate 1, so `brier(gamma, y) <= g(y)` whatever `y`, and the cumulative Brier score
of the predictions is never more than `ln(1 / PRIOR)` above the hybrid's nor
`ln(1 / (1 - PRIOR))` above the twin's, from the first labeled row on, whatever the stream.
With `w` exactly 1, `gamma` is the hybrid's prediction.

Why the Brier score and not the log loss (the aggregating algorithm's other classic game,
whose prediction is the plain mixture): the stream is judged by accuracy, and a network that
learns from unlabeled rows tends to be confident; the log loss punishes a confident mistake
without bound and handed the prediction to the twin where the network was the more accurate.
The Brier score stays within [0, 2] per row, like the 0/1 loss it sits above.
"""

from __future__ import annotations

import math

import numpy as np

#: The hybrid's weight before any labeled row. Four to one for the network that learns the
#: unlabeled rows: while few labels have been scored the two experts' scores differ by little
#: and an even prior hands much of the prediction to the twin, giving up much of what the
#: unlabeled rows pay. The price is a bound of `ln 5` (1.6) against the twin instead of
#: `ln 2`, once over the whole stream.
PRIOR = 0.8


class AggregatingMixture:
    """The weight of the hybrid against its twin, from their Brier scores on labeled rows, and
    the aggregating algorithm's predictions.

    Attributes
    ----------
    gap
        `L_hybrid - L_twin + ln((1 - prior) / prior)`: the weight is `1 / (1 + exp(gap))`.
    loss_hybrid, loss_twin
        Each expert's cumulative Brier score on the labeled rows scored so far.
    loss_mixture
        The mixture's, each row predicted with the weight of the labeled rows before it.
    n_scored
        Labeled rows scored so far.

    """

    def __init__(self, prior: float = PRIOR):
        self.offset = math.log((1.0 - prior) / prior)  # the prior's odds against the hybrid
        self.gap = self.offset
        self.loss_hybrid = 0.0
        self.loss_twin = 0.0
        self.loss_mixture = 0.0
        self.n_scored = 0

    @property
    def weight(self) -> float:
        """The hybrid's weight `w` (the prior before any labeled row); exactly 1.0 or 0.0 once
        one expert leads by more than about 37."""
        return _weight(self.gap)

    def score(self, P_hybrid: np.ndarray, P_twin: np.ndarray, codes: np.ndarray) -> None:
        """Account labeled rows, in stream order: `P_hybrid`, `P_twin` `[n, K]` are each
        expert's `p(y | x)` of the rows, predicted before either learnt them, `codes` their
        classes (int64 column indices)."""
        if len(codes) == 0:
            return
        loss_h, loss_t = brier(P_hybrid, codes), brier(P_twin, codes)
        # the gap before each row: the rows before it in this call count
        gaps = self.gap + np.concatenate(([0.0], np.cumsum(loss_h - loss_t)[:-1]))
        gamma = _substitute(P_hybrid, P_twin, _weights(gaps)[:, None])
        self.loss_mixture += float(brier(gamma, codes).sum())
        self.loss_hybrid += float(loss_h.sum())
        self.loss_twin += float(loss_t.sum())
        self.gap = self.offset + self.loss_hybrid - self.loss_twin
        self.n_scored += len(codes)

    def mix(self, P_hybrid: np.ndarray, P_twin: np.ndarray) -> np.ndarray:
        """The aggregating algorithm's `p(y | x)` of rows predicted by both experts `[n, K]`."""
        return _substitute(P_hybrid, P_twin, self.weight)

    def mix_row(self, p_hybrid: list, p_twin: list) -> list:
        """`mix` of one row's lists of probabilities, in plain Python: River's loop predicts
        row by row, and numpy's calls would cost more than the arithmetic."""
        w = self.weight
        norm_h = sum(p * p for p in p_hybrid) + 1.0
        norm_t = sum(q * q for q in p_twin) + 1.0
        g = [-math.log(w * math.exp(2.0 * p - norm_h) + (1.0 - w) * math.exp(2.0 * q - norm_t))
             for p, q in zip(p_hybrid, p_twin)]
        total, s = 0.0, 0.0
        for j, g_j in enumerate(sorted(g), 1):  # the classes with gamma > 0: a prefix
            total += g_j
            if (2.0 + total) / j <= g_j:
                break
            s = (2.0 + total) / j
        return [max(0.0, (s - g_y) / 2.0) for g_y in g]


def brier(P: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each row's Brier score `sum_k (P_k - [codes = k])^2`, from 0 (certain and right) to 2."""
    rows = np.arange(len(codes))
    return (P * P).sum(axis=1) - 2.0 * P[rows, codes] + 1.0


def _brier_per_class(P: np.ndarray) -> np.ndarray:
    """`[n, K]`: each row's Brier score were its class each of the `K`."""
    return (P * P).sum(axis=1, keepdims=True) - 2.0 * P + 1.0


def _substitute(P_hybrid: np.ndarray, P_twin: np.ndarray, w) -> np.ndarray:
    """The aggregating algorithm's prediction for the Brier game: `gamma_y = max(0, (s - g(y))
    / 2)` with `s` such that each row sums to 1 (the classes whose `g` is smallest share it)."""
    g = -np.log(w * np.exp(-_brier_per_class(P_hybrid))
                + (1.0 - w) * np.exp(-_brier_per_class(P_twin)))
    n, k = g.shape
    ordered = np.sort(g, axis=1)
    # `s` if the `j` smallest `g` are the classes with gamma > 0; the largest such `j` holds
    candidates = (2.0 + np.cumsum(ordered, axis=1)) / np.arange(1, k + 1)
    active = (candidates > ordered).sum(axis=1)
    s = candidates[np.arange(n), active - 1]
    return np.maximum(0.0, (s[:, None] - g) / 2.0)


def _weight(gap: float) -> float:
    # 1 / (1 + e^gap) without overflow either way
    if gap > 0.0:
        e = math.exp(-gap)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(gap))


def _weights(gaps: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(gaps))
    return np.where(gaps > 0.0, e / (1.0 + e), 1.0 / (1.0 + e))


# ---------------------------------------------------------------------------------- the twin


def attach_twin(model) -> None:
    """Give `model`, whose features are fixed, its discriminative twin and their mixture when
    it learns unlabeled rows under `safe_unlabeled`. The twin is the same class, settings and
    seed (so the same initial weights), with `learn_unlabeled=False` and no twin of its own."""
    if model.safe_unlabeled and getattr(model, "learn_unlabeled", False):
        model._twin = model.clone({"learn_unlabeled": False, "safe_unlabeled": False})
        model._twin._fix_features(model._features)
        model._mixture = AggregatingMixture()


def score(model, X: np.ndarray, codes: np.ndarray) -> None:
    """Score the labeled rows among `X`, `codes` (class indices, -1 unlabeled) by both of
    `model`'s experts before either learns them: the model changes only when its buffer is
    full, so this is the state that predicted them."""
    labeled = codes >= 0
    if not labeled.any():
        return
    X, codes = X[labeled], codes[labeled]
    model._mixture.score(model._proba(X), model._twin._proba(X), codes)


# ------------------------------------------------------------- the predictions of the API


def predictive_proba(model, X: np.ndarray) -> np.ndarray:
    """`p(y | x)` of `model`'s public predictions: its network's, or the aggregating
    algorithm's over the network and the twin."""
    P = model._proba(X)
    mixture = model._mixture
    if mixture is None or mixture.weight == 1.0:  # the twin's weight rounds to nothing
        return P
    return mixture.mix(P, model._twin._proba(X))


def predictive_proba_row(model, row: np.ndarray) -> list:
    """`predictive_proba` of one validated row `[1, d]`, as a list."""
    mixture = model._mixture
    if mixture is None or mixture.weight == 1.0:
        return model._proba_row(row)
    hybrid, twin = model._proba_row(row), model._twin._proba_row(row)
    if row.base is model._X_buf:  # the staged dict: `learn_one` of it scores with these
        model._staged_experts = (model._staged, hybrid, twin)
    return mixture.mix_row(hybrid, twin)


def predictive_row(model, row: np.ndarray) -> int:
    """The class index `predict_one` answers for one validated row `[1, d]`."""
    mixture = model._mixture
    if mixture is None or mixture.weight == 1.0:
        return model._predict_row(row)
    p = predictive_proba_row(model, row)
    return p.index(max(p))
