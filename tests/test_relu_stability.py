"""Deep ReLU hybrids stay finite: their "relu" is bounded to [0, 1] (`kernels.BOUNDED_RELU`).

With the plain rectifier, every case below reached NaN within 4-160 updates (see the Notes of
`DHBM` and `DHDA`): the mean-field / encoder sweeps feed unbounded activities back as targets.
"""

from __future__ import annotations

import numpy as np
import pytest

import streams
from river_dhbm import DHBM, DHDA, HSDA, SBEN, PseudoLabelMLP
from river_dhbm._kernels import network as kernels
from kernel_calls import from_python

DEEP = (24, 24, 24, 24)


def _led(n):
    stream = streams.LabelMask(
        streams.LEDDrift(noise_percentage=10, n_drift_features=4), 0.1, 20, seed=1
    )
    return next(stream.iter_arrays(chunk_size=n))


@pytest.mark.parametrize(
    "make",
    [
        lambda: DHBM(hidden_sizes=DEEP, activation="relu", seed=1),
        lambda: DHBM.paper(hidden_sizes=DEEP, activation="relu", seed=1),
        lambda: DHBM.paper(hidden_sizes=DEEP, activation="relu", estimator="sap", seed=1),
        lambda: DHDA(hidden_sizes=DEEP, activation="relu", seed=1),
        lambda: DHDA(hidden_sizes=DEEP, activation="relu", loss="mse", learning_rate=0.001,
                     seed=1),
        lambda: DHDA.paper(hidden_sizes=DEEP, activation="relu", loss="mse", seed=1),
        lambda: HSDA(hidden_sizes=DEEP, activation="relu", seed=1),
        lambda: SBEN(hidden_sizes=DEEP, activation="relu", seed=1),
        lambda: PseudoLabelMLP(hidden_sizes=DEEP, seed=1),
    ],
    ids=["dhbm", "dhbm-paper", "dhbm-paper-sap", "dhda", "dhda-mse-lr0.001", "dhda-paper-mse",
         "hsda", "sben", "mlp"],
)
def test_four_relu_layers_stay_finite(make):
    X, y, labeled = _led(4000)
    model = make()
    for s in range(0, len(X), 500):
        model.learn_arrays(X[s : s + 500], y[s : s + 500], labeled[s : s + 500])
        assert np.isfinite(model._theta).all(), f"non-finite after {model.n_updates} updates"
    assert np.isfinite(model.predict_proba_arrays(X[:100])).all()


@pytest.mark.parametrize("model", [DHBM, DHDA, HSDA, SBEN])
def test_hybrid_relu_is_bounded(model):
    m = model(hidden_sizes=(5,), activation="relu", seed=1)
    m.learn_one({0: 1.0, 1: 0.0})
    assert m._kind == kernels.BOUNDED_RELU


def test_bounded_relu_and_its_derivative():
    z = [-2.0, 0.0, 0.3, 1.0, 7.0]
    assert [from_python(kernels.activate)(
        v, kernels.BOUNDED_RELU) for v in z] == [0.0, 0.0, 0.3, 1.0, 1.0]
    assert [from_python(kernels.activate)(v, kernels.RELU) for v in z] == [0.0, 0.0, 0.3, 1.0, 7.0]
    a = [0.0, 0.3, 1.0]
    assert [from_python(kernels.derivative)(v, kernels.BOUNDED_RELU) for v in a] == [0.0, 1.0, 0.0]


def test_the_mlp_keeps_the_plain_rectifier():
    m = PseudoLabelMLP(hidden_sizes=(5,), seed=1)
    m.learn_one({0: 1.0, 1: 0.0}, 0)
    assert m._kind == kernels.RELU
