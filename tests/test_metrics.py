from __future__ import annotations

import math

import pytest
from river import datasets, evaluate, linear_model, metrics, preprocessing

from evaluation import PrequentialError


def naive_faded_error(losses, alpha):
    """Paper eq. 18 written out literally: sum alpha^(i-k) L_k / sum alpha^(i-k)."""
    i = len(losses)
    num = sum(alpha ** (i - k) * losses[k - 1] for k in range(1, i + 1))
    den = sum(alpha ** (i - k) for k in range(1, i + 1))
    return num / den


def test_hand_computed():
    metric = PrequentialError(fading_factor=0.5)
    pairs = [(0, None), (1, None), (1, 1), (0, 1), (0, 1), (1, 1)]  # losses 1 1 0 1 1 0
    expected = [1.0, 1.0, 0.75 / 1.75, 1.375 / 1.875, 1.6875 / 1.9375, 0.84375 / 1.96875]
    for (y_true, y_pred), value in zip(pairs, expected):
        metric.update(y_true, y_pred)
        assert metric.get() == pytest.approx(value, abs=1e-15)
    assert metric.get() == pytest.approx(3 / 7)
    assert metric.n == 6


@pytest.mark.parametrize("alpha", [0.9, 0.995, 1.0])
def test_matches_equation_18(alpha):
    losses = [(k * 7919) % 3 == 0 for k in range(300)]
    metric = PrequentialError(fading_factor=alpha)
    for loss in losses:
        metric.update(1, 0 if loss else 1)
    assert metric.get() == pytest.approx(naive_faded_error(losses, alpha), rel=1e-12)


def test_fading_factor_one_is_the_error_rate():
    y_true = [True, False, True, True, True, False]
    y_pred = [True, True, False, True, True, True]
    metric, accuracy = PrequentialError(fading_factor=1.0), metrics.Accuracy()
    for yt, yp in zip(y_true, y_pred):
        metric.update(yt, yp)
        accuracy.update(yt, yp)
    assert metric.get() == pytest.approx(1 - accuracy.get())


def test_empty_and_revert():
    metric = PrequentialError()
    assert metric.get() == 0.0
    metric.update("a", "a")
    metric.update("a", "b")
    before = metric.get()
    metric.update("b", None)
    metric.revert("b", None)
    assert metric.get() == pytest.approx(before)
    assert metric.n == 2


def test_weights_scale_like_repeated_updates():
    weighted, repeated = PrequentialError(fading_factor=1.0), PrequentialError(fading_factor=1.0)
    weighted.update(0, 1, w=2.0)
    weighted.update(0, 0, w=1.0)
    for pair in [(0, 1), (0, 1), (0, 0)]:
        repeated.update(*pair)
    assert weighted.get() == pytest.approx(repeated.get())


@pytest.mark.parametrize("alpha", [0.0, -0.5, 1.5, math.nan])
def test_invalid_fading_factor(alpha):
    with pytest.raises(ValueError, match="fading_factor"):
        PrequentialError(fading_factor=alpha)


def test_in_progressive_val_score_matches_a_manual_loop():
    dataset = list(datasets.Phishing())[:400]

    def make():
        return preprocessing.StandardScaler() | linear_model.LogisticRegression()

    metric = PrequentialError(fading_factor=0.99)
    evaluate.progressive_val_score(dataset, make(), metric)

    model, manual = make(), PrequentialError(fading_factor=0.99)
    for x, y in dataset:
        y_pred = model.predict_one(x)
        if y_pred is not None:  # River skips missing predictions
            manual.update(y, y_pred)
        model.learn_one(x, y)
    assert metric.get() == pytest.approx(manual.get(), abs=1e-15)
    assert metric.n == manual.n
    assert not metric.bigger_is_better
    assert repr(metric).startswith("PrequentialError: ")
    assert metric.clone().fading_factor == 0.99
