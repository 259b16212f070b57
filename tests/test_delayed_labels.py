"""Delayed labels and the labeled warm-up (`LabelMask(delay, warm_up)`, `prequential`)."""

from __future__ import annotations

import numpy as np
import pytest
from river import base, evaluate, metrics, naive_bayes

import streams
from evaluation import prequential
from evaluation.delayed import DelayedLabels
from streams import LabeledOnly, LabelMask


class IndexStream:
    """Rows whose only feature is their position; labels 0, 1, 2, 0, ..."""

    n_features, n_classes, task = 1, 3, "Multi-class classification"

    def __init__(self, n=4000):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield {0: float(i)}, i % 3

    def iter_arrays(self, chunk_size):
        for i in range(0, self.n, chunk_size):
            index = np.arange(i, min(i + chunk_size, self.n))
            yield index[:, None].astype(float), index % 3


class Recorder(base.Classifier):
    """Logs what the evaluator asks: ("predict", row) and ("learn", row, labeled)."""

    _semi_supervised = True

    def __init__(self, arrays=True):
        self.arrays = arrays
        self.log = []

    @property
    def classes_(self):
        return [0, 1, 2]

    def learn_one(self, x, y=None, labeled=True, **kwargs):
        if labeled:  # a kept label is the true one
            assert y == int(x[0]) % 3
        self.log.append(("learn", int(x[0]), bool(labeled)))

    def predict_one(self, x, **kwargs):
        self.log.append(("predict", int(x[0])))
        return 0

    def predict_proba_one(self, x, **kwargs):
        return {0: 1.0}

    def __getattr__(self, name):  # the array path only when asked for
        if name in ("learn_arrays", "predict_proba_arrays") and self.__dict__.get("arrays"):
            return getattr(self, f"_{name}")
        raise AttributeError(name)

    def _learn_arrays(self, X, y, labeled):
        for row, label, kept in zip(X[:, 0].tolist(), y.tolist(), labeled.tolist()):
            self.learn_one({0: row}, label, labeled=kept)

    def _predict_proba_arrays(self, X):
        self.log.extend(("predict", int(v)) for v in X[:, 0])
        return np.ones((len(X), 1))


def capymoa_order(kept, delay, warm_up=0):
    """capymoa's `prequential_ssl_evaluation` (batch of one): before row j is predicted the
    labels due at j are learnt; a kept row is learnt unlabeled at once when delayed."""
    log, due = [], {}
    for j, keep in enumerate(kept):
        if j - delay in due:
            log.append(("learn", due.pop(j - delay), True))
        log.append(("predict", j))
        late = keep and j >= warm_up and delay > 0
        log.append(("learn", j, bool(keep and not late)))
        if late:
            due[j] = j
    return log


@pytest.mark.parametrize("delay, warm_up", [(1, 0), (5, 0), (100, 0), (30, 250)])
@pytest.mark.parametrize("arrays", [True, False])
def test_batch_of_one_is_capymoas_protocol(delay, warm_up, arrays):
    mask = LabelMask(IndexStream(), label_ratio=0.2, seed=3, delay=delay, warm_up=warm_up)
    kept = next(mask.iter_arrays(3000))[2]
    model = Recorder(arrays)
    result = prequential(mask, model, 3000, batch_size=1)
    assert result.path == ("arrays" if arrays else "dicts")
    expected = capymoa_order(kept[:3000], delay, warm_up)
    last = 3000 - delay  # its label comes after the last row (capymoa: before row 3000)
    if kept[last] and last >= warm_up:
        expected.append(("learn", last, True))
    assert model.log == expected


@pytest.mark.parametrize("batch_size", [20, 7])
def test_delayed_labels_reach_the_learner_exactly_delay_rows_later(batch_size):
    delay = 50
    mask = LabelMask(IndexStream(), label_ratio=0.1, seed=5, delay=delay)
    kept = next(mask.iter_arrays(3000))[2]
    dicts, arrays = Recorder(arrays=False), Recorder()
    prequential(mask, dicts, 3000, batch_size=batch_size)
    prequential(mask, arrays, 3000, batch_size=batch_size)
    assert dicts.log == arrays.log
    learnt = [e for e in arrays.log if e[0] == "learn"]
    for i in np.flatnonzero(kept)[:40]:
        place = learnt.index(("learn", i, False))  # shown unlabeled in its place ...
        late = learnt.index(("learn", i, True))  # ... and labeled right after row i + delay - 1
        assert learnt[late - 1][1] == i + delay - 1 and late > place
    assert sum(e[2] for e in learnt) == kept[: 3000 - delay + 1].sum()


class DictOnlyStream(IndexStream):
    """The same rows without an array path, as a River dataset has none."""

    iter_arrays = None


@pytest.mark.parametrize("batch_size", [1, 20])
def test_a_dataset_without_arrays_keeps_its_delayed_labels(batch_size):
    # the mask's own `late` lists carry the labels: the same log as the array path's
    delay = 30
    dicts_only = LabelMask(DictOnlyStream(), label_ratio=0.1, seed=5, delay=delay, warm_up=100)
    with_arrays = LabelMask(IndexStream(), label_ratio=0.1, seed=5, delay=delay, warm_up=100)
    a, b = Recorder(arrays=False), Recorder(arrays=False)
    prequential(dicts_only, a, 2000, batch_size=batch_size)
    prequential(with_arrays, b, 2000, batch_size=batch_size)
    assert a.log == b.log and sum(e[0] == "learn" and e[2] for e in a.log) > 150


def test_warm_up_keeps_the_first_labels():
    plain = LabelMask(IndexStream(), label_ratio=0.05, seed=9)
    warm = LabelMask(IndexStream(), label_ratio=0.05, seed=9, warm_up=5000)
    stream = IndexStream(12_000)
    plain.dataset = warm.dataset = stream
    a = next(plain.iter_arrays(12_000))[2]
    b = np.concatenate([blk[2] for blk in warm.iter_arrays(777)])
    assert b[:5000].all()
    np.testing.assert_array_equal(b[5000:], a[5000:])  # the mask after it is unchanged
    flags = [kw["labeled"] for _, _, kw in warm]
    np.testing.assert_array_equal(flags, b)


def test_warm_up_labels_are_not_delayed():
    mask = LabelMask(IndexStream(), label_ratio=0.0, seed=1, delay=10, warm_up=100)
    model = Recorder()
    prequential(mask, model, 3000, batch_size=1)
    labeled = [e[1] for e in model.log if e[0] == "learn" and e[2]]
    assert labeled == list(range(100))


# Curves of the evaluator before delayed labels existed (commit 4afebba), to the last bit.
BEFORE = {
    "dicts": [0.8656214082181007, 0.7734594513826979, 0.7232610536141661, 0.7432630624646702,
              0.6987577220835804, 0.5052688352791326],
    "arrays": [0.5815011358000466, 0.42403504089529365, 0.38518619888086336,
               0.34459275295310315, 0.3283138342484967, 0.34625999775591565],
}


class Centroids(base.Classifier):
    """A deterministic array-path model: nearest centroid of the labeled rows."""

    def __init__(self):
        self._sums, self._counts = np.zeros((10, 24)), np.zeros(10)

    @property
    def classes_(self):
        return list(range(10)) if self._counts.any() else []

    def learn_arrays(self, X, y, labeled):
        np.add.at(self._sums, y[labeled], X[labeled])
        np.add.at(self._counts, y[labeled], 1.0)

    def predict_proba_arrays(self, X):
        centroids = self._sums / np.maximum(self._counts, 1.0)[:, None]
        d = ((X[:, None, :] - centroids[None]) ** 2).sum(axis=2)
        return np.exp(-d)

    def learn_one(self, x, y=None, labeled=True):
        pass

    def predict_proba_one(self, x):
        return {}


def _led_mask(**kwargs):
    led = streams.LEDDrift(seed=1, noise_percentage=10, n_drift_features=4)
    return LabelMask(led, 0.1, batch_size=20, seed=2, **kwargs)


def test_no_delay_no_warm_up_gives_the_old_results_bit_for_bit():
    explicit = prequential(_led_mask(delay=0, warm_up=0), naive_bayes.GaussianNB(), 3000,
                           step=500)
    assert explicit.faded_error.tolist() == BEFORE["dicts"]
    arrays = prequential(_led_mask(delay=0, warm_up=0), Centroids(), 3000, step=500)
    assert arrays.path == "arrays" and arrays.faded_error.tolist() == BEFORE["arrays"]


def test_river_progressive_val_score_runs_the_delayed_protocol():
    """River's loop with `LabeledOnly` and our evaluator (batch of one) learn the same."""
    mask = _led_mask(delay=40)
    ours = naive_bayes.GaussianNB()
    prequential(mask, ours, 2000, batch_size=1)
    river = LabeledOnly(naive_bayes.GaussianNB())
    evaluate.progressive_val_score(mask.take(2000), river, metrics.Accuracy())
    X, _, kept = next(mask.iter_arrays(2000))
    assert river.classifier.class_counts == ours.class_counts
    assert sum(ours.class_counts.values()) == kept[: 2000 - 40 + 1].sum()
    for row in X[:50]:
        x = dict(enumerate(row.tolist()))
        assert river.predict_proba_one(x) == ours.predict_proba_one(x)


def test_schedule_rejects_no_delay_and_mask_rejects_bad_values():
    with pytest.raises(ValueError, match="Invalid delay"):
        DelayedLabels(0)
    for kwargs in ({"delay": -1}, {"warm_up": 1.5}, {"delay": True}):
        with pytest.raises(ValueError, match="Must be an int >= 0"):
            LabelMask(IndexStream(), **kwargs)


def test_our_models_take_late_labels_in_river_progressive_val_score():
    """A DHBM in River's loop learns each delayed label when it comes back: the same model as
    one that learns the evaluator's sequence of events (`DelayedLabels`) row by row."""
    from evaluation.delayed import DelayedLabels
    from river_dhbm import DHBM

    mask = _led_mask(delay=40)
    river = DHBM(hidden_sizes=(6,), seed=1)
    evaluate.progressive_val_score(mask.take(1000), river, metrics.Accuracy())
    X, y, kept = next(mask.iter_arrays(1000))
    rows = [dict(enumerate(row.tolist())) for row in X]
    events = DelayedLabels(delay=40).events(rows, y, kept)
    reference = DHBM(hidden_sizes=(6,), seed=1)
    for x, label, labeled in zip(*events):
        reference.learn_one(x, label if labeled else None)
    assert river.n_labeled_seen == reference.n_labeled_seen > 0
    np.testing.assert_array_equal(river._theta, reference._theta)
