"""The models' flat parameter buffer on the Python side: its offsets table, its first values,
its regrowth when a class arrives, and the optimiser's moments beside it.

The layout itself (what `off[l, COL_W]` and the other columns address) is described in
`network`'s module docstring; the kernels read it, the estimators build it here.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit

from river_dhbm._kernels.build import JIT
from river_dhbm._kernels.network import COL_B, COL_R, COL_RB, COL_U, COL_W


def param_layout(sizes, n_classes: int) -> np.ndarray:
    """Offsets table `[L + 1, 5]` int64 of the flat parameter buffer (see `network`'s docstring)."""
    return _layout(tuple(int(s) for s in sizes), int(n_classes)).copy()


@functools.lru_cache(maxsize=256)
def _layout(sizes: tuple, n_classes: int) -> np.ndarray:
    """`param_layout`, cached (every new class of a stream asks for two of them)."""
    L = len(sizes) - 1
    off = np.full((L + 1, 5), -1, dtype=np.int64)
    pos = 0
    for l in range(L):
        fan_in, fan_out = sizes[l], sizes[l + 1]
        for col, size in (
            (COL_W, fan_in * fan_out),
            (COL_B, fan_out),
            (COL_U, fan_out * n_classes),
            (COL_R, fan_in * fan_out),
            (COL_RB, fan_out),
        ):
            off[l, col] = pos
            pos += size
    off[L, 0] = pos
    pos += sizes[0]
    off[L, 1] = pos
    pos += n_classes
    off[L, 2] = pos
    off.flags.writeable = False
    return off


#: `init` of the hybrids: how `init_weights` draws the first layer (`first_layer_init`).
INITS = ("centred", "glorot")
#: `optimizer` of every model that has one.
OPTIMIZERS = ("sgd", "adam")


def adam_moments(theta: np.ndarray, optimizer: str) -> np.ndarray:
    """Adam's moments for `theta` (`[2 * theta.size]` zeros, first then second), or an empty
    array for plain gradient steps: the kernels take an Adam step when it is not empty."""
    return np.zeros(2 * theta.size if optimizer == "adam" else 0, theta.dtype)


def centred_biases(W: np.ndarray, rng) -> np.ndarray:
    """Biases `[fan_out]` that put each unit's hyperplane of `W [fan_in, fan_out]` through a
    point drawn uniformly in the input box `[0, 1]^fan_in`."""
    points = rng.random((W.shape[1], W.shape[0]))
    return -np.einsum("jd,dj->j", points, W)


#: Under `init="centred"`, a one-layer network's first-layer weights relative to Glorot's
#: bound: inputs in [0, 1] spread about a third as far as the unit-variance inputs Glorot's
#: bound is made for, and units this steep cut the data from the first row on (Bananas' two
#: inputs, MNIST's images).
INIT_SCALE = 3.0


def centred_scale(depth: int) -> float:
    """The first layer's factor on Glorot's bound under `init="centred"` in a stack of `depth`
    bounded layers: `INIT_SCALE / depth`. Each clipped layer feeds the next one near-binary
    activities, so steepness compounds up a stack: four steep layers of 24 left most units
    clipped for most rows (no gradient) and ended far above the Bayes error on LED. The deep
    stack's first layer starts as much gentler as its Adam step is smaller (`DHBM`)."""
    return INIT_SCALE / depth


def first_layer_init(init: str, depth: int) -> dict:
    """`init_weights`' first-layer options for a model's `init` setting and depth."""
    return {"first_scale": centred_scale(depth), "centred": True} if init == "centred" else {}


def init_weights(theta, off, sizes, rng, upper_scale: float = 1.0, first_scale: float = 1.0,
                 centred: bool = False) -> None:
    """Glorot-uniform `W^l` in `+-sqrt(6 / (H_{l-1} + H_l))` (times `upper_scale` above the first
    layer, `first_scale` for the first), each copied into the recognition weights `R^l`; drawn
    layer by layer from `rng`. With `centred`, each first-layer unit's bias puts its hyperplane
    through a point drawn uniformly in the input box `[0, 1]^D` (drawn after the weights), so
    that the units cut the inputs' range instead of all passing through its corner 0."""
    for l in range(len(sizes) - 1):
        fan_in, fan_out = sizes[l], sizes[l + 1]
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        W = rng.uniform(-bound, bound, fan_in * fan_out)
        W *= upper_scale if l > 0 else first_scale
        for col in (COL_W, COL_R):
            theta[off[l, col] : off[l, col] + W.size] = W
        if l == 0 and centred:
            bias = centred_biases(W.reshape(fan_in, fan_out), rng)
            for col in (COL_B, COL_RB):
                theta[off[l, col] : off[l, col] + fan_out] = bias


def regrow_moments(moments: np.ndarray, sizes, n_old: int, n_new: int) -> np.ndarray:
    """Adam's `moments [2 * size]` (first, then second moments) regrown together as
    `regrow_classes` regrows the parameters (the new class's moments 0); empty stays empty."""
    if moments.size == 0:
        return moments
    halves = regrow_classes(moments.reshape(2, -1), sizes, n_old, n_new)
    return halves.ravel().astype(moments.dtype, copy=False)


def hidden_offsets(sizes) -> np.ndarray:
    """Cumulative hidden sizes `[L + 1]` int64: `(0, H_1, H_1 + H_2, ...)`."""
    return np.concatenate([[0], np.cumsum(np.asarray(sizes[1:], dtype=np.int64))]).astype(np.int64)


def regrow_classes(theta: np.ndarray, sizes, n_old: int, n_new: int) -> np.ndarray:
    """A buffer for `n_new` classes holding the values of `theta` (laid out for `n_old`);
    new label-weight columns and class biases are 0. `theta` may also be a stack `[k, size]`
    of such buffers (e.g. Adam's two moments), regrown together."""
    index, size = _regrow_index(tuple(int(s) for s in sizes), n_old, n_new)
    rows = np.ascontiguousarray(theta, dtype=np.float64).reshape(-1, theta.shape[-1])
    out = np.zeros((rows.shape[0], size))
    _scatter_columns(rows, index, out)
    return out.reshape(theta.shape[:-1] + (size,))


@njit(**JIT)
def _scatter_columns(src, index, out):
    """`out[:, index] = src` as a plain loop (numpy's fancy assignment is ~10x slower)."""
    for k in range(src.shape[0]):
        for i in range(index.shape[0]):
            out[k, index[i]] = src[k, i]


@functools.lru_cache(maxsize=64)
def _regrow_index(sizes: tuple, n_old: int, n_new: int) -> tuple[np.ndarray, int]:
    """Where each entry of a buffer laid out for `n_old` classes goes in one laid out for
    `n_new`, and the new length. Cached: a model regrows its parameters and both Adam
    moments with the same map, and every new class of a stream needs one."""
    old, new = param_layout(sizes, n_old), param_layout(sizes, n_new)
    index = np.empty(old[-1, 2], dtype=np.int64)
    L = len(sizes) - 1
    for l in range(L):
        for col in (COL_W, COL_B, COL_R, COL_RB):
            size = sizes[l + 1] * (sizes[l] if col in (COL_W, COL_R) else 1)
            index[old[l, col] : old[l, col] + size] = np.arange(new[l, col], new[l, col] + size)
        rows, cols = np.arange(sizes[l + 1])[:, None], np.arange(n_old)[None, :]
        index[old[l, COL_U] : old[l, COL_U] + sizes[l + 1] * n_old] = (
            new[l, COL_U] + rows * n_new + cols
        ).ravel()
    index[old[L, 0] : old[L, 0] + sizes[0]] = np.arange(new[L, 0], new[L, 0] + sizes[0])
    index[old[L, 1] : old[L, 1] + n_old] = np.arange(new[L, 1], new[L, 1] + n_old)
    index.flags.writeable = False
    return index, int(new[-1, 2])
