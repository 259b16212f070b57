"""MOA's NormalisationFilter: online min-max scaling of numeric attributes to [0, 1]."""

from __future__ import annotations

import numpy as np
from numba import njit

from streams.base import Cursor, MOAStream


@njit(cache=True)
def normalise_rows(X, minimums, maximums, started, numeric):
    """Scale `X` in place, row by row, with the running min and max (updated first).

    `started[0]` is 0 until the first row initialises `minimums`/`maximums`. A column
    with `numeric[j]` false is left alone; a column whose max equals its min gives 0.

    """
    d = X.shape[1]
    for row in range(X.shape[0]):
        if started[0] == 0:
            for j in range(d):
                minimums[j] = X[row, j]
                maximums[j] = X[row, j]
            started[0] = 1
        for j in range(d):
            if not numeric[j]:
                continue
            v = X[row, j]
            if minimums[j] > v:
                minimums[j] = v
            if maximums[j] < v:
                maximums[j] = v
            span = maximums[j] - minimums[j]
            X[row, j] = (v - minimums[j]) / span if span != 0.0 else 0.0


class _NormalisationCursor(Cursor):
    def __init__(self, inner: Cursor, numeric: np.ndarray):
        self.inner = inner
        self.numeric = numeric
        d = numeric.shape[0]
        self.minimums = np.zeros(d)
        self.maximums = np.zeros(d)
        self.started = np.zeros(1, dtype=np.int64)

    def fill(self, X, y):
        self.inner.fill(X, y)
        normalise_rows(X, self.minimums, self.maximums, self.started, self.numeric)


class NormalisationFilter(MOAStream):
    """MOA's `FilteredStream` with `NormalisationFilter`: causal min-max scaling to [0, 1].

    For every numeric attribute the running minimum and maximum are first updated with
    the current value, then the value becomes `(v - min) / (max - min)`, or 0 while
    `max == min` (so the first instance is all zeros). MOA declares LED attributes
    nominal and leaves them alone, so on LED streams the filter changes nothing.

    Parameters
    ----------
    stream
        The stream to normalise (any stream of this package).

    Examples
    --------

    >>> from streams import NormalisationFilter, Waveform
    >>> dataset = NormalisationFilter(Waveform(seed=1, has_noise=True))
    >>> dataset.moa_cli()
    'FilteredStream -s (generators.WaveformGenerator -i 1 -n) -f NormalisationFilter'
    >>> X, y = next(dataset.iter_arrays(chunk_size=1000))
    >>> float(X.min()), float(X.max())
    (0.0, 1.0)

    Notes
    -----
    Iterating again restarts the inner stream and forgets the minima and maxima, as
    MOA's `restart()` does.

    """

    def __init__(self, stream: MOAStream):
        self.stream = stream
        if not isinstance(stream, MOAStream):
            raise ValueError(
                f"Invalid stream ({stream!r}). Must be a stream of this package "
                "(LED, LEDDrift, Waveform, WaveformDrift, ConceptDriftStream, "
                "NormalisationFilter)"
            )
        super().__init__(n_features=stream.n_features, n_classes=stream.n_classes)
        self.nominal_attributes = stream.nominal_attributes

    def _cursor(self, restart):
        numeric = np.full(self.n_features, not self.stream.nominal_attributes, dtype=np.bool_)
        return _NormalisationCursor(self.stream.start(), numeric)

    def moa_cli(self) -> str:
        return f"FilteredStream -s ({self.stream.moa_cli()}) -f NormalisationFilter"
