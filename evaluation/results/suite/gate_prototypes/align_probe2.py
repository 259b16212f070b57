"""Passive probe 2: cosine between the labeled rows' DISCRIMINATIVE gradient (-log p(y|x)
through the predicting path, = [g(dw=10) - g(dw=0)] / 10 on labeled rows) and the unlabeled
rows' gradient, DHDA defaults. Also running EMA of the cosine."""
import sys, numpy as np
HERE = __import__("pathlib").Path(__file__).parent; sys.path.insert(0, str(HERE.parents[3] / "tests")); sys.path.insert(0, str(HERE))
from test_unlabeled_gain import _clusters, _hyperplane
from align_probe_data import bananas
from river_dhbm import DHDA
from river_dhbm._kernels import dhda as dhda_kernels

class Probe(DHDA):
    def _update(self, X, y, P=None):
        if self._classes and (y < 0).any() and self._memory is not None and self._memory.count > 0:
            mem = self._memory
            idx = np.random.default_rng(self.n_updates).integers(0, mem.count, self.replay)
            xs = np.vstack([X, mem.X[idx]]); ys = np.concatenate([y, mem.y[idx]])
            def g(a, b, dw):
                th = self._theta.copy()
                dhda_kernels.dhda_step(xs, ys.copy(), th, np.zeros_like(th), self._off, self._sizes, self._hcum,
                    len(self._classes), self._kind, self._dec_kind, self.loss == "mse", self.mf_steps,
                    1.0, 1.0, a, b, dw, False, self._empty, self._empty, np.zeros(0), 1)
                return self._theta - th
            gd = (g(1.0, 0.0, 10.0) - g(1.0, 0.0, 0.0)) / 10.0
            gu = g(0.0, 0.1, 10.0)
            na, nb = np.linalg.norm(gd), np.linalg.norm(gu)
            self.log.append(gd @ gu / (na * nb) if na > 0 and nb > 0 else 0.0)
        super()._update(X, y, P)

def run(make, ratio, seed, n):
    X, y = make(n, seed)
    lab = np.random.default_rng(seed + 10).random(n) < ratio
    m = Probe(seed=seed); m.log = []
    m.test_then_train_arrays(X, y, lab)
    return np.array(m.log)

for name, make, ratio, n in [("clusters", _clusters, 0.005, 6000), ("hyper1", _hyperplane, 0.01, 6000), ("bananas1", bananas, 0.01, 5300), ("bananas10", bananas, 0.1, 5300), ("hyper10", _hyperplane, 0.1, 6000)]:
    for seed in (1, 2):
        a = run(make, ratio, seed, n)
        q = len(a) // 4
        print(name, seed, "cos(disc_L, U): mean %.3f first-q %.3f last-q %.3f frac>0 %.2f" % (a.mean(), a[:q].mean(), a[-q:].mean(), (a > 0).mean()), flush=True)
