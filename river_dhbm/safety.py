"""Unlabeled rows that never cost, and never behind the simplest learner: the network, its
discriminative twin and a linear expert, combined by Vovk's aggregating algorithm for the Brier
game.

A hybrid learns from unlabeled rows, and on some streams they mislead it (clusters that cut
across the classes). Its twin is the same model, same settings and seed, with
`learn_unlabeled=False`: it learns the labeled rows of each mini-batch and its own replay of
them, which is the labeled-only ablation's learning rule (the ablation weighs its unlabeled
rows 0). A hidden layer needs far more labels than a linear model to learn a linear concept:
the linear expert (`river_dhbm.linear_expert`) is softmax regression of the labeled rows.
Their mixture is the aggregating algorithm for the Brier game (`river_dhbm.aggregating`):
each expert weighed by its calibrated Brier score on the labeled rows, each row scored by every
expert before any learns it, the network's and the twin's priors grown with the labels
(`LABELS_PER_INPUT`), and an expert with clearly fewer errors than the mixture followed
alone. The algorithm's cumulative Brier score is never more than `ln(needs_e / prior_e)` above
a network's, `ln(n / prior_e)` above the linear expert's, whatever the stream.

After a change the best expert may change: the model's drift alarm starts every score afresh
(`restart`), so the weights return to the priors of no labels and follow the new concept's.
"""

from __future__ import annotations

import copy

import numpy as np

from river_dhbm._input.checks import check_dict
from river_dhbm._kernels import mixture as mixture_kernels
from river_dhbm.aggregating import AggregatingMixture
from river_dhbm.linear_expert import NO_LINEAR, LinearExpert

#: Each expert's share of the prior: a third each. The prior takes no side between the network
#: that learns the unlabeled rows and its twin that does not (the networks earn their shares
#: with the labels, `LABELS_PER_INPUT`, and the labels decide between them); the linear expert
#: has a third too: where labels are scarce it leads for the longest, and 0.2 left more of that
#: lead to the network (docs/results.md). A model without a twin gives the twin's share to its
#: network, so the linear expert starts with the same weight in a model and in its labeled-only
#: ablation. The price is a bound of `ln(1 / prior)` against each expert, `ln 3` (1.10), plus
#: what the networks' growing priors add (below).
PRIORS = {"network": 1 / 3, "twin": 1 / 3, "linear": 1 / 3}


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
    """`model.unlabeled_trust`: `w_network / (w_network + w_twin)`, 1.0 without a twin, before
    any labeled row or while the linear expert leads alone."""
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
