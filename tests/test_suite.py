"""The development suite (`python -m evaluation suite`): River's dict API row by row, every row
scored, labeled rows learnt with their label, unlabeled ones only by the models that can."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from evaluation.cli import main
from evaluation.experiments import suite
from evaluation.runs import moa_peers
from optional import needs_moa


class Recorder:
    """A learner that predicts 0 and records what it is taught."""

    def __init__(self):
        self.calls = []

    def predict_one(self, x):
        return 0

    def learn_one(self, x, y=None):
        self.calls.append(y)


def test_every_row_is_scored_and_unlabeled_rows_reach_only_the_models_that_learn_them():
    rows = [({"a": float(i)}, i % 2) for i in range(1000)]
    ours, peer = Recorder(), Recorder()
    assert suite.run_one(rows, ours, True, 0.1, seed=3) == 0.5  # all 1,000 rows scored
    suite.run_one(rows, peer, False, 0.1, seed=3)
    labeled = [y for y in ours.calls if y is not None]
    assert len(ours.calls) == 1000 and 60 < len(labeled) < 140
    assert peer.calls == labeled  # the same mask; the peer sees the labeled rows only


def test_the_same_seed_gives_every_model_the_same_rows():
    a = suite.load_stream("sea", 4, instances=50)
    assert a == suite.load_stream("sea", 4, instances=50)
    assert a != suite.load_stream("sea", 5, instances=50)
    digits = suite.load_stream("digits", 1)
    assert len(digits) == 1797 and len(digits[0][0]) == 64


def test_river_peers_are_reproducible_from_the_seed():
    # River's KNN searches a graph its engine draws from a generator of its own, unseeded by
    # default: its accuracy on ImageSegments moved by up to 0.006 from one run to the next
    from river import datasets

    rows = list(datasets.ImageSegments())

    def predictions(seed):
        learner, _ = suite.make_learner("KNN", seed)
        out = []
        for x, y in rows:
            out.append(learner.predict_one(x))
            learner.learn_one(x, y)
        return out

    assert predictions(1) == predictions(1)
    knn = suite.make_learner("KNN", 7)[0]["KNNClassifier"]
    assert knn.engine.seed == 7 and knn._nn.seed == 7


def test_river_datasets_by_name_and_model_settings_after_a_colon():
    rows = suite.load_stream("river:datasets.synth.Hyperplane", 2, instances=30)
    assert len(rows) == 30 and len(rows[0][0]) == 10
    learner, unlabeled = suite.make_learner("dhbm-mf:steps=2;activation=sigmoid", seed=1)
    model = learner[-1]  # behind its MinMaxScaler
    assert unlabeled and (model.steps, model.activation, model.seed) == (2, "sigmoid", 1)
    assert suite.model_names("dhbm-mf:hidden_sizes=[8,8];steps=2,KNN") == [
        "dhbm-mf:hidden_sizes=[8,8];steps=2", "KNN"]
    assert suite.make_learner("dhbm-mf:hidden_sizes=[8,8]", seed=1)[0][-1].hidden_sizes == (8, 8)
    learner, unlabeled = suite.make_learner("dhda/labeled-only", seed=1)
    assert learner[-1].learn_unlabeled is False
    assert suite.make_learner("GaussianNB", seed=1)[1] is False


def test_our_models_sit_behind_the_scaler_their_settings_name():
    from river import preprocessing

    default = suite.make_learner("dhbm-mf", seed=1)[0]
    standard = suite.make_learner("dhbm-mf:scaler=standard;steps=2", seed=1)[0]
    assert isinstance(default[0], preprocessing.MinMaxScaler)
    assert isinstance(standard[0], preprocessing.StandardScaler) and standard[-1].steps == 2
    assert "scaler" not in standard[-1]._get_params()  # a setting of the pipeline, not the model
    with pytest.raises(ValueError, match="Invalid scaler"):
        suite.make_learner("dhbm-mf:scaler=robust", seed=1)


def test_the_command_writes_the_table_the_csv_and_the_figure(tmp_path, capsys):
    out = tmp_path / "suite"
    code = main(["suite", "--streams", "sea,bananas", "--models", "dhbm-mf,GaussianNB",
                 "--label-ratios", "1,0.5", "--seeds", "2", "--instances", "300",
                 "--quiet", "--out", str(out)])
    assert code == 0
    runs = pd.read_csv(out / "suite.csv")
    assert len(runs) == 2 * 2 * 2 * 2 and runs["accuracy"].between(0, 1).all()
    assert set(runs["instances"]) == {300}
    table = (out / "suite.md").read_text()
    assert "| dhbm-mf |" in table and "sea 0.5" in table
    assert capsys.readouterr().out.startswith("| model |")
    assert (out / "suite.png").stat().st_size > 1000


@pytest.mark.parametrize("argv, message", [
    (["--streams", "nope"], "Unknown stream 'nope'"),
    (["--streams", "mnist"], "needs --mnist"),
    (["--models", "dhbm-nope"], "dhbm-nope"),
    (["--models", "dhbm-mf:scaler=robust"], "Invalid scaler ('robust')"),
    (["--label-ratios", "0"], "Invalid label ratio"),
])
def test_bad_settings_end_in_one_line(argv, message, capsys):
    assert main(["suite", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_bernoulli_nb_runs_on_binary_features_and_is_na_elsewhere(tmp_path, capsys):
    out = tmp_path / "suite"
    code = main(["suite", "--streams", "led,bananas", "--models", "BernoulliNB,GaussianNB",
                 "--label-ratios", "1", "--seeds", "1", "--instances", "200", "--quiet",
                 "--out", str(out)])
    assert code == 0
    runs = pd.read_csv(out / "suite.csv", keep_default_na=False, na_values={"accuracy": [""]})
    nb = runs[runs.model == "BernoulliNB"].set_index("stream")
    assert 0.2 < nb.accuracy["led"] <= 1 and nb.skipped["led"] == ""  # LED's 24 bits
    assert math.isnan(nb.accuracy["bananas"]) and "{0, 1}" in nb.skipped["bananas"]
    assert runs[runs.model == "GaussianNB"].accuracy.notna().all()
    table = capsys.readouterr().out
    assert "| BernoulliNB | **" in table and "| n/a |" in table
    assert "n/a: BernoulliNB takes features in {0, 1} only: bananas" in table
    assert (out / "suite.png").stat().st_size > 1000  # the n/a cell has no point


def test_the_scarcest_ratio_runs_on_streams_of_100_000_rows_only(tmp_path, capsys,
                                                                 monkeypatch):
    assert suite.default_ratios(99_999) == [1.0, 0.1, 0.01]
    assert suite.default_ratios(100_000) == [1.0, 0.1, 0.01, 0.001]
    rows = suite.load_stream("sea", 1, instances=300)
    assert suite.skip_reason("GaussianNB", 0.001, rows).startswith("label ratio 0.001")
    assert suite.skip_reason("GaussianNB", 0.01, rows) == ""
    # the rule at a small scale: 1,300 rows of SEA reach it, Phishing's 1,250 do not
    monkeypatch.setattr(suite, "SCARCE_MIN_ROWS", 1300)
    out = tmp_path / "suite"
    assert main(["suite", "--streams", "sea,phishing", "--models", "GaussianNB", "--seeds", "1",
                 "--instances", "1300", "--quiet", "--out", str(out)]) == 0
    runs = pd.read_csv(out / "suite.csv").set_index(["stream", "label_ratio"])
    assert sorted(set(runs.index.get_level_values("label_ratio"))) == [0.001, 0.01, 0.1, 1.0]
    assert runs.accuracy.drop(("phishing", 0.001)).notna().all()
    assert math.isnan(runs.accuracy["phishing", 0.001])
    assert "phishing (1,250 rows)" in capsys.readouterr().out


@needs_moa
def test_moa_peers_run_through_the_dict_api(tmp_path):
    rows = suite.load_stream("bananas", 1, instances=200)
    nb, unlabeled = suite.make_learner("moa:NaiveBayes", seed=1, rows=rows)
    assert not unlabeled and nb.classes == [False, True]  # River's bools, MOA's indices
    assert nb.predict_one(rows[0][0]) is False  # no votes yet: the first class
    assert suite.make_learner("moa:SLEADE", seed=1, rows=rows)[1]  # it learns unlabeled rows
    out = tmp_path / "suite"
    assert main(["suite", "--streams", "bananas", "--models", "moa:NaiveBayes,moa:SLEADE",
                 "--label-ratios", "1,0.5", "--seeds", "1", "--instances", "200", "--quiet",
                 "--out", str(out)]) == 0
    runs = pd.read_csv(out / "suite.csv")
    assert len(runs) == 4 and runs.accuracy.between(0.4, 1).all()


def test_without_capymoa_a_moa_peer_ends_in_one_line_with_the_install_hint(monkeypatch,
                                                                          capsys):
    monkeypatch.setattr(moa_peers, "available", lambda: "ModuleNotFoundError: no capymoa")
    assert main(["suite", "--quick", "--moa"]) == 2  # --moa adds MOA's three
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "moa:NaiveBayes, moa:HoeffdingTree, moa:SLEADE need capymoa" in err
    assert moa_peers.INSTALL_HINT in err


def test_worth_table_pairs_each_model_with_its_ablation_seed_by_seed():
    import pandas as pd

    from evaluation.experiments.suite_report import worth_markdown

    rows = []
    for seed, (ours, alone, ablation) in enumerate([(0.70, 0.60, 0.65), (0.80, 0.82, 0.78)]):
        for model, accuracy, trust in (("dhbm-mf", ours, 0.25),
                                       ("dhbm-mf:safe_unlabeled=false", alone, 1.0),
                                       ("dhbm-mf/labeled-only", ablation, float("nan")),
                                       ("KNN", 0.5, float("nan"))):
            rows.append(dict(stream="led", label_ratio=0.1, model=model, seed=seed,
                             accuracy=accuracy, unlabeled_trust=trust))
    lines = worth_markdown(pd.DataFrame(rows)).splitlines()
    assert lines[2] == "| dhbm-mf | 0.1 | +0.035 (+0.020, +0.050), trust 0.25 |"
    assert lines[3] == ("| dhbm-mf:safe_unlabeled=false | 0.1 | -0.005 (-0.050, +0.040), "
                        "trust 1.00 |")
    assert len(lines) == 4  # neither the ablation nor River's KNN gets a row
    assert worth_markdown(pd.DataFrame([r for r in rows if "labeled-only" not in r["model"]])) == ""


def test_variants_table_gives_what_each_setting_is_worth():
    import pandas as pd

    from evaluation.experiments.suite_report import variants_markdown

    rows = []
    for stream, seed, default, steps1, ablation in [("led", 0, 0.70, 0.60, 0.69),
                                                    ("led", 1, 0.72, 0.64, 0.70),
                                                    ("sea", 0, 0.80, 0.81, 0.79),
                                                    ("sea", 1, 0.80, 0.79, 0.80)]:
        for model, accuracy in (("dhbm-mf", default), ("dhbm-mf:steps=1", steps1),
                                ("dhbm-mf/labeled-only", ablation), ("KNN", 0.5)):
            rows.append(dict(stream=stream, label_ratio=0.1, model=model, seed=seed,
                             accuracy=accuracy))
    lines = variants_markdown(pd.DataFrame(rows)).splitlines()
    # steps=1: led gains +0.09, sea +0.00 -> mean +0.045, sea is where the variant does best
    assert lines[2] == "| `dhbm-mf:steps=1` | +0.045 (sea +0.000) |"
    assert lines[3] == "| `dhbm-mf/labeled-only` | +0.010 (sea +0.005) |"
    assert len(lines) == 4  # River's KNN is nobody's variant
    assert variants_markdown(pd.DataFrame([r for r in rows if r["model"] != "dhbm-mf"])) == ""


def test_experts_table_sets_each_model_beside_its_best_expert():
    import pandas as pd

    from evaluation.experiments.suite_report import experts_markdown

    nan = float("nan")
    rows = []
    for seed, (ours, network, twin, linear) in enumerate([(0.70, 0.72, 0.60, 0.50),
                                                          (0.80, 0.76, 0.79, 0.60)]):
        rows.append(dict(stream="led", label_ratio=0.01, model="dhbm-mf", seed=seed,
                         accuracy=ours, expert_network=network, expert_twin=twin,
                         expert_linear=linear))
        rows.append(dict(stream="led", label_ratio=0.01, model="KNN", seed=seed, accuracy=0.5,
                         expert_network=nan, expert_twin=nan, expert_linear=nan))
    lines = experts_markdown(pd.DataFrame(rows)).splitlines()
    # the network's mean (0.74) beats the twin's (0.695): 0.75 - 0.74
    assert lines[2] == "| dhbm-mf | 0.01 | +0.010 (network 0.740) |"
    assert len(lines) == 3  # River's KNN has no experts
    assert experts_markdown(pd.DataFrame([r for r in rows if r["model"] == "KNN"])) == ""


def test_each_expert_is_scored_beside_the_model(tmp_path):
    rows = suite.load_stream("sea", seed=1, instances=600)
    learner, unlabeled = suite.make_learner("dhbm-mf", seed=1)
    experts: dict = {}
    accuracy = suite.run_one(rows, learner, unlabeled, 0.1, seed=1, experts=experts)
    assert set(experts) == {"network", "twin", "linear"}
    # the same run without the experts' columns: the same model, the same accuracy
    again, _ = suite.make_learner("dhbm-mf", seed=1)
    assert suite.run_one(rows, again, unlabeled, 0.1, seed=1) == accuracy
    # each expert is scored on its own predictions: they differ from the mixture's
    assert len({round(v, 6) for v in experts.values()} | {round(accuracy, 6)}) > 1


def test_river_datasets_take_settings_in_brackets():
    from river.datasets import synth

    rows = suite.load_stream("river:datasets.synth.SEA(variant=2;noise=0.05)", seed=4,
                             instances=50)
    assert rows == list(synth.SEA(variant=2, noise=0.05, seed=4).take(50))
    assert rows != list(synth.SEA(seed=4).take(50))
    with pytest.raises(ValueError, match="no setting 'colour'"):
        suite.load_stream("river:datasets.synth.SEA(colour=2)", seed=4, instances=5)


def test_quarters_table_and_the_prior_peer(tmp_path, capsys):
    assert main(["suite", "--streams", "seasons", "--label-ratios", "0.1", "--seeds", "1",
                 "--instances", "400", "--models", "Prior,GaussianNB", "--quarters",
                 "--quiet", "--out", str(tmp_path)]) == 0
    runs = pd.read_csv(tmp_path / "suite.csv")
    quarters = runs[[f"quarter_{q}" for q in range(1, 5)]].to_numpy()
    assert (quarters.mean(axis=1) == pytest.approx(runs["accuracy"].to_numpy()))  # 100 rows each
    out = capsys.readouterr().out
    assert "**seasons**" in out and "| Prior | 0.1 |" in out
