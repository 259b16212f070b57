"""Unlabeled rows that never cost: the hybrid, its labeled-only twin and their mixture
(`river_dhbm.safety`)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from river import utils

from river_dhbm import DHBM, DHDA, HSDA, SBEN, PseudoLabelMLP
from river_dhbm import safety
from river_dhbm.aggregating import (
    LEAD_DEVIATIONS,
    LEAD_MARGIN,
    AggregatingMixture,
    _substitute,
    brier,
)
from river_dhbm.safety import PRIORS

#: The network's prior against its twin alone (the ablation has no twin, the default both).
PRIOR = PRIORS["network"] / (PRIORS["network"] + PRIORS["twin"])

MODELS = [
    (DHBM, {"hidden_sizes": (8,)}),
    (DHBM, {"hidden_sizes": (8,), "estimator": "sap"}),
    (DHDA, {"hidden_sizes": (8,)}),
    (SBEN, {"hidden_sizes": (8, 8)}),
    (HSDA, {"hidden_sizes": (8, 8)}),
    (PseudoLabelMLP, {"hidden_sizes": (8,)}),
]


def _ids(params):
    cls, kwargs = params
    return cls.__name__ + ("-" + kwargs["estimator"] if "estimator" in kwargs else "")


def _linear_stream(n, d=5, ratio=0.05, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    y = (X[:, 0] + X[:, 1] > 1.0).astype(np.int64)
    return X, y, rng.random(n) < ratio


def _prequential(model, X, y, labeled):
    """Accuracy of `test_then_train_arrays` over the whole stream."""
    predicted = model.test_then_train_arrays(X, y, labeled)
    classes = np.array(model.classes_)
    return float(np.mean(np.where(predicted >= 0, classes[np.maximum(predicted, 0)], -1) == y))


# ---------------------------------------------------------------------------------- the mixture


def _random_proba(rng, n, k, sharpness):
    P = rng.random((n, k)) ** sharpness
    return P / P.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("prior", [0.5, PRIOR])
def test_mixture_is_within_its_bound_of_each_expert(prior):
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 4, 500)
    P_h, P_t = _random_proba(rng, 500, 4, 8.0), _random_proba(rng, 500, 4, 1.0)
    P_h[:50, :] = 0.0
    P_h[np.arange(50), (codes[:50] + 1) % 4] = 1.0  # certain and wrong: the worst score, 2
    mixture = AggregatingMixture([prior, 1.0 - prior], step=0.0)  # the experts as they are
    for chunk in np.array_split(np.arange(500), 37):  # in chunks: the order alone matters
        mixture.score([P_h[chunk], P_t[chunk]], codes[chunk])
    E = np.eye(4)[codes]
    L_h, L_t = ((P_h - E) ** 2).sum(), ((P_t - E) ** 2).sum()
    np.testing.assert_allclose(mixture.losses, [L_h, L_t])
    bayes = -np.logaddexp(math.log(prior) - L_h, math.log(1.0 - prior) - L_t)
    assert mixture.loss_mixture <= bayes + 1e-9  # the aggregating algorithm's own bound
    assert mixture.loss_mixture <= L_h + math.log(1.0 / prior) + 1e-9
    assert mixture.loss_mixture <= L_t + math.log(1.0 / (1.0 - prior)) + 1e-9
    assert mixture.n_scored == 500
    odds = math.log((1.0 - prior) / prior)
    assert mixture.weights[0] == pytest.approx(0.5 - 0.5 * math.tanh((L_h - L_t + odds) / 2),
                                               abs=1e-12)


@pytest.mark.parametrize("k", [2, 3, 10])
def test_the_prediction_is_mixable_at_rate_one(k):
    # the bound holds because the prediction's Brier score is at most the experts' mixed loss
    # g(y) for every class y; the plain mixture of the two is not (the control)
    rng = np.random.default_rng(k)
    P, Q = _random_proba(rng, 20000, k, 6.0), _random_proba(rng, 20000, k, 6.0)
    w = rng.random(20000)[:, None]
    per_class = [np.stack([brier(R, np.full(len(R), y)) for y in range(k)], axis=1)
                 for R in (P, Q)]
    g = -np.log(w * np.exp(-per_class[0]) + (1 - w) * np.exp(-per_class[1]))
    gamma = _substitute([P, Q], np.hstack([w, 1 - w]))
    assert np.allclose(gamma.sum(axis=1), 1.0) and gamma.min() >= 0.0
    for y in range(k):
        assert (brier(gamma, np.full(20000, y)) <= g[:, y] + 1e-12).all()
    plain = w * P + (1 - w) * Q
    assert max((brier(plain, np.full(20000, y)) - g[:, y]).max() for y in range(k)) > 1e-3


def test_a_whole_weight_predicts_with_that_expert():
    rng = np.random.default_rng(3)
    P, Q = _random_proba(rng, 50, 5, 3.0), _random_proba(rng, 50, 5, 3.0)
    assert np.allclose(_substitute([P, Q], np.array([[1.0, 0.0]])), P, atol=1e-12)
    assert np.allclose(_substitute([P, Q], np.array([[0.0, 1.0]])), Q, atol=1e-12)


def test_mixture_weight_saturates_without_overflow():
    mixture = AggregatingMixture([PRIOR, 1.0 - PRIOR], step=0.0)
    assert mixture.weights[0] == pytest.approx(PRIOR)
    codes = np.zeros(3000, dtype=np.int64)
    right, wrong = np.eye(2)[codes], np.eye(2)[1 - codes]
    mixture.score([wrong[:1000], right[:1000]], codes[:1000])  # the hybrid 2,000 behind
    assert mixture.weights[0] == 0.0
    mixture.score([right, wrong], codes)
    assert mixture.weights[0] == 1.0
    assert np.isfinite(mixture.loss_mixture)


# ---------------------------------------------------------------------------------- the twin


@pytest.mark.parametrize("params", MODELS, ids=_ids)
def test_twin_is_the_labeled_only_ablation(params):
    cls, kwargs = params
    X, y, labeled = _linear_stream(1200)
    labeled[:45] = False  # updates before the first label, too
    model, ablation = cls(seed=1, **kwargs), cls(seed=1, learn_unlabeled=False, **kwargs)
    model.learn_arrays(X, y, labeled)
    ablation.learn_arrays(X, y, labeled)
    assert ablation._twin is None and ablation.unlabeled_trust == 1.0
    np.testing.assert_allclose(model._twin._proba(X[:300]), ablation._proba(X[:300]), atol=1e-12)
    assert model._twin._linear is None and model._twin._mixture is None  # no experts of its own
    np.testing.assert_allclose(model._linear.W, ablation._linear.W, atol=1e-12)  # the same
    # every labeled row but each class's first, which no expert could have predicted
    assert model._mixture.n_scored == labeled.sum() - len(model.classes_)


@pytest.mark.parametrize("cls", [DHBM, DHDA, SBEN, HSDA, PseudoLabelMLP])
def test_paper_settings_and_the_ablation_have_no_twin(cls):
    X, y, labeled = _linear_stream(100)
    for model in (cls.paper(), cls(learn_unlabeled=False), cls(safe_unlabeled=False)):
        model.learn_arrays(X, y, labeled)
        assert model._twin is None and model.unlabeled_trust == 1.0
    assert cls.paper()._linear is None and cls.paper().expert_weights == {"network": 1.0}
    assert cls.paper().safe_unlabeled is False and cls().safe_unlabeled is True
    assert cls.paper().linear_expert is False and cls().linear_expert is True


def test_safe_unlabeled_and_linear_expert_are_checked():
    with pytest.raises(ValueError, match="safe_unlabeled"):
        DHBM(safe_unlabeled="yes")
    with pytest.raises(ValueError, match="linear_expert"):
        DHBM(linear_expert=1)


# ---------------------------------------------------------------------------------- predictions


def _mixed_model(cls=DHBM, seed=3):
    """A DHBM (or `cls`) whose mixture weighs its experts (no weight rounds to 0 or 1)."""
    X, y, labeled = _linear_stream(600, seed=seed)
    model = cls(hidden_sizes=(8,), seed=seed)
    model.learn_arrays(X, y, labeled)
    assert 0.0 < model.unlabeled_trust < 1.0 and 0.0 < model.expert_weights["linear"] < 1.0
    return model, X


def test_every_path_predicts_the_mixture():
    model, X = _mixed_model()
    expected = model._mixture.mix(safety.expert_proba(model, X[:40]))
    np.testing.assert_allclose(model.predict_proba_arrays(X[:40]), expected, atol=1e-12)
    frame = __import__("pandas").DataFrame(X[:40], columns=range(X.shape[1]))
    np.testing.assert_allclose(model.predict_proba_many(frame).to_numpy(), expected, atol=1e-12)
    for row, p in zip(X[:40], expected):
        x = dict(enumerate(row))
        proba = model.predict_proba_one(x)
        np.testing.assert_allclose([proba[c] for c in model.classes_], p, atol=1e-12)
        assert model.predict_one(x) == model.classes_[int(np.argmax(p))]


def test_learn_one_scores_each_expert_with_its_own_one_row_prediction():
    """A labeled row's experts are scored through the one kernel call of the predictions when
    that call's rows are each expert's own one-row prediction, to the bit (the DHBM's). The
    control is the DHDA, whose network predicts a row with its batch kernel, at round-off from
    that call: it scores with each expert's own."""
    for cls, through_one_call in ((DHBM, True), (DHDA, False)):
        model, X = _mixed_model(cls)
        rows = [X[i : i + 1] for i in range(40)]
        scored = np.array([safety.expert_proba_row(model, row) for row in rows])
        one_call = np.empty_like(scored)
        for row, P in zip(rows, one_call):
            model._experts_row(row, model._mixture.weights, P, np.empty(P.shape[1]))
        model._scores_with_experts_row = False  # each expert's own one-row kernel
        own = np.array([safety.expert_proba_row(model, row) for row in rows])
        np.testing.assert_array_equal(scored, one_call if through_one_call else own)
        assert (one_call == own).all() if through_one_call else (one_call != own).any()


def test_test_then_train_predicts_the_mixture_block_by_block():
    X, y, labeled = _linear_stream(1000, seed=4)
    fused, stepwise = DHBM(hidden_sizes=(8,), seed=2), DHBM(hidden_sizes=(8,), seed=2)
    fused.learn_arrays(X[:200], y[:200], labeled[:200])
    stepwise.learn_arrays(X[:200], y[:200], labeled[:200])
    predicted = fused.test_then_train_arrays(X[200:], y[200:], labeled[200:])
    for start in range(200, 1000, 20):
        block = slice(start, start + 20)
        expected = stepwise.predict_proba_arrays(X[block]).argmax(axis=1)
        np.testing.assert_array_equal(predicted[start - 200 : start - 180], expected)
        stepwise.learn_arrays(X[block], y[block], labeled[block])
    assert fused.unlabeled_trust == pytest.approx(stepwise.unlabeled_trust, abs=1e-12)
    assert fused._mixture.n_scored == stepwise._mixture.n_scored == (labeled.sum()
                                                                      - len(fused.classes_))


def test_pickling_and_cloning_keep_the_twin():
    model, X = _mixed_model()
    restored = pickle.loads(pickle.dumps(model))
    assert restored.unlabeled_trust == model.unlabeled_trust
    np.testing.assert_array_equal(restored.predict_proba_arrays(X[:50]),
                                  model.predict_proba_arrays(X[:50]))
    fresh = utils.clone(model) if hasattr(utils, "clone") else model.clone()
    assert fresh._twin is None and fresh.unlabeled_trust == 1.0  # nothing seen yet
    fresh.learn_arrays(X[:40], np.zeros(40, dtype=np.int64))
    assert fresh._twin is not None and fresh._twin.safe_unlabeled is False


# ---------------------------------------------------------------------------------- planted streams


def _clusters(n, seed, d, k, sd, across):
    """Gaussian clusters in [0, 1]^d; the class is the cluster (`across=False`) or the side of a
    random hyperplane through the data's median, which cuts across the clusters."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 0.8, (k, d))
    c = rng.integers(0, k, n)
    X = np.clip(centres[c] + rng.normal(0.0, sd, (n, d)), 0.0, 1.0)
    if not across:
        return X, c.astype(np.int64)
    s = X @ rng.normal(size=d)
    return X, (s > np.median(s)).astype(np.int64)


def _three_ways(X, y, labeled, seed, **settings):
    """Prequential accuracy of the hybrid alone, the labeled-only ablation and the default
    (the mixture), and the default model."""
    alone = _prequential(DHBM(seed=seed, safe_unlabeled=False, **{"linear_expert": False,
                                                                   **settings}), X, y, labeled)
    ablation = _prequential(DHBM(seed=seed, learn_unlabeled=False, **settings), X, y, labeled)
    model = DHBM(seed=seed, **settings)
    return alone, ablation, _prequential(model, X, y, labeled), model


@pytest.mark.parametrize("seed", [1, 2])
def test_unlabeled_rows_that_mislead_cost_nothing(seed):
    # clusters across the classes, and a hybrid that trusts its own guesses on them (every
    # unlabeled row a hard proxy label, weighted 30): alone it falls far below its ablation
    X, y = _clusters(8000, seed, d=10, k=8, sd=0.04, across=True)
    labeled = np.random.default_rng(seed + 100).random(len(y)) < 0.05
    alone, ablation, default, model = _three_ways(
        X, y, labeled, seed, beta=30.0, confidence=0.5, pseudo_label="hard")
    assert alone < ablation - 0.05  # the stream misleads
    assert default >= ablation - 0.005
    assert model.unlabeled_trust < 1e-6
    mixture = model._mixture
    assert mixture.n_scored == labeled.sum() - len(model.classes_)
    # the bound against the twin, whose prior grows with its labels: ln(3 N)
    twin = math.log(sum(PRIORS.values()) / PRIORS["twin"] * mixture.needs[1])
    assert mixture.loss_mixture <= mixture.losses[1] + twin + 1e-9


def test_unlabeled_rows_that_help_are_trusted():
    # noisy clusters, one per class, in 50 dimensions, 0.5 % labels: the unlabeled rows pay
    X, y = _clusters(6000, 2, d=50, k=5, sd=0.3, across=False)
    labeled = np.random.default_rng(52).random(len(y)) < 0.005
    # the network and its twin alone: the linear expert is as good as the network here
    alone, ablation, default, model = _three_ways(X, y, labeled, 2, linear_expert=False)
    assert alone > ablation + 0.05
    assert model.unlabeled_trust > PRIOR  # 30 labeled rows moved it towards the network
    assert default > alone - 0.01  # the prediction follows the network


def test_permuted_labels_stay_at_chance():
    X, y, labeled = _linear_stream(4000, ratio=0.1, seed=5)
    permuted = np.random.default_rng(6).permutation(y)
    accuracy = _prequential(DHBM(hidden_sizes=(16,), seed=1), X, permuted, labeled)
    assert abs(accuracy - 0.5) < 0.03
    assert _prequential(DHBM(hidden_sizes=(16,), seed=1), X, y, labeled) > 0.85  # it learns


def test_river_loop_scores_each_labeled_row_once_as_predicted():
    # `learn_one` of the dict just predicted reuses the experts' predictions; any other dict
    # (another one predicted in between, one never predicted) is scored afresh: same sums
    X, y, labeled = _linear_stream(400, seed=7)
    loop, arrays = DHBM(hidden_sizes=(8,), seed=4), DHBM(hidden_sizes=(8,), seed=4)
    for i, (row, label, keep) in enumerate(zip(X, y, labeled)):
        x = dict(enumerate(row.tolist()))
        if i % 3:
            loop.predict_proba_one(x)
        if i % 7 == 0:
            loop.predict_one(dict(enumerate((1.0 - row).tolist())))  # another row in between
        loop.learn_one(x, int(label) if keep else None)
    arrays.learn_arrays(X, y, labeled)
    for a, b in ((loop._mixture, arrays._mixture),):
        assert a.n_scored == b.n_scored == labeled.sum() - len(loop.classes_)
        np.testing.assert_allclose(a.losses, b.losses, rtol=1e-12)
        assert a.loss_mixture == pytest.approx(b.loss_mixture, rel=1e-12)


def test_one_row_mixes_as_the_array_path():
    rng = np.random.default_rng(4)
    for k in (2, 3, 10):
        P, Q = _random_proba(rng, 200, k, 4.0), _random_proba(rng, 200, k, 4.0)
        R = _random_proba(rng, 200, k, 2.0)
        for priors in ((0.02, 0.98), (0.5, 0.5), (PRIOR, 1.0 - PRIOR), (0.999, 0.001),
                       tuple(PRIORS.values())):
            experts = (P, Q, R)[: len(priors)]
            mixture = AggregatingMixture(priors)
            # calibrated as scoring leaves them: some sharpened, some softened
            mixture.log_temps[:] = rng.uniform(-1.0, 1.0, len(priors))
            rows = [mixture.mix_row([e.tolist() for e in ps]) for ps in zip(*experts)]
            np.testing.assert_allclose(rows, mixture.mix(experts), atol=1e-12)


# ---------------------------------------------------------------------------------- calibration


def test_the_calibration_kernel_is_the_numpy_softmax_of_tempered_logarithms():
    from kernel_calls import from_python
    from river_dhbm._kernels import mixture as kernels

    rng = np.random.default_rng(8)
    P = _random_proba(rng, 3, 5, 4.0)
    P[0, 2] = 0.0  # a zero: its logarithm is taken of `TINY`
    log_temps = np.array([0.7, -0.4, 0.0])
    Q = np.empty_like(P)
    from_python(kernels.calibrate)(P, log_temps, Q)
    for e in range(3):
        Z = np.log(np.maximum(P[e], kernels.TINY)) / math.exp(log_temps[e])
        np.testing.assert_allclose(Q[e], np.exp(Z) / np.exp(Z).sum(), rtol=1e-12)
    assert (Q[2] == P[2]).all()  # a log temperature of 0: the expert itself, to the bit


def test_each_temperature_step_follows_the_log_loss_gradient():
    # one scored row moves each log temperature by -step * d(-ln q_y)/d(tau), the derivative
    # checked by finite differences
    rng = np.random.default_rng(9)
    P = _random_proba(rng, 2, 4, 3.0)
    code, step = 1, 0.05

    def log_loss(e, tau):
        Z = np.log(P[e]) / math.exp(tau)
        return float(np.log(np.exp(Z).sum()) - Z[code])

    mixture = AggregatingMixture([0.5, 0.5], step=step)
    mixture.log_temps[:] = [0.3, -0.2]
    before = mixture.log_temps.copy()
    mixture.score_row(P, code)
    h = 1e-6
    for e in range(2):
        slope = (log_loss(e, before[e] + h) - log_loss(e, before[e] - h)) / (2 * h)
        assert mixture.log_temps[e] == pytest.approx(before[e] - step * slope, abs=1e-9)


def test_calibration_hands_the_weight_to_the_more_accurate_expert():
    # an expert right 75 % of the time but always 99 % sure, against one right 55 % of the
    # time at 60 %: the Brier score prefers the cautious one as they are (the control), the
    # calibrated mixture the accurate one, and predicts as it does
    rng = np.random.default_rng(10)
    n, k = 600, 2
    codes = rng.integers(0, k, n)
    bold_right, cautious_right = rng.random(n) < 0.75, rng.random(n) < 0.55
    bold = np.where(bold_right, codes, 1 - codes)
    cautious = np.where(cautious_right, codes, 1 - codes)
    P_bold = np.full((n, k), 0.01)
    P_bold[np.arange(n), bold] = 0.99
    P_cautious = np.full((n, k), 0.4)
    P_cautious[np.arange(n), cautious] = 0.6

    def run(step, lead=False):
        mixture = AggregatingMixture([0.5, 0.5], step=step)
        if not lead:
            mixture.errors = np.zeros(0)  # the aggregating algorithm alone
        right = 0
        for r in range(n):
            P = np.vstack([P_bold[r], P_cautious[r]])
            right += int(np.argmax(mixture.mix_row(P)) == codes[r])
            mixture.score_row(P, int(codes[r]))
        return right / n, mixture

    plain, as_they_are = run(0.0)
    calibrated, mixture = run(0.05)
    assert as_they_are.weights[1] > 0.99  # the control: caution wins
    assert mixture.weights[0] > 0.99 and mixture.log_temps[0] > 0.5  # the bold one softened
    assert calibrated >= bold_right.mean() - 0.03 > plain + 0.1
    # counting errors finds the bold one too, without calibration: it leads, alone
    led, leading = run(0.0, lead=True)
    assert leading.weights.tolist() == [1.0, 0.0] and led >= bold_right.mean() - 0.03
    assert leading.loss_mixture == as_they_are.loss_mixture  # the algorithm's, underneath
    # the bound holds against each calibrated expert
    assert (mixture.loss_mixture <= mixture.losses + np.log(2.0) + 1e-9).all()


# ---------------------------------------------------------------------------------- grown priors


def test_the_kernels_weights_are_the_softmax_of_the_grown_priors_less_the_losses():
    rng = np.random.default_rng(11)
    Ps = [_random_proba(rng, 90, 3, s) for s in (4.0, 2.0, 1.0)]
    codes = rng.integers(0, 3, 90)
    mixture = AggregatingMixture(list(PRIORS.values()), step=0.0, needs=[40.0, 40.0, 0.0])
    prior = np.array(list(PRIORS.values()))
    unlabeled = prior * [1 / 40, 1 / 40, 1]  # the priors of no labels
    np.testing.assert_allclose(mixture.weights, unlabeled / unlabeled.sum(), rtol=1e-12)
    for n in (30, 60, 90):
        chunk = slice(n - 30, n)
        mixture.score([P[chunk] for P in Ps], codes[chunk])
        losses = np.array([brier(P[:n], codes[:n]).sum() for P in Ps])
        np.testing.assert_allclose(mixture.losses, losses, rtol=1e-12)
        grown = np.log(prior) + np.log([(n + 1) / 40, (n + 1) / 40, 1.0]) - losses
        np.testing.assert_allclose(mixture.weights, np.exp(grown) / np.exp(grown).sum(),
                                   rtol=1e-9)
    assert mixture.evidence[0] == 90
    mixture.restart()
    assert mixture.evidence[0] == 0
    np.testing.assert_allclose(mixture.weights, unlabeled / unlabeled.sum(), rtol=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_grown_priors_keep_the_bound_with_the_growth_added(seed):
    # against a growing expert ln(1 / prior) + ln(needs); against a fixed one ln(1 / prior)
    # + ln(n): experts bold and wrong in turns, the worst case for a mixture that follows them
    rng = np.random.default_rng(seed)
    n, needs = 400, 25.0
    codes = rng.integers(0, 2, n)
    turns = np.cumsum(rng.integers(20, 80, n))  # phases of the seed's lengths
    Ps = []
    for phase in range(2):
        right = np.searchsorted(turns, np.arange(n), side="right") % 2 == phase
        sure = rng.uniform(0.7, 0.99, n)
        P = np.empty((n, 2))
        P[np.arange(n), np.where(right, codes, 1 - codes)] = sure
        P[np.arange(n), np.where(right, 1 - codes, codes)] = 1.0 - sure
        Ps.append(P)
    prior = (0.6, 0.4)
    mixture = AggregatingMixture(prior, step=0.0, needs=[needs, 0.0])
    for r in range(n):
        mixture.score_row(np.vstack([P[r] for P in Ps]), int(codes[r]))
    assert mixture.loss_mixture <= mixture.losses[0] + math.log(needs / prior[0]) + 1e-9
    assert mixture.loss_mixture <= mixture.losses[1] + math.log(n / prior[1]) + 1e-9
    assert mixture.loss_mixture > min(mixture.losses)  # the case is hard: no free lunch


def test_the_network_earns_its_prior_with_labels_per_input():
    model = DHBM(hidden_sizes=(8,), seed=1)
    model.learn_one({i: 0.5 for i in range(12)}, None)
    network, twin, linear = model._mixture.needs
    assert network == twin == safety.LABELS_PER_INPUT * 12 and linear == 0.0


@pytest.mark.parametrize("path", ["dict", "arrays"])
def test_a_class_first_labeled_row_is_not_scored(path):
    # no expert could have predicted a class it had not seen: its first row says nothing of
    # which expert is the better (scored, it charged each expert what its fresh column gave)
    model = DHBM(hidden_sizes=(8,), seed=1)
    X = np.array([[0.1, 0.2], [0.3, 0.1], [0.9, 0.8], [0.8, 0.9]])
    y = ["a", "a", "b", "b"]

    def learn(rows):
        for i in rows:
            if path == "dict":
                model.learn_one(dict(enumerate(X[i])), y[i])
            else:
                model.learn_arrays(X[i : i + 1], np.array(y[i : i + 1]))

    learn([0, 1])
    losses, scored = model._mixture.losses.copy(), model._mixture.n_scored
    assert scored == 1
    learn([2])  # the first "b"
    assert model._mixture.n_scored == scored and (model._mixture.losses == losses).all()
    learn([3])
    assert model._mixture.n_scored == scored + 1 and (model._mixture.losses > losses).all()


def test_an_expert_with_ten_fewer_errors_than_the_mixture_is_followed_alone():
    # the counts set by hand (the algorithm's errors, each expert's, and the rows where one of
    # an expert and the algorithm was right, the other not); a row every expert and the
    # algorithm get right keeps them: an expert leads from its tenth error fewer than the
    # algorithm, never at the ninth, nor while that is within two standard deviations of
    # equally good ones; the fewest errors first, the first of equals; a row the algorithm
    # gets wrong hands the lead over; a restart gives it back
    assert (LEAD_MARGIN, LEAD_DEVIATIONS) == (10, 2)
    mixture = AggregatingMixture([0.45, 0.45, 0.1])
    right = np.array([[0.9, 0.1], [0.8, 0.2], [0.5, 0.5]])  # the unsure one says the first

    def weights_after(errors, P=right, code=0):
        mixture.errors[:] = errors
        mixture.score_row(P, code)
        return mixture.weights.tolist()

    assert weights_after([11, 1, 1, 5, 10, 10, 10]) == [1.0, 0.0, 0.0]  # the first of equals
    assert weights_after([11, 1, 0, 5, 10, 11, 10]) == [0.0, 1.0, 0.0]
    assert weights_after([10, 5, 5, 0, 10, 10, 10]) == [0.0, 0.0, 1.0]
    assert max(weights_after([9, 0, 0, 0, 9, 9, 9])) < 1.0  # nine fewer: the algorithm
    assert weights_after([30, 18, 30, 30, 36, 0, 0]) == [1.0, 0.0, 0.0]  # 12 = 2 sqrt(36)
    assert max(weights_after([30, 18, 30, 30, 49, 0, 0])) < 1.0  # 12 < 2 sqrt(49): chance
    split = np.array([[0.9, 0.1], [0.3, 0.7], [0.5, 0.5]])  # the algorithm says the first
    mixture.restart()
    assert weights_after([9, 0, 0, 0, 0, 0, 0], split, 1) == [0.0, 1.0, 0.0]
    assert mixture.errors.tolist() == [10, 1, 0, 1, 0, 1, 0]
    assert np.argmax(mixture.mix_row(split)) == 1
    mixture.restart()
    assert mixture.errors.tolist() == [0.0] * 7 and max(mixture.weights) < 1.0
    old = AggregatingMixture([0.5, 0.5])
    state = dict(old.__dict__)
    del state["errors"]
    old.__setstate__(state)  # pickled before errors were counted: no leader, ever
    for _ in range(30):
        old.score_row(split[:2], 1)
    assert max(old.weights) < 1.0 and old.errors.shape == (0,)
