"""HSDA: kernels against the numpy reference, gradients, layer-wise learning, River checks."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from river import checks

import reference_dhda as ref
from river_dhbm._kernels import hsda as hsda_kernels
from river_dhbm._kernels import network as kernels
from river_dhbm._kernels import parameters
from river_dhbm.hsda import HSDA
from kernel_calls import from_python


# kernel kinds by the references' names ("bounded_relu": the hybrid models' "relu")
KINDS = {**kernels.ACTIVATIONS, "bounded_relu": kernels.BOUNDED_RELU}


class Stack:
    """Random parameters of an HSDA in its flat layout, with per-layer reference views."""

    def __init__(self, sizes, C, seed, scale=0.7):
        rng = np.random.default_rng(seed)
        self.sizes = np.array(sizes, dtype=np.int64)
        self.hcum = parameters.hidden_offsets(self.sizes)
        self.C = C
        L = len(sizes) - 1
        self.offs = np.stack([parameters.param_layout(self.sizes[l : l + 2], C) for l in range(L)])
        self.bases = np.concatenate([[0], np.cumsum(self.offs[:, -1, 2])]).astype(np.int64)
        self.theta = rng.normal(0, scale, self.bases[-1])

    def params(self, theta=None):
        theta = self.theta if theta is None else theta
        p = {key: [] for key in ("W", "b", "c", "U", "d")}
        for l in range(len(self.sizes) - 1):
            t, o = theta[self.bases[l] : self.bases[l + 1]], self.offs[l]
            P, H, C = self.sizes[l], self.sizes[l + 1], self.C
            p["W"].append(t[o[0, 0] : o[0, 0] + P * H].reshape(P, H))
            p["b"].append(t[o[0, 1] : o[0, 1] + H])
            p["U"].append(t[o[0, 2] : o[0, 2] + H * C].reshape(H, C))
            p["c"].append(t[o[1, 0] : o[1, 0] + P])
            p["d"].append(t[o[1, 1] : o[1, 1] + C])
        return p

    def flat(self, g):
        theta = np.zeros_like(self.theta)
        p = self.params(theta)  # views into `theta`
        for key in p:
            for l, a in enumerate(p[key]):
                a[...] = g[key][l]
        return theta

    def used(self):
        """Indices of `theta` an HSDA uses (not the unused recognition columns)."""
        return np.flatnonzero(self.flat({key: [np.ones_like(a) for a in v]
                                         for key, v in self.params().items()}))


def _masks(stack, n, dropout, corruption, seed):
    rng = np.random.default_rng(seed)
    A = int(stack.hcum[-1])
    m_flat = (rng.random(n * A) >= dropout).astype(float) if dropout > 0 else np.empty(0)
    m, o = [], 0
    for h in stack.sizes[1:]:
        m.append(m_flat[o : o + n * h].reshape(n, h) if dropout > 0 else np.ones((n, h)))
        o += n * h
    n_in = int(stack.sizes[:-1].sum())
    k_flat = (rng.random(n * n_in) >= corruption).astype(float) if corruption > 0 else np.empty(0)
    k, o = [], 0
    for P in stack.sizes[:-1]:
        k.append(k_flat[o : o + n * P].reshape(n, P) if corruption > 0 else np.ones((n, P)))
        o += n * P
    return m_flat, k_flat, m, k


def _batch(n, D, C, n_lab, seed):
    rng = np.random.default_rng(seed)
    X = rng.random((n, D)) * (rng.random((n, D)) < 0.6)
    y = np.full(n, -1, dtype=np.int64)
    y[rng.permutation(n)[:n_lab]] = rng.integers(0, C, n_lab)
    return X, y


def _step(stack, X, y, kind, loss, lr, alpha, beta, hard, m_flat, k_flat, theta=None, lw=None,
          disc=1.0):
    theta = stack.theta.copy() if theta is None else theta
    L = len(stack.sizes) - 1
    lw = np.full(L, 1.0 / L) if lw is None else lw
    dec = kernels.SIGMOID if loss == "ce" else KINDS[kind]
    hsda_kernels.hsda_update(
        X, y, theta, np.zeros_like(theta), stack.bases, stack.offs, stack.sizes, stack.hcum,
        stack.C, KINDS[kind], dec, loss == "mse", lr, alpha, beta, disc, hard, m_flat,
        k_flat, lw, np.empty(0), 1, 1, len(X),
    )
    return theta


CASES = [
    # sizes, C, kind, loss, dropout, corruption, n_lab, alpha, beta, hard
    ((5, 4, 3), 3, "sigmoid", "ce", 0.0, 0.15, 3, 1.0, 0.1, False),
    ((6, 5, 4, 3), 4, "sigmoid", "ce", 0.5, 0.3, 2, 1.0, 0.5, True),
    ((4, 6), 2, "relu", "mse", 0.3, 0.2, 4, 0.7, 0.2, True),
    ((5, 4, 4), 3, "relu", "mse", 0.0, 0.0, 0, 1.0, 0.4, False),
    ((5, 3, 4), 3, "sigmoid", "mse", 0.2, 0.1, 8, 1.0, 0.0, True),
    ((5, 4, 4), 3, "bounded_relu", "mse", 0.3, 0.2, 3, 1.0, 0.4, False),
    ((4, 5, 3), 2, "bounded_relu", "ce", 0.0, 0.1, 2, 1.0, 0.3, True),
]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("sizes, C, kind, loss, dropout, corruption, n_lab, alpha, beta, hard",
                         CASES)
def test_update_matches_reference(sizes, C, kind, loss, dropout, corruption, n_lab, alpha, beta,
                                  hard, weighted):
    n, lr = 8, 0.05
    stack = Stack(sizes, C, seed=1)
    X, y = _batch(n, sizes[0], C, n_lab, seed=2)
    m_flat, k_flat, m, k = _masks(stack, n, dropout, corruption, seed=3)
    p = stack.params()
    L = len(sizes) - 1
    lw = np.arange(1.0, L + 1) ** 2 if weighted else np.ones(L)
    lw /= lw.sum()
    stats = ref.hsda_statistics(X, y, p, kind, m, alpha, beta, hard, lw=lw)
    expected = stack.theta - lr * stack.flat(ref.hsda_gradients(p, stats, k, kind, loss, m))
    got = _step(stack, X, y, kind, loss, lr, alpha, beta, hard, m_flat, k_flat, lw=lw)
    np.testing.assert_allclose(got, expected, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("disc", [0.0, 3.0])
def test_discriminative_weight_scales_the_predictors_loss(disc):
    """`discriminative_weight` multiplies each layer's predictor loss (its gradient into `U^l`,
    `d^l` and, through the encoding, `W^l`, `b^l`); the reconstruction terms keep theirs."""
    n, lr = 8, 0.05
    sizes, C = (5, 4, 3), 3
    stack = Stack(sizes, C, seed=1)
    X, y = _batch(n, 5, C, 3, seed=2)
    m_flat, k_flat, m, k = _masks(stack, n, 0.2, 0.15, seed=3)
    p = stack.params()
    stats = ref.hsda_statistics(X, y, p, "bounded_relu", m, 1.0, 0.3, False)
    grads = ref.hsda_gradients(p, stats, k, "bounded_relu", "ce", m, disc=disc)
    got = _step(stack, X, y, "bounded_relu", "ce", lr, 1.0, 0.3, False, m_flat, k_flat,
                disc=disc)
    np.testing.assert_allclose(got, stack.theta - lr * stack.flat(grads), rtol=1e-11,
                               atol=1e-13)


def test_steps_are_single_steps_on_the_batch_with_their_own_replayed_rows():
    """`hsda_update` with `steps=3` over `[batch | rows of step 0 | of step 1 | of step 2]` is
    three `hsda_step` calls, step `s` on the batch and its own replayed rows, with the same
    dropout and corruption masks, Adam counting `step + s`."""
    rng = np.random.default_rng(3)
    stack = Stack((5, 4, 3), 3, seed=5)
    n, R, steps = 4, 2, 3
    X, y = _batch(n + steps * R, 5, 3, 7, seed=4)
    m_flat, k_flat, _, _ = _masks(stack, n + steps * R, 0.3, 0.2, seed=6)
    args = (stack.bases, stack.offs, stack.sizes, stack.hcum, 3, kernels.BOUNDED_RELU,
            kernels.SIGMOID, False, 0.01, 1.0, 0.4, 5.0, False, m_flat, k_flat,
            np.array([0.7, 0.3]))
    moments = rng.random(2 * stack.theta.size) * 1e-3
    got, got_moments = stack.theta.copy(), moments.copy()
    hsda_kernels.hsda_update(X, y, got, np.zeros_like(got), *args, got_moments, 4, steps, n)
    expected, expected_moments = stack.theta.copy(), moments.copy()
    for s in range(steps):
        rows = np.r_[0:n, n + s * R : n + (s + 1) * R]
        hsda_kernels.hsda_step(X[rows], y[rows], expected, np.zeros_like(expected), *args,
                               expected_moments, 4 + s)
    assert not np.allclose(got, stack.theta)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_moments, expected_moments, rtol=1e-12, atol=1e-16)


def test_an_update_takes_the_warm_starts_steps_with_adam_counting_them():
    """An update takes `scarce_labels.steps_at` steps (8 while labels are few) and Adam's
    count follows; the paper's settings take one plain step and keep no moments."""
    rng = np.random.default_rng(7)
    X, y = rng.random((400, 5)), rng.integers(0, 2, 400)
    model = HSDA(seed=1)
    model.learn_arrays(X[:40], y[:40])
    assert model._adam_steps == 16 and model._moments.size == 2 * model._theta.size
    model.learn_arrays(X[40:], y[40:])  # 400 labels: past the warm start, fewer steps
    assert 16 + 8 * 18 > model._adam_steps > 16 + 18
    paper = HSDA.paper(seed=1)
    paper.learn_arrays(X[:40], y[:40])
    assert paper._moments.size == 0 and (paper.steps, paper.optimizer) == (1, "sgd")


@pytest.mark.parametrize("kind, loss", [("sigmoid", "ce"), ("relu", "mse"),
                                        ("bounded_relu", "mse"), ("bounded_relu", "ce")])
def test_gradient_is_the_loss_gradient(kind, loss):
    """The step (lr = 1) is minus the finite-difference gradient of the sum of the layers'
    losses, each layer's input, the targets and the masks held fixed."""
    n, C = 6, 3
    stack = Stack((4, 5, 3), C, seed=4, scale=0.5)
    X, y = _batch(n, 4, C, 3, seed=5)
    m_flat, k_flat, m, k = _masks(stack, n, 0.3, 0.2, seed=6)
    stats = ref.hsda_statistics(X, y, stack.params(), kind, m, 1.0, 0.4, False)
    step = stack.theta - _step(stack, X, y, kind, loss, 1.0, 1.0, 0.4, False, m_flat, k_flat)
    eps, fd = 1e-6, np.zeros_like(stack.theta)
    for i in stack.used():
        e = np.zeros_like(fd)
        e[i] = eps
        fd[i] = (ref.hsda_total_loss(stack.params(stack.theta + e), stats, k, kind, loss, m)
                 - ref.hsda_total_loss(stack.params(stack.theta - e), stats, k, kind, loss, m)
                 ) / (2 * eps)
    np.testing.assert_allclose(step, fd, rtol=1e-5, atol=1e-8)


def test_layers_learn_on_their_own():
    """Layer-wise: the upper layer's parameters do not change the lower layer's step, except
    through the proxy labels (hence beta = 0 here)."""
    stack = Stack((5, 4, 3), 3, seed=7)
    X, y = _batch(8, 5, 3, 4, seed=8)
    other = stack.theta.copy()
    other[stack.bases[1] :] += 0.5
    a = _step(stack, X, y, "sigmoid", "ce", 0.1, 1.0, 0.0, False, np.empty(0), np.empty(0))
    b = _step(stack, X, y, "sigmoid", "ce", 0.1, 1.0, 0.0, False, np.empty(0), np.empty(0),
              theta=other)
    lower = slice(0, stack.bases[1])
    np.testing.assert_array_equal(a[lower], b[lower])


@pytest.mark.parametrize("lw", [None, np.array([0.8, 0.2])])
def test_proba_is_the_weighted_mean_of_the_layer_predictors(lw):
    stack = Stack((5, 4, 3), 3, seed=9)
    X, _ = _batch(6, 5, 3, 0, seed=10)
    got = hsda_kernels.hsda_proba(X, stack.theta, stack.bases, stack.offs, stack.sizes,
                                  stack.hcum, 3, kernels.SIGMOID, 0.5,
                                  np.full(2, 0.5) if lw is None else lw)
    _, P = ref.hsda_forward(X, stack.params(), "sigmoid", None, scale=0.5, lw=lw)
    np.testing.assert_allclose(got, P, rtol=1e-12)


@pytest.mark.parametrize("kind", ["sigmoid", "bounded_relu"])
def test_track_layers_matches_reference(kind):
    stack = Stack((5, 4, 3, 3), 3, seed=11)
    X, y = _batch(7, 5, 3, 7, seed=12)
    loss = np.array([0.3, 0.1, 2.0])
    expected = ref.hsda_track(X, y, stack.params(), kind, 0.7, 0.05, loss)
    hsda_kernels.hsda_track_layers(X, y, stack.theta, stack.bases, stack.offs, stack.sizes,
                                   stack.hcum, 3, KINDS[kind], 0.7, 0.05, loss)
    np.testing.assert_allclose(loss, expected, rtol=1e-12)


def test_weighted_layers_follow_each_layers_recent_log_loss():
    """`weighted_layers`: before an update, the batch's own labeled rows (not the replayed or
    proxy-labeled ones) fold each layer's log-loss into its running mean (decay
    `LAYER_LOSS_DECAY`); the prediction weights layer `l` by `softmax(-LAYER_WEIGHT_SHARPNESS *
    running log-loss)`. Off, or under the paper's settings, the layers weigh the same."""
    rng = np.random.default_rng(13)
    X = rng.random((40, 5))
    y = (X[:, 0] > 0.5).astype(int)
    model = HSDA(hidden_sizes=(4, 3), batch_size=10, activation="sigmoid", seed=0)
    model.learn_arrays(X[:20], y[:20])
    before = model._layer_loss.copy()
    labeled = np.arange(10) % 3 == 0
    p_stack = Stack((5, 4, 3), 2, seed=0)  # only for its reference views
    p_stack.theta, p_stack.offs, p_stack.bases = model._theta.copy(), model._offs, model._bases
    codes = np.array([model._classes.index(c) for c in y[20:30]])
    expected = ref.hsda_track(X[20:30][labeled], codes[labeled], p_stack.params(), "sigmoid",
                              1.0, HSDA.LAYER_LOSS_DECAY, before)
    model.learn_arrays(X[20:30], y[20:30], labeled)
    np.testing.assert_allclose(model._layer_loss, expected, rtol=1e-12)
    z = -HSDA.LAYER_WEIGHT_SHARPNESS * model._layer_loss
    np.testing.assert_allclose(model._layer_weights(), np.exp(z) / np.exp(z).sum(), rtol=1e-9)
    off = copy.deepcopy(model)
    off.weighted_layers = False
    np.testing.assert_array_equal(off._layer_weights(), [0.5, 0.5])
    assert HSDA._PAPER_SETTINGS["weighted_layers"] is False
    np.testing.assert_array_equal(HSDA(hidden_sizes=(4,))._layer_weights(), [1.0])


@pytest.mark.parametrize(
    "params, match",
    [
        ({"hidden_sizes": (3, -1)}, r"Invalid hidden_sizes \(\(3, -1\)\)"),
        ({"corruption": -0.1}, r"Invalid corruption \(-0.1\). Valid range is \[0, 1\)"),
        ({"loss": "hinge"}, r"Invalid loss \('hinge'\)"),
        ({"learning_rate": 0.0}, r"Invalid learning_rate \(0.0\)"),
        ({"alpha": "1"}, r"Invalid alpha \('1'\)"),
        ({"beta": -0.1}, r"Invalid beta \(-0.1\)"),
        ({"beta_schedule": (1, 1)}, r"Invalid beta_schedule \(\(1, 1\)\)"),
        ({"dropout": 1.5}, r"Invalid dropout \(1.5\)"),
        ({"weighted_layers": 1}, r"Invalid weighted_layers \(1\). Must be True or False"),
        ({"pseudo_label": None}, r"Invalid pseudo_label \(None\)"),
        ({"activation": "elu"}, r"Invalid activation \('elu'\)"),
    ],
)
def test_invalid_params(params, match):
    with pytest.raises(ValueError, match=match):
        HSDA(**params)


def _model_checks():
    for params in HSDA._unit_test_params():
        for check in checks.yield_checks(HSDA(**params)):
            yield pytest.param(params, check, id=f"{check.__name__}-{params['hidden_sizes']}")


@pytest.mark.parametrize("params, check", list(_model_checks()))
def test_river_checks(params, check):
    check(copy.deepcopy(HSDA(**params)))


def test_new_class_grows_every_layer():
    model = HSDA(hidden_sizes=(4, 3), batch_size=2, seed=0)
    model.learn_one({"a": 1.0, "b": 0.0}, "x")
    model.learn_one({"a": 0.0, "b": 1.0}, "y")
    before = [model._theta[model._bases[l] : model._bases[l + 1]].copy() for l in range(2)]
    model.learn_one({"a": 0.5, "b": 0.5}, "z")
    for l in range(2):
        old = from_python(kernels.label_weights)(
            before[l], parameters.param_layout(model._sizes[l : l + 2], 2),
            model._sizes[l : l + 2], 0, 2)
        new = from_python(kernels.label_weights)(
            model._theta[model._bases[l] : model._bases[l + 1]],
            model._offs[l], model._sizes[l : l + 2], 0, 3)
        np.testing.assert_array_equal(new[:, :2], old)
        np.testing.assert_array_equal(new[:, 2], 0.0)


def test_paper_settings_stay_finite():
    rng = np.random.default_rng(0)
    X = (rng.random((10_000, 24)) < 0.5).astype(float)
    y = rng.integers(0, 10, 10_000)
    model = HSDA.paper(hidden_sizes=(24, 24, 24, 24), seed=1)
    assert (model.learning_rate, model.dropout, model.corruption) == (0.051, 0.5, 0.15)
    model.learn_arrays(X, y, rng.random(10_000) < 0.1)
    assert np.isfinite(model._theta).all()


@pytest.mark.parametrize("stream, bound", [("led", 0.36), ("wave", 0.21)])
def test_learns_on_a_short_stream(stream, bound):
    """Chance is 0.90 (LED) and 0.67 (Waveform), Bayes 0.26 and 0.13; measured 0.314 and
    0.166 with the defaults."""
    from test_pseudo_label import CHANCE, faded_tail

    assert faded_tail(HSDA(seed=1), stream) <= bound
    # the negative control: labels that carry nothing about the rows leave it at chance
    control = faded_tail(HSDA(seed=1), stream, shuffled_labels=True)
    assert control >= CHANCE[stream] - 0.05


def test_initial_weights():
    """`init="glorot"` (the papers'): each layer Glorot-uniform W^l, biases and predictor 0."""
    model = HSDA(hidden_sizes=(6, 5), init="glorot", seed=0)
    model.learn_one({i: 0.0 for i in range(4)})
    nonzero = 0
    for l in range(2):
        t = model._theta[model._bases[l] : model._bases[l + 1]]
        W = from_python(kernels.matrix)(
            t, model._offs[l], model._sizes[l : l + 2], 0, kernels.COL_W)
        assert np.abs(W).max() <= np.sqrt(6 / (model._sizes[l] + model._sizes[l + 1]))
        nonzero += np.count_nonzero(W)
    assert np.count_nonzero(model._theta) == nonzero == 4 * 6 + 6 * 5


def test_centred_layers_cut_their_input_box():
    """`init="centred"` (the default): every layer's weights are `centred_scale` times Glorot's
    draw (the first layer's exactly the glorot model's, drawn first), and each unit's bias puts
    its hyperplane through a point of the layer's input box [0, 1]^H."""
    glorot, centred = (HSDA(hidden_sizes=(6, 5), init=i, seed=0) for i in ("glorot", "centred"))
    for model in (glorot, centred):
        model.learn_one({i: 0.0 for i in range(4)})
    for l in range(2):
        sizes = centred._sizes[l : l + 2]
        t = centred._theta[centred._bases[l] : centred._bases[l + 1]]
        W = from_python(kernels.matrix)(t, centred._offs[l], sizes, 0, kernels.COL_W)
        b = from_python(kernels.vector)(t, centred._offs[l], sizes, 0, kernels.COL_B)
        scale = parameters.centred_scale(2)  # two layers
        bound = scale * np.sqrt(6 / sizes.sum())
        assert np.abs(W).max() <= bound and np.abs(W).max() > 0.5 * bound
        # -b_j = point . W[:, j] for a point of the box: between the sums of W's negative and
        # positive entries
        assert (np.minimum(W, 0).sum(0) <= -b).all() and (-b <= np.maximum(W, 0).sum(0)).all()
        assert np.count_nonzero(b) == sizes[1]
    t0 = glorot._theta[: glorot._bases[1]]
    W0 = from_python(kernels.matrix)(t0, glorot._offs[0], glorot._sizes[:2], 0, kernels.COL_W)
    np.testing.assert_array_equal(
        from_python(kernels.matrix)(
            centred._theta, centred._offs[0], centred._sizes[:2], 0, kernels.COL_W),
        parameters.centred_scale(2) * W0)
