"""`river_dhbm._kernels.blas.gemm` against numpy: every transpose, alpha/beta, edge shapes."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from river_dhbm._kernels.blas import gemm
from kernel_calls import from_python


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("alpha, beta", [(1.0, 0.0), (1.0, 1.0), (-2.5, 0.5)])
def test_matches_numpy(trans_a, trans_b, alpha, beta):
    rng = np.random.default_rng(0)
    m, k, n = 7, 5, 3
    A = rng.normal(size=(k, m) if trans_a else (m, k))
    B = rng.normal(size=(n, k) if trans_b else (k, n))
    C = rng.normal(size=(m, n))
    expected = alpha * (A.T if trans_a else A) @ (B.T if trans_b else B) + beta * C
    from_python(gemm)(A, B, C, alpha, beta, trans_a, trans_b)
    np.testing.assert_allclose(C, expected, rtol=1e-13, atol=1e-13)


def test_beta_zero_ignores_old_values():
    A, B = np.ones((2, 3)), np.ones((3, 4))
    C = np.full((2, 4), np.nan)
    from_python(gemm)(A, B, C, 1.0, 0.0, False, False)
    np.testing.assert_array_equal(C, np.full((2, 4), 3.0))


def test_empty_inner_dimension_scales_the_output():
    C = np.full((2, 3), 2.0)
    from_python(gemm)(np.zeros((2, 0)), np.zeros((0, 3)), C, 1.0, 0.5, False, False)
    np.testing.assert_array_equal(C, np.ones((2, 3)))
    from_python(gemm)(np.zeros((2, 0)), np.zeros((0, 3)), C, 1.0, 0.0, False, False)
    np.testing.assert_array_equal(C, np.zeros((2, 3)))


def test_empty_output_is_a_no_op():
    C = np.zeros((0, 3))
    from_python(gemm)(np.ones((0, 2)), np.ones((2, 3)), C, 1.0, 1.0, False, False)
    assert C.shape == (0, 3)


def test_non_contiguous_operands_are_copied():
    rng = np.random.default_rng(1)
    A = rng.normal(size=(6, 8))[:, ::2]  # strided view
    B = rng.normal(size=(4, 5))
    C = np.zeros((6, 5))
    from_python(gemm)(A, B, C, 1.0, 0.0, False, False)
    np.testing.assert_allclose(C, A @ B, rtol=1e-13)


def test_wrong_shapes_raise():
    with pytest.raises(ValueError, match="inner dimensions"):
        from_python(gemm)(
            np.ones((2, 3)), np.ones((4, 5)), np.zeros((2, 5)), 1.0, 0.0, False, False)
    with pytest.raises(ValueError, match="output"):
        from_python(gemm)(
            np.ones((2, 3)), np.ones((3, 5)), np.zeros((2, 4)), 1.0, 0.0, False, False)


def test_callable_from_a_kernel_on_wide_layers():
    @njit
    def accumulate(A, B, C):
        for _ in range(3):
            gemm(A, B, C, 1.0, 1.0, True, False)

    rng = np.random.default_rng(2)
    A, B = rng.random((10, 784)), rng.random((10, 784))
    C = np.zeros((784, 784))
    accumulate(A, B, C)
    np.testing.assert_allclose(C, 3 * A.T @ B, rtol=1e-12)


def test_every_kernel_passes_the_flags_as_runtime_values():
    """A literal `True`/`False` makes Numba compile one `gemm` per combination of flags (three
    in the DHBM's update, each a library typed, optimised and linked of its own: about half a
    second of a model's first use); `bool(...)` gives them all one signature."""
    import pathlib
    import re

    import river_dhbm._kernels as kernels

    calls = []
    for path in pathlib.Path(kernels.__file__).parent.glob("*.py"):
        text = re.sub(r"\s+", " ", path.read_text())
        for start in (m.end() for m in re.finditer(r"(?<!def )(?<![\w.])gemm\(", text)):
            depth, end = 1, start
            while depth:  # the call's own closing parenthesis
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            calls.append((path.name, text[start : end - 1]))
    assert len(calls) >= 10
    bare = [(name, call) for name, call in calls
            if not re.search(r"bool\((True|False)\), bool\((True|False)\)$", call)]
    assert not bare, bare
