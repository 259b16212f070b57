"""Single precision (`dtype="float32"`, the MNIST experiment's setting) and the wide networks'
update without the transposed mirror."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core.errors import TypingError

from river_dhbm import DHBM, DHDA
from river_dhbm._kernels import network as kernels
from river_dhbm._kernels.blas import gemm
from kernel_calls import from_python


@pytest.mark.parametrize("trans_a, trans_b", [(False, False), (True, False), (False, True)])
def test_gemm_in_single_precision(trans_a, trans_b):
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 7) if trans_a else (7, 5)).astype(np.float32)
    B = rng.normal(size=(3, 5) if trans_b else (5, 3)).astype(np.float32)
    C = rng.normal(size=(7, 3)).astype(np.float32)
    expected = -1.5 * (A.T if trans_a else A).astype(float) @ (B.T if trans_b else B) + 0.5 * C
    from_python(gemm)(A, B, C, -1.5, 0.5, trans_a, trans_b)
    assert C.dtype == np.float32
    np.testing.assert_allclose(C, expected, rtol=1e-5, atol=1e-5)


def test_gemm_refuses_mixed_precision():
    with pytest.raises(TypingError, match="all float64 or all float32"):
        from_python(gemm)(
            np.ones((2, 2), np.float32), np.ones((2, 2)), np.zeros((2, 2)), 1.0, 0.0, False,
            False)


def _stream(n=400, d=12, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = (rng.random((n, d)) < 0.2 + 0.2 * (np.arange(d) % 3 == y[:, None])).astype(float)
    return X, y, rng.random(n) < 0.5


@pytest.mark.parametrize("model", [
    DHBM.paper(hidden_sizes=(8, 8), seed=1),
    DHBM.paper(hidden_sizes=(8, 8), estimator="sap", seed=1),
    DHBM(hidden_sizes=(8,), seed=1),
    DHDA.paper(hidden_sizes=(8, 8), seed=1),
    DHDA(hidden_sizes=(8,), seed=1),
], ids=["dhbm-paper", "dhbm-sap", "dhbm", "dhda-paper", "dhda"])
def test_single_precision_follows_double(model):
    X, y, labeled = _stream()
    single = model.clone({"dtype": "float32"})
    for m in (model, single):
        m.learn_arrays(X, y, labeled)
    assert single._theta.dtype == np.float32 and model._theta.dtype == np.float64
    assert single.n_updates == model.n_updates == 20
    P64, P32 = model.predict_proba_arrays(X), single.predict_proba_arrays(X)
    assert P32.dtype == np.float64
    # Adam (the defaults) scales every step to about its size, so where a gradient is only
    # rounding noise the two precisions step apart; plain gradient steps follow closely
    atol = 1e-2 if getattr(model, "optimizer", "sgd") == "adam" else 2e-3
    np.testing.assert_allclose(P32, P64, atol=atol)
    assert single.predict_proba_one(dict(enumerate(X[0]))).keys() == {0, 1, 2}


def test_wide_networks_skip_the_mirror_with_the_same_result(monkeypatch):
    X, y, labeled = _stream(n=60, d=kernels.MIRROR_MAX_WIDTH + 1)
    wide = DHBM.paper(hidden_sizes=(20, 20), seed=3)
    wide.learn_arrays(X, y, labeled)
    assert wide._work["mirror"].size == 0
    monkeypatch.setattr(kernels, "MIRROR_MAX_WIDTH", 10**6)
    mirrored = DHBM.paper(hidden_sizes=(20, 20), seed=3)
    mirrored.learn_arrays(X, y, labeled)
    assert mirrored._work["mirror"].size == mirrored._theta.size
    # the same products, through BLAS calls on a transposed view or on the mirror: OpenBLAS
    # may block the two differently and round the last bit apart (5e-17 on some processors)
    np.testing.assert_allclose(wide._theta, mirrored._theta, rtol=1e-12, atol=1e-15)


def test_invalid_dtype_fails_in_init():
    for cls in (DHBM, DHDA):
        with pytest.raises(ValueError, match="dtype"):
            cls(dtype="float16")



def test_single_precision_test_then_train_runs_in_one_call_too():
    # the defaults' fused prequential run (label memory, proxy labels) in single precision
    X, y, labeled = _stream()
    double, single = DHBM(hidden_sizes=(8,), seed=2), DHBM(hidden_sizes=(8,), seed=2,
                                                            dtype="float32")
    p64 = double.test_then_train_arrays(X, y, labeled)
    p32 = single.test_then_train_arrays(X, y, labeled)
    assert single._theta.dtype == np.float32 and (p32 == p64).mean() > 0.95
