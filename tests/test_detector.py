"""`python -m evaluation detector`: the table of the drift detector's sensitivity (docs/drift.md)
comes from runs that find SEA's change and stay quiet on a stream that does not change."""

from __future__ import annotations

import argparse

import pandas as pd
import pytest

from evaluation.experiments import detector, drift


def _args(**kw):
    base = dict(deltas=[0.01, 0.05], model="dhbm-mf", rows=5000, seeds=2, seed=1, quick=False,
                jobs=1, out=None, quiet=True)
    return argparse.Namespace(**(base | kw))


def test_the_plan_checks_the_model_and_the_deltas_in_one_line():
    for bad, message in [({"model": "river:tree.HoeffdingTreeClassifier"}, "Invalid model"),
                         ({"deltas": [0.0]}, r"Invalid delta \(0.0\)"),
                         ({"deltas": [1.0]}, r"Invalid delta \(1.0\)")]:
        with pytest.raises(ValueError, match=message) as e:
            detector.plan(_args(**bad))
        assert "\n" not in str(e.value)
    runs = detector.plan(_args())
    assert len(runs) == 3 * 8 * 2  # the default watch and two deltas, 8 cases, 2 seeds
    assert {r.delta for r in runs} == {None, 0.01, 0.05}
    assert {(r.case, r.label_ratio, r.rows) for r in runs} == {
        ("sea", 0.1, drift.N_ROWS), ("sea", 0.01, drift.N_ROWS),
        *((case, ratio, 5000) for case in ("led-stationary", "waveform-stationary")
          for ratio in (1.0, 0.1, 0.01))}
    assert {r.rows for r in detector.plan(_args(quick=True)) if r.case != "sea"} == {
        detector.QUICK_ROWS}


def test_the_detector_finds_seas_change_and_stays_quiet_on_a_stationary_stream():
    sea = detector.run_one(detector.Run("sea", "dhbm-mf", 0.05, 1, drift.N_ROWS, 0.1))
    # the alarm comes after the change, within a window of it (10,600 when written)
    assert drift.CHANGE_AT <= sea["first_after_change"] <= drift.CHANGE_AT + drift.WINDOW
    # the control: the same detector on a stream that never changes does not fire
    led = detector.run_one(detector.Run("led-stationary", "dhbm-mf", 0.05, 1, 4000))
    assert led["n_alarms"] == 0 and led["alarms"] == ""


def test_the_table_has_a_row_per_detector_and_a_cell_per_seed():
    runs = []
    for delta in (float("nan"), 0.01):  # the default watch, ADWIN 0.01
        for (case, ratio), header in detector.CASES.items():
            for seed in (1, 2):
                sea = case == "sea"
                first = (12080 if seed == 1 else None) if sea else None
                runs.append({"case": case, "label_ratio": ratio, "delta": delta, "seed": seed,
                             "first_after_change": first, "n_alarms": 3 * (seed - 1),
                             "model": "dhbm-mf", "rows": drift.N_ROWS if sea else 5000})
    table = detector.table_markdown(pd.DataFrame(runs), "python -m evaluation detector")
    cells = " | ".join(["12,080; none"] * 2 + ["0; 3"] * 6)
    assert f"| default: ADWIN 0.01 and DDM | {cells} |" in table
    assert f"| ADWIN 0.01 | {cells} |" in table
    assert table.index("default:") < table.index("| ADWIN 0.01 |")
    assert "alarms over 5,000 rows" in table
