"""What every model does when labels are scarce: a bounded memory of labeled rows replayed into
each update, and confident proxy labels for unlabeled rows.

A stream learner sees each labeled row once. With 1 % or 0.1 % labels that is one gradient step
per label, far too few for a network to learn what a naive Bayes model gets from the same rows
in closed form. The memory keeps the last `memory_size` labeled rows (a ring, so it follows
drift) and each update appends `replay` of them, drawn uniformly, to the mini-batch. Confident
proxy labels turn an unlabeled row whose prediction reaches `confidence` into a labeled row of
its predicted class for that update (self-training, Lee 2013, gated as in Grandvalet & Bengio's
entropy minimisation), once the model has seen `PSEUDO_LABEL_WARM_UP` labeled rows.

The kernels work on the memory's arrays so that the DHBM's fused run (one Numba call for many
mini-batches) replays exactly what the per-batch path does. All draws are uniforms from the
model's generator, passed in.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm.kernels import _JIT
from river_dhbm.param_checks import _check_bool, _check_int, _check_range

#: Labeled rows a model must have learnt before its confident proxy labels start: a model fitted
#: to a handful of labels is confidently wrong (measured on LED with 0.1 % labels, a prototype
#: DHBM replaying 10 rows: 0.380 with no wait, 0.365 waiting for 50).
PSEUDO_LABEL_WARM_UP = 50


class LabelMemory:
    """The last `size` labeled rows (`X [size, d]`, class codes `y [size]`), as a ring.

    `state` holds `(rows stored, next slot)` as int64, so kernels update it in place.
    """

    def __init__(self, size: int, n_features: int):
        self.X = np.zeros((size, n_features))
        self.y = np.zeros(size, dtype=np.int64)
        self.state = np.zeros(2, dtype=np.int64)

    @property
    def count(self) -> int:
        return int(self.state[0])


@njit(**_JIT)
def _copy_row(src, i, dst, j):
    """`dst[j] = src[i]` in a loop (a slice assignment compiles its error paths too: seconds
    of a model's first use)."""
    for c in range(src.shape[1]):
        dst[j, c] = src[i, c]


@njit(**_JIT)
def step_rows(X, y, n, s, steps, xs, ys):
    """The rows step `s` of an update learns, into `xs [n + R, d]` and `ys [n + R]`: the
    mini-batch (the first `n` rows of `X, y`), then its own `R` replayed rows
    `X[n + s R : n + (s + 1) R]`, where `X` holds `n + steps * R` rows. Returns `n + R`."""
    R = (X.shape[0] - n) // steps
    for r in range(n):
        _copy_row(X, r, xs, r)
        ys[r] = y[r]
    for k in range(R):
        _copy_row(X, n + s * R + k, xs, n + k)
        ys[n + k] = y[n + s * R + k]
    return n + R


@njit(**_JIT)
def memory_push(mem_X, mem_y, state, X, codes, n):
    """Store the labeled rows (`codes >= 0`) among the first `n` rows of `X` in the ring."""
    size = mem_y.shape[0]
    if size == 0:
        return
    for r in range(n):
        if codes[r] >= 0:
            slot = state[1]
            _copy_row(X, r, mem_X, slot)
            mem_y[slot] = codes[r]
            state[1] = (slot + 1) % size
            if state[0] < size:
                state[0] += 1


@njit(**_JIT)
def memory_replay(mem_X, mem_y, state, X, codes, n, u, out_X, out_codes):
    """The first `n` rows of `(X, codes)` followed by one stored row per uniform in `u` (each
    row `int(u * rows stored)`), into `out_X`, `out_codes`; returns the row count (`n` when the
    memory is empty). The replayed rows are drawn before this batch's labels are stored."""
    for r in range(n):
        _copy_row(X, r, out_X, r)
        out_codes[r] = codes[r]
    count = state[0]
    if count == 0:
        return n
    for k in range(u.shape[0]):
        i = min(int(u[k] * count), count - 1)
        _copy_row(mem_X, i, out_X, n + k)
        out_codes[n + k] = mem_y[i]
    return n + u.shape[0]


@njit(**_JIT)
def confident_labels(codes, P, n, confidence):
    """Give each unlabeled row among the first `n` whose largest probability in `P` reaches
    `confidence` its predicted class (the first largest), in place; returns how many."""
    added = 0
    for r in range(n):
        if codes[r] >= 0:
            continue
        best = 0
        for k in range(1, P.shape[1]):
            if P[r, k] > P[r, best]:
                best = k
        if P.shape[1] > 0 and P[r, best] >= confidence:
            codes[r] = best
            added += 1
    return added


def check_params(model, confidence: bool = True) -> None:
    """Check `learn_unlabeled`, `replay`, `memory_size` (and `confidence`) of `model`."""
    _check_bool("learn_unlabeled", model.learn_unlabeled)
    _check_int("replay", model.replay, 0)
    _check_int("memory_size", model.memory_size, 1 if model.replay else 0)
    if confidence and model.confidence is not None:
        _check_range("confidence", model.confidence, 0.0, 1.0, low_open=True)


def steps_at(model, n_labeled) -> np.ndarray | int:
    """Gradient steps of an update once `n_labeled` labeled rows have been seen (an int or an
    array of them): `model.steps` up to `model.warm_start` labeled rows, then
    `steps * warm_start / n_labeled` rounded, never below 1; always `steps` when
    `warm_start` is None. Many steps let a young network catch up with a linear model; once
    its labels are many, they would replay each row of the label memory dozens of times and
    fit its noise."""
    steps, warm = model.steps, getattr(model, "warm_start", None)
    if warm is None:
        return steps if np.isscalar(n_labeled) else np.full(np.shape(n_labeled), steps)
    k = np.clip(np.rint(steps * warm / np.maximum(n_labeled, 1)), 1, steps).astype(np.int64)
    return int(k) if np.isscalar(n_labeled) else k


def memory_of(model, n_features: int) -> LabelMemory:
    """`model`'s label memory, made on first use (empty when the model replays nothing)."""
    if model._memory is None:
        model._memory = LabelMemory(model.memory_size if model.replay else 0, n_features)
    return model._memory


def proxy_confidence(model) -> float:
    """The confidence an unlabeled row's prediction needs to become a proxy label in the next
    update; above 1 (never reached) when the model does not learn from unlabeled rows or has
    seen fewer than `PSEUDO_LABEL_WARM_UP` labeled rows, or its `confidence` is None."""
    if (
        model.confidence is None
        or not model.learn_unlabeled
        or model.n_labeled_seen < PSEUDO_LABEL_WARM_UP
    ):
        return 2.0
    return float(model.confidence)


def learning_batch(model, X: np.ndarray, y: np.ndarray, P=None, proxy_labels: bool = True,
                   rounds: int = 1):
    """The rows one update of `model` learns from: the mini-batch `(X, y)`, its confident
    unlabeled rows labeled (`proxy_labels`; `P` is the batch's prediction, computed if None)
    and `rounds` times `model.replay` rows of the label memory (one draw per step of an
    update that takes several). Stores the batch's true labels in the memory
    afterwards. Returns fresh arrays (the buffer stays as it was)."""
    n, d = X.shape
    codes = y.copy()
    if proxy_labels and model._classes:
        confidence = proxy_confidence(model)
        if confidence <= 1.0 and (codes < 0).any():
            confident_labels(codes, model._proba(X) if P is None else P, n, confidence)
    R = model.replay * rounds
    if R == 0:
        return X, codes
    memory = memory_of(model, d)
    u = model._rng.random(R)
    out_X = np.empty((n + R, d))
    out_codes = np.empty(n + R, dtype=np.int64)
    m = memory_replay(memory.X, memory.y, memory.state, X, codes, n, u, out_X, out_codes)
    memory_push(memory.X, memory.y, memory.state, X, y, n)
    return out_X[:m], out_codes[:m]
