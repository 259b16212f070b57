"""Property tests at the door (issue 30): whatever a hostile user sends to a trained model, it
either takes it and still predicts finite probabilities that sum to 1, or refuses it with one
line (TypeError or ValueError) and stays exactly as it was; its pickles stay exact.

Two profiles of the same campaign: `CI` (deterministic, about a minute) and `SLOW` (marked
`slow`, a fresh seed each run: `pytest -m slow tests/test_door_properties.py`). Each shrunk
failure they found is a named test of `test_door_regressions.py`.
"""

from __future__ import annotations

import decimal
import fractions
import functools
import itertools
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import river_dhbm
import streams
from river_dhbm._input.checks import MAX_ABS

MODELS = ["DHBM", "DHDA", "PseudoLabelMLP", "SBEN", "HSDA"]
#: The smallest test net, the paper's (plain SGD steps), the DHBM in single precision.
SETTINGS = ["unit", "paper", "float32"]
N_TRAIN = 200
N_AFTER = 100  # clean rows after a campaign: 25 updates of 4 rows, time for a blow-up to show
ROWS = list(itertools.islice(streams.LED(seed=1), N_TRAIN + N_AFTER))
D = len(ROWS[0][0])
PROBE = np.array([list(x.values()) for x, _ in ROWS[N_TRAIN : N_TRAIN + 10]], dtype=float)

CI = settings(
    max_examples=1500,
    derandomize=True,  # the same examples every run: CI cannot flake
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
SLOW = settings(CI, max_examples=5000, derandomize=False)


@functools.lru_cache(maxsize=None)
def _trained(name: str, setting: str) -> bytes:
    """The pickle of a model trained on `N_TRAIN` clean LED rows (each example unpickles it)."""
    cls = getattr(river_dhbm, name)
    if setting == "unit" or (setting == "float32" and name != "DHBM"):
        model = cls(**next(iter(cls._unit_test_params())))
    elif setting == "float32":
        model = cls(hidden_sizes=(8, 6), batch_size=4, seed=1, dtype="float32")
    else:
        model = cls.paper(D, seed=1, batch_size=4)  # small batches: updates within a campaign
    for x, y in ROWS[:N_TRAIN]:
        model.learn_one(x, y)
    return pickle.dumps(model)


# ------------------------------------------------------------------ what a hostile user sends

HUGE = [1e200, -1e308, 3.4e38, 1e252, 1e7, MAX_ABS, -MAX_ABS, MAX_ABS * (1 + 2**-52), 5e-324]
NA_LIKE = [None, float("nan"), np.float32("nan"), np.float64("nan"), pd.NA, pd.NaT,
           np.datetime64("NaT"), decimal.Decimal("NaN"), decimal.Decimal("sNaN")]

numbers = st.one_of(
    st.floats(-MAX_ABS, MAX_ABS),  # the accepted ones, often
    st.floats(0, 1),
    st.floats(),  # any float: NaN, inf, 1e308
    st.sampled_from(HUGE),
    st.integers(-(10**7), 10**7),
    st.integers(),
    st.just(10**400),
    st.booleans(),
)
def _scalar(value, dtype):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NaN cast to an int: whatever numpy makes of it
        return np.array(value).astype(dtype)[()]


numpy_scalars = st.builds(
    _scalar,
    st.one_of(st.floats(-1e6, 1e6), st.integers(-100, 100), st.sampled_from([np.nan, np.inf])),
    st.sampled_from(["float16", "float32", "float64", "int8", "int64", "uint64", "bool",
                     "complex128"]),
)
odd_values = st.one_of(
    st.decimals(allow_nan=True, allow_infinity=True),
    st.just(decimal.Decimal("sNaN")),
    st.fractions(),
    st.just(fractions.Fraction(10**400, 3)),
    st.complex_numbers(),
    st.none(),
    st.text(max_size=3),
    st.binary(max_size=2),
    st.sampled_from([pd.NA, pd.NaT, np.datetime64("NaT"), np.datetime64("2020-01-01")]),
    st.builds(np.array, st.lists(st.floats(0, 1), max_size=3)),
    st.just(np.array(0.5)),
    st.lists(st.floats(0, 1), max_size=2),
    st.tuples(st.floats(0, 1)),
    st.just(object()),
)
values = st.one_of(numbers, numbers, numpy_scalars, odd_values)
keys = st.one_of(
    st.integers(0, D - 1),  # the model's features
    st.integers(D, D + 3),  # unseen ones
    st.text(max_size=2),
    st.tuples(st.integers(0, 2)),
    st.none(),
    st.floats(allow_nan=False),
)
labels = st.one_of(
    st.integers(0, 12),
    st.sampled_from(NA_LIKE),
    st.text(max_size=2),
    st.booleans(),
    st.floats(),
    st.tuples(st.integers(0, 2)),
    st.lists(st.integers(0, 2), max_size=2),  # unhashable
    st.just(np.int64(3)),
    st.just(np.array([1, 2])),
)
flags = st.one_of(st.booleans(), st.just(np.bool_(False)),
                  st.sampled_from(["no", 0, 1, None, 1.0, np.array([True])]))


@st.composite
def dicts(draw):
    """A clean LED row, some of its values replaced, some dropped, unseen keys added."""
    x = dict(draw(st.sampled_from(ROWS[N_TRAIN:]))[0])
    for key in draw(st.lists(st.integers(0, D - 1), max_size=2)):
        x.pop(key, None)
    x.update(draw(st.dictionaries(keys, values, max_size=3)))
    if draw(st.booleans()):  # another key order
        x = dict(reversed(list(x.items())))
    return x


column_names = st.one_of(st.integers(0, D + 2), st.text(max_size=2), st.tuples(st.integers(0, 1)),
                         st.none(), st.floats(allow_nan=False))


@st.composite
def columns(draw, n):
    """One frame column of `n` rows, of any dtype."""
    kind = draw(st.sampled_from(["float", "int", "bool", "Int64", "object", "complex", "date",
                                 "category", "string", "huge"]))
    floats = draw(st.lists(st.one_of(st.floats(0, 1), st.floats()), min_size=n, max_size=n))
    if kind == "float":
        return pd.Series(floats, dtype=float)
    if kind == "huge":
        return pd.Series(draw(st.lists(st.sampled_from(HUGE), min_size=n, max_size=n)))
    if kind == "int":
        return pd.Series(draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=n,
                                       max_size=n)), dtype="int64")
    if kind == "bool":
        return pd.Series(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    if kind == "Int64":
        return pd.Series(draw(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=n,
                                       max_size=n)), dtype="Int64")
    if kind == "object":
        column = pd.Series([None] * n, dtype=object)
        for i, v in enumerate(draw(st.lists(values, min_size=n, max_size=n))):
            column.iat[i] = v
        return column
    if kind == "complex":
        return pd.Series(floats, dtype=complex)
    if kind == "date":
        return pd.Series(pd.to_datetime(draw(st.lists(st.integers(0, 10**9), min_size=n,
                                                      max_size=n)), unit="s"))
    if kind == "category":
        return pd.Series(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)),
                         dtype="category")
    return pd.Series(draw(st.lists(st.text(max_size=2), min_size=n, max_size=n)),
                     dtype="string")


@st.composite
def frames(draw):
    """A frame of 0 to 4 rows: the model's clean columns with some replaced, odd names, any
    index."""
    n = draw(st.integers(0, 4))
    base = [x for x, _ in draw(st.lists(st.sampled_from(ROWS[N_TRAIN:]), min_size=n,
                                        max_size=n))]
    data = {name: pd.Series([x[name] for x in base], dtype=float) for name in range(D)}
    if draw(st.booleans()):
        data = {}  # only odd columns (an empty frame among them)
    for _ in range(draw(st.integers(0, 3))):
        data[draw(column_names)] = draw(columns(n))
    names = list(data)
    if draw(st.integers(0, 9)) == 0 and names:
        names[-1] = names[0]  # a duplicate name
    frame = pd.DataFrame({i: s.reset_index(drop=True) for i, s in enumerate(data.values())})
    if names and draw(st.integers(0, 9)) == 0:
        frame.columns = pd.MultiIndex.from_tuples([(str(c), 0) for c in range(len(names))])
    else:
        frame.columns = pd.Index(names, tupleize_cols=False, dtype=object)
    if draw(st.booleans()):
        frame.index = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    return frame


@st.composite
def frame_labels(draw, frame):
    """A `y` for `learn_many`: a Series (its index X's, shuffled, another), a list, or junk."""
    n = len(frame)
    kind = draw(st.sampled_from(["series", "shuffled", "other", "list", "junk"]))
    ys = draw(st.lists(labels, min_size=n, max_size=n))
    if kind == "list":
        return ys
    if kind == "junk":
        return draw(st.sampled_from([None, 3, np.array(3), "ab", np.zeros((n, 2)),
                                     pd.DataFrame({"y": [1] * n}), {"a": 1}]))
    y = pd.Series([None] * n, dtype=object)
    for i, v in enumerate(ys):
        y.iat[i] = v
    y.index = frame.index
    if kind == "shuffled":
        y = y.iloc[::-1]
    elif kind == "other":
        y.index = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    return y


@st.composite
def matrices(draw):
    """An `X` for the array paths: the model's width or not, any dtype."""
    n = draw(st.integers(0, 4))
    d = draw(st.sampled_from([D, D, D, D - 1, 0]))
    X = np.array([list(x.values())[:d] for x, _ in draw(st.lists(
        st.sampled_from(ROWS[N_TRAIN:]), min_size=n, max_size=n))], dtype=float).reshape(n, d)
    if n and d:
        for _ in range(draw(st.sampled_from([0, 0, 1, 3]))):
            X[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = draw(
                st.one_of(st.floats(), st.sampled_from(HUGE)))
    kind = draw(st.sampled_from(["float"] * 4 + ["int", "bool", "complex", "object", "str",
                                                 "list", "1d"]))
    if kind == "int":
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return X.astype(np.int64)
    if kind == "bool":
        return X > 0.5
    if kind == "complex":
        return X + 1j * draw(st.sampled_from([0.0, 1.0]))
    if kind == "object":
        O = X.astype(object)
        if n and d:
            O[0, 0] = draw(values)
        return O
    if kind == "str":
        return X.astype(str)
    if kind == "list":
        return X.tolist()
    if kind == "1d":
        return X.ravel()
    return X


@st.composite
def array_labels(draw, n):
    kind = draw(st.sampled_from(["int", "float", "object", "str", "junk"]))
    if kind == "int":
        return np.array(draw(st.lists(st.integers(0, 12), min_size=n, max_size=n)), dtype=int)
    if kind == "float":
        return np.array(draw(st.lists(st.one_of(st.integers(0, 12), st.just(float("nan"))),
                                      min_size=n, max_size=n)), dtype=float)
    if kind == "object":
        y = np.empty(n, dtype=object)
        for i, v in enumerate(draw(st.lists(labels, min_size=n, max_size=n))):
            y[i] = v
        return y
    if kind == "str":
        return np.array(draw(st.lists(st.text(max_size=2), min_size=n, max_size=n)), dtype=str)
    return draw(st.sampled_from([None, 3, np.zeros((n, 2)), np.zeros(n + 1)]))


@st.composite
def array_flags(draw, n):
    return draw(st.one_of(st.none(), st.lists(st.booleans(), min_size=n, max_size=n).map(np.array),
                          st.just(np.ones(n, dtype=int)), st.just(np.array(["no"] * n)),
                          st.just(np.ones(n + 1, dtype=bool))))


@st.composite
def calls(draw):
    """One call of the public API with generated arguments, as `(method name, args, kwargs)`."""
    method = draw(st.sampled_from([
        "learn_one", "learn_one", "learn_one", "predict_one", "predict_proba_one", "learn_many",
        "predict_proba_many", "learn_arrays", "predict_proba_arrays", "test_then_train_arrays",
    ]))
    if method == "learn_one":
        kwargs = {}
        if draw(st.booleans()):
            kwargs["labeled"] = draw(flags)
        if draw(st.integers(0, 4)) == 0:
            kwargs["late"] = draw(st.one_of(
                st.lists(st.tuples(dicts(), labels), max_size=2), st.sampled_from([5, "ab", [1]])))
        return method, (draw(dicts()), draw(labels)), kwargs
    if method in ("predict_one", "predict_proba_one"):
        return method, (draw(st.one_of(dicts(), dicts(), st.sampled_from([None, [1], "ab"]))),), {}
    if method == "learn_many":
        X = draw(frames())
        return method, (X, draw(st.one_of(st.none(), frame_labels(X)))), {}
    if method == "predict_proba_many":
        return method, (draw(frames()),), {}
    X = draw(matrices())
    if method == "predict_proba_arrays":
        return method, (X,), {}
    n = len(X) if hasattr(X, "__len__") else 0
    return method, (X, draw(array_labels(n)), draw(array_flags(n))), {}


# ------------------------------------------------------------------ the properties


def _assert_probabilities(P: np.ndarray, what: str) -> None:
    assert np.isfinite(P).all(), f"non-finite probabilities after {what}"
    if P.shape[1]:
        np.testing.assert_allclose(P.sum(axis=1), 1.0, err_msg=what)


def _check_output(method: str, out, what: str) -> None:
    if method == "predict_proba_one" and out:
        _assert_probabilities(np.array([list(out.values())], dtype=float), what)
    elif method == "predict_proba_many":
        _assert_probabilities(out.to_numpy(dtype=float), what)
    elif method == "predict_proba_arrays":
        _assert_probabilities(out, what)


def _campaign(name: str, setting: str, sequence: list) -> None:
    model = pickle.loads(_trained(name, setting))
    with warnings.catch_warnings():
        # a numpy warning is a silent change of the input (a dropped imaginary part, an
        # overflow): it must be an error at the door instead
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        warnings.filterwarnings("ignore", "PseudoLabelMLP: an SGD update diverged")
        for method, args, kwargs in sequence:
            what = f"{name}({setting}).{method}"
            before = pickle.dumps(model)
            try:
                out = getattr(model, method)(*args, **kwargs)
            except (TypeError, ValueError) as error:
                event(f"{method}: refused")
                message = str(error)
                assert message and "\n" not in message and len(message) < 200, message
                assert pickle.dumps(model) == before, f"{what} refused, but changed the model"
                continue
            event(f"{method}: taken")
            _check_output(method, out, what)
            _assert_probabilities(model.predict_proba_arrays(PROBE), what)
        # clean rows after the campaign: the updates on what was accepted, then predictions
        for x, y in ROWS[N_TRAIN:]:
            model.learn_one(x, y)
    P = model.predict_proba_arrays(PROBE)
    _assert_probabilities(P, f"{name}({setting}) after the campaign")
    copy = pickle.loads(pickle.dumps(model))
    assert pickle.dumps(copy) == pickle.dumps(model)
    np.testing.assert_array_equal(copy.predict_proba_arrays(PROBE), P)


campaign = dict(
    name=st.sampled_from(MODELS),
    setting=st.sampled_from(SETTINGS),
    sequence=st.lists(calls(), min_size=1, max_size=6),
)


@CI
@given(**campaign)
def test_anything_is_taken_finite_or_refused_in_one_line(name, setting, sequence):
    _campaign(name, setting, sequence)


@pytest.mark.slow
@SLOW
@given(**campaign)
def test_anything_is_taken_finite_or_refused_in_one_line_long(name, setting, sequence):
    _campaign(name, setting, sequence)


spiked_rows = dict(
    name=st.sampled_from(MODELS),
    setting=st.sampled_from(SETTINGS),
    spikes=st.lists(st.dictionaries(st.integers(0, D - 1), st.one_of(
        st.sampled_from([MAX_ABS, -MAX_ABS]), st.floats(-MAX_ABS, MAX_ABS)), min_size=1),
        min_size=1, max_size=12),
    ys=st.lists(st.one_of(st.none(), st.integers(0, 9)), min_size=12, max_size=12),
)


@CI
@given(**spiked_rows)
def test_any_values_within_the_bound_keep_every_model_finite(name, setting, spikes, ys):
    _spiked(name, setting, spikes, ys)


@pytest.mark.slow
@SLOW
@given(**spiked_rows)
def test_any_values_within_the_bound_keep_every_model_finite_long(name, setting, spikes, ys):
    _spiked(name, setting, spikes, ys)


def _spiked(name, setting, spikes, ys):
    # clean rows with accepted extremes, labeled or not: the updates stay finite
    model = pickle.loads(_trained(name, setting))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "PseudoLabelMLP: an SGD update diverged")
        for (x, _), spike, y in zip(ROWS[N_TRAIN:], spikes, ys):
            model.learn_one({**x, **spike}, y)
        _assert_probabilities(model.predict_proba_arrays(PROBE), f"{name}({setting})")
        for x, y in ROWS[N_TRAIN:]:
            model.learn_one(x, y)
    _assert_probabilities(model.predict_proba_arrays(PROBE), f"{name}({setting}) then clean")
