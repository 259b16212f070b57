"""`python -m evaluation drift`: the scenarios change where they say, the windows score what they
say, and a run goes through River's dict API for our models and River's alike."""

from __future__ import annotations

import argparse
import itertools

import numpy as np
import pytest

from evaluation.experiments import drift


@pytest.mark.parametrize("name", list(drift.SCENARIOS))
def test_a_scenario_takes_its_rows_from_the_second_generator_from_the_change_on(name):
    rows = list(drift.scenario(name, 3, n_rows=60, change_at=25))
    before, after = drift.SCENARIOS[name][1](3)
    assert len(rows) == 60
    assert rows[:25] == list(itertools.islice(before, 25))
    assert rows[25:] == list(itertools.islice(after, 35))


def test_the_windows_score_before_just_after_recovered_and_end():
    correct = np.r_[np.ones(100), np.zeros(50), np.ones(50), np.zeros(50), np.ones(150)]
    w = drift.windows(correct, change_at=100, window=50)
    assert w == {"before": 1.0, "just_after": 0.0, "recovered": 1.0, "end": 1.0,
                 "whole": correct.mean()}


def _args(**kw):
    base = dict(scenarios=None, models=None, label_ratios=[1.0, 0.1, 0.01], seeds=2, seed=1,
                rows=drift.N_ROWS, change_at=drift.CHANGE_AT, quick=False, jobs=1, out=None,
                quiet=True)
    return argparse.Namespace(**(base | kw))


def test_the_plan_checks_every_name_in_one_line():
    for bad, message in [({"scenarios": ["nope"]}, "Unknown scenario 'nope'"),
                         ({"models": ["moa:NaiveBayes"]}, "Invalid model 'moa:NaiveBayes'"),
                         ({"label_ratios": [0.0]}, r"Invalid label ratio \(0.0\)"),
                         ({"rows": 30_000, "change_at": 26_000},
                          r"Invalid --change-at \(26000\) for --rows 30000\. Must leave")]:
        with pytest.raises(ValueError, match=message) as e:
            drift.plan(_args(**bad))
        assert "\n" not in str(e.value)
    runs = drift.plan(_args(scenarios=["sea"], models=["dhbm-mf"]))
    assert [(r.label_ratio, r.seed) for r in runs] == [(1.0, 1), (1.0, 2), (0.1, 1), (0.1, 2),
                                                       (0.01, 1), (0.01, 2)]
    longer = drift.plan(_args(scenarios=["sea"], models=["dhbm-mf"], rows=30_000))
    assert {(r.n_rows, r.change_at, r.window) for r in longer} == {(30_000, 10_000, 2_500)}


@pytest.mark.parametrize("model", ["dhbm-mf", "river:tree.HoeffdingTreeClassifier"])
def test_a_run_learns_the_rule_and_ours_relearns_it_after_the_change(model):
    run = drift.Run("stagger", model, 1.0, 1, n_rows=1200, change_at=600, window=200)
    row = drift.run_one(run)
    assert row["before"] > 0.85  # STAGGER's rules: chance is about 0.5
    assert len(row["curve"].split()) == (1200 - 500) // 100 + 1
    if model == "dhbm-mf":  # a Hoeffding tree does not adapt: 0.315 at the end
        assert row["just_after"] < row["end"] and row["end"] > 0.85
        assert row["drift_rows"] and 600 < int(row["drift_rows"].split()[0]) <= 800
