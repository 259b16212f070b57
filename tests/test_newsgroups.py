"""evaluation.offline.newsgroups, the command and its data: the user's copy (archive or
folder), the preprocessing pinned on hand-checked posts, the cache, and the whole command end
to end on a miniature `20news-bydate.tar.gz` of generated posts in the real format."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import numpy as np
import pytest

from evaluation import cli
from evaluation.offline.mnist import trainer as mnist_trainer
from evaluation.offline.mnist.data import MissingData
from evaluation.offline.newsgroups import data as newsgroups_data, experiment as newsgroups

pytest.importorskip("snowballstemmer")

# ---------------------------------------------------------------------------------- the copy

GROUPS = {  # a few words of each newsgroup's topic
    "comp.graphics": ["image", "images", "rendering", "pixels", "polygon", "texture", "shading",
                      "graphics", "format", "raytracer"],
    "rec.autos": ["engine", "engines", "cars", "brakes", "dealer", "transmission", "tires",
                  "driving", "mileage", "sedan"],
    "sci.space": ["orbit", "orbital", "launch", "shuttle", "nasa", "satellite", "rockets",
                  "lunar", "mission", "payload"],
}
COMMON = ["think", "know", "people", "question", "really", "said", "good", "time", "like",
          "the", "and", "is", "of", "to", "it", "was"]


def post(group: str, rng: np.random.Generator, k: int) -> str:
    """A generated post in the format of 20news-bydate: header block, blank line, body."""
    topic = GROUPS[group]
    words = rng.choice(topic, size=12).tolist() + rng.choice(COMMON, size=10).tolist()
    words += [str(rng.integers(0, 10_000)), f"v{rng.integers(1, 9)}"]
    rng.shuffle(words)
    body = "\n".join(" ".join(words[i : i + 8]) for i in range(0, len(words), 8))
    return (f"From: user{k}@cs.example.edu (User {k})\n"
            f"Subject: Re: {topic[k % len(topic)]} question\n"
            f"Organization: Example University\n"
            f"Lines: {body.count(chr(10)) + 1}\n\n{body}\n")


def make_posts(n_train=30, n_test=12, seed=0) -> dict:
    """`{(split, group, file name): text}` of a miniature copy."""
    rng = np.random.default_rng(seed)
    posts = {}
    for g, group in enumerate(GROUPS):
        for split, n in zip(newsgroups_data.SPLITS, (n_train, n_test)):
            for k in range(n):
                posts[(split, group, str(50_000 + 1000 * g + k))] = post(group, rng, k)
    return posts


def write_archive(path, posts, prefix=""):
    with tarfile.open(path, "w:gz") as archive:
        for (split, group, name), text in posts.items():
            data = text.encode("latin-1")
            info = tarfile.TarInfo(f"{prefix}{split}/{group}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def write_folder(root, posts):
    for (split, group, name), text in posts.items():
        (root / split / group).mkdir(parents=True, exist_ok=True)
        (root / split / group / name).write_bytes(text.encode("latin-1"))
    return root


def test_archive_and_folder_give_the_same_posts(tmp_path):
    posts = make_posts(n_train=4, n_test=2)
    posts[(newsgroups_data.SPLITS[0], "sci.space", "59999")] = "Subject: caf\xe9\n\nna\xefve\n"
    archive = write_archive(tmp_path / newsgroups_data.ARCHIVE, posts)
    folder = write_folder(tmp_path / "unpacked", posts)
    from_archive = newsgroups_data.load_posts(archive)
    assert newsgroups_data.load_posts(folder) == from_archive
    assert newsgroups_data.load_posts(tmp_path) == from_archive  # the folder holding the archive
    assert [len(from_archive[k]) for k in ("train", "test")] == [13, 6]
    assert ("sci.space", "Subject: caf\xe9\n\nna\xefve\n") in from_archive["train"]  # latin-1
    assert [g for g, _ in from_archive["train"]] == sorted(g for g, _ in from_archive["train"])


def test_missing_and_malformed_copies_say_what_is_expected(tmp_path):
    with pytest.raises(MissingData, match="--data PATH"):
        newsgroups_data.find_source(None)
    with pytest.raises(MissingData, match="20news-bydate-train"):
        newsgroups_data.find_source(tmp_path / "nowhere")
    (tmp_path / "junk.tar.gz").write_bytes(b"not an archive")
    with pytest.raises(ValueError, match="not a readable tar archive"):
        newsgroups_data.load_posts(tmp_path / "junk.tar.gz")
    train_only = {k: v for k, v in make_posts(2, 1).items() if k[0].endswith("train")}
    with pytest.raises(ValueError, match="no posts in 20news-bydate-test"):
        newsgroups_data.load_posts(write_archive(tmp_path / "a.tar.gz", train_only))


# ---------------------------------------------------------------------------------- terms

HAND_POSTS = [  # (post, its terms with headers="subject"), checked by hand
    ("From: jim@ibm.com (Jim)\nSubject: Re: Running engines\nOrganization: IBM\nLines: 2\n\n"
     "The engines were running at 3000 rpm in 1993.\nMy 486dx computers' graphics are fine.\n",
     ["run", "engin", "engin", "run", "rpm", "comput", "graphic", "fine"]),
    ("Subject: NASA launches\n\nNASA's shuttle launched; the orbiter's orbit was stable.\n",
     ["nasa", "launch", "nasa", "shuttl", "launch", "orbit", "orbit", "stabl"]),
]


@pytest.mark.parametrize("text, expected", HAND_POSTS)
def test_terms_of_hand_checked_posts(text, expected):
    # headers gone but the subject's words; numerics ("3000", "1993", "486dx") and stop words
    # ("the", "were", "at", "in", "my", "are", "re", "s", "was") gone; Porter's stems
    assert newsgroups_data.terms([text]) == [expected]


def test_header_choices():
    text = HAND_POSTS[0][0]
    assert "jim" not in newsgroups_data.terms([text])[0]
    assert newsgroups_data.terms([text], "drop") == [["engin", "run", "rpm", "comput", "graphic",
                                                      "fine"]]
    kept = newsgroups_data.terms([text], "keep")[0]
    assert {"jim", "ibm", "organ", "line", "subject"} <= set(kept) and "run" in kept
    with pytest.raises(ValueError, match="headers"):
        newsgroups_data.strip_headers(text, "some")


def test_vocabulary_is_the_most_frequent_training_terms_and_vectors_are_binary():
    train = [["b", "a", "a", "c"], ["a", "c", "d"], ["c", "e", "e", "e"]]
    test = [["z", "z", "e"], ["a", "a", "a"]]
    X_train, X_test, vocabulary = newsgroups_data.vectorise(train, test, size=3)
    assert vocabulary == ("a", "c", "e")  # counts 3, 3, 3 (ties alphabetical); b 1, d 1, z test
    assert X_train.dtype == bool and X_train.tolist() == [[1, 1, 0], [1, 1, 0], [0, 1, 1]]
    assert X_test.tolist() == [[0, 0, 1], [1, 0, 0]]
    with pytest.raises(ValueError, match="vocabulary"):
        newsgroups_data.vectorise(train, test, size=0)


def test_build_takes_the_classes_from_the_folders_found():
    raw = {"train": [("rec.autos", "Subject: cars\n\nengine"), ("sci.space", "\n\norbit orbit")],
           "test": [("sci.space", "\n\norbit cars")]}
    data = newsgroups_data.build(raw, vocabulary=10)
    assert data.classes == ("rec.autos", "sci.space") and data.train_labels.tolist() == [0, 1]
    assert data.vocabulary == ("orbit", "car", "engin") and data.test_labels.tolist() == [1]
    assert data.test_images.tolist() == [[True, True, False]]


# ---------------------------------------------------------------------------------- the command

QUICK = ["--quick", "--labels", "6", "--validation", "15", "--vocabulary", "30",
         "--set", "hidden_sizes=[8, 8]", "--quiet"]


def run_cli(capsys, *argv):
    code = cli.main(["newsgroups", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("model", ["dhbm", "dhda", "mlp"])
def test_command_end_to_end_on_a_miniature_archive(tmp_path, capsys, model):
    import pandas as pd

    archive = write_archive(tmp_path / newsgroups_data.ARCHIVE, make_posts())
    out = tmp_path / "out"
    code, stdout, err = run_cli(capsys, "--data", archive, "--model", model, "--out", out, *QUICK)
    assert code == 0, err
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 1 and results["unlabeled_rows"][0] == 90 - 6 - 15
    assert results["learning_rate"][0] == 0.01 and results["beta"][0] == 0.35  # the first point
    assert 0.0 <= results["test_error"][0] <= 1.0
    row = newsgroups.PAPER_TABLE.names[model]
    summary = (out / "summary.md").read_text()
    assert f"| {row} (this run) |" in summary and "| 2-DHDA | 39.45 ± 0.10 |" in summary
    assert f"| {row} (this run) |" in stdout
    assert len(list(out.glob("newsgroups-*.npz"))) == 1


def shuffled_groups(posts: dict, seed: int) -> dict:
    """The same posts, each split's group folders permuted over its posts: labels that say
    nothing about the words (every group keeps its number of posts)."""
    rng = np.random.default_rng(seed)
    shuffled = {}
    for split in newsgroups_data.SPLITS:
        keys = [key for key in posts if key[0] == split]
        groups = rng.permutation([group for _, group, _ in keys])
        shuffled.update({(split, g, key[2]): posts[key] for key, g in zip(keys, groups)})
    return shuffled


#: Enough labels, epochs and step for the generated posts, which are separable: each carries
#: 12 words of its group's topic, and no two groups share one (the Bayes error is 0).
LEARNING = ["--quick", "--labels", "30", "--validation", "15", "--vocabulary", "60",
            "--epochs", "10", "--lr", "0.1", "--set", "hidden_sizes=[16, 16]", "--quiet"]
CHANCE = 2 / 3  # three balanced groups


@pytest.mark.parametrize("model", ["dhbm", "dhda", "mlp"])
def test_the_route_learns_generated_posts_and_not_shuffled_labels(tmp_path, capsys, model):
    """180 training and 120 test posts; half of chance separates learning from the control.
    Test errors measured over corpus (and shuffle) seeds 0-7: the DHBM and the DHDA 0.000 on
    every seed, the MLP 0.000 to 0.200 (mean 0.058); with the labels shuffled 0.567 to 0.725
    (chance 0.667; one standard deviation of 120 posts is 0.043)."""
    import pandas as pd

    posts = make_posts(n_train=60, n_test=40)
    errors = {}
    for name, copy in {"true": posts, "shuffled": shuffled_groups(posts, 0)}.items():
        archive = write_archive(tmp_path / f"{name}.tar.gz", copy)
        out = tmp_path / name
        code, _, err = run_cli(capsys, "--data", archive, "--model", model, "--out", out,
                               *LEARNING)
        assert code == 0, err
        errors[name] = pd.read_csv(out / "results.csv")["test_error"][0]
    assert errors["true"] < CHANCE / 2 < errors["shuffled"], errors  # shuffled: the control


def test_rerun_reads_the_cache_and_workers_read_it_too(tmp_path, capsys, monkeypatch):
    import json

    import pandas as pd

    folder = write_folder(tmp_path / "copy", make_posts())
    out = tmp_path / "out"
    args = ["--data", folder, "--model", "mlp", "--out", out, *QUICK]
    assert run_cli(capsys, *args)[0] == 0
    first = pd.read_csv(out / "results.csv").drop(columns="seconds")

    def no_tokenising(text):
        raise AssertionError("tokenised again")

    monkeypatch.setattr(newsgroups_data, "tokenize", no_tokenising)
    code, stdout, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "read the vectorised posts" in stdout
    assert pd.read_csv(out / "results.csv").drop(columns="seconds").equals(first)
    settings = json.loads((out / "settings.json").read_text())
    assert settings["classes"] == list(GROUPS) and settings["vocabulary"] == 30
    data = newsgroups_data.load_cache(settings["cache"])
    assert data.train_images.shape == (90, 30) and data.train_images.dtype == bool
    # a worker process reads the same arrays from the cache file
    spec = mnist_trainer.TrialSpec(model="mlp", trial=0, seed=1, split_seed=2, labels=6,
                                   validation=15, epochs=1, params={"hidden_sizes": [8]})
    assert mnist_trainer._worker(spec, settings["cache"], None, 0,
                                 newsgroups_data.load_cache)["unlabeled_rows"] == 69
    monkeypatch.undo()  # another vocabulary is another cache file
    assert run_cli(capsys, *args, "--vocabulary", "20")[0] == 0
    assert len(list(out.glob("newsgroups-*.npz"))) == 2
    Path(settings["cache"]).write_bytes(b"broken")  # a broken cache is made again
    code, stdout, err = run_cli(capsys, *args)
    assert code == 0 and "tokenising the posts again" in stdout, err
    assert newsgroups_data.load_cache(settings["cache"]).vocabulary == data.vocabulary


def test_missing_or_malformed_path_is_one_line_and_exit_2(tmp_path, capsys):
    for path in (tmp_path / "nowhere", tmp_path):
        code, _, err = run_cli(capsys, "--data", path, "--out", tmp_path / "o", "--quiet")
        assert code == 2 and err.count("\n") == 1 and "20news-bydate-train" in err
    (tmp_path / "bad.tar.gz").write_bytes(b"\x1f\x8b broken")
    code, _, err = run_cli(capsys, "--data", tmp_path / "bad.tar.gz", "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "not a readable tar archive" in err
    code, _, err = run_cli(capsys, "--out", tmp_path / "o")
    assert code == 2 and err.count("\n") == 1 and "--download" in err
    assert not (tmp_path / "o").exists()


def test_download_only_when_asked(tmp_path, capsys, monkeypatch):
    calls = []

    def fetch(data_home=None):
        calls.append(data_home)
        return {"train": [(g, t) for (s, g, _), t in make_posts().items() if s.endswith("train")],
                "test": [(g, t) for (s, g, _), t in make_posts().items() if s.endswith("test")]}

    monkeypatch.setattr(newsgroups_data, "fetch_posts", fetch)
    home = tmp_path / "home"
    assert run_cli(capsys, "--data", home, "--out", tmp_path / "o", *QUICK)[0] == 2
    assert calls == []
    code, _, err = run_cli(capsys, "--data", home, "--download", "--out", tmp_path / "o", *QUICK)
    assert code == 0, err
    assert calls == [str(home)]


def test_the_ablation_runs_without_the_unlabeled_posts_under_its_own_row(tmp_path, capsys):
    import json

    archive = write_archive(tmp_path / newsgroups_data.ARCHIVE, make_posts())
    out = tmp_path / "out"
    code, stdout, err = run_cli(capsys, "--data", archive, "--model", "dhda", "--out", out,
                                "--set", "learn_unlabeled=false", *QUICK)
    assert code == 0, err
    assert "| 2-DHDA, labeled only (this run) |" in (out / "summary.md").read_text()
    settings = json.loads((out / "settings.json").read_text())
    assert settings["model_params"]["learn_unlabeled"] is False
    assert settings["model_params"]["hidden_sizes"] == [8, 8]
    assert settings["model_params"]["activation"] == "relu"  # the config's row, flags on top


def test_verify_reruns_a_trial_from_its_record_and_fails_on_a_changed_figure(tmp_path, capsys):
    """`--verify` goes through the offline protocol shared with MNIST: here it must find the
    posts' cache and the run's own settings (not the flags) again."""
    import json

    archive = write_archive(tmp_path / newsgroups_data.ARCHIVE, make_posts())
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, "--data", archive, "--model", "dhda", "--out", out, *QUICK)
    assert code == 0, err
    record = json.loads((out / "settings.json").read_text())
    code, stdout, err = run_cli(capsys, "--data", archive, "--out", out, "--verify", "0",
                                "--quiet")
    assert code == 0, err
    assert "trial 0" in stdout
    assert json.loads((out / "settings.json").read_text())["verified"][0]["trial"] == 0

    # Negative control: a recorded test error that today's code does not give
    (out / "settings.json").write_text(json.dumps(record))
    lines = (out / "results.csv").read_text().splitlines()
    cells = lines[1].split(",")
    column = lines[0].split(",").index("test_error")
    cells[column] = str(float(cells[column]) + 0.001)
    (out / "results.csv").write_text("\n".join([lines[0], ",".join(cells), *lines[2:]]) + "\n")
    code, _, err = run_cli(capsys, "--data", archive, "--out", out, "--verify", "0", "--quiet")
    assert code == 1 and err.count("\n") == 1 and "test_error" in err
    assert json.loads((out / "settings.json").read_text()) == record  # nothing written
