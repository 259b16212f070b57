"""The label-scarcity experiment: error against label ratio, our models beside their
unlabeled-off ablations and the peers (River's learn the labeled rows only; MOA's SLEADE
learns the unlabeled ones too).

    python -m evaluation scarcity --quick --jobs 2          # < 3 min on 2 cores, prints the table
    python -m evaluation scarcity --jobs 2                  # the stationary streams, 5 seeds
    python -m evaluation scarcity --streams led,waveform --jobs 2 --out results/scarcity-drift

One run per stream x label ratio x model x seed; its measure is the faded prequential error
averaged over the run's last quarter (the last 50,000 of 200,000 instances). Writes
`scarcity.csv` (one row per run), `scarcity.md` (mean +- standard error over seeds) and
`scarcity.png`/`.pdf` (error against label ratio), and prints the table.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ..runs import registry
from ..runs.arguments import floats, names, positive_int

__all__ = ["add_arguments", "plan", "run", "runs_frame", "table_markdown", "write_outputs"]

#: The Bayes error of each stream's concept (drift moves the concept, not its noise).
BAYES_ERROR = {"led": 0.260, "led-stationary": 0.260,
               "waveform": 0.133, "waveform-stationary": 0.133}

GROUPS = ("ours", "ablations", "peers")  # the table's row groups, in this order

_KEYS = ("instances", "trials", "label_ratios", "label_batch", "batch_size", "fading_factor",
         "step", "preset", "streams", "models", "trials_for", "only_on", "delayed")
_DEFAULTS = {"label_batch": 0, "batch_size": 20, "fading_factor": 0.995, "step": 1000,
             "preset": "default", "trials_for": {}, "only_on": {}, "delayed": []}


def group_of(model: str) -> str:
    """`ours`, `ablations` (`<model>/labeled-only`) or `peers` (River's, MOA's)."""
    base_name, ablation = registry.split_ablation(model)
    if ablation:
        return "ablations"
    return "ours" if base_name in registry.MODELS else "peers"


# ---------------------------------------------------------------------------------- plan


def settings_of(config: dict, quick: bool = False, **flags) -> dict:
    """The config's settings, its `[quick]` table on top with `quick`, then the flags that are
    not None. Raises ValueError for a missing or invalid setting."""
    s = _DEFAULTS | {k: v for k, v in config.items() if k in _KEYS}
    if quick:
        s.update({k: v for k, v in config.get("quick", {}).items() if k in _KEYS})
    s.update({k: v for k, v in flags.items() if v is not None})
    for key in ("instances", "trials", "streams", "models", "label_ratios"):
        if key not in s or (isinstance(s[key], list) and not s[key]):
            raise ValueError(f"The label-scarcity config needs {key!r}")
    for key in ("instances", "trials", "batch_size", "step"):
        if isinstance(s[key], bool) or not isinstance(s[key], int) or s[key] < 1:
            raise ValueError(f"Invalid {key} ({s[key]!r}). Must be a positive integer")
    for ratio in s["label_ratios"]:
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1:
            raise ValueError(f"Invalid label ratio ({ratio!r}). Valid range is (0, 1]")
    for d in s["delayed"]:
        if not (isinstance(d, dict) and set(d) == {"label_ratio", "delay"}
                and isinstance(d["delay"], int) and d["delay"] >= 1
                and isinstance(d["label_ratio"], (int, float)) and 0 < d["label_ratio"] <= 1):
            raise ValueError(f"Invalid delayed column ({d!r}). Expected "
                             "{ label_ratio = <in (0, 1]>, delay = <int >= 1> }")
    for name in s["streams"]:
        registry.check_stream_name(name)
    for name in s["models"]:
        registry.check_model_name(name)
    registry.check_preset(s["preset"])
    return s


def columns_of(s: dict) -> list[tuple[float, int]]:
    """The table's (label ratio, delay) columns of each stream: every ratio without delay, then
    the `delayed` variants."""
    cols = [(float(r), 0) for r in s["label_ratios"]]
    cols += [(float(d["label_ratio"]), int(d["delay"])) for d in s["delayed"]]
    return list(dict.fromkeys(cols))


def plan(s: dict, seed: int = 0) -> list:
    """The runs of the grid as `experiment.Trial`s. Every model of a (stream, seed) sees the
    same rows and mask (the seeds depend on stream and seed only); `trials_for` gives a model
    fewer seeds, `only_on` limits it to some streams."""
    from ..runs.experiment import Trial

    trials = []
    for stream in s["streams"]:
        for ratio, delay in columns_of(s):
            for model in s["models"]:
                if stream not in s["only_on"].get(model, [stream]):
                    continue
                for k in range(min(int(s["trials_for"].get(model, s["trials"])), s["trials"])):
                    trials.append(Trial(
                        stream=stream, model=model, trial=k, instances=s["instances"],
                        label_ratio=ratio, label_batch=s["label_batch"] or None,
                        batch_size=s["batch_size"], fading_factor=s["fading_factor"],
                        step=s["step"], seed=seed, preset=s["preset"], delay=delay,
                    ))
    return trials


# ---------------------------------------------------------------------------------- outputs


def tail_mean(positions, faded, share: float = 0.25) -> float:
    """The faded error averaged over the recorded points of the run's last `share`."""
    positions, faded = np.asarray(positions), np.asarray(faded)
    return float(faded[positions > (1.0 - share) * positions[-1]].mean())


def runs_frame(results) -> pd.DataFrame:
    """One row per run: where it ran (stream, ratio, delay, model, seed) and its measure."""
    rows = []
    for r in results:
        t = r["trial"]
        rows.append({
            "stream": t["stream"], "label_ratio": t["label_ratio"], "delay": t.get("delay", 0),
            "model": t["model"], "group": group_of(t["model"]), "trial": t["trial"],
            "instances": int(r["positions"][-1]),
            "tail_faded_error": tail_mean(r["positions"], r["faded_error"]),
            "final_faded_error": float(r["faded_error"][-1]),
            "seconds": r["seconds"], "cpu_seconds": r["cpu_seconds"],
        })
    return pd.DataFrame(rows)


def aggregate(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, standard error (NaN with one seed) and count of the measure over seeds."""
    keys = ["stream", "label_ratio", "delay", "model"]
    g = runs.groupby(keys, sort=False)["tail_faded_error"]
    out = g.agg(mean="mean", n="count", sd="std").reset_index()
    out["se"] = out.sd / np.sqrt(out.n)
    return out.drop(columns="sd")


def _column_name(stream: str, ratio: float, delay: int) -> str:
    name = f"{stream} {100 * ratio:g} %"
    return name + (f", delay {delay:,}" if delay else "")


def _ordered_models(models) -> list[str]:
    models = list(dict.fromkeys(models))
    return [m for g in GROUPS for m in models if group_of(m) == g]


def table_markdown(runs: pd.DataFrame) -> str:
    """Models (rows, grouped ours / ablations / peers) x stream and label ratio (columns):
    `mean ± standard error` of the measure over seeds, the best mean of each column in bold."""
    agg = aggregate(runs)
    columns = list(dict.fromkeys(zip(agg.stream, agg.label_ratio, agg.delay)))
    best = agg.groupby(["stream", "label_ratio", "delay"])["mean"].min()
    cells = {(r.stream, r.label_ratio, r.delay, r.model): r for r in agg.itertuples()}
    lines = ["| group | model | " + " | ".join(_column_name(*c) for c in columns) + " |",
             "|---|---|" + "---:|" * len(columns)]
    for model in _ordered_models(agg.model):
        row = []
        for c in columns:
            r = cells.get((*c, model))
            if r is None:
                row.append("")
                continue
            text = f"{r.mean:.3f}" + ("" if np.isnan(r.se) else f" ± {r.se:.3f}")
            row.append(f"**{text}**" if r.mean == best[c] else text)
        lines.append(f"| {group_of(model)} | {model} | " + " | ".join(row) + " |")
    seeds = agg.n.min(), agg.n.max()
    seeds_text = f"{seeds[0]}" if seeds[0] == seeds[1] else f"{seeds[0]}-{seeds[1]}"
    n = int(runs.instances.max())
    lines.append("")
    lines.append(f"Faded prequential error over the last quarter of {n:,} instances, mean ± "
                 f"standard error over {seeds_text} seeds; best of each column in bold.")
    return "\n".join(lines) + "\n"


def draw_figure(runs: pd.DataFrame):
    """Error against label ratio (log axis), one panel per stream, standard-error bars; each
    ablation dashed in its model's colour; the Bayes error as a grey line. Delayed variants are
    in the table only."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..runs.plots import STREAM_ORDER, model_label, ordered

    agg = aggregate(runs[runs.delay == 0])
    streams = ordered(agg.stream, STREAM_ORDER)
    models = _ordered_models(agg.model)
    bases = list(dict.fromkeys(registry.split_ablation(m)[0] for m in models))
    palette = [*plt.cm.tab10.colors, *plt.cm.Dark2.colors]
    colours = {m: palette[i % len(palette)] for i, m in enumerate(bases)}
    fig, axes = plt.subplots(1, len(streams), figsize=(5.5 * len(streams), 4.5), squeeze=False)
    for ax, stream in zip(axes[0], streams):
        for model in models:
            g = agg[(agg.stream == stream) & (agg.model == model)].sort_values("label_ratio")
            if g.empty:
                continue
            base_name, ablation = registry.split_ablation(model)
            style = "--" if ablation else (":" if group_of(model) == "peers" else "-")
            ax.errorbar(g.label_ratio, g["mean"], yerr=g.se.fillna(0.0), color=colours[base_name],
                        ls=style, marker="o", ms=3, capsize=2, lw=1.2,
                        label=model_label(base_name) + (" (labeled only)" if ablation else ""))
        if stream in BAYES_ERROR:
            ax.axhline(BAYES_ERROR[stream], color="0.4", lw=1, ls="-.", label="Bayes error")
        ax.set_xscale("log")
        ax.set_title(stream)
        ax.set_xlabel("label ratio")
        ax.set_ylabel("faded error, last quarter")
        ax.grid(alpha=0.3, which="both")
    legend = {}  # every model met in any panel, once
    for ax in axes[0]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    fig.legend(legend.values(), legend.keys(), loc="center left", bbox_to_anchor=(1.0, 0.5),
               frameon=False)
    fig.tight_layout()
    return fig


def write_outputs(runs: pd.DataFrame, out, settings: dict | None = None,
                  figure: bool = True) -> list[Path]:
    """Write scarcity.csv, scarcity.md, settings.json and scarcity.png/.pdf into `out`, all or
    nothing."""
    from ..runs.files import atomic_write_all, check_writable, figure_job, result_jobs

    out = check_writable(out)
    jobs = result_jobs(out, "scarcity", runs, table_markdown(runs), settings)
    fig = draw_figure(runs) if figure else None
    if fig is not None:
        jobs += [figure_job(out / f"scarcity.{ext}", fig) for ext in ("png", "pdf")]
    try:
        return atomic_write_all(jobs)
    finally:
        if fig is not None:
            import matplotlib.pyplot as plt

            plt.close(fig)


# ---------------------------------------------------------------------------------- command


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags and the command of the `scarcity` subcommand, on its parser `p`."""
    p.description = (
        "The label-scarcity experiment (configs/label_scarcity.toml): every stream "
        "x label ratio x model x seed, per-instance label mask; the measure is the faded error "
        "over the last quarter of each run. Writes a CSV, a markdown table and one figure."
    )
    p.add_argument("--config", default="label_scarcity",
                   help="a TOML config, a file or a bundled name (default label_scarcity)")
    p.add_argument("--quick", action="store_true", help="the config's short version")
    p.add_argument("--instances", type=positive_int, help="instances per run")
    p.add_argument("--trials", "--seeds", type=positive_int, dest="trials",
                   help="seeds per cell, numbered 0..N-1 from --seed")
    p.add_argument("--label-ratios", type=floats, help="comma-separated, e.g. 0.1,0.01")
    p.add_argument("--models", type=names, help="comma-separated models instead of the config's")
    p.add_argument("--streams", type=names,
                   help="comma-separated streams instead of the config's (led,waveform: the "
                   "paper's drifting streams)")
    p.add_argument("--seed", type=int, default=0, help="base seed of every run")
    p.add_argument("--jobs", type=positive_int, default=1, help="local worker processes")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a dask.distributed scheduler (default: local processes)")
    p.add_argument("--csv", type=Path,
                   help="redraw the table and figure from this scarcity.csv, without running "
                   "(default: run)")
    p.add_argument("--out", type=Path,
                   help="output directory (default results/scarcity or results/scarcity-quick)")
    p.add_argument("--no-figure", action="store_true", help="skip the figure")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def run(args) -> int:
    """The `scarcity` subcommand."""
    from ..runs import experiment

    out = args.out or Path("results") / ("scarcity-quick" if args.quick else "scarcity")
    if args.csv is not None:
        try:
            runs = pd.read_csv(args.csv)
            write_outputs(runs, out, figure=not args.no_figure)
        except (OSError, ValueError, KeyError) as e:
            return _fail(f"cannot redraw from {str(args.csv)!r}: {e}")
        print(table_markdown(runs), end="")
        print(f"results written to {out}")
        return 0
    try:
        config = registry.load_config(args.config)
        s = settings_of(config, args.quick, instances=args.instances, trials=args.trials,
                        label_ratios=args.label_ratios, models=args.models,
                        streams=args.streams)
        skipped, why = registry.missing_peers(s["models"])
        if why:  # MOA's peers without capymoa: their rows only are left out
            print(why, file=sys.stderr)
            s["models"] = [m for m in s["models"] if m not in skipped]
        trials = plan(s, seed=args.seed)
        if not trials:
            raise ValueError("Nothing to run: no model runs on these streams")
        for t in {(t.stream, t.model): t for t in trials}.values():  # bad names fail now
            t.build()
        experiment.check_writable(out)
    except ValueError as e:
        return _fail(str(e))
    try:
        results = experiment.run_trials(trials, jobs=args.jobs, scheduler=args.scheduler,
                                        quiet=args.quiet, recording=True)
    except OSError as e:
        return _fail(f"cannot run the trials: {e}")
    runs = runs_frame(results)
    print(table_markdown(runs), end="")
    cpu = runs.cpu_seconds.sum()
    print(f"{len(runs)} runs, {cpu / 60:.1f} CPU minutes in all")
    settings = s | {"seed": args.seed, "config": config["_path"], "quick": args.quick,
                    "jobs": args.jobs, "command_line": args.command_line}
    write_outputs(runs, out, settings=settings, figure=not args.no_figure)
    print(f"results written to {out}")
    return 0
