"""DHBM kernels against the numpy reference (`tests/reference_dhbm.py`), given the same
uniforms, and finite-difference checks of the true gradients."""

from __future__ import annotations

import numpy as np
import pytest
import reference_dhbm as ref

from river_dhbm._kernels import dhbm as DK
from river_dhbm._kernels import entries
from river_dhbm._kernels import gradients as G
from river_dhbm._kernels import network as K
from river_dhbm._kernels import parameters
from river_dhbm._kernels.replay import NO_PROXY_LABELS
from kernel_calls import from_python

RTOL, ATOL = 1e-10, 1e-12


def _setup(sizes=(5, 4, 3, 2), C=3, n=6, seed=0, scale=0.7):
    rng = np.random.default_rng(seed)
    sizes = np.array(sizes, dtype=np.int64)
    off = parameters.param_layout(sizes, C)
    hcum = parameters.hidden_offsets(sizes)
    theta = rng.normal(0, scale, off[-1, 2])
    X = rng.random((n, sizes[0]))
    return rng, sizes, off, hcum, theta, X


def _masks(rng, n, hcum, dropout):
    if not dropout:
        return np.zeros(0)
    return (rng.random(n * hcum[-1]) >= dropout).astype(float)


def test_exp_matches_libm():
    x = np.concatenate([np.linspace(-708, 709, 20001), np.random.default_rng(0).normal(0, 3, 5000)])
    got = np.array([from_python(K.exp)(v) for v in x])
    np.testing.assert_allclose(got, np.exp(x), rtol=4e-16, atol=0)
    assert from_python(K.exp)(-1e4) > 0 and np.isfinite(from_python(K.exp)(1e4))


def test_layout_is_dense_and_regrow_keeps_values():
    sizes = np.array([4, 3, 2], dtype=np.int64)
    off = parameters.param_layout(sizes, 2)
    # W, b, U, R, r of each layer, then c and d
    assert off[-1, 2] == (12 + 3 + 6 + 12 + 3) + (6 + 2 + 4 + 6 + 2) + 4 + 2
    theta = np.arange(off[-1, 2], dtype=float) + 1.0
    assert np.unique(np.concatenate([
        np.arange(off[l, c], off[l, c] + s)
        for l in range(2)
        for c, s in ((0, sizes[l] * sizes[l + 1]), (1, sizes[l + 1]), (2, sizes[l + 1] * 2),
                     (3, sizes[l] * sizes[l + 1]), (4, sizes[l + 1]))
    ] + [np.arange(off[2, 0], off[2, 2])])).size == off[-1, 2]
    grown = parameters.regrow_classes(theta, sizes, 2, 3)
    new = parameters.param_layout(sizes, 3)
    P_old, P_new = ref.unpack(theta, sizes, 2, off), ref.unpack(grown, sizes, 3, new)
    for k in "WbRr":
        for a, b in zip(P_old[k], P_new[k]):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(P_old["U"], P_new["U"]):
        np.testing.assert_array_equal(b[:, :2], a)
        np.testing.assert_array_equal(b[:, 2], 0.0)
    np.testing.assert_array_equal(P_new["c"], P_old["c"])
    np.testing.assert_array_equal(P_new["d"], [*P_old["d"], 0.0])
    # a stack of buffers (Adam's two moments) regrows row by row, and layouts are not shared
    stacked = parameters.regrow_classes(np.stack([theta, -theta]), sizes, 2, 3)
    np.testing.assert_array_equal(stacked, np.stack([grown, -grown]))
    off[0, 0] = -7
    assert parameters.param_layout(sizes, 2)[0, 0] == 0


@pytest.mark.parametrize("kind", [K.SIGMOID, K.RELU, K.BOUNDED_RELU])
def test_proba_matches_reference(kind):
    rng, sizes, off, hcum, theta, X = _setup()
    act, P = np.zeros(len(X) * hcum[-1]), np.zeros((6, 3))
    DK.dhbm_proba(X, theta, off, sizes, hcum, 3, kind, 0.6, act, P)
    expected = ref.proba(X, theta, sizes, 3, off, kind, 0.6, 0)
    np.testing.assert_allclose(P, expected, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("kind", [K.SIGMOID, K.RELU, K.BOUNDED_RELU])
@pytest.mark.parametrize("scale", [1.0, 0.6])
def test_one_row_proba_matches_reference(kind, scale):
    # River's per-instance predictions: plain loops instead of BLAS, same numbers to round-off
    rng, sizes, off, hcum, theta, X = _setup()
    expected = ref.proba(X, theta, sizes, 3, off, kind, scale, 0)
    act = np.full(hcum[-1], np.nan)  # scratch: nothing of it is read before it is written
    for i in range(len(X)):
        P = np.full((1, 3), np.nan)
        best = entries.dhbm_proba_row(X[i : i + 1], theta, off, sizes, hcum, 3, kind, scale, act, P)
        np.testing.assert_allclose(P[0], expected[i], rtol=RTOL, atol=ATOL)
        assert best == P[0].tolist().index(max(P[0]))  # predict_one's answer: the first maximum


def test_one_row_prediction_is_the_first_maximum():
    # ties (here: all-zero weights, so every class has the same probability) go to the first
    rng, sizes, off, hcum, theta, X = _setup()
    act, P = np.zeros(hcum[-1]), np.zeros((1, 3))
    zero = np.zeros_like(theta)
    assert entries.dhbm_proba_row(X[:1], zero, off, sizes, hcum, 3, K.SIGMOID, 1.0, act, P) == 0
    np.testing.assert_allclose(P[0], 1 / 3)


CASES = [
    # estimator, kind, dropout, hard, mf_steps, labels
    (DK.MF, K.SIGMOID, 0.0, False, 1, [0, -1, 2, -1, -1, 1]),
    (DK.MF, K.SIGMOID, 0.5, True, 2, [0, -1, 2, -1, -1, 1]),
    (DK.MF, K.RELU, 0.3, False, 1, [-1, -1, 2, -1, -1, -1]),
    (DK.MF, K.SIGMOID, 0.0, False, 0, [0, 1, 2, 0, 1, 1]),
    (DK.MF, K.SIGMOID, 0.0, True, 1, [-1] * 6),
    (DK.SAP, K.SIGMOID, 0.0, False, 1, [0, -1, 2, -1, -1, 1]),
    (DK.SAP, K.SIGMOID, 0.5, True, 1, [0, -1, 2, -1, -1, 1]),
    (DK.SAP, K.RELU, 0.2, False, 2, [1, -1, -1, -1, 0, -1]),
    (DK.MF, K.BOUNDED_RELU, 0.3, False, 2, [0, -1, 2, -1, -1, -1]),
    (DK.SAP, K.BOUNDED_RELU, 0.0, True, 1, [1, -1, -1, -1, 0, -1]),
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
@pytest.mark.parametrize("C", [3, 0])
@pytest.mark.parametrize("adam", [False, True], ids=["sgd", "adam"])
@pytest.mark.parametrize("mirror", [True, False], ids=["mirror", "no-mirror"])
def test_update_matches_reference(case, C, adam, mirror):
    estimator, kind, dropout, hard, mf_steps, labels = case
    y = np.array(labels if C else [-1] * 6, dtype=np.int64)
    rng, sizes, off, hcum, theta, X = _setup(C=C)
    n, D, A = len(X), sizes[0], hcum[-1]
    mask = _masks(rng, n, hcum, dropout)
    M = 4 if estimator == DK.SAP else 0
    part_x = (rng.random((M, D)) < 0.5).astype(float)
    part_h = (rng.random(M * A) < 0.5).astype(float)
    part_y = np.eye(max(C, 1))[rng.integers(0, max(C, 1), M)][:, :C].copy()
    part_mask = _masks(rng, M, hcum, dropout) if M else np.zeros(0)
    noise_h = (rng.standard_normal(M * A) if kind != K.SIGMOID else rng.random(M * A))
    noise_v = rng.random(M * D + M)
    args = (0.05, 1.0, 0.3, 1.5, hard, mask)
    moments = rng.random(2 * theta.size) if adam else None
    expected = ref.update(X, y, theta, sizes, C, off, kind, estimator, mf_steps, *args,
                          part_x, part_h, part_y, part_mask, noise_h, noise_v, moments, 3)
    got = [theta.copy(), part_x.copy(), part_h.copy(), part_y.copy(),
           moments.copy() if adam else None]
    grad = np.zeros_like(theta)
    work = [np.zeros(n * A) for _ in range(4)] + [np.zeros(max(n, M) * max(sizes.max(), D))]
    work += [np.zeros((n, D))] + [np.zeros((n, C)) for _ in range(3)] + [np.zeros(n), np.zeros(n)]
    work += [np.full_like(theta, np.nan) if mirror else np.zeros(0)]  # rebuilt by the update
    settings = (mf_steps, *args[:3], NO_PROXY_LABELS, *args[3:5])  # no proxy labels
    DK.UPDATE_KERNELS[estimator](X, y, (got[0], off, sizes, hcum, C, kind),
                                 (grad, got[4] if adam else np.zeros(0), 3), settings, mask,
                                 (got[1], got[2], got[3], part_mask, noise_h, noise_v),
                                 tuple(work), 1, len(X), np.zeros((0, C)))
    assert not np.array_equal(got[0], theta)
    for a, b in zip(got, expected):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    np.testing.assert_array_equal(grad, 0.0)


def _numeric_grad(f, theta, idx, h=1e-6):
    out = np.empty(len(idx))
    for k, i in enumerate(idx):
        t1, t2 = theta.copy(), theta.copy()
        t1[i] += h
        t2[i] -= h
        out[k] = (f(t1) - f(t2)) / (2 * h)
    return out


def _ranges(off, sizes, cols, C):
    idx = []
    L = len(sizes) - 1
    for l in range(L):
        for col in cols:
            size = {K.COL_W: sizes[l] * sizes[l + 1], K.COL_R: sizes[l] * sizes[l + 1],
                    K.COL_B: sizes[l + 1], K.COL_RB: sizes[l + 1], K.COL_U: sizes[l + 1] * C}[col]
            idx.extend(range(off[l, col], off[l, col] + size))
    return np.array(idx)


def _mirror(theta, off, sizes, C, built):
    """The transposed mirror of `theta` (`built`) or none (empty)."""
    if not built:
        return np.zeros(0)
    mirror = np.full_like(theta, np.nan)
    from_python(K.transpose_weights)(theta, off, sizes, C, mirror)
    return mirror


def test_transpose_weights_mirrors_every_used_weight_matrix():
    _, sizes, off, _, theta, _ = _setup(seed=6)
    C = 3
    mirror = _mirror(theta, off, sizes, C, True)
    P = ref.unpack(theta, sizes, C, off)
    Q = ref.unpack(mirror, sizes, C, off)  # read in theta's shapes: the transposes' bytes
    for l in range(len(sizes) - 1):
        for name, shape in (("W", (sizes[l + 1], sizes[l])), ("U", (C, sizes[l + 1])),
                            ("R", (sizes[l + 1], sizes[l]))):
            got = Q[name][l].ravel().reshape(shape)
            if name == "R" and l == 0:  # never read: nothing back-propagates below the input
                assert np.isnan(got).all()
            else:
                np.testing.assert_array_equal(got, P[name][l].T)
        assert np.isnan(Q["b"][l]).all() and np.isnan(Q["r"][l]).all()  # biases: not written


@pytest.mark.parametrize("kind", [K.SIGMOID, K.RELU, K.BOUNDED_RELU])
@pytest.mark.parametrize("dropout", [0.0, 0.4])
@pytest.mark.parametrize("mirror", [True, False], ids=["mirror", "no-mirror"])
def test_recognition_kl_gradient_by_finite_differences(kind, dropout, mirror):
    rng, sizes, off, hcum, theta, X = _setup(seed=3)
    n = len(X)
    mask = _masks(rng, n, hcum, dropout)
    masks = ref.split(mask, sizes, n) if mask.size else None
    mu = [rng.random((n, H)) for H in sizes[1:]]
    wrow = rng.random(n)
    act = np.zeros(n * hcum[-1])
    from_python(K.forward_net)(
        X, theta, off, sizes, hcum, K.COL_R, K.COL_RB, True, kind, mask, 1.0, act)
    delta, grad = np.zeros_like(act), np.zeros_like(theta)
    from_python(G.kl_delta)(
        act, np.concatenate([m.ravel() for m in mu]), n, hcum, wrow, kind, mask, delta)
    from_python(G.net_backward)(
        X, act, delta, theta, _mirror(theta, off, sizes, 3, mirror), off, sizes, hcum,
        K.COL_R, K.COL_RB, True, kind, mask, grad)
    idx = _ranges(off, sizes, (K.COL_R, K.COL_RB), 3)
    num = _numeric_grad(
        lambda t: ref.kl_loss(X, ref.unpack(t, sizes, 3, off), mu, wrow, kind, masks), theta, idx
    )
    np.testing.assert_allclose(grad[idx], num, rtol=1e-5, atol=1e-7)
    others = np.setdiff1d(np.arange(theta.size), idx)
    np.testing.assert_array_equal(grad[others], 0.0)


@pytest.mark.parametrize("kind", [K.SIGMOID, K.RELU, K.BOUNDED_RELU])
@pytest.mark.parametrize("dropout", [0.0, 0.4])
@pytest.mark.parametrize("mirror", [True, False], ids=["mirror", "no-mirror"])
def test_discriminative_gradient_by_finite_differences(kind, dropout, mirror):
    rng, sizes, off, hcum, theta, X = _setup(seed=4)
    n, C = len(X), 3
    mask = _masks(rng, n, hcum, dropout)
    masks = ref.split(mask, sizes, n) if mask.size else None
    T = rng.random((n, C))
    T /= T.sum(1, keepdims=True)
    wrow = rng.random(n)
    act, P = np.zeros(n * hcum[-1]), np.zeros((n, C))
    from_python(K.forward_net)(
        X, theta, off, sizes, hcum, K.COL_R, K.COL_RB, True, kind, mask, 1.0, act)
    from_python(K.joint_proba)(act, n, theta, off, sizes, hcum, C, P)
    delta, grad = np.zeros_like(act), np.zeros_like(theta)
    mt = _mirror(theta, off, sizes, C, mirror)
    from_python(G.discriminative_delta)(
        act, n, P, T, wrow, theta, mt, off, sizes, hcum, C, kind, mask, delta,
        grad)
    from_python(G.net_backward)(
        X, act, delta, theta, mt, off, sizes, hcum, K.COL_R, K.COL_RB, True, kind, mask,
        grad)
    L = len(sizes) - 1
    idx = np.concatenate([_ranges(off, sizes, (K.COL_R, K.COL_RB, K.COL_U), C),
                          np.arange(off[L, 1], off[L, 1] + C)])
    num = _numeric_grad(
        lambda t: ref.discriminative_loss(X, ref.unpack(t, sizes, C, off), T, wrow, kind, masks),
        theta, idx,
    )
    np.testing.assert_allclose(grad[idx], num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mirror", [True, False], ids=["mirror", "no-mirror"])
def test_encoder_backward_uses_the_chosen_columns(mirror):
    """`net_backward` on COL_W/COL_B (an undoubled encoder) matches finite differences too."""
    rng, sizes, off, hcum, theta, X = _setup(seed=5)
    n, C = len(X), 3
    T = np.eye(C)[rng.integers(0, C, n)]
    wrow = np.ones(n)
    act, P = np.zeros(n * hcum[-1]), np.zeros((n, C))
    empty = np.zeros(0)
    from_python(K.forward_net)(
        X, theta, off, sizes, hcum, K.COL_W, K.COL_B, False, K.SIGMOID, empty, 1.0, act)
    from_python(K.joint_proba)(act, n, theta, off, sizes, hcum, C, P)
    delta, grad = np.zeros_like(act), np.zeros_like(theta)
    mt = _mirror(theta, off, sizes, C, mirror)
    from_python(G.discriminative_delta)(
        act, n, P, T, wrow, theta, mt, off, sizes, hcum, C, K.SIGMOID, empty,
        delta, grad)
    from_python(G.net_backward)(
        X, act, delta, theta, mt, off, sizes, hcum, K.COL_W, K.COL_B, False, K.SIGMOID,
        empty, grad)

    def loss(t):
        Pm = ref.unpack(t, sizes, C, off)
        below, v = X, []
        for W, b in zip(Pm["W"], Pm["b"]):
            below = ref.phi(below @ W + b, 0)
            v.append(below)
        return -(T * np.log(ref.joint(v, Pm))).sum()

    idx = _ranges(off, sizes, (K.COL_W, K.COL_B), C)
    np.testing.assert_allclose(grad[idx], _numeric_grad(loss, theta, idx), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("proxy", [False, True])
def test_steps_are_single_steps_on_the_batch_with_their_own_replayed_rows(proxy):
    """`steps=3` over `[batch | rows of step 0 | of step 1 | of step 2]` is three one-step
    calls, step `s` on the batch and its own rows, Adam counting `step + s`; the
    proxy labels of the first step stay for the others; `first_P` is the prediction before
    the first step."""
    rng, sizes, off, hcum, theta, _ = _setup(sizes=(5, 4, 3), C=3, n=4, seed=5)
    n, R, steps, C, A = 4, 2, 3, 3, int(hcum[-1])
    X = rng.random((n + steps * R, 5))
    y = np.array([0, -1, 2, -1, 1, 0, 2, 2, 0, 1])
    moments = rng.random(2 * theta.size) * 1e-3
    confidence = 0.34 if proxy else NO_PROXY_LABELS  # low enough for some proxy labels

    def work(rows):
        w = [np.zeros(rows * A) for _ in range(4)] + [np.zeros(rows * int(sizes.max()))]
        w += [np.zeros((rows, 5))] + [np.zeros((rows, C)) for _ in range(3)]
        return tuple(w + [np.zeros(rows), np.zeros(rows), np.zeros(0)])

    def call(X, y, th, mo, step, steps, first_P):
        e = np.zeros(0)
        DK.dhbm_update_mf(X, y, (th, off, sizes, hcum, C, K.SIGMOID), (np.zeros_like(th), mo, step),
                          (0, 0.01, 1.0, 0.3, confidence, 1.0, False), e,
                          (np.zeros((0, 5)), e, np.zeros((0, C)), e, e, e), work(n + R), steps, n,
                          first_P)

    got_theta, got_moments, got_y = theta.copy(), moments.copy(), y.copy()
    first_P = np.full((n, C), -1.0)
    call(X, got_y, got_theta, got_moments, 4, steps, first_P)

    th, mo, codes = theta.copy(), moments.copy(), y.copy()
    P = ref.proba(X[:n], th, sizes, C, off, K.SIGMOID, 1.0, 0)
    for s in range(steps):
        rows = np.r_[0:n, n + s * R : n + (s + 1) * R]
        ys = codes[rows].copy()
        gate = confidence if s == 0 else NO_PROXY_LABELS
        e = np.zeros(0)
        DK.dhbm_update_mf(X[rows], ys, (th, off, sizes, hcum, C, K.SIGMOID),
                          (np.zeros_like(th), mo, 4 + s), (0, 0.01, 1.0, 0.3, gate, 1.0, False), e,
                          (np.zeros((0, 5)), e, np.zeros((0, C)), e, e, e), work(n + R), 1, n + R,
                          np.zeros((0, C)))
        codes[:n] = ys[:n]
    np.testing.assert_allclose(got_theta, th, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_moments, mo, rtol=1e-12, atol=1e-16)
    np.testing.assert_array_equal(got_y[:n], codes[:n])
    assert (got_y[:n] != y[:n]).any() == proxy
    np.testing.assert_allclose(first_P, P, rtol=1e-12, atol=1e-14)
