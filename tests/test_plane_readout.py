"""The plane: the classes as blurred segments in the principal plane of the recent rows, shaped
by the unlabeled rows (semi-supervised EM) and named by the labels."""

import numpy as np
from scipy.special import log_ndtr

import river_dhbm.plane_readout as pr
from river_dhbm.cluster_readout import BUFFER
from river_dhbm.generative_readout import GenerativeReadout


def _segments(corners, n, rng):
    """Three classes on the edges of the triangle `corners [3, d]`, plus noise."""
    d = corners.shape[1]
    edges = ((0, 1), (0, 2), (1, 2))
    y = rng.integers(0, 3, n)
    u = rng.random((n, 1))
    a, b = corners[[edges[k][0] for k in y]], corners[[edges[k][1] for k in y]]
    return u * a + (1 - u) * b + 0.3 * rng.normal(size=(n, d)), y


def _learn(readout, X, codes, batch=20):
    for b in range(0, len(X), batch):
        rows = slice(b, b + batch)
        labeled = codes[rows] >= 0
        P = np.full((labeled.sum(), readout.counts.shape[1]), 1.0 / readout.counts.shape[1])
        readout.learn(X[rows], codes[rows], P, True)


def _fitted(seed=0, ratio=0.05, keep=lambda y: True):
    """A readout fitted to `BUFFER` rows, `ratio` of them labeled (those whose class `keep`s)."""
    rng = np.random.default_rng(seed)
    corners = rng.normal(size=(3, 12))
    X, y = _segments(corners, BUFFER, rng)
    codes = np.where((rng.random(BUFFER) < ratio) & keep(y), y, -1)
    readout = GenerativeReadout(X.shape[1], 3)
    _learn(readout, X, codes)
    assert readout.clusters.state[1] == 1  # the first fit
    return readout, X, codes, corners


def test_the_plane_is_the_rings_two_leading_principal_directions():
    readout, X, _, _ = _fitted()
    plane = readout.plane
    np.testing.assert_allclose(plane.center, X.mean(axis=0), rtol=1e-9, atol=1e-12)
    values, vectors = np.linalg.eigh(np.cov(X.T, bias=True))
    top = vectors[:, ::-1][:, : pr.PLANE_DIM]
    np.testing.assert_allclose(plane.basis.T @ plane.basis, top @ top.T, atol=1e-9)
    np.testing.assert_allclose(plane.limits[0], pr.RIDGE * values.sum() / X.shape[1], rtol=1e-9)
    D = X - X.mean(axis=0)
    off = (D**2).sum(axis=1) - ((D @ top) ** 2).sum(axis=1)
    np.testing.assert_allclose(plane.limits[1], off.mean() + pr.OFF_PLANE * off.std(), rtol=1e-9)
    np.testing.assert_allclose(plane.limits[2], off.mean() / (X.shape[1] - 2), rtol=1e-9)


def test_the_moments_are_the_decayed_sums_of_the_labels_in_the_plane():
    readout, X, codes, _ = _fitted()
    plane = readout.plane
    rows = np.flatnonzero(codes >= 0)  # all within the label ring (fewer than LABEL_RING)
    D = X[rows] - plane.center
    Z = D @ plane.basis.T
    near = (D**2).sum(axis=1) - (Z**2).sum(axis=1) <= plane.limits[1]
    assert 0.95 < near.mean() < 1  # the noise's tail is left out, it still ages the others
    weight = (1 - 1 / pr.PLANE_WINDOW) ** np.arange(len(rows))[::-1] * near
    for k in range(3):
        w, z = weight[codes[rows] == k], Z[codes[rows] == k]
        expected = [w.sum(), *(w @ z), w @ (z[:, 0] ** 2), w @ (z[:, 0] * z[:, 1]),
                    w @ (z[:, 1] ** 2)]
        np.testing.assert_allclose(plane.moments[k], expected, rtol=1e-8)


def _segment_log_joint(moments, limits, Z):
    """numpy's reference of `log p(y = k) + log p(z | k)` under the classes' blurred segments."""
    ridge, noise = limits[0], limits[2]
    out = np.full((len(Z), len(moments)), -np.inf)
    for k, m in enumerate(moments):
        mean = m[1:3] / m[0]
        cov = np.array([[m[3], m[4]], [m[4], m[5]]]) / m[0] - np.outer(mean, mean)
        values, vectors = np.linalg.eigh(cov)
        along, across = vectors[:, 1], vectors[:, 0]
        half = np.sqrt(3 * max(values[1] - noise, ridge))
        spread = values[0] + ridge
        t, p = (Z - mean) @ along, (Z - mean) @ across
        hi, lo = log_ndtr((half - t) / np.sqrt(noise)), log_ndtr((-half - t) / np.sqrt(noise))
        out[:, k] = (np.log(m[0] / moments[:, 0].sum()) - 0.5 * np.log(spread)
                     - 0.5 * p**2 / spread - np.log(2 * half) + hi + np.log1p(-np.exp(lo - hi)))
    return out


def _posteriors(L):
    P = np.exp(L - L.max(axis=1, keepdims=True))
    return P / P.sum(axis=1, keepdims=True)


def test_the_prediction_is_the_classes_blurred_segments_in_the_plane():
    readout, X, _, _ = _fitted()
    plane = readout.plane
    assert (plane.unlabeled[:, 0] > 0).all()  # the ring's rows shaped the segments
    Z = (X[:50] - plane.center) @ plane.basis.T
    expected = _posteriors(_segment_log_joint(plane.moments + plane.unlabeled, plane.limits, Z))
    np.testing.assert_allclose(readout._plane_proba(X[:50]), expected, rtol=1e-7, atol=1e-12)


def test_the_ring_shapes_the_segments_by_semi_supervised_em():
    """`unlabeled` holds the ring's rows shared among the classes by the posteriors of the
    segments of the step before, `EM_STEPS` times, each step starting from the labels."""
    readout, X, codes, _ = _fitted(ratio=0.02)
    plane = readout.plane
    D = X - plane.center
    Z = D @ plane.basis.T
    Z = Z[(D**2).sum(axis=1) - (Z**2).sum(axis=1) <= plane.limits[1]]
    shares = np.zeros_like(plane.moments)
    for _ in range(pr.EM_STEPS):
        Q = _posteriors(_segment_log_joint(plane.moments + shares, plane.limits, Z))
        shares = np.stack([[q.sum(), *(q @ Z), q @ Z[:, 0] ** 2, q @ (Z[:, 0] * Z[:, 1]),
                            q @ Z[:, 1] ** 2] for q in Q.T])
    np.testing.assert_allclose(plane.unlabeled, shares, rtol=1e-7)


def test_the_unlabeled_rows_make_few_labels_go_further():
    readout, _, codes, corners = _fitted(seed=4, ratio=0.002)
    assert (codes >= 0).sum() < 30
    X, y = _segments(corners, 4000, np.random.default_rng(9))  # new rows of the same classes
    shaped = (readout._plane_proba(X).argmax(axis=1) == y).mean()
    readout.plane.unlabeled[:] = 0.0  # the labels alone
    alone = (readout._plane_proba(X).argmax(axis=1) == y).mean()
    assert shaped > alone + 0.03


def test_the_ring_is_left_alone_where_the_plane_does_not_stand_out():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, BUFFER)
    X = 0.2 * np.eye(12)[y] + rng.normal(size=(BUFFER, 12))  # no direction stands out
    readout = GenerativeReadout(12, 3)
    _learn(readout, X, np.where(rng.random(BUFFER) < 0.05, y, -1))
    assert readout.clusters.state[1] == 1 and (readout.plane.moments[:, 0] > 0).all()
    np.testing.assert_array_equal(readout.plane.unlabeled, 0.0)


def test_without_learn_unlabeled_the_ring_shapes_nothing():
    rng = np.random.default_rng(0)
    corners = rng.normal(size=(3, 12))
    X, y = _segments(corners, 2 * BUFFER, rng)
    readout = GenerativeReadout(12, 3)
    for b in range(0, len(X), 20):  # every row labeled, so that the labels alone fill the ring
        readout.learn(X[b : b + 20], y[b : b + 20], np.full((20, 3), 1 / 3), False)
    assert readout.clusters.state[1] == 1 and (readout.plane.moments[:, 0] > 0).all()
    np.testing.assert_array_equal(readout.plane.unlabeled, 0.0)


def test_rows_far_off_the_plane_get_no_opinion():
    readout, X, _, _ = _fitted()
    far = readout.plane.center + 100.0 * np.random.default_rng(3).normal(size=(5, X.shape[1]))
    np.testing.assert_array_equal(readout._plane_proba(far), np.full((5, 3), 1 / 3))


def test_the_log_of_a_normal_interval_is_accurate_in_both_tails():
    for a, b in [(0.5, -0.5), (3.0, 2.0), (40.0, 38.0), (-2.0, -3.0), (-38.0, -40.0),
                 (9.0, -9.0), (1e-3, 0.0), (50.0, 49.9)]:
        hi, lo = (log_ndtr(-b), log_ndtr(-a)) if b > 0 else (log_ndtr(a), log_ndtr(b))
        expected = hi + np.log1p(-np.exp(lo - hi))  # Phi(a) - Phi(b) = Phi(-b) - Phi(-a)
        np.testing.assert_allclose(pr._log_gap(a, b), expected, rtol=1e-9 if abs(a) < 30 else 1e-5,
                                   atol=1e-15)


def test_few_labels_in_the_plane_separate_the_edges():
    readout, _, codes, corners = _fitted(ratio=0.005)
    assert (codes >= 0).sum() < 80
    X, y = _segments(corners, 2000, np.random.default_rng(9))  # new rows of the same classes
    assert (readout._plane_proba(X).argmax(axis=1) == y).mean() > 0.85


def test_labels_far_off_the_plane_are_left_out():
    readout, X, _, _ = _fitted()
    before = readout.plane.moments.copy()
    far = readout.plane.center + 100.0 * np.random.default_rng(3).normal(size=(20, X.shape[1]))
    _learn(readout, far, np.zeros(20, np.int64))
    decayed = before * (1 - 1 / pr.PLANE_WINDOW) ** 20  # they count as labels, no more
    np.testing.assert_allclose(readout.plane.moments, decayed, rtol=1e-12)


def test_uniform_before_the_first_fit_and_nothing_for_an_unnamed_class():
    readout = GenerativeReadout(12, 3)
    np.testing.assert_array_equal(readout._plane_proba(np.zeros((4, 12))), np.full((4, 3), 1 / 3))
    readout, X, _, _ = _fitted(keep=lambda y: y < 2)
    P = readout._plane_proba(X[:10])
    assert (P[:, 2] == 0).all() and np.allclose(P.sum(axis=1), 1)


def test_classes_join():
    plane = pr.PlaneState(5, 2)
    plane.add_class()
    assert plane.moments.shape == plane.unlabeled.shape == (3, 6)


def test_a_single_feature_is_its_own_plane():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, BUFFER)
    X = (3.0 * y + rng.normal(size=BUFFER))[:, None]
    readout = GenerativeReadout(1, 2)
    _learn(readout, X, np.where(rng.random(BUFFER) < 0.05, y, -1))
    np.testing.assert_array_equal(np.abs(readout.plane.basis), [[1.0], [0.0]])
    P = readout._plane_proba(np.array([[-1.0], [4.0]]))
    assert (P.argmax(axis=1) == [0, 1]).all()
