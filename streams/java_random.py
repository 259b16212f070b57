"""java.util.Random and fdlibm's log as Numba functions on plain integers.

MOA draws every random number from `java.util.Random`, whose algorithm is fixed by its
Javadoc, and `nextGaussian` calls `StrictMath.log`, which is fdlibm's `__ieee754_log`
(not always correctly rounded, so glibc's `log` differs from it on some inputs). Porting
both lets the generators in this package reproduce MOA's instances bit for bit.

A generator's state is a small int64 array `[seed48, has_cached_gaussian, cached_bits]`
(`cached_bits` is the cached Gaussian's IEEE-754 bit pattern), so it can be copied,
pickled and passed into kernels. Inside kernels the state lives in local variables and
the helpers below return the advanced seed together with the drawn value.

"""

from __future__ import annotations

import math
import struct

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

MULTIPLIER = 0x5DEECE66D
ADDEND = 0xB
MASK48 = (1 << 48) - 1
JAVA_INT_MIN = -(2**31)
JAVA_INT_MAX = 2**31 - 1


def initial_seed(seed: int) -> int:
    """The 48-bit state of `new java.util.Random(seed)` (`seed` widened from int to long)."""
    return (int(seed) ^ MULTIPLIER) & MASK48


def new_state(seed: int) -> np.ndarray:
    """A fresh generator state: `[seed48, has_cached_gaussian, cached_gaussian_bits]`."""
    return np.array([initial_seed(seed), 0, 0], dtype=np.int64)


# --- IEEE-754 bit casts: an LLVM bitcast when jitted, `struct` when JIT is disabled ---


def double_to_bits(x):
    return struct.unpack("<q", struct.pack("<d", x))[0]


def bits_to_double(b):
    return struct.unpack("<d", struct.pack("<q", int(b)))[0]


@intrinsic
def _bitcast_f64_i64(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _bitcast_i64_f64(typingctx, b):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@overload(double_to_bits, jit_options={"cache": True})
def _double_to_bits_jit(x):
    return lambda x: _bitcast_f64_i64(x)


@overload(bits_to_double, jit_options={"cache": True})
def _bits_to_double_jit(b):
    return lambda b: _bitcast_i64_f64(b)


# --- java.util.Random ---


@njit(cache=True, inline="always")
def next_bits(seed, bits):
    """`next(bits)` for 1 <= bits <= 31: returns (new seed, non-negative int)."""
    seed = (seed * MULTIPLIER + ADDEND) & MASK48
    return seed, seed >> (48 - bits)


@njit(cache=True, inline="always")
def next_int(seed):
    """`nextInt()`: a signed 32-bit int."""
    seed = (seed * MULTIPLIER + ADDEND) & MASK48
    r = seed >> 16
    if r >= 2147483648:
        r -= 4294967296
    return seed, r


@njit(cache=True, inline="always")
def next_int_bounded(seed, bound):
    """`nextInt(bound)` for bound >= 1, with Java's rejection of the biased top range."""
    seed = (seed * MULTIPLIER + ADDEND) & MASK48
    r = seed >> 17
    m = bound - 1
    if (bound & m) == 0:
        return seed, (bound * r) >> 31
    u = r
    r = u % bound
    # Java: `u - r + m < 0` in int32, i.e. the sum overflows
    while u - r + m >= 2147483648:
        seed = (seed * MULTIPLIER + ADDEND) & MASK48
        u = seed >> 17
        r = u % bound
    return seed, r


@njit(cache=True, inline="always")
def next_double(seed):
    """`nextDouble()`: 53 random bits from two draws, in [0, 1)."""
    seed = (seed * MULTIPLIER + ADDEND) & MASK48
    hi = seed >> 22
    seed = (seed * MULTIPLIER + ADDEND) & MASK48
    lo = seed >> 21
    return seed, float((hi << 27) + lo) * 1.1102230246251565e-16  # 2**-53


@njit(cache=True, inline="always")
def next_gaussian(seed, has_cached, cached):
    """`nextGaussian()` (polar method, StrictMath log).

    Returns `(seed, has_cached, cached, value)`.

    """
    if has_cached:
        return seed, False, cached, cached
    while True:
        seed, d1 = next_double(seed)
        seed, d2 = next_double(seed)
        v1 = 2.0 * d1 - 1.0
        v2 = 2.0 * d2 - 1.0
        s = v1 * v1 + v2 * v2
        if s < 1.0 and s != 0.0:
            break
    multiplier = math.sqrt(-2.0 * fdlibm_log(s) / s)
    return seed, True, v2 * multiplier, v1 * multiplier


# --- fdlibm __ieee754_log (e_log.c), constants given by their bit patterns ---

_LN2_HI = bits_to_double(0x3FE62E42FEE00000)
_LN2_LO = bits_to_double(0x3DEA39EF35793C76)
_TWO54 = bits_to_double(0x4350000000000000)
_LG1 = bits_to_double(0x3FE5555555555593)
_LG2 = bits_to_double(0x3FD999999997FA04)
_LG3 = bits_to_double(0x3FD2492494229359)
_LG4 = bits_to_double(0x3FCC71C51D8E78AF)
_LG5 = bits_to_double(0x3FC7466496CB03DE)
_LG6 = bits_to_double(0x3FC39A09D078C69F)
_LG7 = bits_to_double(0x3FC2F112DF3E5244)


@njit(cache=True, error_model="numpy")
def fdlibm_log(x):
    """Natural log exactly as fdlibm's `__ieee754_log`, i.e. Java's `StrictMath.log`."""
    bits = double_to_bits(x)
    hx = bits >> 32  # high word, signed (arithmetic shift of the signed bits)
    lx = bits & 0xFFFFFFFF  # low word
    k = 0
    if hx < 0x00100000:  # x < 2**-1022
        if ((hx & 0x7FFFFFFF) | lx) == 0:
            return -math.inf  # log(+-0)
        if hx < 0:
            return math.nan  # log(negative)
        k -= 54
        x *= _TWO54  # subnormal: scale up
        bits = double_to_bits(x)
        hx = bits >> 32
    if hx >= 0x7FF00000:
        return x + x
    k += (hx >> 20) - 1023
    hx &= 0x000FFFFF
    i = (hx + 0x95F64) & 0x100000
    # normalise x or x/2: replace the high word
    x = bits_to_double(((hx | (i ^ 0x3FF00000)) << 32) | (bits & 0xFFFFFFFF))
    k += i >> 20
    f = x - 1.0
    if (0x000FFFFF & (2 + hx)) < 3:  # |f| < 2**-20
        if f == 0.0:
            if k == 0:
                return 0.0
            dk = float(k)
            return dk * _LN2_HI + dk * _LN2_LO
        R = f * f * (0.5 - 0.33333333333333333 * f)
        if k == 0:
            return f - R
        dk = float(k)
        return dk * _LN2_HI - ((R - dk * _LN2_LO) - f)
    s = f / (2.0 + f)
    dk = float(k)
    z = s * s
    w = z * z
    t1 = w * (_LG2 + w * (_LG4 + w * _LG6))
    t2 = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7)))
    R = t2 + t1
    hfsq = 0.5 * f * f
    # fdlibm branches on `i > 0` and on `k == 0`; both arms are computed and one is
    # selected (no unpredictable branch). With k == 0, dk * _LN2_HI and dk * _LN2_LO are
    # +0.0 and the general formulas reduce exactly, sign of zero included, to fdlibm's
    # k == 0 ones (0 - (a - f) == f - a in round-to-nearest).
    big = ((hx - 0x6147A) | (0x6B851 - hx)) > 0
    with_hfsq = dk * _LN2_HI - ((hfsq - (s * (hfsq + R) + dk * _LN2_LO)) - f)
    without_hfsq = dk * _LN2_HI - ((s * (f - R) - dk * _LN2_LO) - f)
    return with_hfsq if big else without_hfsq


# --- block draws on a state array (used by tests and anywhere a plain sequence is needed) ---


@njit(cache=True)
def fill_next_int(state, bound, out):
    """Fill `out` (int64) with `nextInt(bound)` draws, or `nextInt()` when bound == 0."""
    seed = state[0]
    for i in range(out.shape[0]):
        if bound == 0:
            seed, out[i] = next_int(seed)
        else:
            seed, out[i] = next_int_bounded(seed, bound)
    state[0] = seed


@njit(cache=True)
def fill_next_double(state, out):
    """Fill `out` (float64) with `nextDouble()` draws."""
    seed = state[0]
    for i in range(out.shape[0]):
        seed, out[i] = next_double(seed)
    state[0] = seed


@njit(cache=True)
def fill_next_gaussian(state, out):
    """Fill `out` (float64) with `nextGaussian()` draws; the cache lives in `state[1:]`."""
    seed, has_cached, cached = state[0], state[1] != 0, bits_to_double(state[2])
    for i in range(out.shape[0]):
        seed, has_cached, cached, out[i] = next_gaussian(seed, has_cached, cached)
    state[0], state[1], state[2] = seed, has_cached, double_to_bits(cached)


@njit(cache=True)
def fdlibm_log_array(x, out):
    """`out[i] = StrictMath.log(x[i])`."""
    for i in range(x.shape[0]):
        out[i] = fdlibm_log(x[i])
