"""The development suite: how a River user meets the models, on streams of many shapes.

    python -m evaluation suite --quick --jobs 2             # a first look, under a minute
    python -m evaluation suite --mnist DIR --jobs 2         # the whole suite, 5 seeds
    python -m evaluation suite --streams digits,river:datasets.Elec2 --label-ratios 1,0.1

Every run is test-then-train one row at a time through River's dict API: `predict_one`, then
`learn_one(x, y)` for a labeled row and `learn_one(x)` for an unlabeled one, each row keeping
its label with the given probability (a per-row mask drawn from the seed). Our models sit
behind `preprocessing.MinMaxScaler()` and learn every row; River's peers learn the labeled
rows only (`GaussianNB` and `HoeffdingTreeClassifier` on the raw features,
`LogisticRegression` and `KNNClassifier` behind a `StandardScaler`). The measure is the
prequential accuracy over the whole stream, so a slow start counts. Writes `suite.csv` (one
row per run), `suite.md` (mean +- standard error over seeds) and `suite.png` into `--out`.

Streams: `led` and `waveform` (MOA's stationary generators), `digits` (scikit-learn's 8x8
digits, shuffled by the seed), `mnist` (the user's IDX directory, `--mnist DIR`; the first
`--instances` of the shuffled training images), `phishing`, `bananas` and `sea` (River's
`Phishing`, `Bananas` and `synth.SEA(noise=0.1)`), and any River dataset or generator by name
(`river:datasets.Elec2`, `river:datasets.synth.Hyperplane`).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import itertools
import json
from pathlib import Path

import numpy as np

from . import registry
from .arguments import floats, names, positive_int

__all__ = ["PEERS", "STREAMS", "add_arguments", "check", "command", "load_stream", "make_learner",
           "run", "run_one"]

#: The development suite's streams (the ones we tune on).
STREAMS = ("led", "waveform", "digits", "mnist", "phishing", "bananas", "sea")

#: River's peers, which learn the labeled rows only (their pipelines: `make_learner`).
PEERS = ("LogisticRegression", "GaussianNB", "HoeffdingTree", "KNN", "ARF")

# KNN is left out by default: in River's dict loop it takes hours on MNIST's 784 pixels
DEFAULT_MODELS = ["dhbm-mf", "dhda", "pl-mlp", "dhbm-mf/labeled-only", "dhda/labeled-only",
                  "pl-mlp/labeled-only", "LogisticRegression", "GaussianNB", "HoeffdingTree"]
QUICK_MODELS = ["dhbm-mf", "dhda", "dhbm-mf/labeled-only", "dhda/labeled-only",
                "LogisticRegression", "GaussianNB", "HoeffdingTree"]
DEFAULT_INSTANCES = 20_000  # rows per stream (the bundled data sets are shorter: all of them)


# ---------------------------------------------------------------------------------- streams


def load_stream(name: str, seed: int, instances: int = DEFAULT_INSTANCES,
                mnist: str | None = None) -> list:
    """The first `instances` rows `(x, y)` of stream `name` for `seed` (all of a shorter data
    set), as a list: every model sees the same."""
    return list(_cached_rows(name, seed, instances, mnist))


@functools.lru_cache(maxsize=4)
def _cached_rows(name, seed, instances, mnist):
    return tuple(itertools.islice(_rows(name, seed, instances, mnist), instances))


def _rows(name, seed, instances, mnist):
    import streams

    if name == "led":
        return itertools.islice(streams.LEDDrift(seed=seed, noise_percentage=10,
                                                 n_drift_features=4), instances)
    if name == "waveform":
        return itertools.islice(streams.NormalisationFilter(
            streams.WaveformDrift(seed=seed, has_noise=True, n_drift_features=10)), instances)
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return _shuffled(X, y, seed, len(X))
    if name == "mnist":
        from .mnist_data import load_mnist, pixels

        data = load_mnist(mnist)
        X = pixels(data.train_images.reshape(len(data.train_images), -1))
        return _shuffled(X, data.train_labels, seed, instances)
    from river import datasets

    if name == "phishing":
        return datasets.Phishing()
    if name == "bananas":
        return datasets.Bananas()
    if name == "sea":
        return datasets.synth.SEA(seed=seed, noise=0.1).take(instances)
    if name.startswith(registry.RIVER_PREFIX):
        return _river_dataset(name[len(registry.RIVER_PREFIX):], seed, instances)
    raise ValueError(f"Unknown stream {name!r}. Choose from {', '.join(STREAMS)} or "
                     "river:<module>.<Dataset>, e.g. river:datasets.Elec2")


def _river_dataset(path: str, seed: int, instances: int):
    import inspect

    module_name, _, class_name = ("river." + path).rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        raise ValueError(f"River has no dataset {path!r}") from None
    params = inspect.signature(cls).parameters
    seeds = {name: seed for name in ("seed", "seed_model", "seed_sample") if name in params}
    return itertools.islice(cls(**seeds), instances)


def _shuffled(X, y, seed, instances):
    order = np.random.default_rng(seed).permutation(len(X))[:instances]
    return [({j: float(v) for j, v in enumerate(X[i])}, y[i].item()) for i in order]


# ---------------------------------------------------------------------------------- models


def make_learner(name: str, seed: int):
    """A fresh learner: one of `PEERS`, in the pipeline a River user would put it in, or one
    of ours (`registry.MODELS`, `/labeled-only` for the ablation, `key=value` settings after
    a colon, `;` between them: `dhbm-mf:steps=1;activation=sigmoid`) behind a
    `MinMaxScaler`. Returns `(learner, learns_unlabeled)`."""
    from river import forest, linear_model, multiclass, naive_bayes, neighbors, preprocessing, tree

    if name in PEERS:
        return {
            "LogisticRegression": lambda: preprocessing.StandardScaler()
            | multiclass.OneVsRestClassifier(linear_model.LogisticRegression()),
            "GaussianNB": naive_bayes.GaussianNB,
            "HoeffdingTree": tree.HoeffdingTreeClassifier,
            "KNN": lambda: preprocessing.StandardScaler() | neighbors.KNNClassifier(),
            "ARF": lambda: forest.ARFClassifier(seed=seed),
        }[name](), False
    base_name, _, settings = name.partition(":")
    params = {}
    for item in filter(None, settings.split(";")):
        key, _, value = item.partition("=")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:  # a bare word: a string setting
            params[key] = value
    model = registry.make_model(base_name, None, None, seed=seed, params=params, preset="default")
    return preprocessing.MinMaxScaler() | model, True


def model_names(text: str) -> list[str]:
    """Comma-separated model names; commas inside brackets belong to a setting's list."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [name for name in out if name]


def check_model_name(name: str) -> str:
    if name in PEERS:
        return name
    registry.check_model_name(name.partition(":")[0])
    return name


# ---------------------------------------------------------------------------------- runs


def run_one(rows: list, learner, learns_unlabeled: bool, label_ratio: float, seed: int) -> float:
    """Prequential accuracy over `rows`, each row labeled with probability `label_ratio`."""
    labeled = np.random.default_rng([seed, 7919]).random(len(rows)) < label_ratio
    correct = 0
    for (x, y), keep in zip(rows, labeled.tolist()):
        correct += learner.predict_one(x) == y
        if keep:
            learner.learn_one(x, y)
        elif learns_unlabeled:
            learner.learn_one(x)
    return correct / len(rows)


def _task(args):
    stream, ratio, model, seed, instances, mnist = args
    rows = load_stream(stream, seed, instances, mnist)
    learner, unlabeled = make_learner(model, seed)
    return dict(stream=stream, label_ratio=ratio, model=model, seed=seed,
                instances=len(rows), accuracy=run_one(rows, learner, unlabeled, ratio, seed))


def run(streams, label_ratios, models, seeds, instances=DEFAULT_INSTANCES, mnist=None,
        jobs=1, progress=True):
    """Every (stream, label ratio, model, seed) run; returns a DataFrame of their accuracies."""
    import pandas as pd

    from .progress import bar as progress_bar

    tasks = [(s, r, m, seed, instances, mnist) for s in streams for seed in seeds
             for r in label_ratios for m in models]
    bar = progress_bar(len(tasks), "suite", unit="run", quiet=not progress)
    rows = []
    if jobs == 1:
        for t in tasks:
            rows.append(_task(t))
            bar.update()
    else:
        from concurrent.futures import ProcessPoolExecutor

        from .warmup import warm_up

        # compile once here (the streams' kernels too), the workers load Numba's cache
        widths = [len(load_stream(s, seeds[0], 1, mnist)[0][0]) for s in streams]
        warm_up(((make_learner(m, seeds[0])[0], widths[0]) for m in models))
        with ProcessPoolExecutor(jobs) as pool:
            for r in pool.map(_task, tasks):
                rows.append(r)
                bar.update()
    bar.close()
    return pd.DataFrame(rows)


def table_markdown(runs) -> str:
    """Mean +- standard error over seeds: a row per model, a column per stream and ratio;
    the best mean of each column in bold."""
    g = runs.groupby(["model", "stream", "label_ratio"])["accuracy"]
    mean, se = g.mean(), g.sem().fillna(0.0)
    columns = [(s, r) for s in dict.fromkeys(runs["stream"])
               for r in sorted(set(runs["label_ratio"]), reverse=True)]
    lines = ["| model | " + " | ".join(f"{s} {r:g}" for s, r in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    best = {c: max(mean[m, c[0], c[1]] for m in dict.fromkeys(runs["model"])
                   if (m, *c) in mean) for c in columns}
    for m in dict.fromkeys(runs["model"]):
        cells = []
        for c in columns:
            if (m, *c) not in mean:
                cells.append("")
                continue
            text = f"{mean[m, c[0], c[1]]:.3f} ± {se[m, c[0], c[1]]:.3f}"
            cells.append(f"**{text}**" if mean[m, c[0], c[1]] == best[c] else text)
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(runs, path: Path) -> None:
    """Accuracy against label ratio, a panel per stream, a line per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stream_names = list(dict.fromkeys(runs["stream"]))
    fig, axes = plt.subplots(1, len(stream_names), figsize=(3.2 * len(stream_names), 3),
                             squeeze=False)
    for ax, s in zip(axes[0], stream_names):
        part = runs[runs["stream"] == s]
        for m in dict.fromkeys(part["model"]):
            curve = part[part["model"] == m].groupby("label_ratio")["accuracy"].mean()
            ax.plot(curve.index, curve.values, marker="o", label=m,
                    linestyle="--" if m.endswith(registry.ABLATION_SUFFIX) else "-")
        ax.set_xscale("log")
        ax.set_title(s)
        ax.set_xlabel("label ratio")
    axes[0][0].set_ylabel("prequential accuracy")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of the `suite` subcommand (its command: `command`), on its parser `p`."""
    p.add_argument("--streams", type=names, default=None,
                   help=f"comma-separated streams (default: {','.join(STREAMS)}, mnist only "
                   "with --mnist)")
    p.add_argument("--label-ratios", type=floats, default=[1.0, 0.1, 0.01])
    p.add_argument("--models", type=model_names, default=DEFAULT_MODELS,
                   help="comma-separated: ours (registry names, `/labeled-only`, settings after "
                   "a colon: `dhbm-mf:hidden_sizes=[64,64];steps=4`) and River's peers "
                   f"({', '.join(PEERS)})")
    p.add_argument("--seeds", type=positive_int, default=5, help="seeds 1..N per cell")
    p.add_argument("--instances", type=positive_int, default=DEFAULT_INSTANCES)
    p.add_argument("--mnist", metavar="DIR", help="MNIST's IDX directory (adds the stream)")
    p.add_argument("--jobs", type=positive_int, default=1)
    p.add_argument("--out", type=Path, default=Path("results/suite"))
    p.add_argument("--quick", action="store_true",
                   help="the first look: 3,000 rows of every stream but MNIST, 2 seeds, "
                   "labels 100 %%, 10 %% and 1 %%, the hybrids, their ablations and three "
                   "of River's peers (under a minute with --jobs 2)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def command(args) -> int:
    """The `suite` subcommand (`check(args)` first: it raises ValueError for bad settings)."""
    _run_and_write(args)
    return 0


def _settings(args):
    streams = args.streams or [s for s in STREAMS if s != "mnist" or args.mnist]
    models, ratios, seeds, instances = args.models, args.label_ratios, args.seeds, args.instances
    if args.quick:
        streams = [s for s in streams if s != "mnist"]
        models = QUICK_MODELS
        ratios, seeds, instances = [1.0, 0.1, 0.01], 2, 3000
    return streams, models, ratios, seeds, instances


def check(args) -> None:
    """Raise ValueError, in one line, for settings that cannot run."""
    streams, models, ratios, _, _ = _settings(args)
    for m in models:
        check_model_name(m)
    for r in ratios:
        if not 0 < r <= 1:
            raise ValueError(f"Invalid label ratio ({r!r}). Valid range is (0, 1]")
    for s in streams:
        if s == "mnist" and not args.mnist:
            raise ValueError("The mnist stream needs --mnist DIR (MNIST's IDX files)")
        if s not in STREAMS and not s.startswith(registry.RIVER_PREFIX):
            raise ValueError(f"Unknown stream {s!r}. Choose from {', '.join(STREAMS)} or "
                             "river:<module>.<Dataset>")


def _run_and_write(args) -> None:
    streams, models, ratios, seeds, instances = _settings(args)
    runs = run(streams, ratios, models, list(range(1, seeds + 1)), instances, args.mnist,
               args.jobs, progress=not args.quiet)
    args.out.mkdir(parents=True, exist_ok=True)
    runs.to_csv(args.out / "suite.csv", index=False)
    table = table_markdown(runs)
    (args.out / "suite.md").write_text(
        "Prequential accuracy over the whole stream (dict API, per-row label mask), mean ± "
        f"standard error over {seeds} seeds.\n\n" + table)
    plot(runs, args.out / "suite.png")
    print(table, end="")
