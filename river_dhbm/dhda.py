"""The Deep Hybrid Denoising Autoencoder (Ororbia, Giles & Reitter, 2016) as a River classifier."""

from __future__ import annotations

import numpy as np
from river import base

from river_dhbm import safety, scarce_labels

from river_dhbm._kernels import dhda as dhda_kernels
from river_dhbm._kernels import network, parameters
from river_dhbm._input.params import (
    LOSSES,
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

__all__ = ["DHDA"]



class DHDA(HybridClassifier):
    """Deep Hybrid Denoising Autoencoder: a semi-supervised online classifier.

    A stack of tied-weight denoising autoencoders whose layers are coupled both ways (each
    hidden layer is encoded from the corrupted layer below AND the corrupted layer above, paper
    eqs. 12-13) and share one joint predictor `p(y | h) = softmax(sum_l U^l^T h^l + d)`. A
    recognition network guesses the hidden layers in one bottom-up pass; `mf_steps` sweeps of
    the corrupted encoders refine the guess, and the model learns by back-propagating, in every
    layer, the error of reconstructing the layer's clean input and the error of the joint
    predictor (mean-field back-propagation, paper Algorithm 3). Labeled rows (weight `alpha`)
    use their label, unlabeled rows (weight `beta`) a proxy label from the model's own
    prediction (paper eq. 15). `learn_one(x)` without a label is an unlabeled instance.

    Parameters
    ----------
    hidden_sizes
        Number of units of each hidden layer, bottom to top (any depth >= 1).
    corruption
        Masking-noise probability of each input and hidden activity an encoder reads while
        learning (paper: 0.15 online), in [0, 1).
    loss
        Reconstruction loss: `"ce"` (cross-entropy, logistic decoders) or `"mse"` (squared
        error, decoders with the hidden `activation`).
    mf_steps
        Corrupted encoder sweeps from the recognition guess while learning (>= 1).
    learning_rate
        Step size of every parameter.
    alpha
        Weight of the labeled rows' loss.
    beta
        Weight of the unlabeled rows' loss (the final value under `beta_schedule`).
    beta_schedule
        `None` or `(T1, T2)`: beta 0 up to update `T1`, linear up to `beta` at `T2` (eq. 17).
    dropout
        Probability of dropping each hidden unit while learning (paper: 0.5).
    pseudo_label
        Proxy label: `"soft"` (the predicted probabilities) or `"hard"` (the predicted class).
    discriminative_weight
        Weight of the direct gradient of `-log p(y | x)` (paper footnote 3); 0: off.
    activation
        Hidden units: `"sigmoid"` or `"relu"` (a rectifier bounded to [0, 1], see the Notes).
    slow_upper_layers
        Whether the layers above the first start small (`UPPER_INIT` of Glorot's weights) and
        take `UPPER_STEP` of the step (see the Notes); off under `paper()`.
    optimizer
        `"adam"` (Kingma & Ba, 2015) or `"sgd"` (the paper's plain gradient steps).
    init
        First layer: `"centred"` or `"glorot"` (`paper()`'s), as for `DHBM`.
    learn_unlabeled
        `False`: the unlabeled rows' reconstruction and proxy labels are off (the ablation).
    safe_unlabeled
        Whether the prediction mixes the network with a labeled-only twin (see `DHBM`).
    linear_expert
        Whether the prediction mixes in a linear softmax model of the labeled rows (see `DHBM`).
    steps
        Gradient steps each update takes on its mini-batch and replayed rows (see `DHBM`).
    warm_start
        Labeled rows up to which every update takes `steps` steps, fewer after (see `DHBM`).
    replay
        Labeled rows of the label memory learnt again in every step (see `DHBM`).
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
        Seed of the generator behind the initial weights, dropout and corruption masks.

    Attributes
    ----------
    n_updates
        Updates done so far.
    n_labeled_seen
        Labeled instances learnt so far.

    Examples
    --------
    >>> from river import evaluate, metrics
    >>> import streams
    >>> from river_dhbm import DHDA

    >>> dataset = streams.LabelMask(
    ...     streams.LEDDrift(seed=1, noise_percentage=10, n_drift_features=4),
    ...     label_ratio=0.1, batch_size=20, seed=2,
    ... )
    >>> model = DHDA(seed=3)
    >>> evaluate.progressive_val_score(dataset.take(5000), model, metrics.Accuracy())
    Accuracy: 61.57%

    Notes
    -----
    The prediction: one recognition pass and the joint predictor, mixed as the `DHBM`'s.
    The defaults are the `DHBM`'s, for its reasons (steps, label memory, centred first layer,
    bounded rectifiers, the KL step at `discriminative_weight=10`), and:

    - `beta=0.1`: unlabeled rows reach the prediction through the KL step and the encoders'
      reconstruction of them; a larger beta gained on images and cost Waveform.
    - `corruption=0.0`, one layer: noise and a second layer cost on the stationary streams.
    - `slow_upper_layers` (not in the paper): the layers above the first start at a tenth of
      Glorot's weights and take `UPPER_STEP` of the step, so a deep stack starts as its
      first layer and learns about as well; sweeps otherwise feed layer 1 the random
      top-down input of layer 2.
    - Bounded rectifiers: each sweep adds the top-down input to the bottom-up one, and with
      unbounded units the activities, their targets and the weights grow each other to NaN;
      bounded, every target stays in [0, 1].
    - A maturing model and concept changes are handled as the `DHBM`'s.

    docs/models/dhda.md has the figures behind these and the choices where the paper is
    vague, each pinned by a test; `paper()` has the paper's settings.

    References
    ----------
    [^1]: Ororbia, A. G., Giles, C. L., & Reitter, D. (2016). Online Semi-Supervised Learning with
        Deep Hybrid Boltzmann Machines and Denoising Autoencoders. arXiv:1511.06964.
    """

    _PAPER_SETTINGS = {
        "safe_unlabeled": False,
        "linear_expert": False,
        "corruption": 0.15,
        "loss": "ce",
        "mf_steps": 1,
        "learning_rate": 0.051,
        "alpha": 1.0,
        "beta": 0.1,
        "beta_schedule": None,
        "dropout": 0.5,
        "pseudo_label": "hard",
        "discriminative_weight": 0.0,
        "activation": "sigmoid",
        "steps": 1,
        "warm_start": None,
        "init": "glorot",
        "optimizer": "sgd",
        "replay": 0,
        "confidence": None,
        "slow_upper_layers": False,
        "batch_size": 20,
    }

    #: Step of the layers above the first, relative to `learning_rate`, when
    #: `slow_upper_layers` (the same for every depth) ...
    UPPER_STEP = 0.03
    #: ... and the scale of their initial weights, relative to Glorot's.
    UPPER_INIT = 0.1

    def __init__(
        self,
        hidden_sizes: tuple = (64,),
        corruption: float = 0.0,
        loss: str = "ce",
        mf_steps: int = 1,
        learning_rate: float = 0.003,
        alpha: float = 1.0,
        beta: float = 0.1,
        beta_schedule: tuple | None = None,
        dropout: float = 0.0,
        pseudo_label: str = "soft",
        discriminative_weight: float = 10.0,
        activation: str = "relu",
        learn_unlabeled: bool = True,
        safe_unlabeled: bool = True,
        linear_expert: bool = True,
        slow_upper_layers: bool = True,
        optimizer: str = "adam",
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
        self.corruption = corruption
        self.loss = loss
        self.mf_steps = mf_steps
        self.learning_rate = learning_rate
        self.alpha = alpha
        self.beta = beta
        self.beta_schedule = beta_schedule
        self.dropout = dropout
        self.pseudo_label = pseudo_label
        self.discriminative_weight = discriminative_weight
        self.activation = activation
        self.learn_unlabeled = learn_unlabeled
        self.safe_unlabeled = safe_unlabeled
        self.linear_expert = linear_expert
        self.slow_upper_layers = slow_upper_layers
        self.optimizer = optimizer
        self.init = init
        self.steps = steps
        self.warm_start = warm_start
        self.replay = replay
        self.memory_size = memory_size
        self.confidence = confidence
        self.dtype = dtype
        self._check_params()
        self._reset_state()

    def _check_params(self) -> None:
        self._check_common_params()
        check_hidden_sizes(self.hidden_sizes)
        check_probability("corruption", self.corruption)
        check_choice("loss", self.loss, LOSSES)
        check_int("mf_steps", self.mf_steps, 1)
        check_int("steps", self.steps, 1)
        if self.warm_start is not None:
            check_int("warm_start", self.warm_start, 1)
        check_choice("init", self.init, parameters.INITS)
        check_choice("optimizer", self.optimizer, parameters.OPTIMIZERS)
        check_positive("learning_rate", self.learning_rate)
        check_non_negative("alpha", self.alpha)
        check_non_negative("beta", self.beta)
        check_beta_schedule(self.beta_schedule)
        check_probability("dropout", self.dropout)
        check_choice("pseudo_label", self.pseudo_label, PSEUDO_LABELS)
        check_non_negative("discriminative_weight", self.discriminative_weight)
        check_choice("activation", self.activation, tuple(network.HYBRID_ACTIVATIONS))
        scarce_labels.check_params(self)
        check_choice("dtype", self.dtype, network.DTYPES)
        check_bool("slow_upper_layers", self.slow_upper_layers)

    @classmethod
    def _unit_test_params(cls):
        yield {"hidden_sizes": (5, 4), "batch_size": 4, "seed": 1}
        yield {
            "hidden_sizes": (6,),
            "loss": "mse",
            "activation": "relu",
            "mf_steps": 2,
            "dropout": 0.5,
            "pseudo_label": "hard",
            "discriminative_weight": 0.0,
            "beta_schedule": (2, 5),
            "batch_size": 3,
            "seed": 2,
        }

    # ------------------------------------------------------------------ hooks

    def _init_params(self, n_features: int) -> None:
        self._sizes = np.array([n_features, *self.hidden_sizes], dtype=np.int64)
        self._hcum = parameters.hidden_offsets(self._sizes)
        self._kind = network.HYBRID_ACTIVATIONS[self.activation]
        self._dec_kind = network.SIGMOID if self.loss == "ce" else self._kind
        self._off = parameters.param_layout(self._sizes, 0)
        theta = np.zeros(self._off[-1, 2], self.dtype)
        upper = self.UPPER_INIT if self.slow_upper_layers else 1.0
        parameters.init_weights(theta, self._off, self._sizes, self._rng, upper,
                             **parameters.first_layer_init(self.init, len(self.hidden_sizes)))
        self._theta = theta
        self._grad = np.zeros_like(theta)
        self._empty = np.zeros(0, self.dtype)
        self._moments = parameters.adam_moments(theta, self.optimizer)
        self._adam_steps = 0

    def _add_class(self) -> None:
        C = len(self._classes)
        dtype = self._theta.dtype
        self._theta = parameters.regrow_classes(self._theta, self._sizes, C - 1, C).astype(dtype)
        self._off = parameters.param_layout(self._sizes, C)
        self._grad = np.zeros_like(self._theta)
        self._moments = parameters.regrow_moments(self._moments, self._sizes, C - 1, C)

    def _update(self, X: np.ndarray, y: np.ndarray, P=None) -> None:
        n_batch = len(X)
        steps = scarce_labels.steps_at(self, self.n_labeled_seen)
        X, y = scarce_labels.learning_batch(self, X, y, P, rounds=steps)
        dtype = self._theta.dtype
        X = X.astype(dtype, copy=False)
        n = X.shape[0]
        A = int(self._hcum[-1])
        rng = self._rng
        if self.dropout > 0:
            mask = (rng.random(n * A) >= self.dropout).astype(dtype)
        else:
            mask = self._empty
        if self.corruption > 0:
            size = self.mf_steps * n * (int(self._sizes[0]) + A)
            kappa = (rng.random(size) >= self.corruption).astype(dtype)
        else:
            kappa = self._empty
        alpha, beta, disc_weight = scarce_labels.term_weights(
            self, scarce_labels.beta_at(self.beta, self.beta_schedule, self.n_updates)
            * self.learn_unlabeled)
        scale = scarce_labels.step_scale(self, self.n_labeled_seen)
        dhda_kernels.dhda_update(
            X, y, self._theta, self._grad, self._off, self._sizes, self._hcum,
            len(self._classes), self._kind, self._dec_kind, self.loss == "mse", self.mf_steps,
            float(self.learning_rate) * scale, self._upper_lr() * scale, alpha, beta, disc_weight,
            self.pseudo_label == "hard", mask, kappa,
            self._moments, self._adam_steps + 1, steps, n_batch,
        )
        self._adam_steps += steps

    def _upper_lr(self) -> float:
        """Step of the layers above the first."""
        factor = self.UPPER_STEP if self.slow_upper_layers else 1.0
        return float(self.learning_rate) * factor

    # its recognition pass and joint predictor are the DHBM's: one call for its experts too
    _experts_row = safety.hybrid_experts_row

    def _proba(self, X: np.ndarray) -> np.ndarray:
        return dhda_kernels.dhda_proba(
            X.astype(self._theta.dtype, copy=False), self._theta, self._off, self._sizes,
            self._hcum, len(self._classes), self._kind, 1.0 - self.dropout,
        ).astype(np.float64, copy=False)
