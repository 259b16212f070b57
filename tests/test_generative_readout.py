"""The generative readout: its kernels against a numpy reference, what it learns from which
rows, how it joins predictions, and that it leaves the networks alone."""

import copy
import pickle

import numpy as np
import pytest

from river_dhbm import DHBM, DHDA, HSDA, SBEN, generative_readout as gr

MODELS = [DHBM, SBEN, DHDA, HSDA]


def _reference_log_likelihoods(counts, sums, stage, X):
    n = counts[0] + (counts[stage] if stage else 0.0)
    s = sums[0] + (sums[stage] if stage else 0.0)
    mu = np.clip((s + 0.5) / (n + 1.0)[:, None], gr.MEAN_CLIP, 1 - gr.MEAN_CLIP)
    L = X @ np.log(mu).T + (1 - X) @ np.log(1 - mu).T + np.log((n + 1) / (n + 1).sum())
    L[:, counts[0] <= 0] = -np.inf
    return L


def _softmax(L):
    P = np.exp(L - L.max(axis=1, keepdims=True))
    return P / P.sum(axis=1, keepdims=True)


def _reference_learn(counts, sums, X, codes, learn_unlabeled):
    """Unrolled EM in numpy: the posteriors of every stage first, then the sums."""
    unlabeled = codes < 0
    if learn_unlabeled and unlabeled.any() and counts[0].sum() >= gr.WARM_UP:
        R = [_softmax(_reference_log_likelihoods(counts, sums, j, X[unlabeled]))
             for j in range(gr.STAGES)]
        keep = (1 - 1 / gr.UNLABELED_WINDOW) ** unlabeled.sum()
        for j in range(gr.STAGES):
            counts[j + 1] = keep * counts[j + 1] + R[j].sum(axis=0)
            sums[j + 1] = keep * sums[j + 1] + R[j].T @ X[unlabeled]
    if (~unlabeled).any():
        keep = (1 - 1 / gr.LABELED_WINDOW) ** (~unlabeled).sum()
        onehot = np.eye(counts.shape[1])[codes[~unlabeled]]
        counts[0] = keep * counts[0] + onehot.sum(axis=0)
        sums[0] = keep * sums[0] + onehot.T @ X[~unlabeled]


def _led(n, ratio, seed=0):
    import streams

    X, y = next(streams.LEDDrift(seed=seed, noise_percentage=10).iter_arrays(n))
    labeled = np.random.default_rng(seed).random(n) < ratio
    return X, y, labeled


def test_the_kernels_equal_unrolled_em_in_numpy():
    rng = np.random.default_rng(3)
    d, C = 7, 3
    readout = gr.GenerativeReadout(d)
    for _ in range(C):
        readout.add_class()
    counts, sums = readout.counts.copy(), readout.sums.copy()
    for step in range(40):
        X = rng.random((20, d))
        codes = np.where(rng.random(20) < 0.3, rng.integers(0, C, 20), -1)
        work = np.empty((gr.STAGES, 20, C))
        gr.readout_learn(readout.counts, readout.sums, X, codes, 20, True, work)
        _reference_learn(counts, sums, X, codes, True)
    assert counts[1:].sum() > 0  # the unlabeled rows were learnt
    np.testing.assert_allclose(readout.counts, counts, rtol=1e-10)
    np.testing.assert_allclose(readout.sums, sums, rtol=1e-10)
    X = rng.random((5, d))
    np.testing.assert_allclose(
        readout.proba(X), _softmax(_reference_log_likelihoods(counts, sums, gr.STAGES, X)),
        rtol=1e-9)


def test_unlabeled_rows_wait_for_the_warm_up_and_the_switch():
    X = np.random.default_rng(0).random((20, 4))
    # one label short of the warm-up, then unlabeled rows only; or labels enough, switch off
    for learn_unlabeled, labels in ((True, gr.WARM_UP - 1), (False, 15)):
        readout = gr.GenerativeReadout(4, n_classes=1)
        c = np.full(20, -1)
        c[:labels] = 0
        readout.learn(X, c, np.ones((labels, 1)), learn_unlabeled)
        for _ in range(3):
            readout.learn(X, np.full(20, -1), np.ones((0, 1)), learn_unlabeled)
        assert readout.counts[1:].sum() == 0 and readout.counts[0, 0] == labels
    readout.learn(X, np.full(20, -1), np.ones((0, 1)), True)  # the switch on: they count
    assert readout.counts[1:].sum() > 0


def test_the_class_sums_follow_a_changed_concept():
    """After the concept changes, the class means forget the old one within a few windows."""
    readout = gr.GenerativeReadout(3, n_classes=1)
    old, new = np.array([[1.0, 0.0, 1.0]]), np.array([[0.0, 1.0, 0.0]])
    for rows in (old, new):
        X = np.repeat(rows, 20, axis=0)
        for _ in range(3 * gr.LABELED_WINDOW // 20):
            readout.learn(X, np.zeros(20, dtype=np.int64), np.ones((20, 1)), True)
        mean = readout.sums[0, 0] / readout.counts[0, 0]
        assert np.abs(mean - rows[0]).max() < 0.1  # within 0.05 after 3 windows (e^-3)


def test_the_choice_goes_to_the_smallest_brier_score():
    P_good = np.array([[0.9, 0.1], [0.2, 0.8]])
    P_poor = P_good[:, ::-1].copy()
    P_sure = np.array([[0.99, 0.01], [0.4, 0.6]])  # as many errors as P_good, a larger Brier
    P_edge = np.array([[0.51, 0.49], [0.49, 0.51]])  # no error, Brier 0.96
    P_one = np.array([[1.0, 0.0], [0.55, 0.45]])  # one error, Brier 0.605
    codes = np.array([0, 1])
    readout = gr.GenerativeReadout(2)
    assert readout.choice == gr.NETWORK  # no evidence yet: the network alone
    gr.score(readout.scores, gr.NETWORK, P_one, codes)
    np.testing.assert_allclose(readout.scores[gr.NETWORK], 0.605)
    cases = (
        ((P_good, P_poor, P_poor, P_poor, P_poor), gr.NETWORK),
        ((P_poor, P_good, P_poor, P_poor, P_poor), gr.CLASSES),
        ((P_poor, P_poor, P_good, P_poor, P_poor), gr.CLUSTERS),
        ((P_poor, P_poor, P_poor, P_good, P_poor), gr.AVERAGE),
        ((P_poor, P_poor, P_poor, P_poor, P_good), gr.PLANE),
        ((P_good, P_poor, P_good, P_good, P_good), gr.NETWORK),  # ties: the first
        ((P_sure, P_poor, P_poor, P_poor, P_good), gr.PLANE),  # equal errors, smaller Brier
        ((P_edge, P_one, P_poor, P_poor, P_poor), gr.CLASSES),  # more errors, smaller Brier
    )
    readout.clusters.state[1] = 1  # fitted
    for predictions, chosen in cases:
        readout.scores[:] = 0.0
        for who, P in enumerate(predictions):
            gr.score(readout.scores, who, P, codes)
        assert readout.choice == chosen
    readout.scores[:] = 0.0
    for who, P in enumerate((P_poor, P_good, P_good, P_good, P_good)):
        gr.score(readout.scores, who, P, codes)
    readout.clusters.state[1] = 0  # before their first fit only the class units can win
    assert readout.choice == gr.CLASSES


def test_the_scores_forget_with_rows_as_well_as_with_labels():
    """With rare labels a label window alone would remember a drift for the whole stream."""
    readout = gr.GenerativeReadout(3, 2)
    before = np.array([5.0, 1.0, 2.0, 3.0, 4.0])
    readout.scores[:] = before
    X = np.random.default_rng(0).random((20, 3))
    readout.learn(X, np.full(20, -1), np.empty((0, 2)), True)  # unlabeled rows only
    np.testing.assert_allclose(readout.scores, before * (1 - 1 / gr.CHOICE_ROWS) ** 20,
                               rtol=1e-12)


@pytest.mark.parametrize("cls", MODELS)
def test_the_readout_never_changes_the_network(cls):
    """The network learns the same parameters with the readout or without it."""
    X, y, labeled = _led(2000, 0.05)
    on, off = cls(hidden_sizes=(8,), seed=1), cls(hidden_sizes=(8,), generative_readout=False,
                                                   seed=1)
    for m in (on, off):
        m.test_then_train_arrays(X, y, labeled)
    np.testing.assert_array_equal(on._theta, off._theta)
    assert on._readout is not None and off._readout is None


@pytest.mark.parametrize("cls", MODELS)
def test_without_unlabeled_rows_the_readout_is_naive_bayes_of_the_labels(cls):
    """`learn_unlabeled=False`: streams that differ only in their unlabeled rows give the
    same readout; with unlabeled rows learnt they do not."""
    X, y, labeled = _led(1500, 0.05)
    X2 = np.where(labeled[:, None], X, 1.0 - X)
    for learn_unlabeled in (False, True):
        a, b = (cls(hidden_sizes=(6,), learn_unlabeled=learn_unlabeled, seed=2) for _ in "ab")
        a.learn_arrays(X, y, labeled)
        b.learn_arrays(X2, y, labeled)
        same = np.array_equal(a._readout.sums, b._readout.sums)
        assert same == (not learn_unlabeled)
        assert same == np.array_equal(a._readout.scores, b._readout.scores)
        assert same == np.array_equal(a._readout.clusters.buffer, b._readout.clusters.buffer)


def test_on_scarce_led_labels_the_readout_joins_and_every_path_agrees():
    X, y, labeled = _led(6000, 0.01)
    model = DHBM(seed=0)
    model.test_then_train_arrays(X, y, labeled)
    assert model._readout.choice == gr.CLASSES  # LED is a product-Bernoulli mixture
    rows = X[:30]
    P = model.predict_proba_arrays(rows)
    net = model._proba(rows)
    assert not np.allclose(P, net)
    x = {j: float(v) for j, v in enumerate(rows[0])}
    one = model.predict_proba_one(x)
    np.testing.assert_allclose([one[c] for c in model.classes_], P[0], rtol=1e-12)
    assert model.predict_one(x) == model.classes_[int(P[0].argmax())]
    clone = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(clone.predict_proba_arrays(rows), P)
    copied = copy.deepcopy(model)
    copied.learn_arrays(X[:40], y[:40], labeled[:40])
    model.learn_arrays(X[:40], y[:40], labeled[:40])
    np.testing.assert_array_equal(copied._readout.sums, model._readout.sums)
    np.testing.assert_array_equal(copied._readout.clusters.means, model._readout.clusters.means)


@pytest.mark.parametrize("cls", MODELS)
def test_the_paper_preset_has_no_readout(cls):
    model = cls.paper(hidden_sizes=(4,))
    assert model.generative_readout is False
    X, y, labeled = _led(100, 0.5)
    model.learn_arrays(X, y, labeled)
    assert model._readout is None


@pytest.mark.parametrize("value", [1, "yes", None])
def test_a_bad_switch_is_refused(value):
    with pytest.raises(ValueError, match=r"Invalid generative_readout"):
        DHBM(generative_readout=value)


def test_the_dhbms_one_call_run_equals_its_batches():
    """The one-call run (network and readout each in one kernel call) predicts and learns
    exactly what predicting then learning each mini-batch does, the readout's switches included."""
    from test_test_then_train import _assert_same_model, _batch_by_batch

    X, y, labeled = _led(14000, 0.01)  # past the clusters' first fit
    run, reference = DHBM(seed=4), DHBM(seed=4)
    for m in (run, reference):
        m.learn_arrays(X[:2000], y[:2000])  # every class known
    predicted = run.test_then_train_arrays(X[2000:], y[2000:], labeled[2000:])
    expected = _batch_by_batch(reference, X[2000:], y[2000:], labeled[2000:], 20)
    np.testing.assert_array_equal(predicted, expected)
    _assert_same_model(run, reference, X[:50])
    assert run._readout.choice == gr.CLASSES  # the class units took over in this run
    assert run._readout.clusters.state[1] == 1  # and the clusters were fitted in it
    for a, b in zip(run._readout.clusters.arrays + run._readout.plane.arrays,
                    reference._readout.clusters.arrays + reference._readout.plane.arrays):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(run._readout.scores, reference._readout.scores)


def test_on_scarce_waveform_labels_the_unlabeled_rows_experts_join():
    """Waveform's classes are not product distributions: the class units lose, and the
    clusters (alone or averaged with the network) or the plane make fewer errors than the young
    network."""
    from evaluation.registry import make_stream

    X, y = next(make_stream("waveform-stationary", 0).iter_arrays(60_000))
    labeled = np.random.default_rng(0).random(len(X)) < 0.01
    model = DHBM(seed=0)
    model.test_then_train_arrays(X, y, labeled)
    assert model._readout.choice in (gr.CLUSTERS, gr.AVERAGE, gr.PLANE)
    scores = model._readout.scores
    assert scores[gr.CLASSES] > scores[gr.CLUSTERS]
    assert scores[model._readout.choice] < scores[gr.NETWORK]
