"""The per-call fast paths of `river_dhbm.base` agree with the general code they shortcut."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

from test_base import Softmax


def _fitted():
    model = Softmax(batch_size=3, seed=1)
    rng = np.random.default_rng(0)
    for i in range(12):
        model.learn_one({"a": rng.random(), "b": rng.random(), "c": rng.random()}, i % 3)
    return model


@pytest.mark.parametrize(
    "x",
    [
        {"a": 0.5, "b": 1.0, "c": -2.0},  # the fast path
        {"a": 1, "b": np.int64(2), "c": np.float32(0.1)},  # plain numbers of other types
        {"a": np.float64(0.5), "b": 1.0, "c": 2.0},  # numpy's float: the sum is not a `float`
        {"a": Fraction(1, 3), "b": 1.0, "c": 0.0},  # a Real that is not a float: the sum stays one
        {"a": True, "b": 1.0, "c": 0.0},  # bool: the general loop
        {"c": 0.5, "b": 1.0, "a": -2.0},  # another order
        {"a": 0.5, "b": 1.0},  # a missing feature
        {"a": 0.5, "b": 1.0, "c": 2.0, "z": 3.0},  # an unseen feature
        {"a": 2**19, "b": 1.0, "c": 0.0},  # an int
        {"a": 1e6, "b": -1e6, "c": 0.0},  # the bound itself
        {"a": 9e5, "b": 9e5, "c": 9e5},  # within the bound, a norm beyond it: the loop's
    ],
)
def test_row_fast_path_matches_the_loop(x):
    model = _fitted()
    expected = np.zeros(3)
    for name, value in x.items():
        if name in model._feature_index:
            expected[model._feature_index[name]] = float(value)
    np.testing.assert_array_equal(model._row(x)[0], expected)


@pytest.mark.parametrize(
    "value, error",
    [(float("nan"), ValueError), (float("inf"), ValueError), ("1.0", TypeError),
     (10**400, ValueError), (2**70, ValueError), (1e6 + 1, ValueError), (-1e308, ValueError),
     (None, TypeError), (1j, TypeError), (Decimal("1.5"), TypeError),
     (np.array(0.5), TypeError), (np.float64("nan"), ValueError)],
)
def test_row_fast_path_rejects_bad_values(value, error):
    model = _fitted()
    with pytest.raises(error):
        model._row({"a": 0.5, "b": value, "c": 0.0})


def test_huge_finite_values_are_refused_as_non_finite_ones():
    model = _fitted()
    with pytest.raises(ValueError, match=r"Feature 'a' has out-of-range value 1e\+308 "):
        model._row({"a": 1e308, "b": 1e308, "c": 0.0})


def test_predict_one_is_the_argmax_of_predict_proba_one():
    model = _fitted()
    rng = np.random.default_rng(1)
    for _ in range(20):
        x = {"a": rng.normal(), "b": rng.normal(), "c": rng.normal()}
        proba = model.predict_proba_one(x)
        assert model.predict_one(x) == max(proba, key=proba.get)
    assert Softmax().predict_one({"a": 1.0}) is None


def test_learn_arrays_labels_and_counts():
    a, b = Softmax(batch_size=4, seed=1), Softmax(batch_size=4, seed=1)
    rng = np.random.default_rng(2)
    X = rng.random((10, 3))
    y = np.array([0, 1, None, 2, 1, 0, None, 2, 1, 0], dtype=object)
    keep = np.array([1, 1, 1, 0, 1, 1, 1, 1, 0, 1], dtype=bool)
    a.learn_arrays(X[:3], y[:3], keep[:3])
    a.learn_arrays(X[3:], y[3:], keep[3:])
    for row, label, kept in zip(X, y, keep):
        b.learn_one(dict(enumerate(row.tolist())), label if kept else None)
    assert a.classes_ == b.classes_ == [0, 1, 2]
    assert a.n_updates == b.n_updates == 2
    assert a.n_labeled_seen == b.n_labeled_seen == 5  # None labels count as unlabeled
    np.testing.assert_array_equal(a._W, b._W)
    np.testing.assert_array_equal(a._y_buf[: a._n_buf], b._y_buf[: b._n_buf])
