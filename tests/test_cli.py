from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from evaluation.__main__ import main
from evaluation.runs import experiment
from evaluation.runs.experiment import Trial, run_trials, summarise, trial_seeds

FAST = "river:dummy.NoChangeClassifier"  # predicts the last label it learnt: fast


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--stream", "nope", "--model", FAST], "Unknown stream 'nope'"),
        (["run", "--stream", "led", "--model", "nope"], "Unknown model 'nope'"),
        (["run", "--stream", "led", "--model", "river:tree.Nope"], "tree.Nope does not exist"),
        (["run", "--stream", "led", "--model", "river:stats.Mean"], "not a classifier"),
        (["run", "--stream", "led", "--model", FAST, "--instances", "0"], "integer, got 0"),
        (["run", "--stream", "led", "--model", FAST, "--trials", "-2"], "positive integer, got -2"),
        (["run", "--stream", "led", "--model", FAST, "--jobs", "0"], "positive integer, got 0"),
        (["run", "--stream", "led", "--model", FAST, "--label-ratio", "2"], "must be in [0, 1]"),
        (["run", "--stream", "led", "--model", FAST, "--set", "nope=1"], "Invalid parameters"),
        (["run", "--config", "nope"], "No config 'nope'"),
        (["compare", "--models", f"{FAST},nope"], "Unknown model 'nope'"),
        (["reproduce", "--bogus"], "unrecognized arguments: --bogus"),
        (["reproduce", "--preset", "best"], "invalid choice: 'best'"),
        (["plot", "--csv", "missing.csv", "--out", "x"], "cannot read 'missing.csv'"),
        ([], "required: COMMAND"),
    ],
)
def test_bad_arguments_fail_in_one_line(capsys, tmp_path, argv, message):
    argv = [a if a != "x" else str(tmp_path / "x") for a in argv]
    code, out, err = run_cli(capsys, *argv, *(["--out", str(tmp_path / "out")] if argv and
                                               argv[0] in ("run", "compare", "reproduce") else []))
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_unwritable_output_directory(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, _, err = run_cli(capsys, "run", "--stream", "led", "--model", FAST, "--instances",
                           "100", "--quiet", "--out", str(blocker / "out"))
    assert code == 2 and err.startswith("error: Cannot write to output directory")
    assert err.count("\n") == 1


def test_subprocess_exit_code_and_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "evaluation", "run", "--stream", "led", "--model", "nope"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: Unknown model 'nope'. Known models: dhbm-mf, dhbm-sap, dhda, pl-mlp, sben, hsda "
        "(each also as <model>/labeled-only), river:<module>.<Class> or moa:<learner>"
    ]


def test_run_writes_every_output(capsys, tmp_path):
    out = tmp_path / "run"
    code, stdout, _ = run_cli(capsys, "run", "--stream", "led", "--model", FAST, "--instances",
                              "2500", "--trials", "2", "--quiet", "--out", str(out))
    assert code == 0
    assert "| led | river:dummy.NoChangeClassifier | 2 | 2,500 |" in stdout
    names = sorted(p.name for p in out.iterdir())
    assert names == ["curves.csv", "prequential_error.pdf", "prequential_error.png",
                     "settings.json", "summary.csv", "summary.md", "trials.csv"]
    per_trial = pd.read_csv(out / "trials.csv")
    assert per_trial.trial.tolist() == [0, 1] and (per_trial.instances_per_second > 0).all()
    assert per_trial.stream_seed.nunique() == 2
    curves = pd.read_csv(out / "curves.csv")
    assert list(curves.columns) == ["stream", "model", "trial", "position", "faded_error", "error"]
    assert curves.position.tolist() == [1000, 2000, 2500] * 2
    assert curves.trial.tolist() == [0] * 3 + [1] * 3
    assert curves.faded_error.between(0, 1).all()
    summary = pd.read_csv(out / "summary.csv")
    assert summary.trials.tolist() == [2] and summary.instances.tolist() == [2500]
    assert json.loads((out / "settings.json").read_text())["instances"] == 2500


def test_config_quick_and_flags(capsys, tmp_path):
    out = tmp_path / "cmp"
    code, _, _ = run_cli(capsys, "compare", "--quick", "--models", FAST, "--streams", "led",
                         "--instances", "500", "--step", "250", "--quiet", "--out", str(out))
    assert code == 0
    settings = json.loads((out / "settings.json").read_text())["compare"]
    assert settings["trials"] == 1  # from [quick]
    assert settings["instances"] == 500  # the flag beats [quick]
    assert settings["models"] == [FAST] and settings["streams"] == ["led"]
    assert (out / "compare.png").exists()


def small_trials():
    return [
        Trial("led", FAST, k, instances=1200, step=400) for k in range(2)
    ] + [Trial("waveform", "river:linear_model.LogisticRegression", 0, instances=600, step=300)]


def curves_of(results):
    return experiment.curves_frame(results)


def test_results_do_not_depend_on_jobs():
    trials = small_trials()
    one = curves_of(run_trials(trials, jobs=1, quiet=True))
    two = curves_of(run_trials(trials, jobs=2, quiet=True))
    pd.testing.assert_frame_equal(one, two)
    # trials differ from each other (seeds are per trial)
    a, b = (one[(one.stream == "led") & (one.trial == k)].faded_error.to_numpy() for k in (0, 1))
    assert not np.array_equal(a, b)


def test_dask_local_cluster_gives_the_same_results():
    distributed = pytest.importorskip("distributed")
    trials = small_trials()[:2]
    local = curves_of(run_trials(trials, quiet=True))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            remote = curves_of(run_trials(trials, scheduler=client, quiet=True))
    pd.testing.assert_frame_equal(local, remote)


def test_trial_seeds():
    s = trial_seeds("led", "dhbm-mf", 3)
    assert s == trial_seeds("led", "dhbm-mf", 3)
    assert all(0 <= v < 2**31 for v in s)
    other_model = trial_seeds("led", "dhda", 3)
    assert other_model[:2] == s[:2]  # same stream and mask for every model of a trial
    assert other_model[2] != s[2]
    assert trial_seeds("led", "dhbm-mf", 4)[:2] != s[:2]
    assert trial_seeds("led", "dhbm-mf", 3, seed=1) != s


def test_summary_is_mean_and_standard_error_over_trials():
    curves = pd.DataFrame({
        "stream": ["s"] * 4, "model": ["m"] * 4, "trial": [0, 0, 1, 1],
        "position": [10, 20, 10, 20], "faded_error": [0.4, 0.2, 0.6, 0.3],
        "error": [0.4, 0.3, 0.6, 0.5],
    })
    row = summarise(curves).iloc[0]
    assert row.trials == 2 and row.instances == 20
    assert row.mean_faded_error == pytest.approx((0.3 + 0.45) / 2)
    assert row.final_faded_error == pytest.approx(0.25)
    assert row.final_faded_error_se == pytest.approx(np.std([0.2, 0.3], ddof=1) / np.sqrt(2))
    assert row.tail_faded_error == pytest.approx(0.25)  # positions past 3/4 of the run: 20
    table = experiment.summary_markdown(summarise(curves))
    assert "| s | m | 2 | 20 | 37.50 ± 7.50 | 25.00 ± 5.00 | 25.00 ± 5.00 |" in table


def synthetic_curves():
    rows = []
    for stream in ("led", "waveform"):
        for model in ("dhbm-mf", "pl-mlp"):
            for trial in range(2):
                for pos in range(1000, 80_001, 1000):
                    e = 0.2 + 0.5 * np.exp(-pos / 10_000) + 0.01 * trial
                    rows.append((stream, model, trial, pos, e, e + 0.05))
    return pd.DataFrame(rows, columns=experiment.CURVE_COLUMNS)


def test_plot_from_csv_alone(capsys, tmp_path):
    csv = tmp_path / "curves.csv"
    synthetic_curves().to_csv(csv, index=False)
    code, out, _ = run_cli(capsys, "plot", "--csv", str(csv), "--out", str(tmp_path / "fig"),
                           "--name", "figure3")
    assert code == 0
    for ext in ("png", "pdf"):
        path = tmp_path / "fig" / f"figure3.{ext}"
        assert path.stat().st_size > 1000 and str(path) in out
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"x": [1]}).to_csv(bad, index=False)
    code, _, err = run_cli(capsys, "plot", "--csv", str(bad), "--out", str(tmp_path / "fig2"))
    assert code == 2 and "lacks the columns" in err


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    import evaluation.runs.plots

    def broken(curves):
        raise RuntimeError("disk full")

    results = run_trials(small_trials()[:1], quiet=True)
    monkeypatch.setattr(evaluation.runs.plots, "draw_figure", broken)
    with pytest.raises(RuntimeError):
        experiment.write_outputs(results, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_reproduce_runs_the_paper_configs(capsys, tmp_path):
    out = tmp_path / "fig3"
    code, stdout, _ = run_cli(capsys, "reproduce", "--quick", "--models", "pl-mlp",
                              "--instances", "2000", "--quiet", "--out", str(out))
    assert code == 0
    curves = pd.read_csv(out / "curves.csv")
    assert curves.stream.unique().tolist() == ["waveform", "led"]  # figure 3: Waveform on top
    assert curves.trial.unique().tolist() == [0]
    settings = json.loads((out / "settings.json").read_text())
    assert settings["fig3_led"]["params"]["pl-mlp"]["hidden_sizes"] == [24, 24, 24, 24]
    assert (out / "figure3.pdf").exists()


def test_registry_builds_the_compare_models():
    from river import multiclass

    from evaluation.runs import registry

    config = registry.load_config("compare")
    river_models = [m for m in config["models"] if m.startswith("river:")]
    assert len(river_models) == 5
    for name in river_models:
        model = registry.make_model(name, 24, 10, seed=1)
        assert model._multiclass
    lr = registry.make_model("river:linear_model.LogisticRegression", 24, 10)
    assert isinstance(lr, multiclass.OneVsRestClassifier)  # binary in River: one-vs-rest
    arf = registry.make_model("river:forest.ARFClassifier", 24, 10, seed=7)
    assert arf.seed == 7
    assert set(registry.load_config("fig3_led")["models"]) == {"pl-mlp", "dhbm-mf", "dhbm-sap",
                                                               "dhda"}


def test_cli_scheduler_address(capsys, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        code, stdout, _ = run_cli(capsys, "run", "--stream", "led", "--model", FAST,
                                  "--instances", "1000", "--trials", "2", "--quiet",
                                  "--scheduler", cluster.scheduler_address)
    assert code == 0 and "| led | river:dummy.NoChangeClassifier | 2 | 1,000 |" in stdout


def test_mnist_subcommand_is_wired(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("RIVER_DHBM_MNIST", raising=False)
    code, _, err = run_cli(capsys, "mnist", "--data", str(tmp_path / "none"),
                           "--out", str(tmp_path / "o"))
    assert code == 2 and err.startswith("error: MNIST not found") and err.count("\n") == 1


def test_preset_picks_paper_or_default_settings():
    from evaluation.runs import registry
    from river_dhbm import DHBM

    paper = registry.make_model("dhbm-mf", 24, 10, seed=1, preset="paper")
    default = registry.make_model("dhbm-mf", 24, 10, seed=1, preset="default")
    assert paper.learning_rate == DHBM._PAPER_SETTINGS["learning_rate"] == 0.051
    assert default.learning_rate == DHBM().learning_rate
    assert paper.hidden_sizes == (24,) * 4 and default.hidden_sizes == DHBM().hidden_sizes
    with pytest.raises(ValueError, match="Unknown preset 'best'"):
        registry.make_model("dhbm-mf", 24, 10, preset="best")
    assert registry.load_config("fig3_led")["preset"] == "paper"
    assert registry.load_config("compare")["preset"] == "default"


def test_summary_keeps_the_order_of_the_run():
    curves = pd.DataFrame({
        "stream": ["s"] * 4, "model": ["z", "z", "a", "a"], "trial": [0] * 4,
        "position": [20, 30, 10, 20], "faded_error": [0.1] * 4, "error": [0.1] * 4,
    })
    assert list(summarise(curves).model) == ["z", "a"]


def _subcommand_parsers():
    import argparse

    from evaluation import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return parser, sub.choices


def test_every_option_has_help_that_names_its_default():
    import argparse

    parser, commands = _subcommand_parsers()
    assert "docs/glossary.md" in parser.format_help()
    for name, p in commands.items():
        text = " ".join(p.format_help().split())
        assert "docs/glossary.md" in text, name  # the epilog: where the words are explained
        for action in p._actions:
            if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
                continue
            assert action.help, (name, action.option_strings)
            if action.option_strings and action.nargs != 0:  # not a flag that is off by default
                shown = p._get_formatter()._get_help_string(action)
                # the default itself, not the word: "the class defaults" names none
                assert ("(default" in shown or "default:" in shown or "(config:" in shown
                        or action.required and "(required" in shown), (
                    name, action.option_strings)


def test_the_mnist_table_command_refuses_in_one_line(capsys):
    """The docs' table command is a module of its own: its usage errors are one line too."""
    from evaluation.offline.mnist.table import main as table_main

    with pytest.raises(SystemExit) as stop:
        table_main(["--out", "anywhere"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: the following arguments are required: --row\n"


def test_quick_help_says_what_the_quick_version_runs():
    """`--quick` applies each config's [quick] table: its help quotes those tables, not a
    figure typed once for `reproduce` and shared with `compare`."""
    from evaluation.runs import registry

    _, commands = _subcommand_parsers()
    for name, config in (("reproduce", "fig3_led"), ("compare", "compare")):
        quick = registry.load_config(config)["quick"]
        shown = " ".join(commands[name].format_help().split())
        assert f"({quick['trials']} trial x {quick['instances']:,} instances)" in shown, name


def test_seeds_mean_the_same_in_every_command():
    """`--seeds N` runs N repetitions, each seeded from `--seed` (default 0), everywhere."""
    from evaluation import cli

    for name in ("reproduce", "run", "compare", "scarcity", "suite", "tracks", "mnist"):
        args = cli.build_parser([name]).parse_args([name, "--seeds", "3"])
        assert (getattr(args, "trials", None) or args.seeds) == 3, name
        assert args.seed == 0, name


def test_suite_seeds_count_from_seed(tmp_path):
    from evaluation import cli

    out = tmp_path / "suite"
    argv = ["suite", "--streams", "led", "--models", "GaussianNB", "--label-ratios", "1",
            "--seeds", "2", "--seed", "5", "--instances", "200", "--out", str(out), "--quiet"]
    assert cli.main(argv) == 0
    assert sorted(pd.read_csv(out / "suite.csv").seed) == [5, 6]


@pytest.mark.parametrize("command", [
    ["suite", "--streams", "led", "--models", "GaussianNB", "--label-ratios", "1", "--seeds", "1"],
    ["run", "--stream", "led", "--model", FAST, "--trials", "1"],
])
def test_results_record_a_command_line_a_shell_runs_again(tmp_path, command):
    """The recorded command is the one typed, quoted for a shell: a path with a space (or a
    model list with `;`) comes back as the same arguments."""
    import shlex

    from evaluation import cli

    out = tmp_path / "my results"
    argv = [*command, "--instances", "200", "--out", str(out), "--quiet"]
    assert cli.main(argv) == 0
    recorded = json.loads((out / "settings.json").read_text())["command_line"]
    assert shlex.split(recorded) == ["python", "-m", "evaluation", *argv]
