"""Delayed labels: the order in which a learner gets the rows and their late labels."""

from __future__ import annotations

import numpy as np

__all__ = ["DelayedLabels"]


class DelayedLabels:
    """Turn consecutive blocks of `(rows, y, kept)` into the learner's sequence of events.

    A kept row at position `i >= warm_up` is learnt unlabeled in its place and again, labeled,
    right after row `i + delay - 1` (so, with mini-batches of one row, before row `i + delay`
    is predicted: capymoa's `prequential_ssl_evaluation` with `delay_length=delay`). Rows
    before `warm_up` keep their labels in place. `rows` is a 2-d array (the array path) or a
    list of dicts (the dict path); both give the same sequence.

    Examples
    --------

    >>> import numpy as np
    >>> schedule = DelayedLabels(delay=2)
    >>> schedule.events(["a", "b", "c"], np.array([0, 1, 2]), np.array([True, False, False]))
    (['a', 'b', 'a', 'c'], array([0, 1, 0, 2]), array([False, False,  True, False]))

    """

    def __init__(self, delay: int, warm_up: int = 0):
        if delay < 1:
            raise ValueError(f"Invalid delay ({delay}). Must be an int >= 1")
        self.delay = delay
        self.warm_up = warm_up
        self.start = 0  # position of the next row
        self._rows: list = []  # kept rows whose label is still to come, by due position
        self._y: list = []
        self._due: list = []

    def events(self, rows, y: np.ndarray, kept: np.ndarray):
        """The learner's `(rows, y, labeled)` for the next `len(y)` rows of the stream: each row
        in order (the late ones unlabeled), each followed by the labels due after it."""
        n = len(y)
        position = self.start + np.arange(n)
        late = kept & (position >= self.warm_up)
        for k in np.flatnonzero(late):
            self._rows.append(rows[k])
            self._y.append(y[k])
            self._due.append(int(position[k]) + self.delay - 1)
        m = int(np.searchsorted(self._due, self.start + n))  # due in this block
        released_rows, released_y, due = self._rows[:m], self._y[:m], self._due[:m]
        del self._rows[:m], self._y[:m], self._due[:m]
        self.start += n

        # row i has key 2 i, the label due after row j has key 2 j + 1
        keys = np.concatenate([2 * position, 2 * np.asarray(due, dtype=np.int64) + 1])
        order = np.argsort(keys, kind="stable")
        labeled = np.concatenate([kept & ~late, np.ones(m, dtype=bool)])[order]
        y_all = np.concatenate([np.asarray(y), np.asarray(released_y, dtype=np.asarray(y).dtype)])
        if isinstance(rows, np.ndarray):
            extra = np.reshape(released_rows, (m, rows.shape[1])) if m else rows[:0]
            return np.concatenate([rows, extra])[order], y_all[order], labeled
        everything = list(rows) + released_rows
        return [everything[k] for k in order], y_all[order], labeled
