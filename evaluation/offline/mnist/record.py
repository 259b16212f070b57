"""What an offline run records and reads back: its trials' specs from its settings, its
results.csv and settings.json, and the code it ran with. Shared by the protocol
(`experiment`) and the check that a record is still what the code gives (`verify`)."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path

import numpy as np

from .trainer import TrialSpec

__all__ = ["SAME_SETTINGS", "code_record", "make_specs", "read_previous", "read_run"]


def _seed(base: int, *parts) -> int:
    return int(np.random.SeedSequence([base % 2**32, *parts]).generate_state(1)[0] % 2**31)


def make_specs(s: dict) -> tuple[list[TrialSpec], list[TrialSpec]]:
    """The grid-search runs and the trial template (without the chosen grid values)."""
    common = dict(
        model=s["model"], labels=s.get("labels", 100), validation=s.get("validation", 1000),
        labeled_per_batch=s.get("labeled_per_batch", 10),
        unlabeled_per_batch=s.get("unlabeled_per_batch", 10),
        beta_schedule=tuple(s["beta_schedule"]) if s.get("beta_schedule") else None,
        keep_best=bool(s.get("keep_best", False)),
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
                 "unlabeled_per_batch", "beta_schedule", "max_train", "params", "seed",
                 "keep_best")

_RESULT_TYPES = {"trial": int, "seed": int, "updates": int, "stopped_at": int,
                 "unlabeled_rows": int,
                 "learning_rate": float, "beta": float, "validation_error": float,
                 "test_error": float, "seconds": float}


def _without_grid(params: dict) -> dict:
    return {k: v for k, v in params.items() if k not in ("learning_rate", "beta")}


def read_run(out: Path, purpose: str = "append to") -> tuple[list[dict], dict]:
    """The trials (results.csv, each with its validation `curve` when curves.csv has it) and
    the settings record of an earlier run in `out`; `ValueError` naming `purpose` if it holds
    none."""
    out = Path(out)
    if not (out / "results.csv").is_file() or not (out / "settings.json").is_file():
        raise ValueError(f"Nothing to {purpose}: {str(out)!r} holds no results.csv and "
                         "settings.json of an earlier run")
    record = json.loads((out / "settings.json").read_text())
    with open(out / "results.csv", newline="") as f:
        rows = [{k: (_RESULT_TYPES[k](v) if k in _RESULT_TYPES and v != "" else v)
                 for k, v in row.items()} for row in csv.DictReader(f)]
    curves: dict = {}  # each earlier trial keeps its validation curve in the rewritten file
    if (out / "curves.csv").is_file():
        with open(out / "curves.csv", newline="") as f:
            for point in csv.DictReader(f):
                curves.setdefault(int(point["trial"]), []).append(
                    (int(point["updates"]), float(point["validation_error"])))
    for row in rows:
        if row["trial"] in curves:
            row["curve"] = curves[row["trial"]]
    return rows, record


def read_previous(out: Path, settings: dict) -> tuple[list[dict], dict]:
    """The trials and the settings record of an earlier run in `out`, for `--append`.

    `ValueError` if `out` holds no earlier run, or one with other settings (`SAME_SETTINGS`,
    grid values aside: the earlier run's chosen point is reused).
    """
    rows, record = read_run(out)
    for key in SAME_SETTINGS:
        old, new = record.get(key), settings.get(key)
        if key == "params":
            old, new = _without_grid(old or {}), _without_grid(new or {})
        if key == "beta_schedule":
            old, new = (list(v) if v is not None else None for v in (old, new))
        if old != new:
            raise ValueError(f"Cannot append to {str(out)!r}: its {key} is {old!r}, "
                             f"this run's is {new!r}")
    return rows, record


def code_record() -> dict:
    """The code a run records: `sources` and `behaviour` (`evaluation.runs.files`)."""
    from ...runs.files import behaviour_hash, sources_hash

    return {"sources": sources_hash(), "behaviour": behaviour_hash()}

