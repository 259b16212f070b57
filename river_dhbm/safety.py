"""Unlabeled rows that never cost, and never behind the simplest learner: the network, its
discriminative twin and a linear expert, combined by Vovk's aggregating algorithm for the Brier
game.

A hybrid learns from unlabeled rows, and on some streams they mislead it (clusters that cut
across the classes). Its twin is the same model, same settings and seed, with
`learn_unlabeled=False`: it learns the labeled rows of each mini-batch and its own replay of
them, which is the labeled-only ablation's learning rule (the ablation weighs its unlabeled
rows 0). A hidden layer needs far more labels than a linear model to learn a linear concept:
the linear expert (`river_dhbm.linear_expert`) is softmax regression of the labeled rows.
Each expert's cumulative Brier score `L_e` on the labeled rows (`sum_k (p_k - [y = k])^2` per
row, between 0 and 2) sets its weight, each row scored by every expert before any learns it,
the network's and the twin's priors grown by `g_e = (n + 1) / needs_e` after `n` labels:

    w_e = prior_e g_e exp(-L_e) / sum_f prior_f g_f exp(-L_f),

and the prediction `gamma` is the aggregating algorithm's for the Brier game (Vovk &
Zhdanov, Prediction with expert advice for the Brier game, JMLR 2009): with
`g(y) = -ln(sum_e w_e exp(-brier(p_e, y)))` for every class `y`, `gamma_y = max(0, (s - g(y))
/ 2)`, `s` such that `gamma` sums to 1. The Brier game is mixable at rate 1, so
`brier(gamma, y) <= g(y)` whatever `y`, and the cumulative Brier score of the predictions is
never more than `ln(needs_e / prior_e)` above a network's, `ln(n / prior_e)` above the linear
expert's, for every expert at once, whatever the stream. With one weight exactly 1, `gamma`
is that expert's prediction.

After a change the best expert may change: the model's drift alarm starts every score afresh
(`restart`), so the weights return to the priors of no labels and follow the new concept's.

Each expert enters the mixture calibrated by a temperature of its own, fitted online to its
labeled rows' log loss (`AggregatingMixture`): the bound then holds against each calibrated
expert, and a temperature keeps each expert's accuracy.

Why the Brier score and not the log loss (the aggregating algorithm's other classic game,
whose prediction is the plain mixture): the stream is judged by accuracy, and a network that
learns from unlabeled rows tends to be confident; the log loss punishes a confident mistake
without bound and handed the prediction to the twin where the network was the more accurate.
The Brier score stays within [0, 2] per row, like the 0/1 loss it sits above.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from river_dhbm._input.checks import check_dict
from river_dhbm._kernels import entries
from river_dhbm._kernels import mixture as mixture_kernels
from river_dhbm.linear_expert import NO_LINEAR, LinearExpert

#: Each expert's share of the prior. The network that learns the unlabeled rows has
#: four times its twin's: while few labels have been scored the two differ by little, and an
#: even prior hands much of the prediction to the twin, giving up much of what the unlabeled
#: rows pay. The linear expert has a third: where labels are scarce it leads for the longest,
#: and 0.2 left more of that lead to the network (docs/results.md). A model without a twin gives
#: the twin's share to its network, so the linear expert starts with the same weight in a model
#: and in its labeled-only ablation. The price is a bound of `ln(1 / prior)` against each
#: expert: `ln 1.875` (0.63) against the network, `ln 7.5` (2.01) against the twin, `ln 3`
#: (1.10) against the linear expert, plus what the networks' growing priors add (below).
PRIORS = {"network": 8 / 15, "twin": 2 / 15, "linear": 1 / 3}


def priors(names) -> list:
    """The `PRIORS` of the experts `names`, the twin's share the network's without a twin."""
    shares = dict(PRIORS)
    if "twin" not in names:
        shares["network"] += shares["twin"]
    return [shares[name] for name in names]


#: The labeled rows per input at which a network's prior reaches its share of `PRIORS` (and
#: grows on): it has many weights per input, and with few labels per input its evidence against
#: the linear expert is a tie, which its larger prior would break its own way (docs/results.md:
#: 3 and 10 were replayed beside 5).
LABELS_PER_INPUT = 5


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
    losses
        Each calibrated expert's cumulative Brier score on the labeled rows scored since the
        last `restart`.
    log_temps
        Each expert's log temperature.
    loss_mixture
        The mixture's, each row predicted with the weights of the labeled rows before it.
    n_scored
        Labeled rows scored over the whole stream (not a class's first: no expert knew it).
    evidence
        Labeled rows scored since the last restart (`[1]`, the kernels count in place).

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
        self.weights = _weights(self.grown_prior())

    def __setstate__(self, state):
        # a mixture pickled before the calibration or the grown priors: its experts as they were
        state.setdefault("log_temps", np.zeros(len(state["losses"])))
        state.setdefault("step", 0.0)
        state.setdefault("needs", np.zeros(len(state["losses"])))
        state.setdefault("evidence", np.zeros(1, dtype=np.int64))
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
            self.log_temps, self.step)
        self.n_scored += len(codes)

    def calibrated(self, Ps) -> list:
        """Each expert's calibrated `p(y | x)` of rows `[n, K]` (`calibrate`)."""
        return [P if t == 0.0 else _calibrate(P, t) for P, t in zip(Ps, self.log_temps)]

    def mix(self, Ps) -> np.ndarray:
        """The aggregating algorithm's `p(y | x)` of rows predicted by every expert `[n, K]`."""
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
                                                       self.step, gamma)
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


# ------------------------------------------------------------------------------- the experts


def attach_experts(model) -> None:
    """Give `model`, whose features are fixed, the experts beside its network and their
    mixture: the discriminative twin when it learns unlabeled rows under `safe_unlabeled`, the
    linear expert under `linear_expert`. The twin is the same class, settings and seed (so the
    same initial weights), with `learn_unlabeled=False` and no experts of its own."""
    if model.safe_unlabeled and getattr(model, "learn_unlabeled", False):
        alone = {"learn_unlabeled": False, "safe_unlabeled": False}
        model._twin = model.clone({**alone, "linear_expert": False} if model.linear_expert
                                  else alone)
        model._twin._fix_features(model._features)
    if model.linear_expert:
        model._linear = LinearExpert(len(model._features), model.seed)
    names = expert_names(model)
    if len(names) > 1:
        needs = [0.0 if name == "linear" else LABELS_PER_INPUT * len(model._features)
                 for name in names]  # the networks earn their priors with the labels
        model._mixture = AggregatingMixture(priors(names), needs=needs)


def expert_names(model) -> tuple:
    """The names of `model`'s experts, in the mixture's order: the network, then the twin and
    the linear expert when it has them."""
    return (("network",) + ("twin",) * (model._twin is not None)
            + ("linear",) * (model._linear is not None))


def pack_twin(model, state: dict) -> None:
    """`state["_twin"]` (in `model`'s pickled state) as `(class, state)`, the twin's label
    memory there the network's own object while the two hold the same rows (they do until one
    of them restarts): a pickle then holds it once (`unpack_twin` makes it two again)."""
    twin = model._twin
    if twin is None:
        return
    twin_state = twin.__getstate__()
    if _same_memory(model._memory, twin._memory):
        twin_state["_memory"] = model._memory
    state["_twin"] = (type(twin), twin_state)


def unpack_twin(model) -> None:
    """The twin of `pack_twin` rebuilt in a model just unpickled, with its own label memory."""
    packed = model.__dict__.get("_twin")
    if type(packed) is not tuple:
        return
    cls, state = packed
    model._twin = twin = cls.__new__(cls)
    twin.__setstate__(state)
    if twin._memory is not None and twin._memory is model._memory:
        twin._memory = copy.deepcopy(model._memory)


def _same_memory(a, b) -> bool:
    return a is not None and b is not None and all(
        np.array_equal(getattr(a, name), getattr(b, name)) for name in ("state", "y", "rows", "X"))


def add_class(model) -> None:
    """Give `model`'s experts the column of the class it has just added."""
    if model._twin is not None:
        model._twin._class_of(model._classes[-1])  # the same column in every expert
    if model._linear is not None:
        model._linear.add_class()


def expert_proba(model, X: np.ndarray) -> list:
    """Each expert's `p(y | x)` of the validated rows `X`, network first."""
    Ps = [model._proba(X)]
    if model._twin is not None:
        Ps.append(model._twin._proba(X))
    if model._linear is not None:
        Ps.append(model._linear.proba(X))
    return Ps


def expert_proba_row(model, row: np.ndarray) -> np.ndarray:
    """`expert_proba` of one validated row `[1, d]`, as one array `[E, K]`: through the model's
    one kernel call when its experts' rows are the same numbers (`_scores_with_experts_row`):
    its mixture is not needed here, but a first use then compiles no expert's kernel of its
    own."""
    P = np.empty((len(model._mixture.weights), len(model._classes)))
    experts_row = getattr(model, "_experts_row", None)
    if experts_row is not None and getattr(model, "_scores_with_experts_row", False):
        experts_row(row, model._mixture.weights, P, np.empty(P.shape[1]))
        return P
    P[0] = model._proba_row(row)
    if model._twin is not None:
        P[1] = model._twin._proba_row(row)
    if model._linear is not None:
        model._linear.proba_into(row, P[-1:])
    return P


def score(model, X: np.ndarray, codes: np.ndarray) -> None:
    """Score the labeled rows among `X`, `codes` (class indices, -1 unlabeled) by each of
    `model`'s experts before any learns them: the model changes only when its buffer is
    full, so this is the state that predicted them."""
    labeled = codes >= 0
    if not labeled.any():
        return
    X, codes = X[labeled], codes[labeled]
    model._mixture.score(expert_proba(model, X), codes)


def score_one(model, row: np.ndarray, code: int) -> None:
    """`score` of one labeled validated row `[1, d]` of class index `code`: the experts'
    one-row predictions (`expert_proba_row`, the same numbers as `expert_proba` of that row)
    scored in one call, so that `learn_one` never compiles the many-row scoring kernel."""
    model._mixture.score_row(expert_proba_row(model, row), code)


def unlabeled_trust(model) -> float:
    """`model.unlabeled_trust`: `w_network / (w_network + w_twin)`, 1.0 without a twin or
    before any labeled row."""
    if model._twin is None or model._mixture.n_scored == 0:
        return 1.0
    network, twin = model._mixture.weights[:2]
    return float(network / (network + twin)) if network + twin > 0.0 else 1.0


def predict_experts_one(model, x: dict) -> dict:
    """Each expert's predicted label for `x` by name (the names of `expert_weights`): what the
    mixture of `predict_one` combines, to see which expert the model follows and how each would
    have done alone. `{}` before any label. Right after `predict_one(x)` of the same dict it
    reuses that prediction's pass."""
    check_dict(x)
    if not model._classes:
        return {}
    if model._mixture is None:
        return {"network": model.predict_one(x)}
    staged = model._staged_experts
    if staged is not None and staged[0] is model._staged and model._is_staged(x):
        P = staged[1]
    else:
        P = expert_proba_row(model, model._row(x))
    return {name: model._classes[int(p.argmax())] for name, p in zip(expert_names(model), P)}


def expert_weights(model) -> dict:
    """`model.expert_weights`: each expert's weight by name, `{"network": 1.0}` alone."""
    if model._mixture is None:
        return {"network": 1.0}
    return dict(zip(expert_names(model), model._mixture.weights.tolist()))


# ------------------------------------------------------------- the predictions of the API


def predictive_proba(model, X: np.ndarray) -> np.ndarray:
    """`p(y | x)` of `model`'s public predictions: its network's, or the aggregating
    algorithm's over its experts."""
    mixture = model._mixture
    if mixture is None or mixture.weights[0] == 1.0:  # the others' weights round to nothing
        return model._proba(X)
    return mixture.mix(expert_proba(model, X))


def predictive_proba_row(model, row: np.ndarray) -> list:
    """`predictive_proba` of one validated row `[1, d]`, as a list."""
    if model._mixture is None:
        return model._proba_row(row)
    return _mixed_row(model, row)[0].tolist()


def predictive_row(model, row: np.ndarray) -> int:
    """The class index `predict_one` answers for one validated row `[1, d]`."""
    if model._mixture is None:
        return model._predict_row(row)
    return _mixed_row(model, row)[1]


def _mixed_row(model, row: np.ndarray) -> tuple[np.ndarray, int]:
    """The mixture's `p(y | x)` of one row `[K]` and the index of its first largest, from the
    model's one kernel call when it has one (`_experts_row`). The experts' predictions of the
    staged dict are kept: `learn_one` of it scores with them."""
    mixture = model._mixture
    P = np.empty((len(mixture.weights), len(model._classes)))
    out = np.empty(P.shape[1])
    experts_row = getattr(model, "_experts_row", None)
    if experts_row is not None:
        best = experts_row(row, mixture.weights, P, out)
    else:
        P[:] = expert_proba_row(model, row)
        best = mixture.mix_row_into(P, out)
    if row.base is model._X_buf:
        model._staged_experts = (model._staged, P)
    return out, best


def hybrid_experts_row(model, row: np.ndarray, weights: np.ndarray, P: np.ndarray,
                       out: np.ndarray) -> int:
    """`_experts_row` of the DHBM and the DHDA, whose networks predict alike (the recognition
    pass, then the joint predictor): every expert's `p(y | x)` of one row into `P [E, K]` and
    their mixture with `weights` (and the mixture's calibration) into `out [K]` in ONE kernel
    call; the index of the first largest of `out`."""
    twin, linear = model._twin, model._linear
    return mixture_kernels.hybrid_experts_row(
        row, model._theta, model._empty if twin is None else twin._theta, model._off,
        model._sizes, model._hcum, len(model._classes), model._kind, 1.0 - model.dropout,
        np.empty(model._hcum[-1]), NO_LINEAR if linear is None else linear.arrays, weights,
        model._mixture.log_temps, P, out)
