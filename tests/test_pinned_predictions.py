"""Every model's predictions on a fixed stream equal the ones recorded in
tests/data/pinned_predictions.npz (tests/make_pinned_predictions.py), to round-off: a rewrite
of how predictions are computed must not change them."""

from __future__ import annotations

import numpy as np
import pytest

from make_pinned_predictions import CASES, PATH, predictions


@pytest.fixture(scope="module")
def pinned():
    with np.load(PATH) as data:
        return dict(data)


@pytest.mark.parametrize("name", list(CASES))
def test_predictions_equal_the_pinned_ones(name, pinned):
    last, query = predictions(CASES[name]())
    np.testing.assert_allclose(last, pinned[f"{name}/dict"], rtol=0, atol=1e-8)
    np.testing.assert_allclose(query, pinned[f"{name}/arrays"], rtol=0, atol=1e-8)


def test_the_pin_can_fail(pinned):
    # the negative control: a model that learns a little differently is caught
    _, query = predictions(CASES["dhbm"]().clone({"learning_rate": 0.0031}))
    assert np.abs(query - pinned["dhbm/arrays"]).max() > 1e-6
