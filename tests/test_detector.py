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
    assert len(runs) == 2 * 3 * 2
    assert {(r.case, r.rows) for r in runs} == {
        ("sea", drift.N_ROWS), ("led-stationary", 5000), ("waveform-stationary", 5000)}
    assert {r.rows for r in detector.plan(_args(quick=True)) if r.case != "sea"} == {
        detector.QUICK_ROWS}


def test_the_detector_finds_seas_change_and_stays_quiet_on_a_stationary_stream():
    sea = detector.run_one(detector.Run("sea", "dhbm-mf", 0.05, 1, drift.N_ROWS))
    # the alarm comes after the change, within a window of it (10,600 when written)
    assert drift.CHANGE_AT <= sea["first_after_change"] <= drift.CHANGE_AT + drift.WINDOW
    # the control: the same detector on a stream that never changes does not fire
    led = detector.run_one(detector.Run("led-stationary", "dhbm-mf", 0.05, 1, 4000))
    assert led["n_alarms"] == 0 and led["alarms"] == ""


def test_the_table_has_a_row_per_delta_and_a_cell_per_seed():
    runs = [
        {"case": "sea", "delta": 0.01, "seed": 1, "first_after_change": 12080, "n_alarms": 1},
        {"case": "sea", "delta": 0.01, "seed": 2, "first_after_change": None, "n_alarms": 0},
        {"case": "led-stationary", "delta": 0.01, "seed": 1, "n_alarms": 0},
        {"case": "led-stationary", "delta": 0.01, "seed": 2, "n_alarms": 3},
        {"case": "waveform-stationary", "delta": 0.01, "seed": 1, "n_alarms": 0},
        {"case": "waveform-stationary", "delta": 0.01, "seed": 2, "n_alarms": 1},
    ]
    frame = pd.DataFrame([r | {"model": "dhbm-mf",
                               "rows": drift.N_ROWS if r["case"] == "sea" else 5000}
                          for r in runs])
    table = detector.table_markdown(frame, "python -m evaluation detector")
    assert "| 0.01 | 12,080; none | 0; 3 | 0; 1 |" in table
    assert "alarms over 5,000 rows" in table and "10 % labels" in table
