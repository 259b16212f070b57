"""Python's entry points to the kernels that other kernels call too.

A kernel compiled with a Python entry point gets machine code of its own, and so does every
kernel that calls it, which links its code in. When the kernel is compiled only because another
kernel calls it, that first copy is never run. So these kernels are compiled for linking only
(`build.INNER`, `linking`): a caller pays for their code once, inlined. Python calls them
through the entry points below, each a kernel that does nothing but call its body: one compiles
only when Python asks for it. The DHBM's first prediction, for one, calls none of them from
Python (docs/benchmarks.md, "The first use").
"""

from __future__ import annotations

from numba import njit

from river_dhbm._kernels import dhbm, linear, mixture, replay
from river_dhbm._kernels.build import JIT

__all__ = ["confident_labels", "dhbm_proba_row", "linear_proba", "memory_push",
           "memory_replay", "mix_row"]


@njit(**JIT)
def dhbm_proba_row(X, theta, off, sizes, hcum, n_classes, kind, scale, act, P):
    """`dhbm.dhbm_proba_row` from Python."""
    return dhbm.dhbm_proba_row(X, theta, off, sizes, hcum, n_classes, kind, scale, act, P)


@njit(**JIT)
def linear_proba(W, b, mean, m2, count, X, out):
    """`linear.linear_proba` from Python."""
    linear.linear_proba(W, b, mean, m2, count, X, out)


@njit(**JIT)
def mix_row(P, weights, log_temps, out):
    """`mixture.mix_row` from Python."""
    mixture.mix_row(P, weights, log_temps, out)


@njit(**JIT)
def memory_push(mem_X, mem_y, mem_rows, state, X, codes, n, now):
    """`replay.memory_push` from Python."""
    replay.memory_push(mem_X, mem_y, mem_rows, state, X, codes, n, now)


@njit(**JIT)
def memory_replay(mem_X, mem_y, mem_rows, state, X, codes, n, u, out_X, out_codes, now,
                  horizon):
    """`replay.memory_replay` from Python."""
    return replay.memory_replay(mem_X, mem_y, mem_rows, state, X, codes, n, u, out_X,
                                out_codes, now, horizon)


@njit(**JIT)
def confident_labels(codes, P, n, confidence):
    """`replay.confident_labels` from Python."""
    return replay.confident_labels(codes, P, n, confidence)
