"""A script run as a new user's would be: in a fresh Python process, with Numba's JIT on and
this checkout first on the path, given an empty Numba cache or the usual one."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def run_fresh(script: str, *args, cache=None, **settings: str) -> subprocess.CompletedProcess:
    """Run `python -c script *args` with `NUMBA_CACHE_DIR=cache` (when given) and `settings` in
    its environment; fails the test when the process does. Its stdout and stderr as text."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    env.update(settings)
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env,
                          capture_output=True, text=True, check=True)
