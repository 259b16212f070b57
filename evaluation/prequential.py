"""Semi-supervised prequential (test-then-train) evaluation on mini-batches."""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable

import numpy as np

from .curve import Curve, PrequentialResult
from .delayed import DelayedLabels

__all__ = ["PrequentialResult", "last_step", "prequential", "takes_unlabeled"]


def last_step(model):
    """The learner at the end of a River pipeline (nested ones included), or `model` itself."""
    from river import compose

    if isinstance(model, compose.Pipeline):
        return last_step(list(model.steps.values())[-1])
    return model


def takes_unlabeled(model) -> bool:
    """Whether `model` learns from unlabeled rows (`learn_one(x, None, labeled=False)`).

    True for this project's models, recognised by their array path (`learn_arrays`) or by an
    explicit class attribute `_semi_supervised = True` (for any other semi-supervised learner).
    River's supervised models get only the labeled rows. A River `Pipeline` takes them when its
    last step does (the pipeline routes the `labeled` keyword to the steps that accept it).
    """
    model = last_step(model)
    return bool(getattr(model, "_semi_supervised", False)) or hasattr(model, "learn_arrays")


def _has_array_path(dataset, model) -> bool:
    return (
        callable(getattr(dataset, "iter_arrays", None))
        and hasattr(model, "learn_arrays")
        and hasattr(model, "predict_proba_arrays")
        and hasattr(model, "classes_")
    )


def _check_args(dataset, model, n_instances, batch_size, fading_factor, step) -> None:
    """One line naming the first bad argument, before the model sees anything."""
    for name, value in (("n_instances", n_instances), ("batch_size", batch_size), ("step", step)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"Invalid {name} ({value!r}). Must be an int >= 1")
    if (
        isinstance(fading_factor, bool)
        or not isinstance(fading_factor, (int, float, np.floating))
        or not 0.0 < fading_factor <= 1.0
    ):
        raise ValueError(f"Invalid fading_factor ({fading_factor!r}). Valid range is (0, 1]")
    if not all(callable(getattr(model, m, None)) for m in ("predict_one", "learn_one")):
        raise TypeError(
            f"Invalid model ({model!r:.60}). Must be a River classifier (predict_one, learn_one)"
        )
    if not any(callable(getattr(dataset, m, None)) for m in ("__iter__", "iter_arrays")):
        raise TypeError(
            f"Invalid dataset ({dataset!r:.60}). Must be a stream (iterable, or iter_arrays)"
        )


def _masked_blocks(dataset, chunk_size: int):
    """`dataset.iter_arrays(chunk_size)`, checked to yield `(X, y, labeled)`: a stream's own
    `(X, y)` blocks mean the label mask is missing (say so before the model learns)."""
    for block in dataset.iter_arrays(chunk_size):
        if not isinstance(block, tuple) or len(block) != 3:
            raise ValueError(
                f"Invalid dataset ({dataset!r:.60}): no label mask (its blocks are not "
                "(X, y, labeled)). Wrap it: streams.LabelMask(dataset, label_ratio=0.1)"
            )
        yield block


#: Rows per block the stream is read in (a whole number of mini-batches). Each block is one
#: test-then-train call, whose fixed cost (argument passing, the numpy work around it, the
#: caches it finds cold) made a DHBM-MF run on LED 1-4 % slower at 2,000 rows (two paired
#: measurements); the curve does not depend on it.
_CHUNK_ROWS = 10_000


def _chunk_size(batch_size: int) -> int:
    return batch_size * max(1, _CHUNK_ROWS // batch_size)


def _aligned_chunks(chunks, batch_size: int):
    """Re-cut (X, y, labeled) blocks so that every yielded block but the last holds whole
    mini-batches (a mini-batch must not straddle two blocks)."""
    carry = None
    for X, y, labeled in chunks:
        if carry is not None:
            X = np.concatenate([carry[0], X])
            y = np.concatenate([carry[1], y])
            labeled = np.concatenate([carry[2], labeled])
            carry = None
        cut = len(y) - len(y) % batch_size
        if cut < len(y):
            carry = (X[cut:], y[cut:], labeled[cut:])
        if cut:
            yield X[:cut], y[:cut], labeled[:cut]


def _test_then_train_block(model, X, y, labeled, batch_size, losses) -> None:
    """One call for the whole block (`test_then_train_arrays`, this package's models)."""
    predicted = model.test_then_train_arrays(X, y, labeled, batch_size)
    labels = np.asarray(model.classes_)  # the indices stay valid: classes are only appended
    known = predicted >= 0
    losses[:] = 1.0  # no prediction before the first label: a mistake
    losses[known] = labels[predicted[known]] != y[known]


def _test_then_train_batches(model, X, y, labeled, batch_size, losses, schedule=None) -> None:
    """Mini-batch by mini-batch: `predict_proba_arrays`, then `learn_arrays` (of `schedule`'s
    events when labels come late: `labeled` are then the kept labels)."""
    for b0 in range(0, len(y), batch_size):
        b1 = min(b0 + batch_size, len(y))
        labels = np.asarray(model.classes_)
        if len(labels):
            P = model.predict_proba_arrays(X[b0:b1])
            losses[b0:b1] = labels[P.argmax(axis=1)] != y[b0:b1]
        else:
            losses[b0:b1] = 1.0  # no prediction before the first label: a mistake
        block = X[b0:b1], y[b0:b1], labeled[b0:b1]
        model.learn_arrays(*(block if schedule is None else schedule.events(*block)))


def _schedule(dataset):
    """The `DelayedLabels` of a dataset with a `delay` (a `LabelMask`), else None."""
    delay = getattr(dataset, "delay", 0)
    return DelayedLabels(delay, getattr(dataset, "warm_up", 0)) if delay else None


def _run_arrays(dataset, model, n_instances, batch_size, curve, progress) -> None:
    chunk_size = _chunk_size(batch_size)
    losses = np.empty(chunk_size)
    run = (
        _test_then_train_block
        if callable(getattr(model, "test_then_train_arrays", None))
        else _test_then_train_batches
    )
    schedule = _schedule(dataset)
    if schedule is not None:  # late labels: the learner's rows differ from the tested ones
        run = functools.partial(_test_then_train_batches, schedule=schedule)
    done = 0
    for X, y, labeled in _aligned_chunks(_masked_blocks(dataset, chunk_size), batch_size):
        m = min(len(y), n_instances - done)
        if len(losses) < m:
            losses = np.empty(m)
        run(model, X[:m], y[:m], labeled[:m], batch_size, losses[:m])
        curve.fold(losses[:m])
        done += m
        if progress is not None:
            progress(m)
        if done >= n_instances:
            return
    raise ValueError(f"The dataset ended after {done} instances, {n_instances} were asked for")


def _rows(dataset, chunk_size: int):
    """`(x, y, labeled, late)` rows, `late` the `(x, y)` pairs whose delayed label is due
    after the row. From the stream's numpy blocks when it has them (much cheaper than its dict
    path; features are the columns 0..d-1, as in the dict path; the delays are then the
    caller's, `_schedule`), else from iterating it (a plain `(x, y)` stream counts as fully
    labeled; a `LabelMask` of it brings its delayed labels in `late`)."""
    if callable(getattr(dataset, "iter_arrays", None)):
        for X, y, labeled in _masked_blocks(dataset, chunk_size):
            keys = range(X.shape[1])
            for row, label, kept in zip(X.tolist(), y.tolist(), labeled.tolist()):
                yield dict(zip(keys, row)), label, kept, ()
    else:
        for x, y, *extra in dataset:
            kwargs = extra[0] if extra else {}
            yield x, y, kwargs.get("labeled", True), kwargs.get("late", ())


def _learning_events(batch, schedule):
    """The `(x, y, labeled)` learning events of `batch`: the caller's delays (`schedule`), or
    each row and then the late labels it brings (a `LabelMask` without an array path)."""
    if schedule is not None:
        return _learn_delayed(batch, schedule)
    return [event for x, y, labeled, late in batch
            for event in [(x, y, labeled), *((x_late, y_late, True) for x_late, y_late in late)]]


def _learn_delayed(batch, schedule):
    """The `(x, y, labeled)` learning events of `batch` and the late labels due in it."""
    xs, ys, kept, _ = zip(*batch)
    xs, ys, labeled = schedule.events(list(xs), np.array(ys), np.array(kept, dtype=bool))
    return zip(xs, ys.tolist(), labeled.tolist())


def _run_dicts(dataset, model, n_instances, batch_size, curve, progress) -> None:
    semi = takes_unlabeled(model)
    predict, learn = model.predict_one, model.learn_one
    chunk_size = _chunk_size(batch_size)
    losses = np.empty(chunk_size)
    rows = _rows(dataset, chunk_size)
    schedule = _schedule(dataset) if callable(getattr(dataset, "iter_arrays", None)) else None
    done = n_pending = 0  # losses[:n_pending] are not folded into the curve yet
    while done < n_instances:
        batch = list(itertools.islice(rows, min(batch_size, n_instances - done)))
        if not batch:
            curve.fold(losses[:n_pending])
            raise ValueError(
                f"The dataset ended after {done} instances, {n_instances} were asked for"
            )
        for i, (x, y, _, _) in enumerate(batch, start=n_pending):
            y_pred = predict(x)
            losses[i] = 1.0 if y_pred is None or y_pred != y else 0.0
        for x, y, labeled in _learning_events(batch, schedule):
            if semi:
                learn(x, y if labeled else None, labeled=labeled)
            elif labeled:
                learn(x, y)
        done += len(batch)
        n_pending += len(batch)
        if n_pending + batch_size > chunk_size or done == n_instances:
            curve.fold(losses[:n_pending])
            if progress is not None:
                progress(n_pending)
            n_pending = 0


def prequential(
    dataset,
    model,
    n_instances: int,
    batch_size: int = 20,
    fading_factor: float = 0.995,
    step: int = 1000,
    progress: Callable[[int], object] | None = None,
) -> PrequentialResult:
    """Semi-supervised prequential evaluation: test-then-train on mini-batches.

    For each mini-batch of `batch_size` instances, every row is predicted first, then the model
    learns the mini-batch. Every prediction is scored against the true label (a row with no
    prediction, e.g. before any label, counts as a mistake), while the model only sees the labels
    the mask kept: this project's models get every row with its `labeled` flag, River's
    supervised models get the labeled rows only.

    Delayed labels and a labeled warm-up come with the dataset (`streams.LabelMask`'s `delay`
    d and `warm_up` w, both 0 by default: the protocol above). A row at position i >= w whose
    label the mask keeps is learnt unlabeled in its place, like any other, and again, labeled,
    right after row i + d - 1 is learnt: within a mini-batch the learner gets each row in
    order followed by the labels due after it, so with `batch_size=1` a label arrives before
    row i + d is predicted, exactly as in capymoa's `prequential_ssl_evaluation` with
    `delay_length=d` (a supervised learner skips the unlabeled showing). The labels of the
    last d - 1 rows never arrive. The first w rows all keep their labels, which arrive at
    once (MOA's initial window, which capymoa's Python loop leaves unimplemented, also trains
    on them labeled, but without testing them; here they are tested like every row).

    When the dataset has `iter_arrays` (e.g. `streams.LabelMask`) and the model has the array
    path (`learn_arrays`, `predict_proba_arrays`, `classes_`), the loop runs on numpy blocks with
    vectorised scoring (one `test_then_train_arrays` call per block when the model has it); otherwise it falls back to River's dicts (`predict_one`/`learn_one`),
    built from the stream's blocks when it has them (features are the columns `0..d-1`).
    Both loops give the same numbers.

    Parameters
    ----------
    dataset
        A label-masked stream: iterating yields `(x, y_true, {"labeled": bool})` (a plain
        `(x, y)` stream counts as fully labeled); `iter_arrays(chunk_size)`, if present, yields
        `(X, y_true, labeled)` blocks of the same rows.
    model
        A River classifier, modified in place.
    n_instances
        How many instances to evaluate.
    batch_size
        Mini-batch size of the test-then-train loop (the paper uses 20).
    fading_factor
        Forgetting factor of the faded error (the paper uses 0.995).
    step
        A point of the curve is recorded every `step` instances (and at the last instance).
    progress
        Optional callable receiving the number of instances just processed (e.g.
        `tqdm.update`), called every few thousand instances.

    Returns
    -------
    PrequentialResult

    Examples
    --------

    >>> from river import datasets, naive_bayes
    >>> from evaluation import prequential

    >>> result = prequential(datasets.Phishing(), naive_bayes.GaussianNB(), 1250, step=250)
    >>> result.positions
    array([ 250,  500,  750, 1000, 1250])
    >>> result.error.round(3)
    array([0.264, 0.188, 0.151, 0.142, 0.133])
    >>> round(result.final, 4)
    0.1045

    A label-masked stream of this package and one of its models take the array path:

    >>> import streams
    >>> from river_dhbm import PseudoLabelMLP
    >>> dataset = streams.LabelMask(streams.LED(seed=1), label_ratio=0.1, batch_size=20, seed=2)
    >>> result = prequential(dataset, PseudoLabelMLP(seed=1), 5000, step=1000)
    >>> result.path, result.positions.tolist()
    ('arrays', [1000, 2000, 3000, 4000, 5000])
    >>> result
    PrequentialResult(instances=5000, final=..., mean=..., error=..., seconds=..., path='arrays')

    """
    _check_args(dataset, model, n_instances, batch_size, fading_factor, step)
    curve = Curve(int(n_instances), int(step), fading_factor)
    path = "arrays" if _has_array_path(dataset, model) else "dicts"
    run = _run_arrays if path == "arrays" else _run_dicts
    start = time.perf_counter()
    run(dataset, model, int(n_instances), int(batch_size), curve, progress)
    seconds = time.perf_counter() - start
    curve.finish()
    n = curve.n_recorded
    return PrequentialResult(
        positions=curve.positions[:n].copy(),
        faded_error=curve.faded[:n].copy(),
        error=curve.errors[:n].copy(),
        seconds=seconds,
        path=path,
    )
