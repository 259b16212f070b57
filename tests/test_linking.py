"""The inner kernels are compiled for linking only (`_kernels/linking.py`): no machine code or
module optimisation of their own, a cache entry to link, and not one prediction different."""

from __future__ import annotations

import json
import textwrap

import pytest
from fresh_process import run_fresh
from numba.core import config

from river_dhbm._kernels import build, linking

# In a fresh process: `DHBM()`'s first use through `learn_one` ("one"), and a fresh `DHBM()`
# through `learn_many` ("many"), whose kernels link the inner ones, from the cache when an
# earlier process left them there. Prints the predictions and which libraries are link-only.
_SCRIPT = textwrap.dedent(
    """
    import itertools, json, sys
    import pandas as pd
    import river_dhbm, streams
    from river_dhbm._kernels import build, linking, network, dhbm

    if sys.argv[1] == "numba":
        linking.uninstall()
    rows = list(itertools.islice(streams.LEDDrift(seed=1), 41))
    out = {}
    if "one" in sys.argv[2:]:
        model = river_dhbm.DHBM(seed=1)
        for x, y in rows:
            model.learn_one(x, y)
        out["one"] = repr(model.predict_proba_one(x))
    if "many" in sys.argv[2:]:
        model = river_dhbm.DHBM(seed=1)
        X, y = pd.DataFrame([x for x, _ in rows]), pd.Series([y for _, y in rows])
        model.learn_many(X, y)
        out["many"] = repr(model.predict_proba_many(X).to_numpy().tolist())

    def link_only(kernel):
        return [linking.is_link_only(c.library) for c in kernel.overloads.values()]

    out["inner"] = link_only(network.forward_net)
    out["entry"] = link_only(dhbm.dhbm_update_mf)
    out["active"] = build.LINK_ONLY and sys.argv[1] != "numba"
    print(json.dumps(out))
    """
)


def _run(cache, *args) -> dict:
    # every kernel compiled in that process, where it is looked at: the copy that compiles
    # ahead is off
    done = run_fresh(_SCRIPT, *args, cache=cache, RIVER_DHBM_COMPILE_AHEAD="0")
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(config.DISABLE_JIT or not build.LINK_ONLY,
                    reason="needs the JIT and the Numba internals linking replaces")
def test_inner_kernels_link_only_and_predict_the_same(tmp_path):
    """Three fresh processes: Numba's own compilation (the control: its inner kernels have
    machine code), the link-only one with an empty cache, and a third that loads the second's
    link-only entries before any kernel that calls them (the many-row path, new to that
    cache). All three predict the same to the last bit."""
    numba_own = _run(tmp_path / "numba", "numba", "one", "many")
    first = _run(tmp_path / "ours", "ours", "one")
    later = _run(tmp_path / "ours", "ours", "many")
    assert not numba_own["active"] and numba_own["inner"] and not any(numba_own["inner"])
    assert first["active"] and first["inner"] and all(first["inner"])
    assert first["entry"] and not any(first["entry"])  # an entry point: machine code
    assert later["inner"] and all(later["inner"])  # loaded from the first's entry: link-only
    assert first["one"] == numba_own["one"]
    assert later["many"] == numba_own["many"]
    entries = list((tmp_path / "ours").rglob("network.forward_net-*.nbc"))
    assert entries and all(linking.KIND.encode() in path.read_bytes() for path in entries)


def test_uninstall_restores_numba_and_install_is_idempotent():
    from numba.core import codegen, cpu

    was = linking._originals.copy()
    try:
        linking.install()
        linking.install()  # twice: still one layer over Numba's own
        replaced = codegen.JITCodeLibrary._finalize_final_module
        assert replaced is not codegen.CPUCodeLibrary._finalize_final_module
        linking.uninstall()
        assert "_finalize_final_module" not in codegen.JITCodeLibrary.__dict__
        assert "get_pointer_to_function" in codegen.JITCodeLibrary.__dict__
        assert cpu.CPUContext.get_executable.__name__ == "get_executable"
    finally:
        if was:
            linking.install()


@pytest.mark.skipif(config.DISABLE_JIT or not build.LINK_ONLY,
                    reason="needs the JIT and the Numba internals linking replaces")
def test_an_inner_kernel_asked_for_its_address_gets_machine_code(monkeypatch):
    """Link-only is lazy, not lost: asking an inner kernel's library for an address emits its
    machine code then. (The caller, which has an entry point, is compiled as Numba does.)"""
    from numba import njit

    monkeypatch.setattr(linking, "_PACKAGE", __name__)

    @njit(**build.INNER)
    def twice(x):
        return 2.0 * x

    @njit
    def caller(x):
        return twice(x) + 1.0

    assert caller(1.5) == 4.0
    inner = twice.overloads[twice.signatures[0]]
    entry = caller.overloads[caller.signatures[0]]
    assert linking.is_link_only(inner.library) and not linking.is_link_only(entry.library)
    assert inner.library.get_pointer_to_function(inner.fndesc.llvm_func_name) != 0
    assert not linking.is_link_only(inner.library)
    assert caller(2.0) == 5.0
