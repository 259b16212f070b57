"""Semi-supervised prequential (test-then-train) evaluation on mini-batches."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ["PrequentialResult", "prequential", "takes_unlabeled"]


@njit(cache=True)
def _fold_losses(losses, alpha, step, state, positions, faded, errors, n_recorded):
    """Fold 0-1 losses into the faded and cumulative error, recording every `step` instances.

    `state` float64 [4] = (faded loss sum, faded weight sum, error count, position), updated in
    place; the curve arrays are filled from index `n_recorded`, whose new value is returned.
    """
    loss_sum, weight_sum, n_errors, position = state[0], state[1], state[2], state[3]
    for k in range(losses.shape[0]):
        loss_sum = alpha * loss_sum + losses[k]
        weight_sum = alpha * weight_sum + 1.0
        n_errors += losses[k]
        position += 1.0
        if int(position) % step == 0:
            positions[n_recorded] = int(position)
            faded[n_recorded] = loss_sum / weight_sum
            errors[n_recorded] = n_errors / position
            n_recorded += 1
    state[0], state[1], state[2], state[3] = loss_sum, weight_sum, n_errors, position
    return n_recorded


class _Curve:
    """Running faded/cumulative error with the recorded curve (eq. 18 of the paper)."""

    def __init__(self, n_instances: int, step: int, fading_factor: float):
        n_points = n_instances // step + (n_instances % step != 0)
        self.step = step
        self.alpha = float(fading_factor)
        self.state = np.zeros(4)
        self.positions = np.zeros(n_points, dtype=np.int64)
        self.faded = np.zeros(n_points)
        self.errors = np.zeros(n_points)
        self.n_recorded = 0

    def fold(self, losses: np.ndarray) -> None:
        self.n_recorded = _fold_losses(
            losses, self.alpha, self.step, self.state,
            self.positions, self.faded, self.errors, self.n_recorded,
        )

    def finish(self) -> None:
        """Record the last position when the run does not end on a multiple of `step`."""
        position = int(self.state[3])
        if position and (self.n_recorded == 0 or self.positions[self.n_recorded - 1] != position):
            self.positions[self.n_recorded] = position
            self.faded[self.n_recorded] = self.state[0] / self.state[1]
            self.errors[self.n_recorded] = self.state[2] / position
            self.n_recorded += 1


@dataclass
class PrequentialResult:
    """The curve of one prequential run.

    Attributes
    ----------
    positions
        Number of instances seen at each recorded point (int64), every `step` instances and the
        last instance.
    faded_error
        Faded prequential error (paper eq. 18) at each point.
    error
        Cumulative error rate (fraction of mistakes so far) at each point.
    seconds
        Wall time of the run, in seconds.
    path
        `"arrays"` or `"dicts"`: which evaluation loop ran.

    """

    positions: np.ndarray
    faded_error: np.ndarray
    error: np.ndarray
    seconds: float
    path: str = "arrays"

    @property
    def n_instances(self) -> int:
        return int(self.positions[-1]) if len(self.positions) else 0

    @property
    def final(self) -> float:
        """The faded error at the end of the run."""
        return float(self.faded_error[-1])

    @property
    def mean_faded_error(self) -> float:
        """The faded error averaged over the recorded points (the area under the curve)."""
        return float(np.mean(self.faded_error))

    @property
    def instances_per_second(self) -> float:
        return self.n_instances / self.seconds if self.seconds > 0 else float("inf")

    def summary(self) -> dict:
        """Scalar summary: instances, final and mean faded error, final cumulative error, time."""
        return {
            "instances": self.n_instances,
            "final_faded_error": self.final,
            "mean_faded_error": self.mean_faded_error,
            "final_error": float(self.error[-1]),
            "seconds": self.seconds,
        }

    def __repr__(self) -> str:
        return (
            f"PrequentialResult(instances={self.n_instances}, final={self.final:.4f}, "
            f"mean={self.mean_faded_error:.4f}, error={self.error[-1]:.4f}, "
            f"seconds={self.seconds:.2f}, path={self.path!r})"
        )


def takes_unlabeled(model) -> bool:
    """Whether `model` learns from unlabeled rows (`learn_one(x, None, labeled=False)`).

    True for this project's models, recognised by their array path (`learn_arrays`) or by an
    explicit class attribute `_semi_supervised = True` (for any other semi-supervised learner).
    River's supervised models get only the labeled rows.
    """
    return bool(getattr(model, "_semi_supervised", False)) or hasattr(model, "learn_arrays")


def _has_array_path(dataset, model) -> bool:
    return (
        hasattr(dataset, "iter_arrays")
        and hasattr(model, "learn_arrays")
        and hasattr(model, "predict_proba_arrays")
        and hasattr(model, "classes_")
    )


def _check_args(n_instances, batch_size, fading_factor, step) -> None:
    for name, value in (("n_instances", n_instances), ("batch_size", batch_size), ("step", step)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"Invalid {name} ({value!r}). Must be an int >= 1")
    if not 0.0 < fading_factor <= 1.0:
        raise ValueError(f"Invalid fading_factor ({fading_factor}). Valid range is (0, 1]")


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


def _run_arrays(dataset, model, n_instances, batch_size, curve, progress) -> None:
    chunk_size = batch_size * max(1, 2000 // batch_size)
    losses = np.empty(chunk_size)
    labels = np.empty(0)  # model.classes_ as an array, rebuilt when a class appears
    done = 0
    for X, y, labeled in _aligned_chunks(dataset.iter_arrays(chunk_size), batch_size):
        m = min(len(y), n_instances - done)
        if len(losses) < m:
            losses = np.empty(m)
        for b0 in range(0, m, batch_size):
            b1 = min(b0 + batch_size, m)
            Xb, yb = X[b0:b1], y[b0:b1]
            classes = model.classes_
            if len(classes) != len(labels):
                labels = np.asarray(classes)
            if len(labels):
                P = model.predict_proba_arrays(Xb)
                losses[b0:b1] = labels[P.argmax(axis=1)] != yb
            else:
                losses[b0:b1] = 1.0  # no prediction before the first label: a mistake
            model.learn_arrays(Xb, yb, labeled[b0:b1])
        curve.fold(losses[:m])
        done += m
        if progress is not None:
            progress(m)
        if done >= n_instances:
            return
    raise ValueError(f"The dataset ended after {done} instances, {n_instances} were asked for")


def _run_dicts(dataset, model, n_instances, batch_size, curve, progress) -> None:
    semi = takes_unlabeled(model)
    predict, learn = model.predict_one, model.learn_one
    losses = np.empty(batch_size)
    rows = iter(dataset)
    done = 0
    while done < n_instances:
        batch = list(itertools.islice(rows, min(batch_size, n_instances - done)))
        if not batch:
            raise ValueError(
                f"The dataset ended after {done} instances, {n_instances} were asked for"
            )
        for i, (x, y, *_) in enumerate(batch):
            y_pred = predict(x)
            losses[i] = 1.0 if y_pred is None or y_pred != y else 0.0
        for x, y, *extra in batch:
            labeled = extra[0].get("labeled", True) if extra else True
            if semi:
                learn(x, y if labeled else None, labeled=labeled)
            elif labeled:
                learn(x, y)
        curve.fold(losses[: len(batch)])
        done += len(batch)
        if progress is not None:
            progress(len(batch))


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

    When the dataset has `iter_arrays` (e.g. `streams.LabelMask`) and the model has the array
    path (`learn_arrays`, `predict_proba_arrays`, `classes_`), the loop runs on numpy blocks with
    vectorised scoring; otherwise it falls back to River's dicts (`predict_one`/`learn_one`).
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

    """
    _check_args(n_instances, batch_size, fading_factor, step)
    curve = _Curve(int(n_instances), int(step), fading_factor)
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
