"""`gemm`: matrix products with accumulation, callable from Numba kernels.

`np.dot` inside Numba calls BLAS but always overwrites its output; the kernels accumulate
gradients (`C += A^T B`) and top-down terms (`C += A B^T`). The native product reaches the same
BLAS entry point as Numba's own `np.dot` (`numba_xxgemm`, SciPy's `dgemm`, or `sgemm` for
float32 operands) with the `alpha`, `beta` and transpose arguments exposed; the call goes
through a named symbol, not a raw address, so kernels using it stay cacheable on disk. That
symbol is not Numba's public API: without it (or with `RIVER_DHBM_PLAIN_KERNELS=1`) the plain
product `_gemm_plain` (`np.dot`, then the accumulation in a loop) is compiled instead
(`build.NATIVE`).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils, errors
from numba.extending import intrinsic, overload

from river_dhbm._kernels.build import INNER, NATIVE

_NO_TRANSPOSE, _TRANSPOSE = ord("n"), ord("t")


def _xgemm(letter: str, scalar):
    """The intrinsic calling `numba_xxgemm` for BLAS type `letter` ("d", "s") whose `alpha`
    and `beta` are `scalar` values (float64, float32), passed by reference from the stack."""

    @intrinsic
    def xgemm(typingctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        from numba.np.linalg import ensure_blas

        ensure_blas()  # imports scipy.linalg.cython_blas, which numba_xxgemm resolves from
        intp = types.intp
        sig = types.int32(types.uint8, types.uint8, intp, intp, intp, types.float64, intp, intp,
                          intp, intp, types.float64, intp, intp)

        def codegen(context, builder, signature, args):
            char = ir.IntType(8)
            intp = context.get_value_type(types.intp)
            ptr = char.as_pointer()
            fnty = ir.FunctionType(
                ir.IntType(32),
                [char, char, char, intp, intp, intp, ptr, ptr, intp, ptr, intp, ptr, ptr, intp],
            )
            fn = cgutils.get_or_insert_function(builder.module, fnty, "numba_xxgemm")
            ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc = args

            def p(v):
                return builder.inttoptr(v, ptr)

            def by_reference(value):
                if scalar is types.float32:
                    value = builder.fptrunc(value, context.get_value_type(types.float32))
                return builder.bitcast(cgutils.alloca_once_value(builder, value), ptr)

            kind = ir.Constant(char, ord(letter))
            return builder.call(
                fn,
                (kind, ta, tb, m, n, k, by_reference(alpha), p(a), lda, p(b), ldb,
                 by_reference(beta), p(c), ldc),
            )

        return sig, codegen

    return xgemm


#: Column-major (Fortran) `dgemm` / `sgemm` on raw addresses (`a`, `b`, `c`); `alpha` and
#: `beta` are float64 values (rounded to float32 for `sgemm`), passed by reference.
_dgemm = _xgemm("d", types.float64)
_sgemm = _xgemm("s", types.float32)


# Small helpers are inlined in Numba's IR: a call that passes an array costs an atomic
# reference-count increment and decrement per array, which for products of this size
# (about 20 x 24 x 24) is a noticeable part of the product itself.
@njit(cache=True, inline="always")
def _c_contiguous(A):
    return A.strides[1] == A.itemsize and A.strides[0] == A.itemsize * A.shape[1]


@njit(cache=True, inline="always")
def _call_dgemm(A, B, C, alpha, beta, trans_a, trans_b, k):
    """BLAS on C-contiguous operands that outlive the call. A row-major C is the column-major
    C^T = op(B)^T op(A)^T: the operands are swapped."""
    m, n = C.shape
    ta = np.uint8(_TRANSPOSE if trans_b else _NO_TRANSPOSE)
    tb = np.uint8(_TRANSPOSE if trans_a else _NO_TRANSPOSE)
    lb, la, lc = max(1, B.shape[1]), max(1, A.shape[1]), max(1, n)
    if C.itemsize == 4:  # the operands share C's dtype (checked when `gemm` is typed)
        status = _sgemm(ta, tb, n, m, k, float(alpha), B.ctypes.data, lb, A.ctypes.data, la,
                        float(beta), C.ctypes.data, lc)
    else:
        status = _dgemm(ta, tb, n, m, k, float(alpha), B.ctypes.data, lb, A.ctypes.data, la,
                        float(beta), C.ctypes.data, lc)
    if status != 0:
        raise RuntimeError("gemm: SciPy's BLAS gemm could not be called")


@njit(cache=True, **INNER)
def gemm(A, B, C, alpha, beta, trans_a, trans_b):
    """`C [m, n] = alpha * op(A) @ op(B) + beta * C` for 2-d arrays all float64 or all float32
    (`dgemm` or `sgemm`; mixed dtypes do not compile), `op(A)` being
    `A.T` when `trans_a` (likewise `B`). `C` must be C-contiguous; `A`, `B` are copied if not.
    With `beta == 0`, `C`'s old values are ignored (NaN included), as in BLAS. Kernels pass
    the flags as `bool(True)`, `bool(False)`: a literal flag is a compile-time constant to
    Numba, which would compile one `gemm` per combination."""
    m, n = C.shape
    k = A.shape[0] if trans_a else A.shape[1]
    if (A.shape[1] if trans_a else A.shape[0]) != m or (B.shape[0] if trans_b else B.shape[1]) != n:
        raise ValueError("gemm: operand shapes do not match the output")
    if (B.shape[1] if trans_b else B.shape[0]) != k:
        raise ValueError("gemm: inner dimensions differ")
    if m == 0 or n == 0:
        return
    if not _c_contiguous(C):
        raise ValueError("gemm: the output must be C-contiguous")
    if k == 0:  # BLAS rejects empty inner dimensions
        for r in range(m):
            for j in range(n):
                C[r, j] = 0.0 if beta == 0.0 else beta * C[r, j]
        return
    _product(A, B, C, alpha, beta, trans_a, trans_b, k)


def _product(A, B, C, alpha, beta, trans_a, trans_b, k):
    """`gemm`'s call into BLAS once the shapes are checked (compiled only: see below)."""
    raise NotImplementedError("_product runs inside Numba kernels only")


@overload(_product, jit_options={"cache": True})
def _product_for_layouts(A, B, C, alpha, beta, trans_a, trans_b, k):
    """Operands typed C-contiguous (every kernel's views are) go straight to BLAS; only other
    layouts compile the check and the copying path (`_gemm_copies`): a shorter first use."""
    if not (A.dtype == B.dtype == C.dtype) or C.dtype not in (types.float64, types.float32):
        raise errors.TypingError(f"gemm: operands must be all float64 or all float32, got "
                                 f"{A.dtype}, {B.dtype}, {C.dtype}")
    if not NATIVE:

        def plain(A, B, C, alpha, beta, trans_a, trans_b, k):
            _gemm_plain(A, B, C, alpha, beta, trans_a, trans_b)

        return plain
    if A.layout == "C" and B.layout == "C":

        def direct(A, B, C, alpha, beta, trans_a, trans_b, k):
            _call_dgemm(A, B, C, alpha, beta, trans_a, trans_b, k)

        return direct

    def checked(A, B, C, alpha, beta, trans_a, trans_b, k):
        if _c_contiguous(A) and _c_contiguous(B):  # the arguments outlive the call
            _call_dgemm(A, B, C, alpha, beta, trans_a, trans_b, k)
        else:
            _gemm_copies(A, B, C, alpha, beta, trans_a, trans_b, k)

    return checked


@njit(cache=True, **INNER)
def _gemm_copies(A, B, C, alpha, beta, trans_a, trans_b, k):
    """`gemm` with C-contiguous copies of `A` and `B`, kept alive until BLAS returns."""
    A2 = np.ascontiguousarray(A)
    B2 = np.ascontiguousarray(B)
    _call_dgemm(A2, B2, C, alpha, beta, trans_a, trans_b, k)
    _keep_alive(A2, B2)  # Numba frees arrays after their last use: not before the call


@njit(cache=True)
def _keep_alive(*arrays):
    pass


@njit(cache=True, **INNER)
def _gemm_plain(A, B, C, alpha, beta, trans_a, trans_b):
    """`gemm`'s product with Numba's public `np.dot` (which allocates the product), then
    `C = alpha * product + beta * C` in a loop; shapes are checked by `gemm`."""
    A = np.ascontiguousarray(A)
    B = np.ascontiguousarray(B)
    if trans_a:
        P = np.dot(A.T, B.T) if trans_b else np.dot(A.T, B)
    else:
        P = np.dot(A, B.T) if trans_b else np.dot(A, B)
    m, n = C.shape
    for r in range(m):
        for j in range(n):
            old = 0.0 if beta == 0.0 else beta * C[r, j]  # BLAS ignores C when beta is 0
            C[r, j] = alpha * P[r, j] + old
