"""The first use: one line on stderr when (and only when) a model's kernels must compile."""

from __future__ import annotations

import json
import textwrap

import pytest
from fresh_process import run_fresh
from numba.core import config

import river_dhbm
from river_dhbm._kernels import first_use

# A stand-in model whose "learning kernel" is a tiny cached Numba function in its own module,
# run in fresh processes sharing one NUMBA_CACHE_DIR: the first compiles, the second loads.
_SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from river_dhbm._kernels import first_use

    first_use.FIRST_KERNELS["Tiny"] = ("tiny_kernel:add_one", 1)

    class Tiny:
        pass

    first_use.announce_compilation(Tiny())
    first_use.announce_compilation(Tiny())  # once per process
    first_use.FIRST_KERNELS["Other"] = ("tiny_kernel:add_two", 1)

    class Other:
        pass

    first_use.announce_compilation(Other())  # another cold kernel: still once per process
    import tiny_kernel
    assert tiny_kernel.add_one(1) == 2
    """
)


def _run(tmp_path, cache_dir):
    return run_fresh(_SCRIPT, tmp_path, cache=cache_dir).stderr


def test_notice_only_when_the_cache_is_cold(tmp_path):
    (tmp_path / "tiny_kernel.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef add_one(x):\n    return x + 1\n"
        "\n\n@njit(cache=True)\ndef add_two(x):\n    return x + 2\n"
    )
    cold = _run(tmp_path, tmp_path / "cache")
    assert cold.splitlines() == [
        "river_dhbm: compiling Tiny's kernels for first use (about 1 s, cached afterwards)"
    ]
    assert _run(tmp_path, tmp_path / "cache") == ""  # warm: not a word
    assert "compiling" in _run(tmp_path, tmp_path / "other-cache")  # another empty cache


@pytest.mark.skipif(config.DISABLE_JIT, reason="no dispatchers without the JIT")
def test_every_model_has_a_known_kernel():
    # a renamed kernel would silence the notice: each entry must resolve to a Numba dispatcher
    for name in first_use.FIRST_KERNELS:
        model = getattr(river_dhbm, name)()
        kernel, seconds, _ = first_use._kernel_of(model)
        assert hasattr(kernel, "signatures") and seconds > 0, name


def test_subclasses_use_their_parents_kernel():
    class MyDHBM(river_dhbm.DHBM):
        pass

    assert first_use._kernel_of(MyDHBM())[0] is first_use._kernel_of(river_dhbm.DHBM())[0]


def test_bench_first_use_table_and_errors(monkeypatch, capsys):
    from evaluation.bench import first_use as bench

    row = {"model": "DHBM", "cache": "empty", "to_first_prediction": 12.0, "cpu": 11.0,
           "to_first_loop_prediction": 1.5, "import": 0.3,
           "notice": "river_dhbm: compiling DHBM's kernels for first use"}
    table = bench.format_table([row, {**row, "cache": "warm", "notice": ""}]).splitlines()
    assert len(table) == 4 and all(line.count("|") == table[0].count("|") for line in table)
    assert "(nothing)" in table[-1]
    alone = {**row, "cache": "empty, no copy", "to_first_prediction": 14.5}
    monkeypatch.setattr(bench, "bench_first_use",
                        lambda models: [row, alone,
                                        {**row, "model": "DHDA", "to_first_prediction": 15.5}])
    assert bench.main(["DHBM"]) == 0
    out = capsys.readouterr().out
    assert "DHBM() 12.0 s (target <= 12 s: met)" in out
    assert "DHDA() 15.5 s (target <= 15 s: not met)" in out
    targets = next(line for line in out.splitlines() if line.startswith("first prediction"))
    assert "14.5" not in targets  # the peer without the copy has no target
    assert "the copy that compiles ahead saved: DHBM() 2.5 s" in out
    assert bench.main(["Nope"]) == 2


def _globals_after_pruning(pyfunc) -> set:
    """Names of the globals a Numba kernel still uses once Numba has inlined its `inline=
    "always"` callees and pruned its branches on constants: its untyped pipeline alone (no
    typing, no compiling)."""
    from numba.core import errors, ir, registry, types
    from numba.core.compiler import CompilerBase, DefaultPassBuilder, Flags

    class UntypedOnly(CompilerBase):
        def define_pipelines(self):
            return [DefaultPassBuilder.define_untyped_pipeline(self.state)]

    target = registry.cpu_target
    args = (types.undefined,) * pyfunc.__code__.co_argcount
    pipeline = UntypedOnly(target.typing_context, target.target_context, None, args, None,
                           Flags(), {})
    try:
        pipeline.compile_extra(pyfunc)
    except (errors.CompilerError, AttributeError):
        pass  # the untyped pipeline leaves no compiled result: "pipelines exhausted"
    return {inst.value.name for block in pipeline.state.func_ir.blocks.values()
            for inst in block.body
            if isinstance(inst, ir.Assign) and isinstance(inst.value, (ir.Global, ir.FreeVar))}


@pytest.mark.skipif(config.DISABLE_JIT, reason="no dispatchers without the JIT")
def test_mean_field_kernels_never_compile_the_sap_phase():
    # the default (MF) learning kernels of the DHBM and the SBEN leave `sap_sweep` out (about
    # a second of the first use); the SAP kernels keep it
    from river_dhbm._kernels import dhbm as dhbm_kernels
    from river_dhbm._kernels import sben

    for mf, sap in ((dhbm_kernels.dhbm_update_mf, dhbm_kernels.dhbm_update_sap),
                    (sben.sben_update_mf, sben.sben_update_sap)):
        assert "sap_sweep" not in _globals_after_pruning(mf.py_func)
        assert "sap_sweep" in _globals_after_pruning(sap.py_func)
    assert first_use._kernel_of(river_dhbm.DHBM())[0] is dhbm_kernels.dhbm_update_mf
    sap_dhbm = first_use._kernel_of(river_dhbm.DHBM(estimator="sap"))[0]
    assert sap_dhbm is dhbm_kernels.dhbm_update_sap
    assert first_use._kernel_of(river_dhbm.SBEN(estimator="sap"))[0] is sben.sben_update_sap


def test_compile_clock_gives_each_function_its_own_seconds():
    """A caller's own seconds exclude its callee's compilation, which is counted once under
    the callee's name (a negative control: the caller's total would include it)."""
    import time

    from numba import njit

    from evaluation.bench.first_use import CompileClock

    @njit
    def callee(x):
        return x * 2.0

    @njit
    def caller(x):
        return callee(x) + 1.0

    clock = CompileClock().register()
    try:
        start = time.perf_counter()
        assert caller(1.5) == 4.0
        took = time.perf_counter() - start
    finally:
        clock.unregister()
    rows = {name.rsplit(".", 1)[-1]: (count, seconds) for name, count, seconds in clock.kernels()}
    assert rows["caller"][0] == rows["callee"][0] == 1
    assert 0.0 < rows["caller"][1] and 0.0 < rows["callee"][1]
    assert rows["caller"][1] + rows["callee"][1] <= took  # the callee's time is not counted twice


def test_format_kernels_table():
    from evaluation.bench.first_use import format_kernels

    breakdown = {"model": "DHBM", "cpu": 10.0, "llvm": 6.0,
                 "kernels": [["a.update", 1, 4.0], ["a.gemm", 3, 1.0], ["a.borrow", 8, 0.5]]}
    lines = format_kernels(breakdown, top=2).splitlines()
    assert lines[0].startswith("DHBM(): 10.0 s of CPU") and "6.0 s of it in LLVM" in lines[0]
    assert "12 compilations of 3 functions" in lines[0]
    assert lines[4] == "| `a.update` | 1 | 4.00 | 40% |"
    assert lines[-1] == "| 1 others | 8 | 0.50 | 5% |"


_SCRIPT_MANY = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from river_dhbm._kernels import first_use

    first_use.FIRST_KERNELS["Tiny"] = ("tiny_kernel:add_one", 1)
    first_use.FIRST_KERNELS["Other"] = ("tiny_kernel:add_two", 2)

    class Tiny:
        pass

    class Other:
        pass

    first_use.announce_compilations([Tiny(), Other(), Tiny()])  # a runner's models, up front
    first_use.announce_compilation(Tiny())  # then each compiles: no second line
    first_use.announce_compilation(Other())
    """
)


def test_one_notice_names_every_model_a_runner_compiles(tmp_path):
    (tmp_path / "tiny_kernel.py").write_text(
        "from numba import njit\n\n@njit(cache=True)\ndef add_one(x):\n    return x + 1\n"
        "\n\n@njit(cache=True)\ndef add_two(x):\n    return x + 2\n"
    )
    def run():
        return run_fresh(_SCRIPT_MANY, tmp_path, cache=tmp_path / "cache").stderr

    assert run().splitlines() == [
        "river_dhbm: compiling the kernels of Tiny, Other for first use (about 3 s in all, "
        "cached afterwards)"
    ]
    assert run() == ""  # both compiled (the markers left): not a word


def test_the_behaviour_hash_announces_every_model_it_builds(monkeypatch):
    """`behaviour_hash` (run by every results-writing command) trains every model of the
    registry: its notice must name them all before the first compiles, not the first alone."""
    import numpy as np

    from evaluation.runs import files, registry

    seen, learnt = [], []
    monkeypatch.setattr(first_use, "announce_compilations",
                        lambda models: seen.extend(type(m).__name__ for m in models))
    monkeypatch.setattr(files, "_prequential",
                        lambda model, *rows: learnt.append(seen[:]) or np.zeros(1))
    files.behaviour_hash.__wrapped__()
    assert set(seen) == {class_name for class_name, _ in registry.MODELS.values()}
    assert learnt and all(names == seen for names in learnt)  # announced before any learnt


# The first use of `DHBM()` in a fresh process, then the kernels called or compiled so far: a
# dispatcher holds a signature once it has been called from Python, loaded or compiled.
_PAY_SCRIPT = textwrap.dedent(
    """
    import importlib, json, pkgutil
    import numpy as np, pandas as pd
    import river_dhbm, streams
    from river_dhbm import _kernels

    def loaded():
        names = []
        for info in pkgutil.iter_modules(_kernels.__path__):
            module = importlib.import_module(f"river_dhbm._kernels.{info.name}")
            for name, value in vars(module).items():
                # each kernel under the module that defines it, not under those importing it
                py_func = getattr(value, "py_func", None)
                if getattr(value, "signatures", None) and py_func.__module__ == module.__name__:
                    names.append(f"{info.name}.{name}")
        return sorted(set(names))

    model = river_dhbm.DHBM(seed=1)
    rows = []
    for i, (x, y) in enumerate(streams.LEDDrift(seed=1)):
        rows.append((x, y))
        model.learn_one(x, y)
        if i == 40:
            break
    model.predict_one(x)
    first = loaded()
    X = pd.DataFrame([x for x, _ in rows])
    model.learn_many(X, pd.Series([y for _, y in rows]))  # the many-row path: the control
    print(json.dumps([first, loaded()]))
    """
)


@pytest.mark.skipif(config.DISABLE_JIT, reason="no dispatchers without the JIT")
def test_the_first_prediction_compiles_only_what_its_path_uses():
    """`DHBM()`'s first use through River's `learn_one` and `predict_one` never calls the
    kernels of other paths or options (the many-row predictions and scoring, the SAP
    estimator, the fused run, the other models), nor compiles a Python entry point to a kernel
    that only its kernels call (`entries`): each would add seconds to a newcomer's wait. The
    control: `learn_many` afterwards does call the many-row kernels and the linear expert's
    predictions from Python."""
    done = run_fresh(_PAY_SCRIPT)
    first, after = json.loads(done.stdout.strip().splitlines()[-1])
    others = ("dhda.", "hsda.", "sben.", "mlp.")
    never = {"dhbm.dhbm_proba", "mixture.score_rows", "dhbm.dhbm_update_sap",
             "dhbm_phases.sap_sweep", "dhbm.dhbm_test_then_train", "dhbm_experts.dhbm_experts_run",
             "entries.dhbm_proba_row", "entries.linear_proba", "entries.mix_row",
             "entries.confident_labels"}
    assert {"dhbm.dhbm_update_mf", "mixture.hybrid_experts_row"} <= set(first)
    assert not never & set(first), never & set(first)
    assert not [name for name in first if name.startswith(others)]
    assert {"dhbm.dhbm_proba", "mixture.score_rows", "entries.linear_proba"} <= set(after)
