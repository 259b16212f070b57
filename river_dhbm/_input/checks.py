"""Input checks at the door: a dict, a DataFrame or an array becomes validated float64 rows.

Every check raises ONE line (TypeError for a wrong type, ValueError for a wrong value or shape)
that names the offending value and says what was expected, before the model changes. The
dict path is hot (River's loops call it once per instance), so plain dicts of plain numbers
take a single C-level pass (`_plain_values`) and only the rest goes through a Python loop.

The rules (the Notes of `HybridClassifier` state them for users):

- a feature value is a real number (int, float, bool, numpy's real scalars) with
  `|value| <= MAX_ABS`; NaN, inf and larger values are refused alike;
- a label is hashable; a label that does not equal itself (NaN of any float type, NaT,
  pandas' NA) or None means "unlabeled", as `pd.isna` says of it;
- a frame has one level of distinct column names; `y` goes with `X` by index.
"""

from __future__ import annotations

import decimal
import math
import numbers
import struct
import sys
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported by the mini-batch methods only (~0.5 s at import)
    import pandas as pd

#: Types whose values within `MAX_ABS` need no further look (`HybridClassifier._plain_values`).
PLAIN_NUMBERS = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})
#: The largest feature magnitude accepted. Scaled input always fits: River's MinMaxScaler
#: gives [0, 1], a z-score of one row among n is at most sqrt(n), so 1e6 covers streams of
#: 1e12 rows. Larger values tell the networks nothing (their units saturate far below),
#: float32 (the DHBM's `dtype` option) no longer holds them to the unit, and they are what
#: overflowed the updates (a squared 1e200, a plain SGD step grown without bound).
MAX_ABS = 1e6
_ROW_PACKERS: dict = {}


def short_repr(value, limit: int = 60) -> str:
    """`repr(value)` on one line, cut to `limit` characters: error messages stay one short line."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_dict(x) -> None:
    """TypeError unless `x` is a dict (River's instances are `{feature: value}` dicts)."""
    if not isinstance(x, dict):
        raise TypeError(
            f"Invalid x ({short_repr(x)}). Must be a dict of feature values, got {type(x).__name__}"
        )


def check_frame_type(X) -> None:
    """TypeError unless `X` is a pandas DataFrame (the mini-batch methods' input)."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        raise TypeError(
            f"Invalid X ({short_repr(X)}). Must be a pandas DataFrame, got {type(X).__name__}"
        )


def row_packer(d: int):
    """`pack_into(array, byte_offset, *values)` writing `d` float64 values into a C-contiguous
    float64 array: the cheapest way from a list of Python numbers into an existing row."""
    pack = _ROW_PACKERS.get(d)
    if pack is None:
        pack = _ROW_PACKERS[d] = struct.Struct(f"={d}d").pack_into
    return pack


def canonical_order(names) -> list:
    """Features in a fixed order whatever the dict order (natural order, else by repr)."""
    try:
        return sorted(names)
    except TypeError:
        return sorted(names, key=repr)


def as_label(y):
    """`y` as a class label, or None when it means "unlabeled" (`_is_missing_label`);
    TypeError unless it is hashable (it names a class in a dict)."""
    if y is None:
        return None
    try:
        hash(y)
    except TypeError:
        if isinstance(y, decimal.Decimal):  # a signalling NaN refuses to hash
            return None
        raise TypeError(f"Invalid label {short_repr(y)}: labels must be hashable") from None
    return None if _is_missing_label(y) else y


def _is_missing_label(y) -> bool:
    """Whether label `y` means "unlabeled": None, or a value that does not equal itself (NaN
    of any float type, NaT, pandas' NA, a Decimal NaN): such a value could never find its
    class again."""
    if y is None:
        return True
    try:
        return bool(y != y)
    except (TypeError, ValueError, ArithmeticError):
        # pandas' NA compares as NA and a signalling NaN refuses to compare: both are missing
        pd = sys.modules.get("pandas")
        if (pd is not None and y is pd.NA) or isinstance(y, decimal.Decimal):
            return True
        raise TypeError(
            f"Invalid label {short_repr(y)}: it cannot be compared with itself"
        ) from None


def check_flag(labeled) -> None:
    """TypeError unless `labeled` (of `learn_one`) is a bool (numpy's included)."""
    if not isinstance(labeled, (bool, np.bool_)):
        raise TypeError(f"Invalid labeled ({short_repr(labeled)}). Must be True or False")


def _as_matrix(X, name: str = "X") -> np.ndarray:
    """`X` as a C-contiguous float64 2-d array, or one line saying why it is not one (values
    are checked by `_check_finite`)."""
    try:
        if X is None or isinstance(X, (str, bytes, dict)):  # numpy would make NaN or fail oddly
            raise TypeError
        A = np.asarray(X)
    except (TypeError, ValueError):
        A = None
    # numpy would turn strings into numbers, drop imaginary parts, count days as numbers
    if A is None or A.dtype.kind not in "biufO":
        kind = type(X).__name__ if A is None else f"{type(X).__name__} of {A.dtype}"
        raise TypeError(
            f"Invalid {name} ({short_repr(X)}). Must be a 2-d array of numbers, got {kind}"
        )
    if A.ndim != 2:
        raise ValueError(f"Invalid {name}: must be 2-dimensional, got shape {A.shape}")
    if A.dtype.kind == "O":  # the slow way, naming the first value that is no real number
        return np.array(
            [[_check_value(j, v, i) for j, v in enumerate(row)] for i, row in enumerate(A)],
            dtype=np.float64,
        ).reshape(A.shape)
    return np.ascontiguousarray(A, dtype=np.float64)


def _check_value(name, value, row: int | None = None) -> float:
    """`value` as a float within `MAX_ABS`, or one line naming the feature and the value."""
    if isinstance(value, (numbers.Real, np.bool_)):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):  # an int or a fraction beyond float range
            number = math.inf
        if -MAX_ABS <= number <= MAX_ABS:
            return number
    raise _bad_value(name, value, row)


def _bad_value(name, value, row=None) -> Exception:
    """The one-line error for a feature value that is no real number within `MAX_ABS`."""
    where = "" if row is None else f" in row {row}"
    if not isinstance(value, (numbers.Real, np.bool_)):
        return TypeError(f"Feature {name!r} has non-numeric value {short_repr(value)}{where}")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # an int or a fraction beyond float range
        number = None
    kind = "non-finite" if number is not None and not math.isfinite(number) else "out-of-range"
    text = short_repr(value) if number is None else repr(number)
    return ValueError(
        f"Feature {name!r} has {kind} value {text}{where} "
        f"(features must be finite, |value| <= {MAX_ABS:g})"
    )


def dict_row(x: dict, features_index: dict) -> np.ndarray:
    """`x` as one row `[d]` in the order of `features_index`, for any dict: a Python loop
    that names the first bad value."""
    row = np.zeros(len(features_index))
    for name, value in x.items():
        # fast path for plain numbers (the ABC isinstance check costs ~1 us per feature); NaN
        # fails both comparisons
        if type(value) in PLAIN_NUMBERS and -MAX_ABS <= value <= MAX_ABS:
            value = float(value)
        else:
            value = _check_value(name, value)
        j = features_index.get(name)
        if j is not None:
            row[j] = value
    return row


def _frame_names(X: pd.DataFrame) -> list:
    """The frame's column names: one level, each once (they are feature names)."""
    import pandas as pd

    if isinstance(X.columns, pd.MultiIndex):
        raise TypeError(
            f"Invalid X: its columns are a MultiIndex (first {short_repr(X.columns.tolist()[0])}); "
            "feature names must be single keys"
        )
    names = X.columns.tolist()
    if len(set(names)) != len(names):  # as dict keys: 1, 1.0 and True are one name
        seen: set = set()
        twice = next(name for name in names if name in seen or seen.add(name))
        raise ValueError(f"Invalid X: column {short_repr(twice)} appears more than once")
    return names


def _frame_values(X: pd.DataFrame, names: list) -> np.ndarray:
    """All the frame's columns as checked float64 `[n, len(names)]`: real numbers only (a
    missing value of pandas' nullable dtypes reads as NaN, hence is refused)."""
    from pandas.api import types

    dtypes = X.dtypes.tolist()
    numeric = [
        types.is_bool_dtype(t) or (types.is_numeric_dtype(t) and not types.is_complex_dtype(t))
        for t in dtypes
    ]
    if all(numeric):  # the usual frame: one conversion
        nullable = any(not isinstance(t, np.dtype) for t in dtypes)
        V = X.to_numpy(dtype=np.float64, **({"na_value": np.nan} if nullable else {}))
    else:
        V = np.empty((len(X), len(names)))
        for p, (name, dtype) in enumerate(zip(names, dtypes)):
            column = X.iloc[:, p]
            if numeric[p]:
                V[:, p] = column.to_numpy(dtype=np.float64, na_value=np.nan)
            elif dtype == object:  # a Python loop naming the first value that is no number
                V[:, p] = [_check_value(name, v, i) for i, v in enumerate(column.tolist())]
            else:  # complex (numpy would drop the imaginary part), dates, strings, categories
                head = column.iloc[:1].tolist()
                first = f" (first value {short_repr(head[0])})" if head else ""
                raise TypeError(
                    f"Feature {name!r} has non-numeric dtype {dtype}{first}; features must be "
                    "real numbers"
                )
    _check_finite(V, names)
    return V


def check_frame(X: pd.DataFrame, features: list) -> np.ndarray:
    """The frame's `features` columns as checked C-contiguous float64 rows (missing ones 0).
    Every column is checked, unseen ones too (as every value of a dict)."""
    check_frame_type(X)
    names = _frame_names(X)
    V = _frame_values(X, names)
    if names == features:
        return np.ascontiguousarray(V)
    position = {name: p for p, name in enumerate(names)}
    pairs = [(j, position[name]) for j, name in enumerate(features) if name in position]
    rows = np.zeros((len(X), len(features)))
    if pairs:
        columns, positions = zip(*pairs)
        rows[:, list(columns)] = V[:, list(positions)]
    return rows


def frame_labels(X: pd.DataFrame, y) -> list:
    """The label of each row of `X` (None: unlabeled): `y` a Series goes with `X` by index
    (as pandas aligns), any other sequence by position."""
    import pandas as pd

    n = len(X)
    if (
        not hasattr(y, "__len__")
        or isinstance(y, (str, bytes, dict, pd.DataFrame))
        or (isinstance(y, np.ndarray) and y.ndim != 1)
    ):
        what = f"a DataFrame of shape {y.shape}" if isinstance(y, pd.DataFrame) else short_repr(y)
        raise TypeError(f"Invalid y ({what}). Must be a Series of {n} labels")
    if len(y) != n:
        raise ValueError(f"X has {n} rows but y has {len(y)} labels")
    if isinstance(y, pd.Series) and not y.index.equals(X.index):
        index = X.index
        if not (index.is_unique and y.index.is_unique and y.index.isin(index).all()):
            lost = index[~index.isin(y.index)].tolist()
            which = f"row {short_repr(lost[0])} of X has none" if lost else "duplicates"
            raise ValueError(f"Invalid y: its index does not match X's ({which})")
        y = y.reindex(index)
    return [as_label(v) for v in (y.tolist() if hasattr(y, "tolist") else y)]


def check_arrays(X: np.ndarray, features: list | None) -> tuple[np.ndarray, list]:
    """The array paths' input as C-contiguous float64 `[n, d]` with the model's `d` checked
    columns (features `0..d-1` before the first instance), and those feature names."""
    X = _as_matrix(X)
    features = features if features is not None else list(range(X.shape[1]))
    if X.shape[1] != len(features):
        raise ValueError(f"X has {X.shape[1]} columns, the model has {len(features)} features")
    _check_finite(X, features)
    return X, features


def check_learn_arrays(X, y, labeled, features: list | None) -> tuple[np.ndarray, list, list]:
    """`learn_arrays`' input checked: `X`, its feature names and the `(row, label)` pairs of
    the labeled rows (a missing label, `_is_missing_label`, leaves its row unlabeled)."""
    X, features = check_arrays(X, features)
    if y is None:
        raise TypeError(f"Invalid y (None). Must be an array of {len(X)} labels")
    y = np.asarray(y)
    if y.shape != (len(X),):
        raise ValueError(f"Invalid y: shape {y.shape}, expected ({len(X)},) (one per row)")
    if labeled is None:
        keep = np.ones(len(X), dtype=bool)
    else:
        keep = np.asarray(labeled)
        if keep.dtype != bool:  # np.asarray(..., bool) would take "no" for True
            raise TypeError(f"Invalid labeled: dtype {keep.dtype}, must be bool (one per row)")
        if keep.shape != (len(X),):
            raise ValueError(
                f"Invalid labeled: shape {keep.shape}, expected ({len(X)},) (one per row)"
            )
    if y.dtype.kind in "fc":
        keep = keep & ~np.isnan(y)
    elif y.dtype.kind in "mM":
        keep = keep & ~np.isnat(y)
    index = keep.nonzero()[0]
    if y.dtype == object:  # numbers and strings always hash: only objects need a look
        labels = [as_label(v) for v in y[index].tolist()]
        return X, features, [(i, v) for i, v in zip(index.tolist(), labels) if v is not None]
    return X, features, list(zip(index.tolist(), y[index].tolist()))


def _check_finite(X: np.ndarray, names) -> None:
    """One line naming the first value of `X` (columns named `names`) that is not finite or
    beyond `MAX_ABS`."""
    if X.size == 0 or (-MAX_ABS <= X.min() and X.max() <= MAX_ABS):  # a NaN fails both
        return
    i, j = np.argwhere(~(np.abs(X) <= MAX_ABS))[0]
    raise _bad_value(names[j], float(X[i, j]), int(i))
