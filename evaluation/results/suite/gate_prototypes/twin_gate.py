"""Prototype of gate (b): the model and its labeled-only twin (same seed, same rows) run side
by side; on each arriving labeled row (before it is learnt) their log-losses are compared and
the model's unlabeled weight g (beta * g; proxy labels off when g < 0.5) moves
multiplicatively: g *= exp(eta * sign(loss_twin - loss_model)), clipped to [g_min, 1]."""
import sys, numpy as np, copy
HERE = __import__("pathlib").Path(__file__).parent; sys.path.insert(0, str(HERE.parents[3] / "tests")); sys.path.insert(0, str(HERE))
from test_unlabeled_gain import _clusters, _hyperplane
from align_probe_data import bananas
import river_dhbm

def run(cls, make, ratio, seed, n, eta, gmin=0.0):
    X, y = make(n, seed)
    lab = np.random.default_rng(seed + 10).random(n) < ratio
    m = cls(seed=seed); twin = cls(seed=seed, learn_unlabeled=False); plain = cls(seed=seed)
    beta0, conf0 = m.beta, m.confidence
    g = 1.0; acc = {"gate": 0, "twin": 0, "plain": 0}; gs = []
    for s in range(0, n, 20):
        xb, yb, lb = X[s:s+20], y[s:s+20], lab[s:s+20]
        for name, mod in (("gate", m), ("twin", twin), ("plain", plain)):
            if mod.classes_:
                P = mod.predict_proba_arrays(xb); pred = np.array(mod.classes_)[P.argmax(1)]
                acc[name] += (pred == yb).sum()
                if name == "gate": Pm = P; cm = list(mod.classes_)
                if name == "twin": Pt = P; ct = list(mod.classes_)
        if m.classes_ and twin.classes_ and lb.any():
            for r in np.flatnonzero(lb):
                lm = -np.log(max(Pm[r, cm.index(yb[r])], 1e-6)) if yb[r] in cm else np.log(1e6)
                lt = -np.log(max(Pt[r, ct.index(yb[r])], 1e-6)) if yb[r] in ct else np.log(1e6)
                if lm != lt:
                    g = min(1.0, max(gmin, g * np.exp(eta * np.sign(lt - lm))))
        m.beta = beta0 * g
        m.confidence = conf0 if g >= 0.5 else None
        for mod in (m, twin, plain):
            mod.learn_arrays(xb, yb, lb)
        gs.append(g)
    return {k: v / n for k, v in acc.items()}, np.mean(gs), gs[-1]

streams = {"clusters": (_clusters, 0.005, 6000), "hyper1": (_hyperplane, 0.01, 6000), "bananas1": (bananas, 0.01, 5300), "bananas10": (bananas, 0.1, 5300)}
cls = getattr(river_dhbm, sys.argv[1]); eta = float(sys.argv[2])
for s, (make, r, n) in streams.items():
    d_gate, d_plain, gm = [], [], []
    for seed in (1, 2, 3):
        a, gmean, glast = run(cls, make, r, seed, n, eta)
        d_gate.append(a["gate"] - a["twin"]); d_plain.append(a["plain"] - a["twin"]); gm.append(glast)
    se = lambda v: np.std(v, ddof=1) / np.sqrt(len(v))
    print(sys.argv[1], eta, s, "gated-ablation %+.3f±%.3f  ungated-ablation %+.3f±%.3f  final g %s" % (np.mean(d_gate), se(d_gate), np.mean(d_plain), se(d_plain), np.round(gm, 2)), flush=True)
