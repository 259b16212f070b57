"""Input checks at the door: a dict, a DataFrame or an array becomes validated float64 rows.

Every check raises ONE line (TypeError for a wrong type, ValueError for a wrong value or shape)
that names the offending value and says what was expected, before the model changes. The
dict path is hot (River's loops call it once per instance), so plain dicts of plain numbers
take a single C-level pass (`_plain_values`) and only the rest goes through a Python loop.
"""

from __future__ import annotations

import math
import numbers
import struct
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas is imported by the mini-batch methods only (~0.5 s at import)
    import pandas as pd

#: Types whose finite values need no further look (`HybridClassifier._plain_values`).
_PLAIN_NUMBERS = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})
_ROW_PACKERS: dict = {}


def _short(value, limit: int = 60) -> str:
    """`repr(value)` on one line, cut to `limit` characters: error messages stay one short line."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_dict(x) -> None:
    """TypeError unless `x` is a dict (River's instances are `{feature: value}` dicts)."""
    if not isinstance(x, dict):
        raise TypeError(
            f"Invalid x ({_short(x)}). Must be a dict of feature values, got {type(x).__name__}"
        )


def _check_frame_type(X) -> None:
    """TypeError unless `X` is a pandas DataFrame (the mini-batch methods' input)."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        raise TypeError(
            f"Invalid X ({_short(X)}). Must be a pandas DataFrame, got {type(X).__name__}"
        )


def _row_packer(d: int):
    """`pack_into(array, byte_offset, *values)` writing `d` float64 values into a C-contiguous
    float64 array: the cheapest way from a list of Python numbers into an existing row."""
    pack = _ROW_PACKERS.get(d)
    if pack is None:
        pack = _ROW_PACKERS[d] = struct.Struct(f"={d}d").pack_into
    return pack


def _canonical_order(names) -> list:
    """Features in a fixed order whatever the dict order (natural order, else by repr)."""
    try:
        return sorted(names)
    except TypeError:
        return sorted(names, key=repr)


def _check_label(y) -> None:
    try:
        hash(y)
    except TypeError:
        raise TypeError(f"Invalid label {_short(y)}: labels must be hashable") from None


def _is_missing_label(y) -> bool:
    return y is None or (isinstance(y, float) and math.isnan(y))


def _as_matrix(X, name: str = "X") -> np.ndarray:
    """`X` as a C-contiguous float64 2-d array, or one line saying why it is not one."""
    try:
        if X is None or isinstance(X, (str, bytes, dict)):  # numpy would make NaN or fail oddly
            raise TypeError
        A = np.ascontiguousarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"Invalid {name} ({_short(X)}). Must be a 2-d array of numbers, "
            f"got {type(X).__name__}"
        ) from None
    if A.ndim != 2:
        raise ValueError(f"Invalid {name}: must be 2-dimensional, got shape {A.shape}")
    return A


def _check_value(name, value) -> float:
    """`value` as a finite float, or one line naming the feature and the value."""
    if not isinstance(value, numbers.Real):
        raise TypeError(f"Feature {name!r} has non-numeric value {_short(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"Feature {name!r} has non-finite value {value}")
    return value


def _vector(x: dict, features_index: dict) -> np.ndarray:
    """`x` as one row `[d]` in the order of `features_index`, for any dict: a Python loop
    that names the first bad value."""
    row = np.zeros(len(features_index))
    for name, value in x.items():
        # fast path for plain numbers (the ABC isinstance check costs ~1 us per feature)
        if type(value) in _PLAIN_NUMBERS and value - value == 0.0:
            value = float(value)
        else:
            value = _check_value(name, value)
        j = features_index.get(name)
        if j is not None:
            row[j] = value
    return row


def _check_frame(X: pd.DataFrame, features: list) -> np.ndarray:
    """The frame's `features` columns as checked C-contiguous float64 rows (missing ones 0)."""
    import pandas as pd

    _check_frame_type(X)
    for name in X.columns:
        column = X[name]
        if not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)):
            bad = next((v for v in column if not isinstance(v, numbers.Real)), column.iloc[0])
            raise TypeError(f"Feature {name!r} has non-numeric value {_short(bad)}")
    values = X.reindex(columns=features, fill_value=0.0).to_numpy(dtype=np.float64)
    _check_finite(values, list(features))
    extra = [c for c in X.columns if c not in set(features)]
    if extra:
        _check_finite(X[extra].to_numpy(dtype=np.float64), extra)
    return np.ascontiguousarray(values)


def _check_arrays(X: np.ndarray, features: list | None) -> tuple[np.ndarray, list]:
    """The array paths' input as C-contiguous float64 `[n, d]` with the model's `d` finite
    columns (features `0..d-1` before the first instance), and those feature names."""
    X = _as_matrix(X)
    features = features if features is not None else list(range(X.shape[1]))
    if X.shape[1] != len(features):
        raise ValueError(f"X has {X.shape[1]} columns, the model has {len(features)} features")
    _check_finite(X, features)
    return X, features


def _check_learn_arrays(X, y, labeled, features: list | None) -> tuple[np.ndarray, list, list]:
    """`learn_arrays`' input checked: `X`, its feature names and the `(row, label)` pairs of
    the labeled rows."""
    X, features = _check_arrays(X, features)
    if y is None:
        raise TypeError(f"Invalid y (None). Must be an array of {len(X)} labels")
    y = np.asarray(y)
    if y.shape != (len(X),):
        raise ValueError(f"Invalid y: shape {y.shape}, expected ({len(X)},) (one per row)")
    keep = np.ones(len(X), dtype=bool) if labeled is None else np.asarray(labeled, dtype=bool)
    if keep.shape != (len(X),):
        raise ValueError(
            f"Invalid labeled: shape {keep.shape}, expected ({len(X)},) (one per row)"
        )
    if labeled is None:
        pairs = [(i, v) for i, v in enumerate(y.tolist()) if v is not None]
    else:
        index = keep.nonzero()[0]
        pairs = [(i, v) for i, v in zip(index.tolist(), y[index].tolist()) if v is not None]
    if y.dtype == object:  # numbers and strings always hash: only objects need a look
        for _, v in pairs:
            _check_label(v)
    return X, features, pairs


def _check_finite(X: np.ndarray, names) -> None:
    """ValueError naming the first non-finite value of `X` (columns named `names`)."""
    if math.isfinite(X.sum()):  # cheaper than isfinite(X).all(); a NaN or inf spoils the sum
        return
    finite = np.isfinite(X)
    if not finite.all():
        i, j = np.argwhere(~finite)[0]
        raise ValueError(f"Feature {names[j]!r} has non-finite value {X[i, j]} in row {i}")
