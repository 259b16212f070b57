"""The shared River plumbing (`river_dhbm.base`), exercised through a tiny softmax model."""

from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pandas as pd
import pytest
from river import checks

from river_dhbm.base import HybridClassifier


class Softmax(HybridClassifier):
    """Softmax regression on the labeled rows of each mini-batch (test double)."""

    def __init__(self, learning_rate: float = 0.1, batch_size: int = 4, seed: int | None = None):
        super().__init__(batch_size=batch_size, seed=seed)
        self.learning_rate = learning_rate
        self._check_common_params()
        self._reset_state()

    @classmethod
    def _unit_test_params(cls):
        yield {"batch_size": 3, "seed": 1}

    def _init_params(self, n_features):
        self._W = self._rng.normal(0, 0.01, (n_features, 0))

    def _add_class(self):
        self._W = np.hstack([self._W, np.zeros((self._W.shape[0], 1))])

    def _proba(self, X):
        z = X @ self._W
        z -= z.max(axis=1, keepdims=True)
        p = np.exp(z)
        return p / p.sum(axis=1, keepdims=True)

    def _update(self, X, y, P=None):
        lab = y >= 0
        if lab.any():
            P = self._proba(X[lab])
            P[np.arange(lab.sum()), y[lab]] -= 1
            self._W -= self.learning_rate * X[lab].T @ P / lab.sum()


@pytest.mark.parametrize("check", list(checks.yield_checks(Softmax(batch_size=3, seed=1))),
                         ids=lambda c: c.__name__)
def test_river_checks(check):
    model = Softmax(batch_size=3, seed=1)
    check(copy.deepcopy(model))


def _stream(n=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(np.int64)
    return X, y


def test_three_learning_paths_give_the_same_model():
    X, y = _stream()
    keep = np.arange(len(X)) % 3 != 0
    one, many, arrays = Softmax(seed=2), Softmax(seed=2), Softmax(seed=2)
    for row, label, k in zip(X, y, keep):
        one.learn_one(dict(enumerate(row)), int(label), labeled=bool(k))
    labels = pd.Series([int(v) if k else None for v, k in zip(y, keep)], dtype=object)
    many.learn_many(pd.DataFrame(X), labels)
    arrays.learn_arrays(X, y, keep)
    assert one.n_updates == many.n_updates == arrays.n_updates == len(X) // 4
    for other in (many, arrays):
        np.testing.assert_array_equal(one._W, other._W)
        assert one.classes_ == other.classes_
    np.testing.assert_array_equal(one.predict_proba_arrays(X), arrays.predict_proba_arrays(X))


def test_unlabeled_rows_are_not_learnt_as_labeled():
    X, y = _stream()
    model = Softmax(seed=0)
    model.learn_arrays(X, y, np.zeros(len(X), dtype=bool))
    assert model.classes_ == [] and model.predict_proba_one({0: 1.0, 1: 0.0, 2: 0.0}) == {}
    assert model.n_labeled_seen == 0 and model.n_updates == len(X) // 4


@pytest.mark.parametrize(
    "x, error, match",
    [
        ({0: float("nan"), 1: 0.0}, ValueError, "Feature 0 has non-finite value nan"),
        ({0: 1.0, "b": float("inf")}, ValueError, "Feature 'b' has non-finite value inf"),
        ({0: 1.0, 1: "red"}, TypeError, "Feature 1 has non-numeric value 'red'"),
    ],
)
def test_bad_features_are_rejected_before_any_state_changes(x, error, match):
    model = Softmax(seed=0)
    X, y = _stream(9)
    model.learn_arrays(X[:, :2], y)
    before = pickle.dumps(model)
    probe = {0: 0.3, 1: -1.0}
    expected = model.predict_proba_one(probe)
    with pytest.raises(error, match=match):
        model.learn_one(x, 1)
    with pytest.raises(error, match=match):
        model.predict_proba_one(x)
    assert pickle.dumps(model) == before
    assert model.predict_proba_one(probe) == expected


def test_bad_label_and_frames_are_rejected():
    model = Softmax(seed=0)
    with pytest.raises(TypeError, match=r"Invalid label \[1\]"):
        model.learn_one({0: 1.0}, [1])
    assert model.n_features_in_ == 0
    frame = pd.DataFrame({"a": [1.0, np.nan], "b": [0.0, 1.0]})
    with pytest.raises(ValueError, match="Feature 'a' has non-finite value nan in row 1"):
        model.learn_many(frame, pd.Series([0, 1]))
    with pytest.raises(TypeError, match="Feature 'a' has non-numeric value 'x'"):
        model.learn_many(pd.DataFrame({"a": ["x", "y"]}), pd.Series([0, 1]))
    model.learn_arrays(np.zeros((2, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="X has 3 columns, the model has 2 features"):
        model.learn_arrays(np.zeros((2, 3)), np.zeros(2))


def test_missing_labels_in_learn_many_are_unlabeled():
    model = Softmax(seed=0)
    model.learn_many(pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]}), pd.Series([np.nan, 1.0, None, 0.0]))
    assert model.classes_ == [1.0, 0.0] and model.n_labeled_seen == 2


def test_new_class_shows_before_its_batch_is_learnt():
    model = Softmax(seed=0)
    model.learn_one({0: 1.0}, "cat")
    model.learn_one({0: -1.0}, "dog")
    p = model.predict_proba_one({0: 0.5})
    assert set(p) == {"cat", "dog"} and math.isclose(sum(p.values()), 1.0)


def test_invalid_common_params():
    with pytest.raises(ValueError, match=r"Invalid batch_size \(0\)"):
        Softmax(batch_size=0)
    with pytest.raises(ValueError, match=r"Invalid seed \('a'\)"):
        Softmax(seed="a")


def test_nothing_to_predict_yet_gives_empty_predictions_whatever_the_input():
    # River's MinMaxScaler sends NaN before it has seen anything; a pipeline predicts first.
    model = Softmax(seed=0)
    assert model.predict_proba_one({0: float("nan")}) == {}
    assert model.predict_one({0: float("nan")}) is None
    assert model.predict_proba_many(pd.DataFrame({0: [np.nan]})).empty
    model.learn_one({0: 1.0})  # unlabeled: still no class
    assert model.predict_proba_one({0: float("inf")}) == {}


