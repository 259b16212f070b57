"""What the models benchmark times: the set-ups, the entries, and how each is built."""

from __future__ import annotations

import dataclasses
import importlib

#: Set-up name -> (registry stream, hidden layers of the paper's complete representation).
SETUPS = {"led": ("led", (24,) * 4), "waveform": ("waveform", (40,) * 4)}
LABEL_RATIO, LABEL_BATCH, BATCH_SIZE = 0.1, 20, 20  # as evaluation/configs/fig3_*.toml
STREAM_SEED, MASK_SEED, MODEL_SEED = 1, 2, 3

#: Our models: key -> (label, module, class, fixed constructor arguments).
OURS = {
    "dhbm-mf": ("DHBM-MF", "river_dhbm.dhbm", "DHBM", {"estimator": "mf"}),
    "dhbm-sap": ("DHBM-SAP", "river_dhbm.dhbm", "DHBM", {"estimator": "sap"}),
    "dhda": ("DHDA", "river_dhbm.dhda", "DHDA", {}),
    "pl-mlp": ("PL-MLP", "river_dhbm.pseudo_label", "PseudoLabelMLP", {}),
}
#: River's learners: key -> label.
PEERS = {
    "logreg": "LogisticRegression (one-vs-rest)",
    "htree": "HoeffdingTreeClassifier",
    "nochange": "NoChangeClassifier (River's loop)",
    "checks": "dict checks only (the dict path's floor)",
    "predict": "dict checks + one-row predictions of DHBM-MF (no learning)",
}
#: Dict-path floors: peers with no route but River's loop.
FLOORS = ("checks", "predict")
#: Instances the `predict` floor's DHBM-MF learns (untimed) before it only predicts.
PREDICTOR_PREFIX = 2000
STREAM_ONLY = "stream only"
SETTINGS = ("default", "paper")
#: Settings timed only when named: the defaults without the labeled-only twin (what the
#: twin costs, in the same run as the defaults).
NO_TWIN = "no-twin"
ROUTES = ("prequential", "progressive_val_score")

# The figures of the targets.
TARGET_LOGREG_RATIO = 10.0
TARGET_RATE = 200_000
TARGET_LOOP_COST = 2.0
TARGET_VARIANT_RATIO = 2.0
TARGET_STARTUP = 3.0
TARGET_REPRODUCE_MIN = 15.0


@dataclasses.dataclass(frozen=True)
class Entry:
    """One thing to time: a model (or the bare stream) through one evaluation route."""

    setup: str  # key of SETUPS
    model: str  # key of OURS or PEERS, or STREAM_ONLY
    settings: str  # "default" / "paper" / "no-twin" for our models, "" otherwise
    route: str  # "prequential", "progressive_val_score", "iter_arrays" or "iteration"

    @property
    def label(self) -> str:
        if self.model in OURS:
            return OURS[self.model][0]
        return PEERS.get(self.model, self.model)


# ---------------------------------------------------------------------------------- building


def make_stream(setup: str):
    from evaluation.runs import registry

    name, _ = SETUPS[setup]
    return registry.masked_stream(name, STREAM_SEED, LABEL_RATIO, LABEL_BATCH, MASK_SEED)


def _dict_path_floor(predictor=None):
    """A River classifier doing the part of our models' dict path that comes before any
    learning, exactly as theirs: `predict_one` checks the dict (`_plain_values`) and packs
    it into a buffer slot (`_row`), `learn_one` recognises the dict just predicted
    (`_is_staged`). With a fitted `predictor` (one of our models), `predict_one` is its own,
    one-row prediction included. Their costs bound from below what any exact dict path of
    these models can cost: River asks for each prediction before the next instance, so the
    checks and the one-row pass come on top of the mini-batch updates."""
    import numpy as np
    from river import base

    from river_dhbm._input.checks import canonical_order
    from river_dhbm.base import HybridClassifier

    class DictPathFloor(base.Classifier):
        _n_buf = 0
        # our models' own code, not a copy of it
        _plain_values = HybridClassifier._plain_values
        _row = HybridClassifier._row
        _is_staged = HybridClassifier._is_staged

        def __init__(self, predictor=None):
            self.predictor = predictor
            self._features = None
            self._feature_index = {}
            self._staged = None

        def predict_one(self, x, **kwargs):
            if self.predictor is not None:
                return self.predictor.predict_one(x)
            if self._features is None:
                self._features = canonical_order(x)
                self._X_buf = np.zeros((1, len(self._features)))
            self._row(x)
            if self._staged is None:
                raise ValueError("the bench streams yield plain finite numbers")

        def learn_one(self, x, y=None, **kwargs):
            checker = self if self.predictor is None else self.predictor
            if not checker._is_staged(x):
                raise ValueError("River's loop learns the dict it just predicted")
            checker._staged = None

    return DictPathFloor(predictor)


def _fitted_predictor(setup: str):
    """DHBM-MF (default settings) after `learn_arrays` on the first `PREDICTOR_PREFIX`
    instances of the set-up's masked stream: every class known, ready to predict."""
    model = make_model(Entry(setup, "dhbm-mf", "default", "prequential"))
    X, y, labeled = next(make_stream(setup).iter_arrays(PREDICTOR_PREFIX))
    model.learn_arrays(X, y, labeled)
    return model


def make_model(entry: Entry):
    """A fresh model for `entry`: ours with the paper's architecture and either their default
    or the paper's settings; River's peers wrapped in `LabeledOnly` on the dict route."""
    if entry.model in OURS:
        _, module, name, fixed = OURS[entry.model]
        cls = getattr(importlib.import_module(module), name)
        factory = cls.paper if entry.settings == "paper" else cls
        if entry.settings == NO_TWIN:
            fixed = {**fixed, "safe_unlabeled": False}
        _, hidden = SETUPS[entry.setup]
        return factory(hidden_sizes=hidden, batch_size=BATCH_SIZE, seed=MODEL_SEED, **fixed)
    if entry.model in FLOORS:  # they take every row, labeled or not, as ours do
        return _dict_path_floor(_fitted_predictor(entry.setup) if entry.model == "predict"
                                 else None)
    from river import dummy, linear_model, multiclass, tree

    import streams

    model = {
        "logreg": lambda: multiclass.OneVsRestClassifier(linear_model.LogisticRegression()),
        "htree": lambda: tree.HoeffdingTreeClassifier(),
        "nochange": lambda: dummy.NoChangeClassifier(),
    }[entry.model]()
    # `prequential` gives River's models the labeled rows itself; River's loop passes the
    # `labeled` keyword, which only `LabeledOnly` understands.
    return streams.LabeledOnly(model) if entry.route == "progressive_val_score" else model


def entries(setups, models, settings, routes=ROUTES) -> list[Entry]:
    """Every entry of the benchmark, in table order."""
    out = []
    for setup in setups:
        for model in models:
            if model in OURS:
                out += [Entry(setup, model, s, r) for s in settings for r in routes]
            elif model == "nochange":
                out += [Entry(setup, model, "", r) for r in reversed(routes)]
            elif model in FLOORS:
                out += [Entry(setup, model, "", r) for r in routes if r == "progressive_val_score"]
            else:
                out += [Entry(setup, model, "", r) for r in routes]
        out += [Entry(setup, STREAM_ONLY, "", route) for route in ("iter_arrays", "iteration")]
    return out
