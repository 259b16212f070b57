"""The documentation builds without a warning: a broken docstring reference, a missing page
or a dead link fails here (`mkdocs build --strict`, as `pip install -e ".[docs]"` runs it)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytest.importorskip("mkdocs", reason="the docs extra is not installed")
pytest.importorskip("mkdocstrings", reason="the docs extra is not installed")


def test_docs_build_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    api = (tmp_path / "api" / "index.html").read_text()
    assert "learn_arrays" in api  # the reference is generated from the docstrings
    dhbm = (tmp_path / "models" / "dhbm" / "index.html").read_text()
    assert "hidden_sizes" in dhbm and "Notes" in dhbm
    assert (tmp_path / "img" / "figure3-paper.png").stat().st_size > 0
    tracks = (tmp_path / "tracks" / "index.html").read_text()  # the tables, included
    assert "ImageSegments" in tracks and "--8&lt;--" not in tracks


def test_readme_keeps_the_two_set_up_commands_first():
    # the README's first two code blocks are the main job and the tests, in that order
    text = (ROOT / "README.md").read_text()
    blocks = [b.split("\n", 1)[1] for b in text.split("```")[1::2]]
    assert blocks[0].strip() == "pip install -e . && python -m evaluation suite --quick --jobs 2"
    assert blocks[1].strip() == 'pip install -e ".[test]" && pytest'
    assert len(text.splitlines()) <= 150
