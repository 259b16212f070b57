"""The development suite (`python -m evaluation suite`): River's dict API row by row, every row
scored, labeled rows learnt with their label, unlabeled ones only by the models that can."""

from __future__ import annotations

import pandas as pd
import pytest

from evaluation import suite
from evaluation.cli import main


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
    (["--label-ratios", "0"], "Invalid label ratio"),
])
def test_bad_settings_end_in_one_line(argv, message, capsys):
    assert main(["suite", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
