"""River's own benchmark tracks, fully labeled or semi-supervised, for our models and River's.

    python -m evaluation tracks --quick                  # the first 2,000 rows of each dataset
    python -m evaluation tracks --seeds 3 --jobs 2       # River's table, 100 % labels
    python -m evaluation tracks --label-ratio 0.1 --seeds 3 --jobs 2   # 10 % labels

Each run is River's `Track.run` (`evaluate.iter_progressive_val_score` with time and memory
measured at 10 checkpoints) of one model on one dataset of `evaluate.BinaryClassificationTrack`
or `evaluate.MultiClassClassificationTrack`. With `label_ratio < 1` the dataset goes through a
`streams.LabelMask` (each row keeps its label with that probability, the mask seeded by the run's
seed): our models learn every row, the unlabeled ones as `learn_one(x, labeled=False)`; River's
learners, through `streams.LabeledOnly`, learn the labeled rows only; the metric scores every
prediction against the true label.

Datasets River must download (Elec2, SMTP, Insects, Keystroke) run only when they are on disk
or with `--download`; the others are bundled with River and always run. Writes `tracks.csv`
(one row per run and checkpoint), `tracks.md` (the final figures, mean over seeds, as River's
benchmark page shows them) and one figure per track (accuracy against instances).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..runs import registry
from ..runs.arguments import names, positive_int, ratio
from ..runs.workers import counting, run_each

__all__ = ["RIVER_LEARNERS", "TRACKS", "Run", "add_arguments", "plan", "run", "run_one",
           "table_markdown", "write_outputs"]

#: Track name (`--tracks`) -> the River track's class name in `river.evaluate`.
TRACKS = {"binary": "BinaryClassificationTrack", "multiclass": "MultiClassClassificationTrack"}

#: The reference learners of River's benchmark page (River's `benchmarks/config.py`), with
#: River's defaults and the run's seed. A binary learner (logistic regression) is one-vs-rest
#: on the multi-class track (`registry.make_model`).
RIVER_LEARNERS = [
    "river:linear_model.LogisticRegression",
    "river:naive_bayes.GaussianNB",
    "river:tree.HoeffdingTreeClassifier",
    "river:tree.HoeffdingAdaptiveTreeClassifier",
    "river:forest.ARFClassifier",
    "river:neighbors.KNNClassifier",
]

#: River modules whose learners go behind a `StandardScaler`, as on River's page (gradient and
#: distance based); this project's models go behind a `MinMaxScaler` (their inputs live in
#: [0, 1]); trees and naive Bayes take the raw features.
STANDARDISED = ("river:linear_model.", "river:neighbors.")

QUICK_INSTANCES = 2_000
N_CHECKPOINTS = 10  # River's default for `Track.run`

_METRICS = {"Accuracy": "accuracy", "F1": "f1", "MicroF1": "micro_f1", "MacroF1": "macro_f1"}


def ours(model: str) -> bool:
    """Whether `model` is one of this project's models (or its `/labeled-only` ablation)."""
    return registry.split_ablation(model)[0] in registry.MODELS


def make_track(name: str):
    """A fresh River track called `name` (`binary` or `multiclass`)."""
    if name not in TRACKS:
        raise ValueError(f"Unknown track {name!r}. Known tracks: {', '.join(TRACKS)}")
    from river import evaluate

    return getattr(evaluate, TRACKS[name])()


def make_dataset(name: str):
    """A fresh River dataset called `name` (its class name in `river.datasets`)."""
    from river import datasets

    return getattr(datasets, name)()


def make_model(name: str, dataset, seed: int | None, label_ratio: float = 1.0,
               params: dict | None = None):
    """`name` (with `params` on top of its defaults) in its usual pipeline; with
    `label_ratio < 1` a River learner goes behind `streams.LabeledOnly` (it learns the labeled
    rows only)."""
    from river import preprocessing
    from river.checks.utils import seed_params

    import streams

    model = registry.make_model(name, dataset.n_features, None, seed=seed, params=params,
                                preset="default")
    if ours(name):
        return preprocessing.MinMaxScaler() | model  # it learns every row, labeled or not
    if seed is not None:  # River's way to seed every part, e.g. the KNN's search engine
        model = model.clone(seed_params(model._get_params(), seed))
    if name.startswith(STANDARDISED):
        model = preprocessing.StandardScaler() | model
    return model if label_ratio == 1.0 else streams.LabeledOnly(model)


# ---------------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class Run:
    """One model on one dataset of a track: a picklable recipe."""

    track: str
    dataset: str
    model: str
    label_ratio: float = 1.0
    seed: int = 0
    instances: int | None = None  # None: the whole dataset


def run_one(r: Run) -> list[dict]:
    """Run `r` through River's `Track.run`; one row per checkpoint."""
    import streams

    # Track.run places its checkpoints by the dataset's n_samples: FirstRows knows it
    track, dataset = make_track(r.track), streams.FirstRows(make_dataset(r.dataset), r.instances)
    if r.label_ratio < 1.0:  # every model of a (dataset, seed) sees the same kept labels
        dataset = streams.LabelMask(dataset, label_ratio=r.label_ratio, seed=r.seed)
    model = make_model(r.model, dataset, r.seed, r.label_ratio)
    rows = []
    for state in track.run(model, dataset, n_checkpoints=N_CHECKPOINTS):
        row = asdict(r) | {"step": state["Step"]}
        row |= {column: state[name].get() for name, column in _METRICS.items() if name in state}
        row |= {"time_s": state["Time"].total_seconds(), "memory_mb": state["Memory"] / 2**20}
        rows.append(row)
    return rows


def seeds_of(model: str, label_ratio: float, n_seeds: int, first: int = 0) -> range:
    """The seeds `model` runs with, from `first`: all `n_seeds` when something in the run is
    random (a seeded model, River's convention, or the label mask), else one, since every seed
    would repeat it."""
    stochastic = registry.make_model(model, 2, None, preset="default")._is_stochastic
    return range(first, first + (n_seeds if stochastic or label_ratio < 1.0 else 1))


def available(dataset, download: bool) -> str | None:
    """None when `dataset` can run, else the one line that says why not and how to get it."""
    from river.datasets import base

    if not isinstance(dataset, base.RemoteDataset) or dataset.is_downloaded:
        return None
    name = type(dataset).__name__
    if not download:
        return (f"skipped {name}: not downloaded; run with --download to fetch it "
                f"({dataset.size / 1e6:.1f} MB) or put {Path(dataset.path).name} in "
                f"{Path(dataset.path).parent}")
    try:
        dataset.download(verbose=True)
    except Exception as e:  # no network, a moved file: skip this dataset, run the rest
        return f"skipped {name}: the download failed ({type(e).__name__}: {e})"
    return None


def plan(args) -> list[Run]:
    """The runs asked for by the command's `args`, every name and the output directory checked
    (ValueError otherwise); prints one line per dataset left out."""
    from ..runs.files import check_writable

    tracks = args.tracks or list(TRACKS)
    models = args.models or [*registry.MODELS, *RIVER_LEARNERS]
    for name in tracks:
        make_track(name)
    for name in models:
        registry.check_model_name(name)
        if name.startswith(registry.MOA_PREFIX):
            raise ValueError(f"Invalid model {name!r}: the tracks run this project's models "
                             "and River's")
    instances = args.instances or (QUICK_INSTANCES if args.quick else None)
    check_writable(args.out or default_out(args))
    runs = []
    for track in tracks:
        for dataset in make_track(track):
            why = available(dataset, args.download)
            if why:
                print(why, file=sys.stderr)
                continue
            for model in models:
                for seed in seeds_of(model, args.label_ratio, args.seeds, args.seed):
                    runs.append(Run(track, type(dataset).__name__, model, args.label_ratio,
                                    seed, instances))
    for r in {(r.dataset, r.model): r for r in runs}.values():  # bad parameters fail now
        make_model(r.model, make_dataset(r.dataset), r.seed, r.label_ratio)
    return runs


def run_all(runs, jobs: int = 1, quiet: bool = False) -> pd.DataFrame:
    """Every run's checkpoints in one table, in the order of `runs`, on `jobs` processes."""
    from ..runs import progress

    results: list = [None] * len(runs)
    with progress.bar(len(runs), "tracks", unit="run", quiet=quiet) as bar, counting(results):
        from ..runs.warmup import announce

        firsts = {(r.dataset, r.model): r for r in runs if ours(r.model)}.values()
        fresh = [(make_model(r.model, dataset, r.seed, r.label_ratio), dataset.n_features)
                 for r in firsts for dataset in [make_dataset(r.dataset)]]
        # one notice names every model that compiles, the results' behaviour panel too
        announce((model for model, _ in fresh), recording=True)
        if jobs > 1:
            from ..runs.warmup import warm_up

            warm_up(fresh)  # compile once here, the workers load Numba's cache
        run_each(run_one, runs, results, jobs, bar, name=lambda r: f"{r.dataset} {r.model}")
    return pd.DataFrame([row for rows in results for row in rows])


# ---------------------------------------------------------------------------------- outputs


def _final(frame: pd.DataFrame) -> pd.DataFrame:
    """The last checkpoint of each run."""
    keys = ["track", "dataset", "model", "label_ratio", "seed"]
    return frame.loc[frame.groupby(keys, sort=False).step.idxmax()]


def _cell(values: pd.Series, scale: float, digits: int) -> str:
    mean = scale * values.mean()
    if len(values) < 2:
        return f"{mean:.{digits}f}"
    se = scale * values.std() / np.sqrt(len(values))
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def table_markdown(frame: pd.DataFrame) -> str:
    """One table per track, as River's benchmark page gives them: per dataset and model (River's
    by `<module>.<Class>`), the final accuracy and F1 scores (%), memory (MB) and time (s), mean
    (± standard error) over seeds; the best accuracy of each dataset in bold."""
    final = _final(frame)
    lines = []
    for track in dict.fromkeys(final.track):
        t = final[final.track == track]
        scores = [c for c in _METRICS.values() if c in t and t[c].notna().any()]
        titles = [k for k, v in _METRICS.items() if v in scores]
        ratio = t.label_ratio.iloc[0]
        lines += [f"## {make_track(track).name}, {100 * ratio:g} % labels", "",
                  "| dataset | model | " + " | ".join(titles) + " | Memory (MB) | Time (s) |",
                  "|---|---|" + "---:|" * (len(scores) + 2)]
        for dataset, d in t.groupby("dataset", sort=False):
            accuracy = d.groupby("model", sort=False).accuracy.mean()
            for model, m in d.groupby("model", sort=False):
                cells = [_cell(m[c], 100, 2) for c in scores]
                if accuracy[model] == accuracy.max():
                    cells[0] = f"**{cells[0]}**"
                cells += [_cell(m.memory_mb, 1, 3), _cell(m.time_s, 1, 2)]
                name = model.removeprefix(registry.RIVER_PREFIX)
                lines.append(f"| {dataset} | {name} | " + " | ".join(cells) + " |")
        seeds = t.groupby(["dataset", "model"]).seed.count().max()
        lines += ["", f"At the last instance of each dataset ({t.step.max():,} at most): mean ± "
                  f"standard error over {seeds} seed(s) where the seed changes something (a "
                  "seeded model, the label mask), one run (no ±) elsewhere.", ""]
    return "\n".join(lines)


def draw_figure(frame: pd.DataFrame, track: str):
    """Accuracy against instances, one panel per dataset of `track`, one line per model (the
    mean over seeds); River's learners dotted."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..runs.plots import model_label

    t = frame[frame.track == track]
    datasets = list(dict.fromkeys(t.dataset))
    models = list(dict.fromkeys(t.model))
    palette = [*plt.cm.tab10.colors, *plt.cm.Dark2.colors]
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        for i, model in enumerate(models):
            curve = t[(t.dataset == dataset) & (t.model == model)].groupby("step").accuracy.mean()
            ax.plot(curve.index, 100 * curve.to_numpy(), color=palette[i % len(palette)],
                    ls="-" if ours(model) else ":", marker="o", ms=2.5, lw=1.2,
                    label=model_label(model))
        ax.set_title(dataset)
        ax.set_xlabel("instances")
        ax.set_ylabel("accuracy (%)")
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    ratio = t.label_ratio.iloc[0]
    fig.suptitle(f"{make_track(track).name}, {100 * ratio:g} % labels")
    fig.tight_layout()
    return fig


def write_outputs(frame: pd.DataFrame, out, settings: dict | None = None) -> list[Path]:
    """Write tracks.csv, tracks.md, settings.json and tracks-<track>.png into `out`, all or
    nothing."""
    import matplotlib.pyplot as plt

    from ..runs.files import atomic_write_all, check_writable, figure_job, result_jobs

    out = check_writable(out)
    jobs = result_jobs(out, "tracks", frame, table_markdown(frame), settings)
    figures = {track: draw_figure(frame, track) for track in dict.fromkeys(frame.track)}
    jobs += [figure_job(out / f"tracks-{track}.png", fig) for track, fig in figures.items()]
    try:
        return atomic_write_all(jobs)
    finally:
        for fig in figures.values():
            plt.close(fig)


# ---------------------------------------------------------------------------------- command


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags and the command of the `tracks` subcommand, on its parser `p`."""
    p.description = (
        "Run River's BinaryClassificationTrack and MultiClassClassificationTrack "
        "through River's Track.run (accuracy, F1, time and memory at 10 checkpoints) for this "
        "project's models and River's reference learners. With --label-ratio below 1, each row "
        "keeps its label with that probability: our models learn every row, River's learners "
        "the labeled ones; every prediction is scored. Writes tracks.csv, tracks.md and one "
        "figure per track."
    )
    p.add_argument("--models", type=names,
                   help="comma-separated models, any river:<module>.<Class> too (default: "
                   + ", ".join([*registry.MODELS, *RIVER_LEARNERS]) + ")")
    p.add_argument("--tracks", type=names, help=f"comma-separated, of {', '.join(TRACKS)} "
                   "(default both)")
    p.add_argument("--label-ratio", type=ratio, default=1.0,
                   help="share of rows that keep their label (default 1.0: River's tracks)")
    p.add_argument("--seeds", type=positive_int, default=1,
                   help="seeds --seed, --seed + 1, ... for every run something random changes "
                   "(a seeded model, the label mask); one run elsewhere")
    p.add_argument("--seed", type=int, default=0, help="the first seed")
    p.add_argument("--jobs", type=positive_int, default=1, help="local worker processes")
    p.add_argument("--out", type=Path, help="output directory (default results/tracks, "
                   "results/tracks-<percent> below 100 %% labels, -quick with --quick)")
    p.add_argument("--quick", action="store_true",
                   help=f"the first {QUICK_INSTANCES:,} instances of each dataset")
    p.add_argument("--instances", type=positive_int, help=argparse.SUPPRESS)  # for the tests
    p.add_argument("--download", action="store_true",
                   help="let River download the datasets it does not bundle (Elec2, SMTP, "
                   "Insects, Keystroke) into ~/river_data; without it they are skipped")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def default_out(args) -> Path:
    name = "tracks" if args.label_ratio == 1.0 else f"tracks-{100 * args.label_ratio:g}"
    return Path("results") / (name + ("-quick" if args.quick else ""))


def run(runs: list[Run], args) -> int:
    """Run the planned `runs` (`plan(args)`), print the table, write the outputs."""
    if not runs:
        print("nothing to run: every dataset was skipped", file=sys.stderr)
        return 1
    frame = run_all(runs, jobs=args.jobs, quiet=args.quiet)
    print(table_markdown(frame), end="")
    settings = {k: v for k, v in vars(args).items() if k != "func"}
    for path in write_outputs(frame, args.out or default_out(args), settings=settings):
        print(path)
    return 0
