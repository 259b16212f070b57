"""Unlabeled rows that never cost: the hybrid and its discriminative twin, mixed by Vovk's
aggregating algorithm.

A hybrid learns from unlabeled rows, and on some streams they mislead it (clusters that cut
across the classes). Its twin is the same model, same settings and seed, with
`learn_unlabeled=False`: it learns the labeled rows of each mini-batch and its own replay of
them, which is the labeled-only ablation's learning rule (the ablation weighs its unlabeled
rows 0). The prediction is the Bayesian mixture of the two experts,

    p(y | x) = w p_hybrid(y | x) + (1 - w) p_twin(y | x),
    w = PRIOR exp(-L_hybrid) / (PRIOR exp(-L_hybrid) + (1 - PRIOR) exp(-L_twin)),

where `L` is an expert's cumulative log loss on the labeled rows, each row scored by both
experts before either learns it (the aggregating algorithm for log loss). Its cumulative log
loss equals `-log(PRIOR exp(-L_hybrid) + (1 - PRIOR) exp(-L_twin))`, so it is never more than
`ln(1 / PRIOR)` above the hybrid's nor `ln(1 / (1 - PRIOR))` above the twin's, from the first
labeled row on, whatever the stream. The probabilities of the losses are floored at `FLOOR`
(a network may give a label 0). Every public prediction of a model goes through
`predictive_proba` and its one-row forms, which mix the two experts when there is a twin.
"""
from __future__ import annotations

import math

import numpy as np

#: Probabilities below this count as this in the log losses (and so in the weight).
FLOOR = 1e-6

#: The hybrid's weight before any labeled row. Four to one for the network that learns the
#: unlabeled rows: while few labels have been scored the two experts' losses differ by little
#: and an even prior hands half of the prediction to the twin, giving up much of what the
#: unlabeled rows pay. The price is a bound of `ln 5` (1.6 nats) against the twin instead of
#: `ln 2`, once over the whole stream.
PRIOR = 0.8


class AggregatingMixture:
    """The weight of the hybrid against its twin, from their log losses on labeled rows.

    Attributes
    ----------
    gap
        `L_hybrid - L_twin + ln((1 - prior) / prior)`: the weight is `1 / (1 + exp(gap))`.
    loss_hybrid, loss_twin
        Each expert's cumulative log loss on the labeled rows scored so far.
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
        one expert leads by more than about 37 nats."""
        return _weight(self.gap)

    def score(self, p_hybrid: np.ndarray, p_twin: np.ndarray) -> None:
        """Account labeled rows, in stream order: `p_hybrid`, `p_twin` are each expert's
        probability of each row's true class, predicted before either learnt the row."""
        if len(p_hybrid) == 0:
            return
        loss_h = -np.log(np.maximum(p_hybrid, FLOOR))
        loss_t = -np.log(np.maximum(p_twin, FLOOR))
        # the gap before each row: the rows before it in this call count
        gaps = self.gap + np.concatenate(([0.0], np.cumsum(loss_h - loss_t)[:-1]))
        w = _weights(gaps)
        mixed = w * np.exp(-loss_h) + (1.0 - w) * np.exp(-loss_t)
        self.loss_mixture += float(-np.log(mixed).sum())
        self.loss_hybrid += float(loss_h.sum())
        self.loss_twin += float(loss_t.sum())
        self.gap = self.offset + self.loss_hybrid - self.loss_twin
        self.n_scored += len(p_hybrid)

    def mix(self, P_hybrid: np.ndarray, P_twin: np.ndarray) -> np.ndarray:
        """The mixture's `p(y | x)` of rows predicted by both experts."""
        w = self.weight
        return w * P_hybrid + (1.0 - w) * P_twin


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


def true_class_proba(P: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each row's probability of its class `codes` (int64 class indices)."""
    return P[np.arange(len(codes)), codes]


def score(model, X: np.ndarray, codes: np.ndarray) -> None:
    """Score the labeled rows among `X`, `codes` (class indices, -1 unlabeled) by both of
    `model`'s experts before either learns them: the model changes only when its buffer is
    full, so this is the state that predicted them."""
    labeled = codes >= 0
    if not labeled.any():
        return
    X, codes = X[labeled], codes[labeled]
    model._mixture.score(true_class_proba(model._proba(X), codes),
                         true_class_proba(model._twin._proba(X), codes))


# ------------------------------------------------------------- the predictions of the API


def predictive_proba(model, X: np.ndarray) -> np.ndarray:
    """`p(y | x)` of `model`'s public predictions: its network's, or the mixture's with the
    twin."""
    P = model._proba(X)
    mixture = model._mixture
    if mixture is None or mixture.weight == 1.0:  # the twin's share rounds to nothing
        return P
    return mixture.mix(P, model._twin._proba(X))


def predictive_proba_row(model, row: np.ndarray) -> list:
    """`predictive_proba` of one validated row `[1, d]`, as a list."""
    mixture = model._mixture
    if mixture is None or mixture.weight == 1.0:
        return model._proba_row(row)
    w = mixture.weight
    hybrid, twin = model._proba_row(row), model._twin._proba_row(row)
    if row.base is model._X_buf:  # the staged dict: `learn_one` of it scores with these
        model._staged_experts = (model._staged, hybrid, twin)
    return [w * p + (1.0 - w) * q for p, q in zip(hybrid, twin)]


def predictive_row(model, row: np.ndarray) -> int:
    """The class index `predict_one` answers for one validated row `[1, d]`."""
    mixture = model._mixture
    if mixture is None or mixture.weight == 1.0:
        return model._predict_row(row)
    p = predictive_proba_row(model, row)
    return p.index(max(p))
