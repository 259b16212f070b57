"""How sensitive our models' drift detector is: how soon it sees a real change and how often it
fires on a stream that never changes, for the default watch (ADWIN and DDM side by side) and
for ADWIN alone at each `delta`.

    python -m evaluation detector --seed 1 --out evaluation/results/detector   # docs/drift.md
    python -m evaluation detector --quick                                       # a minute

For the default watch and each `delta` of `--deltas` (the model, `DHBM()` at its defaults
unless `--model` says otherwise, with `drift_detector=drift.ADWIN(delta)`), it runs

- the drift experiment's SEA scenario (`drift.scenario`: threshold 8 -> 9.5 at row 10,000 of
  20,000) at 10 % and 1 % labels, as a drift run does (River's dict API behind a
  `MinMaxScaler`, the same seeded mask): the first alarm at or after the change is how late
  the detector saw it;
- `--rows` rows of the stationary LED and Waveform (the streams of the learning targets) at
  100 %, 10 % and 1 % labels, through the prequential loop of `python -m evaluation run`:
  every alarm is a false one, and a restart of the learning it costs.

Writes `detector.csv` (one row per run, the alarms' rows), `detector.md` (the table) and
`settings.json`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from ..runs import registry
from ..runs.arguments import floats, positive_int
from ..runs.workers import counting, run_each
from . import drift, tracks

__all__ = ["DELTAS", "Run", "add_arguments", "command", "run_one"]

#: ARF's drift detector's, ADWIN's default, ARF's warning detector's (the default watch's
#: ADWIN), one more sensitive.
DELTAS = [0.001, 0.002, 0.01, 0.05]
#: The stationary streams' rows.
ROWS = 200_000
QUICK_ROWS = 20_000
#: `(case, label ratio)` -> the table's column.
CASES = {
    ("sea", 0.1): "SEA's alarm, 10 %",
    ("sea", 0.01): "SEA's alarm, 1 %",
    ("led-stationary", 1.0): "false alarms, LED, 100 %",
    ("led-stationary", 0.1): "LED, 10 %",
    ("led-stationary", 0.01): "LED, 1 %",
    ("waveform-stationary", 1.0): "Waveform, 100 %",
    ("waveform-stationary", 0.1): "Waveform, 10 %",
    ("waveform-stationary", 0.01): "Waveform, 1 %",
}


@dataclass(frozen=True)
class Run:
    """One model with one detector (`delta` None: the default watch) on one case (`CASES`),
    label ratio and seed: a picklable recipe."""

    case: str
    model: str
    delta: float | None
    seed: int
    rows: int = ROWS  # SEA's runs: the drift scenario's, `drift.N_ROWS`
    label_ratio: float = 1.0


def _detector(delta: float | None) -> dict:
    if delta is None:
        return {}
    from river import drift as river_drift

    return {"drift_detector": river_drift.ADWIN(delta=delta)}


def run_one(r: Run) -> dict:
    """The rows where the detector fired; for SEA, also the first one at or after the change."""
    if r.case == "sea":
        sea = drift.run_one(drift.Run("sea", r.model, r.label_ratio, r.seed), _detector(r.delta))
        alarms = [int(row) for row in sea["drift_rows"].split()]
    else:
        from evaluation.prequential import last_step, prequential

        dataset = registry.masked_stream(r.case, r.seed, r.label_ratio, None, r.seed)
        model = registry.make_model(r.model, dataset.n_features, None, seed=r.seed,
                                    preset="default", params=_detector(r.delta))
        prequential(dataset, model, r.rows)
        alarms = list(last_step(model).drift_rows)
    after = [a for a in alarms if a >= drift.CHANGE_AT] if r.case == "sea" else []
    return asdict(r) | {"alarms": " ".join(map(str, alarms)),
                        "n_alarms": len(alarms), "first_after_change": after[0] if after else None}


def _cell(run: dict) -> str:
    if run["case"] == "sea":
        first = run["first_after_change"]
        return "none" if first is None or first != first else f"{int(first):,}"  # NaN: none
    return str(run["n_alarms"])


def _setting(delta) -> str:
    return "default: ADWIN 0.01 and DDM" if delta is None or delta != delta else f"ADWIN {delta:g}"


def table_markdown(frame, command_line: str) -> str:
    """One row per detector (the default watch first, then ADWIN alone by delta): SEA's alarm
    after the change, the false alarms of each stationary stream (per seed, separated by
    semicolons)."""
    model = frame.model.iloc[0]
    stationary = frame[frame.case != "sea"]
    lines = [
        f"`{command_line}`", "",
        f"`{model}` at its defaults (the default watch) and with "
        "`drift_detector=drift.ADWIN(delta)`, seeds "
        f"{', '.join(map(str, sorted(frame.seed.unique())))}: the row of the first alarm at or "
        f"after SEA's change at row {drift.CHANGE_AT:,} and the alarms over "
        f"{int(stationary.rows.iloc[0]):,} rows of the stationary LED and Waveform, at each "
        "share of labeled rows.", "",
        "| detector | " + " | ".join(CASES.values()) + " |",
        "|---|" + "---:|" * len(CASES),
    ]
    frame = frame.assign(order=frame.delta.fillna(-1.0))
    for _, block in frame.groupby("order", sort=True):
        cells = ["; ".join(_cell(run) for _, run in
                           block[(block.case == case) & (block.label_ratio == ratio)].iterrows())
                 for case, ratio in CASES]
        lines.append(f"| {_setting(block.delta.iloc[0])} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--deltas", type=floats, default=DELTAS,
                   help="comma-separated confidences of ADWIN alone, each in (0, 1), beside the "
                   "default watch")
    p.add_argument("--model", default="dhbm-mf", help="one of this project's registry models")
    p.add_argument("--rows", type=positive_int, default=ROWS,
                   help="rows of each stationary stream")
    p.add_argument("--seeds", type=positive_int, default=1,
                   help="seeds --seed, --seed + 1, ... of every run")
    p.add_argument("--seed", type=int, default=0, help="the first seed")
    p.add_argument("--quick", action="store_true",
                   help=f"{QUICK_ROWS:,} rows of each stationary stream")
    p.add_argument("--jobs", type=positive_int, default=1, help="local worker processes")
    p.add_argument("--out", type=Path, default=Path("results/detector"),
                   help="output directory")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=command)


def plan(args) -> list[Run]:
    """The runs `args` ask for, every value checked (ValueError otherwise)."""
    if not tracks.ours(args.model):
        raise ValueError(f"Invalid model {args.model!r}: the detector belongs to this project's "
                         f"models ({', '.join(registry.MODELS)})")
    for delta in args.deltas:
        if not 0.0 < delta < 1.0:
            raise ValueError(f"Invalid delta ({delta}). Must be in (0, 1)")
    rows = QUICK_ROWS if args.quick else args.rows
    seeds = range(args.seed, args.seed + args.seeds)
    return [Run(case, args.model, delta, seed, drift.N_ROWS if case == "sea" else rows, ratio)
            for delta in [None, *args.deltas] for case, ratio in CASES for seed in seeds]


def run_all(runs: list[Run], jobs: int = 1, quiet: bool = False) -> list[dict]:
    from ..runs import progress
    from ..runs.warmup import announce, warm_up

    results: list = [None] * len(runs)
    with progress.bar(len(runs), "detector", unit="run", quiet=quiet) as bar, counting(results):
        fresh = registry.make_model(runs[0].model, 2, None, seed=1, preset="default")
        announce([fresh], recording=True)  # one notice, the results' behaviour panel too
        if jobs > 1:
            warm_up([(fresh, 2)])
        run_each(run_one, runs, results, jobs, bar)
    return results


def command(args) -> int:
    import pandas as pd

    from ..runs.files import atomic_write_all, check_writable, result_jobs

    try:
        runs = plan(args)
        out = check_writable(args.out)
    except ValueError as e:
        print("error:", " ".join(str(e).split()), file=sys.stderr)
        return 2
    frame = pd.DataFrame(run_all(runs, args.jobs, args.quiet))
    frame["delta"] = frame.delta.astype(float)  # None (the default watch): NaN
    table = table_markdown(frame, args.command_line)
    settings = {"command": args.command_line, "runs": len(runs),
                "sea": drift.SCENARIOS["sea"][0]}
    for path in atomic_write_all(result_jobs(out, "detector", frame, table, settings)):
        print(path)
    print(table)
    return 0
