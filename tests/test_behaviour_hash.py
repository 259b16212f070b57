"""The behaviour hash that results record (`evaluation.runs.files.behaviour_hash`): the same
for the same behaviour, in one process and across processes; changed by a change of what a
model does or of a default; unchanged by a rewording or a renamed variable, which change the
sources' hash. Each hash takes a few seconds with a warm Numba cache."""

from __future__ import annotations

import inspect
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

from evaluation.runs import files
from river_dhbm._kernels import parameters

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def today():
    files.behaviour_hash.cache_clear()
    return files.behaviour_hash()


@pytest.fixture
def recompute():
    """`behaviour_hash` computed afresh (the cache cleared), and cleared again after the test,
    so that no hash of patched code outlives it."""
    files.behaviour_hash.cache_clear()
    yield lambda: (files.behaviour_hash.cache_clear(), files.behaviour_hash())[1]
    files.behaviour_hash.cache_clear()


def test_the_same_in_one_process_and_across_processes(today, recompute):
    assert len(today) == 16 and int(today, 16) >= 0
    assert recompute() == today
    code = "from evaluation.runs.files import behaviour_hash; print(behaviour_hash())"
    runs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True) for _ in range(2)]
    assert [run.communicate(timeout=600)[0].strip() for run in runs] == [today, today]


def test_a_changed_learning_rule_changes_it(today, recompute, monkeypatch):
    monkeypatch.setattr(parameters, "INIT_SCALE", parameters.INIT_SCALE * 1.5)
    assert recompute() != today


def test_a_changed_default_changes_it(today, recompute, monkeypatch):
    from river_dhbm import DHDA

    names = list(inspect.signature(DHDA).parameters)
    defaults = list(DHDA.__init__.__defaults__)
    at = names.index("learning_rate") - (len(names) - len(defaults))
    defaults[at] *= 2
    monkeypatch.setattr(DHDA.__init__, "__defaults__", tuple(defaults))
    assert inspect.signature(DHDA).parameters["learning_rate"].default == 0.006
    assert recompute() != today


def _patch_init_weights(monkeypatch, edit) -> str:
    """Put `parameters.init_weights` rewritten by `edit` (its source text) in its place and
    return the new source."""
    source = textwrap.dedent(inspect.getsource(parameters.init_weights))
    edited = edit(source)
    assert edited != source
    namespace = dict(vars(parameters))
    exec(compile(edited, parameters.__file__, "exec"), namespace)  # noqa: S102 (our own edit)
    monkeypatch.setattr(parameters, "init_weights", namespace["init_weights"])
    return edited


def _rename(source: str) -> str:
    return source.replace("bound", "limit").replace("Glorot-uniform", "Uniform (Glorot's)")


def test_a_reworded_docstring_and_a_renamed_variable_leave_it(today, recompute, monkeypatch,
                                                              tmp_path):
    # The same edit made to a copy of the packages changes the sources' hash...
    for package in files.SOURCE_PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    assert files.sources_hash(tmp_path) == files.sources_hash()
    copy = tmp_path / "river_dhbm" / "_kernels" / "parameters.py"
    source = textwrap.dedent(inspect.getsource(parameters.init_weights))
    copy.write_text(copy.read_text().replace(source, _rename(source)))
    assert files.sources_hash(tmp_path) != files.sources_hash()
    # ... and not the behaviour's
    _patch_init_weights(monkeypatch, _rename)
    assert recompute() == today


def test_the_patched_function_is_the_one_the_models_use(today, recompute, monkeypatch):
    # the control of the test above: the same patch with a changed bound changes the hash
    _patch_init_weights(monkeypatch, lambda s: _rename(s).replace("6.0 /", "5.0 /"))
    assert recompute() != today


def test_results_of_todays_sources_get_todays_behaviour(today, tmp_path):
    import json

    records = {"today": {"k": 1, "sources": files.sources_hash()},
               "older": {"k": 2, "sources": "0123456789abcdef"},
               "recorded": {"k": 3, "sources": files.sources_hash(), "behaviour": "fedcba"},
               "nested/today": {"k": 4, "sources": files.sources_hash()}}
    for name, record in records.items():
        (tmp_path / name).mkdir(parents=True)
        (tmp_path / name / "settings.json").write_text(json.dumps(record))
    assert files.record_behaviour(tmp_path) == [tmp_path / "nested" / "today", tmp_path / "today"]
    for name, record in records.items():
        expected = record | ({"behaviour": today} if name.endswith("today") else {})
        assert json.loads((tmp_path / name / "settings.json").read_text()) == expected
    assert files.record_behaviour(tmp_path) == []  # once only


def test_every_committed_result_of_todays_sources_records_its_behaviour():
    # else run `files.record_behaviour()` (after a merge that brings such results)
    import json

    today = files.sources_hash()
    records = {str(path.parent): json.loads(path.read_text())
               for path in files.RESULTS.rglob("settings.json")}
    assert records
    assert [name for name, record in records.items()
            if record.get("sources") == today and "behaviour" not in record] == []
