from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation.__main__ import main
from evaluation.experiments import scarcity
from evaluation.runs import registry
from evaluation.runs.experiment import trial_seeds


def test_bundled_config_loads_and_plans_the_grid():
    config = registry.load_config("label_scarcity")
    s = scarcity.settings_of(config)
    assert s["streams"] == ["led-stationary", "waveform-stationary"]
    assert s["label_ratios"] == [0.1, 0.01, 0.001] and s["label_batch"] == 0
    assert (s["instances"], s["trials"], s["preset"]) == (200_000, 5, "default")
    ours = [m for m in s["models"] if scarcity.group_of(m) == "ours"]
    assert ours == ["dhbm-mf", "dhbm-sap", "dhda", "sben", "hsda", "pl-mlp"]
    assert [m for m in s["models"] if scarcity.group_of(m) == "ablations"] == [
        f"{m}/labeled-only" for m in ours]
    assert {"moa:SLEADE", "moa:NaiveBayes"} <= set(s["models"])
    assert scarcity.columns_of(s) == [(0.1, 0), (0.01, 0), (0.001, 0), (0.01, 1000)]
    trials = scarcity.plan(s)
    bernoulli = [t for t in trials if t.model == "river:naive_bayes.BernoulliNB"]
    assert {t.stream for t in bernoulli} == {"led-stationary"}  # only_on
    seeds = {m: s["trials_for"].get(m, 5) for m in s["models"]}
    seeds["river:naive_bayes.BernoulliNB"] /= 2  # LED only
    assert len(trials) == 2 * 4 * sum(seeds.values())
    assert all(t.label_batch is None and t.instances == 200_000 for t in trials)  # per instance
    assert {t.delay for t in trials if t.model == "moa:SLEADE"} == {0, 1000}
    drifting = scarcity.plan(scarcity.settings_of(config, streams=["led", "waveform"]))
    assert {t.stream for t in drifting if t.model == "river:naive_bayes.BernoulliNB"} == {"led"}
    quick = scarcity.settings_of(config, quick=True)
    assert (quick["instances"], quick["trials"]) == (50_000, 2)
    assert len(quick["models"]) < len(s["models"]) and quick["delayed"] == []


def test_flags_override_and_trials_for():
    config = registry.load_config("label_scarcity") | {"trials_for": {"dhda": 1}, "delayed": []}
    s = scarcity.settings_of(config, trials=3, models=["dhda", "dhbm-mf"],
                             label_ratios=[0.5], streams=["led"])
    trials = scarcity.plan(s, seed=4)
    assert [(t.model, t.trial) for t in trials] == [
        ("dhda", 0), ("dhbm-mf", 0), ("dhbm-mf", 1), ("dhbm-mf", 2)]
    assert {t.seed for t in trials} == {4} and {t.label_ratio for t in trials} == {0.5}


@pytest.mark.parametrize("flags, message", [
    ({"label_ratios": [0.0]}, "Invalid label ratio"),
    ({"models": ["river:naive_bayes.GaussianNB/labeled-only"]}, "applies to this project"),
    ({"models": []}, "needs 'models'"),
    ({"streams": ["nope"]}, "Unknown stream"),
    ({"delayed": [{"label_ratio": 0.1}]}, "Invalid delayed column"),
    ({"delayed": [{"label_ratio": 0.1, "delay": 0}]}, "Invalid delayed column"),
])
def test_invalid_settings(flags, message):
    with pytest.raises(ValueError, match=message):
        scarcity.settings_of(registry.load_config("label_scarcity"), **flags)


class StandIn:
    """Records its constructor arguments: what the registry hands a model class."""

    def __init__(self, **params):
        self.params = params


def test_ablation_passes_learn_unlabeled_false(monkeypatch):
    import river_dhbm

    monkeypatch.setattr(river_dhbm, "StandIn", StandIn, raising=False)
    monkeypatch.setitem(registry.MODELS, "stand-in", ("StandIn", {"estimator": "mf"}))
    plain = registry.make_model("stand-in", 24, 10, seed=3, preset="default")
    ablated = registry.make_model("stand-in/labeled-only", 24, 10, seed=3, preset="default",
                                  params={"beta": 0.5})
    assert "learn_unlabeled" not in plain.params
    assert ablated.params == plain.params | {"learn_unlabeled": False, "beta": 0.5}
    # the ablation is paired with its model: same stream, mask and model seed
    assert trial_seeds("led", "stand-in/labeled-only", 2) == trial_seeds("led", "stand-in", 2)
    assert scarcity.group_of("stand-in/labeled-only") == "ablations"


def test_ablation_of_the_real_models():
    for name in registry.MODELS:
        model = registry.make_model(f"{name}/labeled-only", 24, 10, preset="default")
        assert model.learn_unlabeled is False, name
        assert registry.make_model(name, 24, 10, preset="default").learn_unlabeled is True, name


def synthetic_runs():
    rows = []
    errors = {("a", 0.1): [0.30, 0.32], ("a", 0.01): [0.50, 0.54],
              ("a/labeled-only", 0.1): [0.31, 0.33], ("a/labeled-only", 0.01): [0.60, 0.64],
              ("river:naive_bayes.GaussianNB", 0.1): [0.20, 0.20],
              ("river:naive_bayes.GaussianNB", 0.01): [0.70, 0.80]}
    for (model, ratio), values in errors.items():
        for k, e in enumerate(values):
            rows.append({"stream": "led", "label_ratio": ratio, "delay": 0, "model": model,
                         "group": scarcity.group_of(model), "trial": k, "instances": 4000,
                         "tail_faded_error": e, "final_faded_error": e, "seconds": 1.0,
                         "cpu_seconds": 1.0})
    return pd.DataFrame(rows)


def test_table_is_mean_and_standard_error_with_the_best_in_bold(monkeypatch):
    monkeypatch.setitem(registry.MODELS, "a", ("A", {}))
    runs = synthetic_runs()
    lines = scarcity.table_markdown(runs).splitlines()
    assert lines[0] == "| group | model | led 10 % | led 1 % |"
    # two values d apart: standard deviation d / sqrt(2), standard error d / 2
    assert lines[2] == "| ours | a | 0.310 ± 0.010 | **0.520 ± 0.020** |"
    assert lines[3] == "| ablations | a/labeled-only | 0.320 ± 0.010 | 0.620 ± 0.020 |"
    assert lines[4] == ("| peers | river:naive_bayes.GaussianNB | **0.200 ± 0.000** "
                        "| 0.750 ± 0.050 |")
    assert "over 2 seeds" in lines[-1] and "4,000 instances" in lines[-1]


def test_outputs_round_trip_through_the_csv(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(registry.MODELS, "a", ("A", {}))
    runs = synthetic_runs()
    paths = scarcity.write_outputs(runs, tmp_path / "out", settings={"x": 1})
    assert sorted(p.name for p in paths) == ["scarcity.csv", "scarcity.md", "scarcity.pdf",
                                             "scarcity.png", "settings.json"]
    again = pd.read_csv(tmp_path / "out" / "scarcity.csv")
    pd.testing.assert_frame_equal(again, runs)
    assert main(["scarcity", "--csv", str(tmp_path / "out" / "scarcity.csv"), "--out",
                 str(tmp_path / "redrawn")]) == 0
    assert (tmp_path / "redrawn" / "scarcity.png").exists()
    assert capsys.readouterr().out.startswith(scarcity.table_markdown(runs))


def test_tail_mean_is_the_last_quarter():
    positions = np.arange(1000, 200_001, 1000)
    faded = positions / 200_000
    assert scarcity.tail_mean(positions, faded) == pytest.approx(faded[150:].mean())
    assert len(faded[150:]) == 50


def test_end_to_end_writes_the_three_outputs(tmp_path, capsys):
    out = tmp_path / "scarcity"
    code = main(["scarcity", "--instances", "3000", "--trials", "1", "--streams",
                 "led-stationary", "--label-ratios", "0.1,0.01", "--models",
                 "pl-mlp,river:naive_bayes.BernoulliNB", "--quiet", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert code == 0
    assert "| ours | pl-mlp |" in stdout and "| peers | river:naive_bayes.BernoulliNB |" in stdout
    runs = pd.read_csv(out / "scarcity.csv")
    assert len(runs) == 6 and set(runs.label_ratio) == {0.1, 0.01}  # and 1 % delayed:
    assert runs.delay.tolist() == [0, 0, 0, 0, 1000, 1000]
    assert "| led-stationary 1 %, delay 1,000 |" in stdout
    assert runs.tail_faded_error.between(0, 1).all() and (runs.instances == 3000).all()
    assert (out / "scarcity.md").read_text() in stdout
    assert (out / "scarcity.png").stat().st_size > 0


def test_bad_model_fails_in_one_line(tmp_path, capsys):
    code = main(["scarcity", "--models", "nope", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: Unknown model 'nope'") and err.count("\n") == 1
