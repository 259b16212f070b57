"""Calling the kernels that only other kernels call (compiled without a Python entry point,
`build.INNER`, or inlined into their one caller) from a test: through a compiled trampoline,
so the test runs the compiled code."""

from __future__ import annotations

import functools

from numba import njit


@functools.cache
def from_python(kernel):
    """`kernel` (a Numba dispatcher) callable from Python."""
    if kernel.targetoptions.get("inline") == "always":
        return kernel  # compiled with its Python entry point when called from Python
    namespace = {"kernel": kernel}  # a global of the trampoline: Numba inlines globals only
    exec("def call(*args):\n    return kernel(*args)\n", namespace)
    return njit(namespace["call"])
