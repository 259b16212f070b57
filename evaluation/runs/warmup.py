"""Compile once, in the parent: the models' kernels before the worker processes start.

Numba compiles a kernel in the process that first calls it and keeps the result in its
on-disk cache (`cache=True`). Workers started together on a cold cache would each compile the
same kernels, seconds per model, `--jobs` times over; so every runner that starts workers
calls `warm_up` first with a fresh model of each kind the job runs. The parent pays the
compilation once, the workers load the cache. On a warm cache it costs the loading only.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np

from ..prequential import last_step

__all__ = ["announce", "compiles", "warm_up"]


def compiles(model) -> bool:
    """Whether `model` (or the last step of a River pipeline) is one of this project's models,
    whose first use compiles kernels."""
    return type(last_step(model)).__module__.split(".")[0] == "river_dhbm"


def _mini_batch(n_rows: int, n_features: int):
    """Rows of zeros and ones, two classes, every fourth row unlabeled: each kind of row the
    runs feed, so that each branch of the update compiles."""
    X = np.add.outer(np.arange(n_rows), np.arange(n_features)) % 3 == 0
    y = np.arange(n_rows) % 2
    labeled = np.arange(n_rows) % 4 != 3
    return X.astype(np.float64), y, labeled


def announce(models: Iterable, recording: bool = False) -> None:
    """Say in one line which of these fresh models (River pipelines too) must compile their
    kernels, before the first does: the first-use notice then names every model the job
    compiles, not only the first (`first_use.announce_compilations`). A job `recording` its
    results also trains the behaviour hash's panel when it writes them
    (`files.behaviour_models`): those are named too."""
    from river_dhbm._kernels.first_use import announce_compilations

    models = [last_step(model) for model in models]
    if recording:
        from .files import behaviour_models

        models += behaviour_models()
    announce_compilations(models)


def warm_up(models: Iterable[tuple[object, int]], arrays: bool = False,
            recording: bool = False) -> float:
    """Teach each fresh `(model, n_features)` one mini-batch and predict, as the job's runs
    will: River's dict API (`learn_one`, `predict_one`, `predict_proba_one`), or with `arrays`
    the array path where the model has it (`test_then_train_arrays` over a few mini-batches,
    `learn_arrays`, `predict_proba_arrays`). Models of other libraries are skipped; `recording`
    as for `announce`. Returns the seconds spent.

    The models are spent: build them for this alone.
    """
    start = time.perf_counter()
    models = list(models)
    announce((model for model, _ in models), recording)
    for model, n_features in models:
        if not compiles(model):
            continue
        batch_size = last_step(model).batch_size
        if arrays and hasattr(model, "test_then_train_arrays"):
            X, y, labeled = _mini_batch(3 * batch_size, n_features)
            model.test_then_train_arrays(X, y, labeled)  # the first batch finds no class yet
            model.learn_arrays(X[:batch_size], y[:batch_size], labeled[:batch_size])
            model.predict_proba_arrays(X[:batch_size])  # many rows: not the one-row kernel
            continue
        X, y, labeled = _mini_batch(batch_size, n_features)
        rows = [dict(enumerate(row)) for row in X.tolist()]
        for x, label, kept in zip(rows, y.tolist(), labeled.tolist()):
            model.learn_one(x, label if kept else None)
        model.predict_one(rows[0])
        model.predict_proba_one(rows[0])
    return time.perf_counter() - start
