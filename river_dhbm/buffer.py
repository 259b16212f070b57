"""The mini-batch buffer and the class bookkeeping behind every learning path.

`learn_one`, `learn_many` and `learn_arrays` all append validated rows here; every
`batch_size` rows trigger ONE update (`_update`, a single kernel call) on the mixed
mini-batch. Labels become class indices (`-1`: unlabeled) the first time they are seen, and a
new class grows the output-side parameters at once (`_add_class`).
"""

from __future__ import annotations

import numpy as np

from .first_use import announce_compilation
from .inputs import _row_packer

__all__ = ["MiniBatchBuffer"]


class MiniBatchBuffer:
    """Mixin of `HybridClassifier`: the buffer `_X_buf` `[batch_size, d]`, its class codes
    `_y_buf` and the label <-> column maps `_classes` / `_class_index`."""

    def _fix_features(self, names) -> None:
        self._features = list(names)
        self._feature_index = {name: j for j, name in enumerate(self._features)}
        self._X_buf = np.zeros((self.batch_size, len(self._features)))
        self._y_buf = np.full(self.batch_size, -1, dtype=np.int64)
        announce_compilation(self)  # the kernels come next: say so if they must be compiled
        self._init_params(len(self._features))

    def _class_of(self, y) -> int:
        """The column of label `y`, adding a class the first time it is seen."""
        k = self._class_index.get(y)
        if k is None:
            k = len(self._classes)
            self._classes.append(y)
            self._class_index[y] = k
            self._add_class()
        return k

    def _push(self, rows: np.ndarray, labeled: list) -> None:
        """Append validated rows to the buffer, one update per full batch. `labeled` lists
        `(row index, label)` of the labeled rows, in row order; the other rows are unlabeled."""
        bs = self.batch_size
        self._staged = None  # its slot is overwritten
        i = k = 0
        while i < len(rows):
            start = self._n_buf
            n = min(len(rows) - i, bs - start)
            self._X_buf[start : start + n] = rows[i : i + n]
            codes = self._y_buf
            codes[start : start + n] = -1
            # classes are discovered batch by batch, in row order (a new class shows up in the
            # update of the batch that holds it, not before)
            while k < len(labeled) and labeled[k][0] < i + n:
                j, y = labeled[k]
                codes[start + j - i] = self._class_of(y)
                self._n_buf_labeled += 1
                k += 1
            self._n_buf = start + n
            i += n
            if self._n_buf == bs:
                self._flush()

    def _push_one(self, row, y) -> None:
        """`_push` of one row (`y` None when unlabeled); `row` is an array `[d]`, the list of
        validated plain values from `_plain_values`, packed straight into the buffer, or None
        when the row is the staged one, already in the buffer's next slot."""
        self._staged = None
        start = self._n_buf
        if row is None:
            pass
        elif type(row) is list:
            d = len(row)
            _row_packer(d)(self._X_buf, 8 * d * start, *row)
        else:
            self._X_buf[start] = row
        if y is None:
            self._y_buf[start] = -1
        else:
            self._y_buf[start] = self._class_of(y)
            self._n_buf_labeled += 1
        self._n_buf = start + 1
        if self._n_buf == self.batch_size:
            self._flush()

    def _flush(self, predict: bool = False) -> np.ndarray | None:
        """One update on the full buffer; with `predict`, returns `p(y | x)` of its rows
        before the update (`_predict_update`)."""
        self.n_labeled_seen += self._n_buf_labeled
        X, codes = self._X_buf, self._y_buf
        P = self._predict_update(X, codes) if predict else self._update(X, codes)
        self.n_updates += 1
        self._n_buf = 0
        self._n_buf_labeled = 0
        self._staged = None
        return P

    def _run_end(self, start: int, n: int, bs: int, pairs: list, k: int) -> int:
        """End of the rows from `start` that `_test_then_train_run` may take: whole model
        mini-batches, the buffer empty, up to the first batch with a label not seen yet
        (`start` itself when there are none)."""
        if not self._classes or self._n_buf or bs != self.batch_size:
            return start
        stop = start + (n - start) // bs * bs
        for j in range(k, len(pairs)):
            i, v = pairs[j]
            if i >= stop:
                break
            if v not in self._class_index:
                return start + (i - start) // bs * bs
        return stop

    def _test_then_train_run(self, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Test-then-train on whole mini-batches of known classes with the buffer empty:
        `codes` int64 class indices (-1 unlabeled); returns the predicted class indices, each
        row predicted before the update of its mini-batch (`_predict_update`). Models may
        override it with a single kernel call."""
        bs = self.batch_size
        predicted = np.empty(len(X), dtype=np.int64)
        for start in range(0, len(X), bs):
            batch = slice(start, start + bs)
            self._X_buf[:] = X[batch]
            self._y_buf[:] = codes[batch]
            self._n_buf = bs
            self._n_buf_labeled = int((codes[batch] >= 0).sum())
            predicted[batch] = self._flush(predict=True).argmax(axis=1)
        return predicted
