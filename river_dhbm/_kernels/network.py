"""Numba kernels shared by the models: the flat parameter layout's conventions, views into it,
activations, the bottom-up (recognition / encoder) network and the joint predictor.

Conventions used by every function here:

- `sizes` int64 `[L + 1]` holds `(D, H_1, ..., H_L)`; layer index `l = 0..L-1` in code is the
  paper's layer `l + 1`.
- All parameters live in ONE flat float64 buffer `theta`, addressed by the int64 table
  `off = parameters.param_layout(sizes, n_classes)` of shape `[L + 1, 5]`: for `l < L`,
  `off[l, COL_W]` is the start of `W^l` stored `[H_{l-1}, H_l]` (fan-in by fan-out, so the
  bottom-up product is `v^{l-1} @ W^l`), `COL_B` the hidden bias `b^l [H_l]`, `COL_U` the
  label weights `U^l [H_l, C]`, `COL_R` the recognition weights `R^l [H_{l-1}, H_l]`, `COL_RB`
  the recognition bias `r^l [H_l]`; the last row holds the visible bias `c [D]` at
  `off[L, 0]`, the class bias `d [C]` at `off[L, 1]`, and the buffer length at `off[L, 2]`.
  A gradient buffer has the same layout.
- Activities of all hidden layers of an `n`-row batch live in one flat buffer `act`: layer
  `l` is the C-contiguous block `act[n * hcum[l] : n * hcum[l + 1]]` viewed `[n, H_l]`,
  with `hcum = parameters.hidden_offsets(sizes)`. Dropout masks (`mask`), targets of the KL
  (`mu`) and back-propagated deltas (`delta`) share that layout; an empty `mask` means no
  dropout.
- `kind` selects the latent non-linearity: `SIGMOID` (0), `RELU` (1, the MLP's "relu") or
  `BOUNDED_RELU` (2, `min(max(z, 0), 1)`, the "relu" of the hybrid models).
- The kernels are cached on disk in a directory named after every kernel module's source
  (`build.cache_dir`): an edit here recompiles the kernels that inline what changed.
- Gradients are of a LOSS (to be descended) and are ACCUMULATED (`+=`) into `grad`.
"""

from __future__ import annotations

import numpy as np
from numba import carray, njit, types
from numba.core import errors
from numba.extending import intrinsic

from river_dhbm._kernels.blas import gemm
from river_dhbm._kernels.build import INNER, JIT, NATIVE

#: The models' `dtype` options: the precision of the parameters and every kernel's arrays
#: (each kernel follows the dtype of its arrays; `blas.gemm` calls `dgemm` or `sgemm`).
DTYPES = ("float64", "float32")

SIGMOID = 0
RELU = 1
BOUNDED_RELU = 2
#: Hidden units of the feed-forward network (`PseudoLabelMLP`): the plain rectifier.
ACTIVATIONS = {"sigmoid": SIGMOID, "relu": RELU}
#: Hidden units of the hybrid models (DHBM, SBEN, DHDA, HSDA): their "relu" is bounded to
#: [0, 1] (see `activate`), because their undirected/coupled layers feed activities back.
HYBRID_ACTIVATIONS = {"sigmoid": SIGMOID, "relu": BOUNDED_RELU}

COL_W, COL_B, COL_U, COL_R, COL_RB = 0, 1, 2, 3, 4

#: Widest layer (input included) up to which an update builds the weights' transposed mirror
#: (`transpose_weights`): it pays for the streams' small products; at MNIST's 784 BLAS's own
#: transposed path is as fast, and rebuilding the mirror is pure cost (docs/benchmarks.md).
MIRROR_MAX_WIDTH = 255


# --------------------------------------------------------------------------- views


@intrinsic
def _address(typingctx, arr, start):
    """Typed pointer to element `start` of a contiguous array's data (no bounds check)."""
    if not isinstance(arr, types.Array) or arr.layout != "C" or not arr.mutable:
        raise errors.TypingError(f"borrow needs a writable C-contiguous array, got {arr}")
    sig = types.CPointer(arr.dtype)(arr, start)

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        return builder.gep(data, [args[1]])

    return sig, codegen


if NATIVE:

    @njit(**JIT, **INNER)
    def borrow(a, start, shape):
        """C-contiguous view `shape` of the contiguous `a` from element `start` on, WITHOUT a
        reference to `a`'s memory: valid only while `a` is alive, so it must never leave the
        kernel that made it. Why: a slice shares `a`'s reference count, and every slice,
        reshape and argument passing of it costs atomic increments and decrements plus a
        reshape call, which for the ~100 views of a mini-batch update cost more than a tenth
        of it. The caller guarantees `start + prod(shape) <= a.size` (the layouts do)."""
        return carray(_address(a, start), shape)

else:

    @njit(**JIT, **INNER)
    def borrow(a, start, shape):
        """`borrow` with Numba's public slicing (`build.NATIVE` is off): a counted view."""
        size = 1
        for s in shape:
            size *= s
        return a.reshape(a.size)[start : start + size].reshape(shape)


@njit(**JIT, **INNER)
def borrowed(a):
    """All of the writable C-contiguous `a` as a borrowed view (see `borrow`). A kernel that
    rebinds its buffers to these at its top passes them to every helper and product without
    reference counting: each call otherwise increments and decrements every array argument
    atomically (a measurable share of a DHBM update, docs/benchmarks.md)."""
    return borrow(a, 0, a.shape)


@njit(**JIT, **INNER)
def matrix(theta, off, sizes, l, col):
    """View `[H_{l-1}, H_l]` (`col` = COL_W or COL_R) or `[H_l, C]` (COL_U needs `C` via
    `label_weights`) of layer `l` of `theta`."""
    return borrow(theta, off[l, col], (sizes[l], sizes[l + 1]))


@njit(**JIT, **INNER)
def vector(theta, off, sizes, l, col):
    """View `[H_l]` of the bias `col` (COL_B or COL_RB) of layer `l`."""
    return borrow(theta, off[l, col], (sizes[l + 1],))


@njit(**JIT, **INNER)
def label_weights(theta, off, sizes, l, n_classes):
    """View `[H_l, C]` of `U^l`."""
    return borrow(theta, off[l, COL_U], (sizes[l + 1], n_classes))


@njit(**JIT, **INNER)
def widest(sizes):
    """The largest of `sizes` (a loop: `np.max` compiles its reductions, which lengthens a
    model's first use, docs/benchmarks.md)."""
    top = sizes[0]
    for i in range(1, sizes.shape[0]):
        top = max(top, sizes[i])
    return top


@njit(**JIT, **INNER)
def layer(act, hcum, n, l):
    """View `[n, H_l]` of layer `l` in a flat activity buffer of an `n`-row batch."""
    return borrow(act, n * hcum[l], (n, hcum[l + 1] - hcum[l]))


@njit(**JIT, **INNER)
def first_largest(v):
    """The index of the first largest value of the 1-d `v` (`np.argmax` for finite values;
    a loop, because `np.argmax` compiles NumPy's reductions, which lengthens a model's first
    use, docs/benchmarks.md). 0 for an empty `v`."""
    best = 0
    for k in range(1, v.shape[0]):
        if v[k] > v[best]:
            best = k
    return best


# --------------------------------------------------------------------------- activations


_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LOG2E = 1.44269504088896338700e00


@intrinsic
def _bits_as_float(typingctx, bits):
    """Reinterpret an int64 bit pattern as a float64 (one instruction, vectorisable)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return sig, codegen


@njit(**JIT, **INNER)
def exp(x):
    """`e^x` within about 1 ulp of libm for `x` in [-708, 709] (clamped outside), written in
    plain arithmetic so that loops calling it vectorise (libm's `exp` does not): `x = k ln 2
    + r`, a degree-13 Taylor polynomial for `e^r` (`|r| <= ln 2 / 2`), `2^k` from its bits."""
    x = min(max(x, -708.0), 709.0)
    kf = np.floor(x * _LOG2E + 0.5)
    r = (x - kf * _LN2_HI) - kf * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    return p * _bits_as_float((np.int64(kf) + 1023) << 52)


@njit(**JIT, **INNER)
def activate(z, kind):
    """`phi(z)` for a scalar: logistic sigmoid, ReLU `max(0, z)`, or bounded ReLU
    `min(max(0, z), 1)` (the hybrid models' "relu": linear in between, like the sigmoid's
    range, so mean-field activities, their targets and the energy stay bounded)."""
    if kind == RELU:
        return z if z > 0.0 else 0.0
    if kind == BOUNDED_RELU:
        return 0.0 if z <= 0.0 else (1.0 if z >= 1.0 else z)
    return 1.0 / (1.0 + exp(-z))


@njit(**JIT, **INNER)
def derivative(a, kind):
    """`phi'(z)` from the output `a = phi(z)`: `a (1 - a)`, `1[a > 0]` or `1[0 < a < 1]`."""
    if kind == RELU:
        return 1.0 if a > 0.0 else 0.0
    if kind == BOUNDED_RELU:
        return 1.0 if 0.0 < a < 1.0 else 0.0
    return a * (1.0 - a)


@njit(**JIT, **INNER)
def sigmoid(z):
    """Logistic sigmoid of a scalar."""
    return 1.0 / (1.0 + exp(-z))


@njit(**JIT, **INNER)
def softmax_rows(Z):
    """Row-wise softmax of `Z [n, C]`, in place (max-shifted); nothing when `C == 0`."""
    n, C = Z.shape
    if C == 0:
        return
    for r in range(n):
        m = Z[r, 0]
        for k in range(1, C):
            if Z[r, k] > m:
                m = Z[r, k]
        s = 0.0
        for k in range(C):
            Z[r, k] = exp(Z[r, k] - m)
            s += Z[r, k]
        for k in range(C):
            Z[r, k] /= s


# --------------------------------------------------------------------------- forward


@njit(**JIT, **INNER)
def affine(below, M, out, k):
    """`out [n, H] = k * below [n, P] @ M [P, H]` (overwrites `out`)."""
    gemm(below, M, out, k, 0.0, bool(False), bool(False))


@njit(**JIT, **INNER)
def times_transposed(A, theta, theta_t, start, rows, cols, out, beta):
    """`out = A @ M^T + beta * out` for the weight block `M [rows, cols]` of `theta` at
    `start` (the top-down terms and back-propagation). With a transposed mirror `theta_t`
    (`transpose_weights`; empty: none) it is a plain product with `M^T` read from the mirror.
    Why: OpenBLAS's small-matrix kernels (SkylakeX) refuse `A @ M^T` of row-major operands
    for an inner dimension under 32, and its general path, which packs both operands, is
    much slower at the streams' sizes (docs/benchmarks.md)."""
    if theta_t.size > 0:
        gemm(A, borrow(theta_t, start, (cols, rows)), out, 1.0, beta, bool(False), bool(False))
    else:
        gemm(A, borrow(theta, start, (rows, cols)), out, 1.0, beta, bool(False), bool(True))


@njit(**JIT, **INNER)
def transpose_block(theta, start, rows, cols, theta_t):
    """`theta_t`'s block at `start`, viewed `[cols, rows]`, becomes the transpose of `theta`'s,
    viewed `[rows, cols]` (written in order: contiguous stores)."""
    M = borrow(theta, start, (rows, cols))
    T = borrow(theta_t, start, (cols, rows))
    for j in range(cols):
        for i in range(rows):
            T[j, i] = M[i, j]


@njit(**JIT, **INNER)
def transpose_weights(theta, off, sizes, n_classes, theta_t):
    """Fill the transposed mirror `theta_t` (a buffer of `theta`'s length and layout): the
    blocks of `W^l` and `U^l`, and of `R^l` for `l >= 1`, hold their transposes (`[H_l,
    H_{l-1}]`, `[C, H_l]`); nothing else is written (the transpose of `R^l` for `l = 0` would
    only back-propagate below the input). Built once per update, whose products share it
    (`times_transposed`): `theta` does not change until the update's last step."""
    L = sizes.shape[0] - 1
    for l in range(L):
        P, H = sizes[l], sizes[l + 1]
        transpose_block(theta, off[l, COL_W], P, H, theta_t)
        transpose_block(theta, off[l, COL_U], H, n_classes, theta_t)
        if l > 0:
            transpose_block(theta, off[l, COL_R], P, H, theta_t)


@njit(**JIT, **INNER)
def forward_net(X, theta, off, sizes, hcum, wcol, bcol, doubled, kind, mask, scale, act):
    """Bottom-up pass `v^0 = X`, `v^l = scale * mask^l * phi(k_l v^{l-1} M^l + m^l)`.

    `M^l, m^l` are the weights/bias in columns `wcol, bcol` of the layout (COL_R, COL_RB for
    the recognition network, COL_W, COL_B for an encoder); `k_l = 2` for every layer but the
    top one when `doubled` (the recognition network's weight doubling, paper eq. 9; biases
    are not doubled), else 1. `X [n, D]`; writes `act` (flat, `>= n * hcum[L]`); `mask` flat
    like `act` or empty; `scale` is the dropout keep probability at prediction, else 1.
    """
    n = X.shape[0]
    L = sizes.shape[0] - 1
    for l in range(L):
        M = matrix(theta, off, sizes, l, wcol)
        bias = vector(theta, off, sizes, l, bcol)
        k = 2.0 if (doubled and l < L - 1) else 1.0
        out = layer(act, hcum, n, l)
        if l == 0:
            affine(X, M, out, k)
        else:
            affine(layer(act, hcum, n, l - 1), M, out, k)
        H = sizes[l + 1]
        use_mask = mask.size > 0
        m = layer(mask, hcum, n, l) if use_mask else out
        for r in range(n):
            for j in range(H):
                a = activate(out[r, j] + bias[j], kind)
                if use_mask:
                    a *= m[r, j]
                out[r, j] = a * scale


@njit(**JIT, **INNER)
def joint_logits(act, n, theta, off, sizes, hcum, n_classes, Z):
    """`Z [n, C] = sum_l v^l @ U^l + d` (overwrites `Z`)."""
    L = sizes.shape[0] - 1
    d = borrow(theta, off[L, 1], (n_classes,))
    for r in range(n):
        for k in range(n_classes):
            Z[r, k] = d[k]
    for l in range(L):
        gemm(layer(act, hcum, n, l), label_weights(theta, off, sizes, l, n_classes), Z, 1.0, 1.0,
             bool(False), bool(False))


@njit(**JIT, **INNER)
def joint_proba(act, n, theta, off, sizes, hcum, n_classes, P):
    """The joint predictor `P [n, C] = softmax(sum_l v^l @ U^l + d)` (paper eq. 6)."""
    joint_logits(act, n, theta, off, sizes, hcum, n_classes, P)
    softmax_rows(P)
