"""The generative readout: generative models of the input fitted to every row and named by
the labels, which predict instead of the network when they do better on the labeled rows.

Why it exists: the networks predict with a discriminatively trained pass, and what the
generative terms learn from unlabeled rows does not reach it (measured: `beta` 0, 0.1 and 1
give the same error; the KL step and tied recognition make it worse). So the unlabeled rows
teach three small generative models beside the network:

- class-conditional Bernoulli units (this module). LED, the paper's stream, is a mixture of 10
  product-Bernoulli components; a mixture fitted to the unlabeled rows and named by the few
  labeled ones classifies far better than anything fitted to the labeled rows alone (0.1 %
  labels: about 0.32 against BernoulliNB's 0.36). This is that mixture, the hybrid energy's
  class-to-visible term `y^T D x` on its own (a Boltzmann machine with the label as its only
  hidden unit), learnt online;
- Gaussian clusters of the recent rows named by the labels (`cluster_readout`), for classes
  that are not product distributions (Waveform);
- the classes as blurred segments in the principal plane of the recent rows
  (`plane_readout`): the unlabeled rows say where the signal lies and shape the segments by
  semi-supervised EM, the labels say what they mean.

How the class units learn (`readout_learn`, one call per mini-batch):

- stage 0 holds the labeled rows' class sums (Laplace-smoothed class means: naive Bayes);
- stage `j = 1..STAGES` adds the unlabeled rows' sums, each row weighted by its class posterior
  under stage `j - 1`. Stage `STAGES` predicts. This is EM unrolled over the stream: each stage
  is one EM step away from the labels, so it cannot run off to a likelihood optimum that is not
  the classes (EM iterated to convergence from a few labels does; measured on LED 0.1 %, 3
  seeds: 1 stage 0.331, 2 stages 0.321, 4 stages 0.338, 6 stages 0.394);
- sums decay: unlabeled ones over about `UNLABELED_WINDOW` rows, labeled ones over about
  `LABELED_WINDOW` labels, so the readout follows drift;
- unlabeled rows count once `WARM_UP` labels are in.

How it predicts (`choose`): one of five experts predicts, `EXPERTS`: the network, the class
units, the named clusters, the average of the network's and the clusters' `p(y | x)`, or the
plane. Each is scored on every labeled row before it is learnt, by its Brier score (the squared
distance of its `p(y | x)` from the label's one-hot vector) decayed over about `CHOICE_WINDOW`
labels or `CHOICE_ROWS` rows, whichever is fewer; the smallest predicts (ties keep the
earlier). Why the Brier score (tuning seeds 7, DHDA; `docs/results.md`):

- error counts are too noisy with rare labels: on the stationary Waveform at 0.1 % they chose
  the clusters over the plane on one seed in three (0.166 against the plane's 0.137);
- the log-loss remembers a confident mistake too long: after the drifting Waveform's change
  the plane's log-loss stayed the worst of the five for 85,000 rows, though over the last
  quarter it predicted best (drifting 1 %: 0.152 against 0.139 by Brier);
- the Brier score is bounded like the errors and graded like the log-loss (DHBM-MF / DHDA,
  stationary Waveform 0.1 %: 0.140 / 0.138 against 0.153 / 0.146 by errors; drifting 0.1 %:
  0.146 against 0.150; LED unchanged).

Earlier rules, replayed on recorded predictions (`docs/results.md`): the log-loss alone chose
the clusters over the DHDA's better but overconfident network on Waveform (1 %: 0.169 against
0.146 by error counts); error counts alone chose badly between the class units and the network
on LED at 0.1 % (0.340 against 0.324 by log-loss). The Brier score does neither. The average
of the network and the clusters is the best of the four on Waveform at 1 % and 10 % without
the plane (DHBM 0.145 / 0.142 against the network's 0.149 / 0.143). Products of the network's
and the class units' predictions won the log-loss at 10 % while losing in error (DHDA 0.151
against 0.146), so no product is among the experts.

The class units win on LED, the plane on Waveform.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from river_dhbm.cluster_readout import ClusterState, cluster_learn, cluster_proba
from river_dhbm.kernels import _JIT
from river_dhbm.plane_readout import PlaneState, normalise_row, plane_learn, plane_proba

__all__ = ["EXPERTS", "STAGES", "GenerativeReadout"]

STAGES = 2  # EM steps between the labels and the predicting stage
# The windows trade following drift against noise (prototype, LED seeds 11-13, mean faded
# error over 200,000 rows of the paper's drifting stream at 10 % labels / last quarter of the
# stationary one at 0.1 %): 20,000 rows and 1,000 labels 0.337 / 0.321, 5,000 and 250 0.286 /
# 0.323, 2,500 and 125 0.275 / 0.334.
UNLABELED_WINDOW = 5_000  # unlabeled rows the EM sums remember (1 / their decay rate)
LABELED_WINDOW = 250  # labeled rows the class sums remember
WARM_UP = 10  # labels before unlabeled rows count
# The experts' scores remember about CHOICE_WINDOW labels or CHOICE_ROWS rows, whichever is
# fewer: with rare labels a label window alone would remember a drift for the whole stream
# (tuning seeds, DHDA, Waveform at 0.1 %, stationary / drifting: no row window 0.137 / 0.150;
# 100,000 rows 0.137 / 0.150; 70,000 0.137 / 0.149; 50,000 0.138 / 0.146; 30,000 0.142 / 0.145)
CHOICE_WINDOW = 500
CHOICE_ROWS = 50_000
#: Who may predict: the network, the class units, the named clusters (`cluster_readout`), the
#: average of the network's and the clusters' predictions, and the classes' segments in the
#: principal plane (`plane_readout`).
EXPERTS = ("network", "classes", "clusters", "average", "plane")
NETWORK, CLASSES, CLUSTERS, AVERAGE, PLANE = range(5)
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
    slope = np.empty(d)
    for k in range(C):
        if counts[0, k] <= 0.0:
            for r in range(n):
                out[r, k] = -np.inf
            continue
        nk = counts[0, k] + (counts[stage, k] if stage > 0 else 0.0)
        # x log mu + (1 - x) log(1 - mu) = log(1 - mu) + x (log mu - log(1 - mu))
        base = np.log((nk + 1.0) / total)
        for c in range(d):
            s = sums[0, k, c] + (sums[stage, k, c] if stage > 0 else 0.0)
            # clipped: inputs outside [0, 1] (a user's raw features) can push a mean past them
            mu = min(max((s + 0.5) / (nk + 1.0), MEAN_CLIP), 1.0 - MEAN_CLIP)
            log_off = np.log(1.0 - mu)
            base += log_off
            slope[c] = np.log(mu) - log_off
        for r in range(n):
            acc = base
            for c in range(d):
                acc += X[r, c] * slope[c]
            out[r, k] = acc
    return out


@njit(**_JIT)
def _normalise_rows(L, n):
    """Turn the first `n` rows of log-scores `L` into probabilities, in place."""
    for r in range(n):
        top = -np.inf
        for k in range(L.shape[1]):
            top = max(top, L[r, k])
        normalise_row(L[r], top)


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
def score(scores, who, P, codes):
    """Decay `scores[who]` by `1 - 1 / CHOICE_WINDOW` per row and add the Brier score of each
    row of `P`, a prediction of the labeled rows whose classes are `codes`."""
    keep = 1.0 - 1.0 / CHOICE_WINDOW
    for r in range(codes.shape[0]):
        brier = 0.0
        for k in range(P.shape[1]):
            brier += (P[r, k] - (k == codes[r])) ** 2
        scores[who] = keep * scores[who] + brier


@njit(**_JIT)
def age(scores, n):
    """Decay the scores by `1 - 1 / CHOICE_ROWS` for each of `n` rows, labeled or not."""
    scores *= (1.0 - 1.0 / CHOICE_ROWS) ** n


@njit(**_JIT)
def choose(scores, fitted):
    """The expert with the smallest recent Brier score (the first on ties; the clusters, their
    average and the plane only once the clusters are `fitted`: before, they are the uniform
    guess or the network blurred by it)."""
    best = NETWORK
    for who in range(1, scores.shape[0]):
        if (who == CLASSES or fitted) and scores[who] < scores[best]:
            best = who
    return best


@njit(**_JIT)
def _average(P_net, H, A):
    """The average expert, `A = (P_net + H) / 2`, of the network's and the clusters'
    predictions (returns `A`)."""
    for r in range(A.shape[0]):
        for k in range(A.shape[1]):
            A[r, k] = 0.5 * (P_net[r, k] + H[r, k])
    return A


@njit(**_JIT)
def _score_batch(scores, counts, P_net, G, H, A, Q, codes):
    """Score every expert on the mini-batch's named labeled rows (a class's first labels score
    nothing: the readout cannot know a class no label named)."""
    n = P_net.shape[0]
    named = 0
    for r in range(n):
        if codes[r] >= 0 and counts[0, codes[r]] > 0.0:
            named += 1
    if named == 0:
        return
    rows = np.empty(named, np.int64)
    i = 0
    for r in range(n):
        if codes[r] >= 0 and counts[0, codes[r]] > 0.0:
            rows[i] = r
            i += 1
    cl = codes[rows]
    score(scores, NETWORK, P_net[rows], cl)
    score(scores, CLASSES, G[rows], cl)
    score(scores, CLUSTERS, H[rows], cl)
    score(scores, AVERAGE, A[rows], cl)
    score(scores, PLANE, Q[rows], cl)


@njit(**_JIT)
def _score_labeled(scores, counts, sums, clusters, plane, Xb, cb, Pb, R):
    """Score every expert on the labeled rows of a mini-batch (each computed on those rows
    only) and put their cluster posteriors in their rows of `R`, which name the clusters."""
    log_w, means, inv_var, _, names, _, _, _, state = clusters
    rows = np.flatnonzero(cb >= 0)
    n, C = rows.shape[0], counts.shape[1]
    Xl, Pl, cl = Xb[rows], Pb[rows], cb[rows]
    G, H, A, Q = np.empty((n, C)), np.empty((n, C)), np.empty((n, C)), np.empty((n, C))
    Rl = np.empty((n, means.shape[0]))
    readout_proba(counts, sums, Xl, G)
    cluster_proba(log_w, means, inv_var, names, state[1] == 1, Xl, H, Rl)
    _average(Pl, H, A)
    plane_proba(*plane, state[1] == 1, Xl, Q)
    for i in range(n):
        R[rows[i]] = Rl[i]
    _score_batch(scores, counts, Pl, G, H, A, Q, cl)


@njit(**_JIT)
def readout_test_then_train(counts, sums, scores, clusters, plane, X, codes, P_net, batch,
                            learn_unlabeled, predicted):
    """What `GenerativeReadout.combine` then `.learn` do for each mini-batch of `batch` rows
    of `X` in turn, in one call: each row's class by the expert chosen before its batch
    (`P_net`: the network's prediction of every row, made before its batch's update) into
    `predicted`, then the experts scored on the batch's named labeled rows, then the batch
    learnt (the DHBM's one-call run). `clusters`, `plane`: `ClusterState.arrays`,
    `PlaneState.arrays`."""
    log_w, means, inv_var, floor, names, buffer, ring_X, ring_codes, state = clusters
    center, basis, moments, unlabeled, limits = plane
    C = counts.shape[1]
    P = np.empty((batch, C))  # the chosen expert's prediction
    H = np.empty((batch, C))
    R = np.empty((batch, means.shape[0]))
    work = np.empty((STAGES, batch, C))
    for b in range(X.shape[0] // batch):
        lo = b * batch
        Xb, cb, Pb = X[lo : lo + batch], codes[lo : lo + batch], P_net[lo : lo + batch]
        fitted = state[1] == 1
        who = choose(scores, fitted)
        # only the chosen expert predicts the whole batch; the others see its labeled rows
        if who == NETWORK:
            P[:] = Pb
        elif who == CLASSES:
            readout_proba(counts, sums, Xb, P)
        elif who == PLANE:
            plane_proba(center, basis, moments, unlabeled, limits, fitted, Xb, P)
        else:
            cluster_proba(log_w, means, inv_var, names, fitted, Xb, H, R)
            if who == AVERAGE:
                _average(Pb, H, P)
            else:
                P[:] = H
        for r in range(batch):
            predicted[lo + r] = np.argmax(P[r])
        if (cb >= 0).any():
            _score_labeled(scores, counts, sums, clusters, plane, Xb, cb, Pb, R)
        age(scores, batch)
        readout_learn(counts, sums, Xb, cb, batch, learn_unlabeled, work)
        refitted = cluster_learn(log_w, means, inv_var, floor, names, buffer, ring_X,
                                 ring_codes, state, Xb, cb, batch, learn_unlabeled, R)
        plane_learn(center, basis, moments, unlabeled, limits, buffer, ring_X, ring_codes, state,
                    refitted, Xb, cb, batch, learn_unlabeled)


class GenerativeReadout:
    """The readout's state: the class units' `counts [STAGES + 1, C]` and `sums [STAGES + 1,
    C, d]`, the named clusters (`ClusterState`), the plane (`PlaneState`) and the experts'
    decayed Brier scores, `scores [len(EXPERTS)]`; grows a class at a
    time."""

    def __init__(self, n_features: int, n_classes: int = 0):
        self.counts = np.zeros((STAGES + 1, n_classes))
        self.sums = np.zeros((STAGES + 1, n_classes, n_features))
        self.clusters = ClusterState(n_features, n_classes)
        self.plane = PlaneState(n_features, n_classes)
        self.scores = np.zeros(len(EXPERTS))

    def add_class(self) -> None:
        J, C, d = self.sums.shape
        self.counts = np.concatenate([self.counts, np.zeros((J, 1))], axis=1)
        self.sums = np.concatenate([self.sums, np.zeros((J, 1, d))], axis=1)
        self.clusters.add_class()
        self.plane.add_class()

    @property
    def choice(self) -> int:
        """The index in `EXPERTS` of the one that predicts now (`NETWORK`: 0)."""
        return int(choose(self.scores, self.clusters.state[1] == 1))

    def proba(self, X: np.ndarray) -> np.ndarray:
        """The class units' `p(y | x)` of the rows `X`."""
        return readout_proba(self.counts, self.sums, X, np.empty((len(X), self.counts.shape[1])))

    def _predictions(self, P_net: np.ndarray, X: np.ndarray) -> tuple:
        """Every expert's prediction of the rows `X` (`P_net`: the network's), in `EXPERTS`
        order."""
        G, H = self.proba(X), self.clusters.proba(X)
        return P_net, G, H, _average(P_net, H, np.empty_like(H)), self._plane_proba(X)

    def _plane_proba(self, X: np.ndarray) -> np.ndarray:
        return plane_proba(*self.plane.arrays, bool(self.clusters.state[1]), X,
                           np.empty((len(X), self.counts.shape[1])))

    def combine(self, P_net: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The prediction of the rows `X` by the chosen expert (`P_net`: the network's)."""
        who = self.choice
        if who == NETWORK:
            return P_net
        if who == CLASSES:
            return self.proba(X)
        if who == PLANE:
            return self._plane_proba(X)
        H = self.clusters.proba(X)
        return H if who == CLUSTERS else _average(P_net, H, np.empty_like(H))

    def learn(self, X, codes, P_net_labeled, learn_unlabeled: bool) -> None:
        """One mini-batch: score the experts on its labeled rows (`P_net_labeled`: the
        network's prediction of them, before its update), then learn every row."""
        labeled = codes >= 0
        if labeled.any():
            XL = X[labeled]
            _score_batch(self.scores, self.counts, *self._predictions(P_net_labeled, XL),
                         codes[labeled])
        work = np.empty((STAGES, len(X), self.counts.shape[1]))
        age(self.scores, len(X))
        readout_learn(self.counts, self.sums, X, codes, len(X), learn_unlabeled, work)
        refitted = self.clusters.learn(X, codes, learn_unlabeled)
        plane_learn(*self.plane.arrays, *self.clusters.arrays[5:], refitted, X, codes, len(X),
                    learn_unlabeled)
