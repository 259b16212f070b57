"""`--verify K` of the offline runs (`mnist`, `newsgroups`): is a recorded trial what today's
code gives?

The offline tables take hours to re-run, and the behaviour hash's panel does not reach them
(`evaluation.runs.files.behaviour_hash`). Re-running one trial with the settings its run
recorded and finding every figure equal is the evidence that the code of today gives those
tables; the run's settings.json then records today's `sources` and `behaviour`.
"""

from __future__ import annotations

import csv
import dataclasses
import datetime
import json
import sys
from pathlib import Path

from ...runs.files import atomic_write
from .data import MissingData
from .record import code_record, make_specs, read_run
from .trainer import run_specs

#: What `--verify` compares between a recorded trial and its re-run (all but the seconds).
VERIFIED = ("seed", "learning_rate", "beta", "validation_error", "test_error", "updates",
            "stopped_at", "unlabeled_rows")


def verify_trial(args, data_set, experiment: str) -> int:
    """`--verify K`: run trial K of the results in `--out` again with the settings they
    recorded (the config may have changed since), reading the data through `data_set` (an
    `experiment.DataSet`), and compare `VERIFIED` and its validation curve (curves.csv).
    Equal: today's `sources` and `behaviour` go into settings.json, with a note in
    `verified`, so the docs' tables of that run count as today's. Different: exit 1, one
    line naming what differs, nothing written."""
    out = Path(args.out or Path("results") / f"{experiment}-{args.model}")
    k = args.verify
    try:
        rows, record = read_run(out, "verify")
        recorded = {r["trial"]: r for r in rows}.get(k)
        if recorded is None:
            raise ValueError(f"{str(out)!r} holds no trial {k} (trials: "
                             f"{sorted(r['trial'] for r in rows)})")
        _, (spec,) = make_specs(record | {"first_trial": k, "trials": 1, "grid": {}})
        spec = dataclasses.replace(spec, params=dict(record["chosen"]))
        data = data_set.load(out)
        directory = data_set.share(data, out)
    except (MissingData, ValueError, KeyError) as e:
        return _fail(str(e) if not isinstance(e, KeyError) else
                     f"{str(out / 'settings.json')!r} records no {e}")
    (result,) = run_specs([spec], data, directory, 1, f"verify trial {k}", args.quiet,
                          loader=data_set.loader)
    differences = [f"{key} {recorded[key]!r} recorded, {result[key]!r} now" for key in VERIFIED
                   if recorded.get(key) != result[key]]
    if (out / "curves.csv").is_file():
        with open(out / "curves.csv", newline="") as f:
            curve = [(int(r["updates"]), float(r["validation_error"]))
                     for r in csv.DictReader(f) if int(r["trial"]) == k]
        again = [(u, e) for u, e in result["curve"]]
        apart = [(a, b) for a, b in zip(curve, again) if a != b]
        if apart or (curve and len(curve) != len(again)):
            (u, e), (_, now) = apart[0] if apart else (curve[-1], again[-1])
            differences.append(f"the validation curve (first apart after {u:,} updates: "
                               f"{e!r} recorded, {now!r} now)")
    if differences:
        return _fail(f"trial {k} of {str(out)!r} is not reproduced: " + "; ".join(differences),
                     code=1)
    code = code_record()
    note = {"trial": k, "date": datetime.date.today().isoformat()} | code
    record = record | code | {"verified": [*record.get("verified", []), note]}
    text = json.dumps(record, indent=2, default=str) + "\n"
    atomic_write(out / "settings.json", lambda p: p.write_text(text))
    print(f"trial {k} of {out} reproduced exactly (test error {100 * result['test_error']:.2f} "
          f"%); its settings.json records today's behaviour {code['behaviour']}")
    return 0


def _fail(message: str, code: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code
