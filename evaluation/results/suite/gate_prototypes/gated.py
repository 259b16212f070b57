"""Prototype gates on the DHDA (Python-side probes: three extra step calls per update)."""
import numpy as np
import river_dhbm
from river_dhbm import DHDA
from river_dhbm._kernels import dhda as dhda_kernels


class GatedDHDA(DHDA):
    def __init__(self, gate="count", eta=0.05, K=10, **kw):
        super().__init__(**kw)
        self.gate = gate
        self.eta = eta
        self.K = K
        self._z = 0.0 if gate == "count" else 1.0
        self._beta0, self._conf0 = self.beta, self.confidence
        self.gates = []

    def _g(self):
        return min(1.0, max(0.0, self._z / self.K)) if self.gate == "count" else self._z

    def _update(self, X, y, P=None):
        if (self.learn_unlabeled and self._classes and (y < 0).any() and self._memory is not None
                and self._memory.count > 0):
            mem = self._memory
            idx = np.random.default_rng(self.n_updates).integers(0, mem.count, self.replay)
            xs = np.vstack([X, mem.X[idx]]); ys = np.concatenate([y, mem.y[idx]])

            def grad(a, b, dw):
                th = self._theta.copy()
                dhda_kernels.dhda_step(xs, ys.copy(), th, np.zeros_like(th), self._off, self._sizes,
                                       self._hcum, len(self._classes), self._kind, self._dec_kind,
                                       self.loss == "mse", self.mf_steps, 1.0, 1.0, a, b, dw, False,
                                       self._empty, self._empty, np.zeros(0), 1)
                return self._theta - th
            gd = grad(1.0, 0.0, 10.0) - grad(1.0, 0.0, 0.0)
            gu = grad(0.0, self._beta0, float(self.discriminative_weight))
            s = np.sign(gd @ gu)
            if self.gate == "count":
                self._z = min(float(self.K), max(-float(self.K), self._z + s))
            else:
                self._z = min(1.0, self._z * np.exp(self.eta * s))
        g = self._g() if self.learn_unlabeled else 1.0
        self.gates.append(g)
        self.beta = self._beta0 * g
        self.confidence = self._conf0 if g >= 0.5 else None
        super()._update(X, y, P)


river_dhbm.GatedDHDA = GatedDHDA


from river_dhbm import DHBM
from river_dhbm._kernels import dhbm as dhbm_kernels


class GatedDHBM(DHBM):
    def __init__(self, gate="mult", eta=0.05, K=10, **kw):
        super().__init__(**kw)
        self.gate = gate
        self.eta = eta
        self.K = K
        self._z = 1.0
        self._beta0, self._conf0 = self.beta, self.confidence
        self.gates = []

    def _update(self, X, y, P=None):
        if (self.learn_unlabeled and self._classes and (y < 0).any() and self._memory is not None
                and self._memory.count > 0):
            mem = self._memory
            idx = np.random.default_rng(self.n_updates).integers(0, mem.count, self.replay)
            xs = np.vstack([X, mem.X[idx]]); ys = np.concatenate([y, mem.y[idx]])

            def grad(a, b, dw):
                th = self._theta.copy()
                dhbm_kernels.dhbm_update_mf(
                    xs, ys.copy(), th, np.zeros_like(th), self._off, self._sizes, self._hcum,
                    len(self._classes), self._kind, self._estimator, self.mf_steps, 1.0, a, b, 2.0,
                    dw, self.pseudo_label == "hard", self._empty, self._part_x, self._part_h,
                    self._part_y, self._empty, self._empty, self._empty, *self._work_arrays(),
                    np.zeros(0), 1, 1, len(xs), np.zeros(0, np.int64))
                return self._theta - th
            gd = grad(1.0, 0.0, 10.0) - grad(1.0, 0.0, 0.0)
            gu = grad(0.0, self._beta0, float(self.discriminative_weight))
            self._z = min(1.0, self._z * np.exp(self.eta * np.sign(gd @ gu)))
        g = self._z if self.learn_unlabeled else 1.0
        self.gates.append(g)
        self.beta = self._beta0 * g
        self.confidence = self._conf0 if g >= 0.5 else None
        super()._update(X, y, P)


river_dhbm.GatedDHBM = GatedDHBM
