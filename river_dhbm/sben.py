"""The Stacked Boltzmann Experts Network (SBEN): the DHBM's layer-wise predecessor."""

from __future__ import annotations

import numpy as np
from river import base

from river_dhbm import scarce_labels
from river_dhbm._kernels import dhbm as dhbm_kernels
from river_dhbm._kernels import network, parameters
from river_dhbm._kernels.sben import UPDATE_KERNELS, WORK, sben_proba
from river_dhbm.base import HybridClassifier
from river_dhbm.dhbm import DHBM, ESTIMATORS

__all__ = ["SBEN"]


class SBEN(DHBM):
    """Stacked Boltzmann Experts Network: hybrid RBMs trained layer by layer, online.

    The layer-wise predecessor of the `DHBM` (paper section 3.1 and Figure 2): a stack of
    hybrid restricted Boltzmann machines (1-layer DHBM blocks), each modelling `p(y, h^b)` on
    the representation of the block below and carrying its own predictor; the prediction is
    the average of the blocks' `p(y | x)`. Every mini-batch updates the blocks bottom-up,
    each on the block below's representation as it is after that block's update, with the
    DHBM's learning step (same estimators, proxy labels, dropout, discriminative gradient).

    Parameters
    ----------
    hidden_sizes
        Hidden units of each block, bottom to top.
    estimator
        `"mf"` or `"sap"`, as for `DHBM` (SAP particles are kept per block).
    n_particles
        Persistent fantasy particles per block (`"sap"` only).
    mf_steps
        Clamped mean-field sweeps of each block's learning step (see `DHBM`).
    learning_rate
        Step size of every parameter.
    alpha
        Weight of the labeled rows' gradients.
    beta
        Weight of the unlabeled rows' gradients (final value under `beta_schedule`).
    beta_schedule
        `None` or `(T1, T2)` in mini-batch updates (paper eq. 17), as for `DHBM`.
    dropout
        Probability of dropping each hidden unit while learning; representations passed up
        and predictions scale activities by the keep probability instead.
    pseudo_label
        `"soft"` or `"hard"` proxy labels, from the block's own predictor.
    discriminative_weight
        Weight of each block's direct discriminative gradient (into its own predictor and
        recognition weights only: nothing is back-propagated across blocks).
    activation
        Hidden units: `"sigmoid"` or `"relu"` (bounded to [0, 1], as for `DHBM`).
    optimizer
        `"adam"` or `"sgd"`.
    learn_unlabeled
        Whether unlabeled rows teach the model anything (`False`: the ablation, see `DHBM`).
    safe_unlabeled
        Whether the prediction mixes the network with a labeled-only twin (see `DHBM`).
    linear_expert
        Whether the prediction mixes in a linear softmax model of the labeled rows (see `DHBM`).
    init
        First-layer weights of each block, `"centred"` or `"glorot"` (see `DHBM`).
    steps
        Gradient steps of every block per update, each on the mini-batch and its own replayed
        rows (see `DHBM`).
    warm_start
        Labeled rows up to which every update takes `steps` steps, fewer after (see `DHBM`).
    replay
        Labeled rows of the label memory added to each step (see `DHBM`).
    memory_size
        How many labeled rows the label memory keeps (those of the last 10,000 stream rows).
    confidence
        Probability of the stack's prediction at which an unlabeled row becomes a proxy label
        (after 50 labeled rows), learnt by every block as a labeled row; `None`: none.
    drift_detector
        A River drift detector fed the labeled rows' 0/1 errors (each predicted before it is
        learnt); when it sees the error rise the model restarts its fast learning (see the
        Notes). Default: ADWIN (delta 0.01) and DDM; `drift.NoDrift()` turns it off.
    batch_size
        Instances per update.
    seed
        Seed of the generator behind the initial weights, dropout masks and Gibbs samples.

    Examples
    --------

    >>> from river import evaluate
    >>> import streams
    >>> from evaluation import PrequentialError, prequential
    >>> from river_dhbm import SBEN

    >>> dataset = streams.LabelMask(
    ...     streams.LEDDrift(seed=1, noise_percentage=10, n_drift_features=4),
    ...     label_ratio=0.1, batch_size=20, seed=1,
    ... )
    >>> evaluate.progressive_val_score(dataset.take(2000), SBEN(seed=1), PrequentialError())
    PrequentialError: 39.40%

    The array path is much faster:

    >>> result = prequential(dataset, SBEN(seed=1), 30_000, step=10_000)
    >>> result.faded_error.round(3)
    array([0.264, 0.269, 0.276])

    Notes
    -----
    Each block is exactly a one-hidden-layer `DHBM` (same layout, initialisation and
    learning step, see its Notes), so its recognition weights are not doubled, and its Adam
    step is the full `learning_rate` (each block is one layer deep).

    Defaults, as the DHBM's and for its reasons (issue 27; see its Notes): bounded
    rectifiers, `steps=8` per update tapering after `warm_start=250` labels, 20 replayed rows
    per step, blocks centred in their input box, the KL step (`mf_steps=1`) with `beta=0.3`
    and the discriminative gradient at weight 10. One step per update left the stack near the
    majority class on Bananas and Phishing, and sigmoid units left Bananas there; the KL step
    is the unlabeled rows' channel, as in the DHBM (figures in docs/models/sben.md).

    A maturing stack and concept changes are handled as the `DHBM`'s (its Notes: the step and
    the generative terms shrink past `warm_start` labels, `drift_detector` restarts them).

    The confident proxy labels come from the stack's averaged prediction and every block
    learns them as labeled rows, as it learns the label memory. The blocks share the label
    map and the update counter; the whole stack is one flat buffer and one jitted call per
    mini-batch, its steps included.

    References
    ----------
    [^1]: Ororbia, A. G., Giles, C. L., & Reitter, D. (2016). Online Semi-Supervised Learning with
        Deep Hybrid Boltzmann Machines and Denoising Autoencoders. arXiv:1511.06964.
    [^2]: Ororbia, A. G., Reitter, D., Wu, J., & Giles, C. L. (2015). Online learning of deep
        hybrid architectures for semi-supervised categorization. ECML PKDD.
    """

    def __init__(
        self,
        hidden_sizes: tuple = (32, 32),
        estimator: str = "mf",
        n_particles: int = 10,
        mf_steps: int = 1,
        learning_rate: float = 0.003,
        alpha: float = 1.0,
        beta: float = 0.3,
        beta_schedule: tuple | None = None,
        dropout: float = 0.0,
        pseudo_label: str = "soft",
        discriminative_weight: float = 10.0,
        activation: str = "relu",
        optimizer: str = "adam",
        learn_unlabeled: bool = True,
        safe_unlabeled: bool = True,
        linear_expert: bool = True,
        init: str = "centred",
        steps: int = 8,
        warm_start: int | None = 250,
        replay: int = 20,
        memory_size: int = 1000,
        confidence: float | None = 0.9,
        drift_detector: base.DriftDetector | None = None,
        batch_size: int = 20,
        seed: int | None = None,
    ):
        super().__init__(
            hidden_sizes=hidden_sizes, estimator=estimator, n_particles=n_particles,
            mf_steps=mf_steps, learning_rate=learning_rate, alpha=alpha, beta=beta,
            beta_schedule=beta_schedule, dropout=dropout, pseudo_label=pseudo_label,
            discriminative_weight=discriminative_weight, activation=activation,
            optimizer=optimizer, learn_unlabeled=learn_unlabeled,
            safe_unlabeled=safe_unlabeled, linear_expert=linear_expert, replay=replay,
            memory_size=memory_size, confidence=confidence, init=init, steps=steps,
            warm_start=warm_start, drift_detector=drift_detector, batch_size=batch_size,
            seed=seed,
        )

    _SCRATCH = DHBM._SCRATCH + ("_pred_Pb",)

    # ------------------------------------------------------------------ state

    def _layouts(self, C: int) -> None:
        self._offs = np.stack([parameters.param_layout(s, C) for s in self._bsizes])
        sizes = [int(off[-1, 2]) for off in self._offs]
        self._boff = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def _init_params(self, n_features: int) -> None:
        sizes = [n_features, *self.hidden_sizes]
        L = len(self.hidden_sizes)
        self._bsizes = np.array([[sizes[b], sizes[b + 1]] for b in range(L)], dtype=np.int64)
        self._hcums = np.array([[0, sizes[b + 1]] for b in range(L)], dtype=np.int64)
        self._sizes = np.array(sizes, dtype=np.int64)  # for the widths of work arrays
        self._kind = network.HYBRID_ACTIVATIONS[self.activation]
        self._estimator = ESTIMATORS[self.estimator]
        self._layouts(0)
        theta = np.zeros(self._boff[-1])
        for b in range(L):  # each block as a one-layer DHBM (`parameters.init_weights`)
            block = theta[self._boff[b] : self._boff[b + 1]]
            first = parameters.first_layer_init(self.init, L)  # as gentle as the stack is deep
            parameters.init_weights(block, self._offs[b], self._bsizes[b], self._rng, **first)
        self._theta = theta
        self._adam_steps = 0
        M = self.n_particles if self._estimator == dhbm_kernels.SAP else 0
        self._pvoff = np.concatenate([[0], np.cumsum(M * self._bsizes[:, 0])]).astype(np.int64)
        self._phoff = np.concatenate([[0], np.cumsum(M * self._bsizes[:, 1])]).astype(np.int64)
        self._nvoff = np.concatenate([[0], np.cumsum(M * self._bsizes[:, 0] + M)]).astype(
            np.int64
        )
        self._moff_unit = np.concatenate([[0], np.cumsum(self._bsizes[:, 1])]).astype(np.int64)
        self._part_x = (self._rng.random(self._pvoff[-1]) < 0.5).astype(np.float64)
        self._part_h = (self._rng.random(self._phoff[-1]) < 0.5).astype(np.float64)
        self._part_y = np.zeros((L, M, 0))
        self._moments = parameters.adam_moments(theta, self.optimizer)
        self._alloc_work()

    def _alloc_work(self) -> None:
        n, C = self.batch_size + self.replay, len(self._classes)  # the batch and its replay
        H, wide = int(self._bsizes[:, 1].max()), int(self._sizes.max())
        M = self._part_y.shape[1]
        self._grad = np.zeros_like(self._theta)
        self._work = dict(
            act=np.zeros(n * H), mu=np.zeros(n * H), neg=np.zeros(n * H),
            delta=np.zeros(n * H), zbuf=np.zeros(max(n, M, 1) * wide),
            xbuf=np.zeros(n * wide), P=np.zeros((n, C)), T=np.zeros((n, C)),
            Y=np.zeros((n, C)), wrow=np.zeros(n), wdisc=np.zeros(n),
            mirror=np.zeros_like(self._theta), reps=np.zeros(n * int(self._hcums[:, 1].sum())),
        )
        self._pred_act = np.zeros(int(self._hcums[:, 1].sum()))
        self._pred_Pb = np.zeros((1, C))

    def _add_class(self) -> None:
        C = len(self._classes)
        old_boff = self._boff
        blocks = [
            parameters.regrow_classes(self._theta[old_boff[b] : old_boff[b + 1]], s, C - 1, C)
            for b, s in enumerate(self._bsizes)
        ]
        if self._moments.size:
            moments = []
            for b, s in enumerate(self._bsizes):
                pair = self._moments[2 * old_boff[b] : 2 * old_boff[b + 1]]
                moments += [parameters.regrow_classes(h, s, C - 1, C) for h in np.split(pair, 2)]
            self._moments = np.concatenate(moments)
        self._theta = np.concatenate(blocks)
        self._layouts(C)
        L, M = self._part_y.shape[:2]
        self._part_y = np.concatenate([self._part_y, np.zeros((L, M, 1))], axis=2)
        self._alloc_work()

    # ------------------------------------------------------------------ hooks

    def _update(self, X: np.ndarray, y: np.ndarray, P=None) -> None:
        n_batch = len(X)
        steps = scarce_labels.steps_at(self, self.n_labeled_seen)
        X, y = scarce_labels.learning_batch(self, X, y, P, rounds=steps)
        n = X.shape[0]
        keep = 1.0 - self.dropout
        rng = self._rng
        units = int(self._moff_unit[-1])
        masks = self._empty
        if self.dropout > 0:
            masks = (rng.random(n * units) < keep).astype(np.float64)
        M = self._part_y.shape[1]
        if M:
            part_mask = (
                (rng.random(M * units) < keep).astype(np.float64)
                if self.dropout > 0 else self._empty
            )
            size = int(self._phoff[-1])
            draw = rng.standard_normal if self._kind != network.SIGMOID else rng.random
            noise_h = draw(size)
            noise_v = rng.random(int(self._nvoff[-1]))
        else:
            part_mask = noise_h = noise_v = self._empty
        w = self._work
        alpha, beta, disc_weight = scarce_labels.term_weights(
            self, self._unlabeled_weight(self._current_beta()))
        # one kernel per estimator: the MF kernel never compiles the SAP negative phase
        UPDATE_KERNELS[self._estimator](
            X, y,
            (self._theta, self._boff, self._offs, self._bsizes, self._hcums,
             len(self._classes), self._kind),
            (self._grad, self._moments, self._adam_steps + 1),
            (self.mf_steps,
             float(self.learning_rate) * scarce_labels.step_scale(self, self.n_labeled_seen),
             alpha, beta, disc_weight, self.pseudo_label == "hard", keep),
            (masks, n * self._moff_unit),
            (self._part_x, self._pvoff, self._part_h, self._phoff, self._part_y, part_mask,
             noise_h, noise_v, self._nvoff),
            tuple(w[name] for name in WORK), steps, n_batch,
        )
        self._adam_steps += steps

    # the stack's update does not start with its prediction's pass (unlike the DHBM's), and its
    # one-row prediction is its own (`_proba_row`), not the DHBM's kernel
    _predict_update = HybridClassifier._predict_update
    _test_then_train_run = HybridClassifier._test_then_train_run
    _predict_row = HybridClassifier._predict_row
    _experts_row = None  # its experts answer one call each (`safety`)

    def _proba(self, X: np.ndarray) -> np.ndarray:
        n, C = X.shape[0], len(self._classes)
        if n == 1:
            act, Pb = self._pred_act, self._pred_Pb
        else:
            act, Pb = np.empty(n * int(self._hcums[:, 1].sum())), np.empty((n, C))
        P = np.empty((n, C))
        sben_proba(X, self._theta, self._boff, self._offs, self._bsizes, self._hcums, C,
                   self._kind, 1.0 - self.dropout, act, Pb, P)
        return P

    def _proba_row(self, row: np.ndarray) -> list:
        P = self._one_row_output()
        sben_proba(row, self._theta, self._boff, self._offs, self._bsizes, self._hcums,
                   len(self._classes), self._kind, 1.0 - self.dropout, self._pred_act,
                   self._pred_Pb, P)
        return P[0].tolist()

