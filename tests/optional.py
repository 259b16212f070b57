"""Skips for the optional dependencies and tools some tests need, and for nothing else.

A test skips when a package of an extra or a program is not installed. Anything that fails
once they are there (a JVM that does not start, an error of our own code) fails the test.
"""

from __future__ import annotations

import importlib.util
import shutil

import pytest


def missing(*modules: str) -> list[str]:
    """The modules among `modules` that are not installed (found without importing them)."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


#: MOA through capymoa: its package, JPype, and a `java` on the PATH.
_MOA_MISSING = missing("capymoa", "jpype") + (["java"] if shutil.which("java") is None else [])
needs_moa = pytest.mark.skipif(
    bool(_MOA_MISSING),
    reason=f"needs {', '.join(_MOA_MISSING)}: pip install 'river-dhbm[moa]' and Java 17 or later",
)
