"""`python -m evaluation tracks`: River's benchmark tracks, fully labeled and semi-supervised."""

from __future__ import annotations

import functools

import pandas as pd
import pytest
from river import base, datasets, dummy
from river.datasets.base import RemoteDataset

import streams
from evaluation.__main__ import main
from evaluation.experiments import tracks
from evaluation.runs import registry

BUNDLED = {"binary": ["Bananas", "Phishing"], "multiclass": ["ImageSegments"]}
REMOTE = ["Elec2", "SMTP", "Insects", "Keystroke"]


@pytest.fixture(autouse=True)
def no_downloaded_dataset(monkeypatch):
    """Every dataset River must download is absent, whatever this machine holds."""
    monkeypatch.setattr(RemoteDataset, "is_downloaded", property(lambda self: False))


def run_cli(capsys, *argv):
    code = main(["tracks", "--quiet", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_quick_writes_every_model_and_bundled_dataset(tmp_path, capsys):
    code, out, _ = run_cli(capsys, "--quick", "--instances", "300", "--out", str(tmp_path))
    assert code == 0
    frame = pd.read_csv(tmp_path / "tracks.csv")
    models = [*registry.MODELS, *tracks.RIVER_LEARNERS]
    for track, names in BUNDLED.items():
        t = frame[frame.track == track]
        assert set(t.dataset) == set(names)
        for dataset in names:
            d = t[t.dataset == dataset]
            assert set(d.model) == set(models)
            assert sorted(set(d.step)) == list(range(30, 301, 30))  # River's 10 checkpoints
    assert {"track", "dataset", "model", "label_ratio", "seed", "step", "accuracy", "time_s",
            "memory_mb"} <= set(frame.columns)
    assert frame[frame.track == "binary"].f1.notna().all()
    assert frame[frame.track == "multiclass"].f1.isna().all()
    assert frame.accuracy.between(0, 1).all() and (frame.memory_mb > 0).all()
    assert (frame.label_ratio == 1.0).all() and set(frame.seed) == {0}
    table = (tmp_path / "tracks.md").read_text()
    assert table in out  # printed and written
    assert "## Binary classification, 100 % labels" in table
    assert "| Phishing | naive_bayes.GaussianNB |" in table and "| ImageSegments | dhda |" in table
    for track in BUNDLED:
        assert (tmp_path / f"tracks-{track}.png").stat().st_size > 0


def test_a_dataset_to_download_is_skipped_with_one_line(tmp_path, capsys, monkeypatch):
    def no_network(self, *args, **kwargs):
        raise AssertionError("nothing is downloaded without --download")

    monkeypatch.setattr(RemoteDataset, "download", no_network)
    code, _, err = run_cli(capsys, "--models", "river:naive_bayes.GaussianNB",
                           "--instances", "100", "--out", str(tmp_path))
    assert code == 0
    lines = err.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"skipped {name}" for name in REMOTE]
    assert all("--download" in line and "MB" in line for line in lines)
    assert set(pd.read_csv(tmp_path / "tracks.csv").dataset) == {"Bananas", "Phishing",
                                                                   "ImageSegments"}


def test_a_failed_download_skips_the_dataset(tmp_path, capsys, monkeypatch):
    def offline(self, *args, **kwargs):
        raise OSError("no network")

    monkeypatch.setattr(RemoteDataset, "download", offline)
    code, _, err = run_cli(capsys, "--tracks", "multiclass", "--download", "--instances", "50",
                           "--models", "river:naive_bayes.GaussianNB", "--out", str(tmp_path))
    assert code == 0
    assert err.splitlines() == ["skipped Insects: the download failed (OSError: no network)",
                                "skipped Keystroke: the download failed (OSError: no network)"]


class Recorder(base.Classifier):
    """A River learner that records what it learns and predicts (class-level: `Track.run`
    runs a clone) and always predicts True."""

    learned: list = []
    predicted: list = []

    @property
    def _multiclass(self):
        return True

    def learn_one(self, x, y):
        Recorder.learned.append((x, y))

    def predict_proba_one(self, x):
        Recorder.predicted.append(x)
        return {True: 1.0}


def test_semi_supervised_river_learner_sees_labeled_rows_only_and_every_row_is_scored(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.setattr(dummy, "Recorder", Recorder, raising=False)
    monkeypatch.setattr(Recorder, "learned", [])
    monkeypatch.setattr(Recorder, "predicted", [])
    n = 500
    code, _, _ = run_cli(capsys, "--tracks", "binary", "--models", "river:dummy.Recorder",
                         "--label-ratio", "0.1", "--instances", str(n), "--out", str(tmp_path))
    assert code == 0
    frame = pd.read_csv(tmp_path / "tracks.csv")
    expected, rows = [], []
    for name in BUNDLED["binary"]:  # the mask of seed 0, as the command draws it
        masked = streams.LabelMask(streams.FirstRows(getattr(datasets, name)(), n), 0.1, seed=0)
        rows += list(masked)
        expected += [(x, y) for x, y, kw in masked if kw["labeled"]]
    assert Recorder.learned == expected
    assert 0.05 < len(expected) / len(rows) < 0.15
    assert len(Recorder.predicted) == len(rows) == 2 * n  # every row predicted ...
    final = frame[frame.step == n].set_index("dataset").accuracy
    for name in BUNDLED["binary"]:  # ... and scored against its true label
        labels = [y for _, y in getattr(datasets, name)().take(n)]
        assert final[name] == pytest.approx(sum(labels) / n)


def test_semi_supervised_our_model_learns_every_row(tmp_path, capsys, monkeypatch):
    from river_dhbm import DHBM

    seen = []
    learn_one = DHBM.learn_one

    @functools.wraps(learn_one)  # keeps the signature the pipeline routes `labeled` by
    def recording(self, x, y=None, labeled=True, **kwargs):
        seen.append(labeled)
        return learn_one(self, x, y, labeled=labeled, **kwargs)

    monkeypatch.setattr(DHBM, "learn_one", recording)
    code, _, _ = run_cli(capsys, "--tracks", "binary", "--models", "dhbm-mf", "--instances",
                         "200", "--label-ratio", "0.1", "--out", str(tmp_path))
    assert code == 0
    assert len(seen) == 400 and 0 < sum(seen) < 100  # every row, most of them unlabeled
    assert set(pd.read_csv(tmp_path / "tracks.csv").label_ratio) == {0.1}


def test_seeds_only_where_something_is_random():
    assert tracks.seeds_of("river:naive_bayes.GaussianNB", 1.0, 3) == range(1)
    assert tracks.seeds_of("river:naive_bayes.GaussianNB", 0.1, 3) == range(3)  # the mask
    assert tracks.seeds_of("river:forest.ARFClassifier", 1.0, 3) == range(3)
    assert tracks.seeds_of("dhda", 1.0, 3) == range(3)
    phishing = datasets.Phishing()
    for model in [*registry.MODELS, *tracks.RIVER_LEARNERS]:  # the run's seed reaches every part
        assert not tracks.make_model(model, phishing, seed=3)._is_stochastic, model
    knn = tracks.make_model("river:neighbors.KNNClassifier", phishing, seed=3)
    assert knn["KNNClassifier"].engine.seed == 3  # its search engine's too


def test_parallel_runs_give_the_same_figures():
    runs = [tracks.Run("binary", "Phishing", m, 0.5, seed, 200)
            for m in ("river:naive_bayes.GaussianNB", "river:neighbors.KNNClassifier")
            for seed in (0, 1)]
    columns = ["dataset", "model", "seed", "step", "accuracy", "f1"]
    one = tracks.run_all(runs, jobs=1, quiet=True)[columns]
    two = tracks.run_all(runs, jobs=2, quiet=True)[columns]
    pd.testing.assert_frame_equal(one, two)


@pytest.mark.parametrize("argv, message", [
    (["--tracks", "regression"], "Unknown track 'regression'. Known tracks: binary, multiclass"),
    (["--models", "nope"], "Unknown model 'nope'"),
    (["--models", "river:tree.Nope"], "river.tree.Nope does not exist"),
    (["--label-ratio", "2"], "must be in [0, 1]"),
    (["--seeds", "0"], "must be a positive integer"),
])
def test_bad_arguments_end_in_one_line(capsys, tmp_path, argv, message):
    code, out, err = run_cli(capsys, *argv, "--out", str(tmp_path))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err and err.count("\n") == 1
