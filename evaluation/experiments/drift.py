"""Abrupt concept changes: how fast each learner recovers, ours against River's drift-aware ones.

    python -m evaluation drift --quick                     # 2 scenarios, 1 seed (a minute)
    python -m evaluation drift --seed 1 --seeds 3 --jobs 2   # the table of docs/drift.md

Each scenario is a stream whose concept changes at a known row (`CHANGE_AT`): its first rows
come from one generator, the rest from another of the same schema (a new rule, a new
hyperplane, LED's digits on other attributes). Every run goes through River's dict API as a
user's would: `predict_one`, then `learn_one`, per row; our models behind a `MinMaxScaler`
learn every row (unlabeled ones as `learn_one(x)`), River's learners learn the labeled rows
only (`streams.LabeledOnly`). The label mask is seeded by the run's seed, so every model of a
(scenario, ratio, seed) sees the same labels.

Writes `drift.csv` (one row per run: accuracy before the change, over the first and the second
`WINDOW` rows after it, over the last `WINDOW` rows, the rows where our models' detectors fired),
`drift.md` (mean over seeds) and `drift.png` (rolling accuracy around the change).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..runs import registry
from ..runs.arguments import floats, names, positive_int
from ..runs.workers import counting, run_each
from . import tracks

__all__ = ["SCENARIOS", "Run", "add_arguments", "command", "run_one", "scenario", "windows"]

#: Rows of a scenario, and the row at which its concept changes.
N_ROWS, CHANGE_AT = 20_000, 10_000
#: Rows of each accuracy window (the second window after the change is the recovery's measure).
WINDOW = 2_500
QUICK_ROWS, QUICK_CHANGE_AT, QUICK_WINDOW = 6_000, 3_000, 1_000


def _sea(seed):
    from river.datasets import synth

    return synth.SEA(variant=0, seed=seed), synth.SEA(variant=3, seed=seed + 1)


def _stagger(seed):
    from river.datasets import synth

    # not `balance_classes`: it alternates the labels row by row, which a majority vote always
    # gets wrong
    return synth.STAGGER(0, seed=seed), synth.STAGGER(2, seed=seed + 1)


def _agrawal(seed):
    from river.datasets import synth

    return synth.Agrawal(0, seed=seed), synth.Agrawal(4, seed=seed + 1)


def _sine(seed):
    from river.datasets import synth

    return synth.Sine(0, seed=seed, has_noise=True), synth.Sine(2, seed=seed + 1, has_noise=True)


def _hyperplane(seed):
    from river.datasets import synth

    return (synth.Hyperplane(seed=seed, n_features=10, noise_percentage=0.05),
            synth.Hyperplane(seed=seed + 7, n_features=10, noise_percentage=0.05))


def _clusters(seed):
    from .clusters import Endless

    # the clusters' centres are drawn anew: the input moves, and each class with it
    return Endless(seed), Endless(seed + 1)


def _led(seed):
    import streams

    return (streams.LEDDrift(seed=seed, noise_percentage=10, n_drift_features=0),
            streams.LEDDrift(seed=seed + 1, noise_percentage=10, n_drift_features=7))


def _waveform(seed):
    import streams

    return (streams.NormalisationFilter(streams.WaveformDrift(seed=seed, has_noise=True)),
            streams.NormalisationFilter(
                streams.WaveformDrift(seed=seed + 1, has_noise=True, n_drift_features=21)))


#: Scenario name -> (what changes, the two generators before and after the change).
SCENARIOS = {
    "sea": ("River's SEA: threshold 8 -> 9.5 (variant 0 -> 3)", _sea),
    "stagger": ("River's STAGGER: rule 0 -> 2", _stagger),
    "agrawal": ("River's Agrawal: function 0 -> 4", _agrawal),
    "sine": ("River's Sine with noise: function 0 -> 2", _sine),
    "hyperplane": ("River's Hyperplane (10 features, 5 % noise): a new hyperplane", _hyperplane),
    "clusters": ("Gaussian clusters, a class each (the suite's `clusters`): new centres",
                 _clusters),
    "led": ("MOA's LED (10 % noise): the digits move to 7 other attributes", _led),
    "waveform": ("MOA's noisy Waveform, normalised: all 21 attributes swapped", _waveform),
}

#: What `--models` runs by default: the hybrids' defaults and River's drift-aware learners.
DEFAULT_MODELS = [
    "dhbm-mf", "dhda",
    "river:forest.ARFClassifier", "river:tree.HoeffdingAdaptiveTreeClassifier",
    "river:tree.HoeffdingTreeClassifier", "river:linear_model.LogisticRegression",
]


def scenario(name: str, seed: int, n_rows: int = N_ROWS, change_at: int = CHANGE_AT):
    """The `(x, y)` pairs of scenario `name`: `change_at` rows of its first generator, then
    `n_rows - change_at` of its second (an abrupt change)."""
    if name not in SCENARIOS:
        raise ValueError(f"Unknown scenario {name!r}. Known scenarios: {', '.join(SCENARIOS)}")
    before, after = SCENARIOS[name][1](seed)
    return itertools.chain(itertools.islice(before, change_at),
                           itertools.islice(after, n_rows - change_at))


def windows(correct: np.ndarray, change_at: int, window: int = WINDOW) -> dict:
    """Accuracy over the `window` rows before the change, the first and second `window` rows
    after it, and the last `window` rows."""
    c = np.asarray(correct, dtype=float)
    return {
        "before": c[max(0, change_at - window) : change_at].mean(),
        "just_after": c[change_at : change_at + window].mean(),
        "recovered": c[change_at + window : change_at + 2 * window].mean(),
        "end": c[-window:].mean(),
        "whole": c.mean(),
    }


@dataclass(frozen=True)
class Run:
    """One model on one scenario at one label ratio and seed: a picklable recipe."""

    scenario: str
    model: str
    label_ratio: float
    seed: int
    n_rows: int = N_ROWS
    change_at: int = CHANGE_AT
    window: int = WINDOW


def run_one(r: Run, params: dict | None = None) -> dict:
    """Test-then-train over the scenario's rows (the model with `params` on top of its
    defaults); the windows' accuracies, the rolling curve and the detector's alarms."""
    from evaluation.prequential import last_step

    # each model in its usual pipeline, as on River's tracks (our models learn every row)
    first_generator = SCENARIOS[r.scenario][1](r.seed)[0]
    model = tracks.make_model(r.model, first_generator, r.seed, r.label_ratio, params)
    keep = np.random.default_rng([r.seed, 7919]).random(r.n_rows) < r.label_ratio
    correct = np.zeros(r.n_rows, dtype=bool)
    for i, (x, y) in enumerate(scenario(r.scenario, r.seed, r.n_rows, r.change_at)):
        correct[i] = model.predict_one(x) == y
        if keep[i]:
            model.learn_one(x, y)
        elif tracks.ours(r.model):
            model.learn_one(x)
    learner = last_step(model)
    drifts = learner.drift_rows if hasattr(learner, "drift_rows") else []
    curve = np.convolve(correct, np.ones(500) / 500, mode="valid")[::100]
    return asdict(r) | windows(correct, r.change_at, r.window) | {
        "drift_rows": " ".join(map(str, drifts)), "curve": " ".join(f"{v:.3f}" for v in curve),
    }


# ---------------------------------------------------------------------------------- command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenarios", type=names, default=None,
                   help=f"comma-separated, of {', '.join(SCENARIOS)} (default: all)")
    p.add_argument("--models", type=names, default=None,
                   help="comma-separated registry names (default: "
                   f"{', '.join(DEFAULT_MODELS)})")
    p.add_argument("--label-ratios", type=floats, default=[1.0, 0.1, 0.01],
                   help="comma-separated shares of labeled rows")
    p.add_argument("--seeds", type=positive_int, default=3,
                   help="seeds --seed, --seed + 1, ... of every run")
    p.add_argument("--seed", type=int, default=0, help="the first seed")
    p.add_argument("--rows", type=positive_int, default=N_ROWS, help="rows of each scenario")
    p.add_argument("--change-at", type=positive_int, default=CHANGE_AT,
                   help="the row at which the concept changes")
    p.add_argument("--quick", action="store_true",
                   help=f"{QUICK_ROWS:,} rows with the change at {QUICK_CHANGE_AT:,}, windows of "
                   f"{QUICK_WINDOW:,}, SEA and STAGGER, 100 %% and 10 %% labels, one seed")
    p.add_argument("--jobs", type=positive_int, default=1, help="local worker processes")
    p.add_argument("--out", type=Path, default=Path("results/drift"), help="output directory")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=command)


def plan(args) -> list[Run]:
    """The runs `args` ask for, every name checked (ValueError otherwise)."""
    quick = args.quick
    scenarios = args.scenarios or (["sea", "stagger"] if quick else list(SCENARIOS))
    models = args.models or DEFAULT_MODELS
    ratios = [1.0, 0.1] if quick and args.label_ratios == [1.0, 0.1, 0.01] else args.label_ratios
    for name in scenarios:
        if name not in SCENARIOS:
            raise ValueError(f"Unknown scenario {name!r}. Known scenarios: {', '.join(SCENARIOS)}")
    for name in models:
        registry.check_model_name(name)
        if name.startswith(registry.MOA_PREFIX):
            raise ValueError(f"Invalid model {name!r}: the drift runs take this project's "
                             "models and River's")
    for value in ratios:
        if not 0.0 < value <= 1.0:
            raise ValueError(f"Invalid label ratio ({value}). Must be in (0, 1]")
    sizes = (QUICK_ROWS, QUICK_CHANGE_AT, QUICK_WINDOW) if quick else (
        args.rows, args.change_at, WINDOW)
    rows, change_at, window = sizes
    if not window <= change_at <= rows - 2 * window:
        raise ValueError(f"Invalid --change-at ({change_at}) for --rows {rows}. Must leave a "
                         f"window of {window:,} rows before it and two after it")
    seeds = range(args.seed, args.seed + (1 if quick else args.seeds))
    return [Run(s, m, ratio, seed, *sizes)
            for s in scenarios for ratio in ratios for seed in seeds for m in models]


def run_all(runs: list[Run], jobs: int = 1, quiet: bool = False) -> list[dict]:
    from ..runs import progress
    from ..runs.warmup import announce, warm_up

    results: list = [None] * len(runs)
    with progress.bar(len(runs), "drift", unit="run", quiet=quiet) as bar, counting(results):
        fresh = [registry.make_model(name, 2, None, seed=1, preset="default")
                 for name in dict.fromkeys(r.model for r in runs if tracks.ours(r.model))]
        announce(fresh, recording=True)  # one notice, the results' panel too
        if jobs > 1:
            warm_up((model, 2) for model in fresh)
        run_each(run_one, runs, results, jobs, bar)
    return results


def table_markdown(frame, command_line: str) -> str:
    """Mean accuracy over seeds per scenario, label ratio and model, and our detectors' alarms."""
    columns = ["before", "just_after", "recovered", "end"]
    lines = [
        f"`{command_line}`", "",
        f"Accuracy over {int(frame.window.iloc[0]):,}-row windows around the change, mean over "
        "seeds "
        f"({', '.join(map(str, sorted(frame.seed.unique())))}): before it, the first and the "
        "second window after it (recovered), the last rows of the stream (end). Alarms: the "
        "rows where our model's detector fired, per seed.", "",
    ]
    for ratio, block in frame.groupby("label_ratio", sort=False):
        lines += [f"**{ratio * 100:g}% labels**", "",
                  "| scenario | model | before | just after | recovered | end | alarms |",
                  "|---|---|---:|---:|---:|---:|---|"]
        for (name, model), runs in block.groupby(["scenario", "model"], sort=False):
            ours = tracks.ours(model)
            alarms = "; ".join(str(a) or "none" for a in runs.drift_rows) if ours else ""
            cells = " | ".join(f"{runs[c].mean():.3f}" for c in columns)
            lines.append(f"| {name} | `{model}` | {cells} | {alarms} |")
        lines.append("")
    lines += ["The scenarios (each changes at row "
              f"{int(frame.change_at.iloc[0]):,} of {int(frame.n_rows.iloc[0]):,}):", ""]
    lines += [f"- {name}: {SCENARIOS[name][0]}" for name in frame.scenario.unique()]
    return "\n".join(lines)


def figure(frame):
    """Rolling accuracy (500 rows) around the change, one panel per scenario and label ratio."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(frame.groupby(["scenario", "label_ratio"], sort=False))
    cols = min(3, len(groups))
    rows = -(-len(groups) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.2 * rows), squeeze=False)
    for ax, ((name, ratio), block) in zip(axes.flat, groups):
        change_at = int(block.change_at.iloc[0])
        for model, runs in block.groupby("model", sort=False):
            curves = np.array([[float(v) for v in c.split()] for c in runs.curve])
            x = 500 + 100 * np.arange(curves.shape[1])
            ax.plot(x, curves.mean(axis=0), label=model.replace("river:", ""), lw=1.2)
        ax.axvline(change_at, color="k", ls=":", lw=1)
        ax.set_title(f"{name}, {ratio * 100:g}% labels", fontsize=10)
        ax.set_xlabel("row")
        ax.set_ylabel("accuracy (500 rows)")
    for ax in axes.flat[len(groups):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def command(args) -> int:
    import pandas as pd

    from ..runs.files import atomic_write_all, check_writable, figure_job, result_jobs

    try:
        runs = plan(args)
        out = check_writable(args.out)
    except ValueError as e:
        print("error:", " ".join(str(e).split()), file=sys.stderr)
        return 2
    frame = pd.DataFrame(run_all(runs, args.jobs, args.quiet))
    table = table_markdown(frame, args.command_line)
    settings = {"command": args.command_line, "runs": len(runs),
                "scenarios": {name: SCENARIOS[name][0] for name in frame.scenario.unique()}}
    jobs = result_jobs(out, "drift", frame, table, settings)
    jobs.append(figure_job(out / "drift.png", figure(frame)))
    for path in atomic_write_all(jobs):
        print(path)
    print(table)
    return 0
