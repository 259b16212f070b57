"""River's per-instance dict path (`predict_one`, `predict_proba_one`, `learn_one`) and its
shortcuts (values packed straight into the buffer, one-row predictions with preallocated
buffers) agree with the general code, for every model."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from river_dhbm import DHBM, DHDA, HSDA, SBEN, PseudoLabelMLP

MODELS = {
    "dhbm-mf": lambda: DHBM(hidden_sizes=(6, 5), batch_size=4, seed=1),
    "dhbm-sap": lambda: DHBM(hidden_sizes=(6,), estimator="sap", n_particles=3, dropout=0.3,
                             batch_size=4, seed=1),
    "sben": lambda: SBEN(hidden_sizes=(6, 5), batch_size=4, seed=1),
    "dhda": lambda: DHDA(hidden_sizes=(6, 5), batch_size=4, seed=1),
    "hsda": lambda: HSDA(hidden_sizes=(6, 5), batch_size=4, seed=1),
    "pl-mlp": lambda: PseudoLabelMLP(hidden_sizes=(6,), batch_size=4, seed=1),
}


def _rows(n=30, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = ["abc"[i] for i in rng.integers(0, 3, n)]
    labeled = rng.random(n) < 0.6
    return X, y, labeled


def _assert_same(a, b):
    np.testing.assert_array_equal(a._theta, b._theta)
    np.testing.assert_array_equal(a._X_buf[: a._n_buf], b._X_buf[: b._n_buf])
    np.testing.assert_array_equal(a._y_buf[: a._n_buf], b._y_buf[: b._n_buf])
    assert a.classes_ == b.classes_
    assert (a.n_updates, a.n_labeled_seen) == (b.n_updates, b.n_labeled_seen)


def _mutate(x):
    x[0], x[1] = 1.0 - x[0], 0.25
    x[len(x) - 1] = int(x[len(x) - 1] > 0.5)  # an int is a plain number too


@pytest.mark.parametrize("name", MODELS)
def test_predicting_before_learning_the_same_dict_changes_nothing(name):
    X, y, labeled = _rows()
    alone, tested = MODELS[name](), MODELS[name]()
    mutated, expected = MODELS[name](), MODELS[name]()
    for row, label, lab in zip(X, y, labeled):
        x = dict(enumerate(row.tolist()))
        alone.learn_one(dict(x), label, labeled=bool(lab))
        tested.predict_one(x)
        tested.predict_proba_one(x)
        tested.learn_one(x, label, labeled=bool(lab))
        # the dict changes between the prediction and the learning: the new values are learnt
        m = dict(x)
        mutated.predict_one(m)
        _mutate(m)
        mutated.learn_one(m, label, labeled=bool(lab))
        _mutate(x)
        expected.learn_one(x, label, labeled=bool(lab))
    assert alone.n_updates == len(X) // 4
    _assert_same(alone, tested)
    _assert_same(mutated, expected)


def _twins(name, X, y, n):
    """Two copies of model `name` that learnt the first `n` rows."""
    twins = MODELS[name](), MODELS[name]()
    for row, label in zip(X[:n], y[:n]):
        for m in twins:
            m.learn_one(dict(enumerate(row.tolist())), label)
    return twins


@pytest.mark.parametrize("name", MODELS)
def test_learning_the_dict_just_predicted_does_not_check_it_again(name, monkeypatch):
    X, y, labeled = _rows()
    model, expected = _twins(name, X, y, 10)
    x = dict(enumerate(X[10].tolist()))
    model.predict_one(x)
    checks = []
    monkeypatch.setattr(model, "_plain_values", lambda x: checks.append(x))
    model.learn_one(dict(x), y[10])  # River's loop learns a copy of the dict it predicted
    assert checks == []
    expected.learn_one(x, y[10])
    _assert_same(model, expected)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("between", ["learn_one", "learn_arrays", "learn_many"])
def test_learning_in_between_forgets_the_predicted_row(name, between):
    # the predicted row waits in the buffer's next slot: any learning overwrites that slot
    import pandas as pd

    X, y, labeled = _rows()
    model, expected = _twins(name, X, y, 9)
    x = dict(enumerate(X[9].tolist()))
    model.predict_one(x)
    for m in (model, expected):
        if between == "learn_one":
            m.learn_one(dict(enumerate(X[10].tolist())), y[10])
        elif between == "learn_arrays":
            m.learn_arrays(X[10:12], np.array(y[10:12], dtype=object))
        else:
            m.learn_many(pd.DataFrame(X[10:12]), pd.Series(y[10:12]))
        m.learn_one(dict(x), y[9])  # after two rows in between, this fills the mini-batch
    _assert_same(model, expected)  # the update learnt x, not what was in its slot
    if model._n_buf:
        np.testing.assert_array_equal(model._X_buf[model._n_buf - 1], X[9])


@pytest.mark.parametrize("name", MODELS)
def test_packed_fast_path_learns_what_the_general_loop_learns(name):
    # keys in reverse order take the general loop, in the model's order the packed fast path
    X, y, labeled = _rows(seed=1)
    fast, general, arrays = MODELS[name](), MODELS[name](), MODELS[name]()
    for row, label, lab in zip(X, y, labeled):
        fast.learn_one(dict(enumerate(row.tolist())), label, labeled=bool(lab))
        general.learn_one(dict(reversed(list(enumerate(row.tolist())))), label,
                          labeled=bool(lab))
    arrays.learn_arrays(X, np.array(y, dtype=object), labeled)
    _assert_same(fast, general)
    _assert_same(fast, arrays)


@pytest.mark.parametrize("name", MODELS)
def test_one_row_predictions_match_the_array_path(name):
    X, y, labeled = _rows(seed=2)
    model = MODELS[name]()
    for i, (row, label, lab) in enumerate(zip(X, y, labeled)):
        x = dict(enumerate(row.tolist()))
        if model.classes_:
            P = model.predict_proba_arrays(row[None, :])[0]
            proba = model.predict_proba_one(x)
            assert list(proba) == model.classes_  # a new class shows at once
            # the network's own prediction is the same kernel call on both paths (exact); the
            # twin's combination runs in plain Python on one row, numpy on arrays (round-off)
            np.testing.assert_allclose(list(proba.values()), P, rtol=0, atol=1e-14)
            reordered = model.predict_proba_one(dict(reversed(list(x.items()))))
            assert reordered == proba
            assert model.predict_one(x) == max(proba, key=proba.get)
        model.learn_one(x, label, labeled=bool(lab))


@pytest.mark.parametrize("name", ["dhbm-mf", "sben"])
def test_prediction_scratch_is_not_state(name):
    X, y, labeled = _rows(seed=3)
    model = MODELS[name]()
    for row, label in zip(X[:10], y[:10]):
        model.learn_one(dict(enumerate(row.tolist())), label)
    before = pickle.dumps(model)
    for row in X[10:]:
        model.predict_one(dict(enumerate(row.tolist())))
    assert pickle.dumps(model) == before
    clone = pickle.loads(before)
    x = dict(enumerate(X[20].tolist()))
    assert clone.predict_proba_one(x) == model.predict_proba_one(x)
    # a later class rebuilds the one-row output buffer with the new width
    model.learn_one(x, "new")
    assert set(model.predict_proba_one(x)) == {"a", "b", "c", "new"}


def test_predict_one_breaks_ties_as_river_does():
    # zero label weights for every class: all probabilities equal, River picks the first
    model = PseudoLabelMLP(hidden_sizes=(3,), batch_size=100, seed=0)
    for label in ("b", "a", "c"):
        model.learn_one({0: 0.5, 1: 0.5}, label)
    proba = model.predict_proba_one({0: 0.1, 1: 0.9})
    assert len(set(proba.values())) == 1
    assert model.predict_one({0: 0.1, 1: 0.9}) == max(proba, key=proba.get) == "b"


@pytest.mark.parametrize(
    "bad, error, match",
    [
        ({2: float("nan")}, ValueError, "Feature 2 has non-finite value nan"),
        ({0: float("-inf")}, ValueError, "Feature 0 has non-finite value -inf"),
        ({1: "on"}, TypeError, "Feature 1 has non-numeric value 'on'"),
        ({1: None}, TypeError, "Feature 1 has non-numeric value None"),
        ({3: np.array(0.5)}, TypeError, "Feature 3 has non-numeric value array"),
        ({4: 10**400}, ValueError, "Feature 4 has out-of-range value 1000"),
        ({5: 1e200}, ValueError, r"Feature 5 has out-of-range value 1e\+200"),
    ],
)
@pytest.mark.parametrize("name", ["dhbm-mf", "dhda"])
def test_bad_values_in_the_stream_order_are_rejected_by_every_entry_point(name, bad, error,
                                                                          match):
    X, y, labeled = _rows(seed=4)
    model = MODELS[name]()
    for row, label in zip(X[:6], y[:6]):
        model.learn_one(dict(enumerate(row.tolist())), label)
    x = {**dict(enumerate(X[7].tolist())), **bad}  # the model's key order: the fast path's
    before = pickle.dumps(model)
    for call in (model.learn_one, model.predict_one, model.predict_proba_one):
        with pytest.raises(error, match=match):
            call(x)
    assert pickle.dumps(model) == before


def test_no_features_at_all():
    # an empty dict is a valid instance: zero columns packed, the prior predicted
    from test_base import Softmax

    model = Softmax(batch_size=2, seed=0)
    for label in ("a", "b", "a"):
        model.learn_one({}, label)
    assert model.n_updates == 1 and model._X_buf.shape == (2, 0)
    assert model.predict_proba_one({}) == {"a": 0.5, "b": 0.5}
    assert model.predict_one({"unseen": 1.0}) == "a"
