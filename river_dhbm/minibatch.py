"""The mini-batch buffer every model learns through (`base.HybridClassifier`).

Validated rows wait in the model's buffer (`_X_buf`, class codes `_y_buf`, -1 unlabeled) until
`batch_size` of them trigger one update (`flush`); the drift detector hears the labeled rows'
errors of each update (`learn`). The prequential array path (`test_then_train`) predicts,
then learns, runs of whole mini-batches of known classes in one go, one kernel call per
mini-batch (`batch_by_batch`) or one for the whole run (the model's `_test_then_train_run`).
Every path feeds the same buffer, so they yield the same model.
"""

from __future__ import annotations

import numpy as np

from river_dhbm import change, safety
from river_dhbm._input.checks import row_packer
from river_dhbm._kernels import ahead

__all__ = ["batch_by_batch", "flush", "learn", "learn_made_up_batch", "mixed_flush", "push",
           "push_one", "test_then_train"]


def push(model, rows: np.ndarray, labeled: list) -> None:
    """Append validated rows to the buffer, one update per full batch. `labeled` lists
    `(row index, label)` of the labeled rows, in row order; the other rows are unlabeled."""
    bs = model.batch_size
    model._staged = None  # its slot is overwritten
    i = k = 0
    while i < len(rows):
        start = model._n_buf
        n = min(len(rows) - i, bs - start)
        model._X_buf[start : start + n] = rows[i : i + n]
        codes = model._y_buf
        codes[start : start + n] = -1
        # classes are discovered batch by batch, in row order (a new class shows up in the
        # update of the batch that holds it, not before); the experts score the rows before a
        # new class without its column and not the row that brings it, as `push_one` does
        scored = start
        while k < len(labeled) and labeled[k][0] < i + n:
            j, y = labeled[k]
            slot = start + j - i
            if model._mixture is not None and y not in model._class_index:
                safety.score(model, model._X_buf[scored:slot], codes[scored:slot])
                scored = slot + 1
            codes[slot] = model._class_of(y)
            model._n_buf_labeled += 1
            k += 1
        if model._mixture is not None:
            safety.score(model, model._X_buf[scored : start + n], codes[scored : start + n])
        model._n_buf = start + n
        i += n
        if model._n_buf == bs:
            flush(model)


def push_one(model, row, y) -> None:
    """`push` of one row (`y` None when unlabeled); `row` is an array `[d]`, the list of
    validated plain values from `_plain_values`, packed straight into the buffer, or None
    when the row is the staged one, already in the buffer's next slot."""
    experts = model._staged_experts
    if row is not None or experts is None or experts[0] is not model._staged:
        experts = None  # not the row the experts predicted last
    model._staged = None
    start = model._n_buf
    if row is None:
        pass
    elif type(row) is list:
        d = len(row)
        row_packer(d)(model._X_buf, 8 * d * start, *row)
    else:
        model._X_buf[start] = row
    if y is None:
        model._y_buf[start] = -1
    else:
        known = len(model._classes)
        k = model._y_buf[start] = model._class_of(y)
        model._n_buf_labeled += 1
        if model._mixture is None or k == known:
            pass  # a class new to every expert tells nothing of which is the better
        elif experts is not None and k < experts[1].shape[1]:  # as predicted: no second pass
            model._mixture.score_row(experts[1], k)
        else:
            safety.score_one(model, model._X_buf[start : start + 1], k)
    model._n_buf = start + 1
    if model._n_buf == model.batch_size:
        flush(model)


def flush(model, predict: bool = False, P: np.ndarray | None = None) -> np.ndarray | None:
    """One update on the full buffer (`learn`); with `predict`, returns `p(y | x)` of its
    rows before the update (`P`, when the caller has it). The twin (`safety`) then learns the
    buffer's labeled rows, and the linear expert the buffer. The input watch hears the buffer
    first (`change.InputWatch`): a restart it makes due comes with this update's."""
    X, codes = model._X_buf, model._y_buf
    twin, linear = model._twin, model._linear
    if model._watch.active:
        model._watch.narrowed(X, model.n_updates + 1, twin)
    if linear is not None:  # copies: an update may change the buffer
        X_batch, codes_batch = X.copy(), codes.copy()
    if twin is not None:
        labeled = codes >= 0
        X_labeled, codes_labeled = X[labeled], codes[labeled]
    P = learn(model, X, codes, model._n_buf_labeled, predict, P)
    model._n_buf = 0
    model._n_buf_labeled = 0
    model._staged = None
    if twin is not None:  # the ablation's update, without the rows it weighs 0
        learn(twin, X_labeled, codes_labeled, len(codes_labeled))
    if linear is not None:  # after the network's restart, if one was due
        linear.learn(model, X_batch, codes_batch)
    return P


def learn_made_up_batch(model) -> None:
    """One update of `model` (features fixed, no class yet) on a full buffer of made-up rows
    of two made-up classes: the path of its first update, with the same types, so the same
    kernels. A forked copy runs it to compile them ahead (`_kernels.ahead`)."""
    codes = [model._class_of(("river_dhbm: compiled ahead", k)) for k in (0, 1)]
    model._X_buf[:] = np.random.default_rng(0).random(model._X_buf.shape)
    model._y_buf[:] = np.resize(codes, model.batch_size)
    model._n_buf = model._n_buf_labeled = model.batch_size
    flush(model)


def learn(model, X: np.ndarray, codes: np.ndarray, n_labeled: int, predict: bool = False,
          P: np.ndarray | None = None) -> np.ndarray | None:
    """One update of `model` on the mini-batch `X`, `codes` (`n_labeled` labeled rows),
    counted; with `predict`, returns `p(y | x)` of its rows before the update
    (`_predict_update`; `P`, when the caller has it, is not computed again). The drift
    detector gets the labeled rows' errors of that prediction (made for it when it listens)."""
    ahead.wait()  # for the first update's kernels, if a copy compiles them
    watch = model._watch.active and n_labeled > 0
    model.n_labeled_seen += n_labeled
    if P is not None or predict or watch:
        P = model._predict_update(X, codes, P)
        predicted = P.argmax(axis=1) if watch else None
    else:
        model._update(X, codes)
    model.n_updates += 1
    if watch:
        model._watch.rose(change.labeled_errors(predicted, codes),
                          model.n_updates * model.batch_size)
    if model._watch.due(model.n_updates):
        change.restart(model)
    return P


# ---------------------------------------------------------------------------- test-then-train


def test_then_train(model, X: np.ndarray, pairs: list, bs: int) -> np.ndarray:
    """`model.test_then_train_arrays` on validated rows `X` with the labeled rows' `(row
    index, label)` `pairs`, in blocks of `bs` rows: the predicted class indices (-1: no class
    known yet)."""
    predicted = np.full(len(X), -1, dtype=np.int64)
    k = start = 0  # pairs[k:] are the labeled rows from `start` on
    while start < len(X):
        stop = _run_end(model, start, len(X), bs, pairs, k)
        run = stop > start  # whole mini-batches of known classes: one call
        if not run:  # one block: predict, then buffer (a new class, a straddled batch)
            stop = min(start + bs, len(X))
        end = k
        while end < len(pairs) and pairs[end][0] < stop:
            end += 1
        if run:
            codes = np.full(stop - start, -1, dtype=np.int64)
            for i, v in pairs[k:end]:
                codes[i - start] = model._class_index[v]
            predicted[start:stop] = model._test_then_train_run(X[start:stop], codes)
        else:
            if model._classes:
                predicted[start:stop] = safety.predictive_proba(model, X[start:stop]).argmax(
                    axis=1)
            push(model, X[start:stop], [(i - start, v) for i, v in pairs[k:end]])
        k, start = end, stop
    return predicted


def _run_end(model, start: int, n: int, bs: int, pairs: list, k: int) -> int:
    """End of the rows from `start` that `_test_then_train_run` may take: whole model
    mini-batches, the buffer empty, up to the first batch with a label not seen yet
    (`start` itself when there are none)."""
    if not model._classes or model._n_buf or bs != model.batch_size:
        return start
    stop = start + (n - start) // bs * bs
    for j in range(k, len(pairs)):
        i, v = pairs[j]
        if i >= stop:
            break
        if v not in model._class_index:
            return start + (i - start) // bs * bs
    return stop


def batch_by_batch(model, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Test-then-train on whole mini-batches of known classes with the buffer empty, one
    update per mini-batch: `codes` int64 class indices (-1 unlabeled); returns the predicted
    class indices, each row predicted before the update of its mini-batch
    (`_predict_update`, or the mixture's prediction with a twin)."""
    bs = model.batch_size
    predicted = np.empty(len(X), dtype=np.int64)
    for start in range(0, len(X), bs):
        batch = slice(start, start + bs)
        model._X_buf[:] = X[batch]
        model._y_buf[:] = codes[batch]
        model._n_buf = bs
        model._n_buf_labeled = int((codes[batch] >= 0).sum())
        P = flush(model, predict=True) if model._mixture is None else mixed_flush(model)
        predicted[batch] = P.argmax(axis=1)
    return predicted


def mixed_flush(model) -> np.ndarray:
    """`flush(model, predict=True)` of a model with experts beside its network: the
    mixture's `p(y | x)` of the buffer's rows before the update (with the weights before
    them), the labeled rows then scored by every expert's predictions, and every expert
    updated."""
    codes = model._y_buf
    Ps = safety.expert_proba(model, model._X_buf)
    P = model._mixture.mix(Ps)
    labeled = codes >= 0  # scored before the update, as the rows of `push` and `push_one`
    model._mixture.score([P_e[labeled] for P_e in Ps], codes[labeled])
    flush(model, P=Ps[0])  # the network's prediction: not computed again
    return P
