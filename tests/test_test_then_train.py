"""`test_then_train_arrays` (one call per block; for the DHBM one kernel call per mini-batch,
or one for a whole run of them) gives exactly the predictions and the model of
`predict_proba_arrays` then `learn_arrays`, block after block; and `evaluation.prequential`
uses it without changing a number."""

from __future__ import annotations

import numpy as np
import pytest
from river import drift

from evaluation import prequential
from river_dhbm import DHBM, fused_run
from river_dhbm._kernels import dhbm as dhbm_kernels
from river_dhbm._kernels import dhbm_experts
from streams import LED, LabelMask
from test_dict_path import MODELS as DICT_PATH_MODELS

# every model of the dict-path tests, plus the DHBM variants that decide its one-pass path
MODELS = {
    **DICT_PATH_MODELS,
    "dhbm-mf-steps": lambda: DHBM(hidden_sizes=(6, 5), mf_steps=1, batch_size=4, seed=1),
    "dhbm-sap-no-dropout": lambda: DHBM(hidden_sizes=(6,), estimator="sap", n_particles=3,
                                        batch_size=4, seed=1),
    # the network alone predicts: the DHBM's one-call run (with other experts, the mixture
    # predicts batch by batch)
    "dhbm-mf-alone": lambda: DHBM(hidden_sizes=(6, 5), batch_size=4, seed=1,
                                  safe_unlabeled=False, linear_expert=False),
    # beta changes from update to update: the one-call run must follow it
    "dhbm-beta-schedule": lambda: DHBM(hidden_sizes=(6, 5), beta_schedule=(2, 9),
                                       pseudo_label="hard", batch_size=4, seed=1),
}


def _block(n=90, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = np.array(["abcd"[i] for i in rng.integers(0, 4, n)], dtype=object)
    y[:9] = "a"  # the first classes arrive one by one, later ones mid-stream
    labeled = rng.random(n) < 0.6
    labeled[:3] = False  # nothing to predict with at first
    return X, y, labeled


def _batch_by_batch(model, X, y, labeled, batch_size):
    predicted = np.full(len(X), -1)
    for b0 in range(0, len(X), batch_size):
        b = slice(b0, b0 + batch_size)
        if model.classes_:
            predicted[b] = model.predict_proba_arrays(X[b]).argmax(axis=1)
        model.learn_arrays(X[b], y[b], labeled[b])
    return predicted


def _assert_same_model(a, b, X):
    """The same parameters, to the last bit, in every expert; the same predictions, to the
    last bit for a network alone, to round-off with a mixture (whose kernel scores row by row
    what numpy scores a batch at a time)."""
    np.testing.assert_array_equal(a._theta, b._theta)
    if a._twin is not None:
        np.testing.assert_array_equal(a._twin._theta, b._twin._theta)
    if a._linear is not None:
        np.testing.assert_array_equal(a._linear.W, b._linear.W)
    assert a.classes_ == b.classes_
    assert (a.n_updates, a.n_labeled_seen, a._n_buf) == (b.n_updates, b.n_labeled_seen, b._n_buf)
    if a._mixture is None:
        np.testing.assert_array_equal(a.predict_proba_arrays(X), b.predict_proba_arrays(X))
    else:
        np.testing.assert_allclose(a._mixture.losses, b._mixture.losses, rtol=1e-12)
        np.testing.assert_allclose(a.predict_proba_arrays(X), b.predict_proba_arrays(X),
                                   rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("batch_size, head", [(None, 0), (3, 0), (4, 2)])
def test_same_predictions_and_model_as_batch_by_batch(name, batch_size, head):
    X, y, labeled = _block()
    fused, reference = MODELS[name](), MODELS[name]()
    for model in (fused, reference):  # `head` rows already in the buffer: blocks off the updates
        model.learn_arrays(X[:head], y[:head], labeled[:head])
    got = fused.test_then_train_arrays(X[head:], y[head:], labeled[head:], batch_size)
    expected = _batch_by_batch(reference, X[head:], y[head:], labeled[head:], batch_size or 4)
    np.testing.assert_array_equal(got, expected)
    assert (got == -1).sum() > 0 and (got >= 0).sum() > 50
    _assert_same_model(fused, reference, X)


def test_the_dhbm_predicts_and_learns_a_mini_batch_in_one_pass(monkeypatch):
    X, y, labeled = _block()
    model = MODELS["dhbm-mf-alone"]()
    model.learn_arrays(X[:88], y[:88])  # every class known, the buffer empty
    calls = []
    monkeypatch.setattr(model, "_proba", lambda X: calls.append(len(X)))
    predicted = model.test_then_train_arrays(X[:88], y[:88], labeled[:88])  # whole batches
    assert calls == []  # every block was one of the model's mini-batches, of known classes
    assert (predicted >= 0).all()


def _count_runs(monkeypatch, model):
    """Counts the one-call runs (their lengths: the network alone's kernel, or the kernel of
    its experts) and the per-batch updates of `model`."""
    runs, updates = [], []
    for module, name in ((dhbm_kernels, "dhbm_test_then_train"),
                         (dhbm_experts, "dhbm_experts_run")):
        kernel = getattr(module, name)
        monkeypatch.setattr(module, name,
                            lambda X, *args, kernel=kernel: runs.append(len(X)) or kernel(X, *args))
    update = model._update
    monkeypatch.setattr(model, "_update", lambda *a: updates.append(1) or update(*a))
    return runs, updates


def _unwatched(name):
    """`MODELS[name]` with no drift detector."""
    return MODELS[name]().clone({"drift_detector": drift.NoDrift()})


def _flipping(n=3000, flip=1500, seed=0):
    """A concept that flips at row `flip`: the labels of a threshold on the first feature
    swap."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 5))
    above = X[:, 0] > 0.5
    y = np.where(above, "a", "b").astype(object)
    y[flip:] = np.where(above[flip:], "b", "a")
    return X, y, rng.random(n) < 0.3


@pytest.mark.parametrize("name", ["dhbm-mf-alone", "dhbm-mf"])
@pytest.mark.parametrize("watched", [False, True])
def test_the_dhbm_learns_a_run_of_mini_batches_in_one_call(monkeypatch, name, watched):
    # with its twin and linear expert too; a watched run that no detector stops as well
    X, y, labeled = _flipping(n=400, flip=400)  # a steady concept
    make = MODELS[name] if watched else lambda: _unwatched(name)
    model, reference = make(), make()
    for m in (model, reference):
        m.learn_arrays(X[:200], y[:200])  # every class known, the buffer empty
    runs, updates = _count_runs(monkeypatch, model)
    predicted = model.test_then_train_arrays(X[200:], y[200:], labeled[200:])
    assert runs == [200] and updates == []  # 50 mini-batches of 4: one kernel call
    assert model.drift_rows == []
    np.testing.assert_array_equal(predicted, _batch_by_batch(reference, X[200:], y[200:],
                                                              labeled[200:], 4))
    _assert_same_model(model, reference, X)


@pytest.mark.parametrize("name", ["dhbm-mf-alone", "dhbm-mf"])
def test_a_run_restarts_where_the_per_batch_path_does(monkeypatch, name):
    X, y, labeled = _flipping()
    model, reference = MODELS[name](), MODELS[name]()
    runs, _ = _count_runs(monkeypatch, model)
    predicted = model.test_then_train_arrays(X, y, labeled)
    expected = _batch_by_batch(reference, X, y, labeled, 4)
    # the control: the flip is seen, by the twin too, and restarts both paths alike
    assert model.drift_rows and model.drift_rows == reference.drift_rows
    for twin, twin_reference in [(model._twin, reference._twin)] * (name == "dhbm-mf"):
        assert twin.drift_rows and twin.drift_rows == twin_reference.drift_rows
    assert model._labels_before_change == reference._labels_before_change > 0
    np.testing.assert_array_equal(predicted, expected)
    _assert_same_model(model, reference, X)
    # runs of `SPAN` mini-batches; the one holding the alarm learnt again up to the restart
    assert max(runs) == 4 * fused_run.SPAN and sum(runs) > len(X)


@pytest.mark.parametrize("name", ["dhbm-mf-alone", "dhbm-mf"])
def test_a_run_restarts_where_the_per_batch_path_does_when_the_inputs_narrow(name):
    X, y, labeled = _flipping(n=2400, flip=2400)  # a steady concept
    X[1400:, 1] = 0.5 + X[1400:, 1] / 20  # a scaler in front stretched its range
    model, reference = MODELS[name](), MODELS[name]()
    predicted = model.test_then_train_arrays(X, y, labeled)
    expected = _batch_by_batch(reference, X, y, labeled, 4)
    assert model.input_change_rows == reference.input_change_rows == [1480]
    assert model._labels_before_change == reference._labels_before_change > 0
    np.testing.assert_array_equal(predicted, expected)
    _assert_same_model(model, reference, X)


def test_a_run_learnt_again_counts_its_labels_once(monkeypatch):
    # a run whose twin alone must restart is rolled back and learnt again up to the restart:
    # the mixture, which does not restart, counts every labeled row once, as it scored it
    X, y, labeled = _flipping(n=1200, flip=1200)
    model = MODELS["dhbm-mf"]()
    model.learn_arrays(X[:200], y[:200])
    hear, heard = fused_run._hear, []

    def twin_restarts_once(model, *args):
        heard.append(hear(model, *args))
        return (30, [model._twin]) if len(heard) == 1 else None

    monkeypatch.setattr(fused_run, "_hear", twin_restarts_once)
    model.test_then_train_arrays(X[200:], y[200:], labeled[200:])
    assert len(heard) > 1 and model.drift_rows == []  # the model itself never restarted
    # every labeled row but each class's first, which no expert could have predicted
    assert model._mixture.evidence[0] == model._mixture.n_scored == 198 + labeled[200:].sum()


@pytest.mark.parametrize("name", ["dhbm-mf-alone", "dhbm-mf"])
def test_a_new_class_ends_the_run_before_its_mini_batch(monkeypatch, name):
    X, y, labeled = _block()
    y[49], labeled[49] = "e", True  # unseen: its batch (rows 48-51) adds the class first
    model, reference = _unwatched(name), _unwatched(name)
    for m in (model, reference):
        m.learn_arrays(X[:88], np.where(y[:88] == "e", "a", y[:88]))
    runs, updates = _count_runs(monkeypatch, model)
    predicted = model.test_then_train_arrays(X[:88], y[:88], labeled[:88])
    assert runs == [48, 36] and len(updates) == 1  # the new class's mini-batch: buffered
    assert model.classes_[-1] == "e"
    np.testing.assert_array_equal(predicted, _batch_by_batch(reference, X[:88], y[:88],
                                                              labeled[:88], 4))
    _assert_same_model(model, reference, X)


@pytest.mark.parametrize(
    "X, y, labeled, message",
    [
        (np.full((4, 5), np.nan), ["a"] * 4, None, "non-finite"),
        (np.zeros((4, 3)), ["a"] * 4, None, "columns"),
        (np.zeros((4, 5)), ["a"] * 3, None, "Invalid y: shape"),
        (np.zeros((4, 5)), ["a"] * 4, [True] * 3, "Invalid labeled: shape"),
    ],
)
def test_bad_input_is_rejected_before_any_state_changes(X, y, labeled, message):
    Xg, yg, lg = _block()
    model, untouched = MODELS["dhbm-mf"](), MODELS["dhbm-mf"]()
    for m in (model, untouched):
        m.learn_arrays(Xg[:10], yg[:10], lg[:10])
    with pytest.raises(ValueError, match=message):
        model.test_then_train_arrays(X, np.array(y, dtype=object), labeled)
    _assert_same_model(model, untouched, Xg)


def test_invalid_batch_size():
    X, y, labeled = _block()
    with pytest.raises(ValueError, match="batch_size"):
        MODELS["dhbm-mf"]().test_then_train_arrays(X, y, labeled, batch_size=0)


class _WithoutBlocks:
    """A model seen without `test_then_train_arrays`: prequential's mini-batch loop."""

    def __init__(self, model):
        self._model = model

    def __getattr__(self, name):
        if name == "test_then_train_arrays":
            raise AttributeError(name)
        return getattr(self._model, name)


@pytest.mark.parametrize("name", ["dhbm-mf", "dhda"])
def test_prequential_numbers_do_not_depend_on_the_loop(name):
    def dataset():
        return LabelMask(LED(seed=3), label_ratio=0.2, batch_size=20, seed=4)

    fused = prequential(dataset(), MODELS[name](), 3000, batch_size=4, step=500)
    looped = prequential(dataset(), _WithoutBlocks(MODELS[name]()), 3000, batch_size=4, step=500)
    assert fused.path == looped.path == "arrays"
    np.testing.assert_array_equal(fused.faded_error, looped.faded_error)
    np.testing.assert_array_equal(fused.error, looped.error)
