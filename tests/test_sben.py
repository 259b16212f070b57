"""`river_dhbm.SBEN`: kernels against the DHBM numpy reference applied block by block, River's
checks, and a short learning run."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from river import checks

import reference_dhbm as ref
import streams
from river_dhbm._kernels import network as kernels
from river_dhbm.sben import SBEN


def _led(n, seed=1):
    data = streams.LabelMask(
        streams.LEDDrift(seed=seed, noise_percentage=10, n_drift_features=4),
        label_ratio=0.1, batch_size=20, seed=seed,
    )
    return next(data.iter_arrays(chunk_size=n))


def _river_cases():
    for i, params in enumerate(SBEN._unit_test_params()):
        for check in checks.yield_checks(SBEN(**params)):
            yield pytest.param(params, check, id=f"{check.__name__}-{i}")


@pytest.mark.parametrize("params, check", list(_river_cases()))
def test_river_checks(params, check):
    check(copy.deepcopy(SBEN(**params)))


def _reference_step(model, X, y, draws):
    """The SBEN update redone with the DHBM reference, block by block, from `draws`."""
    C, keep = len(model.classes_), 1.0 - model.dropout
    theta, below = model._theta.copy(), X
    moments = model._moments.copy() if model._moments.size else None
    masks, part_mask, noise_h, noise_v = draws
    n, M = len(X), model._part_y.shape[1]
    parts = []
    for b, sizes in enumerate(model._bsizes):
        sl = slice(model._boff[b], model._boff[b + 1])
        mk = masks[n * model._moff_unit[b] : n * model._moff_unit[b + 1]] if masks.size else masks
        ph = slice(model._phoff[b], model._phoff[b + 1])
        nv = slice(model._nvoff[b], model._nvoff[b + 1])
        pv = model._part_x[model._pvoff[b] : model._pvoff[b + 1]].reshape(M, sizes[0])
        mo = None
        if moments is not None:
            mo = moments[2 * model._boff[b] : 2 * model._boff[b + 1]]
        new, px, phh, py, mo2 = ref.update(
            below, y, theta[sl], sizes, C, model._offs[b], model._kind, model._estimator,
            model.mf_steps, model.learning_rate, model.alpha, model._current_beta(),
            model.discriminative_weight, model.pseudo_label == "hard", mk, pv,
            model._part_h[ph], model._part_y[b], part_mask[ph] if part_mask.size else part_mask,
            noise_h[ph] if noise_h.size else noise_h, noise_v[nv] if noise_v.size else noise_v,
            mo, model.n_updates + 1,
        )
        theta[sl] = new
        if mo2 is not None:
            moments[2 * model._boff[b] : 2 * model._boff[b + 1]] = mo2
        parts.append((px, phh, py))
        P = ref.unpack(theta[sl], sizes, C, model._offs[b])
        below = ref.recognition(below, P, model._kind, None, keep)[0]
    return theta, parts, moments


@pytest.mark.parametrize(
    "params",
    [
        {"hidden_sizes": (5, 4, 3)},
        {"hidden_sizes": (5, 4), "estimator": "sap", "n_particles": 3, "dropout": 0.4,
         "pseudo_label": "hard", "mf_steps": 1},
        {"hidden_sizes": (4, 4), "activation": "relu", "optimizer": "sgd", "estimator": "sap",
         "n_particles": 2, "learning_rate": 0.05},
    ],
)
def test_update_and_proba_match_the_reference(params):
    X, y, labeled = _led(220)
    X, y, labeled = X[160:], y[160:], labeled[160:]
    # one step: the reference; the network alone predicts (no labeled-only twin)
    model = SBEN(batch_size=20, seed=3, replay=0, steps=1, safe_unlabeled=False,
                 linear_expert=False, **params)
    model.learn_arrays(X[:40], y[:40])  # fully labeled: every class is known before the step
    assert set(y[40:]) <= set(model.classes_)
    before = copy.deepcopy(model)
    # replay the generator to recover the draws of the next update
    rng = copy.deepcopy(model._rng)
    n, keep, units = 20, 1.0 - model.dropout, int(model._moff_unit[-1])
    masks = (rng.random(n * units) < keep).astype(float) if model.dropout else np.zeros(0)
    M = model._part_y.shape[1]
    part_mask = noise_h = noise_v = np.zeros(0)
    if M:
        if model.dropout:
            part_mask = (rng.random(M * units) < keep).astype(float)
        size = int(model._phoff[-1])
        noise_h = rng.standard_normal(size) if model._kind != kernels.SIGMOID else rng.random(size)
        noise_v = rng.random(int(model._nvoff[-1]))
    yb = np.array([model._class_index[v] if k else -1 for v, k in zip(y[40:], labeled[40:])])
    theta, parts, moments = _reference_step(before, X[40:], yb, (masks, part_mask, noise_h,
                                                                 noise_v))
    model.learn_arrays(X[40:], y[40:], labeled[40:])
    np.testing.assert_allclose(model._theta, theta, rtol=1e-10, atol=1e-12)
    if moments is not None:
        np.testing.assert_allclose(model._moments, moments, rtol=1e-10, atol=1e-12)
    for b, (px, ph, py) in enumerate(parts):
        np.testing.assert_array_equal(model._part_x[model._pvoff[b] : model._pvoff[b + 1]],
                                      px.ravel())
        np.testing.assert_array_equal(model._part_y[b], py)
    # prediction: the average of the blocks' predictors
    C, below, expected = len(model.classes_), X[:7], 0.0
    for b, sizes in enumerate(model._bsizes):
        P = ref.unpack(model._theta[model._boff[b] : model._boff[b + 1]], sizes, C,
                       model._offs[b])
        below = ref.recognition(below, P, model._kind, None, 1.0 - model.dropout)[0]
        expected = expected + ref.joint([below], P) / len(model._bsizes)
    np.testing.assert_allclose(model.predict_proba_arrays(X[:7]), expected, rtol=1e-10)


def test_pickles_and_copies_continue_identically():
    X, y, labeled = _led(400)
    model = SBEN(hidden_sizes=(6, 5), estimator="sap", dropout=0.3, n_particles=3, seed=2)
    model.learn_arrays(X[:200], y[:200], labeled[:200])
    twins = [pickle.loads(pickle.dumps(model)), copy.deepcopy(model)]
    for m in [model, *twins]:
        m.learn_arrays(X[200:], y[200:], labeled[200:])
    for m in twins:
        np.testing.assert_array_equal(m._theta, model._theta)


@pytest.mark.parametrize("shuffled, low, high", [(False, 0.0, 0.42), (True, 0.85, 1.0)])
def test_learns_led_and_stays_finite(shuffled, low, high):
    """Chance 0.9, Bayes 0.26; measured 0.35. The negative control: with the labels permuted
    over the rows the same model stays at chance."""
    X, y, labeled = _led(30_000, seed=3)
    if shuffled:
        y = np.random.default_rng(0).permutation(y)
    model = SBEN(seed=1)
    num = den = 0.0
    errors = []
    for s in range(0, len(X), 20):
        P = model.predict_proba_arrays(X[s : s + 20])
        pred = np.array(model.classes_)[P.argmax(1)] if P.shape[1] else np.full(20, -1)
        for k in range(20):
            num = 0.995 * num + (pred[k] != y[s + k])
            den = 0.995 * den + 1.0
            errors.append(num / den)
        model.learn_arrays(X[s : s + 20], y[s : s + 20], labeled[s : s + 20])
    assert low <= np.mean(errors[-5000:]) < high
    assert np.isfinite(model._theta).all()


def test_invalid_parameters_are_the_dhbm_ones():
    with pytest.raises(ValueError, match=r"Invalid hidden_sizes \(\(\)\)"):
        SBEN(hidden_sizes=())
    with pytest.raises(ValueError, match=r"Invalid estimator \('pcd'\)"):
        SBEN(estimator="pcd")
