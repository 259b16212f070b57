"""Errors at the door: every public entry point answers a bad input with ONE line that names
the value, before any state changes (the model predicts exactly as before the call)."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

import river_dhbm
import streams
from evaluation import prequential
from evaluation.runs import registry

MODELS = ["DHBM", "DHDA", "PseudoLabelMLP", "SBEN", "HSDA"]
D = 6  # features of the test models
PROBE = np.random.default_rng(9).random((5, D))


@pytest.fixture(params=MODELS)
def model(request):
    """A small model of each kind, mid-way through a mini-batch (3 rows buffered)."""
    cls = getattr(river_dhbm, request.param)
    m = cls(**next(iter(cls._unit_test_params())))
    rng = np.random.default_rng(1)
    X = rng.random((2 * m.batch_size + 3, D))
    m.learn_arrays(X, np.arange(len(X)) % 3)
    return m


def _state(model):
    """What must not change: predictions (array and dict path), counters and the buffer."""
    return (
        model.predict_proba_arrays(PROBE).tolist(),
        model.predict_proba_one(dict(enumerate(PROBE[0].tolist()))),
        model.n_updates,
        model._n_buf,
        pickle.dumps(model),
    )


def _refused(model, call, error):
    before = _state(model)
    with pytest.raises(error) as info:
        call(model)
    message = str(info.value)
    assert "\n" not in message and len(message) < 200, message  # one short line
    assert _state(model) == before
    return message


x_ok = dict(enumerate([0.5] * D))
X_ok = np.full((4, D), 0.5)

BAD_CALLS = {
    # a wrong type
    "predict_one(None)": (lambda m: m.predict_one(None), TypeError, "Invalid x (None)"),
    "predict_proba_one(None)": (lambda m: m.predict_proba_one(None), TypeError, "dict"),
    "predict_one([1, 2, 3])": (lambda m: m.predict_one([1, 2, 3]), TypeError, "got list"),
    "learn_one(None, 1)": (lambda m: m.learn_one(None, 1), TypeError, "Invalid x (None)"),
    "learn_one([1, 2, 3], 1)": (lambda m: m.learn_one([1, 2, 3], 1), TypeError, "got list"),
    "learn_one('abc', 1)": (lambda m: m.learn_one("abc", 1), TypeError, "got str"),
    "learn_one(non-numeric value)": (
        lambda m: m.learn_one({**x_ok, 2: "x"}, 1), TypeError, "Feature 2 has non-numeric"),
    "learn_one(NaN value)": (
        lambda m: m.learn_one({**x_ok, 1: float("nan")}, 1), ValueError, "non-finite"),
    "learn_one(unhashable label)": (lambda m: m.learn_one(x_ok, [1]), TypeError, "hashable"),
    "learn_many(None)": (lambda m: m.learn_many(None), TypeError, "DataFrame"),
    "learn_many(a dict)": (lambda m: m.learn_many({"a": [1]}), TypeError, "got dict"),
    "learn_many(y too short)": (
        lambda m: m.learn_many(pd.DataFrame(X_ok), pd.Series([1, 2])), ValueError, "2 labels"),
    "learn_many(y a number)": (
        lambda m: m.learn_many(pd.DataFrame(X_ok), 3), TypeError, "Invalid y (3)"),
    "predict_proba_many(an array)": (
        lambda m: m.predict_proba_many(X_ok), TypeError, "got ndarray"),
    # a wrong shape, a wrong array
    "learn_arrays(None, y)": (
        lambda m: m.learn_arrays(None, [1, 2]), TypeError, "Invalid X (None)"),
    "learn_arrays(strings)": (
        lambda m: m.learn_arrays([["a"] * D], [1]), TypeError, "2-d array of numbers"),
    "learn_arrays(1-d X)": (
        lambda m: m.learn_arrays(np.zeros(D), [1]), ValueError, "got shape (6,)"),
    "learn_arrays(too many columns)": (
        lambda m: m.learn_arrays(np.zeros((4, D + 1)), [1] * 4), ValueError, "7 columns"),
    "learn_arrays(y None)": (lambda m: m.learn_arrays(X_ok, None), TypeError, "Invalid y (None)"),
    "learn_arrays(y too short)": (
        lambda m: m.learn_arrays(X_ok, [1, 2]), ValueError, "expected (4,)"),
    "learn_arrays(labeled of a wrong shape)": (
        lambda m: m.learn_arrays(X_ok, [1] * 4, [True]), ValueError, "Invalid labeled"),
    "learn_arrays(unhashable labels)": (
        lambda m: m.learn_arrays(X_ok, _object_labels()), TypeError, "hashable"),
    "learn_arrays(inf)": (
        lambda m: m.learn_arrays(np.full((4, D), np.inf), [1] * 4), ValueError, "non-finite"),
    "predict_proba_arrays(None)": (
        lambda m: m.predict_proba_arrays(None), TypeError, "Invalid X (None)"),
    "predict_proba_arrays(too few columns)": (
        lambda m: m.predict_proba_arrays(np.zeros((2, D - 1))), ValueError, "5 columns"),
    "test_then_train_arrays(batch_size=0)": (
        lambda m: m.test_then_train_arrays(X_ok, [1] * 4, batch_size=0), ValueError,
        "Invalid batch_size (0)"),
    "test_then_train_arrays(y too long)": (
        lambda m: m.test_then_train_arrays(X_ok, [1] * 5), ValueError, "expected (4,)"),
}


def _object_labels():
    labels = np.empty(4, dtype=object)
    labels[:] = [1, [2], 1, 1]  # a list is no label
    return labels


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_input_is_one_line_and_changes_nothing(model, case):
    call, error, words = BAD_CALLS[case]
    assert words in _refused(model, call, error)


def test_a_fresh_model_refuses_wrong_types_too():
    # before anything is learnt, `predict_one` answers `{}`-style for any dict, not for None
    model = river_dhbm.DHBM()
    with pytest.raises(TypeError, match=r"Invalid x \(None\)"):
        model.predict_one(None)
    with pytest.raises(TypeError, match="got list"):
        model.learn_one([1, 2, 3], 1)
    assert model.n_features_in_ == 0 and model.predict_proba_one({"a": 1.0}) == {}


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize(
    "params, words",
    [
        ({"batch_size": 0}, "Invalid batch_size (0)"),
        ({"seed": "a"}, "Invalid seed ('a')"),
        ({"learning_rate": -1.0}, "Invalid learning_rate (-1.0)"),
        ({"hidden_sizes": (0,)}, "Invalid hidden_sizes ((0,))"),
    ],
)
def test_bad_config_is_one_line(name, params, words):
    with pytest.raises(ValueError) as info:
        getattr(river_dhbm, name)(**params)
    assert words in str(info.value) and "\n" not in str(info.value)


# ------------------------------------------------------------------ streams and evaluation


def test_prequential_without_a_label_mask_says_so(model):
    before = _state(model)
    with pytest.raises(ValueError, match=r"no label mask .* streams\.LabelMask") as info:
        prequential(streams.LED(seed=1), model, 100)
    assert "\n" not in str(info.value) and _state(model) == before


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"n_instances": 0}, ValueError, "Invalid n_instances (0)"),
        ({"n_instances": "10"}, ValueError, "Invalid n_instances ('10')"),
        ({"fading_factor": "x"}, ValueError, "Invalid fading_factor ('x')"),
        ({"fading_factor": 1.5}, ValueError, "Invalid fading_factor (1.5)"),
        ({"batch_size": 2.5}, ValueError, "Invalid batch_size (2.5)"),
    ],
)
def test_prequential_bad_arguments(model, kwargs, error, words):
    dataset = streams.LabelMask(streams.LED(seed=1), label_ratio=0.5, seed=1)
    before = _state(model)
    with pytest.raises(error) as info:
        prequential(dataset, model, **{"n_instances": 100, **kwargs})
    assert words in str(info.value) and "\n" not in str(info.value)
    assert _state(model) == before


def test_prequential_bad_model_and_dataset():
    dataset = streams.LabelMask(streams.LED(seed=1), label_ratio=0.5, seed=1)
    with pytest.raises(TypeError, match=r"Invalid model \(None\)\. Must be a River classifier"):
        prequential(dataset, None, 100)
    with pytest.raises(TypeError, match=r"Invalid dataset \(3\)\. Must be a stream"):
        prequential(3, river_dhbm.DHBM(), 100)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"dataset": None}, "Invalid dataset (None)"),
        ({"label_ratio": 1.5}, "Invalid label_ratio (1.5)"),
        ({"label_ratio": "0.1"}, "Invalid label_ratio ('0.1')"),  # a string, quoted
        ({"batch_size": 0}, "Invalid batch_size (0)"),
        ({"seed": 1.5}, "Invalid seed (1.5)"),
    ],
)
def test_label_mask_bad_arguments(kwargs, words):
    with pytest.raises(ValueError) as info:
        streams.LabelMask(**{"dataset": streams.LED(seed=1), **kwargs})
    assert words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("chunk_size", [0, "a", 2.5])
def test_label_mask_bad_chunk_size(chunk_size):
    dataset = streams.LabelMask(streams.LED(seed=1), label_ratio=0.1, seed=1)
    with pytest.raises(ValueError, match=r"Invalid chunk_size") as info:
        next(dataset.iter_arrays(chunk_size))
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "args, words",
    [
        (("dhbm-mf", None, 10), "Invalid n_features (None) for model 'dhbm-mf'"),
        (("dhbm-mf", 24, 0), "Invalid n_classes (0) for model 'dhbm-mf'"),
        (("dhbm-mf", 24, "ten"), "Invalid n_classes ('ten')"),
    ],
)
def test_unknown_sizes_for_a_model_are_one_line(args, words):
    with pytest.raises(ValueError) as info:
        registry.make_model(*args)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_unknown_class_count_is_fine_for_our_models():
    # the models discover their classes online: a stream that does not know its classes is fine
    assert registry.make_model("dhbm-mf", 24, None).classes_ == []


@pytest.mark.parametrize(
    "argv, words",
    [
        (["run", "--config", "nope"], "No config 'nope'"),
        (["reproduce", "--trials", "0"], "--trials"),
        (["run", "--config", "stationary", "--set", "learning_rate=abc"], "learning_rate"),
        (["bench", "first_use", "Nope"], "unknown model 'Nope'"),
        (["plot", "--csv", "README.md", "--out", "unused"], "cannot read 'README.md'"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(argv, words, capsys):
    from evaluation.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err
