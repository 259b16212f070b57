"""The experts and their mixture of one row computed in one kernel call
(`safety.hybrid_experts_row`) answer what the expert-by-expert Python path answers, to
round-off; a pickle holds the label memory the network and its twin share once. (The DHBM's
run of mini-batches with its experts in one call: `test_test_then_train.py`.)"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import streams
from river_dhbm import DHBM, DHDA, change, safety
from river_dhbm._kernels import mixture as mixture_kernels

MODELS = {
    "dhbm": lambda: DHBM(hidden_sizes=(12,), seed=1),
    "dhbm-no-twin": lambda: DHBM(hidden_sizes=(12,), safe_unlabeled=False, seed=2),
    "dhbm-no-linear": lambda: DHBM(hidden_sizes=(12,), linear_expert=False, seed=3),
    "dhda": lambda: DHDA(hidden_sizes=(12,), seed=4),
}


def _rows(n=1200, seed=1):
    masked = streams.LabelMask(streams.LED(seed=seed), label_ratio=0.1, batch_size=20, seed=2)
    return [(x, y) for x, y, *_ in masked.take(n)]


def _learnt(name, rows):
    model = MODELS[name]()
    for x, y in rows:
        model.predict_proba_one(x)
        model.learn_one(x, y)
    return model


@pytest.mark.parametrize("name", MODELS)
def test_one_call_answers_what_each_expert_and_the_mixture_answer(name, monkeypatch):
    rows = _rows()
    model = _learnt(name, rows[:1000])
    model._mixture.restart()  # every expert counts (the priors): the mixture is exercised
    X = np.array([[x[k] for k in sorted(x)] for x, _ in rows[1000:]])
    expected = model._mixture.mix(safety.expert_proba(model, X))  # numpy, expert by expert
    calls = []
    kernel = mixture_kernels.hybrid_experts_row
    monkeypatch.setattr(mixture_kernels, "hybrid_experts_row",
                        lambda *a: calls.append(1) or kernel(*a))
    got = [list(model.predict_proba_one(x).values()) for x, _ in rows[1000:]]
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    assert len(calls) == len(X)  # one call a row
    labels = [model.predict_one(x) for x, _ in rows[1000:]]
    assert labels == [model.classes_[k] for k in expected.argmax(axis=1)]
    # a network whose weight is exactly 1 answers alone
    model._mixture.weights[:] = [1.0] + [0.0] * (len(model._mixture.weights) - 1)
    np.testing.assert_allclose([list(model.predict_proba_one(x).values()) for x, _ in rows[-5:]],
                               model._proba(X[-5:]), rtol=1e-10, atol=1e-12)


def test_a_pickle_holds_the_shared_label_memory_once():
    rows = _rows(1400)
    model = _learnt("dhbm", rows[:1000])
    memory = len(pickle.dumps(model._memory))
    alone = model.clone()
    alone.__dict__.update({k: v for k, v in model.__dict__.items() if k != "_twin"})
    alone._twin = None
    twin_cost = len(pickle.dumps(model)) - len(pickle.dumps(alone))
    assert memory > 100_000 and twin_cost < memory / 2  # the twin's weights, not its memory
    loaded = pickle.loads(pickle.dumps(model))
    assert loaded._twin._memory is not loaded._memory  # each learns on with its own
    # the control: a twin that restarted alone has a memory of its own, pickled as such
    change.restart(model._twin)
    assert len(pickle.dumps(model)) - len(pickle.dumps(alone)) > memory
    for m in (model, loaded):
        for x, y in rows[1000:]:
            m.learn_one(x, y)
    restarted = pickle.loads(pickle.dumps(model))
    for x, _ in rows[-20:]:
        assert restarted.predict_proba_one(x) == model.predict_proba_one(x)
    np.testing.assert_array_equal(restarted._twin._theta, model._twin._theta)
    assert not np.array_equal(loaded._twin._theta, model._twin._theta)  # it did not restart
