"""The offline trainer of the MNIST experiment: one seeded trial, the grid search, workers.

A trial (`TrialSpec`) trains one model on mini-batches of 10 labeled + 10 unlabeled images
(paper Algorithm 1) for a number of passes over the unlabeled images, then scores it on the
validation and test images. `run_specs` runs many, in spawned processes with one BLAS thread
each. The data is an `MNIST` of arrays; the 20 NewsGroups runner passes its documents as one
(binary term vectors as the "images") and a loader of its own for the workers.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import os
import time

import numpy as np

from .data import MNIST, load_mnist, pixels, split_indices

__all__ = [
    "MODELS", "TrialSpec", "batch_plan", "build_model", "error_rate", "planned_updates",
    "run_specs", "run_trial", "select",
]

#: `--model` name -> (name in `evaluation.runs.registry.MODELS`, row of the paper's Table 1).
MODELS = {"dhbm": ("dhbm-mf", "3-DHBM"), "dhda": ("dhda", "3-DHDA"), "mlp": ("pl-mlp", "3-PL-MLP")}


def batch_plan(labeled, unlabeled, epochs: int, per_batch: tuple, rng: np.random.Generator):
    """Yield `(labeled_rows, unlabeled_rows)` index arrays of each update.

    Each epoch is a fresh shuffle of `unlabeled`, cut into mini-batches of `per_batch[1]`
    rows (a short last one dropped); each is paired with the next `per_batch[0]` rows of an
    endless stream of shuffles of `labeled` (so one labeled epoch is
    `len(labeled) / per_batch[0]` updates).

    """
    n_lab, n_unlab = per_batch
    stream = np.empty(0, dtype=np.int64)
    for _ in range(epochs):
        order = rng.permutation(unlabeled)
        for start in range(0, len(order) - n_unlab + 1, n_unlab):
            while len(stream) < n_lab:
                stream = np.concatenate([stream, rng.permutation(labeled)])
            yield stream[:n_lab], order[start : start + n_unlab]
            stream = stream[n_lab:]


def error_rate(model, X, y, chunk: int = 2000) -> float:
    """Share of rows of `X` whose most probable class is not `y` (1.0 before any label)."""
    classes = np.asarray(model.classes_)
    if len(classes) == 0:
        return 1.0
    wrong = 0
    for start in range(0, len(X), chunk):
        P = model.predict_proba_arrays(pixels(X[start : start + chunk]))
        wrong += int((classes[P.argmax(axis=1)] != y[start : start + chunk]).sum())
    return wrong / len(X)


# ---------------------------------------------------------------------------------- trials


@dataclasses.dataclass(frozen=True)
class TrialSpec:
    """One training run: a picklable recipe (the data is passed separately).

    `beta_schedule` is eq. 17's `(T1, T2)` in labeled epochs; the model gets it in updates.
    `max_train` caps the unlabeled rows used (None: all); grid-search runs skip the test
    images (`score_test` False); `keep_best` scores the checkpoint of the lowest validation
    error (`run_trial`). `split_seed` fixes which images are
    labeled and held out, `seed` the model and the order of the mini-batches.
    """

    model: str
    trial: int
    seed: int
    split_seed: int
    params: dict = dataclasses.field(default_factory=dict, hash=False)
    labels: int = 100
    validation: int = 1000
    epochs: int = 6
    labeled_per_batch: int = 10
    unlabeled_per_batch: int = 10
    beta_schedule: tuple | None = (3, 300)
    max_train: int | None = None
    score_test: bool = True
    keep_best: bool = False

    def updates_per_labeled_epoch(self) -> float:
        return self.labels / self.labeled_per_batch

    def model_params(self) -> dict:
        """Constructor arguments: `params`, the mini-batch size and the schedule in updates."""
        params = dict(self.params)
        params["batch_size"] = self.labeled_per_batch + self.unlabeled_per_batch
        if self.beta_schedule is not None:
            k = self.updates_per_labeled_epoch()
            params["beta_schedule"] = tuple(float(t) * k for t in self.beta_schedule)
        else:
            params["beta_schedule"] = None
        if "hidden_sizes" in params:
            params["hidden_sizes"] = tuple(params["hidden_sizes"])
        return params


def build_model(spec: TrialSpec, n_features: int, n_classes: int):
    """The fresh model of `spec` from `evaluation.runs.registry` (on top of `Class.paper()`)."""
    from ...runs import registry

    name = MODELS[spec.model][0] if spec.model in MODELS else spec.model
    return registry.make_model(
        name, n_features, n_classes, seed=spec.seed, params=spec.model_params(),
        batch_size=spec.labeled_per_batch + spec.unlabeled_per_batch,
    )


def run_trial(spec: TrialSpec, data: MNIST, make_model=None, progress=None,
              chunk_updates: int = 50, validate_every: int | None = None) -> dict:
    """Train one model per `spec` on `data`, return its validation and test errors.

    `make_model(spec, n_features, n_classes)` builds the model (default `build_model`);
    `progress(n)` is called with the number of updates done since its last call, and every
    `validate_every` updates (None: never; `VALIDATE_EVERY` when `spec.keep_best`) as
    `progress(n, error)` with the current validation error, and with the final one as
    `progress(0, error)`. The checks are in the result's `curve`, `[(updates, error)]`.
    With `spec.keep_best` the model scored on the test images is the one of the lowest
    validation error among the checks and the end (`stopped_at` its update count).
    """
    start = time.perf_counter()
    labeled, validation, unlabeled = split_indices(
        data.train_labels, spec.labels, spec.validation, spec.split_seed
    )
    rng = np.random.default_rng(spec.seed)
    if spec.max_train is not None and spec.max_train < len(unlabeled):
        unlabeled = np.sort(rng.choice(unlabeled, size=spec.max_train, replace=False))
    n_classes = len(np.unique(data.train_labels))
    model = (make_model or build_model)(spec, data.train_images.shape[1], n_classes)
    X, y = data.train_images, data.train_labels
    per_batch = (spec.labeled_per_batch, spec.unlabeled_per_batch)
    mask = np.r_[np.ones(per_batch[0], bool), np.zeros(per_batch[1], bool)]
    plan = batch_plan(labeled, unlabeled, spec.epochs, per_batch, rng)
    if spec.keep_best and not validate_every:
        validate_every = VALIDATE_EVERY
    updates, curve, best = 0, [], None
    report = progress or (lambda n, error=None: None)

    def check():
        nonlocal best
        error = error_rate(model, X[validation], y[validation])
        curve.append((updates, error))
        if spec.keep_best and (best is None or error < best[0]):
            best = (error, updates, copy.deepcopy(model))
        return error

    while True:
        # Whole mini-batches, many per call: the model's buffer cuts them where we did.
        block = list(itertools.islice(plan, chunk_updates))
        if not block:
            break
        rows = np.concatenate([np.r_[lab, unlab] for lab, unlab in block])
        model.learn_arrays(pixels(X[rows]), y[rows], np.tile(mask, len(block)))
        updates += len(block)
        if validate_every and updates % validate_every < len(block) and (
                progress is not None or spec.keep_best):
            report(len(block), check())
        else:
            report(len(block))
    final = check() if not curve or curve[-1][0] != updates else curve[-1][1]
    if best is not None and best[0] < final:
        final, stopped_at, model = best
    else:
        stopped_at = updates
    result = {
        "model": spec.model,
        "trial": spec.trial,
        "seed": spec.seed,
        "learning_rate": spec.params.get("learning_rate"),
        "beta": spec.params.get("beta"),
        "validation_error": final,
        "test_error": (error_rate(model, data.test_images, data.test_labels)
                       if spec.score_test else float("nan")),
        "updates": updates,
        "stopped_at": stopped_at,
        "unlabeled_rows": len(unlabeled),
        "seconds": time.perf_counter() - start,
        "curve": curve,
    }
    if validate_every:  # the final figure (short runs show only it)
        report(0, final)
    return result


def planned_updates(spec: TrialSpec, n_train: int) -> int:
    """Updates `run_trial` will make on a training set of `n_train` images."""
    n_unlab = n_train - spec.labels - spec.validation
    if spec.max_train is not None:
        n_unlab = min(n_unlab, spec.max_train)
    return spec.epochs * (n_unlab // spec.unlabeled_per_batch)


def select(specs, data: MNIST, make_model=None, runner=None) -> tuple[dict, list]:
    """Run every grid point in `specs`, return the params of the lowest validation error
    (the first on ties) and every result."""
    results = (runner or (lambda s: [run_trial(x, data, make_model) for x in s]))(list(specs))
    best = min(range(len(results)), key=lambda i: results[i]["validation_error"])
    return dict(specs[best].params), results


# ---------------------------------------------------------------------------------- execution

_DATA_CACHE: dict = {}


#: Environment variables that cap the BLAS thread pools (OpenBLAS, MKL, BLIS, OpenMP): the
#: worker processes are started with them set to 1, so `jobs` workers use `jobs` cores.
BLAS_THREAD_VARS = (
    "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "OMP_NUM_THREADS",
)


def _single_threaded_blas():
    """A context in which BLAS runs on one thread (threadpoolctl when installed; otherwise
    the environment variables, read by the BLAS when the worker loads it, do the job)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


#: Updates between two validation errors on the progress bar (about 10 s of a trial, the
#: 1,000 validation images cost about 0.1 s).
VALIDATE_EVERY = 1000


def _worker(spec: TrialSpec, directory: str, queue, index: int, loader=None) -> dict:
    loader = loader or load_mnist
    key = (loader.__module__, loader.__qualname__, directory)
    data = _DATA_CACHE.get(key)
    if data is None:
        data = _DATA_CACHE[key] = loader(directory)
    report = None if queue is None else (lambda n, e=None: queue.put((index, n, e)))
    with _single_threaded_blas():
        return run_trial(spec, data, progress=report,
                         validate_every=None if queue is None else VALIDATE_EVERY)


def _blas_threads() -> int | None:
    """The largest BLAS thread count of this process (None without threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover
        return None
    counts = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(counts, default=None)


class _Progress:
    """One bar of updates over all the runs of a stage, with the latest validation error of
    each run that reported one; nothing when quiet."""

    def __init__(self, total: int, desc: str, quiet: bool, names=()):
        self.bar = None
        self.names = list(names)
        self.errors: dict = {}
        if not quiet:
            from ...runs import progress

            self.bar = progress.bar(total, desc, unit="upd", unit_scale=True, dynamic_ncols=True)

    def update(self, n: int, error: float | None = None, index: int = 0) -> None:
        if self.bar is None:
            return
        if error is not None:
            self.errors[index] = error
            self.bar.set_postfix_str(", ".join(
                f"{self.names[i] if i < len(self.names) else i}: val {100 * e:.1f} %"
                for i, e in sorted(self.errors.items())[-4:]), refresh=False)
        self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_specs(specs, data: MNIST, directory: str | None, jobs: int, desc: str, quiet: bool,
              make_model=None, on_result=None, loader=None) -> list:
    """Run `specs` (in `jobs` spawned processes that read `directory` themselves when > 1,
    with `loader(directory)`, a module-level function: default `load_mnist`).

    `on_result(result)` is called as each run finishes (so a long job leaves its finished
    trials behind if it is cut off).
    """
    specs = list(specs)
    names = [f"trial {s.trial}" if s.trial >= 0 else
             f"lr {s.params.get('learning_rate')} beta {s.params.get('beta')}" for s in specs]
    bar = _Progress(sum(planned_updates(s, len(data.train_labels)) for s in specs), desc, quiet,
                    names)
    every = None if quiet else VALIDATE_EVERY
    try:
        if jobs <= 1 or len(specs) == 1 or directory is None:
            results = []
            for i, s in enumerate(specs):
                results.append(run_trial(
                    s, data, make_model, validate_every=every,
                    progress=lambda n, e=None, i=i: bar.update(n, e, i)))
                if on_result is not None:
                    on_result(results[-1])
            return results
        _warm_up(specs, data)
        return _run_processes(specs, directory, jobs, bar, on_result, loader)
    finally:
        bar.close()


def _warm_up(specs, data: MNIST) -> None:
    """Compile each model the specs run, here, once: the workers load Numba's cache."""
    from ...runs.warmup import warm_up

    n_features, n_classes = data.train_images.shape[1], len(np.unique(data.train_labels))
    kinds = {(s.model, repr(sorted(s.model_params().items()))): s for s in specs}
    warm_up(((build_model(s, n_features, n_classes), n_features) for s in kinds.values()),
            arrays=True)


@contextlib.contextmanager
def _environment(**values):
    """`os.environ` with `values` set, restored on exit."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run_processes(specs, directory, jobs, bar, on_result=None, loader=None) -> list:
    import multiprocessing as mp
    import queue as queue_module
    from concurrent import futures

    from ...runs.workers import counting, process_pool

    context = mp.get_context("spawn")
    # Workers inherit the environment when spawned: one BLAS thread each, so that `jobs`
    # workers do not oversubscribe `jobs` cores (OpenBLAS would start one thread per core).
    with _environment(**dict.fromkeys(BLAS_THREAD_VARS, "1")), context.Manager() as manager:
        queue = None if bar.bar is None else manager.Queue()
        results: list = [None] * len(specs)
        with counting(results), process_pool(jobs, context=context) as pool:
            pending = {pool.submit(_worker, s, directory, queue, i, loader): i
                       for i, s in enumerate(specs)}
            while pending:
                done, _ = futures.wait(pending, timeout=0.5, return_when=futures.FIRST_COMPLETED)
                while queue is not None:
                    try:
                        index, n, error = queue.get_nowait()
                        bar.update(n, error, index)
                    except queue_module.Empty:
                        break
                for f in done:
                    i = pending.pop(f)
                    results[i] = f.result()
                    if on_result is not None:
                        on_result(results[i])
    return results
