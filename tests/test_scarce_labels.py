"""The label memory and the confident proxy labels (`river_dhbm.scarce_labels`), and the
`learn_unlabeled` ablation of every model."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from river_dhbm import DHBM, DHDA, HSDA, SBEN, PseudoLabelMLP, scarce_labels
from river_dhbm._kernels import dhbm as dhbm_kernels
from river_dhbm.scarce_labels import (
    LabelMemory,
    confident_labels,
    memory_push,
    memory_replay,
)
from test_test_then_train import _assert_same_model, _batch_by_batch

MODELS = {
    "dhbm-mf": lambda **kw: DHBM(hidden_sizes=(6,), batch_size=5, seed=1, **kw),
    "dhbm-sap": lambda **kw: DHBM(hidden_sizes=(6,), estimator="sap", n_particles=2,
                                  batch_size=5, seed=1, **kw),
    "sben": lambda **kw: SBEN(hidden_sizes=(6, 4), batch_size=5, seed=1, **kw),
    "dhda": lambda **kw: DHDA(hidden_sizes=(6,), batch_size=5, seed=1, **kw),
    "hsda": lambda **kw: HSDA(hidden_sizes=(6, 4), batch_size=5, seed=1, **kw),
    "pl-mlp": lambda **kw: PseudoLabelMLP(hidden_sizes=(6,), batch_size=5, seed=1, **kw),
}


def _stream(n, d=4, ratio=0.3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = np.clip(0.2 + 0.3 * np.eye(3, d)[y] + 0.2 * rng.random((n, d)), 0, 1)
    return X, y, rng.random(n) < ratio


def test_memory_keeps_the_latest_labeled_rows_as_a_ring():
    memory = LabelMemory(3, 2)
    X = np.arange(10.0).reshape(5, 2)
    memory_push(memory.X, memory.y, memory.rows, memory.state, X, np.array([0, -1, 1, 2, 1]), 5,
                20)
    assert memory.count == 3
    # four labeled rows went into three slots: the first was overwritten by the last
    assert sorted(memory.y.tolist()) == [1, 1, 2]
    assert sorted(map(tuple, memory.X.tolist())) == [(4.0, 5.0), (6.0, 7.0), (8.0, 9.0)]


def test_replay_appends_drawn_rows_after_the_batch():
    memory = LabelMemory(4, 2)
    memory_push(memory.X, memory.y, memory.rows, memory.state, np.array([[1.0, 1], [2, 2]]),
                np.array([5, 6]), 2, 20)
    batch, codes = np.zeros((3, 2)), np.array([-1, 0, -1])
    out_X, out_codes = np.empty((5, 2)), np.empty(5, dtype=np.int64)
    m = memory_replay(memory.X, memory.y, memory.rows, memory.state, batch, codes, 3,
                      np.array([0.9, 0.1]), out_X, out_codes, 40, 100)
    assert m == 5
    np.testing.assert_array_equal(out_codes, [-1, 0, -1, 6, 5])  # int(u * 2): rows 1, 0
    np.testing.assert_array_equal(out_X[3:], [[2, 2], [1, 1]])
    empty = LabelMemory(4, 2)
    assert memory_replay(empty.X, empty.y, empty.rows, empty.state, batch, codes, 3,
                         np.array([0.5, 0.5]), out_X, out_codes, 40, 100) == 3


def _push(memory, labels, now):
    """Store one row per label (its features: the label twice) at stream row `now`."""
    labels = np.array(labels)
    X = np.repeat(labels[:, None], 2, axis=1).astype(float)
    memory_push(memory.X, memory.y, memory.rows, memory.state, X, labels, len(labels), now)


def _replayed(memory, u, now, horizon):
    out_X, out_codes = np.empty((len(u), 2)), np.empty(len(u), dtype=np.int64)
    m = memory_replay(memory.X, memory.y, memory.rows, memory.state, np.zeros((0, 2)),
                      np.zeros(0, dtype=np.int64), 0, np.asarray(u, float), out_X, out_codes,
                      now, horizon)
    return out_codes[:m].tolist()


def test_memory_forgets_rows_older_than_its_horizon_in_stream_rows():
    """The memory's reach is bounded in stream rows, not only in labels: rows that came
    `horizon` rows or more before now leave before the draw, the newer ones stay."""
    memory = LabelMemory(10, 2)
    _push(memory, [1, 2], 100)
    _push(memory, [3], 200)
    _push(memory, [4, 5], 300)
    assert _replayed(memory, np.linspace(0, 0.99, 20), 299, 200) == [1] * 4 + [2] * 4 + [
        3] * 4 + [4] * 4 + [5] * 4
    # at row 300 the rows of row 100 are 200 rows old: they leave
    assert sorted(set(_replayed(memory, np.linspace(0, 0.99, 30), 300, 200))) == [3, 4, 5]
    assert memory.count == 3
    assert _replayed(memory, [0.5], 1000, 200) == [] and memory.count == 0


def test_an_expired_ring_draws_from_its_oldest_live_row_across_the_wrap():
    memory = LabelMemory(4, 2)
    _push(memory, [1, 2, 3], 10)
    _push(memory, [4, 5], 20)  # wraps: slot 0 now holds 5, slots 1-3 hold 2, 3, 4
    assert memory.count == 4
    # the rows of row 10 expire; those of row 20 (4 in slot 3, 5 in slot 0) remain
    assert _replayed(memory, [0.0, 0.6], 30, 15) == [4, 5]
    _push(memory, [6], 30)
    assert _replayed(memory, [0.0, 0.4, 0.9], 31, 15) == [4, 5, 6]


def test_a_memory_within_its_horizon_replays_as_before():
    """A full ring whose rows never expire draws row `int(u * size)` by slot, as the memory
    did before it had a horizon (today's models replay the same rows)."""
    memory = LabelMemory(3, 2)
    _push(memory, [1, 2, 3, 4], 10)  # slot 0 holds 4
    assert _replayed(memory, [0.0, 0.5, 0.9], 11, 100) == [4, 2, 3]


def test_confident_labels_only_label_unlabeled_rows_over_the_threshold():
    codes = np.array([-1, -1, 2, -1])
    P = np.array([[0.95, 0.05, 0], [0.6, 0.4, 0], [0.99, 0, 0.01], [0, 0.1, 0.9]])
    assert confident_labels(codes, P, 4, 0.9) == 2
    np.testing.assert_array_equal(codes, [0, -1, 2, 2])


@pytest.mark.parametrize("name", MODELS)
def test_learn_unlabeled_false_ignores_what_the_unlabeled_rows_hold(name):
    """The ablation: two streams with the same labeled rows and different unlabeled ones
    give the same model, while the model that learns from unlabeled rows tells them apart."""
    X, y, labeled = _stream(400)
    other = X.copy()
    other[~labeled] = np.random.default_rng(9).random(((~labeled).sum(), X.shape[1]))
    thetas = {}
    for flag in (False, True):
        a, b = MODELS[name](learn_unlabeled=flag), MODELS[name](learn_unlabeled=flag)
        a.learn_arrays(X, y, labeled)
        b.learn_arrays(other, y, labeled)
        thetas[flag] = (a._theta, b._theta)
        assert a.n_updates == b.n_updates == 80
    np.testing.assert_array_equal(*thetas[False])
    assert not np.array_equal(*thetas[True])


@pytest.mark.parametrize("name", MODELS)
def test_replay_adds_memory_rows_to_each_update(name):
    """With `replay`, labeled rows keep teaching after their own update: the same stream
    learnt with and without replay gives different models, and the memory holds the latest
    labeled rows."""
    X, y, labeled = _stream(200)
    with_replay, without = MODELS[name](replay=3, memory_size=7), MODELS[name](replay=0)
    with_replay.learn_arrays(X, y, labeled)
    without.learn_arrays(X, y, labeled)
    assert not np.allclose(with_replay._theta, without._theta)
    memory = with_replay._memory
    assert memory.count == 7
    latest = np.nonzero(labeled)[0][-7:]
    assert sorted(map(tuple, memory.X.tolist())) == sorted(map(tuple, X[latest].tolist()))


def test_proxy_labels_start_after_the_warm_up():
    model = DHBM(hidden_sizes=(6,), batch_size=5, seed=1)
    assert scarce_labels.proxy_confidence(model) > 1.0
    model.n_labeled_seen = scarce_labels.PSEUDO_LABEL_WARM_UP
    assert scarce_labels.proxy_confidence(model) == 0.9
    model.learn_unlabeled = False
    assert scarce_labels.proxy_confidence(model) > 1.0
    assert scarce_labels.proxy_confidence(_seen(DHBM(confidence=None))) > 1.0


def _seen(model):
    model.n_labeled_seen = 10 * scarce_labels.PSEUDO_LABEL_WARM_UP
    return model


@pytest.mark.parametrize("cls", [DHBM, SBEN, DHDA, HSDA, PseudoLabelMLP])
def test_paper_settings_keep_neither_memory_nor_proxy_labels(cls):
    """The paper preset stays literal: no label memory, no confident proxy labels."""
    model = cls.paper(hidden_sizes=(4,))
    assert model.replay == 0
    assert getattr(model, "confidence", None) is None


def test_dhbm_kernel_proxy_labels_are_labeled_rows():
    """`dhbm_update` with a confidence equals the update without one on the batch whose
    confident unlabeled rows carry their predicted class."""
    X, y, labeled = _stream(300, ratio=0.5)
    model = DHBM(hidden_sizes=(6,), batch_size=20, replay=0, seed=1)
    model.learn_arrays(X[:200], y[:200], labeled[:200])
    batch, codes = X[200:220], np.where(labeled[200:220], y[200:220], -1)
    P = model._proba(batch)  # the network's own, which its proxy labels come from
    threshold = float(np.median(P.max(axis=1)[codes < 0]))  # some rows pass, some do not
    expected_codes = codes.copy()
    assert 0 < confident_labels(expected_codes, P, 20, threshold) < (codes < 0).sum()

    def step(confidence, y_codes):
        m = copy.deepcopy(model)
        dhbm_kernels.UPDATE_KERNELS[m._estimator](
            batch, y_codes.copy(), m._net(), (m._grad, m._moments, m.n_updates + 1),
            (0, 0.003, 1.0, 0.1, confidence, 1.0, False), m._empty,
            (m._part_x, m._part_h, m._part_y, m._empty, m._empty, m._empty), m._work_arrays(),
            1, len(batch), m._work["first_P"][:0],
        )
        return m._theta

    none = scarce_labels.NO_PROXY_LABELS
    np.testing.assert_array_equal(step(threshold, codes), step(none, expected_codes))
    assert not np.array_equal(step(threshold, codes), step(none, codes))


@pytest.mark.parametrize("ratio", [0.1, 0.02])
def test_dhbm_one_call_run_replays_and_proxy_labels_as_the_batch_path(ratio):
    """The fused run keeps its own copy of the memory logic: over a stream long enough for
    the proxy labels to start, it gives exactly the per-batch model."""
    X, y, labeled = _stream(4000, ratio=ratio, seed=3)
    labeled[:5] = True  # every class known from the first batch on: whole runs are fused
    y[:3] = [0, 1, 2]
    # the network alone: with other experts the run goes mini-batch by mini-batch, not fused
    alone = dict(safe_unlabeled=False, linear_expert=False)
    fused = DHBM(hidden_sizes=(6,), batch_size=5, confidence=0.6, seed=1, **alone)
    reference = DHBM(hidden_sizes=(6,), batch_size=5, confidence=0.6, seed=1, **alone)
    predicted = fused.test_then_train_arrays(X, y, labeled)
    expected = _batch_by_batch(reference, X, y, labeled, 5)
    assert fused.n_labeled_seen > scarce_labels.PSEUDO_LABEL_WARM_UP
    np.testing.assert_array_equal(predicted, expected)
    _assert_same_model(fused, reference, X[:50])
    np.testing.assert_array_equal(fused._memory.X, reference._memory.X)


@pytest.mark.parametrize("params, match", [
    ({"learn_unlabeled": 1}, r"Invalid learn_unlabeled \(1\)"),
    ({"replay": -1}, r"Invalid replay \(-1\)"),
    ({"memory_size": 0}, r"Invalid memory_size \(0\)"),
    ({"confidence": 0.0}, r"Invalid confidence \(0.0\)"),
    ({"confidence": 1.5}, r"Invalid confidence \(1.5\)"),
])
def test_bad_parameters_name_the_value(params, match):
    with pytest.raises(ValueError, match=match):
        DHBM(**params)


@pytest.mark.parametrize("hidden_sizes", [(6,), (6, 5), (6, 5, 4, 3)])
def test_dhbm_adam_step_is_divided_by_the_depth(hidden_sizes):
    """Deep stacks take Adam steps of `learning_rate / depth`: the model's update equals the
    kernel's at that step (SGD, the paper's optimiser, keeps its step)."""
    X, y, labeled = _stream(40, ratio=1.0)
    model = DHBM(hidden_sizes=hidden_sizes, learning_rate=0.02, replay=0, steps=1, mf_steps=0,
                 beta=0.1, discriminative_weight=1.0, batch_size=20, seed=1)
    model.learn_arrays(X[:20], y[:20])
    before = copy.deepcopy(model)
    model.learn_arrays(X[20:], y[20:])
    m = before
    codes = np.array([m._class_index[v] for v in y[20:]])
    dhbm_kernels.UPDATE_KERNELS[m._estimator](
        X[20:], codes, m._net(), (m._grad, m._moments, 2),
        (0, 0.02 / len(hidden_sizes), 1.0, 0.1, scarce_labels.NO_PROXY_LABELS, 1.0, False),
        m._empty, (m._part_x, m._part_h, m._part_y, m._empty, m._empty, m._empty),
        m._work_arrays(), 1, len(X) - 20, m._work["first_P"][:0],
    )
    np.testing.assert_array_equal(model._theta, m._theta)
    assert DHBM(hidden_sizes=hidden_sizes, optimizer="sgd", learning_rate=0.02)._step_size() == 0.02
