"""`river_dhbm.DHBM` as a River classifier: River's checks, parameters, bad input, state,
reproducibility, choices pinned from the docstring Notes, and short learning runs."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from river import checks

import reference_dhbm as ref
import streams
from river_dhbm import scarce_labels
from river_dhbm._kernels import dhbm as dhbm_kernels
from river_dhbm._kernels import network as kernels
from river_dhbm._kernels import parameters
from river_dhbm.dhbm import DHBM


def _river_cases():
    for i, params in enumerate(DHBM._unit_test_params()):
        for check in checks.yield_checks(DHBM(**params)):
            yield pytest.param(params, check, id=f"{check.__name__}-{i}")


@pytest.mark.parametrize("params, check", list(_river_cases()))
def test_river_checks(params, check):
    check(copy.deepcopy(DHBM(**params)))


def _led(n, seed=1, ratio=0.1):
    data = streams.LabelMask(
        streams.LEDDrift(seed=seed, noise_percentage=10, n_drift_features=4),
        label_ratio=ratio, batch_size=20, seed=seed,
    )
    return next(data.iter_arrays(chunk_size=n))


def _faded_error(model, X, y, labeled, batch=20, alpha=0.995):
    """Test-then-train on mini-batches through the array path; the faded error at each point."""
    num = den = 0.0
    errors = np.empty(len(X))
    for s in range(0, len(X), batch):
        xb, yb = X[s : s + batch], y[s : s + batch]
        P = model.predict_proba_arrays(xb)
        pred = np.array(model.classes_)[P.argmax(1)] if P.shape[1] else np.full(len(xb), -1)
        for k in range(len(xb)):
            num = alpha * num + (pred[k] != yb[k])
            den = alpha * den + 1.0
            errors[s + k] = num / den
        model.learn_arrays(xb, yb, labeled[s : s + batch])
    return errors


# ---------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    "params, match",
    [
        ({"hidden_sizes": ()}, r"Invalid hidden_sizes \(\(\)\)"),
        ({"hidden_sizes": (4, 0)}, r"Invalid hidden_sizes"),
        ({"hidden_sizes": 8}, r"Invalid hidden_sizes \(8\)"),
        ({"hidden_sizes": (4.5,)}, r"Invalid hidden_sizes"),
        ({"estimator": "cd"}, r"Invalid estimator \('cd'\). Must be one of 'mf', 'sap'"),
        ({"n_particles": 0}, r"Invalid n_particles \(0\). Must be an int >= 1"),
        ({"mf_steps": -1}, r"Invalid mf_steps \(-1\). Must be an int >= 0"),
        ({"learning_rate": -0.1}, r"Invalid learning_rate \(-0.1\). Valid range is \(0, inf\)"),
        ({"learning_rate": 0.0}, r"Invalid learning_rate \(0.0\)"),
        ({"alpha": -1}, r"Invalid alpha \(-1\). Valid range is \[0, inf\)"),
        ({"beta": float("nan")}, r"Invalid beta \(nan\)"),
        ({"discriminative_weight": -2.0}, r"Invalid discriminative_weight \(-2.0\)"),
        ({"dropout": 1.0}, r"Invalid dropout \(1.0\). Valid range is \[0, 1\)"),
        ({"dropout": -0.1}, r"Invalid dropout \(-0.1\)"),
        ({"beta_schedule": (5, 3)}, r"Invalid beta_schedule \(\(5, 3\)\)"),
        ({"beta_schedule": 3}, r"Invalid beta_schedule \(3\)"),
        ({"pseudo_label": "argmax"}, r"Invalid pseudo_label \('argmax'\)"),
        (
            {"activation": "tanh"},
            r"Invalid activation \('tanh'\). Must be one of 'sigmoid', 'relu'",
        ),
        ({"batch_size": 0}, r"Invalid batch_size \(0\)"),
        ({"seed": 1.5}, r"Invalid seed \(1.5\)"),
    ],
)
def test_invalid_hyper_parameters_fail_in_init(params, match):
    with pytest.raises(ValueError, match=match):
        DHBM(**params)


def test_paper_settings():
    model = DHBM.paper(hidden_sizes=(24,) * 4, seed=3)
    assert (model.learning_rate, model.alpha, model.beta, model.dropout) == (0.051, 1.0, 0.1, 0.5)
    assert model.n_particles == 10 and model.discriminative_weight == 0.0
    assert model.activation == "sigmoid" and model.batch_size == 20 and model.seed == 3
    assert DHBM.paper(estimator="sap").estimator == "sap"


def test_beta_schedule_counts_updates():
    model = DHBM(beta=0.4, beta_schedule=(2, 6), seed=0)
    got = []
    for t in range(8):
        model.n_updates = t
        got.append(model._current_beta())
    np.testing.assert_allclose(got, [0, 0, 0, 0.1, 0.2, 0.3, 0.4, 0.4])


# ---------------------------------------------------------------- bad input and state


@pytest.mark.parametrize(
    "x, error, match",
    [
        ({0: float("nan")}, ValueError, "Feature 0 has non-finite value nan"),
        ({3: float("-inf")}, ValueError, "Feature 3 has non-finite value -inf"),
        ({1: "on"}, TypeError, "Feature 1 has non-numeric value 'on'"),
    ],
)
def test_bad_input_is_rejected_before_any_state_changes(x, error, match):
    X, y, labeled = _led(60)
    model = DHBM(hidden_sizes=(8,), estimator="sap", dropout=0.3, seed=1)
    model.learn_arrays(X[:50], y[:50], labeled[:50])
    before = pickle.dumps(model)
    probe = dict(enumerate(X[55]))
    expected = model.predict_proba_one(probe)
    bad = {**probe, **x}
    with pytest.raises(error, match=match):
        model.learn_one(bad, 1)
    with pytest.raises(error, match=match):
        model.predict_proba_one(bad)
    with pytest.raises(TypeError, match=r"Invalid label \{1\}"):
        model.learn_one(probe, {1})
    assert pickle.dumps(model) == before
    assert model.predict_proba_one(probe) == expected


def test_unlabeled_only_learns_but_predicts_nothing():
    X, y, _ = _led(100)
    model = DHBM(hidden_sizes=(6,), seed=0)
    theta0 = None
    for row in X[:20]:
        model.learn_one(dict(enumerate(row)))
        theta0 = model._theta.copy() if theta0 is None else theta0
    assert model.n_updates == 1 and model.classes_ == []
    assert not np.array_equal(model._theta, theta0)  # p(x) was learnt with beta
    assert model.predict_proba_one(dict(enumerate(X[0]))) == {}
    assert model.predict_proba_arrays(X[:3]).shape == (3, 0)


def test_new_classes_grow_the_output():
    model = DHBM(hidden_sizes=(5,), steps=1, batch_size=2, seed=0)
    model.learn_one({"a": 1.0, "b": 0.0}, "x")
    model.learn_one({"a": 0.0, "b": 1.0}, "y")
    model.learn_one({"a": 1.0, "b": 1.0}, "z")
    p = model.predict_proba_one({"a": 1.0, "b": 0.0})
    assert list(p) == ["x", "y", "z"] and np.isclose(sum(p.values()), 1.0)
    P = parameters.param_layout(model._sizes, 3)
    assert model._theta.size == P[-1, 2]
    # the update's transposed mirror grows with the parameters, and the next update rebuilds it
    # from the parameters it uses (a stale, shorter mirror would be read out of bounds)
    assert model._work["mirror"].shape == model._theta.shape
    used = model._theta.copy()
    model.learn_one({"a": 0.5, "b": 0.5}, "z")
    model.learn_one({"a": 0.0, "b": 0.0}, "x")
    W = used[P[0, kernels.COL_W] : P[0, kernels.COL_W] + 10].reshape(2, 5)
    mirror = model._work["mirror"][P[0, kernels.COL_W] : P[0, kernels.COL_W] + 10]
    np.testing.assert_array_equal(mirror.reshape(5, 2), W.T)


# ---------------------------------------------------------------- choices pinned (Notes)


def test_recognition_network_starts_as_a_copy_of_the_model_and_then_departs():
    X, y, labeled = _led(200)
    model = DHBM(hidden_sizes=(7, 5), seed=4)
    model.learn_one(dict(enumerate(X[0])), int(y[0]))
    Pm = ref.unpack(model._theta, model._sizes, 1, model._off)
    for l, (W, R, b, r) in enumerate(zip(Pm["W"], Pm["R"], Pm["b"], Pm["r"])):
        np.testing.assert_array_equal(W, R)
        np.testing.assert_array_equal(b, r)
        bound = np.sqrt(6.0 / sum(W.shape)) * (parameters.centred_scale(2) if l == 0 else 1.0)
        assert np.abs(W).max() <= bound and np.abs(W).max() > 0.5 * bound
        if l > 0:
            np.testing.assert_array_equal(b, 0.0)
    # each first-layer unit's hyperplane passes through a point of the input box [0, 1]^D:
    # it has inputs on both sides of it (its pre-activation changes sign inside the box)
    W, b = Pm["W"][0], Pm["b"][0]
    low = b + np.minimum(W, 0.0).sum(axis=1 if W.shape[0] == len(b) else 0)
    high = b + np.maximum(W, 0.0).sum(axis=1 if W.shape[0] == len(b) else 0)
    assert (low <= 0).all() and (high >= 0).all()
    np.testing.assert_array_equal(Pm["U"][0], 0.0)
    model.learn_arrays(X, y, labeled)
    Pm = ref.unpack(model._theta, model._sizes, len(model.classes_), model._off)
    assert not np.allclose(Pm["W"][0], Pm["R"][0])


def test_no_kl_step_without_mean_field_and_no_discriminative_gradient():
    """With `mf_steps=0` and no discriminative term the recognition network stays put."""
    X, y, labeled = _led(200)
    model = DHBM(hidden_sizes=(6,), mf_steps=0, discriminative_weight=0.0, seed=1)
    model.learn_arrays(X, y, labeled)
    Pm = ref.unpack(model._theta, model._sizes, len(model.classes_), model._off)
    R0 = DHBM(hidden_sizes=(6,), seed=1)
    R0.learn_one(dict(enumerate(X[0])), None)
    P0 = ref.unpack(R0._theta, R0._sizes, 0, R0._off)
    np.testing.assert_array_equal(Pm["R"][0], P0["R"][0])
    assert not np.array_equal(Pm["W"][0], P0["W"][0])


def test_predictions_scale_out_dropout_through_the_recognition_network():
    X, y, labeled = _led(300)
    model = DHBM(hidden_sizes=(6, 4), dropout=0.4, activation="sigmoid", seed=2,
                 safe_unlabeled=False, linear_expert=False)  # the network alone
    model.learn_arrays(X, y, labeled)
    C = len(model.classes_)
    expected = ref.proba(X[:7], model._theta, model._sizes, C, model._off,
                         kernels.SIGMOID, 0.6, 0)
    np.testing.assert_allclose(model.predict_proba_arrays(X[:7]), expected, rtol=1e-10)


def test_sap_particles_are_state_and_move():
    X, y, labeled = _led(200)
    model = DHBM(hidden_sizes=(6,), estimator="sap", n_particles=4, seed=5)
    model.learn_arrays(X[:20], y[:20], labeled[:20])
    assert model._part_x.shape == (4, 24) and model._part_y.shape == (4, len(model.classes_))
    x0 = model._part_x.copy()
    model.learn_arrays(X[20:], y[20:], labeled[20:])
    assert not np.array_equal(x0, model._part_x)
    assert set(np.unique(model._part_x)) <= {0.0, 1.0}
    np.testing.assert_array_equal(model._part_y.sum(1), 1.0)
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone._part_h, model._part_h)


# ---------------------------------------------------------------- reproducibility


@pytest.mark.parametrize("params", list(DHBM._unit_test_params()))
def test_same_seed_same_model_and_copies_continue_identically(params):
    X, y, labeled = _led(400)
    a, b = DHBM(**params), DHBM(**params)
    a.learn_arrays(X[:200], y[:200], labeled[:200])
    for row, label, keep in zip(X[:200], y[:200], labeled[:200]):
        b.learn_one(dict(enumerate(row)), int(label), labeled=bool(keep))
    np.testing.assert_array_equal(a._theta, b._theta)
    pickled, copied = pickle.loads(pickle.dumps(a)), copy.deepcopy(a)
    for m in (a, pickled, copied):
        m.learn_arrays(X[200:], y[200:], labeled[200:])
    for m in (pickled, copied):
        np.testing.assert_array_equal(m._theta, a._theta)
        np.testing.assert_array_equal(m.predict_proba_arrays(X[:5]), a.predict_proba_arrays(X[:5]))
    other = DHBM(**{**params, "seed": params["seed"] + 1})
    other.learn_arrays(X, y, labeled)
    assert not np.array_equal(other._theta, a._theta)


def test_clone_forgets_and_relearns_the_same():
    X, y, labeled = _led(300)
    model = DHBM(hidden_sizes=(5,), estimator="sap", dropout=0.5, seed=7)
    model.learn_arrays(X, y, labeled)
    fresh = model.clone()
    assert fresh.n_updates == 0 and fresh.classes_ == []
    fresh.learn_arrays(X, y, labeled)
    np.testing.assert_array_equal(fresh._theta, model._theta)


# ---------------------------------------------------------------- learning and long runs


@pytest.mark.parametrize("estimator", ["mf", "sap"])
@pytest.mark.parametrize("shuffled, low, high", [(False, 0.0, 0.40), (True, 0.85, 1.0)])
def test_learns_led_with_ten_percent_labels(estimator, shuffled, low, high):
    """Chance 0.9, Bayes 0.26. The negative control: with the labels permuted over the rows
    nothing can be learnt, and the same model must stay at chance."""
    X, y, labeled = _led(30_000, seed=3)
    if shuffled:
        y = np.random.default_rng(0).permutation(y)
    errors = _faded_error(DHBM(estimator=estimator, seed=1), X, y, labeled)
    assert low <= errors[-5000:].mean() < high


@pytest.mark.parametrize("shuffled, low, high", [(False, 0.0, 0.30), (True, 0.6, 1.0)])
def test_learns_waveform_with_ten_percent_labels(shuffled, low, high):
    data = streams.LabelMask(
        streams.NormalisationFilter(
            streams.WaveformDrift(seed=2, has_noise=True, n_drift_features=10)
        ),
        label_ratio=0.1, batch_size=20, seed=2,
    )
    X, y, labeled = next(data.iter_arrays(chunk_size=30_000))
    if shuffled:  # the negative control (see the LED test)
        y = np.random.default_rng(0).permutation(y)
    errors = _faded_error(DHBM(seed=1), X, y, labeled)
    assert low <= errors[-5000:].mean() < high  # chance 0.67, Bayes 0.133


@pytest.mark.parametrize("estimator", ["mf", "sap"])
@pytest.mark.parametrize("name", ["led", "waveform"])
def test_paper_settings_stay_finite_on_the_paper_streams(estimator, name):
    X, y = next(streams.paper_stream(name, seed=1).iter_arrays(chunk_size=20_000))
    labeled = np.random.default_rng(0).random(len(X)) < 0.1
    model = DHBM.paper(hidden_sizes=(X.shape[1],) * 4, estimator=estimator, seed=1)
    model.learn_arrays(X, y, labeled)
    assert np.isfinite(model._theta).all()
    assert np.isfinite(model.predict_proba_arrays(X[:100])).all()


def test_paper_preset_is_the_complete_architecture_given_the_input_width():
    """`paper(n_features)`: four hidden layers as wide as the input (the paper's online
    architecture); the paper's literal steps (one SGD step, no memory, Glorot's weights)."""
    model = DHBM.paper(24)
    assert model.hidden_sizes == (24,) * 4
    assert (model.steps, model.replay, model.init, model.optimizer) == (1, 0, "glorot", "sgd")
    assert DHBM.paper().hidden_sizes == DHBM().hidden_sizes
    assert DHBM.paper(24, hidden_sizes=(5,)).hidden_sizes == (5,)


@pytest.mark.parametrize("estimator", ["mf", "sap"])
def test_the_drift_detector_hears_the_prediction_the_update_starts_from(estimator):
    """Without dropout the update's first pass is the batch's prediction: the probabilities
    `_predict_update` keeps from it (so that `learn_one`'s drift detector and test-then-train
    never compile the batch prediction kernel, however many steps the update takes) are
    `_proba`'s to round-off and its classes, batch after batch. The control: with dropout the
    first pass is masked and its classes differ, so the model asks `_proba` instead."""
    import itertools

    def batches(model, rows=2000):
        data = itertools.islice(streams.LEDDrift(seed=3), rows)
        rng = np.random.default_rng(4)
        for x, y in data:
            model.learn_one(x, y if rng.random() < 0.2 else None)
            if model._n_buf == model.batch_size - 1 and model._classes:
                yield model

    checked, several_steps = 0, 0
    for model in batches(DHBM(estimator=estimator, seed=2)):
        X, codes = model._X_buf.copy(), model._y_buf.copy()
        expected = model._proba(X)
        twin = copy.deepcopy(model)
        several_steps += scarce_labels.steps_at(twin, twin.n_labeled_seen) > 1
        got = twin._predict_update(X, codes)
        np.testing.assert_array_equal(got.argmax(axis=1), expected.argmax(axis=1))
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
        checked += 1
    assert checked > 50 and several_steps > 10

    differs = 0
    for model in batches(DHBM(estimator=estimator, dropout=0.5, seed=2), rows=600):
        X, codes = model._X_buf.copy(), model._y_buf.copy()
        masked = np.empty((len(X), len(model._classes)))
        copy.deepcopy(model)._update(X, codes, masked)
        differs += int((masked.argmax(axis=1) != model._proba(X).argmax(axis=1)).any())
    assert differs > 0
