"""The first use on a fresh install: say on stderr that Numba compiles, once, only when it must.

Each model's learning kernel is one Numba function that calls all the others, so whether its
on-disk cache holds a compiled version for this source says whether the first update will
compile (seconds) or load (a fraction of a second). The figures quoted are the measured CPU
time to the first prediction after one update with an empty cache
(`python -m evaluation bench first_use`). Only the learning kernel is looked at: the
prediction kernels compile in about a second, and `test_then_train_arrays`' run kernel (the
DHBM's) compiles after the update kernel it shares most of its code with.
"""

from __future__ import annotations

import importlib
import sys
import types as _pytypes

__all__ = ["announce_compilation", "compile_without_literals", "is_cache_cold"]

#: Model class name -> (its learning kernel "module:function", seconds to compile it here).
FIRST_KERNELS = {
    "DHBM": ("river_dhbm.dhbm_kernels:dhbm_update_mf", 9),
    "SBEN": ("river_dhbm.sben:sben_update_mf", 10),
    "DHDA": ("river_dhbm.dhda_kernels:dhda_update", 10),
    "HSDA": ("river_dhbm.hsda_kernels:hsda_update", 9),
    "PseudoLabelMLP": ("river_dhbm.mlp_kernels:mlp_update", 5),
}

#: The learning kernel of a model with `estimator="sap"` (those above are the mean-field ones,
#: which never compile the SAP negative phase).
SAP_KERNELS = {
    "DHBM": "river_dhbm.dhbm_kernels:dhbm_update",
    "SBEN": "river_dhbm.sben:sben_update",
}

_announced: set = set()  # kernels already announced (or found warm) in this process


def _kernel_of(model):
    """The learning kernel of `model`'s class (or of its nearest known base class)."""
    for cls in type(model).__mro__:
        entry = FIRST_KERNELS.get(cls.__name__)
        if entry is not None:
            where, seconds = entry
            if getattr(model, "estimator", None) == "sap":
                where = SAP_KERNELS.get(cls.__name__, where)
            module, name = where.split(":")
            return getattr(importlib.import_module(module), name, None), seconds
    return None, 0


def is_cache_cold(kernel) -> bool:
    """Whether calling `kernel` (a Numba dispatcher) will compile: nothing compiled in this
    process and no on-disk cache entry matching its current source."""
    if getattr(kernel, "signatures", None):
        return False  # already compiled or loaded in this process
    cache = getattr(kernel, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if cache_file is None:  # NUMBA_DISABLE_JIT, or a Numba without this layout: stay quiet
        return False
    try:
        return not cache_file._load_index()  # empty when missing or stale (source changed)
    except Exception:
        return False


def announce_compilation(model) -> None:
    """Print one line on stderr when `model`'s first update is about to compile its kernels."""
    kernel, seconds = _kernel_of(model)
    if kernel is None or kernel in _announced:
        return
    _announced.add(kernel)
    if is_cache_cold(kernel):
        print(
            f"river_dhbm: compiling {type(model).__name__}'s kernels for first use "
            f"(about {seconds} s, cached afterwards)",
            file=sys.stderr,
        )


def compile_without_literals(*modules) -> int:
    """Make the Numba kernels of `modules` compile ONE version per argument types, whatever
    constants their callers pass; returns how many kernels it changed.

    Numba types a constant argument of a call between jitted functions as a literal
    (`Literal[int](0)`, `Literal[bool](True)`) and compiles the callee once per distinct
    constant: `blas.gemm` three times (for its transpose flags), `kernels.borrow` seven. The
    callees are inlined into the update kernel and LLVM folds the constants there anyway, so
    the extra versions only cost compile time (about 10 % of a model's first use). Kernels
    loaded from the cache are not affected.
    """
    from numba.core import types
    from numba.core.registry import CPUDispatcher

    def unliteral(args):
        return tuple(types.unliteral(a) for a in args)

    changed = 0
    for module in modules:
        for kernel in vars(module).values():
            if not isinstance(kernel, CPUDispatcher) or kernel.__module__ != module.__name__:
                continue
            if getattr(kernel, "_river_dhbm_unliteral", False):
                continue
            template = type(kernel).get_call_template

            def get_call_template(self, args, kws, template=template):
                return template(self, unliteral(args), dict(zip(kws, unliteral(kws.values()))))

            kernel.get_call_template = _pytypes.MethodType(get_call_template, kernel)
            kernel._river_dhbm_unliteral = True
            changed += 1
    return changed
