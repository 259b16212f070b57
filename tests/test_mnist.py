"""evaluation.mnist: IDX files, the balanced split, the missing-data message, end to end on
scikit-learn's bundled 8x8 digits (standing in for MNIST)."""

from __future__ import annotations

import argparse
import gzip
import os
import struct

import numpy as np
import pytest

from evaluation import mnist
from river_dhbm.base import HybridClassifier

# ---------------------------------------------------------------------------------- helpers


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file holding `array` (uint8 or int32), written by hand from the format spec."""
    code = {np.dtype(np.uint8): 0x08, np.dtype(">i4"): 0x0C}[array.dtype]
    header = bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">I", n) for n in array.shape)
    return header + array.tobytes()


def write_idx(path, array, compress=False):
    data = idx_bytes(array)
    if compress:
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


def digits_as_mnist(directory=None):
    """scikit-learn's digits (1,797 8x8 images, gray levels 0..16 stretched to 0..240) as an
    `MNIST` (first 1,400 images to train, the rest to test), optionally also as IDX files."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images * 15).astype(np.uint8)
    labels = digits.target.astype(np.uint8)
    if directory is not None:
        parts = (images[:1400], labels[:1400], images[1400:], labels[1400:])
        for name, array, gz in zip(mnist.FILES, parts, (True, False, False, True)):
            write_idx(directory / name, np.ascontiguousarray(array), compress=gz)
    return mnist.MNIST(images[:1400].reshape(1400, -1), labels[:1400].astype(np.int64),
                       images[1400:].reshape(-1, 64), labels[1400:].astype(np.int64))


class SoftmaxStandIn(HybridClassifier):
    """Stand-in model: softmax regression by SGD on the labeled rows of each mini-batch, with
    the DHBM's hyper-parameter names. Records what it was given."""

    def __init__(self, learning_rate=0.5, beta=0.0, beta_schedule=None, batch_size=20,
                 seed=None):
        super().__init__(batch_size=batch_size, seed=seed)
        self.learning_rate = learning_rate
        self.beta = beta
        self.beta_schedule = beta_schedule
        self._reset_state()
        self.batches = []

    def _init_params(self, n_features):
        self._W = np.zeros((n_features, 0))
        self._b = np.zeros(0)

    def _add_class(self):
        self._W = np.hstack([self._W, np.zeros((len(self._W), 1))])
        self._b = np.append(self._b, 0.0)

    def _update(self, X, y):
        self.batches.append(y.copy())
        lab = y >= 0
        if lab.any():
            P = self._proba(X[lab])
            P[np.arange(lab.sum()), y[lab]] -= 1.0
            self._W -= self.learning_rate * X[lab].T @ P / lab.sum()
            self._b -= self.learning_rate * P.mean(axis=0)

    def _proba(self, X):
        Z = X @ self._W + self._b
        Z = np.exp(Z - Z.max(axis=1, keepdims=True))
        return Z / Z.sum(axis=1, keepdims=True)


def stand_in(spec, n_features, n_classes):
    params = spec.model_params()
    return SoftmaxStandIn(learning_rate=params.get("learning_rate", 0.5),
                          beta=params.get("beta", 0.0), beta_schedule=params["beta_schedule"],
                          batch_size=params["batch_size"], seed=spec.seed)


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m evaluation")
    mnist.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


# ---------------------------------------------------------------------------------- IDX


@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_round_trip(tmp_path, compress):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    path = write_idx(tmp_path / "images-idx3-ubyte", images, compress)
    out = mnist.read_idx(path)
    assert out.shape == (2, 3, 4) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, images)


def test_read_idx_big_endian_int32(tmp_path):
    values = np.array([1, -2, 70000], dtype=">i4")
    out = mnist.read_idx(write_idx(tmp_path / "ints", values))
    assert out.tolist() == [1, -2, 70000]


def test_read_idx_rejects_bad_magic(tmp_path):
    path = tmp_path / "bad"
    path.write_bytes(b"\x01\x00\x08\x01" + struct.pack(">I", 1) + b"\x05")
    with pytest.raises(ValueError, match="bad magic"):
        mnist.read_idx(path)
    path.write_bytes(b"\x00\x00\x07\x01" + struct.pack(">I", 1) + b"\x05")  # unknown type code
    with pytest.raises(ValueError, match="bad magic"):
        mnist.read_idx(path)


@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_rejects_truncated_and_long_files(tmp_path, compress):
    data = idx_bytes(np.zeros((3, 2, 2), dtype=np.uint8))
    for name, cut, what in (("short", data[:-1], "truncated"), ("header", data[:9], "truncated"),
                            ("long", data + b"\x00", "too long")):
        path = tmp_path / name
        if compress:
            path = tmp_path / f"{name}.gz"
            path.write_bytes(gzip.compress(cut))
        else:
            path.write_bytes(cut)
        with pytest.raises(ValueError, match=what):
            mnist.read_idx(path)


def test_read_idx_rejects_broken_gzip(tmp_path):
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(idx_bytes(np.zeros(5, dtype=np.uint8)))[:-6])
    with pytest.raises(ValueError, match="gzip"):
        mnist.read_idx(path)


def test_load_mnist_mixes_raw_and_gz_and_reads_the_environment(tmp_path, monkeypatch):
    data = digits_as_mnist(tmp_path)
    loaded = mnist.load_mnist(tmp_path)
    np.testing.assert_array_equal(loaded.train_images, data.train_images)
    np.testing.assert_array_equal(loaded.test_labels, data.test_labels)
    assert loaded.train_images.shape == (1400, 64) and loaded.train_labels.dtype == np.int64
    monkeypatch.setenv(mnist.ENV_VAR, str(tmp_path))
    assert mnist.load_mnist().test_images.shape == (397, 64)


def test_pixels_scale_to_unit_interval():
    X = mnist.pixels(np.array([[0, 51, 255]], dtype=np.uint8))
    np.testing.assert_allclose(X, [[0.0, 0.2, 1.0]])


# ---------------------------------------------------------------------------------- missing data


def test_missing_files_name_all_four(tmp_path):
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"")
    with pytest.raises(mnist.MissingData) as info:
        mnist.find_files(tmp_path)
    message = str(info.value)
    assert all(name in message for name in mnist.FILES) and str(tmp_path) in message


def test_cli_missing_data_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(mnist.ENV_VAR, raising=False)
    args = parse(["mnist", "--data", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")])
    assert mnist.run(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: MNIST not found")
    assert all(name in err for name in mnist.FILES) and "nowhere" in err
    assert not (tmp_path / "o").exists()
    assert mnist.run(parse(["mnist", "--out", str(tmp_path / "o")])) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and mnist.ENV_VAR in err and "--data" in err


# ---------------------------------------------------------------------------------- split


def test_split_is_balanced_disjoint_complete_and_seeded():
    labels = np.random.default_rng(0).integers(0, 10, 5000)
    lab, val, unlab = mnist.split_indices(labels, 100, 1000, seed=3)
    assert np.bincount(labels[lab], minlength=10).tolist() == [10] * 10
    assert np.bincount(labels[val], minlength=10).tolist() == [100] * 10
    assert len(np.intersect1d(lab, val)) == 0
    assert sorted(np.concatenate([lab, val, unlab]).tolist()) == list(range(5000))
    again = mnist.split_indices(labels, 100, 1000, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip((lab, val, unlab), again))
    other = mnist.split_indices(labels, 100, 1000, seed=4)
    assert not np.array_equal(lab, other[0])


def test_split_spreads_a_remainder_and_rejects_impossible_sizes():
    labels = np.repeat(np.arange(10), 20)
    lab, val, _ = mnist.split_indices(labels, 25, 13, seed=0)
    counts = np.bincount(labels[lab], minlength=10)
    assert counts.sum() == 25 and set(counts.tolist()) == {2, 3}
    assert set(np.bincount(labels[val], minlength=10).tolist()) == {1, 2}
    with pytest.raises(ValueError, match="fewer than"):
        mnist.split_indices(labels, 100, 150, seed=0)
    with pytest.raises(ValueError, match="n_labeled"):
        mnist.split_indices(labels, 5, 0, seed=0)


def test_batch_plan_pairs_labeled_and_unlabeled_minibatches():
    labeled, unlabeled = np.arange(7), np.arange(100, 143)
    plan = list(mnist.batch_plan(labeled, unlabeled, 2, (3, 10), np.random.default_rng(0)))
    assert len(plan) == 2 * 4  # 43 unlabeled rows -> 4 full mini-batches of 10 per epoch
    assert all(len(l) == 3 and len(u) == 10 for l, u in plan)
    first_epoch = np.concatenate([u for _, u in plan[:4]])
    assert len(set(first_epoch.tolist())) == 40 and set(first_epoch) <= set(unlabeled)
    stream = np.concatenate([l for l, _ in plan])
    assert sorted(stream[:7].tolist()) == list(range(7))  # one labeled epoch before repeats


# ---------------------------------------------------------------------------------- trials


def test_schedule_in_labeled_epochs_becomes_updates():
    spec = mnist.TrialSpec(model="dhbm", trial=0, seed=1, split_seed=2,
                           params={"hidden_sizes": [784, 784, 784]})
    params = spec.model_params()
    assert params["beta_schedule"] == (30.0, 3000.0)  # 100 labels / 10 per update
    assert params["batch_size"] == 20 and params["hidden_sizes"] == (784, 784, 784)


def test_pipeline_learns_digits_with_stand_in():
    data = digits_as_mnist()
    spec = mnist.TrialSpec(model="standin", trial=0, seed=5, split_seed=6, labels=50,
                           validation=200, epochs=3, labeled_per_batch=5, unlabeled_per_batch=15,
                           params={"learning_rate": 0.5})
    models = []

    def make(spec, d, c):
        models.append(stand_in(spec, d, c))
        return models[-1]

    result = mnist.run_trial(spec, data, make_model=make)
    assert result["updates"] == 3 * (1150 // 15)
    assert result["test_error"] < 0.35 and result["validation_error"] < 0.35  # chance: 0.9
    model = models[0]
    assert model.beta_schedule == (30.0, 3000.0)  # (3, 300) epochs of 50 labels / 5 per update
    assert all((b >= 0).sum() == 5 and (b[:5] >= 0).all() for b in model.batches)
    assert mnist.run_trial(spec, data, make_model=stand_in)["test_error"] == result["test_error"]


def test_selection_picks_the_lowest_validation_error():
    data = digits_as_mnist()
    specs = [
        mnist.TrialSpec(model="standin", trial=-1, seed=1, split_seed=2, labels=50,
                        validation=200, epochs=1, max_train=300, params={"learning_rate": lr})
        for lr in (1e-6, 0.5)
    ]
    chosen, results = mnist.select(specs, data, make_model=stand_in)
    assert chosen == {"learning_rate": 0.5}
    assert results[0]["validation_error"] > results[1]["validation_error"]
    assert all(r["unlabeled_rows"] == 300 for r in results)


def test_summary_table_sits_beside_the_papers_rows():
    results = [{"model": "dhbm", "test_error": e} for e in (0.20, 0.22)]
    summary = mnist.summarise(results)
    assert summary[0]["trials"] == 2 and summary[0]["mean"] == pytest.approx(21.0)
    assert summary[0]["se"] == pytest.approx(1.0)
    table = mnist.summary_markdown(summary)
    lines = table.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("| 3-DHBM |"))
    assert "15.80 ± 0.90" in lines[i] and lines[i + 1] == (
        "| 3-DHBM (this run) | 21.00 ± 1.00 | river-dhbm, 2 trials |")
    assert "| DROPNN+PL+DAE | 10.49 |" in table and "| NN | 25.81 |" in table


def test_first_trial_continues_a_series_of_trials():
    whole = mnist.make_specs(mnist.load_settings(parse(["mnist", "--trials", "4"])))[1]
    tail = mnist.make_specs(mnist.load_settings(
        parse(["mnist", "--trials", "2", "--first-trial", "2"])))[1]
    assert [t.trial for t in tail] == [2, 3]
    assert [(t.seed, t.split_seed) for t in tail] == [(t.seed, t.split_seed) for t in whole[2:]]
    with pytest.raises(ValueError, match="first_trial"):
        mnist.load_settings(parse(["mnist", "--first-trial", "-1"]))


def test_each_finished_trial_is_reported_at_once():
    data = digits_as_mnist()
    specs = [mnist.TrialSpec(model="standin", trial=k, seed=k, split_seed=k, labels=50,
                             validation=200, epochs=1, max_train=100) for k in range(2)]
    seen = []
    results = mnist.run_specs(specs, data, None, 1, "trials", True, make_model=stand_in,
                              on_result=lambda r: seen.append(r["trial"]))
    assert seen == [0, 1] and [r["trial"] for r in results] == [0, 1]


def test_workers_get_one_blas_thread_and_the_environment_is_restored(monkeypatch):
    pytest.importorskip("threadpoolctl")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "7")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    with mnist._environment(**dict.fromkeys(mnist.BLAS_THREAD_VARS, "1")):
        assert all(os.environ[k] == "1" for k in mnist.BLAS_THREAD_VARS)
    assert os.environ["OPENBLAS_NUM_THREADS"] == "7" and "MKL_NUM_THREADS" not in os.environ
    with mnist._single_threaded_blas():
        assert mnist._blas_threads() in (1, None)  # None: no BLAS pool found


# ---------------------------------------------------------------------------------- real models

CONFIG = """
model = "{model}"
labels = 50
validation = 200
epochs = 6
labeled_per_batch = 5
unlabeled_per_batch = 5
beta_schedule = [3, 30]
trials = 2
select_train = 600
select_epochs = 2

[grid]
learning_rate = [0.05, 0.11]
beta = [0.35]

[params]
hidden_sizes = [32, 32]
{extra}
"""


def test_set_flag_and_grid_flags_override_the_config(tmp_path):
    args = parse(["mnist", "--model", "dhda", "--lr", "0.07", "--set", "corruption=0.3",
                  "--set", "hidden_sizes=[8, 8]", "--trials", "3"])
    s = mnist.load_settings(args)
    assert s["grid"]["learning_rate"] == [0.07] and s["trials"] == 3
    assert s["params"]["corruption"] == 0.3 and s["params"]["hidden_sizes"] == [8, 8]
    selection, trials = mnist.make_specs(s)
    assert len(selection) == 3 and len(trials) == 3  # lr fixed, beta grid of 3
    assert len({t.split_seed for t in trials}) == 3 and len({t.seed for t in trials}) == 3


@pytest.mark.parametrize("model, extra", [("dhbm", 'estimator = "mf"'), ("dhda", "")])
def test_cli_end_to_end_on_digits_idx_files(tmp_path, capsys, model, extra):
    import river_dhbm

    if not hasattr(river_dhbm, model.upper()):
        pytest.skip(f"river_dhbm.{model.upper()} not available yet")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    digits_as_mnist(data_dir)
    config = tmp_path / f"tiny_{model}.toml"
    config.write_text(CONFIG.format(model=model, extra=extra))
    out = tmp_path / "out"
    args = parse(["mnist", "--data", str(data_dir), "--config", str(config), "--out", str(out),
                  "--quiet"])
    assert mnist.run(args) == 0
    import pandas as pd

    results = pd.read_csv(out / "results.csv")
    assert len(results) == 2 and (results["test_error"] < 0.5).all()  # chance: 0.9
    assert results["learning_rate"].nunique() == 1
    selection = pd.read_csv(out / "selection.csv")
    assert sorted(selection["learning_rate"]) == [0.05, 0.11]
    assert (selection["unlabeled_rows"] == 600).all() and selection["test_error"].isna().all()
    tag = "3-DHBM" if model == "dhbm" else "3-DHDA"
    assert f"| {tag} (this run) |" in (out / "summary.md").read_text()
    assert f"| {tag} (this run) |" in capsys.readouterr().out


def test_cli_append_adds_trials_with_the_chosen_point(tmp_path, capsys):
    import pandas as pd

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    digits_as_mnist(data_dir)
    config = tmp_path / "tiny.toml"
    config.write_text(CONFIG.format(model="dhda", extra="").replace("trials = 2", "trials = 1")
                      .replace("epochs = 6", "epochs = 1"))
    out = tmp_path / "out"
    base = ["mnist", "--data", str(data_dir), "--config", str(config), "--out", str(out),
            "--quiet"]
    assert mnist.run(parse(base)) == 0
    first = pd.read_csv(out / "results.csv")
    selection = (out / "selection.csv").read_text()
    assert mnist.run(parse(base + ["--append"])) == 0
    both = pd.read_csv(out / "results.csv")
    assert list(both["trial"]) == [0, 1] and both.iloc[0].equals(first.iloc[0])
    assert both["learning_rate"].nunique() == 1 and (out / "selection.csv").read_text() == selection
    assert "2 trials" in (out / "summary.md").read_text()
    assert mnist.run(parse(base + ["--append", "--first-trial", "1"])) == 2
    assert "already in" in capsys.readouterr().err
    assert mnist.run(parse(base + ["--append", "--set", "corruption=0.5"])) == 2
    assert "corruption" in capsys.readouterr().err
    assert mnist.run(parse(base[:-3] + ["--out", str(tmp_path / "empty"), "--append"])) == 2
    assert "Nothing to append to" in capsys.readouterr().err


def test_cli_rejects_impossible_split_before_running(tmp_path, capsys):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    digits_as_mnist(data_dir)
    args = parse(["mnist", "--data", str(data_dir), "--labels", "5", "--out", str(tmp_path / "o")])
    assert mnist.run(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: Invalid n_labeled (5)") and err.count("\n") == 1
    assert not (tmp_path / "o").exists()
