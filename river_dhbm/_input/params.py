"""Hyper-parameter checks shared by every model's `__init__`, in River's wording.

`Invalid <name> (<value>). Valid range is ...` for real numbers, `Invalid <name> (<value>).
Must be ...` otherwise: one line that names the value and says what was expected.
"""

from __future__ import annotations

import math
import numbers

#: The values of `pseudo_label` (how an unlabeled row's prediction becomes its target).
PSEUDO_LABELS = ("soft", "hard")
#: The values of the autoencoders' `loss` (reconstruction: cross-entropy or squared error).
LOSSES = ("ce", "mse")

__all__ = [
    "LOSSES",
    "PSEUDO_LABELS",
    "check_beta_schedule",
    "check_bool",
    "check_choice",
    "check_hidden_sizes",
    "check_int",
    "check_non_negative",
    "check_positive",
    "check_probability",
    "check_range",
    "check_seed",
]


def _is_real(value) -> bool:
    return (
        isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    )


def check_range(name: str, value, low=None, high=None, low_open=False, high_open=False):
    """ValueError naming `value` unless it is a finite real number in the interval given
    (`None`: unbounded on that side; `*_open`: the bound itself is excluded)."""
    ok = _is_real(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        left = "(" if low is None or low_open else "["
        right = ")" if high is None or high_open else "]"
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        raise ValueError(f"Invalid {name} ({value!r}). Valid range is {left}{lo}, {hi}{right}")


def check_positive(name: str, value) -> None:
    """A finite real number > 0 (e.g. a learning rate)."""
    check_range(name, value, low=0, low_open=True)


def check_non_negative(name: str, value) -> None:
    """A finite real number >= 0 (e.g. a loss weight)."""
    check_range(name, value, low=0)


def check_probability(name: str, value) -> None:
    """A probability in [0, 1) (dropout, corruption: 1 would drop everything)."""
    check_range(name, value, low=0, high=1, high_open=True)


def check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"Invalid {name} ({value!r}). Must be an int >= {low}")


def check_bool(name: str, value) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"Invalid {name} ({value!r}). Must be True or False")


def check_choice(name: str, value, legal) -> None:
    if not isinstance(value, str) or value not in legal:
        options = ", ".join(repr(v) for v in legal)
        raise ValueError(f"Invalid {name} ({value!r}). Must be one of {options}")


def check_hidden_sizes(hidden_sizes) -> None:
    if (
        not isinstance(hidden_sizes, (tuple, list))
        or len(hidden_sizes) == 0
        or not all(
            isinstance(h, numbers.Integral) and not isinstance(h, bool) and h >= 1
            for h in hidden_sizes
        )
    ):
        raise ValueError(
            f"Invalid hidden_sizes ({hidden_sizes!r}). Must be a non-empty tuple of ints >= 1"
        )


def check_beta_schedule(schedule) -> None:
    if schedule is None:
        return
    if (
        not isinstance(schedule, (tuple, list))
        or len(schedule) != 2
        or not all(_is_real(t) for t in schedule)
        or not 0 <= schedule[0] < schedule[1]
    ):
        raise ValueError(
            f"Invalid beta_schedule ({schedule!r}). Must be None or a tuple (T1, T2) with "
            "0 <= T1 < T2 < inf"
        )


def check_seed(seed) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise ValueError(f"Invalid seed ({seed!r}). Must be an int or None")
