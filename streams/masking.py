"""Semi-supervised label masking: which instances of a stream keep their label."""

from __future__ import annotations

import collections
import collections.abc
import numbers
import reprlib

import numpy as np
from river import base
from river.datasets import base as datasets_base

__all__ = ["LabelMask", "LabeledOnly", "is_missing_label"]

# The mask is drawn in blocks of this many instances (rounded up to whole label batches), so it
# depends only on the seed, never on how the caller chunks the stream.
_MASK_BLOCK = 4096


def is_missing_label(y) -> bool:
    """Whether label `y` means "unlabeled": None, or a value that does not equal itself (NaN
    of any float type, NaT, pandas' NA). The same rule as the models of `river_dhbm`
    (`learn_one`, `learn_many`, `learn_arrays`): one meaning for a missing label everywhere.

    >>> import math
    >>> [is_missing_label(y) for y in (None, math.nan, 0, "a")]
    [True, True, False, False]

    """
    if y is None:
        return True
    try:
        return bool(y != y)
    except (TypeError, ValueError, ArithmeticError):  # pandas' NA, a signalling Decimal NaN
        return True


def describe_dataset(dataset) -> str:
    """`dataset` in a few words for a one-line message: its repr when short and on one line,
    else its class name (a River dataset's repr is its whole multi-line description)."""
    text = repr(dataset)
    return text if "\n" not in text and len(text) <= 60 else f"<{type(dataset).__name__}>"


class LabelMask(datasets_base.SyntheticDataset):
    """Hide most labels of a stream from the learner, keep them all for the evaluator.

    Iterating yields `(x, y, {"labeled": bool})` triples: `y` is always the true label, and the
    third element tells the learner whether it may use it. River's
    `evaluate.progressive_val_score` forwards that dict as keyword arguments to the model, so it
    scores every prediction against the true label while a learner whose `learn_one` accepts
    `labeled` (`learn_one(x, y=None, labeled=True)`) learns only the kept labels.

    Parameters
    ----------
    dataset
        The stream to mask: anything that yields `(x, y)` pairs, such as any River dataset
        (`datasets.Phishing()`, `datasets.synth.SEA(seed=1)`), a stream of this package or a
        list. Where it also has `iter_arrays(chunk_size)` yielding `(X, y)` blocks (the streams
        of this package), the mask has `iter_arrays` too.
    label_ratio
        Expected share of labeled instances, in [0, 1].
    batch_size
        `None`: each instance keeps its label with probability `label_ratio`, independently.
        An int `k >= 1`: each consecutive block of `k` instances (counted from the first one)
        draws its own ratio uniformly from `[0, 2 * label_ratio]` and labels that share of the
        block (see Notes), so some blocks are fully unlabeled.
    seed
        Seed of the mask. Iterating twice over the same object yields the same mask (over a
        dataset that can be iterated again: an iterator, such as a generator or River's
        `take(n)`, is used up by the first pass); `None` draws a fresh seed once, when the
        object is created.
    delay
        A kept label reaches the learner `delay` instances after its row was predicted; the
        row itself is shown unlabeled when it arrives (capymoa's `prequential_ssl_evaluation`
        with `delay_length`; `evaluation.prequential` defines the protocol). 0: at once.
    warm_up
        The first `warm_up` rows all keep their labels, at once (no delay). The mask is drawn
        for them all the same, so the rows after the warm-up keep the labels they had without.

    Attributes
    ----------
    ratio_range
        The interval `(low, high)` from which each batch's ratio is drawn (`None` without
        batches).

    Examples
    --------

    >>> from river import evaluate, metrics, naive_bayes
    >>> import streams
    >>> from streams.masking import LabelMask, LabeledOnly

    >>> dataset = LabelMask(
    ...     streams.LEDDrift(seed=1, noise_percentage=10, n_drift_features=4),
    ...     label_ratio=0.1,
    ...     batch_size=20,
    ...     seed=42,
    ... )

    >>> for x, y, kwargs in dataset.take(3):
    ...     print(len(x), y, kwargs)
    24 5 {'labeled': False}
    24 9 {'labeled': False}
    24 2 {'labeled': False}

    Every prediction is scored against the true label, while the model learns only the kept
    labels (`LabeledOnly` lets a supervised River model take the `labeled` keyword):

    >>> model = LabeledOnly(naive_bayes.BernoulliNB())
    >>> evaluate.progressive_val_score(dataset.take(2000), model, metrics.Accuracy())
    Accuracy: 55.64%
    >>> sum(model.classifier.class_counts.values())
    192

    The array path gives the same mask, whatever the chunk size:

    >>> X, y, labeled = next(dataset.iter_arrays(chunk_size=2000))
    >>> X.shape, int(labeled.sum())
    ((2000, 24), 192)

    >>> dataset.moa_cli()
    'generators.LEDGeneratorDrift -i 1 -n 10 -d 4'

    Any River dataset, or any iterable of `(x, y)` pairs, takes the same mask (River's own
    datasets have no array path, so neither has their mask):

    >>> from river import datasets
    >>> phishing = LabelMask(datasets.Phishing(), label_ratio=0.1, seed=1)
    >>> sum(kwargs["labeled"] for _, _, kwargs in phishing), phishing.n_samples
    (113, 1250)
    >>> hasattr(phishing, "iter_arrays")
    False

    With `delay`, a kept row comes unlabeled and its label comes back, in `late`, after the
    row `delay - 1` rows later (rows 0 and 1 keep theirs here, rows 2 and 3 do not):

    >>> delayed = LabelMask(streams.LED(seed=1), label_ratio=0.5, seed=3, delay=2)
    >>> [(y, kwargs["labeled"], [y for _, y in kwargs["late"]]) for _, y, kwargs in delayed.take(4)]
    [(5, False, []), (9, False, [5]), (2, False, [9]), (7, False, [])]

    Notes
    -----
    How a batch's ratio `r` becomes labels: the batch gets `n = floor(r * k + u)` labels, `u`
    uniform in [0, 1) (stochastic rounding, so `E[n] = r * k` exactly for every `k`), placed
    at `n` positions drawn at random without replacement. The batch's observed ratio is thus
    within `1 / k` of its drawn ratio, and the overall ratio is `label_ratio` in expectation.
    With `k = 20` and `label_ratio = 0.1`, 1/8 of the batches have no label at all.
    When `label_ratio > 0.5` the interval `[0, 2 * label_ratio]` would leave [0, 1]; the
    ratio is then drawn from `[2 * label_ratio - 1, 1]`, the widest interval inside [0, 1]
    centred on `label_ratio`, so the mean stays `label_ratio`.

    Batches are aligned with the stream's first instance, so they coincide with the
    mini-batches of a learner that buffers `k` instances from the start.

    The mask comes from its own `numpy.random.Generator`, drawn in fixed blocks, so the dict
    path and `iter_arrays` give the same mask for every chunk size. Negative seeds are
    reduced modulo 2**64.

    With `delay > 0` the keyword dict also holds `late`: the `(x, y)` pairs whose label is due
    after this row (`delay` rows after theirs), which the learner takes, labeled, after the
    row itself; a kept row is first shown unlabeled. `LabeledOnly` does this, so River's
    `progressive_val_score` runs the delayed protocol of `evaluation.prequential` with
    mini-batches of one row. `iter_arrays` yields the kept labels (`delay` left to the
    evaluator).

    River's `progressive_val_score` passes the keyword dict to `predict_one` (hence
    `predict_proba_one`) and to `learn_one` of the model, including a plain River model and
    the last step of a `compose.Pipeline` (whose `predict_one` accepts `**kwargs`). A River
    classifier whose methods do not accept `labeled` therefore raises `TypeError`; wrap it in
    `LabeledOnly`, which learns only the labeled instances and ignores the keyword elsewhere.

    References
    ----------
    [^1]: Ororbia II, A. G., Giles, C. L., & Reitter, D. (2016). Online semi-supervised learning
    with deep hybrid Boltzmann machines and denoising autoencoders. ICLR workshop.

    """

    def __init__(
        self,
        dataset,
        label_ratio: float = 0.1,
        batch_size: int | None = None,
        seed: int | None = None,
        delay: int = 0,
        warm_up: int = 0,
    ):
        if not isinstance(dataset, collections.abc.Iterable) or isinstance(dataset, (str, bytes)):
            raise ValueError(
                f"Invalid dataset ({describe_dataset(dataset)}). Must yield (x, y) pairs, e.g. a "
                "River dataset"
            )
        if (
            isinstance(label_ratio, bool)
            or not isinstance(label_ratio, numbers.Real)
            or not 0.0 <= label_ratio <= 1.0
        ):
            raise ValueError(f"Invalid label_ratio ({label_ratio!r}). Valid range is [0, 1]")
        if batch_size is not None and (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, numbers.Integral)
            or batch_size < 1
        ):
            raise ValueError(f"Invalid batch_size ({batch_size!r}). Must be None or an int >= 1")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
            raise ValueError(f"Invalid seed ({seed!r}). Must be None or an int")
        for name, value in (("delay", delay), ("warm_up", warm_up)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"Invalid {name} ({value!r}). Must be an int >= 0")

        super().__init__(
            task=getattr(dataset, "task", datasets_base.MULTI_CLF),
            n_features=getattr(dataset, "n_features", None),
            n_samples=getattr(dataset, "n_samples", None)
            if hasattr(dataset, "n_samples") or not isinstance(dataset, collections.abc.Sized)
            else len(dataset),
            n_classes=getattr(dataset, "n_classes", None),
        )
        self.dataset = dataset
        self.label_ratio = label_ratio
        self.batch_size = batch_size
        self.seed = seed
        self.delay = delay
        self.warm_up = warm_up

        # One seed per object: iterating twice repeats the mask, two objects differ.
        self._seed = np.random.SeedSequence().entropy if seed is None else int(seed) % 2**64
        if batch_size is None:
            self.ratio_range = None
        else:
            half_width = min(label_ratio, 1.0 - label_ratio)
            self.ratio_range = (label_ratio - half_width, label_ratio + half_width)

    def __repr__(self) -> str:
        params = ", ".join(f"{name}={describe_dataset(value) if name == 'dataset' else repr(value)}"
                           for name, value in self._get_params().items())
        return f"{type(self).__name__}({params})"

    @property
    def moa_cli(self):
        """The wrapped stream's `moa_cli` (absent when the wrapped stream has none)."""
        return self.dataset.moa_cli

    def _mask_blocks(self):
        """Infinite sequence of boolean mask blocks, a function of the seed alone; the first
        `warm_up` rows all kept."""
        blocks = self._drawn_blocks()
        start = 0
        while start < self.warm_up:
            block = next(blocks).copy()
            block[: self.warm_up - start] = True
            start += len(block)
            yield block
        yield from blocks

    def _drawn_blocks(self):
        rng = np.random.default_rng(self._seed)
        p = float(self.label_ratio)
        if self.batch_size is None:
            while True:
                yield rng.random(_MASK_BLOCK) < p

        k = int(self.batch_size)
        low, high = self.ratio_range
        n_batches = max(1, _MASK_BLOCK // k)
        while True:
            ratios = low + (high - low) * rng.random(n_batches)
            counts = np.floor(ratios * k + rng.random(n_batches))
            # Rank of each position among random keys = a random permutation per batch; the
            # `count` lowest ranks are the labeled positions.
            ranks = rng.random((n_batches, k)).argsort(axis=1).argsort(axis=1)
            yield (ranks < counts[:, None]).ravel()

    def _pairs(self):
        """The wrapped dataset's rows as `(x, y)`, a row that is not a pair named in one line."""
        for i, row in enumerate(self.dataset):
            try:
                x, y = row
            except (TypeError, ValueError):
                raise ValueError(f"Invalid row {i} of the dataset ({reprlib.repr(row)}). Must be "
                                 "an (x, y) pair") from None
            yield x, y

    def __iter__(self):
        flags = (flag for block in self._mask_blocks() for flag in block.tolist())
        if not self.delay:
            for (x, y), labeled in zip(self._pairs(), flags):
                yield x, y, {"labeled": labeled}
            return
        # Delayed labels: a kept row comes unlabeled; its label comes back in the `late` list
        # of the row after which it is due (`delay` rows later, before the next prediction).
        pending = collections.deque()  # (due row, x, y) of kept rows whose label is late
        for i, ((x, y), kept) in enumerate(zip(self._pairs(), flags)):
            late = kept and i >= self.warm_up
            if late:
                pending.append((i + self.delay - 1, x, y))
            released = []
            while pending and pending[0][0] <= i:
                released.append(pending.popleft()[1:])
            yield x, y, {"labeled": kept and not late, "late": released}

    @property
    def iter_arrays(self):
        """The array path, where the wrapped stream has one (AttributeError otherwise, so that
        `hasattr(mask, "iter_arrays")` tells a runner which path it may take)."""
        if not callable(getattr(self.dataset, "iter_arrays", None)):
            raise AttributeError(
                f"{type(self).__name__}.iter_arrays needs a stream with iter_arrays(chunk_size); "
                f"{describe_dataset(self.dataset)} has none: iterate over the mask's rows instead"
            )
        return self._iter_arrays

    def _iter_arrays(self, chunk_size: int = 1000):
        """The masked stream as blocks `(X, y, labeled)`.

        `X` and `y` are the wrapped stream's blocks, `labeled` a boolean array of the same
        length: the labels kept (the warm-up's included; with `delay` the evaluator delivers
        them late). The mask equals the dict path's, whatever `chunk_size`.

        Parameters
        ----------
        chunk_size
            Number of instances per block, passed to the wrapped stream.

        """
        blocks = self._mask_blocks()
        pending = np.empty(0, dtype=bool)
        for X, y in self.dataset.iter_arrays(chunk_size=chunk_size):
            n = len(y)
            if len(pending) < n:
                needed = [pending]
                have = len(pending)
                while have < n:
                    needed.append(next(blocks))
                    have += len(needed[-1])
                pending = np.concatenate(needed)
            labeled, pending = pending[:n], pending[n:]
            yield X, y, labeled


class LabeledOnly(base.Wrapper, base.Classifier):
    """Let a supervised River classifier run on a `LabelMask` stream.

    It learns only the instances whose label is kept (`labeled=True`), then the delayed labels
    due (`late`, see `LabelMask`'s `delay`), and accepts, and ignores, the keywords that
    `evaluate.progressive_val_score` also passes to predictions. A missing label (None, NaN,
    NaT, pandas' NA: `is_missing_label`) is not learnt, as by this package's models.

    Parameters
    ----------
    classifier
        Any River classifier.

    Examples
    --------

    >>> from river import naive_bayes
    >>> model = LabeledOnly(naive_bayes.GaussianNB())
    >>> model.learn_one({"a": 1.0}, 1, labeled=False)
    >>> model.predict_proba_one({"a": 1.0}, labeled=False)
    {}
    >>> model.learn_one({"a": 1.0}, 1, labeled=True)
    >>> model.predict_one({"a": 1.0}, labeled=True)
    1

    """

    def __init__(self, classifier: base.Classifier):
        if not isinstance(classifier, base.Classifier):
            name = getattr(classifier, "__name__", "")
            what = (f"the class {name}; pass an instance, e.g. {name}()"
                    if isinstance(classifier, type) else type(classifier).__name__)
            raise ValueError(f"Invalid classifier ({what}). Must be a River classifier")
        self.classifier = classifier

    @property
    def _wrapped_model(self):
        return self.classifier

    @property
    def _multiclass(self):
        return self.classifier._multiclass

    @classmethod
    def _unit_test_params(cls):
        from river import naive_bayes

        yield {"classifier": naive_bayes.GaussianNB()}

    def learn_one(self, x, y=None, labeled: bool = True, late=(), **kwargs):
        # Other keywords (e.g. a sample weight `w`) go to the classifier; `late` holds the
        # `(x, y)` rows whose delayed label is due now (`LabelMask(delay=...)`).
        if labeled and not is_missing_label(y):
            self.classifier.learn_one(x, y, **kwargs)
        for x_late, y_late in late:
            if not is_missing_label(y_late):
                self.classifier.learn_one(x_late, y_late)

    def predict_proba_one(self, x, **kwargs):
        return self.classifier.predict_proba_one(x)

    def predict_one(self, x, **kwargs):
        return self.classifier.predict_one(x)
