"""The input watch (`change.InputWatch`): a feature that narrows to a fraction of its spread
restarts the model's learning, with its linear expert's standardization; when the other
features held, the label memory keeps its rows, mapped onto the new scale; streams whose
inputs keep their spread, whatever their shape, raise nothing."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from river import drift

from river_dhbm import DHBM, DHDA, change

BATCH = 20


def _alarms(X: np.ndarray, watch=None) -> list[int]:
    """The rows at which `watch` (a fresh one by default) fed `X` mini-batch by mini-batch
    alarms."""
    watch, rows = watch or change.InputWatch(), []
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


@pytest.mark.parametrize("rows", [200, 199, 64])
def test_the_span_kernel_is_numpys_mean_spread_and_median_rule(rows):
    # every feature's mean and log spread to round-off, and the rows differing from the median
    # exactly where they decide (a tenth of the rows): rare features, one-hot columns, a
    # constant, ties at the median, a majority value that is neither the least nor the largest
    from river_dhbm._kernels import inputs

    rng = np.random.default_rng(rows)
    block = np.column_stack([
        _mixed_features(rows, rows), np.eye(8)[rng.integers(0, 8, rows)], np.full(rows, 0.5),
        np.where(rng.random(rows) < 0.93, 0.5, rng.choice([0.0, 1.0], rows)),
        np.where(rng.random(rows) < 0.88, 0.5, rng.choice([0.0, 1.0], rows)),
        np.repeat([0.0, 1.0], [rows // 2, rows - rows // 2])])
    d = block.shape[1]
    mean, spread, varying = np.empty(d), np.empty(d), np.empty(d, dtype=np.int64)
    inputs.span_stats(np.vstack([block, np.ones((5, d))]), rows, change.TINY_SPREAD, mean,
                      spread, varying)  # the rows beyond `rows` are not the span's
    np.testing.assert_allclose(mean, block.mean(axis=0), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(spread, np.log(block.std(axis=0) + change.TINY_SPREAD),
                               rtol=1e-10)
    differ = (block != np.median(block, axis=0)).sum(axis=0)
    share = change.VARYING_SHARE * rows
    np.testing.assert_array_equal(varying < share, differ < share)
    majority = (block == np.median(block, axis=0)).sum(axis=0) > rows / 2
    np.testing.assert_array_equal(varying[majority], differ[majority])


@pytest.mark.parametrize("seed", range(10))
def test_inputs_that_keep_their_spread_raise_nothing(seed):
    assert _alarms(_mixed_features(60_000, seed)) == []


@pytest.mark.parametrize("column", [0, 1, 2, 3, 4])
def test_a_feature_that_narrows_alarms_after_two_spans(column):
    X = _mixed_features(20_000, 5)
    X[8000:, column] = 0.9 + X[8000:, column] / 20  # a scaler in front stretched its range
    # once: the new reference starts from the narrow rows; a rare feature (1 row in 50 lit)
    # varies in too few rows of a span to tell its spread
    alarms = [8000 + change.NARROW_SPANS * change.CHECK_EVERY * BATCH] if column < 4 else []
    assert _alarms(X) == alarms


@pytest.mark.parametrize("narrow_rows, alarms", [(200, []), (400, [8400])])
def test_one_narrow_span_is_luck_two_are_a_change(narrow_rows, alarms):
    X = _mixed_features(20_000, 6)
    X[8000 : 8000 + narrow_rows, 1] /= 20  # a reading narrows for a span, or two
    assert _alarms(X) == alarms


@pytest.mark.parametrize("seed", range(3))
def test_a_many_valued_category_one_hot_raises_nothing(seed):
    # each of its 40 columns varies in a few rows of a span, or none: that is no scale
    rng = np.random.default_rng(seed)
    one_hot = np.eye(40)[rng.integers(0, 40, 60_000)]
    assert _alarms(np.column_stack([_mixed_features(60_000, seed), one_hot])) == []
    X = _mixed_features(20_000, seed)
    X[8000:, 1] = 0.0  # nor does a reading that goes exactly flat
    assert _alarms(X) == []


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


@pytest.mark.parametrize("cls", [DHBM, DHDA], ids=lambda c: c.__name__)
def test_a_moved_scale_keeps_the_stored_labels_mapped_onto_it(cls, monkeypatch):
    X, y = _squeezed(8000, 4000, seed=1)
    labeled = np.random.default_rng(1).random(len(X)) < 0.01  # 40 labels before the squeeze
    model = cls(seed=1)
    predicted = model.test_then_train_arrays(X, y, labeled)
    assert model.input_change_rows == [4400]
    memory = model._memory
    old = memory.rows[: memory.count] <= 4000  # stored before the narrow spans
    assert old.sum() > 20
    # their squeezed feature now has the squeezed rows' mean and spread, the others as they came
    np.testing.assert_allclose(memory.X[: memory.count][old, 0].mean(), 0.925, atol=0.006)
    assert memory.X[: memory.count][old, 0].std() == pytest.approx(0.0144, rel=0.25)
    assert set(memory.X[: memory.count][old, 1]) <= set(X[:4000, 1])
    # the control: the same model forgetting them, as after a change of the concept
    monkeypatch.setattr(change.InputWatch, "_scale_map", lambda *args: None)
    forgetful = cls(seed=1)
    forgotten = forgetful.test_then_train_arrays(X, y, labeled)
    assert forgetful.input_change_rows == [4400]
    assert (forgetful._memory.rows[: forgetful._memory.count] > 4000).all()
    after = slice(4400, 5400)

    def accuracy(m, p):
        return float((np.array(m.classes_)[p[after]] == y[after]).mean())

    # forgetting costs less since the network earns its prior with the labels (the linear
    # expert learns the few new ones first), but it still costs
    assert accuracy(model, predicted) > 0.95 and accuracy(forgetful, forgotten) < 0.93


@pytest.mark.parametrize("widening, shift, mapped", [(1, 0, True), (8, 0, False), (1, 1, False)])
def test_when_another_feature_moves_too_the_stored_labels_go(widening, shift, mapped):
    X, y = _squeezed(8000, 4000, seed=1)
    # the columns moved: as one narrows, another widens or moves away
    X[4000:, 2] = 0.5 + shift + (X[4000:, 2] - 0.5) * widening
    watch = change.InputWatch()
    assert _alarms(X, watch) == [4400]
    assert (watch.scale_map is not None) == mapped
    model = DHBM(seed=1)
    labeled = np.random.default_rng(1).random(5000) < 0.01
    model.test_then_train_arrays(X[:5000], y[:5000], labeled)  # the memory just after
    assert model.input_change_rows == [4400] and model.drift_rows == []
    assert (model._memory.rows[: model._memory.count] <= 4000).any() == mapped


def test_the_span_before_the_narrow_ones_is_forgotten_the_older_rows_mapped():
    # mini-batches of 32: the squeeze at row 4000 falls inside a span of 320 rows
    X, y = _squeezed(8000, 4000, seed=1)
    model = DHBM(seed=1, batch_size=32)
    labeled = np.random.default_rng(1).random(5000) < 0.02
    model.test_then_train_arrays(X[:5000], y[:5000], labeled)
    assert model.input_change_rows == [4800]
    memory = model._memory
    rows, values = memory.rows[: memory.count], memory.X[: memory.count, 0]
    assert not ((rows > 3840) & (rows <= 4160)).any()  # squeezed or not: unsure, forgotten
    assert (rows <= 3840).sum() > 20  # mapped onto the squeezed scale, each of them
    assert (np.abs(values[rows <= 3840] - 0.925) < 0.1).all()
    assert (values[rows > 4160] >= 0.9).all()  # came squeezed, left as they came


def test_a_rare_feature_silent_through_the_alarm_keeps_its_stored_values():
    X, _ = _squeezed(8000, 4000, seed=2)
    rare = (np.random.default_rng(2).random(8000) < 0.05).astype(float)
    rare[4000:] = 0.0  # silent from the squeeze on: no spread to map it onto
    watch = change.InputWatch()
    assert _alarms(np.column_stack([X, rare]), watch) == [4400]
    scale, shift = watch.scale_map
    assert scale[0] < 0.1 and (scale[1:] == 1).all() and (shift[1:] == 0).all()


def test_a_stream_with_nothing_left_to_hold_forgets():
    X, _ = _squeezed(8000, 4000, seed=2)
    watch = change.InputWatch()
    assert _alarms(X[:, :1], watch) == [4400] and watch.scale_map is None


def test_a_watch_pickled_before_the_means_were_kept_starts_its_reference_again():
    X, _ = _squeezed(8000, 4000, seed=2)
    watch = change.InputWatch()
    _alarms(X[:3000], watch)
    del watch.__dict__["reference_mean"]  # as an older model's watch comes back
    assert _alarms(X[3000:3200], watch) == [] and watch.reference_rows == 200  # a new one
    rows = [r + 3200 for r in _alarms(X[3200:], watch)]
    assert rows == [4400] and watch.scale_map is not None


def test_the_label_memory_keeps_the_rows_asked_for_in_order_across_the_ring():
    from river_dhbm.scarce_labels import LabelMemory

    memory = LabelMemory(4, 1)
    memory.X[:, 0], memory.y[:], memory.rows[:] = [5, 6, 3, 4], [1, 0, 1, 0], [50, 60, 30, 40]
    memory.state[:] = (4, 2)  # full, the oldest at slot 2
    memory.keep(memory.rows != 40)
    assert memory.count == 3 and list(memory.state) == [3, 3]
    assert list(memory.rows[:3]) == [30, 50, 60] and list(memory.y[:3]) == [1, 1, 0]


def test_a_restart_the_errors_asked_for_forgets_whatever_the_inputs_did():
    X, _ = _squeezed(6000, 3000, seed=3)
    watch = change.ChangeWatch(None)
    for b in range(len(X) // BATCH):
        if (b + 1) * BATCH == 3300:
            watch.pending = True  # the errors rose, the restart waits for the next check
        if watch.narrowed(X[b * BATCH : (b + 1) * BATCH], b + 1):
            break
    assert watch.input_alarms == [3400] and watch.inputs_moved and watch.memory_map is None


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
