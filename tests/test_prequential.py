from __future__ import annotations

import itertools

import numpy as np
import pytest
from river import base, dummy, evaluate, naive_bayes, preprocessing

from evaluation import PrequentialError, prequential, takes_unlabeled
from evaluation.runs.registry import MODELS


class ToyMasked:
    """A finite label-masked stream with both interfaces of `streams.LabelMask`, same rows."""

    n_features, n_classes = 3, 3

    def __init__(self, n=6000, label_ratio=0.1, seed=0):
        rng = np.random.default_rng(seed)
        self.y = rng.integers(0, 3, n)
        self.X = rng.normal(size=(n, 3)) + 2.0 * np.eye(3)[self.y]
        self.labeled = rng.random(n) < label_ratio

    def __iter__(self):
        for row, y, kept in zip(self.X, self.y, self.labeled):
            yield dict(enumerate(row.tolist())), int(y), {"labeled": bool(kept)}

    def iter_arrays(self, chunk_size):
        for i in range(0, len(self.y), chunk_size):
            s = slice(i, i + chunk_size)
            yield self.X[s], self.y[s], self.labeled[s]


class DictStream(ToyMasked):
    """The same rows without the array path."""

    iter_arrays = None


class Listed:
    """Rows given literally: `(x, y, {"labeled": ...})`."""

    def __init__(self, ys, labeled):
        pairs = enumerate(zip(ys, labeled))
        self.rows = [({0: float(i)}, y, {"labeled": k}) for i, (y, k) in pairs]

    def __iter__(self):
        return iter(self.rows)


class NearestCentroid(base.Classifier):
    """Stand-in for this project's models: buffered mini-batches, array path, self-training.

    Unlabeled rows pull the centroid of their predicted class (so they matter), labeled rows
    the centroid of their class; the update happens once per full mini-batch.
    """

    def __init__(self, batch_size=20):
        self.batch_size = batch_size
        self._classes, self._index = [], {}
        self._sums = np.zeros((0, 3))
        self._counts = np.zeros(0)
        self._X, self._y = [], []

    @property
    def classes_(self):
        return list(self._classes)

    def _proba(self, X):
        centroids = self._sums / np.maximum(self._counts, 1.0)[:, None]
        d = -((X[:, None, :] - centroids[None]) ** 2).sum(axis=2)
        e = np.exp(d - d.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def _push(self, row, label):
        self._X.append(row)
        self._y.append(label)
        if len(self._y) == self.batch_size:
            X = np.array(self._X)
            targets = [-1 if v is None else self._index[v] for v in self._y]
            if self._classes:
                guess = self._proba(X).argmax(axis=1)
                targets = [g if t < 0 else t for t, g in zip(targets, guess)]
            for row_, t in zip(X, targets):
                if t >= 0:
                    self._sums[t] += row_
                    self._counts[t] += 1
            self._X, self._y = [], []

    def _add(self, label):
        if label not in self._index:
            self._index[label] = len(self._classes)
            self._classes.append(label)
            self._sums = np.vstack([self._sums, np.zeros(3)])
            self._counts = np.append(self._counts, 0.0)

    def learn_one(self, x, y=None, labeled=True):
        label = y if labeled else None
        if label is not None:
            self._add(label)
        self._push(np.array([x[0], x[1], x[2]]), label)

    def learn_arrays(self, X, y, labeled):
        for row, v, k in zip(X, y.tolist(), labeled.tolist()):
            self.learn_one(dict(enumerate(row)), v, labeled=k)

    def predict_proba_one(self, x):
        if not self._classes:
            return {}
        p = self._proba(np.array([[x[0], x[1], x[2]]]))[0]
        return dict(zip(self._classes, p.tolist()))

    def predict_proba_arrays(self, X):
        if not self._classes:
            return np.zeros((len(X), 0))
        return self._proba(X)


class DictOnly(base.Wrapper, base.Classifier):
    """Hides the array path of a model (same learner, dict loop)."""

    def __init__(self, model):
        self.model = model

    _semi_supervised = True

    @property
    def _wrapped_model(self):
        return self.model

    def learn_one(self, x, y=None, labeled=True):
        self.model.learn_one(x, y, labeled=labeled)

    def predict_proba_one(self, x):
        return self.model.predict_proba_one(x)


class LabeledOnly(base.Wrapper, base.Classifier):
    """Lets a supervised River model run in `progressive_val_score` on a masked stream: it learns
    the labeled rows only, and a missing prediction becomes a wrong label so River scores it."""

    def __init__(self, model):
        self.model = model

    @property
    def _wrapped_model(self):
        return self.model

    def learn_one(self, x, y, labeled=True):
        if labeled:
            self.model.learn_one(x, y)

    def predict_one(self, x, **kwargs):
        y_pred = self.model.predict_one(x)
        return -1 if y_pred is None else y_pred


def test_hand_computed_example():
    # NoChangeClassifier predicts the last label it learnt (None before any).
    # batch 1: None, None -> 1, 1; learns row 1 (y=1).   batch 2: 1 vs 1, 0 -> 0, 1; learns row 2.
    # batch 3: 1 vs 0, 1 -> 1, 0.  Losses 1 1 0 1 1 0 with alpha = 0.5:
    dataset = Listed([0, 1, 1, 0, 0, 1], [False, True, True, False, True, True])
    result = prequential(dataset, dummy.NoChangeClassifier(), 6, batch_size=2,
                         fading_factor=0.5, step=2)
    assert result.path == "dicts"
    np.testing.assert_array_equal(result.positions, [2, 4, 6])
    np.testing.assert_allclose(result.faded_error, [1.0, 1.375 / 1.875, 0.84375 / 1.96875])
    np.testing.assert_allclose(result.error, [1.0, 3 / 4, 4 / 6])
    assert result.final == pytest.approx(3 / 7)
    assert result.summary()["instances"] == 6


def test_unlabeled_rows_are_hidden_from_supervised_models():
    # With every label masked, NoChange never learns: every prediction is missing.
    dataset = Listed([0, 1, 1, 0, 0, 1], [False] * 6)
    result = prequential(dataset, dummy.NoChangeClassifier(), 6, batch_size=3, step=3)
    np.testing.assert_allclose(result.error, [1.0, 1.0])


def test_whole_batch_is_predicted_before_learning():
    # Row 0 is labeled: with batch_size=1 row 1 is predicted from it, with batch_size=2 it is not.
    dataset = Listed([0, 0, 0, 0], [True] * 4)
    one = prequential(dataset, dummy.NoChangeClassifier(), 4, batch_size=1, step=4)
    two = prequential(dataset, dummy.NoChangeClassifier(), 4, batch_size=2, step=4)
    assert one.error[-1] == pytest.approx(1 / 4)
    assert two.error[-1] == pytest.approx(2 / 4)


def test_last_point_is_recorded_when_not_a_multiple_of_step():
    result = prequential(ToyMasked(), dummy.NoChangeClassifier(), 2500, step=1000)
    np.testing.assert_array_equal(result.positions, [1000, 2000, 2500])


@pytest.mark.parametrize("alpha", [0.995, 0.9])
@pytest.mark.parametrize("rows", [ToyMasked, DictStream])
def test_agrees_with_progressive_val_score(alpha, rows):
    dataset = ToyMasked(n=1000, label_ratio=0.2)
    result = prequential(rows(n=1000, label_ratio=0.2), naive_bayes.GaussianNB(), 1000,
                         batch_size=1, fading_factor=alpha, step=200)
    metric = PrequentialError(fading_factor=alpha)
    checkpoints = evaluate.iter_progressive_val_score(
        dataset, LabeledOnly(naive_bayes.GaussianNB()), metric, step=200
    )
    faded = [state["PrequentialError"].get() for state in checkpoints]
    np.testing.assert_allclose(result.faded_error, faded, rtol=1e-12)
    assert result.error[-1] < 0.2  # the stream is learnable: the comparison is not vacuous


def test_agrees_with_progressive_val_score_on_the_paper_stream():
    result = prequential(_led(), naive_bayes.BernoulliNB(), 600, batch_size=1, step=100)
    metric = PrequentialError()
    checkpoints = evaluate.iter_progressive_val_score(
        _led(), LabeledOnly(naive_bayes.BernoulliNB()), metric, step=100
    )
    faded = [state["PrequentialError"].get() for state in itertools.islice(checkpoints, 6)]
    np.testing.assert_allclose(result.faded_error, faded, rtol=1e-12)


@pytest.mark.parametrize("batch_size", [20, 7])
@pytest.mark.parametrize("dict_rows", [ToyMasked, DictStream])
def test_array_path_equals_dict_path(batch_size, dict_rows):
    # dict_rows: the dict loop reads rows from the stream's blocks or from iterating it
    arrays = prequential(ToyMasked(), NearestCentroid(batch_size=20), 5990, batch_size=batch_size,
                         step=250)
    dicts = prequential(dict_rows(), DictOnly(NearestCentroid(batch_size=20)), 5990,
                        batch_size=batch_size, step=250)
    assert (arrays.path, dicts.path) == ("arrays", "dicts")
    np.testing.assert_array_equal(arrays.positions, dicts.positions)
    np.testing.assert_allclose(arrays.faded_error, dicts.faded_error, rtol=1e-12)
    np.testing.assert_allclose(arrays.error, dicts.error, rtol=1e-12)
    assert arrays.final < 0.2


def test_semi_supervised_models_get_the_unlabeled_rows():
    dataset = ToyMasked(label_ratio=0.02)
    assert takes_unlabeled(NearestCentroid()) and not takes_unlabeled(naive_bayes.GaussianNB())
    assert takes_unlabeled(preprocessing.StandardScaler() | NearestCentroid())
    assert not takes_unlabeled(preprocessing.StandardScaler() | naive_bayes.GaussianNB())
    seen = []

    class Spy(NearestCentroid):
        def learn_arrays(self, X, y, labeled):
            seen.append(len(y))
            super().learn_arrays(X, y, labeled)

    prequential(dataset, Spy(), 1000)
    assert sum(seen) == 1000


def test_blocks_that_split_a_mini_batch_are_realigned():
    class OddBlocks(ToyMasked):
        def iter_arrays(self, chunk_size):
            return super().iter_arrays(chunk_size + 3)

    a = prequential(OddBlocks(), NearestCentroid(), 4000, step=100)
    b = prequential(ToyMasked(), NearestCentroid(), 4000, step=100)
    np.testing.assert_array_equal(a.faded_error, b.faded_error)


def test_progress_callback_counts_every_instance():
    counted = []
    prequential(ToyMasked(), NearestCentroid(), 4321, progress=counted.append)
    assert sum(counted) == 4321


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_instances": 0}, "n_instances"),
        ({"n_instances": 10, "batch_size": 0}, "batch_size"),
        ({"n_instances": 10, "step": -1}, "step"),
        ({"n_instances": 10, "fading_factor": 1.5}, "fading_factor"),
        ({"n_instances": 150}, "ended after 100"),
    ],
)
@pytest.mark.parametrize("rows", [ToyMasked, DictStream])
def test_invalid_arguments(kwargs, match, rows):
    with pytest.raises(ValueError, match=match):
        prequential(rows(n=100), dummy.NoChangeClassifier(), **kwargs)


@pytest.mark.parametrize("step", [1, 7, 100, 1000])
def test_curve_is_independent_of_how_losses_are_split(step):
    from evaluation.curve import Curve

    rng = np.random.default_rng(3)
    losses = (rng.random(1234) < 0.3).astype(float)
    metric = PrequentialError(fading_factor=0.98)
    expected = []
    for i, loss in enumerate(losses, start=1):
        metric.update(0, 1 if loss else 0)
        if i % step == 0 or i == len(losses):
            expected.append((i, metric.get(), losses[:i].mean()))
    curve = Curve(len(losses), step, 0.98)
    cuts = np.sort(rng.choice(np.arange(1, len(losses)), 40, replace=False))
    for part in np.split(losses, cuts):
        curve.fold(part)
    curve.finish()
    got = list(zip(curve.positions, curve.faded, curve.errors))
    assert [g[0] for g in got] == [e[0] for e in expected]
    np.testing.assert_allclose([g[1:] for g in got], [e[1:] for e in expected], rtol=1e-12)


def _paper_model(name):
    from evaluation.runs import registry

    return registry.make_model(name, 24, 10, seed=5, params={"hidden_sizes": [12, 12]})


def _led(seed=3):
    from evaluation.runs import registry

    return registry.masked_stream("led", seed, 0.1, 20, seed + 1)


@pytest.mark.parametrize("name", ["dhbm-mf", "dhda", "pl-mlp"])
def test_project_models_array_path_equals_dict_path(name):
    arrays = prequential(_led(), _paper_model(name), 3000, step=500)
    dicts = prequential(_led(), DictOnly(_paper_model(name)), 3000, step=500)
    assert (arrays.path, dicts.path) == ("arrays", "dicts")
    np.testing.assert_allclose(arrays.faded_error, dicts.faded_error, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_project_models_never_see_masked_labels(name):
    """The evaluator hands the true labels with the mask; whatever the unlabeled rows' labels
    are, the model must end up the same. The control: scrambling the labeled rows' labels
    changes the model (so the comparison can see a label reaching it)."""
    X, y, labeled = next(_led().iter_arrays(2000))
    shift = np.random.default_rng(0).integers(1, 10, len(y))
    scrambled = (y + shift) % 10
    models = {"true": _paper_model(name), "masked scrambled": _paper_model(name),
              "labeled scrambled": _paper_model(name)}
    labels = {"true": y, "masked scrambled": np.where(labeled, y, scrambled),
              "labeled scrambled": np.where(labeled, scrambled, y)}
    for b0 in range(0, 2000, 20):
        s = slice(b0, b0 + 20)
        for key, model in models.items():
            model.learn_arrays(X[s], labels[key][s], labeled[s])
    proba = {key: model.predict_proba_arrays(X[:200]) for key, model in models.items()}
    assert models["true"].classes_ == models["masked scrambled"].classes_
    np.testing.assert_array_equal(proba["true"], proba["masked scrambled"])
    assert np.abs(proba["true"] - proba["labeled scrambled"]).max() > 0.01
