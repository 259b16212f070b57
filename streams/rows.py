"""The first rows of a stream, as a dataset that knows how many it has."""

from __future__ import annotations

import itertools
import numbers

from river.datasets import base as datasets_base

__all__ = ["FirstRows"]


class FirstRows(datasets_base.Dataset):
    """The first `n` rows of a dataset, as a dataset whose `n_samples` says how many.

    River's `dataset.take(n)` gives an iterator, which has no `n_samples`; River's
    `evaluate.Track.run` places its checkpoints by `n_samples`. Iterating twice restarts the
    wrapped dataset, so a River dataset or a stream of this package gives the same rows.

    Parameters
    ----------
    dataset
        A River dataset, a stream of this package, or any re-iterable of `(x, y)` pairs.
    n
        How many rows; `None` or more than the dataset has: all of them.

    Examples
    --------

    >>> from river import datasets
    >>> import streams

    >>> rows = FirstRows(datasets.Phishing(), 100)
    >>> rows.n_samples, len(list(rows))
    (100, 100)
    >>> masked = streams.LabelMask(rows, label_ratio=0.5, seed=1)
    >>> masked.n_samples
    100

    """

    def __init__(self, dataset, n: int | None = None):
        if n is not None and (isinstance(n, bool) or not isinstance(n, numbers.Integral)
                              or n < 0):
            raise ValueError(f"Invalid n ({n!r}). Must be None or an int >= 0")
        total = getattr(dataset, "n_samples", None)
        super().__init__(
            task=getattr(dataset, "task", datasets_base.MULTI_CLF),
            n_features=getattr(dataset, "n_features", None),
            n_samples=total if n is None else n if total is None else min(n, total),
            n_classes=getattr(dataset, "n_classes", None),
        )
        self.dataset = dataset
        self.n = n

    def __iter__(self):
        return itertools.islice(self.dataset, self.n)

    def __repr__(self) -> str:
        from .masking import describe_dataset

        return f"{type(self).__name__}({describe_dataset(self.dataset)}, n={self.n!r})"
