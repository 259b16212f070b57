"""A light import: `import river_dhbm`, `import streams` and `python -m evaluation --help` load
neither the plotting, progress-bar and table libraries nor `scipy.stats` (River's metrics and
datasets bring it, and scikit-learn, for about a second)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEAVY = ("matplotlib", "tqdm", "pandas", "scipy.stats")


def _env() -> dict:
    # the worktree first, whatever an editable install points at
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], env=_env(), capture_output=True,
                          text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


@pytest.mark.parametrize("package", ["river_dhbm", "streams"])
def test_import_is_light(package):
    loaded = _modules_after(f"import {package}")
    assert package in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_streams_load_on_first_use():
    loaded = _modules_after(
        "import streams\n"
        "from river.datasets import base\n"
        "assert issubclass(streams.LED, base.SyntheticDataset)\n"
        "from streams import LabelMask, paper_stream\n"
        "assert next(iter(LabelMask(paper_stream('led', 1), label_ratio=0.5, seed=1)))"
    )
    assert {"streams.led", "streams.masking", "streams.presets"} <= loaded


def test_streams_names_are_all_there():
    import streams

    assert set(streams.__all__) <= set(dir(streams))
    assert all(getattr(streams, name).__name__ == name for name in streams.__all__)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        streams.Nope  # noqa: B018


def test_top_level_help_imports_no_subcommand():
    # `-X importtime` lists every module the process imported, on stderr
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "evaluation", "--help"],
                          env=_env(), capture_output=True, text=True, check=True)
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
              if line.startswith("import time:")}
    assert "evaluation.cli" in loaded and "usage: python -m evaluation" in done.stdout
    subcommands = {"evaluation.experiments.suite", "evaluation.offline.mnist.experiment"}
    assert not loaded & {*HEAVY, "river.metrics", *subcommands}, (
        sorted(loaded & {*HEAVY, "river.metrics", *subcommands}))
