"""The generative readout: class-conditional Bernoulli units on the input, fitted to every row
by online EM and steered by the labels, which predict instead of the network when they do
better.

Why it exists: the networks predict with a discriminatively trained pass, and what the
generative terms learn from unlabeled rows does not reach it (measured: `beta` 0, 0.1 and 1
give the same error; the KL step and tied recognition make it worse). LED, the paper's stream,
is a mixture of 10 product-Bernoulli components; a mixture fitted to the unlabeled rows and
named by the few labeled ones classifies far better than anything fitted to the labeled rows
alone (0.1 % labels: about 0.32 against BernoulliNB's 0.36). This is that mixture, the hybrid
energy's class-to-visible term `y^T D x` on its own (a Boltzmann machine with the label as its
only hidden unit), learnt online.

How it learns (`readout_learn`, one call per mini-batch):

- stage 0 holds the labeled rows' class sums (Laplace-smoothed class means: naive Bayes);
- stage `j = 1..STAGES` adds the unlabeled rows' sums, each row weighted by its class posterior
  under stage `j - 1`. Stage `STAGES` predicts. This is EM unrolled over the stream: each stage
  is one EM step away from the labels, so it cannot run off to a likelihood optimum that is not
  the classes (EM iterated to convergence from a few labels does; measured on LED 0.1 %, 3
  seeds: 1 stage 0.331, 2 stages 0.321, 4 stages 0.338, 6 stages 0.394);
- sums decay: unlabeled ones over about `UNLABELED_WINDOW` rows, labeled ones over about
  `LABELED_WINDOW` labels, so the readout follows drift;
- unlabeled rows count once `WARM_UP` labels are in.

How it predicts (`choice`): with the network's `p(y | x)`, this readout's, or that of the
Gaussian clusters of `cluster_readout` (the second family, for classes that are not product
distributions), whichever made the fewest errors on the labeled rows so far (each scored
before it is learnt, decayed over about `BLEND_WINDOW` labels), the generative experts
needing `CHOICE_MARGIN` errors fewer than the network. Products of the network's and the
readout's predictions won the log-loss on Waveform at 10 % labels while losing in error (DHDA
0.151 against 0.146), so one expert predicts at a time. The class readout wins on LED; the clusters on Waveform at 0.1 %.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm.cluster_readout import (
    CLUSTERS, WARM_ROWS, cluster_learn, cluster_posteriors, cluster_proba,
)
from river_dhbm.kernels import _JIT

__all__ = ["GenerativeReadout", "EXPERTS", "STAGES"]

STAGES = 2  # EM steps between the labels and the predicting stage
# The windows trade following drift against noise (prototype, LED seeds 11-13, mean faded
# error over 200,000 rows of the paper's drifting stream at 10 % labels / last quarter of the
# stationary one at 0.1 %): 20,000 rows and 1,000 labels 0.337 / 0.321, 5,000 and 250 0.286 /
# 0.323, 2,500 and 125 0.275 / 0.334.
UNLABELED_WINDOW = 5_000  # unlabeled rows the EM sums remember (1 / their decay rate)
LABELED_WINDOW = 250  # labeled rows the class sums remember
WARM_UP = 10  # labels before unlabeled rows count
BLEND_WINDOW = 500  # labeled rows the experts' error counts remember
#: Errors fewer than the network's an expert of the readout needs to predict instead of it.
#: Measured (prototype replays on seeds 11-13): the log-loss chose the clusters on Waveform at
#: 10 % labels for the DHDA and HSDA, whose networks are overconfident (0.157 against 0.146);
#: error counts with no margin still flipped to them at times (+0.001-0.004); 3 errors cost
#: at most 0.002 there and nothing on LED; 6 errors cost 0.004-0.007 at 0.1 %.
CHOICE_MARGIN = 3.0
#: Who may predict, in the order ties are broken: the network, the class-conditional units,
#: the named clusters.
EXPERTS = ("network", "classes", "clusters")
_TINY = 1e-12
MEAN_CLIP = 1e-3  # Bernoulli means stay in [MEAN_CLIP, 1 - MEAN_CLIP]


@njit(**_JIT)
def class_log_likelihoods(counts, sums, stage, X, n, out):
    """`log p(x, y)` of the first `n` rows of `X` under the readout's `stage` into `out [n, C]`:
    Laplace-smoothed Bernoulli means `(sums[0] + sums[stage] + 0.5) / (counts[0] +
    counts[stage] + 1)` (stage 0 alone for stage 0) clipped to `[MEAN_CLIP, 1 - MEAN_CLIP]`,
    class prior from the same counts; a class
    no label has named gets `-inf`."""
    C, d = sums.shape[1], sums.shape[2]
    total = 0.0
    for k in range(C):
        total += counts[0, k] + (counts[stage, k] if stage > 0 else 0.0) + 1.0
    for k in range(C):
        if counts[0, k] <= 0.0:
            for r in range(n):
                out[r, k] = -np.inf
            continue
        nk = counts[0, k] + (counts[stage, k] if stage > 0 else 0.0)
        bias = np.log((nk + 1.0) / total)
        for r in range(n):
            out[r, k] = bias
        for c in range(d):
            s = sums[0, k, c] + (sums[stage, k, c] if stage > 0 else 0.0)
            # clipped: inputs outside [0, 1] (a user's raw features) can push a mean past them
            mu = min(max((s + 0.5) / (nk + 1.0), MEAN_CLIP), 1.0 - MEAN_CLIP)
            log_on, log_off = np.log(mu), np.log(1.0 - mu)
            for r in range(n):
                out[r, k] += X[r, c] * log_on + (1.0 - X[r, c]) * log_off
    return out


@njit(**_JIT)
def _normalise_rows(L, n):
    """Turn the first `n` rows of log-scores `L` into probabilities, in place."""
    for r in range(n):
        top = -np.inf
        for k in range(L.shape[1]):
            top = max(top, L[r, k])
        z = 0.0
        for k in range(L.shape[1]):
            L[r, k] = np.exp(L[r, k] - top) if L[r, k] > -np.inf else 0.0
            z += L[r, k]
        for k in range(L.shape[1]):
            L[r, k] = L[r, k] / z if z > 0.0 else 1.0 / L.shape[1]  # no class named yet


@njit(**_JIT)
def readout_proba(counts, sums, X, out):
    """`p(y | x)` of the predicting stage for every row of `X`, into `out [n, C]`."""
    class_log_likelihoods(counts, sums, counts.shape[0] - 1, X, X.shape[0], out)
    _normalise_rows(out, X.shape[0])
    return out


@njit(**_JIT)
def readout_learn(counts, sums, X, codes, n, learn_unlabeled, work):
    """Learn the first `n` rows of `(X, codes)` (codes: class index, -1 unlabeled): the
    unlabeled rows into every stage, each weighted by the previous stage's posterior (all
    posteriors computed first), then the labeled rows into stage 0. `work [J, n, C]`."""
    J, C, d = counts.shape[0] - 1, counts.shape[1], sums.shape[2]
    n_unlabeled = 0
    n_labeled = 0
    for r in range(n):
        if codes[r] < 0:
            n_unlabeled += 1
        else:
            n_labeled += 1
    labels_in = 0.0
    for k in range(C):
        labels_in += counts[0, k]
    if learn_unlabeled and n_unlabeled > 0 and labels_in >= WARM_UP:
        for j in range(J):
            class_log_likelihoods(counts, sums, j, X, n, work[j])
            _normalise_rows(work[j], n)
        keep = (1.0 - 1.0 / UNLABELED_WINDOW) ** n_unlabeled
        for j in range(J):
            for k in range(C):
                counts[j + 1, k] *= keep
                for c in range(d):
                    sums[j + 1, k, c] *= keep
            for r in range(n):
                if codes[r] >= 0:
                    continue
                for k in range(C):
                    w = work[j, r, k]
                    if w > 0.0:
                        counts[j + 1, k] += w
                        for c in range(d):
                            sums[j + 1, k, c] += w * X[r, c]
    if n_labeled > 0:
        keep = (1.0 - 1.0 / LABELED_WINDOW) ** n_labeled
        for k in range(C):
            counts[0, k] *= keep
            for c in range(d):
                sums[0, k, c] *= keep
        for r in range(n):
            k = codes[r]
            if k >= 0:
                counts[0, k] += 1.0
                for c in range(d):
                    sums[0, k, c] += X[r, c]


@njit(**_JIT)
def score(losses, expert, P, codes):
    """Decay `losses[expert]` by `1 - 1 / BLEND_WINDOW` per row and add 1 for each row of `P`
    (the expert's prediction of the labeled rows whose classes are `codes`) whose first most
    probable class is not its label."""
    keep = 1.0 - 1.0 / BLEND_WINDOW
    for r in range(codes.shape[0]):
        losses[expert] = keep * losses[expert] + (np.argmax(P[r]) != codes[r])


@njit(**_JIT)
def choose(losses):
    """The expert that predicts: the one with the fewest recent errors, the generative ones
    handicapped by `CHOICE_MARGIN` errors (ties go to the first)."""
    best, low = 0, losses[0]
    for g in range(1, losses.shape[0]):
        if losses[g] + CHOICE_MARGIN < low:
            best, low = g, losses[g] + CHOICE_MARGIN
    return best


@njit(**_JIT)
def _step(counts, sums, losses, clusters, Xb, cb, P_net, learn_unlabeled, G, H, R, work):
    """Score the experts on the named labeled rows of one mini-batch (`G`, `H`: the class
    readout's and the clusters' prediction of it, `P_net` the network's; `R` its cluster
    posteriors), then learn it."""
    weights, csums, squares, names, floor, buffer, buffer_codes, state = clusters
    n = Xb.shape[0]
    named = 0
    for r in range(n):
        if cb[r] >= 0 and counts[0, cb[r]] > 0.0:
            named += 1
    if named:
        C = counts.shape[1]
        Pl, Gl, Hl = np.empty((named, C)), np.empty((named, C)), np.empty((named, C))
        cl = np.empty(named, np.int64)
        i = 0
        for r in range(n):
            if cb[r] >= 0 and counts[0, cb[r]] > 0.0:
                for k in range(C):
                    Pl[i, k], Gl[i, k], Hl[i, k] = P_net[r, k], G[r, k], H[r, k]
                cl[i] = cb[r]
                i += 1
        score(losses, 0, Pl, cl)
        score(losses, 1, Gl, cl)
        score(losses, 2, Hl, cl)
    readout_learn(counts, sums, Xb, cb, n, learn_unlabeled, work)
    cluster_learn(weights, csums, squares, names, floor, buffer, buffer_codes, state, Xb, cb, n,
                  R, learn_unlabeled, UNLABELED_WINDOW, LABELED_WINDOW)


@njit(**_JIT)
def readout_test_then_train(counts, sums, losses, clusters, X, codes, P_net, batch,
                            learn_unlabeled, predicted):
    """What `GenerativeReadout.combine` then `.learn` do for each mini-batch of `batch` rows
    of `X` in turn, in one call: each row's class by the expert chosen before its batch
    (`P_net`: the network's prediction of every row, made before its batch's update) into
    `predicted`, then the experts scored on the batch's named labeled rows, then the batch
    learnt (the DHBM's one-call run)."""
    weights, csums, squares, names, floor, buffer, buffer_codes, state = clusters
    C = counts.shape[1]
    G, H = np.empty((batch, C)), np.empty((batch, C))
    R = np.empty((batch, weights.shape[0]))
    work = np.empty((STAGES, batch, C))
    for b in range(X.shape[0] // batch):
        lo = b * batch
        Xb, cb, Pb = X[lo : lo + batch], codes[lo : lo + batch], P_net[lo : lo + batch]
        g = choose(losses)
        readout_proba(counts, sums, Xb, G)
        if state[1]:
            cluster_posteriors(weights, csums, squares, floor, Xb, batch, R)
        cluster_proba(names, state, R, H)
        for r in range(batch):
            predicted[lo + r] = np.argmax(Pb[r] if g == 0 else G[r] if g == 1 else H[r])
        _step(counts, sums, losses, clusters, Xb, cb, Pb, learn_unlabeled, G, H, R, work)


class GenerativeReadout:
    """The readout's state: the class units' `counts [STAGES + 1, C]` and `sums [STAGES + 1,
    C, d]`, the clusters' arrays (`cluster_readout`) and the experts' decayed log-losses
    `losses [len(EXPERTS)]`; grows a class at a time."""

    def __init__(self, n_features: int, n_classes: int = 0):
        self.counts = np.zeros((STAGES + 1, n_classes))
        self.sums = np.zeros((STAGES + 1, n_classes, n_features))
        self.losses = np.zeros(len(EXPERTS))
        M = CLUSTERS
        self.clusters = (
            np.zeros(M), np.zeros((M, n_features)), np.zeros((M, n_features)),
            np.zeros((M, n_classes)), np.zeros(n_features),
            np.zeros((WARM_ROWS, n_features)), np.zeros(WARM_ROWS, dtype=np.int64),
            np.zeros(2, dtype=np.int64),
        )

    def add_class(self) -> None:
        J, C, d = self.sums.shape
        self.counts = np.concatenate([self.counts, np.zeros((J, 1))], axis=1)
        self.sums = np.concatenate([self.sums, np.zeros((J, 1, d))], axis=1)
        c = list(self.clusters)
        c[3] = np.concatenate([c[3], np.zeros((CLUSTERS, 1))], axis=1)
        self.clusters = tuple(c)

    @property
    def choice(self) -> int:
        """The index in `EXPERTS` of the one that predicts now."""
        return int(choose(self.losses))

    def proba(self, X: np.ndarray) -> np.ndarray:
        """The class units' `p(y | x)` of the rows `X`."""
        return readout_proba(self.counts, self.sums, X, np.empty((len(X), self.counts.shape[1])))

    def cluster_proba(self, X: np.ndarray, R: np.ndarray | None = None) -> np.ndarray:
        """The named clusters' `p(y | x)` of the rows `X` (`R`: their cluster posteriors, if
        already computed)."""
        w, s, q, names, floor, _, _, state = self.clusters
        if R is None:
            R = self._posteriors(X)
        return cluster_proba(names, state, R, np.empty((len(X), names.shape[1])))

    def _posteriors(self, X: np.ndarray) -> np.ndarray:
        w, s, q, _, floor, _, _, state = self.clusters
        R = np.empty((len(X), CLUSTERS))
        if state[1]:
            cluster_posteriors(w, s, q, floor, X, len(X), R)
        return R

    def combine(self, P_net: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The prediction of the rows `X`: the chosen expert's (`P_net`: the network's)."""
        g = self.choice
        return P_net if g == 0 else self.proba(X) if g == 1 else self.cluster_proba(X)

    def learn(self, X, codes, P_net_labeled, learn_unlabeled: bool) -> None:
        """One mini-batch: score the experts on its labeled rows (`P_net_labeled`: the
        network's prediction of them, before its update), then learn every row."""
        C = self.counts.shape[1]
        P_net = np.zeros((len(X), C))
        if P_net_labeled is not None:
            P_net[codes >= 0] = P_net_labeled
        work = np.empty((STAGES, len(X), C))
        R = self._posteriors(X)
        _step(self.counts, self.sums, self.losses, self.clusters, X, codes, P_net,
              learn_unlabeled, self.proba(X), self.cluster_proba(X, R), R, work)
        self.release_warm_up()

    def release_warm_up(self) -> None:
        """Free the clusters' warm-up rows once they are fitted."""
        if self.clusters[7][1] and self.clusters[5].shape[0]:
            c = list(self.clusters)
            c[5], c[6] = np.zeros((0, c[5].shape[1])), np.zeros(0, dtype=np.int64)
            self.clusters = tuple(c)
