"""The paper's offline experiment: semi-supervised MNIST with 100 labels (its Table 1).

`python -m evaluation mnist --data DIR` reads the four standard IDX files (raw or `.gz`) from
`DIR` (or from the directory in the environment variable `RIVER_DHBM_MNIST`), and follows
section 5.2 and appendix C.1 of the paper:

- 100 labeled training images balanced over the classes, 1,000 more (balanced) held out for
  validation, the rest of the 60,000 used unlabeled; test on the 10,000 test images; pixels
  scaled to [0, 1];
- every update sees a mini-batch of 10 labeled images (cycling through the labeled set) and
  a mini-batch of 10 unlabeled ones (paper Algorithm 1); 6 passes over the unlabeled set;
- `beta` annealed per eq. 17 with T1 = 3 and T2 = 300 labeled epochs (passes over the
  labeled set), converted here to the model's unit, mini-batch updates;
- model selection on the validation images over a coarse grid of learning rate and beta
  (optionally on a shorter run), then `trials` seeded trials with the chosen values.

The settings of each table row live in `configs/mnist_<model>.toml`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gzip
import itertools
import json
import math
import os
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

from .arguments import assignment, floats, positive_int

__all__ = [
    "ENV_VAR",
    "MNIST",
    "MissingData",
    "PAPER_ROWS",
    "TrialSpec",
    "add_parser",
    "error_rate",
    "find_files",
    "load_mnist",
    "read_idx",
    "run",
    "run_trial",
    "select",
    "split_indices",
    "summary_markdown",
]

ENV_VAR = "RIVER_DHBM_MNIST"

#: The four files, in the order train images, train labels, test images, test labels.
FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)

#: Table 1 of the paper: test error (%) with 100 labels; rows other than ours are copied there
#: from Lee (2013). `None`: no standard error reported.
PAPER_ROWS = [
    ("NN", 25.81, None),
    ("SVM", 23.44, None),
    ("CNN", 22.98, None),
    ("TSVM", 16.81, None),
    ("EMBEDNN", 16.86, None),
    ("CAE", 13.47, None),
    ("MTC", 12.03, None),
    ("DROPNN", 21.89, None),
    ("DROPNN+PL", 16.15, None),
    ("DROPNN+PL+DAE", 10.49, None),
    ("3-DHBM", 15.80, 0.9),
    ("3-DHDA", 21.24, 0.6),
]

#: `--model` name -> (name in `evaluation.registry.MODELS`, row of `PAPER_ROWS`).
MODELS = {"dhbm": ("dhbm-sap", "3-DHBM"), "dhda": ("dhda", "3-DHDA")}

RESULT_COLUMNS = [
    "model", "trial", "seed", "learning_rate", "beta", "validation_error", "test_error",
    "updates", "unlabeled_rows", "seconds",
]


class MissingData(Exception):
    """No MNIST where we looked: the message says which files are expected where."""


# ---------------------------------------------------------------------------------- IDX files

_IDX_TYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def _read_bytes(path: Path) -> bytes:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return f.read()
    except (gzip.BadGzipFile, EOFError) as e:
        raise ValueError(f"{str(path)!r} is not a valid gzip file: {e}") from None


def read_idx(path) -> np.ndarray:
    """The array stored in the IDX file `path` (gzip-compressed when its name ends in `.gz`).

    The format (LeCun's MNIST page): two zero bytes, a type code (0x08 unsigned byte, 0x09
    signed byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64), the number of
    dimensions, each dimension as a big-endian int32, then the values in C order.
    A bad header or a size that does not match the dimensions raises `ValueError`.

    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(
            f"{str(path)!r} is not an IDX file: bad magic number {data[:4].hex() or '(empty)'}"
        )
    dtype, ndim = _IDX_TYPES[data[2]], data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{str(path)!r} is truncated: the header needs {header} bytes")
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = header + math.prod(shape) * dtype.itemsize
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "too long"
        raise ValueError(
            f"{str(path)!r} is {what}: shape {shape} needs {expected} bytes, found {len(data)}"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def _missing_message(directory) -> str:
    names = ", ".join(FILES)
    if directory is None:
        return (f"no MNIST directory given: pass --data DIR or set {ENV_VAR}; the directory "
                f"must hold {names} (raw or .gz)")
    return f"MNIST not found: expected {names} (raw or .gz) in {str(directory)!r}"


def find_files(directory) -> list[Path]:
    """The paths of the four MNIST files in `directory` (each raw, `.gz`, or with a dot before
    `idx` as some copies name them); `MissingData` if any is missing."""
    if directory is None or not Path(directory).is_dir():
        raise MissingData(_missing_message(directory))
    directory = Path(directory)
    found = []
    for name in FILES:
        dotted = name.replace("-idx", ".idx")
        candidates = [directory / f"{n}{ext}" for n in (name, dotted) for ext in ("", ".gz")]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            raise MissingData(_missing_message(directory))
        found.append(path)
    return found


@dataclasses.dataclass(frozen=True)
class MNIST:
    """Images as uint8 `[n, 784]` (scale with `pixels`), labels as int64 `[n]`."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


def _images(array: np.ndarray, path: Path) -> np.ndarray:
    if array.ndim < 2:
        raise ValueError(f"{str(path)!r} holds a {array.ndim}-d array, expected images")
    return array.reshape(len(array), -1)


def _labels(array: np.ndarray, path: Path, n: int) -> np.ndarray:
    if array.ndim != 1 or len(array) != n:
        raise ValueError(f"{str(path)!r} holds labels of shape {array.shape}, expected ({n},)")
    return array.astype(np.int64)


def load_mnist(directory=None) -> MNIST:
    """MNIST from `directory`, else from the directory named by `$RIVER_DHBM_MNIST`."""
    if directory is None:
        directory = os.environ.get(ENV_VAR) or None
    paths = find_files(directory)
    train_x, test_x = _images(read_idx(paths[0]), paths[0]), _images(read_idx(paths[2]), paths[2])
    return MNIST(
        train_images=train_x,
        train_labels=_labels(read_idx(paths[1]), paths[1], len(train_x)),
        test_images=test_x,
        test_labels=_labels(read_idx(paths[3]), paths[3], len(test_x)),
    )


def pixels(images: np.ndarray) -> np.ndarray:
    """Gray levels in [0, 255] (uint8) -> float64 in [0, 1] (floats are taken as scaled)."""
    if images.dtype == np.uint8:
        return images.astype(np.float64) / 255.0
    return np.asarray(images, dtype=np.float64)


# ---------------------------------------------------------------------------------- protocol


def _quotas(total: int, classes: np.ndarray, rng: np.random.Generator) -> dict:
    """`total` spread over `classes` as evenly as possible; the remainder goes to classes
    drawn at random."""
    base, extra = divmod(total, len(classes))
    lucky = set(rng.choice(classes, size=extra, replace=False).tolist()) if extra else set()
    return {int(c): base + (1 if int(c) in lucky else 0) for c in classes}


def split_indices(labels, n_labeled: int = 100, n_validation: int = 1000, seed: int = 0):
    """Indices of (labeled, validation, unlabeled) rows: the first two balanced over the
    classes and disjoint, the unlabeled rows everything else; all three sorted.

    Seeded: the same `labels`, sizes and `seed` give the same split.

    """
    labels = np.asarray(labels)
    for name, value in (("n_labeled", n_labeled), ("n_validation", n_validation)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"Invalid {name} ({value!r}). Must be an int >= 0")
    classes = np.unique(labels)
    if n_labeled < len(classes):
        raise ValueError(
            f"Invalid n_labeled ({n_labeled}). Must be at least the number of classes "
            f"({len(classes)}) to balance them"
        )
    rng = np.random.default_rng(seed)
    lab_quota, val_quota = _quotas(n_labeled, classes, rng), _quotas(n_validation, classes, rng)
    labeled, validation = [], []
    for c in classes.tolist():
        rows = rng.permutation(np.flatnonzero(labels == c))
        need = lab_quota[c] + val_quota[c]
        if need > len(rows):
            raise ValueError(
                f"Class {c} has {len(rows)} rows, fewer than the {need} the split needs "
                f"(n_labeled={n_labeled}, n_validation={n_validation})"
            )
        labeled.append(rows[: lab_quota[c]])
        validation.append(rows[lab_quota[c] : need])
    labeled = np.sort(np.concatenate(labeled))
    validation = np.sort(np.concatenate(validation))
    unlabeled = np.setdiff1d(np.arange(len(labels)), np.concatenate([labeled, validation]))
    return labeled, validation, unlabeled


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
    images (`score_test` False). `split_seed` fixes which images are
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
    """The fresh model of `spec` from `evaluation.registry` (on top of `Class.paper()`)."""
    from . import registry

    name = MODELS[spec.model][0] if spec.model in MODELS else spec.model
    return registry.make_model(
        name, n_features, n_classes, seed=spec.seed, params=spec.model_params(),
        batch_size=spec.labeled_per_batch + spec.unlabeled_per_batch,
    )


def run_trial(spec: TrialSpec, data: MNIST, make_model=None, progress=None,
              chunk_updates: int = 50) -> dict:
    """Train one model per `spec` on `data`, return its validation and test errors.

    `make_model(spec, n_features, n_classes)` builds the model (default `build_model`);
    `progress(n)` is called with the number of updates done since its last call.
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
    updates = 0
    while True:
        # Whole mini-batches, many per call: the model's buffer cuts them where we did.
        block = list(itertools.islice(plan, chunk_updates))
        if not block:
            break
        rows = np.concatenate([np.r_[lab, unlab] for lab, unlab in block])
        model.learn_arrays(pixels(X[rows]), y[rows], np.tile(mask, len(block)))
        updates += len(block)
        if progress is not None:
            progress(len(block))
    result = {
        "model": spec.model,
        "trial": spec.trial,
        "seed": spec.seed,
        "learning_rate": spec.params.get("learning_rate"),
        "beta": spec.params.get("beta"),
        "validation_error": error_rate(model, X[validation], y[validation]),
        "test_error": (error_rate(model, data.test_images, data.test_labels)
                       if spec.score_test else float("nan")),
        "updates": updates,
        "unlabeled_rows": len(unlabeled),
        "seconds": time.perf_counter() - start,
    }
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


def _worker(spec: TrialSpec, directory: str, queue, index: int) -> dict:
    data = _DATA_CACHE.get(directory)
    if data is None:
        data = _DATA_CACHE[directory] = load_mnist(directory)
    report = None if queue is None else (lambda n: queue.put((index, n)))
    with _single_threaded_blas():
        return run_trial(spec, data, progress=report)


def _blas_threads() -> int | None:
    """The largest BLAS thread count of this process (None without threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover
        return None
    counts = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(counts, default=None)


class _Progress:
    """One bar of updates over all the runs of a stage; nothing when quiet."""

    def __init__(self, total: int, desc: str, quiet: bool):
        self.bar = None
        if not quiet:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc=desc, unit="upd", unit_scale=True,
                            dynamic_ncols=True, file=sys.stderr)

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def run_specs(specs, data: MNIST, directory: str | None, jobs: int, desc: str, quiet: bool,
              make_model=None, on_result=None) -> list:
    """Run `specs` (in `jobs` spawned processes that read `directory` themselves when > 1).

    `on_result(result)` is called as each run finishes (so a long job leaves its finished
    trials behind if it is cut off).
    """
    specs = list(specs)
    bar = _Progress(sum(planned_updates(s, len(data.train_labels)) for s in specs), desc, quiet)
    try:
        if jobs <= 1 or len(specs) == 1 or directory is None:
            results = []
            for s in specs:
                results.append(run_trial(s, data, make_model, progress=bar.update))
                if on_result is not None:
                    on_result(results[-1])
            return results
        return _run_processes(specs, directory, jobs, bar, on_result)
    finally:
        bar.close()


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


def _run_processes(specs, directory, jobs, bar, on_result=None) -> list:
    import multiprocessing as mp
    import queue as queue_module
    from concurrent import futures

    context = mp.get_context("spawn")
    # Workers inherit the environment when spawned: one BLAS thread each, so that `jobs`
    # workers do not oversubscribe `jobs` cores (OpenBLAS would start one thread per core).
    with _environment(**dict.fromkeys(BLAS_THREAD_VARS, "1")), context.Manager() as manager:
        queue = None if bar.bar is None else manager.Queue()
        with futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            pending = {pool.submit(_worker, s, directory, queue, i): i for i, s in enumerate(specs)}
            results: list = [None] * len(specs)
            while pending:
                done, _ = futures.wait(pending, timeout=0.5, return_when=futures.FIRST_COMPLETED)
                while queue is not None:
                    try:
                        bar.update(queue.get_nowait()[1])
                    except queue_module.Empty:
                        break
                for f in done:
                    i = pending.pop(f)
                    results[i] = f.result()
                    if on_result is not None:
                        on_result(results[i])
    return results


# ---------------------------------------------------------------------------------- reporting


def summarise(results) -> list[dict]:
    """Mean and standard error (sample sd / sqrt(n)) of the test error, in %, per model."""
    rows = []
    for model in dict.fromkeys(r["model"] for r in results):
        errors = np.array([100.0 * r["test_error"] for r in results if r["model"] == model])
        se = float(errors.std(ddof=1) / np.sqrt(len(errors))) if len(errors) > 1 else None
        rows.append({"model": model, "trials": len(errors), "mean": float(errors.mean()), "se": se})
    return rows


def _cell(mean, se) -> str:
    return f"{mean:.2f}" if se is None else f"{mean:.2f} ± {se:.2f}"


def summary_markdown(summary) -> str:
    """The paper's Table 1 with our rows beside its DHBM/DHDA rows."""
    ours = {MODELS.get(s["model"], (None, s["model"]))[1]: s for s in summary}
    lines = ["| Model | Test error (%) | Source |", "|---|---|---|"]
    for name, mean, se in PAPER_ROWS:
        source = "paper, 10 trials" if name in ("3-DHBM", "3-DHDA") else "Lee (2013), via the paper"
        lines.append(f"| {name} | {_cell(mean, se)} | {source} |")
        if name in ours:
            s = ours.pop(name)
            lines.append(f"| {name} (this run) | {_cell(s['mean'], s['se'])} | "
                         f"river-dhbm, {s['trials']} trial{'s' if s['trials'] != 1 else ''} |")
    for name, s in ours.items():
        lines.append(f"| {name} (this run) | {_cell(s['mean'], s['se'])} | river-dhbm, "
                     f"{s['trials']} trial{'s' if s['trials'] != 1 else ''} |")
    return "\n".join(lines) + "\n"


def _write_csv(path: Path, rows: list[dict], columns: list[str]) -> None:
    import csv

    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def write_outputs(out: Path, results, selection, settings: dict) -> list[Path]:
    """results.csv, selection.csv, summary.md and settings.json in `out`."""
    from .experiment import atomic_write_all

    text = summary_markdown(summarise(results))
    jobs = [
        (out / "results.csv", lambda p: _write_csv(p, results, RESULT_COLUMNS)),
        (out / "summary.md", lambda p: p.write_text(text)),
        (out / "settings.json",
         lambda p: p.write_text(json.dumps(settings, indent=2, default=str) + "\n")),
    ]
    if selection:
        jobs.append((out / "selection.csv", lambda p: _write_csv(p, selection, RESULT_COLUMNS)))
    return atomic_write_all(jobs)


# ---------------------------------------------------------------------------------- CLI


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add the `mnist` subcommand to an argparse `subparsers` object."""
    p = subparsers.add_parser(
        "mnist", help="the paper's offline MNIST experiment (Table 1, 100 labels)",
        description="Semi-supervised MNIST as in the paper's Table 1: 100 balanced labels, "
        "1,000 validation images, the rest unlabeled, test on the 10,000 test images. "
        f"The data directory holds {', '.join(FILES)} (raw or .gz).",
    )
    p.add_argument("--data", help=f"directory of the four MNIST files (default: ${ENV_VAR})")
    p.add_argument("--model", choices=sorted(MODELS), default="dhbm",
                   help="table row (default dhbm)")
    p.add_argument("--config", help="a TOML config instead of configs/mnist_<model>.toml")
    p.add_argument("--trials", type=positive_int, help="trials after the selection (config: 10)")
    p.add_argument("--first-trial", type=int,
                   help="index of the first trial (its seeds follow from it): split a series "
                   "of trials over several runs (default 0, with --append the next index)")
    p.add_argument("--append", action="store_true",
                   help="add trials to the results already in --out: same settings, the grid "
                   "point chosen there (no new grid search), the earlier trials kept")
    p.add_argument("--labels", type=positive_int, help="labeled training images (config: 100)")
    p.add_argument("--epochs", type=positive_int, help="passes over the unlabeled set (config: 6)")
    p.add_argument("--max-train", type=positive_int,
                   help="use at most this many unlabeled images (quick runs)")
    p.add_argument("--lr", type=floats, help="learning-rate grid, e.g. 0.05,0.08,0.11")
    p.add_argument("--beta", type=floats, help="beta grid, e.g. 0.35,0.6,0.9")
    p.add_argument("--select-train", type=positive_int,
                   help="unlabeled images of each grid-search run (config value)")
    p.add_argument("--select-epochs", type=positive_int, help="epochs of each grid-search run")
    p.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                   help="model parameter on top of the config, e.g. --set mf_steps=2 (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    p.add_argument("--out", type=Path, help="output directory (default results/mnist-<model>)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)
    return p


def load_settings(args) -> dict:
    """The config of `args.model` (or `args.config`) with the flags on top."""
    from . import registry

    path = registry.config_path(args.config or f"mnist_{args.model}")
    try:
        with open(path, "rb") as f:
            s = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"Invalid config {str(path)!r}: {e}") from None
    s.setdefault("params", {})
    s.setdefault("grid", {})
    s["config"] = str(path)
    if args.config:
        s["model"] = s.get("model", args.model)
    else:
        s["model"] = args.model
    for key in ("trials", "labels", "epochs", "max_train", "select_train", "select_epochs"):
        value = getattr(args, key, None)
        if value is not None:
            s[key] = value
    if args.lr is not None:
        s["grid"]["learning_rate"] = args.lr
    if args.beta is not None:
        s["grid"]["beta"] = args.beta
    s["params"].update(dict(getattr(args, "set", [])))
    s["seed"] = args.seed
    first = getattr(args, "first_trial", None)
    if first is not None and (isinstance(first, bool) or not isinstance(first, int) or first < 0):
        raise ValueError(f"Invalid first_trial ({first!r}). Must be an int >= 0")
    s["first_trial"] = first
    return s


def _seed(base: int, *parts) -> int:
    return int(np.random.SeedSequence([base % 2**32, *parts]).generate_state(1)[0] % 2**31)


def make_specs(s: dict) -> tuple[list[TrialSpec], list[TrialSpec]]:
    """The grid-search runs and the trial template (without the chosen grid values)."""
    common = dict(
        model=s["model"], labels=s.get("labels", 100), validation=s.get("validation", 1000),
        labeled_per_batch=s.get("labeled_per_batch", 10),
        unlabeled_per_batch=s.get("unlabeled_per_batch", 10),
        beta_schedule=tuple(s["beta_schedule"]) if s.get("beta_schedule") else None,
    )
    base = s["seed"]
    grid = s["grid"]
    keys = [k for k in ("learning_rate", "beta") if grid.get(k)]
    points = [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]
    selection = []
    if len(points) > 1:
        selection = [
            TrialSpec(**common, trial=-1, seed=_seed(base, 1, i), split_seed=_seed(base, 0, 0),
                      params={**s["params"], **p},
                      epochs=s.get("select_epochs", s.get("epochs", 6)),
                      max_train=s.get("select_train", s.get("max_train")), score_test=False)
            for i, p in enumerate(points)
        ]
    fixed = points[0] if len(points) == 1 else {}
    trials = [
        TrialSpec(**common, trial=k, seed=_seed(base, 2, k), split_seed=_seed(base, 0, k),
                  params={**s["params"], **fixed}, epochs=s.get("epochs", 6),
                  max_train=s.get("max_train"))
        for k in range(s.get("first_trial") or 0, (s.get("first_trial") or 0) + s.get("trials", 10))
    ]
    return selection, trials


#: Settings that must agree between a run and the run whose results it `--append`s to.
SAME_SETTINGS = ("model", "labels", "validation", "epochs", "labeled_per_batch",
                 "unlabeled_per_batch", "beta_schedule", "max_train", "params", "seed")

_RESULT_TYPES = {"trial": int, "seed": int, "updates": int, "unlabeled_rows": int,
                 "learning_rate": float, "beta": float, "validation_error": float,
                 "test_error": float, "seconds": float}


def _without_grid(params: dict) -> dict:
    return {k: v for k, v in params.items() if k not in ("learning_rate", "beta")}


def read_previous(out: Path, settings: dict) -> tuple[list[dict], dict]:
    """The trials and the settings record of an earlier run in `out`, for `--append`.

    `ValueError` if `out` holds no earlier run, or one with other settings (`SAME_SETTINGS`,
    grid values aside: the earlier run's chosen point is reused).
    """
    import csv

    out = Path(out)
    if not (out / "results.csv").is_file() or not (out / "settings.json").is_file():
        raise ValueError(f"Nothing to append to: {str(out)!r} holds no results.csv and "
                         "settings.json of an earlier run")
    record = json.loads((out / "settings.json").read_text())
    for key in SAME_SETTINGS:
        old, new = record.get(key), settings.get(key)
        if key == "params":
            old, new = _without_grid(old or {}), _without_grid(new or {})
        if key == "beta_schedule":
            old, new = (list(v) if v is not None else None for v in (old, new))
        if old != new:
            raise ValueError(f"Cannot append to {str(out)!r}: its {key} is {old!r}, "
                             f"this run's is {new!r}")
    with open(out / "results.csv", newline="") as f:
        rows = [{k: (_RESULT_TYPES[k](v) if k in _RESULT_TYPES and v != "" else v)
                 for k, v in row.items()} for row in csv.DictReader(f)]
    return rows, record


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run(args) -> int:
    """The `mnist` subcommand: select on the validation set, run the trials, report."""
    directory = args.data or os.environ.get(ENV_VAR) or None
    try:
        settings = load_settings(args)
        out = args.out or Path("results") / f"mnist-{settings['model']}"
        previous, earlier = [], None
        if getattr(args, "append", False):
            previous, earlier = read_previous(out, settings)
            done = {r["trial"] for r in previous}
            if settings["first_trial"] is None:
                settings["first_trial"] = max(done, default=-1) + 1
            settings["grid"] = {}  # the earlier run's chosen point, below
        selection_specs, trial_specs = make_specs(settings)
        if earlier is not None:
            trial_specs = [dataclasses.replace(t, params=dict(earlier["chosen"]))
                           for t in trial_specs]
            again = sorted(done & {t.trial for t in trial_specs})
            if again:
                raise ValueError(f"Trials {again} are already in {str(out)!r}: choose "
                                 "another --first-trial")
        data = load_mnist(directory)
        for spec in selection_specs[:1] + trial_specs[:1]:  # bad settings fail now, not later
            split_indices(data.train_labels, spec.labels, spec.validation, spec.split_seed)
            build_model(spec, data.train_images.shape[1], 10)
        from .experiment import check_writable

        check_writable(out)
    except (MissingData, ValueError) as e:
        return _fail(str(e))
    directory = str(Path(directory).resolve())
    selection = []
    if selection_specs:
        chosen, selection = select(
            selection_specs, data,
            runner=lambda specs: run_specs(specs, data, directory, args.jobs, "grid search",
                                           args.quiet),
        )
        trial_specs = [dataclasses.replace(t, params={**t.params, **chosen}) for t in trial_specs]
        print("grid search (validation error %): " + ", ".join(
            f"lr={r['learning_rate']} beta={r['beta']}: {100 * r['validation_error']:.2f}"
            for r in selection))
        print(f"chosen: learning_rate={chosen.get('learning_rate')} beta={chosen.get('beta')}",
              flush=True)
    record = {k: v for k, v in settings.items()} | {
        "data": directory, "jobs": args.jobs, "chosen": trial_specs[0].params,
        "model_params": trial_specs[0].model_params(),
    }
    if earlier is not None:  # the earlier record stays, with a note of each addition
        added = {k: record[k] for k in ("first_trial", "trials", "data", "jobs")}
        record = earlier | {"appended": [*earlier.get("appended", []), added]}
    finished: list = list(previous)

    def trial_done(r: dict) -> None:
        # Each finished trial is reported and saved at once (the files hold the trials so far).
        finished.append(r)
        print(f"trial {r['trial']}: test error {100 * r['test_error']:.2f} %, validation error "
              f"{100 * r['validation_error']:.2f} %, {r['seconds']:.0f} s", flush=True)
        write_outputs(Path(out), sorted(finished, key=lambda x: x["trial"]), selection, record)

    results = run_specs(trial_specs, data, directory, args.jobs, "trials", args.quiet,
                        on_result=trial_done)
    results = sorted(finished, key=lambda x: x["trial"])
    print(summary_markdown(summarise(results)), end="")
    write_outputs(Path(out), results, selection, record)
    print(f"results written to {out}")
    return 0
