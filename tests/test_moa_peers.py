"""MOA's learners in our loop (`evaluation.runs.moa_peers`) against capymoa's own evaluation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import streams
from evaluation import prequential
from evaluation.__main__ import main
from evaluation.runs import moa_peers, registry
from optional import needs_moa


class FixedMask:
    """Rows with a given mask (the array interface of `streams.LabelMask`)."""

    def __init__(self, X, y, kept, delay=0):
        self.X, self.y, self.kept, self.delay = X, y, kept, delay

    def iter_arrays(self, chunk_size):
        for i in range(0, len(self.y), chunk_size):
            s = slice(i, i + chunk_size)
            yield self.X[s], self.y[s], self.kept[s]


def capymoa_mask(n, label_probability, seed):
    """The labels `prequential_ssl_evaluation` keeps: one draw per row from numpy's MT19937
    with legacy seeding, labeled when below `label_probability`."""
    mt = np.random.MT19937()
    mt._legacy_seeding(seed)
    return np.random.Generator(mt).random(n) < label_probability


class Recording(moa_peers.MOAClassifier):
    """The adapter, keeping each prediction (-1 where MOA has no votes)."""

    def predict_proba_arrays(self, X):
        P = super().predict_proba_arrays(X)
        self.predictions.extend(np.where(P.sum(axis=1) > 0, P.argmax(axis=1), -1).tolist())
        return P


@needs_moa
@pytest.mark.parametrize("spec, ratio, delay", [
    ("NaiveBayes", 0.05, 0),
    ("HoeffdingTree", 0.1, 7),
    ("SLEADE", 0.1, 100),
])
def test_predictions_equal_capymoas_prequential_ssl_evaluation(spec, ratio, delay):
    import capymoa.classifier
    import capymoa.ssl
    from capymoa.evaluation import prequential_ssl_evaluation
    from capymoa.stream import NumpyStream

    n = 2000
    led = streams.LEDDrift(seed=3, noise_percentage=10, n_drift_features=4)
    X, y = next(led.iter_arrays(n))
    stream = NumpyStream(X.astype(float), y)
    cls = getattr(capymoa.ssl, spec, None) or getattr(capymoa.classifier, spec)
    learner = cls(schema=stream.get_schema(), random_seed=5)
    theirs = prequential_ssl_evaluation(
        stream, learner, max_instances=n, label_probability=ratio, random_seed=11,
        delay_length=delay, store_predictions=True, optimise=False,
    ).predictions()
    theirs = [-1 if p is None else int(p) for p in theirs]

    ours = Recording(spec, 24, 10, seed=5)
    ours.predictions = []
    result = prequential(FixedMask(X, y, capymoa_mask(n, ratio, 11), delay), ours, n,
                         batch_size=1)
    assert result.path == "arrays"
    assert ours.predictions == theirs
    assert len(set(theirs)) > 3  # it learnt something


@needs_moa
def test_registry_names_and_cli_strings():
    sleade = registry.make_model("moa:SLEADE", 24, 10, seed=3)
    assert sleade._takes_unlabeled and str(sleade) == "moa:SLEADE"
    assert not registry.make_model("moa:NaiveBayes", 24, 10)._takes_unlabeled
    tree = registry.make_model("moa:trees.HoeffdingTree -g 50", 24, 10)
    assert str(tree._learner.moa_learner.getOptions().getAsCLIString()).startswith("-g 50")
    semi = registry.make_model("moa:semisupervised.SLEADE", 24, 10)
    assert semi._takes_unlabeled
    arf = registry.make_model("moa:AdaptiveRandomForestClassifier", 24, 10,
                              params={"ensemble_size": 3})
    assert arf._learner.ensemble_size == 3
    with pytest.raises(ValueError, match="Unknown model 'moa:Nope'"):
        registry.make_model("moa:Nope", 24, 10)
    with pytest.raises(ValueError, match="MOA has no class"):
        registry.make_model("moa:trees.Nope", 24, 10)
    with pytest.raises(ValueError, match="Invalid parameters"):
        registry.make_model("moa:NaiveBayes", 24, 10, params={"nope": 1})


@pytest.mark.parametrize("name", ["moa:", "moa: -g 5", "moa:trees/Tree"])
def test_malformed_names(name):
    with pytest.raises(ValueError, match="Invalid model"):
        registry.check_model_name(name)


def test_without_capymoa_the_moa_rows_are_skipped_with_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(moa_peers, "available", lambda: "ModuleNotFoundError: no capymoa")
    out = tmp_path / "s"
    code = main(["scarcity", "--instances", "2000", "--trials", "1", "--streams",
                 "waveform-stationary", "--label-ratios", "0.1", "--models",
                 "river:naive_bayes.GaussianNB,moa:SLEADE,moa:NaiveBayes", "--quiet",
                 "--no-figure", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.err.count("\n") == 1
    assert captured.err.startswith("skipping moa:SLEADE, moa:NaiveBayes: capymoa is not")
    assert "pip install 'river-dhbm[moa]'" in captured.err
    assert set(pd.read_csv(out / "scarcity.csv").model) == {"river:naive_bayes.GaussianNB"}
    code = main(["run", "--stream", "led", "--model", "moa:SLEADE", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: skipping moa:SLEADE") and err.count("\n") == 1
