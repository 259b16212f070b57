"""The shared base of the MOA-exact streams: validation, the array path, the dict path.

Every stream produces its instances in blocks through a *cursor*: a small object holding
the generator state (numpy arrays) that a jitted kernel advances while it fills a block.
`iter_arrays` hands those blocks out; `__iter__` turns the very same blocks into
`(dict, int)` pairs, so both paths are one stream.

"""

from __future__ import annotations

import abc
import numbers
from collections.abc import Iterator

import numpy as np
from river import datasets

from streams.java_random import JAVA_INT_MAX, JAVA_INT_MIN

# Rows generated per block by the dict path: large enough to amortise the kernel call,
# small enough that `take(10)` stays instantaneous.
DICT_CHUNK_SIZE = 512


def check_java_int(name: str, value) -> int:
    """`value` as a Python int if it is an integer in Java's int range, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(
            f"Invalid {name} ({value!r}). Must be an integer in [{JAVA_INT_MIN}, {JAVA_INT_MAX}]"
        )
    if not JAVA_INT_MIN <= int(value) <= JAVA_INT_MAX:
        raise ValueError(
            f"Invalid {name} ({value!r}). Valid range is [{JAVA_INT_MIN}, {JAVA_INT_MAX}]"
        )
    return int(value)


def check_int_range(name: str, value, low: int, high: int) -> int:
    """`value` as a Python int if it is an integer in [low, high], else ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"Invalid {name} ({value!r}). Must be an integer in [{low}, {high}]")
    if not low <= int(value) <= high:
        raise ValueError(f"Invalid {name} ({value!r}). Valid range is [{low}, {high}]")
    return int(value)


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"Invalid {name} ({value!r}). Must be True or False")
    return bool(value)


class Cursor(abc.ABC):
    """A running stream: `fill(X, y)` writes the next `len(y)` instances in place."""

    @abc.abstractmethod
    def fill(self, X: np.ndarray, y: np.ndarray) -> None:
        """Write the next instances into C-contiguous `X` (float64 [n, d]) and `y` (int64 [n])."""


class MOAStream(datasets.base.SyntheticDataset):
    """Base class of the MOA-exact streams.

    Subclasses implement `_cursor(restart)` (the generator state at the start of the
    stream, after MOA's `prepareForUse()` or, when `restart` is true, after MOA's
    `restart()`) and `moa_cli()`. Iterating (either path) starts the stream over: the
    first start of an object is MOA's freshly prepared stream, later starts are MOA's
    `restart()` (identical for every generator except `WaveformDrift`, see there).

    Examples
    --------

    >>> from streams import LED
    >>> stream = LED(seed=7)
    >>> X, y = next(stream.iter_arrays(chunk_size=4))
    >>> [(x, label) for x, label in stream.take(4)] == [
    ...     (dict(enumerate(row)), label) for row, label in zip(X.tolist(), y.tolist())
    ... ]
    True

    """

    #: MOA declares LED attributes nominal; MOA's NormalisationFilter leaves those alone.
    nominal_attributes = False

    def __init__(self, n_features: int, n_classes: int):
        super().__init__(
            task=datasets.base.MULTI_CLF,
            n_features=n_features,
            n_classes=n_classes,
            n_outputs=1,
        )
        self._n_starts = 0

    @abc.abstractmethod
    def _cursor(self, restart: bool) -> Cursor:
        """The state at the start of the stream (MOA `prepareForUse`, or `restart` if true)."""

    @abc.abstractmethod
    def moa_cli(self) -> str:
        """The MOA command line (an `ExampleStream` CLI string) that produces this stream."""

    def start(self) -> Cursor:
        """Start the stream over and return its cursor (see the class docstring)."""
        cursor = self._cursor(restart=self._n_starts > 0)
        self._n_starts += 1
        return cursor

    def iter_arrays(self, chunk_size: int = 1000) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Blocks of the stream: `(X float64 [chunk_size, n_features], y int64 [chunk_size])`.

        Infinite; each block is a fresh C-contiguous array made by jitted code.

        """
        chunk_size = check_int_range("chunk_size", chunk_size, 1, 2**31 - 1)
        cursor = self.start()
        while True:
            X = np.empty((chunk_size, self.n_features), dtype=np.float64)
            y = np.empty(chunk_size, dtype=np.int64)
            cursor.fill(X, y)
            yield X, y

    def __iter__(self) -> Iterator[tuple[dict, int]]:
        for X, y in self.iter_arrays(DICT_CHUNK_SIZE):
            for row, label in zip(X.tolist(), y.tolist()):
                yield dict(enumerate(row)), label

    def __repr__(self) -> str:
        params = ", ".join(f"{name}={value!r}" for name, value in self._get_params().items())
        return f"{type(self).__name__}({params})"
