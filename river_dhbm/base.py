"""The River-facing API shared by every model: `learn_one`, `predict_proba_one` and friends.

The jobs behind it live in their own modules: `inputs` (checks at the door), `buffer` (the
mini-batch buffer and class bookkeeping), `param_checks` (hyper-parameters) and `first_use`
(the one line said when Numba must compile).

A subclass supplies the mathematics through four hooks, each called with validated float64
arrays:

- `_init_params(n_features)`: allocate the parameters once the feature set is known (the
  class count `len(self._classes)` may still be 0);
- `_add_class()`: grow every output-side parameter by one class column;
- `_update(X, y)`: ONE learning step on a full mini-batch, `X` float64 `[batch_size, d]`,
  `y` int64 `[batch_size]` holding class indices, `-1` for unlabeled rows;
- `_proba(X)`: `p(y | x)` as float64 `[n, n_classes]` (only called once a class is known);
  `_proba_row(row)` and `_predict_row(row)` (optional) do it, and the argmax, for one row
  `[1, d]` with less per-call overhead.

Every public entry point (`learn_one`, `learn_many`, `learn_arrays`, the predictions) checks
its whole input before it changes any state, so a rejected call leaves the model as it was.
All three learning paths feed the same buffer, so they yield the same model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from river import base

from .buffer import MiniBatchBuffer
from .inputs import (  # noqa: F401 (re-exported: the names base.py always had)
    _PLAIN_NUMBERS,
    InputChecks,
    _canonical_order,
    _check_dict,
    _check_frame_type,
    _check_label,
    _is_missing_label,
    _row_packer,
    _short,
)
from .param_checks import *  # noqa: F403 (the checks the models import from here)
from .param_checks import _check_int, _check_seed

if TYPE_CHECKING:  # pandas is imported by the mini-batch methods only (~0.5 s at import)
    import pandas as pd

__all__ = ["HybridClassifier"]


class HybridClassifier(InputChecks, MiniBatchBuffer, base.MiniBatchClassifier):
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
    - River's loops predict an instance, then learn it: `predict_one` leaves the checked
      values in the buffer's next free slot, and `learn_one` of a dict with the same keys and
      values takes them from there without checking them again. Predicting changes nothing
      that is pickled.

    """

    #: The paper's literal settings for the online experiments, used by `paper()`.
    _PAPER_SETTINGS: dict = {}
    _n_buf_labeled = 0  # labeled rows in the buffer (class default: models pickled before it)
    _staged = None  # values of the last predicted dict, packed in the buffer's next free slot
    _memory = None  # the label memory (`scarce_labels.LabelMemory`), made at the first update

    def __init__(self, batch_size: int = 20, seed: int | None = None):
        self.batch_size = batch_size
        self.seed = seed

    # ------------------------------------------------------------------ configuration

    @classmethod
    def paper(cls, n_features: int | None = None, **overrides):
        """The model with the paper's literal online settings, `overrides` applied on top.

        The paper's online architecture is "complete": four hidden layers, each as wide as the
        input. Give the input's width as `n_features` to get it (`hidden_sizes=(n_features,) *
        4`); without it the model keeps its class's default `hidden_sizes`, which the paper
        does not fix.
        """
        complete = {} if n_features is None else {"hidden_sizes": (int(n_features),) * 4}
        return cls(**{**cls._PAPER_SETTINGS, **complete, **overrides})

    def _check_common_params(self) -> None:
        _check_int("batch_size", self.batch_size, 1)
        _check_seed(self.seed)

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
        self._memory = None
        self.n_updates = 0
        self.n_labeled_seen = 0

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

    # ------------------------------------------------------------------ pickling

    #: Work arrays that predictions write into (rebuilt by the model's `__setstate__`).
    _SCRATCH: tuple = ()

    def __getstate__(self):
        # predictions leave a pickle unchanged: their scratch, the staged row and the free
        # slots of the buffer it was packed into are not part of the model
        state = {k: v for k, v in self.__dict__.items() if k not in self._SCRATCH}
        state.pop("_staged", None)
        if self._X_buf is not None:
            state["_X_buf"] = self._X_buf.copy()
            state["_X_buf"][self._n_buf :] = 0.0
        return state

    # ------------------------------------------------------------------ learning

    def learn_one(self, x: dict, y=None, labeled: bool = True, late=(), **kwargs) -> None:
        """Buffer one instance; unlabeled when `y is None` or `labeled=False`.

        Every `batch_size` buffered instances trigger one update on the mixed mini-batch.
        `late` holds `(x, y)` pairs whose delayed label is due now (`streams.LabelMask`'s
        `delay`): each is learnt, labeled, right after this instance.

        """
        _check_dict(x)
        if self._is_staged(x):
            row = None  # the instance just predicted: checked, and waiting in the buffer
        else:
            row = self._plain_values(x)  # the common case: no array until the buffer itself
            if row is None:
                features = self._features if self._features is not None else _canonical_order(x)
                index = self._feature_index if self._features is not None else {
                    name: j for j, name in enumerate(features)
                }
                row = self._vector_general(x, index)
        label = None if (not labeled or _is_missing_label(y)) else y
        if label is not None:
            _check_label(label)
        if self._features is None:
            self._fix_features(features)
        self._push_one(row, label)
        for x_late, y_late in late:
            self.learn_one(x_late, y_late)

    def learn_many(self, X: pd.DataFrame, y: pd.Series | None = None, **kwargs) -> None:
        """Buffer a mini-batch; missing labels (None/NaN) mark unlabeled rows."""
        _check_frame_type(X)
        if len(X) == 0:
            return
        features = self._features if self._features is not None else _canonical_order(X.columns)
        rows = self._check_frame(X, features)
        if y is None:
            labels = [None] * len(rows)
        else:
            if not hasattr(y, "__len__") or isinstance(y, (str, bytes, dict)):
                raise TypeError(f"Invalid y ({_short(y)}). Must be a Series of {len(X)} labels")
            if len(y) != len(X):
                raise ValueError(f"X has {len(X)} rows but y has {len(y)} labels")
            labels = [None if _is_missing_label(v) else v for v in y]
            for v in labels:
                if v is not None:
                    _check_label(v)
        if self._features is None:
            self._fix_features(features)
        self._push(rows, [(i, v) for i, v in enumerate(labels) if v is not None])

    def learn_arrays(self, X: np.ndarray, y: np.ndarray, labeled: np.ndarray | None = None) -> None:
        """Array path: `X` float `[n, d]` with columns features `0..d-1`, `y` labels `[n]`,
        `labeled` bool `[n]` (all labeled if omitted). Same buffer as `learn_one`."""
        X, features, pairs = self._check_learn_arrays(X, y, labeled)
        if len(X) == 0:
            return
        if self._features is None:
            self._fix_features(features)
        self._push(X, pairs)

    def test_then_train_arrays(
        self,
        X: np.ndarray,
        y: np.ndarray,
        labeled: np.ndarray | None = None,
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
        _check_int("batch_size", bs, 1)
        X, features, pairs = self._check_learn_arrays(X, y, labeled)
        predicted = np.full(len(X), -1, dtype=np.int64)
        if len(X) and self._features is None:
            self._fix_features(features)
        k = start = 0  # pairs[k:] are the labeled rows from `start` on
        while start < len(X):
            stop = self._run_end(start, len(X), bs, pairs, k)
            run = stop > start  # whole mini-batches of known classes: one call
            if not run:  # one block: predict, then buffer (a new class, a straddled batch)
                stop = min(start + bs, len(X))
            end = k
            while end < len(pairs) and pairs[end][0] < stop:
                end += 1
            if run:
                codes = np.full(stop - start, -1, dtype=np.int64)
                for i, v in pairs[k:end]:
                    codes[i - start] = self._class_index[v]
                predicted[start:stop] = self._test_then_train_run(X[start:stop], codes)
            else:
                if self._classes:
                    predicted[start:stop] = self._proba(X[start:stop]).argmax(axis=1)
                self._push(X[start:stop], [(i - start, v) for i, v in pairs[k:end]])
            k, start = end, stop
        return predicted

    # ------------------------------------------------------------------ prediction

    def predict_proba_one(self, x: dict, **kwargs) -> dict:
        # Nothing to predict yet: `{}` whatever `x` holds (River's MinMaxScaler, for one, sends
        # NaN before it has seen an instance, and a pipeline predicts before it learns).
        _check_dict(x)
        if not self._classes:
            return {}
        return dict(zip(self._classes, self._proba_row(self._row(x))))

    def predict_one(self, x: dict, **kwargs):
        """The most probable label (River's `max(proba, key=proba.get)` without the dict)."""
        _check_dict(x)
        if not self._classes or type(self).predict_proba_one is not _PREDICT_PROBA_ONE:
            return super().predict_one(x, **kwargs)
        return self._classes[self._predict_row(self._row(x))]

    def predict_proba_many(self, X: pd.DataFrame) -> pd.DataFrame:
        import pandas as pd

        _check_frame_type(X)
        if not self._classes:
            return pd.DataFrame(index=X.index)
        P = self._proba(self._check_frame(X, self._features))
        return pd.DataFrame(P, index=X.index, columns=list(self._classes))

    def predict_proba_arrays(self, X: np.ndarray) -> np.ndarray:
        """Array path: `p(y | x)` as float64 `[n, len(classes_)]` (no columns before a label)."""
        X, _ = self._check_arrays(X)
        if not self._classes:
            return np.zeros((len(X), 0))
        return self._proba(X)

    # ------------------------------------------------------------------ hooks

    def _init_params(self, n_features: int) -> None:
        raise NotImplementedError

    def _add_class(self) -> None:
        raise NotImplementedError

    def _update(self, X: np.ndarray, y: np.ndarray, P: np.ndarray | None = None) -> None:
        """One update on the mini-batch `(X, y)`; `P` is its prediction when the caller
        already has it (the confident proxy labels need it)."""
        raise NotImplementedError

    def _proba(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _predict_update(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        """`_proba(X)`, then `_update(X, y)`; models whose update starts with the prediction's
        own pass override it to compute that pass once."""
        P = self._proba(X)
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
