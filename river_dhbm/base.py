"""The River-facing API shared by every model: `learn_one`, `predict_proba_one` and friends.

`HybridClassifier` holds the rows at the door (a dict packed straight into the buffer), the
features and classes, and every public entry point. The buffer and its updates are
`river_dhbm.minibatch`; the experts and their mixture the predictions go through,
`river_dhbm.safety`; the checks, `river_dhbm._input` (`checks`: values, frames, arrays,
labels; `params`: hyper-parameters); when Numba must compile, `river_dhbm._kernels.first_use`
and `ahead`.

A subclass supplies the mathematics through four hooks, called with validated float64 arrays:

- `_init_params(n_features)`: allocate the parameters once the feature set is known (the
  class count `len(self._classes)` may still be 0);
- `_add_class()`: grow every output-side parameter by one class column;
- `_update(X, y)`: ONE learning step on a full mini-batch, `X` float64 `[batch_size, d]`,
  `y` int64 `[batch_size]` holding class indices, `-1` for unlabeled rows;
- `_proba(X)`: `p(y | x)` as float64 `[n, n_classes]` (only called once a class is known);
  `_proba_row(row)` and `_predict_row(row)` (optional) do it, and the argmax, for one row
  `[1, d]` with less per-call overhead; `_experts_row` (optional) predicts one row by every
  expert and their mixture in one call (`learn_one` scores with it: `_scores_with_experts_row`).

Every public entry point (`learn_one`, `learn_many`, `learn_arrays`, the predictions) checks
its whole input before it changes any state, so a rejected call leaves the model as it was.
All three learning paths feed the same buffer, so they yield the same model.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from river import base

from river_dhbm import change, minibatch, safety
from river_dhbm._input.checks import (MAX_ABS, PLAIN_NUMBERS, as_label, canonical_order,
                                      check_arrays, check_dict, check_flag, check_frame,
                                      check_frame_type, check_learn_arrays, dict_row,
                                      frame_labels, row_packer, short_repr)
from river_dhbm._input.params import check_bool, check_int, check_seed
from river_dhbm._kernels import ahead
from river_dhbm._kernels.first_use import announce_compilation

if TYPE_CHECKING:  # pandas is imported by the mini-batch methods only (~0.5 s at import)
    import pandas as pd

__all__ = ["HybridClassifier"]


class HybridClassifier(base.MiniBatchClassifier):
    """Base class of the semi-supervised mini-batch classifiers of this package.

    Not meant to be used directly: see `DHBM`, `DHDA`, `PseudoLabelMLP`, `SBEN`, `HSDA`.

    Notes
    -----
    - The feature set is fixed on the first instance seen (in natural sort order, so the
      columns of `learn_arrays` are feature names `0..d-1`); later unseen features are
      ignored and missing ones read as 0.
    - Classes are discovered online: a new label adds an output column at once, so it shows
      in the predictions even before the mini-batch that holds it is learnt.
    - Instances wait in a buffer until `batch_size` of them trigger one update; the buffer
      is part of the model's state (it survives pickling and cloning copies nothing of it).
    - What is taken: feature values are real numbers (ints, floats, bools, numpy's real
      scalars) with `|value| <= 1e6` (`MAX_ABS`); NaN, inf and larger values are refused
      alike, in one line naming the feature, the value and the row, before anything changes
      (scaled input always fits; 1e200 overflowed the updates). A label is hashable; None
      and any label that does not equal itself (NaN, NaT, pandas' NA) mean unlabeled, on
      every path. `labeled` is a bool; a Series `y` goes with `X` by index.
    - River's loops predict an instance, then learn it: `predict_one` leaves the checked
      values in the buffer's next free slot, and `learn_one` of a dict with the same keys and
      values takes them from there without checking them again. Predicting changes nothing
      that is pickled.

    """

    #: The paper's literal settings for the online experiments, used by `paper()`.
    _PAPER_SETTINGS: dict = {}
    # The last predicted dict's values, packed in the buffer's next free slot, and each
    # expert's `p(y | x)` of it: left out of pickles, a loaded model reads these defaults.
    _staged = None
    _staged_experts = None
    #: A subclass without the settings (a test double, say) has no twin, no linear expert.
    safe_unlabeled = False
    linear_expert = False

    def __init__(self, batch_size: int = 20, seed: int | None = None, drift_detector=None):
        self.batch_size = batch_size
        self.seed = seed
        self.drift_detector = drift_detector

    # ------------------------------------------------------------------ configuration

    @classmethod
    def paper(cls, n_features: int | None = None, **overrides):
        """The model with the paper's literal online settings, `overrides` applied on top.

        The paper's online architecture is "complete": four hidden layers, each as wide as the
        input. Give the input's width as `n_features` to get it (`hidden_sizes=(n_features,) *
        4`); without it the model keeps its class's default `hidden_sizes`, which the paper
        does not fix.
        """
        from river.drift import NoDrift  # a second and pandas: only for the paper's settings

        complete = {} if n_features is None else {"hidden_sizes": (int(n_features),) * 4}
        paper = {**cls._PAPER_SETTINGS, "drift_detector": NoDrift()}  # the paper watches nothing
        return cls(**{**paper, **complete, **overrides})

    def _check_common_params(self) -> None:
        check_int("batch_size", self.batch_size, 1)
        check_seed(self.seed)
        change.check_detector(self.drift_detector)

    def _reset_state(self) -> None:
        """Forget everything learnt: called at the end of every subclass `__init__`."""
        self._rng = np.random.default_rng(self.seed)
        self._features: list | None = None
        self._feature_index: dict = {}
        self._classes: list = []
        self._class_index: dict = {}
        self._X_buf: np.ndarray | None = None
        self._y_buf: np.ndarray | None = None
        self._n_buf = 0
        self._n_buf_labeled = 0
        self._staged = None
        self._memory = None  # the label memory (`scarce_labels.LabelMemory`), made when used
        check_bool("safe_unlabeled", self.safe_unlabeled)
        check_bool("linear_expert", self.linear_expert)
        # the twin, the linear expert and their mixture (`safety`), made with the features
        self._twin = self._linear = self._mixture = None
        self.n_updates = 0
        self.n_labeled_seen = 0
        self._watch = change.ChangeWatch(self.drift_detector)
        self._labels_before_change = 0  # labeled rows seen at the last restart (`change`)

    @property
    def _multiclass(self) -> bool:
        return True

    @property
    def classes_(self) -> list:
        """The labels seen so far, in the column order of `predict_proba_arrays`."""
        return list(self._classes)

    @property
    def n_features_in_(self) -> int:
        return 0 if self._features is None else len(self._features)

    def n_drifts_detected(self) -> int:
        """How many times the drift detector saw the labeled rows' error rise (`drift_rows`)."""
        return len(self._watch.alarms)

    @property
    def drift_rows(self) -> list:
        """The rows (counted from 1 in learning order) at the end of whose mini-batch the drift
        detector saw the error rise; the model restarts its fast learning at most
        `change.CHECK_EVERY` mini-batches later."""
        return list(self._watch.alarms)

    @property
    def input_change_rows(self) -> list:
        """The rows at the end of whose mini-batch the inputs narrowed (`change.InputWatch`):
        the model restarts its fast learning there too, and its linear expert's scaling."""
        return list(self._watch.input_alarms)

    @property
    def unlabeled_trust(self) -> float:
        """The network's weight against its labeled-only twin, their share of the prediction
        divided between them (`river_dhbm.safety`): near 1 when the unlabeled rows have paid on
        the labeled rows so far, near 0 when they have cost; 1.0 without a twin and before any
        labeled row."""
        return safety.unlabeled_trust(self)

    @property
    def expert_weights(self) -> dict:
        """Each expert's weight in the prediction by name (`"network"`, `"twin"`, `"linear"`;
        `river_dhbm.safety`), the priors of no labels before any labeled row."""
        return safety.expert_weights(self)

    # ------------------------------------------------------------------ pickling

    _SCRATCH: tuple = ()  # work arrays predictions write into (rebuilt by `__setstate__`)

    def __getstate__(self):
        # predictions leave a pickle unchanged: their scratch, the staged row and the free
        # slots of the buffer it was packed into are not part of the model
        state = {k: v for k, v in self.__dict__.items() if k not in self._SCRATCH}
        for name in ("_staged", "_staged_experts"):
            state.pop(name, None)
        if self._X_buf is not None:
            state["_X_buf"] = self._X_buf.copy()
            state["_X_buf"][self._n_buf :] = 0.0
        safety.pack_twin(self, state)  # the label memory it shares with the network: once
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        safety.unpack_twin(self)

    # ------------------------------------------------------------------ rows at the door

    def _plain_values(self, x: dict) -> list | None:
        """The values of `x` when it holds exactly the known features, in their order, as
        plain numbers within `MAX_ABS` (what the streams yield), else None (the general loop
        decides).

        Two C-level passes instead of a Python loop over the features: the sum fails on a
        non-number and stays an exact `float` only over Python's own numbers (floats, ints,
        bools, fractions); other types (numpy's scalars among them) get one look at their
        types. The norm then bounds every value (a NaN or inf makes it fail too). Anything
        unusual (an int beyond float range, a row whose norm exceeds the bound, an object
        that adds oddly) is left to the loop, which says what is wrong.
        """
        features = self._features
        if features is None or len(x) != len(features) or list(x) != features:
            return None
        values = list(x.values())
        try:
            total = sum(values, 0.0)
        except Exception:
            return None
        if type(total) is not float and not PLAIN_NUMBERS.issuperset(map(type, values)):
            return None
        return values if math.hypot(*values) <= MAX_ABS else None

    def _is_staged(self, x: dict) -> bool:
        """Whether `x` holds the values of the dict `_row` packed last, under the same keys.
        Values compare as numbers: `1` and `1.0` pack alike, `0.0` and `-0.0` do not (the slot
        keeps the predicted dict's sign of zero); a NaN is never staged. A value that cannot
        say whether it equals (an array, pandas' NA) is not the staged one."""
        staged = self._staged
        try:
            return staged is not None and list(x.values()) == staged and list(x) == self._features
        except Exception:
            return False

    def _row(self, x: dict) -> np.ndarray:
        """`x` as one validated row float64 `[1, d]` for a prediction.

        A dict of plain values is packed into the buffer's next free slot (not part of the
        model until learnt) and its values are remembered (`_staged`): River's loops predict an
        instance, then learn it, and `learn_one` then only has to recognise it."""
        values = self._plain_values(x)
        if values is None:
            return dict_row(x, self._feature_index)[None, :]
        start = self._n_buf
        row_packer(len(values))(self._X_buf, 8 * len(values) * start, *values)
        self._staged = values
        return self._X_buf[start : start + 1]

    # ------------------------------------------------------------------ features and classes

    def _fix_features(self, names) -> None:
        self._features = list(names)
        self._feature_index = {name: j for j, name in enumerate(self._features)}
        self._X_buf = np.zeros((self.batch_size, len(self._features)))
        self._y_buf = np.full(self.batch_size, -1, dtype=np.int64)
        cold = announce_compilation(self)  # the kernels come next: say so if they must compile
        self._init_params(len(self._features))
        safety.attach_experts(self)
        if cold:  # the first update compiles on another core while the first rows are scored
            ahead.start(lambda: minibatch.learn_made_up_batch(self))

    def _class_of(self, y) -> int:
        """The column of label `y`, adding a class the first time it is seen."""
        k = self._class_index.get(y)
        if k is None:
            k = len(self._classes)
            self._classes.append(y)
            self._class_index[y] = k
            self._add_class()
            safety.add_class(self)
        return k

    # ------------------------------------------------------------------ learning

    def learn_one(self, x: dict, y=None, labeled: bool = True, late=(), **kwargs) -> None:
        """Buffer one instance; unlabeled when `y is None` or `labeled=False`.

        Every `batch_size` buffered instances trigger one update on the mixed mini-batch.
        `late` holds `(x, y)` pairs whose delayed label is due now (`streams.LabelMask`'s
        `delay`): each is learnt, labeled, right after this instance. A missing label (None,
        NaN, NaT, pandas' NA) means unlabeled; all of it is checked before anything is learnt.
        """
        check_dict(x)
        if labeled is not True and labeled is not False:
            check_flag(labeled)  # numpy's bools pass
        label = as_label(y) if labeled else None
        features, index = self._features, self._feature_index
        if self._is_staged(x):
            row = None  # the instance just predicted: checked, and waiting in the buffer
        else:
            row = self._plain_values(x)  # the common case: no array until the buffer itself
            if row is None:
                if features is None:
                    features = canonical_order(x)
                    index = {name: j for j, name in enumerate(features)}
                row = dict_row(x, index)
        due = self._late_rows(late, index) if type(late) is not tuple or late else ()
        if self._features is None:
            self._fix_features(features)
        minibatch.push_one(self, row, label)
        for row_late, y_late in due:
            minibatch.push_one(self, row_late, y_late)

    def _late_rows(self, late, index: dict) -> list:
        """`late`'s `(x, y)` pairs as checked `(row, label)` pairs (`index`: the features)."""
        try:
            pairs = [(x_late, y_late) for x_late, y_late in late]
        except (TypeError, ValueError):
            raise TypeError(f"Invalid late ({short_repr(late)}). Must be (x, y) pairs") from None
        rows = []
        for x_late, y_late in pairs:
            check_dict(x_late)
            row = self._plain_values(x_late)
            rows.append((dict_row(x_late, index) if row is None else row, as_label(y_late)))
        return rows

    def learn_many(self, X: pd.DataFrame, y: pd.Series | None = None, **kwargs) -> None:
        """Buffer a mini-batch; a missing label (None, NaN, NaT, pandas' NA) marks an unlabeled
        row. A Series `y` goes with `X` by index (reordered when it holds the same labels)."""
        check_frame_type(X)
        labels = [] if y is None else frame_labels(X, y)
        features = self._features if self._features is not None else canonical_order(X.columns)
        rows = check_frame(X, features)
        if len(X) == 0:
            return
        if self._features is None:
            self._fix_features(features)
        minibatch.push(self, rows, [(i, v) for i, v in enumerate(labels) if v is not None])

    def learn_arrays(self, X: np.ndarray, y: np.ndarray, labeled: np.ndarray | None = None) -> None:
        """Array path: `X` float `[n, d]` with columns features `0..d-1`, `y` labels `[n]`,
        `labeled` bool `[n]` (all labeled if omitted). Same buffer as `learn_one`."""
        X, features, pairs = check_learn_arrays(X, y, labeled, self._features)
        if len(X) == 0:
            return
        if self._features is None:
            self._fix_features(features)
        minibatch.push(self, X, pairs)

    def test_then_train_arrays(
        self, X: np.ndarray, y: np.ndarray, labeled: np.ndarray | None = None,
        batch_size: int | None = None,
    ) -> np.ndarray:
        """Prequential test-then-train on an array block: cut into blocks of `batch_size` rows
        (default: the model's), each block is predicted, then learnt (`learn_arrays`).

        Returns the predicted classes as int64 indices into `classes_` `[n]` (-1: no class
        known yet). The same as `predict_proba_arrays(block).argmax(axis=1)` then
        `learn_arrays(block, ...)` block after block, with one check of the input; runs of
        whole model mini-batches of known classes go to `_test_then_train_run` (one kernel
        call per mini-batch, or one for the whole run).
        """
        bs = self.batch_size if batch_size is None else batch_size
        check_int("batch_size", bs, 1)
        X, features, pairs = check_learn_arrays(X, y, labeled, self._features)
        if len(X) and self._features is None:
            self._fix_features(features)
        return minibatch.test_then_train(self, X, pairs, bs)

    # ------------------------------------------------------------------ prediction

    def predict_proba_one(self, x: dict, **kwargs) -> dict:
        # Nothing to predict yet: `{}` whatever `x` holds (River's MinMaxScaler, for one, sends
        # NaN before it has seen an instance, and a pipeline predicts before it learns).
        check_dict(x)
        if not self._classes:
            return {}
        return dict(zip(self._classes, safety.predictive_proba_row(self, self._row(x))))

    def predict_one(self, x: dict, **kwargs):
        """The most probable label (River's `max(proba, key=proba.get)` without the dict)."""
        check_dict(x)
        if not self._classes or type(self).predict_proba_one is not _PREDICT_PROBA_ONE:
            return super().predict_one(x, **kwargs)
        return self._classes[safety.predictive_row(self, self._row(x))]

    predict_experts_one = safety.predict_experts_one  # each expert's label, by name

    def predict_proba_many(self, X: pd.DataFrame) -> pd.DataFrame:
        import pandas as pd

        check_frame_type(X)
        if not self._classes:
            return pd.DataFrame(index=X.index)
        rows = check_frame(X, self._features)
        P = safety.predictive_proba(self, rows) if len(rows) else np.zeros((0, len(self._classes)))
        return pd.DataFrame(P, index=X.index, columns=list(self._classes))

    def predict_proba_arrays(self, X: np.ndarray) -> np.ndarray:
        """Array path: `p(y | x)` as float64 `[n, len(classes_)]` (no columns before a label)."""
        X, _ = check_arrays(X, self._features)
        if not self._classes:
            return np.zeros((len(X), 0))
        return safety.predictive_proba(self, X)

    # ------------------------------------------------------------------ hooks

    def _init_params(self, n_features: int) -> None:
        raise NotImplementedError

    def _add_class(self) -> None:
        raise NotImplementedError

    def _update(self, X: np.ndarray, y: np.ndarray, P: np.ndarray | None = None) -> None:
        """One update on the mini-batch `(X, y)`; `P` is its prediction when the caller
        already has it (the confident proxy labels need it). A model whose update has no use
        for `P` takes `(X, y)` only and overrides `_predict_update`."""
        raise NotImplementedError

    def _proba(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _test_then_train_run(self, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Test-then-train on whole mini-batches of known classes with the buffer empty:
        `codes` int64 class indices (-1 unlabeled); returns the predicted class indices, each
        row predicted before the update of its mini-batch. One update per mini-batch
        (`minibatch.batch_by_batch`); models may override it with a single kernel call."""
        return minibatch.batch_by_batch(self, X, codes)

    def _predict_update(self, X: np.ndarray, y: np.ndarray, P=None) -> np.ndarray:
        """`_proba(X)` (or `P`, when the caller has it), then `_update(X, y, P)` with that
        prediction, which the confident proxy labels use. Models whose update takes no `P`
        override it, as do those whose update starts with the prediction's own pass."""
        P = self._proba(X) if P is None else P
        self._update(X, y, P)
        return P

    def _proba_row(self, row: np.ndarray) -> list:
        """`p(y | x)` of one validated row float64 `[1, d]` as a list (models may override it
        with a cheaper one-row call)."""
        return self._proba(row)[0].tolist()

    def _predict_row(self, row: np.ndarray) -> int:
        """The class index `predict_one` answers for one validated row `[1, d]`: the first
        maximum of `_proba_row`, as `max(proba, key=proba.get)` picks it (models may override
        it to skip the list)."""
        p = self._proba_row(row)
        return p.index(max(p))


_PREDICT_PROBA_ONE = HybridClassifier.predict_proba_one
