"""The offline experiments' report: a table of the paper with our rows, and the result files.

MNIST's is the paper's Table 1 (`MNIST_TABLE`); the 20 NewsGroups runner brings its own
`PaperTable`. The docs' tables, which set several runs side by side, are written from the
runs' result directories without re-running them:

    python -m evaluation.offline.mnist.table --row DIR LABEL [--row DIR LABEL ...] --out OUT
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
from pathlib import Path

import numpy as np

from ...runs.files import atomic_write_all, check_writable
from .trainer import MODELS

__all__ = [
    "MNIST_TABLE", "PAPER_COUNTERPARTS", "PAPER_ROWS", "PaperTable", "RESULT_COLUMNS", "Run",
    "read_run", "rows_markdown", "summarise", "summary_markdown", "unlabeled_markdown",
    "write_outputs", "write_tables",
]

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



@dataclasses.dataclass(frozen=True)
class PaperTable:
    """A table of the paper: its rows `(name, mean, standard error or None, source)` and, for
    each `--model`, the row our results sit under."""

    rows: tuple
    names: dict


MNIST_TABLE = PaperTable(
    rows=tuple((name, mean, se, "paper, 10 trials" if name in ("3-DHBM", "3-DHDA")
                else "Lee (2013), via the paper") for name, mean, se in PAPER_ROWS),
    names={model: row for model, (_, row) in MODELS.items()},
)

RESULT_COLUMNS = [
    "model", "trial", "seed", "learning_rate", "beta", "validation_error", "test_error",
    "updates", "stopped_at", "unlabeled_rows", "seconds",
]


# ---------------------------------------------------------------------------------- reporting


def summarise(results) -> list[dict]:
    """Mean and standard error (sample sd / sqrt(n)) of the test error, in %, per model."""
    rows = []
    for model in dict.fromkeys(r["model"] for r in results):
        errors = [100.0 * r["test_error"] for r in results if r["model"] == model]
        mean, se = _mean_se(errors)
        rows.append({"model": model, "trials": len(errors), "mean": mean, "se": se})
    return rows


def _mean_se(values) -> tuple[float, float | None]:
    """The mean of `values` and its standard error (None for a single value)."""
    values = np.asarray(list(values), dtype=float)
    se = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else None
    return float(values.mean()), se


def _cell(mean, se) -> str:
    return f"{mean:.2f}" if se is None else f"{mean:.2f} ± {se:.2f}"


def summary_markdown(summary, table: PaperTable = MNIST_TABLE) -> str:
    """The paper's `table` (default Table 1) with our rows beside its own rows of our models."""
    ours = {table.names.get(s["model"], s["model"]): s for s in summary}
    lines = ["| Model | Test error (%) | Source |", "|---|---|---|"]
    for name, mean, se, source in table.rows:
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


def write_outputs(out: Path, results, selection, settings: dict,
                  table: PaperTable = MNIST_TABLE) -> list[Path]:
    """results.csv, selection.csv, summary.md (our rows in `table`), settings.json and, when
    the runs recorded their validation errors along the way (`curve`), curves.csv in `out`."""
    text = summary_markdown(summarise(results), table)
    jobs = [
        (out / "results.csv", lambda p: _write_csv(p, results, RESULT_COLUMNS)),
        (out / "summary.md", lambda p: p.write_text(text)),
        (out / "settings.json",
         lambda p: p.write_text(json.dumps(settings, indent=2, default=str) + "\n")),
    ]
    if selection:
        jobs.append((out / "selection.csv", lambda p: _write_csv(p, selection, RESULT_COLUMNS)))
    points = [{"trial": r["trial"], "updates": u, "validation_error": e}
              for r in results for u, e in r.get("curve") or ()]
    if points:
        jobs.append((out / "curves.csv", lambda p: _write_csv(
            p, points, ["trial", "updates", "validation_error"])))
    return atomic_write_all(jobs)


# ------------------------------------------------------------------- the docs' tables of runs

#: `--model` -> the row of the paper's Table 1 our row is read against: the hybrids against
#: the paper's own, the pseudo-label MLP against Lee's DROPNN+PL, the network it reproduces.
PAPER_COUNTERPARTS = {"dhbm": "3-DHBM", "dhda": "3-DHDA", "mlp": "DROPNN+PL"}

#: The sibling directory of a run that holds its ablation without the unlabeled images.
LABELED_ONLY_SUFFIX = "-labeled-only"


@dataclasses.dataclass(frozen=True)
class Run:
    """One result directory of `python -m evaluation mnist`: its `--model`, the test error (%)
    of each trial index, and its `settings.json`."""

    directory: Path
    model: str
    errors: dict
    settings: dict


def read_run(directory) -> Run:
    """The run written into `directory` (its `results.csv` and `settings.json`)."""
    import csv

    directory = Path(directory)
    try:
        with open(directory / "results.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        settings = json.loads((directory / "settings.json").read_text())
    except FileNotFoundError as e:
        raise ValueError(f"{str(directory)!r} holds no MNIST run: {Path(e.filename).name} "
                         "is missing") from None
    if not rows:
        raise ValueError(f"{str(directory)!r} holds no MNIST run: results.csv has no trial")
    if rows[0]["model"] not in PAPER_COUNTERPARTS:
        raise ValueError(f"{str(directory)!r} holds a run of --model {rows[0]['model']!r}, "
                         f"not of MNIST's {', '.join(PAPER_COUNTERPARTS)}")
    errors = {int(r["trial"]): 100.0 * float(r["test_error"]) for r in rows}
    return Run(directory, rows[0]["model"], errors, settings)


def _paper_row(model: str) -> tuple:
    name = PAPER_COUNTERPARTS[model]
    return next(row for row in MNIST_TABLE.rows if row[0] == name)


def rows_markdown(rows) -> str:
    """Table 1's rows of ours: for each `(label, run)`, the mean ± standard error of the test
    error over its trials, their range, and the paper's figure for that model (in bold: our
    mean below it)."""
    lines = ["| model | trials | ours: mean ± standard error | range | paper |",
             "|---|---:|---:|---|---:|"]
    for label, run in rows:
        mean, se = _mean_se(run.errors.values())
        name, paper, paper_se, _ = _paper_row(run.model)
        paper_cell = f"{paper:.2f}" + ("" if paper_se is None else f" ± {paper_se:g}")
        if name != MODELS[run.model][1]:  # another network's row: say whose
            paper_cell = f"{name}: {paper_cell}"
        ours = _cell(mean, se)
        lines.append(f"| {label} | {len(run.errors)} | {f'**{ours}**' if mean < paper else ours} "
                     f"| {min(run.errors.values()):.2f}-{max(run.errors.values()):.2f} "
                     f"| {paper_cell} |")
    return "\n".join(lines) + "\n"


def unlabeled_markdown(pairs) -> str:
    """What the unlabeled images are worth: for each `(label, run, labeled-only run)`, the
    test error without them, with them, and the paired gain (without less with, over the
    trial indices both ran: the same labeled split) with its range."""
    lines = ["| row | trials | without them | with them | paired gain |",
             "|---|---:|---:|---:|---:|"]
    for label, run, alone in pairs:
        trials = sorted(run.errors.keys() & alone.errors.keys())
        if not trials:
            raise ValueError(f"{str(alone.directory)!r} shares no trial with "
                             f"{str(run.directory)!r}")
        gains = [alone.errors[t] - run.errors[t] for t in trials]
        lines.append(
            f"| {label} | {len(trials)} | {_cell(*_mean_se(alone.errors[t] for t in trials))} "
            f"| {_cell(*_mean_se(run.errors[t] for t in trials))} "
            f"| {_cell(*_mean_se(gains))} ({min(gains):.1f}-{max(gains):.1f}) |")
    return "\n".join(lines) + "\n"


def write_tables(out: Path, rows, command: str) -> list[Path]:
    """`rows.md` (`rows_markdown` of `rows`, `(label, directory)` pairs), `unlabeled.md`
    (`unlabeled_markdown` of the rows whose directory has a `-labeled-only` sibling) and
    `settings.json` (the command and the directories read) in `out`. A row whose ablation
    recorded another `behaviour` is left out of `unlabeled.md`, with a line saying so.
    `settings.json` records the runs' `sources` and `behaviour` each only when every run
    recorded the same: the tables are as current as their oldest run."""
    runs = [(label, read_run(directory)) for label, directory in rows]
    alone = {label: run.directory.with_name(run.directory.name + LABELED_ONLY_SUFFIX)
             for label, run in runs}
    pairs = [(label, run, read_run(alone[label])) for label, run in runs if alone[label].is_dir()]
    # A paired gain compares two runs of the same code: a row re-run since its ablation ran
    # waits for the ablation's re-run.
    apart = [label for label, run, alone in pairs
             if run.settings.get("behaviour") != alone.settings.get("behaviour")]
    pairs = [pair for pair in pairs if pair[0] not in apart]
    settings = {"command": command,
                "rows": {label: str(directory) for label, directory in rows}}
    for key in ("sources", "behaviour"):
        values = {run.settings.get(key) for _, run in runs}
        values |= {alone.settings.get(key) for *_, alone in pairs}
        if len(values) == 1 and None not in values:
            settings[key] = values.pop()
    text = json.dumps(settings, indent=2) + "\n"
    tables = rows_markdown(runs), unlabeled_markdown(pairs) + "".join(
        f"\n{label}: left out, its ablation ran with other code than the row (re-run it).\n"
        for label in apart)
    out = check_writable(out)
    return atomic_write_all([
        (out / "rows.md", lambda p: p.write_text(tables[0])),
        (out / "unlabeled.md", lambda p: p.write_text(tables[1])),
        (out / "settings.json", lambda p: p.write_text(text)),
    ])


def main(argv: list[str] | None = None) -> int:
    from ...runs.arguments import HelpFormatter, OneLineParser

    parser = OneLineParser(
        prog="python -m evaluation.offline.mnist.table",
        description="The docs' MNIST tables, from the result directories of earlier runs of "
                    "`python -m evaluation mnist` (nothing is re-run).",
        formatter_class=HelpFormatter)
    parser.add_argument("--row", nargs=2, action="append", required=True,
                        metavar=("DIR", "LABEL"),
                        help="a run's --out directory and its label in the tables, in order; "
                             "its DIR-labeled-only sibling, if any, is its ablation")
    parser.add_argument("--out", type=Path, required=True,
                        help="directory written: rows.md, unlabeled.md, settings.json")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    command = shlex.join(["python", "-m", "evaluation.offline.mnist.table", *argv])
    try:
        written = write_tables(args.out, [(label, Path(d)) for d, label in args.row],
                               command)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print("\n".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
