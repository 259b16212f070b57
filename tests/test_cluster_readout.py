"""The named Gaussian clusters of the generative readout: batch EM against numpy, refits that
follow a changed concept, names from the label ring, and what rows they learn from."""

import numpy as np
import pytest

from river_dhbm import cluster_readout as cr


def _reference_em(buffer, log_w, means, inv_var, floor, steps=cr.EM_STEPS):
    """`steps` steps of diagonal-Gaussian EM in numpy; returns the parameters and the
    buffer's log-likelihood (up to the same constant as the kernel's)."""

    def joint(log_w, means, inv_var):
        return log_w - 0.5 * (((buffer[:, None, :] - means) ** 2) * inv_var).sum(axis=2)

    N = len(buffer)
    for _ in range(steps):
        L = joint(log_w, means, inv_var)
        R = np.exp(L - L.max(axis=1, keepdims=True))
        R /= R.sum(axis=1, keepdims=True)
        R[R < 1e-9] = 0.0  # the kernel skips what cannot count
        w = R.sum(axis=0)
        means = (R.T @ buffer) / w[:, None]
        var = np.maximum((R.T @ buffer**2) / w[:, None] - means**2, floor)
        log_w = np.log(w / N) - 0.5 * np.log(var).sum(axis=1)
        inv_var = 1.0 / var
    L = joint(log_w, means, inv_var)
    top = L.max(axis=1)
    return log_w, means, inv_var, float((top + np.log(np.exp(L - top[:, None]).sum(1))).sum())


def _blobs(n, centres, seed=0, spread=0.05):
    rng = np.random.default_rng(seed)
    k = rng.integers(len(centres), size=n)
    return np.asarray(centres, dtype=float)[k] + spread * rng.standard_normal((n, 2)), k


def test_a_fit_equals_batch_em_in_numpy_and_keeps_the_likelier_start():
    X, _ = _blobs(600, [[0, 0], [1, 0], [0, 1]])
    M = cr.CLUSTERS
    state = [np.zeros(M), np.zeros((M, 2)), np.ones((M, 2))]
    floor = np.zeros(2)
    cr.cluster_fit(X, floor, *state, False)
    np.testing.assert_allclose(floor, cr.VARIANCE_FLOOR * X.var(axis=0), rtol=1e-12)
    start = (np.zeros(M), X[np.arange(M) * (len(X) // M)], np.tile(1 / X.var(axis=0), (M, 1)))
    *fresh, _ = _reference_em(X, *start, floor)
    for got, want in zip(state, fresh):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    # from a fitted state: EM from it and from a fresh start, the likelier kept
    moved = X + 0.3
    warm_start = [a.copy() for a in state]
    cr.cluster_fit(moved, floor, *state, True)
    *warm, warm_ll = _reference_em(moved, *warm_start, floor, cr.WARM_STEPS)
    start = (np.zeros(M), moved[np.arange(M) * (len(X) // M)],
             np.tile(1 / moved.var(axis=0), (M, 1)))
    *fresh, fresh_ll = _reference_em(moved, *start, floor)
    for got, want in zip(state, warm if warm_ll >= fresh_ll else fresh):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def _learn(clusters, X, codes, learn_unlabeled=True, batch=20):
    for b in range(0, len(X), batch):
        clusters.learn(X[b : b + batch], codes[b : b + batch], learn_unlabeled)


def test_the_clusters_follow_a_changed_concept_at_the_next_refit():
    clusters = cr.ClusterState(2, 2)
    old, k_old = _blobs(cr.BUFFER, [[0, 0], [1, 1]])
    codes = np.where(np.arange(len(old)) % 50 == 0, k_old, -1)
    _learn(clusters, old, codes)
    assert clusters.state[1] == 1
    assert (clusters.proba(np.array([[0.0, 0.0], [1.0, 1.0]])).argmax(axis=1) == [0, 1]).all()
    new, k_new = _blobs(cr.REFIT, [[0, 1], [1, 0]], seed=1)  # the classes moved
    _learn(clusters, new, np.where(np.arange(len(new)) % 50 == 0, k_new, -1))
    heavy = clusters.means[np.exp(clusters.log_w) > 1e-3]
    for centre in ([0, 1], [1, 0]):  # every new blob has a cluster on it
        assert np.abs(heavy - centre).max(axis=1).min() < 0.1
    assert (clusters.proba(np.array([[0.0, 1.0], [1.0, 0.0]])).argmax(axis=1) == [0, 1]).all()


def test_the_names_are_the_decayed_posteriors_of_the_ring_labels():
    clusters = cr.ClusterState(2, 3)
    X, k = _blobs(cr.BUFFER + 400, [[0, 0], [1, 0], [0, 1]])
    codes = np.where(np.arange(len(X)) % 7 == 0, k, -1)
    _learn(clusters, X, codes)
    labeled = codes >= 0
    XL, cl = X[labeled], codes[labeled]
    R = np.empty((len(XL), cr.CLUSTERS))
    cr.cluster_posteriors(clusters.log_w, clusters.means, clusters.inv_var, XL, len(XL), R)
    # the ring at the fit (its last LABEL_RING labels), then each later label, all decayed by
    # their age in labels
    fit_labels = labeled[: cr.BUFFER].sum()
    first = max(fit_labels - cr.LABEL_RING, 0)
    assert first > 0 and fit_labels < len(XL)
    weights = (1 - 1 / cr.LABELED_WINDOW) ** np.arange(len(XL))[::-1]
    names = (weights[first:, None] * R[first:]).T @ np.eye(3)[cl[first:]]
    np.testing.assert_allclose(clusters.names, names, rtol=1e-9)


def test_without_unlabeled_rows_only_labels_fill_the_buffer():
    clusters = cr.ClusterState(2, 2)
    X, k = _blobs(400, [[0, 0], [1, 1]])
    codes = np.where(np.arange(400) % 4 == 0, k, -1)
    _learn(clusters, X, codes, learn_unlabeled=False)
    assert clusters.state[0] == 100 and clusters.state[2] == 100
    np.testing.assert_array_equal(clusters.buffer[:100], X[codes >= 0])


def test_before_the_first_fit_the_clusters_know_nothing():
    clusters = cr.ClusterState(3, 4)
    clusters.learn(np.ones((20, 3)), np.zeros(20, np.int64), True)
    np.testing.assert_array_equal(clusters.proba(np.zeros((5, 3))), np.full((5, 4), 0.25))


@pytest.mark.parametrize("n_classes", [0, 2])
def test_a_class_can_join_at_any_time(n_classes):
    clusters = cr.ClusterState(2, n_classes)
    clusters.add_class()
    assert clusters.names.shape == (cr.CLUSTERS, n_classes + 1)


def test_wide_inputs_get_a_smaller_ring():
    assert cr.ClusterState(40).buffer.shape == (cr.BUFFER, 40)
    wide = cr.ClusterState(5_000)
    assert wide.buffer.size <= cr.RING_FLOATS and wide.buffer.shape[0] >= 10 * cr.CLUSTERS
    assert cr.ring_rows(10**9) == 10 * cr.CLUSTERS
