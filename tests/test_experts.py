"""The experts beside the network: the linear expert and the mixture of three
(`river_dhbm.linear_expert`, `river_dhbm.safety`, `river_dhbm.aggregating`)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from river import linear_model, multiclass, preprocessing

from river_dhbm import DHBM, DHDA, change, safety, scarce_labels
from river_dhbm.aggregating import AggregatingMixture, _substitute, brier
from river_dhbm.safety import PRIORS
from river_dhbm._kernels.linear import PRIOR_PRECISION


def _proba(rng, n, k, sharpness):
    P = rng.random((n, k)) ** sharpness
    return P / P.sum(axis=1, keepdims=True)


def _phases(n_phase=300, k=3, seed=0):
    """Three experts' predictions over three phases: in phase `e`, expert `e` is sure and
    right, the others guess."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, k, 3 * n_phase)
    Ps = [_proba(rng, 3 * n_phase, k, 1.0) for _ in range(3)]
    for e in range(3):
        rows = np.arange(e * n_phase, (e + 1) * n_phase)
        Ps[e][rows] = np.eye(k)[codes[rows]]
    return Ps, codes


def test_mixture_of_three_is_within_its_bound_of_each_expert():
    Ps, codes = _phases()
    priors = list(PRIORS.values())
    mixture = AggregatingMixture(priors, step=0.0)
    for chunk in np.array_split(np.arange(len(codes)), 41):
        mixture.score([P[chunk] for P in Ps], codes[chunk])
    losses = np.array([brier(P, codes).sum() for P in Ps])
    np.testing.assert_allclose(mixture.losses, losses)
    bound = losses + np.log(1.0 / (np.array(priors) / sum(priors)))
    assert (mixture.loss_mixture <= bound + 1e-9).all()
    # the control: where the linear expert is always right, the prior's fixed weights, never
    # moved by the scores, break its bound of ln 3, the mixture keeps it
    linear = math.log(sum(priors) / priors[2])
    assert linear == pytest.approx(math.log(3.0))
    Ps[2] = np.eye(3)[codes]
    fixed = _substitute(Ps, AggregatingMixture(priors).weights[None, :])
    assert brier(fixed, codes).sum() > linear + 10.0
    mixture = AggregatingMixture(priors, step=0.0)
    mixture.score(Ps, codes)
    assert mixture.losses[2] == 0.0 and mixture.loss_mixture <= linear + 1e-9


def test_weights_follow_the_best_expert_and_restart_at_a_change():
    Ps, codes = _phases(n_phase=200)
    mixture = AggregatingMixture(list(PRIORS.values()))
    for e in range(3):
        rows = slice(e * 200, (e + 1) * 200)
        mixture.restart()  # what a drift alarm does: each phase's best expert takes over
        mixture.score([P[rows] for P in Ps], codes[rows])
        assert np.argmax(mixture.weights) == e and mixture.weights[e] > 0.99
    # without the restarts, the first two phases' leaders keep the third's from taking over
    # for a long time: the last phase's first rows go to the wrong experts
    kept = AggregatingMixture(list(PRIORS.values()))
    kept.score([P[:550] for P in Ps], codes[:550])
    assert kept.weights[2] < 1e-6


def test_a_model_restarts_its_experts_scores_at_an_alarm():
    X, y = _hyperplane(1000, seed=3)
    model = DHBM(hidden_sizes=(8,), seed=1)
    model.learn_arrays(X, y)
    # before any label the network and its twin hold a 1 / (5 d) part of their shares
    part = 1.0 / (safety.LABELS_PER_INPUT * X.shape[1])
    grown = np.array(list(PRIORS.values())) * np.array([part, part, 1.0])
    assert not np.allclose(list(model.expert_weights.values()), grown / grown.sum())
    change.restart(model)
    np.testing.assert_allclose(list(model.expert_weights.values()), grown / grown.sum())
    # the prior takes no side between learning the unlabeled rows and not: the labels decide
    assert model.expert_weights["network"] == model.expert_weights["twin"]
    assert model._mixture.n_scored == 1000 - 2  # the stream's count stays (each class's first
    # labeled row is not scored)
    assert model._mixture.evidence[0] == 0


def test_few_labels_per_input_leave_the_ties_to_the_linear_expert(monkeypatch):
    # MOA's LED at 1 % labels: 24 inputs and 100 labels, where the linear expert is the better
    # and the first labels do not tell it from the network; the control has fixed priors
    import streams

    X, y = next(streams.LED(seed=1).iter_arrays(30_000))

    def accuracy(seed):
        rows = slice((seed - 1) * 10_000, seed * 10_000)
        labeled = np.random.default_rng([seed, 7919]).random(10_000) < 0.01
        model = DHBM(seed=seed)
        predicted = model.test_then_train_arrays(X[rows], y[rows], labeled)
        return float(((predicted >= 0) & (np.array(model.classes_)[predicted] == y[rows])).mean())

    grown = [accuracy(seed) for seed in (1, 2, 3)]
    monkeypatch.setattr(safety, "LABELS_PER_INPUT", 0)  # the control: fixed priors
    fixed = [accuracy(seed) for seed in (1, 2, 3)]
    gains = np.subtract(grown, fixed)
    assert gains.min() > 0.0 and gains.mean() > 0.005, gains


def test_a_model_follows_the_expert_that_is_right_more_often():
    # River's SEA with 10 % noise, every row labeled: the linear expert is right more often
    # than the networks, which win the Brier score; the model follows it alone once it is
    # clearly ahead. The control counts no errors (a mixture pickled before the leader).
    from river import datasets

    def accuracy(seed, lead):
        rows = list(itertools.islice(datasets.synth.SEA(seed=seed, noise=0.1), 10_000))
        X = np.array([[x[k] for k in sorted(x)] for x, _ in rows]) / 10.0
        y = np.array([int(label) for _, label in rows])
        model, labeled = DHBM(seed=seed), np.ones(len(y), dtype=bool)
        first = model.test_then_train_arrays(X[:20], y[:20], labeled[:20])
        if not lead:
            model._mixture.errors = np.zeros(0)
        predicted = np.concatenate([first, model.test_then_train_arrays(X[20:], y[20:],
                                                                        labeled[20:])])
        right = np.array(model.classes_)[np.maximum(predicted, 0)] == y
        return float((right & (predicted >= 0)).mean()), model.expert_weights

    gains = []
    for seed in (1, 2, 3):
        led, weights = accuracy(seed, lead=True)
        alone, control = accuracy(seed, lead=False)
        assert weights == {"network": 0.0, "twin": 0.0, "linear": 1.0}
        assert control["linear"] < 1.0
        gains.append(led - alone)
    assert min(gains) > 0.0 and np.mean(gains) > 0.001, gains


# ---------------------------------------------------------------------------------- streams


def _hyperplane(n, d=10, seed=0, noise=0.0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    w = rng.normal(size=d)
    y = (X @ w > np.median(X @ w)).astype(np.int64)
    flip = rng.random(n) < noise
    return X, np.where(flip, 1 - y, y)


def _checkerboard(n, seed=0):
    """Two features, a 2 x 2 checkerboard (XOR): no linear model beats chance by much."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    y = ((np.floor(X[:, 0] * 2) + np.floor(X[:, 1] * 2)) % 2).astype(np.int64)
    return X, y


def _prequential(model, X, y, labeled):
    predicted = model.test_then_train_arrays(X, y, labeled)
    classes = np.array(model.classes_)
    return float(np.mean(np.where(predicted >= 0, classes[np.maximum(predicted, 0)], -1) == y))


def _logistic_regression(X, y, labeled):
    """River's OvR logistic regression behind a `StandardScaler`, learning the labeled rows."""
    model = preprocessing.StandardScaler() | multiclass.OneVsRestClassifier(
        linear_model.LogisticRegression())
    correct = 0
    for row, label, keep in zip(X.tolist(), y.tolist(), labeled.tolist()):
        x = dict(enumerate(row))
        correct += model.predict_one(x) == label
        if keep:
            model.learn_one(x, label)
    return correct / len(y)


@pytest.mark.parametrize("cls", [DHBM, DHDA])
def test_never_behind_logistic_regression_on_a_linear_concept(cls):
    # a hyperplane in 10 dimensions, 1 % labels: a hidden layer needs more labels than that
    X, y = _hyperplane(6000, seed=1)
    labeled = np.random.default_rng(11).random(len(y)) < 0.01
    peer = _logistic_regression(X, y, labeled)
    model = cls(seed=1)
    default = _prequential(model, X, y, labeled)
    without = _prequential(cls(seed=1, linear_expert=False), X, y, labeled)
    assert without < default - 0.015  # the control: the network and its twin alone
    assert default >= peer - 0.005
    # the linear expert holds a large share (the DHDA's network, calibrated, nears it late)
    assert model.expert_weights["linear"] > 0.4


def test_a_useless_linear_expert_costs_nothing():
    # XOR: the linear expert is near chance, the network learns it
    X, y = _checkerboard(6000, seed=2)
    labeled = np.random.default_rng(12).random(len(y)) < 0.1
    model = DHBM(seed=2)
    default = _prequential(model, X, y, labeled)
    without = _prequential(DHBM(seed=2, linear_expert=False), X, y, labeled)
    assert without > 0.9
    assert default >= without - 0.005
    assert model.expert_weights["linear"] < 1e-3


# ---------------------------------------------------------------------------------- the kernel


def _log_loss(W, b, Z, codes):
    S = Z @ W.T + b
    S = S - S.max(axis=1, keepdims=True)
    return float(np.mean(np.log(np.exp(S).sum(axis=1)) - S[np.arange(len(codes)), codes]))


def _gradient(W, b, Z, codes):
    S = Z @ W.T + b
    P = np.exp(S - S.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    P[np.arange(len(codes)), codes] -= 1.0
    return P.T @ Z / len(codes), P.mean(axis=0)


def test_the_log_loss_gradient_passes_finite_differences():
    rng = np.random.default_rng(5)
    W, b, Z = rng.normal(size=(4, 6)), rng.normal(size=4), rng.normal(size=(30, 6))
    codes = rng.integers(0, 4, 30)
    gW, gb = _gradient(W, b, Z, codes)
    # the kernel's step: this mean gradient plus the prior's `PRIOR_PRECISION / n` times each
    # parameter, the gradient of `mean log loss + PRIOR_PRECISION / (2 n) (|W|^2 + |b|^2)`
    n = len(codes)
    map_loss = lambda W_, b_: (_log_loss(W_, b_, Z, codes)  # noqa: E731
                               + PRIOR_PRECISION / (2 * n) * float((W_ * W_).sum() + b_ @ b_))
    h = 1e-6
    E = np.zeros_like(W)
    E[1, 2] = h
    fd = (map_loss(W + E, b) - map_loss(W - E, b)) / (2 * h)
    assert fd == pytest.approx(gW[1, 2] + PRIOR_PRECISION / n * W[1, 2], abs=1e-8)
    e = np.eye(4)[3] * h
    fd = (map_loss(W, b + e) - map_loss(W, b - e)) / (2 * h)
    assert fd == pytest.approx(gb[3] + PRIOR_PRECISION / n * b[3], abs=1e-8)
    h = 1e-6
    for k, j in ((0, 0), (2, 5), (3, 1)):
        E = np.zeros_like(W)
        E[k, j] = h
        fd = (_log_loss(W + E, b, Z, codes) - _log_loss(W - E, b, Z, codes)) / (2 * h)
        assert fd == pytest.approx(gW[k, j], abs=1e-8)
    e = np.eye(4)[1] * h
    assert (_log_loss(W, b + e, Z, codes) - _log_loss(W, b - e, Z, codes)) / (2 * h) == \
        pytest.approx(gb[1], abs=1e-8)


def test_the_kernel_takes_the_numpy_reference_steps():
    # one update of a model's linear expert, replayed in numpy: the running moments, then
    # each step on the batch's labeled rows and that step's replayed rows
    from river_dhbm import linear_expert

    X, y = _hyperplane(200, d=6, seed=6)
    labeled = np.random.default_rng(6).random(200) < 0.5
    model = DHBM(hidden_sizes=(4,), seed=3)
    model.learn_arrays(X[:180], y[:180], labeled[:180])
    expert = model._linear
    W, b = expert.W.copy(), expert.b.copy()
    rng = np.random.default_rng()
    rng.bit_generator.state = expert._rng.bit_generator.state  # the expert's next draws
    batch = X[180:]
    codes = np.array([model._class_index[v] if keep else -1
                      for v, keep in zip(y[180:].tolist(), labeled[180:])])
    model.learn_arrays(batch, y[180:], labeled[180:])  # the network pushes, the expert learns
    steps = scarce_labels.steps_at(model, model.n_labeled_seen)
    assert steps > 1
    seen = X[:180]
    all_rows = np.vstack([seen, batch])
    mean, sd = all_rows.mean(axis=0), all_rows.std(axis=0)
    np.testing.assert_allclose(expert.mean, mean, atol=1e-12)
    R = model.replay
    u = rng.random(steps * R)
    memory = model._memory  # after the push: what the expert replayed from
    mem_X, mem_y, count = memory.X, memory.y, memory.count
    first = 0 if count == len(mem_y) else (memory.state[1] - count) % len(mem_y)
    for s in range(steps):
        picks = [(first + min(int(v * count), count - 1)) % len(mem_y)
                 for v in u[s * R : (s + 1) * R]]
        rows = np.vstack([batch[codes >= 0], mem_X[picks]])
        targets = np.concatenate([codes[codes >= 0], mem_y[picks]])
        gW, gb = _gradient(W, b, (rows - mean) / sd, targets)
        # the prior's pull: `PRIOR_PRECISION` over the labeled rows the memory holds
        W -= linear_expert.RATE * (gW + PRIOR_PRECISION / count * W)
        b -= linear_expert.RATE * (gb + PRIOR_PRECISION / count * b)
    np.testing.assert_allclose(expert.W, W, atol=1e-10)
    np.testing.assert_allclose(expert.b, b, atol=1e-10)


def test_predict_experts_one_names_each_experts_own_label():
    X, y = _hyperplane(400, seed=7)
    model = DHBM(hidden_sizes=(4,), seed=7)
    assert model.predict_experts_one({j: 0.0 for j in range(X.shape[1])}) == {}
    labeled = np.random.default_rng(7).random(len(y)) < 0.5
    model.learn_arrays(X, y, labeled)
    x = dict(enumerate(X[3].tolist()))
    labels = model.predict_experts_one(x)
    assert list(labels) == list(model.expert_weights)
    P = safety.expert_proba_row(model, X[3:4])
    assert labels == {name: model.classes_[int(p.argmax())]
                      for name, p in zip(model.expert_weights, P)}
    model.predict_one(x)  # reuses the staged pass: the same answer
    assert model.predict_experts_one(x) == labels
    assert DHBM(hidden_sizes=(4,), seed=7, safe_unlabeled=False, linear_expert=False) \
        .predict_experts_one(x) == {}
