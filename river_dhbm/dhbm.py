"""The Deep Hybrid Boltzmann Machine (Ororbia, Giles & Reitter, 2016) as a River classifier.

Its kernels are in `river_dhbm._kernels.dhbm`, its test-then-train over many mini-batches in one
kernel call in `river_dhbm.fused_run`; its measured figures and the choices where the paper is
vague are in docs/models/dhbm.md.
"""

from __future__ import annotations

import numpy as np
from river import base

from river_dhbm import fused_run, safety, scarce_labels
from river_dhbm._kernels import dhbm as dhbm_kernels
from river_dhbm._kernels import entries, network, parameters
from river_dhbm._input.params import (
    PSEUDO_LABELS,
    check_beta_schedule,
    check_bool,
    check_choice,
    check_hidden_sizes,
    check_int,
    check_non_negative,
    check_positive,
    check_probability,
)
from river_dhbm.base import HybridClassifier

__all__ = ["DHBM"]

#: `estimator` -> the kernels' code of the likelihood-gradient estimator.
ESTIMATORS = {"mf": dhbm_kernels.MF, "sap": dhbm_kernels.SAP}


class DHBM(HybridClassifier):
    """Deep Hybrid Boltzmann Machine: a semi-supervised online classifier.

    An L-layer Boltzmann machine over the input, L hidden layers and the label (connected to
    every hidden layer), with a recognition network inferring the hidden layers bottom-up.
    Labeled rows follow the gradient of `log p(y, x)`, unlabeled rows (weight `beta`) that
    of `log p(x)` with a proxy label (paper Algorithm 1); `learn_one(x)` is unlabeled.

    Parameters
    ----------
    hidden_sizes
        Units of each hidden layer, bottom to top (any depth >= 1).
    estimator
        Likelihood-gradient estimator: `"mf"`, mean-field contrastive divergence (paper
        appendix A), or `"sap"`, persistent fantasy particles (Gibbs sampling, appendix B).
    n_particles
        Persistent fantasy particles (`"sap"` only).
    gibbs_sweeps
        Gibbs sweeps advancing the particles per update (`"sap"` only).
    particle_dropout
        Whether the particles get dropout masks as the data does (`"sap"` only; see Notes).
    mf_steps
        Clamped mean-field sweeps from the recognition guess while learning (0: the guess).
    learning_rate
        Step size of every parameter (Adam's is divided by the depth, see Notes).
    alpha
        Weight of the labeled rows' gradients.
    beta
        Weight of the unlabeled rows' gradients (the final value under `beta_schedule`).
    beta_schedule
        `None` or `(T1, T2)`: beta 0 up to update `T1`, linear up to `beta` at `T2` (eq. 17).
    dropout
        Probability of dropping each hidden unit while learning (paper: 0.5).
    pseudo_label
        Proxy label: `"soft"` (the predicted probabilities) or `"hard"` (the predicted class).
    discriminative_weight
        Weight of the direct gradient of `-log p(y | x)` (paper footnote 3); 0: off.
    activation
        Hidden units: `"sigmoid"` or `"relu"` (a rectifier bounded to [0, 1]).
    init
        First layer: `"centred"` (hyperplanes through random points of [0, 1]^D) or `"glorot"`.
    optimizer
        `"adam"` (moments 0.9 / 0.999) or `"sgd"` (the paper's plain gradient steps).
    learn_unlabeled
        `False`: unlabeled rows teach nothing, all else (draws too) the same: the ablation.
    safe_unlabeled
        Whether the prediction mixes the network with a labeled-only twin (see Notes).
    linear_expert
        Whether the prediction mixes in a linear softmax model of the labeled rows (see Notes).
    steps
        Gradient steps each update takes on its mini-batch and replayed rows.
    warm_start
        Labeled rows after which an update takes `steps * warm_start / labeled rows` steps.
    replay
        Rows of the label memory added to each step (0: none).
    memory_size
        How many labeled rows the label memory keeps (those of the last 10,000 stream rows).
    confidence
        Predicted probability making an unlabeled row a labeled one (after 50 labels).
    dtype
        `"float64"` or `"float32"` (single precision, faster for wide layers).
    drift_detector
        A River detector fed the labeled rows' 0/1 errors; an alarm restarts the fast learning.
        Default: ADWIN (delta 0.01) and DDM (`change.default_detectors`); `drift.NoDrift()`: off.
    batch_size
        Instances per update.
    seed
        Seed of the initial weights, dropout masks and Gibbs samples.

    Attributes
    ----------
    n_updates
        Updates done so far.
    n_labeled_seen
        Labeled instances learnt so far.
    unlabeled_trust
        The network's weight against its labeled-only twin (1.0 without a twin).

    Examples
    --------
    >>> from river import evaluate
    >>> import streams
    >>> from evaluation import PrequentialError, prequential
    >>> from river_dhbm import DHBM
    >>> dataset = streams.LabelMask(
    ...     streams.LEDDrift(seed=1, noise_percentage=10, n_drift_features=4),
    ...     label_ratio=0.1, batch_size=20, seed=1,
    ... )
    >>> evaluate.progressive_val_score(dataset.take(2000), DHBM(seed=1), PrequentialError())
    PrequentialError: 39.40%

    The array path is faster; the faded error nears the Bayes error (0.26) as the model matures:

    >>> result = prequential(dataset, DHBM(seed=1), 30_000, step=10_000)
    >>> result.faded_error.round(3)
    array([0.264, 0.269, 0.276])

    Notes
    -----
    Predictions mix the network, a labeled-only twin (`safe_unlabeled`) and a linear model
    (`linear_expert`), each calibrated, by their Brier scores, the networks' priors grown with
    the labels per input (`river_dhbm.safety`, which states the bounds).
    `paper()` has the paper's settings. docs/models/dhbm.md has the choices where the paper is
    vague and the figures behind the defaults, which are:

    - `steps=8`, each with its own `replay=20` memory rows: a stream shows each row once;
      past `warm_start=250` labels fewer steps, lest the memory's noise be fitted.
    - `init="centred"`: Glorot's bound assumes unit-variance inputs, and biases 0 put every
      hyperplane through the corner 0 of [0, 1]^D. Rectifiers are bounded (else: NaN).
    - `mf_steps=1`, `beta=0.3`: the KL step (eq. 11) pulls the predicting recognition network
      to every row's posterior (the unlabeled rows' way in), bounded by `discriminative_weight=10`.
    - Adam's step is divided by the depth (each weight moves about one step). Past
      `warm_start` labels the step and generative terms shrink; drift restarts them.
    - `particle_dropout=True` (SAP only): the paper's dropout of every hidden unit, which the
      recorded DHBM-SAP runs used, though SAP learns MNIST only without particle masks.

    References
    ----------
    [^1]: Ororbia, A. G., Giles, C. L., & Reitter, D. (2016). Online Semi-Supervised Learning with
        Deep Hybrid Boltzmann Machines and Denoising Autoencoders. arXiv:1511.06964.
    """

    _PAPER_SETTINGS = {
        "safe_unlabeled": False,
        "linear_expert": False,
        "estimator": "mf",
        "n_particles": 10,
        "mf_steps": 1,
        "learning_rate": 0.051,
        "alpha": 1.0,
        "beta": 0.1,
        "beta_schedule": None,
        "dropout": 0.5,
        "pseudo_label": "hard",
        "discriminative_weight": 0.0,
        "activation": "sigmoid",
        "optimizer": "sgd",
        "steps": 1,
        "warm_start": None,
        "init": "glorot",
        "replay": 0,
        "confidence": None,
        "batch_size": 20,
    }

    def __init__(
        self,
        hidden_sizes: tuple = (64,),
        estimator: str = "mf",
        n_particles: int = 10,
        gibbs_sweeps: int = 1,
        particle_dropout: bool = True,
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
        dtype: str = "float64",
        drift_detector: base.DriftDetector | None = None,
        batch_size: int = 20,
        seed: int | None = None,
    ):
        super().__init__(batch_size=batch_size, seed=seed, drift_detector=drift_detector)
        self.hidden_sizes = hidden_sizes
        self.estimator = estimator
        self.n_particles = n_particles
        self.gibbs_sweeps = gibbs_sweeps
        self.particle_dropout = particle_dropout
        self.mf_steps = mf_steps
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.beta = beta
        self.beta_schedule = beta_schedule
        self.dropout = dropout
        self.pseudo_label = pseudo_label
        self.discriminative_weight = discriminative_weight
        self.activation = activation
        self.optimizer = optimizer
        self.learn_unlabeled = learn_unlabeled
        self.safe_unlabeled = safe_unlabeled
        self.linear_expert = linear_expert
        self.init = init
        self.steps = steps
        self.warm_start = warm_start
        self.replay = replay
        self.memory_size = memory_size
        self.confidence = confidence
        self.dtype = dtype
        self._check_common_params()
        self._check_params()
        self._reset_state()

    @classmethod
    def _unit_test_params(cls):
        yield {"hidden_sizes": (5, 4), "batch_size": 4, "seed": 1}
        yield {"hidden_sizes": (6,), "estimator": "sap", "n_particles": 3, "dropout": 0.5,
               "pseudo_label": "hard", "activation": "relu", "beta_schedule": (2, 5),
               "batch_size": 3, "seed": 2}

    # ------------------------------------------------------------------ validation

    def _check_params(self) -> None:
        check_hidden_sizes(self.hidden_sizes)
        check_choice("estimator", self.estimator, tuple(ESTIMATORS))
        check_int("n_particles", self.n_particles, 1)
        check_int("gibbs_sweeps", self.gibbs_sweeps, 1)
        check_bool("particle_dropout", self.particle_dropout)
        check_int("mf_steps", self.mf_steps, 0)
        check_int("steps", self.steps, 1)
        if self.warm_start is not None:
            check_int("warm_start", self.warm_start, 1)
        check_choice("init", self.init, parameters.INITS)
        check_positive("learning_rate", self.learning_rate)
        check_non_negative("alpha", self.alpha)
        check_non_negative("beta", self.beta)
        check_non_negative("discriminative_weight", self.discriminative_weight)
        check_probability("dropout", self.dropout)
        check_beta_schedule(self.beta_schedule)
        check_choice("pseudo_label", self.pseudo_label, PSEUDO_LABELS)
        check_choice("optimizer", self.optimizer, parameters.OPTIMIZERS)
        check_choice("activation", self.activation, tuple(network.HYBRID_ACTIVATIONS))
        check_choice("dtype", self.dtype, network.DTYPES)
        scarce_labels.check_params(self)

    def _current_beta(self) -> float:
        return scarce_labels.beta_at(self.beta, self.beta_schedule, self.n_updates)

    def _step_size(self) -> float:
        # Adam moves every weight by about its step whatever the gradient's size, so the
        # output of an L-layer stack moves about L times as far per update as one layer's:
        # dividing by the depth keeps deep stacks as steady as the shallow one (SGD's steps
        # shrink with the gradients on their own, and the paper's settings stay literal)
        if self.optimizer == "adam":
            return float(self.learning_rate) / len(self.hidden_sizes)
        return float(self.learning_rate)

    def _unlabeled_weight(self, beta: float) -> float:
        return beta if self.learn_unlabeled else 0.0

    # ------------------------------------------------------------------ state

    _SCRATCH = ("_grad", "_work", "_pred_act")

    def __setstate__(self, state):
        super().__setstate__(state)
        if self._theta is not None:
            self._alloc_work()

    def _reset_state(self) -> None:
        super()._reset_state()
        self._theta = None
        self._empty = np.zeros(0, self.dtype)

    def _init_params(self, n_features: int) -> None:
        self._sizes = np.array([n_features, *self.hidden_sizes], dtype=np.int64)
        self._hcum = parameters.hidden_offsets(self._sizes)
        self._kind = network.HYBRID_ACTIVATIONS[self.activation]
        self._estimator = ESTIMATORS[self.estimator]
        self._off = parameters.param_layout(self._sizes, 0)
        dtype = np.dtype(self.dtype)
        theta = np.zeros(self._off[-1, 2], dtype)
        parameters.init_weights(theta, self._off, self._sizes, self._rng,
                             **parameters.first_layer_init(self.init, len(self.hidden_sizes)))
        self._theta = theta
        A = int(self._hcum[-1])
        M = self.n_particles if self._estimator == dhbm_kernels.SAP else 0
        self._part_x = (self._rng.random((M, n_features)) < 0.5).astype(dtype)
        self._part_h = (self._rng.random(M * A) < 0.5).astype(dtype)
        self._part_y = np.zeros((M, 0), dtype)
        self._moments = parameters.adam_moments(theta, self.optimizer)
        self._adam_steps = 0  # Adam steps taken (an update takes `scarce_labels.steps_at`)
        self._alloc_work()

    def _alloc_work(self) -> None:
        """Work arrays of one update and of a one-row prediction (rebuilt when classes grow)."""
        self._grad = np.zeros_like(self._theta)
        # room for the mini-batch and its replayed rows (`scarce_labels`); the weights'
        # transposes for all but wide networks (`network.MIRROR_MAX_WIDTH`)
        narrow = int(self._sizes.max()) <= network.MIRROR_MAX_WIDTH
        self._work = dhbm_kernels.alloc_work(
            self.batch_size + self.replay, self._sizes, self._hcum, len(self._classes),
            self._part_x.shape[0], self._theta.dtype, self._theta.size if narrow else 0)
        self._pred_act = np.zeros(int(self._hcum[-1]))

    def _net(self) -> tuple:
        """The kernels' `net`: the parameters, their layout, the class count, the units' kind."""
        return self._theta, self._off, self._sizes, self._hcum, len(self._classes), self._kind

    def _work_arrays(self) -> tuple:
        """The kernels' `work`: the work arrays in the order `dhbm_update` takes them."""
        return tuple(self._work[name] for name in dhbm_kernels.WORK)

    def _add_class(self) -> None:
        C = len(self._classes)
        dtype = self._theta.dtype
        self._theta = parameters.regrow_classes(self._theta, self._sizes, C - 1, C).astype(dtype)
        self._moments = parameters.regrow_moments(self._moments, self._sizes, C - 1, C)
        self._off = parameters.param_layout(self._sizes, C)
        self._part_y = np.hstack([self._part_y, np.zeros((self._part_y.shape[0], 1), dtype)])
        self._alloc_work()

    # ------------------------------------------------------------------ hooks

    def _update(self, X: np.ndarray, y: np.ndarray, first_P: np.ndarray | None = None) -> None:
        # the kernel makes the proxy labels from its first pass, whose `p(y | v)` it keeps in
        # `first_P` when asked (the work array of that name)
        n_batch = len(X)
        steps = scarce_labels.steps_at(self, self.n_labeled_seen)
        X, y = scarce_labels.learning_batch(self, X, y, proxy_labels=False, rounds=steps)
        dtype = self._theta.dtype
        X = X.astype(dtype, copy=False)
        A = int(self._hcum[-1])
        keep = 1.0 - self.dropout
        rng = self._rng
        mask = (rng.random(len(X) * A) < keep).astype(dtype) if self.dropout > 0 else self._empty
        M = self._part_x.shape[0]
        particles = (self._part_x, self._part_h, self._part_y) + (self._empty,) * 3  # MF: none
        if M:  # SAP: the particles' mask, then the draws of every Gibbs sweep of every step
            masked = self.dropout > 0 and self.particle_dropout
            part_mask = (rng.random(M * A) < keep).astype(dtype) if masked else self._empty
            draw = rng.standard_normal if self._kind != network.SIGMOID else rng.random
            K = self.gibbs_sweeps * steps
            particles = (*particles[:3], part_mask, draw(K * M * A),
                         rng.random(K * (M * self._part_x.shape[1] + M)))
        alpha, beta, disc_weight = scarce_labels.term_weights(
            self, self._unlabeled_weight(self._current_beta()))
        lr = self._step_size() * scarce_labels.step_scale(self, self.n_labeled_seen)
        settings = (self.mf_steps, lr, alpha, beta, scarce_labels.proxy_confidence(self),
                    disc_weight, self.pseudo_label == "hard")
        # one kernel per estimator: the MF kernel never compiles the SAP negative phase
        dhbm_kernels.UPDATE_KERNELS[self._estimator](
            X, y, self._net(), (self._grad, self._moments, self._adam_steps + 1), settings, mask,
            particles, self._work_arrays(), steps, n_batch,
            self._work["first_P"][:0] if first_P is None else first_P,
        )
        self._adam_steps += steps

    # ------------------------------------------------------------------ predictions

    def _predict_update(self, X: np.ndarray, y: np.ndarray, P=None) -> np.ndarray:
        # Without dropout the update's first step, the recognition pass and `p(y | v)`, is
        # exactly the prediction (`_proba`), which it keeps: test-then-train needs one pass
        if P is not None or self.dropout > 0 or not self._classes:
            P = self._proba(X) if P is None else P  # the update makes its proxy labels itself
            self._update(X, y)
            return P
        first = self._work["first_P"]
        self._update(X, y, first)
        return first[: len(X)].astype(np.float64)

    def _test_then_train_run(self, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
        # Mean-field estimator without dropout: nothing random, so a run of mini-batches is one
        # kernel call (the per-batch Python work costs as much as a quarter of the update)
        if not fused_run.applies(self):
            return super()._test_then_train_run(X, codes)
        return fused_run.test_then_train(self, X, codes)

    def _proba(self, X: np.ndarray) -> np.ndarray:
        n = X.shape[0]
        if n == 1:  # the kernel of `predict_proba_one`: one row gives one answer on every path
            P = np.empty((1, len(self._classes)))
            self._proba_one(X, P)
            return P
        t = self._theta.dtype
        act = np.empty(n * int(self._hcum[-1]), t)
        P = np.empty((n, len(self._classes)), t)
        dhbm_kernels.dhbm_proba(
            X.astype(t, copy=False), self._theta, self._off, self._sizes, self._hcum,
            len(self._classes), self._kind, 1.0 - self.dropout, act, P,
        )
        return P.astype(np.float64, copy=False)

    def _proba_row(self, row: np.ndarray) -> list:
        # River's per-instance loop: every buffer preallocated (the output in `_work`)
        P = self._one_row_output()
        self._proba_one(row, P)
        return P[0].tolist()

    def _predict_row(self, row: np.ndarray) -> int:
        return self._proba_one(row, self._one_row_output())

    _experts_row = safety.hybrid_experts_row  # the experts and their mixture: one call
    _scores_with_experts_row = True  # its rows are the experts' own `_proba_row`s, to the bit

    def _proba_one(self, row: np.ndarray, P: np.ndarray) -> int:
        """`p(y | x)` of one row `[1, d]` into `P [1, C]`; the index of its first maximum."""
        return entries.dhbm_proba_row(
            row, self._theta, self._off, self._sizes, self._hcum, len(self._classes), self._kind,
            1.0 - self.dropout, self._pred_act, P,
        )

    def _one_row_output(self) -> np.ndarray:
        """The `[1, C]` output of one-row predictions, in the scratch `_work` (not pickled)."""
        P = self._work.get("P1")
        if P is None:
            P = self._work["P1"] = np.empty((1, len(self._classes)))
        return P
