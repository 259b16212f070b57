"""The kernels' native code (BLAS through Numba's `numba_xxgemm`, unreferenced views) and its
plain fallback (`np.dot`, slices) compute the same models; an edited kernel never runs stale."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba.core import config

import river_dhbm
from river_dhbm._kernels import blas, build
from kernel_calls import from_python

pytestmark = pytest.mark.skipif(config.DISABLE_JIT, reason="compiled kernels only")

# the same models, trained and asked the same, in this process and in one with plain kernels
_SCRIPT = textwrap.dedent(
    """
    import json
    import numpy as np
    import river_dhbm
    from river_dhbm._kernels import build

    rng = np.random.default_rng(0)
    X = rng.random((120, 7))
    y = (X[:, 0] + X[:, 1] > 1).astype(int) + (X[:, 2] > 0.5)
    out = {"native": build.NATIVE}
    for name in ("DHBM", "DHDA"):
        model = getattr(river_dhbm, name)(seed=1)
        model.learn_arrays(X[:100], y[:100], labeled=np.arange(100) % 3 == 0)
        out[name] = model.predict_proba_arrays(X[100:]).tolist()
    print(json.dumps(out))
    """
)


def _run(plain: bool) -> dict:
    env = {**os.environ, "RIVER_DHBM_PLAIN_KERNELS": "1" if plain else "0"}
    root = os.path.dirname(os.path.dirname(river_dhbm.__file__))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not build.NATIVE, reason="this Numba has no numba_xxgemm: plain only")
def test_plain_kernels_learn_the_same_models():
    native, plain = _run(plain=False), _run(plain=True)
    assert native["native"] and not plain["native"]
    for name in ("DHBM", "DHDA"):
        P, Q = np.array(native[name]), np.array(plain[name])
        assert P.shape == (20, 3)
        np.testing.assert_allclose(P, Q, rtol=0, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_plain_product_matches_numpy(dtype, trans_a, trans_b):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((4, 5) if trans_a else (5, 4)).astype(dtype)
    B = rng.standard_normal((3, 4) if trans_b else (4, 3)).astype(dtype)
    C = rng.standard_normal((5, 3)).astype(dtype)
    want = 0.5 * (A.T if trans_a else A) @ (B.T if trans_b else B) + 2.0 * C
    from_python(blas._gemm_plain)(A, B, C, 0.5, 2.0, trans_a, trans_b)
    np.testing.assert_allclose(C, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    D = np.full((5, 3), np.nan, dtype)  # beta 0: the old values are ignored, NaN included
    from_python(blas._gemm_plain)(A, B, D, 1.0, 0.0, trans_a, trans_b)
    np.testing.assert_allclose(D, (A.T if trans_a else A) @ (B.T if trans_b else B),
                               rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_an_edited_kernel_gets_a_fresh_cache(tmp_path, monkeypatch):
    # Numba's cache notices an edit of a kernel's own file only; the directory named after
    # every kernel module's source notices an edit of a module it inlines from
    copy = tmp_path / "_kernels"
    shutil.copytree(build._HERE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(build, "_HERE", copy)
    before = build.cache_dir()
    assert build.cache_dir() == before  # a pure function of the sources
    network = copy / "network.py"
    network.write_text(network.read_text() + "\n# edited\n")
    assert build.cache_dir() != before
    monkeypatch.setattr(build, "NATIVE", not build.NATIVE)  # the other code: another cache too
    network.write_text(network.read_text().replace("\n# edited\n", ""))
    assert build.cache_dir() != before
