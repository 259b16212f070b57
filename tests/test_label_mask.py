from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from river import checks, evaluate, metrics, naive_bayes, preprocessing
from scipy import stats

from streams.masking import LabelMask, LabeledOnly


class CounterStream:
    """Stand-in stream: instance i is a function of i alone, so every chunking agrees."""

    n_features = 3
    n_classes = 3
    task = "Multi-class classification"

    def iter_arrays(self, chunk_size=1000):
        for start in itertools.count(0, chunk_size):
            i = np.arange(start, start + chunk_size)
            X = np.column_stack([i, i % 7, np.sin(i)]).astype(np.float64)
            yield X, (i * 7 % 3).astype(np.int64)

    def __iter__(self):
        for X, y in self.iter_arrays(997):
            for row, label in zip(X.tolist(), y.tolist()):
                yield dict(enumerate(row)), label


class CounterStreamWithCli(CounterStream):
    def moa_cli(self):
        return "generators.Counter"


def masks(dataset, n):
    return np.array([kw["labeled"] for _, _, kw in itertools.islice(dataset, n)])


def first_blocks(dataset, n, chunk_size):
    """The first n instances of the array path: (X, y, labeled)."""
    parts = []
    for X, y, labeled in dataset.iter_arrays(chunk_size=chunk_size):
        assert labeled.dtype == bool and len(labeled) == len(y) == len(X)
        parts.append((X, y, labeled))
        if sum(len(part[1]) for part in parts) >= n:
            break
    return tuple(np.concatenate(arrays)[:n] for arrays in zip(*parts))


def array_masks(dataset, n, chunk_size):
    return first_blocks(dataset, n, chunk_size)[2]


def batch_ratios(dataset, n_batches):
    k = dataset.batch_size
    mask = array_masks(dataset, n_batches * k, chunk_size=10_000)
    return mask.reshape(n_batches, k).mean(axis=1)


# Validation and forwarding


@pytest.mark.parametrize("label_ratio", [-0.1, 1.1, math.nan, "0.1", None, True])
def test_invalid_label_ratio(label_ratio):
    with pytest.raises(ValueError, match=r"label_ratio \(.*\)\. Valid range is \[0, 1\]"):
        LabelMask(CounterStream(), label_ratio=label_ratio)


@pytest.mark.parametrize("batch_size", [0, -3, 2.5, 20.0, True])
def test_invalid_batch_size(batch_size):
    with pytest.raises(ValueError, match=r"batch_size \(.*\)\. Must be None or an int >= 1"):
        LabelMask(CounterStream(), batch_size=batch_size)


@pytest.mark.parametrize("dataset", [3, None, "rows"])
def test_invalid_dataset(dataset):
    with pytest.raises(ValueError, match="Invalid dataset") as info:
        LabelMask(dataset)
    assert "\n" not in str(info.value)


def test_invalid_seed():
    with pytest.raises(ValueError, match=r"seed \(1.5\)"):
        LabelMask(CounterStream(), seed=1.5)


def test_forwards_dataset_properties():
    mask = LabelMask(CounterStream(), seed=1)
    assert (mask.n_features, mask.n_classes, mask.task) == (3, 3, "Multi-class classification")
    assert not hasattr(mask, "moa_cli")
    assert LabelMask(CounterStreamWithCli(), seed=1).moa_cli() == "generators.Counter"
    assert repr(LabelMask(CounterStream(), 0.2, 20, seed=1)).startswith("LabelMask(dataset=<")
    assert repr(mask).endswith("label_ratio=0.1, batch_size=None, seed=1, delay=0, warm_up=0)")


def test_yields_true_labels_and_features():
    dataset = CounterStream()
    pairs = list(itertools.islice(dataset, 3000))
    triples = list(LabelMask(dataset, label_ratio=0.3, seed=0).take(3000))
    assert [(x, y) for x, y, _ in triples] == pairs
    assert all(set(kw) == {"labeled"} and type(kw["labeled"]) is bool for _, _, kw in triples)


# Ratios


@pytest.mark.parametrize("label_ratio", [0.05, 0.1, 0.5])
def test_per_instance_ratio(label_ratio):
    n = 100_000
    mask = array_masks(LabelMask(CounterStream(), label_ratio, seed=3), n, chunk_size=n)
    tolerance = 4 * math.sqrt(label_ratio * (1 - label_ratio) / n)
    assert abs(mask.mean() - label_ratio) < tolerance


@pytest.mark.parametrize("batch_size", [None, 1, 20])
def test_extreme_ratios(batch_size):
    assert not masks(LabelMask(CounterStream(), 0.0, batch_size, seed=1), 2000).any()
    assert masks(LabelMask(CounterStream(), 1.0, batch_size, seed=1), 2000).all()


def test_batch_count_distribution():
    # k = 20, p = 0.1: n = floor(20 r + u) with 20 r ~ U[0, 4) gives
    # P(n = 0) = P(n = 4) = 1/8 and P(n = 1, 2, 3) = 1/4 each.
    n_batches = 20_000
    ratios = batch_ratios(LabelMask(CounterStream(), 0.1, batch_size=20, seed=5), n_batches)
    counts = np.bincount(np.rint(ratios * 20).astype(int), minlength=5)
    assert len(counts) == 5
    expected = n_batches * np.array([1 / 8, 1 / 4, 1 / 4, 1 / 4, 1 / 8])
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    unlabeled_share = counts[0] / n_batches
    assert abs(unlabeled_share - 1 / 8) < 4 * math.sqrt(1 / 8 * 7 / 8 / n_batches)
    assert ratios.min() == 0.0 and ratios.max() == pytest.approx(0.2)
    assert abs(ratios.mean() - 0.1) < 4 * ratios.std() / math.sqrt(n_batches)


def test_batch_ratio_is_uniform():
    # With k = 1000 the observed ratio is within 1/1000 of the drawn one: KS against U[0, 0.2].
    n_batches = 2000
    ratios = batch_ratios(LabelMask(CounterStream(), 0.1, batch_size=1000, seed=7), n_batches)
    assert stats.kstest(ratios, stats.uniform(0, 0.2).cdf).pvalue > 1e-3
    assert 0.0 <= ratios.min() < 0.002 and 0.198 < ratios.max() <= 0.2
    assert abs(ratios.mean() - 0.1) < 4 * 0.2 / math.sqrt(12 * n_batches)
    # The same test rejects a narrower interval, so it has power.
    assert stats.kstest(ratios, stats.uniform(0, 0.18).cdf).pvalue < 1e-3


def test_unbiased_for_small_batches():
    # Stochastic rounding keeps the mean exact where round(r * k) would not: with k = 3 and
    # p = 0.1, round(3 r) > 0 only when r > 1/6, a mean ratio of 1/18 instead of 0.1.
    n_batches = 100_000
    ratios = batch_ratios(LabelMask(CounterStream(), 0.1, batch_size=3, seed=2), n_batches)
    assert abs(ratios.mean() - 0.1) < 4 * ratios.std() / math.sqrt(n_batches)


def test_ratio_above_one_half_stays_centred():
    dataset = LabelMask(CounterStream(), 0.8, batch_size=100, seed=4)
    assert dataset.ratio_range == pytest.approx((0.6, 1.0))
    ratios = batch_ratios(dataset, 2000)
    assert 0.59 <= ratios.min() < 0.62 and 0.98 < ratios.max() <= 1.0
    assert abs(ratios.mean() - 0.8) < 0.01


# Reproducibility and the two paths


@pytest.mark.parametrize("batch_size", [None, 20])
def test_reproducible(batch_size):
    dataset = LabelMask(CounterStream(), 0.1, batch_size, seed=11)
    first = masks(dataset, 5000)
    assert np.array_equal(first, masks(dataset, 5000))
    assert np.array_equal(first, masks(LabelMask(CounterStream(), 0.1, batch_size, seed=11), 5000))
    other = LabelMask(CounterStream(), 0.1, batch_size, seed=12)
    assert not np.array_equal(first, masks(other, 5000))


def test_unseeded_repeats_per_object_and_differs_between_objects():
    dataset = LabelMask(CounterStream(), 0.5)
    first = masks(dataset, 2000)
    assert np.array_equal(first, masks(dataset, 2000))
    assert not np.array_equal(first, masks(LabelMask(CounterStream(), 0.5), 2000))


def test_negative_seed():
    first = masks(LabelMask(CounterStream(), 0.5, seed=-3), 1000)
    assert np.array_equal(first, masks(LabelMask(CounterStream(), 0.5, seed=-3), 1000))
    assert not np.array_equal(first, masks(LabelMask(CounterStream(), 0.5, seed=3), 1000))


@pytest.mark.parametrize("batch_size", [None, 1, 20, 3000, 5000])
@pytest.mark.parametrize("chunk_size", [1, 7, 1000, 4096, 9000])
def test_array_path_equals_dict_path(batch_size, chunk_size):
    n = 9000 if chunk_size > 1 else 1500
    dataset = LabelMask(CounterStream(), 0.2, batch_size, seed=8)
    triples = list(dataset.take(n))
    X, y, labeled = first_blocks(dataset, n, chunk_size)
    assert np.array_equal(labeled, [kw["labeled"] for _, _, kw in triples])
    assert np.array_equal(y, [label for _, label, _ in triples])
    assert np.array_equal(X, [list(x.values()) for x, _, _ in triples])


# River's progressive validation


class Recorder:
    """A learner that takes the `labeled` keyword and records what it is shown."""

    def __init__(self):
        self.learned = []
        self.n_predictions = 0
        self.counts = {}

    def learn_one(self, x, y=None, labeled=True):
        if labeled:
            self.learned.append((x, y))
            self.counts[y] = self.counts.get(y, 0) + 1

    def predict_one(self, x, **kwargs):
        self.n_predictions += 1
        # Deterministic and dependent on what was learned: majority class, ties to the lowest.
        return max(sorted(self.counts), key=self.counts.get) if self.counts else 0


def make_recorder():
    from river import base

    class RecorderClassifier(Recorder, base.Classifier):
        def __init__(self):
            Recorder.__init__(self)

    return RecorderClassifier()


@pytest.mark.parametrize("batch_size", [None, 20])
def test_progressive_val_score_scores_everything_and_learns_kept_labels(batch_size):
    n = 3000
    dataset = LabelMask(CounterStream(), 0.1, batch_size, seed=9)
    model = make_recorder()
    metric = evaluate.progressive_val_score(dataset.take(n), model, metrics.Accuracy())

    manual_model, manual_metric = make_recorder(), metrics.Accuracy()
    kept = []
    for x, y, kw in dataset.take(n):
        manual_metric.update(y, manual_model.predict_one(x))
        if kw["labeled"]:
            manual_model.learn_one(x, y)
            kept.append((x, y))

    assert model.n_predictions == n
    assert manual_metric.cm.total_weight == n
    assert metric.get() == manual_metric.get()
    assert model.learned == kept
    assert 0 < len(kept) < n / 5


def test_pipeline_routes_labeled_to_final_step():
    n = 2000
    dataset = LabelMask(CounterStream(), 0.1, batch_size=20, seed=10)
    model = preprocessing.StandardScaler() | make_recorder()
    evaluate.progressive_val_score(dataset.take(n), model, metrics.Accuracy())
    scaler, recorder = model.steps.values()
    kept = [y for _, y, kw in dataset.take(n) if kw["labeled"]]
    assert [y for _, y in recorder.learned] == kept
    assert recorder.n_predictions == n
    # The scaler, which has no `labeled` parameter, learned every instance.
    assert scaler.counts[0] == n


def test_plain_river_model_needs_labeled_only():
    # River passes the keyword dict to predict_one/learn_one of any model (also as the last
    # step of a pipeline), so a plain classifier raises; LabeledOnly makes it usable.
    dataset = LabelMask(CounterStream(), 0.1, seed=1)
    with pytest.raises(TypeError, match="labeled"):
        evaluate.progressive_val_score(
            dataset.take(50), naive_bayes.GaussianNB(), metrics.Accuracy()
        )
    with pytest.raises(TypeError, match="labeled"):
        evaluate.progressive_val_score(
            dataset.take(50),
            preprocessing.StandardScaler() | naive_bayes.GaussianNB(),
            metrics.Accuracy(),
        )

    n = 2000
    model = preprocessing.StandardScaler() | LabeledOnly(naive_bayes.GaussianNB())
    evaluate.progressive_val_score(dataset.take(n), model, metrics.Accuracy())
    n_kept = sum(kw["labeled"] for _, _, kw in dataset.take(n))
    assert sum(list(model.steps.values())[-1].classifier.class_counts.values()) == n_kept


def test_labeled_only_passes_river_checks():
    model = LabeledOnly(naive_bayes.GaussianNB())
    for check in checks.yield_checks(model):
        check(model.clone())


# On the project's MOA-exact streams


@pytest.mark.parametrize("batch_size", [None, 20])
def test_led_drift_array_path_equals_dict_path(batch_size):
    import streams

    led = streams.LEDDrift(seed=3, noise_percentage=10, n_drift_features=4)
    dataset = LabelMask(led, 0.1, batch_size, seed=1)
    assert (dataset.n_features, dataset.n_classes) == (24, 10)
    assert dataset.moa_cli() == led.moa_cli()
    n = 5000
    triples = list(dataset.take(n))
    assert [(x, y) for x, y, _ in triples] == list(itertools.islice(led, n))
    for chunk_size in (333, 5000):
        X, y, labeled = first_blocks(dataset, n, chunk_size)
        assert np.array_equal(labeled, [kw["labeled"] for _, _, kw in triples])
        assert np.array_equal(y, [label for _, label, _ in triples])
        assert np.array_equal(X, [list(x.values()) for x, _, _ in triples])


# Any River dataset, any iterable of (x, y) pairs

# River's data sets that ship with River (no download) and some of its generators
BUNDLED = ["Bananas", "ImageSegments", "Phishing", "Shuttle", "SolarFlare", "TrumpApproval",
           "WaterFlow", "ChickWeights", "AirlinePassengers"]


def _river_datasets():
    from river import datasets

    for name in BUNDLED:
        yield name, getattr(datasets, name)()
    yield "SEA", datasets.synth.SEA(seed=1).take(2000)  # an iterator: one pass only
    yield "Agrawal", datasets.synth.Agrawal(seed=1)


@pytest.mark.parametrize("name, dataset", list(_river_datasets()), ids=lambda v: str(v)[:20])
def test_any_river_dataset_takes_the_same_seeded_mask(name, dataset):
    n = 2000
    masked = LabelMask(dataset, label_ratio=0.2, seed=5)
    rows = list(itertools.islice(masked, n))
    assert 0 < len(rows) <= n
    if name != "SEA":  # a River dataset restarts: the same rows, the same mask again
        again = list(itertools.islice(masked, n))
        assert [(x, y, kw) for x, y, kw in again] == rows
        assert [(x, y) for x, y, _ in rows] == list(itertools.islice(dataset, n))
    flags = np.array([kw["labeled"] for _, _, kw in rows])
    # the mask is the seed's alone, whatever the rows: that of any other stream of the seed
    assert (flags == masks(LabelMask(CounterStream(), 0.2, seed=5), len(rows))).all()
    assert abs(flags.mean() - 0.2) < 4 * math.sqrt(0.2 * 0.8 / len(rows)) + 1e-9
    assert not hasattr(masked, "iter_arrays")  # River's datasets have no array path


@pytest.mark.parametrize("name", ["Phishing", "Bananas", "ImageSegments"])
def test_river_loop_runs_on_a_masked_river_dataset(name):
    from river import datasets

    masked = LabelMask(getattr(datasets, name)(), label_ratio=0.1, seed=1)
    model = LabeledOnly(naive_bayes.GaussianNB())
    metric = evaluate.progressive_val_score(masked, model, metrics.Accuracy())
    n = masked.n_samples
    flags = [kw["labeled"] for _, _, kw in masked]
    # every row scored, but those before the first label (River skips a prediction of None)
    assert metric.cm.n_samples == n - flags.index(True) - 1
    assert sum(model.classifier.class_counts.values()) == sum(flags) < 0.2 * n
    assert metric.get() > 0.5  # it learned from the kept labels


def test_a_list_of_pairs_is_a_dataset_and_its_errors_are_one_line():
    pairs = [({"a": float(i)}, i % 2) for i in range(100)]
    masked = LabelMask(pairs, label_ratio=0.5, seed=1)
    assert masked.n_samples == 100 and len(list(masked)) == 100
    with pytest.raises(AttributeError, match="iter_arrays needs a stream") as info:
        masked.iter_arrays(10)
    assert "\n" not in str(info.value)


def test_a_row_that_is_not_a_pair_is_named_in_one_line():
    for rows in ([1, 2], [({"a": 1.0}, 1, 2)]):
        with pytest.raises(ValueError, match=r"^Invalid row 0 of the dataset \(.+\)\. Must be an"):
            list(LabelMask(rows, label_ratio=0.5, seed=1))
    with pytest.raises(ValueError, match=r"Invalid label_ratio \('0.5'\)"):
        LabelMask([], label_ratio="0.5")


def test_labeled_only_takes_a_river_classifier_and_says_so_in_one_line():
    from river import datasets

    with pytest.raises(ValueError, match=r"the class GaussianNB; pass an instance, e\.g\. "
                       r"GaussianNB\(\)\)\. Must be a River classifier"):
        LabeledOnly(naive_bayes.GaussianNB)
    with pytest.raises(ValueError, match=r"^Invalid classifier \(Phishing\)\. Must be a River"):
        LabeledOnly(datasets.Phishing())
