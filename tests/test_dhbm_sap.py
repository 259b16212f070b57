"""The SAP estimator's particles: with or without dropout masks, and several Gibbs sweeps per
update (the MNIST configs' choices, DHBM's Notes)."""

from __future__ import annotations

import numpy as np
import pytest

from river_dhbm import DHBM
from river_dhbm._kernels import dhbm_phases
from river_dhbm._kernels import network as kernels
from kernel_calls import from_python


def _batches(n=60, d=10, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = (rng.random((n, d)) < 0.3 + 0.4 * (np.arange(d) % 3 == y[:, None])).astype(float)
    return X, y, rng.random(n) < 0.5


def _saturate_hidden_biases(model, value=60.0):
    for l in range(len(model.hidden_sizes)):
        start = model._off[l, kernels.COL_B]
        model._theta[start : start + model.hidden_sizes[l]] = value


@pytest.mark.parametrize("particle_dropout", [True, False])
def test_particles_carry_dropout_masks_only_when_asked(particle_dropout):
    # every hidden unit's conditional is ~1: a particle's hidden unit is off only if dropped
    X, y, labeled = _batches()
    model = DHBM.paper(hidden_sizes=(30, 30), estimator="sap", n_particles=8,
                       particle_dropout=particle_dropout, seed=3)
    model.learn_arrays(X[:20], y[:20], labeled[:20])
    _saturate_hidden_biases(model)
    model.learn_arrays(X[20:40], y[20:40], labeled[20:40])
    on = model._part_h.mean()
    if particle_dropout:
        assert 0.3 < on < 0.7  # dropout 0.5: about half of them dropped
    else:
        assert on == 1.0


def test_particle_masks_do_not_change_the_data_side():
    # the data's recognition pass and mean-field statistics keep their masks either way: the
    # two models draw the same data masks, so their predictions agree before SAP moves them
    X, y, labeled = _batches()
    a = DHBM.paper(hidden_sizes=(6,), estimator="sap", n_particles=4, seed=4)
    b = a.clone({"particle_dropout": False})
    for m in (a, b):
        m.learn_arrays(X[:20], y[:20], labeled[:20])
    np.testing.assert_array_equal(a._work["act"], b._work["act"])
    assert not np.array_equal(a._part_h, b._part_h)


def test_several_sweeps_move_the_particles_and_count_the_last():
    """`gibbs_sweeps=2` is one statistics-free sweep (`wneg` 0) with the first half of the
    draws, then the one-sweep update with the second half."""
    X, y, labeled = _batches()
    two = DHBM.paper(hidden_sizes=(7, 5), estimator="sap", n_particles=3, gibbs_sweeps=2,
                     dropout=0.0, seed=6)
    two.learn_arrays(X[:20], y[:20], labeled[:20])
    one = DHBM.paper(hidden_sizes=(7, 5), estimator="sap", n_particles=3, dropout=0.0, seed=6)
    one.learn_arrays(X[:20], y[:20], labeled[:20])
    for name in ("_theta", "_part_x", "_part_h", "_part_y"):
        setattr(one, name, getattr(two, name).copy())
    two._rng = np.random.default_rng(99)
    M, A, D = 3, int(two._hcum[-1]), X.shape[1]
    draws = np.random.default_rng(99)
    noise_h, noise_v = draws.random(2 * M * A), draws.random(2 * (M * D + M))
    scratch, mirror = np.zeros_like(one._theta), one._work["mirror"]
    from_python(kernels.transpose_weights)(
        one._theta, one._off, one._sizes, len(one.classes_), mirror)
    from_python(dhbm_phases.sap_sweep)(
        one._part_x, one._part_h, one._part_y, one._empty, noise_h[: M * A],
        noise_v[: M * D + M], 0.0, one._theta, mirror, scratch, one._off,
        one._sizes, one._hcum, len(one.classes_), one._kind,
        one._work["zbuf"])
    assert not scratch.any()
    one._rng = _Replay(noise_h[M * A :], noise_v[M * D + M :])
    two.learn_arrays(X[20:40], y[20:40], labeled[20:40])
    one.learn_arrays(X[20:40], y[20:40], labeled[20:40])
    np.testing.assert_array_equal(one._part_h, two._part_h)
    np.testing.assert_array_equal(one._part_x, two._part_x)
    np.testing.assert_array_equal(one._theta, two._theta)


class _Replay:
    """A generator stand-in that hands out the given hidden and visible draws in turn."""

    def __init__(self, *draws):
        self.draws = list(draws)

    def random(self, size):
        out = self.draws.pop(0)
        assert out.size == size
        return out


def test_invalid_sap_options_fail_in_init():
    with pytest.raises(ValueError, match="gibbs_sweeps"):
        DHBM(gibbs_sweeps=0)
    with pytest.raises(ValueError, match="particle_dropout"):
        DHBM(particle_dropout=1)
