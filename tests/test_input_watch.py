"""The input watch (`change.InputWatch`): a feature that narrows to a fraction of its spread
restarts the model's learning, with its linear expert's standardization; streams whose
inputs keep their spread, whatever their shape, raise nothing."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from river import drift

from river_dhbm import DHBM, DHDA, change

BATCH = 20


def _alarms(X: np.ndarray) -> list[int]:
    """The rows at which a fresh watch fed `X` mini-batch by mini-batch alarms."""
    watch, rows = change.InputWatch(), []
    for b in range(len(X) // BATCH):
        if watch.narrowed(X[b * BATCH : (b + 1) * BATCH], b + 1):
            rows.append((b + 1) * BATCH)
    return rows


def _mixed_features(n: int, seed: int) -> np.ndarray:
    """Features of every shape the development suite has: uniform, Gaussian, long-tailed,
    binary, and rare (a pixel lit once in fifty rows)."""
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.random(n), rng.normal(size=n), rng.lognormal(0, 1.5, n),
                            rng.random(n) < 0.5, rng.random(n) < 0.02]).astype(float)


@pytest.mark.parametrize("seed", range(10))
def test_inputs_that_keep_their_spread_raise_nothing(seed):
    assert _alarms(_mixed_features(60_000, seed)) == []


@pytest.mark.parametrize("column", [0, 1, 2, 3, 4])
def test_a_feature_that_narrows_alarms_after_two_spans(column):
    X = _mixed_features(20_000, 5)
    X[8000:, column] = 0.9 + X[8000:, column] / 20  # a scaler in front stretched its range
    # once: the new reference starts from the narrow rows
    assert _alarms(X) == [8000 + change.NARROW_SPANS * change.CHECK_EVERY * BATCH]


@pytest.mark.parametrize("flat_rows, alarms", [(200, []), (400, [8400])])
def test_one_narrow_span_is_luck_two_are_a_change(flat_rows, alarms):
    X = _mixed_features(20_000, 6)
    X[8000 : 8000 + flat_rows, 1] = 0.0  # a reading goes flat for a span, or two
    assert _alarms(X) == alarms


def _squeezed(n: int, at: int, seed: int):
    """Three features in [0, 1], the class linear in the first two; from row `at` on the
    first is squeezed into [0.9, 0.95], as a `MinMaxScaler` squeezes it once an outlier has
    stretched its range twenty-fold."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = ((X[:, 0] + 0.3 * X[:, 1]) > 0.65).astype(np.int64)
    X[at:, 0] = 0.9 + X[at:, 0] / 20
    return X, y


@pytest.mark.parametrize("cls", [DHBM, DHDA], ids=lambda c: c.__name__)
def test_at_scarce_labels_a_squeezed_feature_is_learnt_again(cls, monkeypatch):
    X, y = _squeezed(8000, 4000, seed=1)
    labeled = np.random.default_rng(1).random(len(X)) < 0.05
    model = cls(seed=1)
    predicted = model.test_then_train_arrays(X, y, labeled)
    assert model.input_change_rows == [4400]
    # the control: the same model whose watch never sees a narrowing (its errors may
    # still restart it, but its linear expert keeps the old scale)
    monkeypatch.setattr(change, "NARROWING", np.inf)
    blind = cls(seed=1)
    stale = blind.test_then_train_arrays(X, y, labeled)
    assert blind.input_change_rows == []
    after = slice(4000, 8000)

    def accuracy(m, p):
        return float((np.array(m.classes_)[p[after]] == y[after]).mean())

    assert accuracy(model, predicted) > 0.85 and accuracy(blind, stale) < 0.7


def test_the_restart_forgets_the_linear_experts_scale_only_after_the_inputs_moved():
    X, y = _squeezed(2000, 10_000, seed=2)
    model = DHBM(seed=2)
    model.learn_arrays(X, y)
    linear = model._linear
    count = int(linear.count[0])
    change.restart(model)  # as after the errors rose: the scale stays
    assert int(linear.count[0]) == count > 0
    model._watch.inputs_moved = True
    change.restart(model)
    assert linear.count[0] == 0 and not linear.mean.any() and not linear.m2.any()
    assert not model._watch.inputs_moved


def test_the_twin_restarts_with_the_model():
    X, y = _squeezed(6000, 3000, seed=3)
    model = DHBM(seed=3)
    model.test_then_train_arrays(X, y, np.random.default_rng(3).random(len(X)) < 0.1)
    assert model.input_change_rows == [3400]
    # the twin learns the labeled rows only; its warm start counts from the same restart
    assert model._twin._labels_before_change > 0
    assert model._twin.input_change_rows == []  # its own watch hears no inputs


def test_no_drift_watches_no_inputs():
    X, y = _squeezed(6000, 3000, seed=3)
    model = DHBM(seed=3, drift_detector=drift.NoDrift())
    model.learn_arrays(X, y)
    assert model.input_change_rows == [] and model._watch.inputs.block is None


def test_a_pickled_model_watches_on_where_it_stopped():
    X, y = _squeezed(6000, 3000, seed=4)
    whole, half = DHBM(seed=4), DHBM(seed=4)
    whole.learn_arrays(X, y)
    half.learn_arrays(X[:2500], y[:2500])
    half = pickle.loads(pickle.dumps(half))
    half.learn_arrays(X[2500:], y[2500:])
    assert half.input_change_rows == whole.input_change_rows == [3400]
    np.testing.assert_array_equal(half._theta, whole._theta)
