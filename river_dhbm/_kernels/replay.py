"""The label memory's kernels: the rows each step of an update learns, the ring of labeled rows
and its replay, and the confident proxy labels (see `river_dhbm.scarce_labels` for the rule they
serve). All draws are uniforms from the model's generator, passed in, so the DHBM's fused run (one
call for many mini-batches) replays exactly what the per-batch path does.
"""

from __future__ import annotations

from numba import njit

from river_dhbm._kernels.build import INNER, JIT


#: The confidence that turns no unlabeled row into a proxy label: above 1, which no predicted
#: probability reaches (`confident_labels`).
NO_PROXY_LABELS = 2.0


@njit(**JIT, **INNER)
def _copy_row(src, i, dst, j):
    """`dst[j] = src[i]` in a loop (a slice assignment compiles its error paths too: seconds
    of a model's first use)."""
    for c in range(src.shape[1]):
        dst[j, c] = src[i, c]


@njit(**JIT, **INNER)
def step_rows(X, y, n, s, steps, xs, ys):
    """The rows step `s` of an update learns, into `xs [n + R, d]` and `ys [n + R]`: the
    mini-batch (the first `n` rows of `X, y`), then its own `R` replayed rows
    `X[n + s R : n + (s + 1) R]`, where `X` holds `n + steps * R` rows. Returns `n + R`."""
    R = (X.shape[0] - n) // steps
    for r in range(n):
        _copy_row(X, r, xs, r)
        ys[r] = y[r]
    for k in range(R):
        _copy_row(X, n + s * R + k, xs, n + k)
        ys[n + k] = y[n + s * R + k]
    return n + R


@njit(**JIT, **INNER)
def memory_push(mem_X, mem_y, mem_rows, state, X, codes, n, now):
    """Store the labeled rows (`codes >= 0`) among the first `n` rows of `X` in the ring, each
    stamped with `now`, the stream row at which it came (`mem_rows`)."""
    size = mem_y.shape[0]
    if size == 0:
        return
    for r in range(n):
        if codes[r] >= 0:
            slot = state[1]
            _copy_row(X, r, mem_X, slot)
            mem_y[slot] = codes[r]
            mem_rows[slot] = now
            state[1] = (slot + 1) % size
            if state[0] < size:
                state[0] += 1


@njit(**JIT, **INNER)
def memory_expire(mem_rows, state, now, horizon):
    """Forget the stored rows that came `horizon` stream rows or more before `now`: the oldest
    ones, at the start of the ring."""
    size = mem_rows.shape[0]
    while state[0] > 0 and now - mem_rows[(state[1] - state[0]) % size] >= horizon:
        state[0] -= 1


@njit(**JIT, **INNER)
def memory_replay(mem_X, mem_y, mem_rows, state, X, codes, n, u, out_X, out_codes, now,
                  horizon):
    """The first `n` rows of `(X, codes)` followed by one stored row per uniform in `u` (row
    `int(u * rows stored)` of the stored ones), into `out_X`, `out_codes`; returns the row
    count (`n` when the memory is empty). Rows `horizon` stream rows older than `now` leave
    first (`memory_expire`); the replayed rows are drawn before this batch's labels are
    stored."""
    for r in range(n):
        _copy_row(X, r, out_X, r)
        out_codes[r] = codes[r]
    memory_expire(mem_rows, state, now, horizon)
    count = state[0]
    if count == 0:
        return n
    size = mem_y.shape[0]
    # the stored rows run from the oldest's slot; a full ring counts from slot 0, as it did
    # before rows could expire, so that a memory that never loses a row draws the same rows
    first = 0 if count == size else (state[1] - count) % size
    for k in range(u.shape[0]):
        i = (first + min(int(u[k] * count), count - 1)) % size
        _copy_row(mem_X, i, out_X, n + k)
        out_codes[n + k] = mem_y[i]
    return n + u.shape[0]


@njit(**JIT, **INNER)
def confident_labels(codes, P, n, confidence):
    """Give each unlabeled row among the first `n` whose largest probability in `P` reaches
    `confidence` its predicted class (the first largest), in place; returns how many."""
    added = 0
    for r in range(n):
        if codes[r] >= 0:
            continue
        best = 0
        for k in range(1, P.shape[1]):
            if P[r, k] > P[r, best]:
                best = k
        if P.shape[1] > 0 and P[r, best] >= confidence:
            codes[r] = best
            added += 1
    return added
