"""The offline experiments' report: a table of the paper with our rows, and the result files.

MNIST's is the paper's Table 1 (`MNIST_TABLE`); the 20 NewsGroups runner brings its own
`PaperTable`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from ...runs.files import atomic_write_all
from .trainer import MODELS

__all__ = [
    "MNIST_TABLE", "PAPER_ROWS", "PaperTable", "RESULT_COLUMNS", "summarise", "summary_markdown",
    "write_outputs",
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
        errors = np.array([100.0 * r["test_error"] for r in results if r["model"] == model])
        se = float(errors.std(ddof=1) / np.sqrt(len(errors))) if len(errors) > 1 else None
        rows.append({"model": model, "trials": len(errors), "mean": float(errors.mean()), "se": se})
    return rows


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
