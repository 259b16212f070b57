"""The first use on a fresh install: say on stderr that Numba compiles, once, only when it must.

Each model's learning kernel is one Numba function that calls all the others, so whether it
was compiled into this source's cache directory (`build.cache_dir`, where a marker file is
left when it is) says whether the first update will compile (seconds) or load (a fraction of
a second). The figures quoted are the measured seconds from a fresh process to the first
prediction after 41 labeled rows with an empty cache (`python -m evaluation bench first_use`).
Only the learning kernel is looked at: the prediction kernels compile in about a second, and
`test_then_train_arrays`' run kernel (the DHBM's) compiles after the update kernel it shares
most of its code with.
"""

from __future__ import annotations

import importlib
import sys

from river_dhbm._kernels import build

__all__ = ["announce_compilation", "announce_compilations", "is_cache_cold"]

#: Model class name -> (its learning kernel "module:function", the seconds the notice quotes:
#: from a fresh process to its first prediction with an empty cache, the largest of the runs
#: quoted in docs/benchmarks.md, "The first use", rounded; that section names the command).
FIRST_KERNELS = {
    "DHBM": ("river_dhbm._kernels.dhbm:dhbm_update_mf", 11),
    "SBEN": ("river_dhbm._kernels.sben:sben_update_mf", 13),
    "DHDA": ("river_dhbm._kernels.dhda:dhda_update", 13),
    "HSDA": ("river_dhbm._kernels.hsda:hsda_update", 11),
    "PseudoLabelMLP": ("river_dhbm._kernels.mlp:mlp_update", 9),
}

#: The learning kernel of a model with `estimator="sap"` (those above are the mean-field ones,
#: which never compile the SAP negative phase).
SAP_KERNELS = {
    "DHBM": "river_dhbm._kernels.dhbm:dhbm_update_sap",
    "SBEN": "river_dhbm._kernels.sben:sben_update_sap",
}

_announced = False  # the notice is said at most once per process


def _kernel_of(model):
    """The learning kernel of `model`'s class (or of its nearest known base class), as
    `(dispatcher, seconds, "module:function")`."""
    for cls in type(model).__mro__:
        entry = FIRST_KERNELS.get(cls.__name__)
        if entry is not None:
            where, seconds = entry
            if getattr(model, "estimator", None) == "sap":
                where = SAP_KERNELS.get(cls.__name__, where)
            module, name = where.split(":")
            return getattr(importlib.import_module(module), name, None), seconds, where
    return None, 0, ""


def _marker(where: str):
    """The file saying that `where`'s kernel was compiled into this process's kernel cache
    directory (`build.kernels_dir`, named after the kernels' source: an edit starts a new one)."""
    return build.kernels_dir() / f"{where.replace(':', '.')}.compiled"


def is_cache_cold(where: str) -> bool:
    """Whether the learning kernel `where` ("module:function") has not been compiled yet for
    this source (and this choice of native or plain kernels)."""
    return not _marker(where).exists()


def _cold(model) -> tuple[int, str] | None:
    """`(seconds, "module:function")` of `model`'s learning kernel if it must compile, else
    None (an unknown model, the JIT disabled, or compiled before)."""
    kernel, seconds, where = _kernel_of(model)
    if kernel is None or not hasattr(kernel, "signatures") or not is_cache_cold(where):
        return None
    return seconds, where


def announce_compilations(models) -> None:
    """Say on stderr, in one line, which of `models` (fresh models, of any number of classes)
    will compile their kernels and about how long that takes in all: a runner that knows
    every model it will build says so before the first one compiles, so that the line
    covers them all. Says nothing when none must compile, or when a notice was said already.
    """
    global _announced
    cold: dict[str, tuple[str, int]] = {}  # kernel -> (the first model named, seconds)
    for model in models:
        found = _cold(model)
        if found is not None:
            cold.setdefault(found[1], (type(model).__name__, found[0]))
    if _announced or not cold:
        return
    _announced = True
    _say(list(dict.fromkeys(name for name, _ in cold.values())),
         sum(seconds for _, seconds in cold.values()))


def _say(names: list[str], seconds: int) -> None:
    what = f"{names[0]}'s kernels" if len(names) == 1 else f"the kernels of {', '.join(names)}"
    total = f"about {seconds} s" + (" in all" if len(names) > 1 else "")
    print(f"river_dhbm: compiling {what} for first use ({total}, cached afterwards)",
          file=sys.stderr)


def announce_compilation(model) -> bool:
    """Say on stderr, once per process, that `model`'s first update is about to compile its
    kernels (and how long that takes), unless `announce_compilations` named it already;
    remember that they are compiled. Whether they must be."""
    global _announced
    found = _cold(model)
    if found is None:
        return False
    seconds, where = found
    if not _announced:
        _announced = True
        _say([type(model).__name__], seconds)
    marker = _marker(where)
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:  # a read-only cache: the notice may come again, nothing else changes
        pass
    return True
