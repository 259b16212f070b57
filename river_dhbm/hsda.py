"""The Hybrid Stacked Denoising Autoencoder: the DHDA's layer-wise predecessor."""

from __future__ import annotations

import numpy as np
from river import base

from river_dhbm import scarce_labels

from river_dhbm._kernels import hsda as hsda_kernels
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

__all__ = ["HSDA"]



class HSDA(HybridClassifier):
    """Hybrid Stacked Denoising Autoencoder: a stack of hybrid denoising autoencoders.

    Each layer is a hybrid denoising autoencoder (hDA) of its own: a tied-weight denoising
    autoencoder of the layer below's current representation whose encoding also feeds the
    layer's own softmax predictor. All layers learn online from every mini-batch, each on the
    representation the layers below produce at that moment and with its gradient kept to its
    own parameters (layer-wise, no joint tuning); the prediction averages the layers'
    predictors. This is the layer-wise model the DHDA improves on (Ororbia et al. 2016 [^1],
    Figure 2; Ororbia et al. 2015 [^2]).

    Parameters
    ----------
    hidden_sizes
        Number of units of each hidden layer, bottom to top (any depth >= 1).
    corruption
        Masking-noise probability applied to each layer's input during learning, in [0, 1).
    loss
        Reconstruction loss: `"ce"` (cross-entropy, logistic decoders) or `"mse"` (squared
        error, decoders with the hidden `activation`).
    learning_rate
        Step size of every parameter.
    optimizer
        `"adam"` (Kingma & Ba, 2015; Adam counts every step) or `"sgd"` (plain gradient
        steps, the papers' and `paper()`'s).
    discriminative_weight
        Weight of each layer's predictor loss `-log p_l(y | h^l)` against its reconstruction
        loss (1: the papers' plain sum).
    alpha
        Weight of the labeled rows' loss.
    beta
        Weight of the unlabeled rows' loss (the final value under `beta_schedule`).
    beta_schedule
        `None` or `(T1, T2)`: beta 0 up to update `T1`, linear up to `beta` at `T2` (eq. 17).
    dropout
        Probability of dropping each hidden unit while learning.
    pseudo_label
        Proxy label: `"soft"` (the ensemble's probabilities) or `"hard"` (its predicted class).
    activation
        Hidden units: `"sigmoid"` or `"relu"` (a rectifier bounded to [0, 1], see the Notes).
    init
        Every layer: `"centred"` (as `DHDA`'s first layer) or `"glorot"` (`paper()`'s).
    steps
        Gradient steps each update takes, each on the mini-batch and its own replayed rows.
    warm_start
        Labeled rows up to which every update takes `steps` steps, fewer after (see `DHBM`).
    learn_unlabeled
        `False`: no learning from unlabeled rows, nothing else changed (the ablation).
    safe_unlabeled
        Whether the prediction mixes the network with a labeled-only twin (see `DHBM`).
    linear_expert
        Whether the prediction mixes in a linear softmax model of the labeled rows (see `DHBM`).
    weighted_layers
        Whether the prediction weights each layer's predictor by its recent log-loss on the
        labels (see the Notes); `False`: the plain mean of the layers (the paper's settings).
    replay
        How many rows of the label memory each step adds (see `DHBM`).
    memory_size
        How many labeled rows the label memory keeps (those of the last 10,000 stream rows).
    confidence
        The ensemble's probability making an unlabeled row a labeled one (after 50 labels).
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
    >>> from river_dhbm import HSDA

    >>> dataset = streams.LabelMask(
    ...     streams.LEDDrift(seed=1, noise_percentage=10, n_drift_features=4),
    ...     label_ratio=0.1, batch_size=20, seed=2,
    ... )
    >>> model = HSDA(seed=3)
    >>> evaluate.progressive_val_score(dataset.take(5000), model, metrics.Accuracy())
    Accuracy: 61.59%

    Notes
    -----
    Defaults, as the DHDA's and for its reasons: one layer of 64 bounded rectifiers, Adam
    (0.003), `steps=8` per update on the mini-batch and 20 rows of the label memory,
    tapering after `warm_start=250` labels, every layer centred in its input box,
    `beta=0.1`; and:

    - `discriminative_weight=10`: the papers' plain sum (weight 1) cost accuracy on the digits,
      LED and Bananas.
    - Unlabeled rows reach the prediction only through each layer's reconstruction of them
      (there is no KL step), so they pay on images and little elsewhere.
    - `weighted_layers` (not in the papers): layer `l`'s predictor weighs
      `softmax_l(-LAYER_WEIGHT_SHARPNESS * loss_l)`, `loss_l` its running log-loss on each
      mini-batch's own labels before they are learnt (about the last 1,000 labels), so the
      layers predicting best lead and deep stacks do as well as one layer.
    - Bounded rectifiers: a layer above reconstructs the one below, and with the
      cross-entropy decoder targets above 1 make the loss unbounded below (NaN).
    - A maturing model and concept changes are handled as the `DHBM`'s.

    `paper()` keeps the papers' learning step exactly (one plain gradient step per update,
    Glorot weights, weight 1). docs/models/hsda.md has the figures behind these defaults and
    the choices where the papers are vague, each pinned by a test.

    References
    ----------
    [^1]: Ororbia, A. G., Giles, C. L., & Reitter, D. (2016). Online Semi-Supervised Learning with
        Deep Hybrid Boltzmann Machines and Denoising Autoencoders. arXiv:1511.06964.
    [^2]: Ororbia, A. G., Reitter, D., Wu, J., & Giles, C. L. (2015). Online learning of deep
        hybrid architectures for semi-supervised categorization. ECML PKDD.
    """

    _PAPER_SETTINGS = {
        "safe_unlabeled": False,
        "linear_expert": False,
        "corruption": 0.15,
        "loss": "ce",
        "learning_rate": 0.051,
        "alpha": 1.0,
        "beta": 0.1,
        "beta_schedule": None,
        "dropout": 0.5,
        "pseudo_label": "hard",
        "activation": "sigmoid",
        "optimizer": "sgd",
        "discriminative_weight": 1.0,
        "init": "glorot",
        "steps": 1,
        "warm_start": None,
        "replay": 0,
        "confidence": None,
        "weighted_layers": False,
        "batch_size": 20,
    }

    #: `weighted_layers`: each layer's running log-loss forgets at this rate per labeled row
    #: (a memory of about 1,000 labels) ...
    LAYER_LOSS_DECAY = 0.001
    #: ... and the layer weights are `softmax(-LAYER_WEIGHT_SHARPNESS * running log-loss)`.
    LAYER_WEIGHT_SHARPNESS = 100.0

    def __init__(
        self,
        hidden_sizes: tuple = (64,),
        corruption: float = 0.0,
        loss: str = "ce",
        learning_rate: float = 0.003,
        optimizer: str = "adam",
        discriminative_weight: float = 10.0,
        alpha: float = 1.0,
        beta: float = 0.1,
        beta_schedule: tuple | None = None,
        dropout: float = 0.0,
        pseudo_label: str = "soft",
        activation: str = "relu",
        init: str = "centred",
        steps: int = 8,
        warm_start: int | None = 250,
        learn_unlabeled: bool = True,
        safe_unlabeled: bool = True,
        linear_expert: bool = True,
        weighted_layers: bool = True,
        replay: int = 20,
        memory_size: int = 1000,
        confidence: float | None = 0.9,
        drift_detector: base.DriftDetector | None = None,
        batch_size: int = 20,
        seed: int | None = None,
    ):
        super().__init__(batch_size=batch_size, seed=seed, drift_detector=drift_detector)
        self.hidden_sizes = hidden_sizes
        self.corruption = corruption
        self.loss = loss
        self.learning_rate = learning_rate
        self.optimizer = optimizer
        self.discriminative_weight = discriminative_weight
        self.alpha = alpha
        self.beta = beta
        self.beta_schedule = beta_schedule
        self.dropout = dropout
        self.pseudo_label = pseudo_label
        self.activation = activation
        self.init = init
        self.steps = steps
        self.warm_start = warm_start
        self.learn_unlabeled = learn_unlabeled
        self.safe_unlabeled = safe_unlabeled
        self.linear_expert = linear_expert
        self.weighted_layers = weighted_layers
        self.replay = replay
        self.memory_size = memory_size
        self.confidence = confidence
        self._check_params()
        self._reset_state()

    def _check_params(self) -> None:
        self._check_common_params()
        check_hidden_sizes(self.hidden_sizes)
        check_probability("corruption", self.corruption)
        check_choice("loss", self.loss, LOSSES)
        check_positive("learning_rate", self.learning_rate)
        check_choice("optimizer", self.optimizer, parameters.OPTIMIZERS)
        check_non_negative("discriminative_weight", self.discriminative_weight)
        check_choice("init", self.init, parameters.INITS)
        check_int("steps", self.steps, 1)
        if self.warm_start is not None:
            check_int("warm_start", self.warm_start, 1)
        check_non_negative("alpha", self.alpha)
        check_non_negative("beta", self.beta)
        check_beta_schedule(self.beta_schedule)
        check_probability("dropout", self.dropout)
        check_choice("pseudo_label", self.pseudo_label, PSEUDO_LABELS)
        check_choice("activation", self.activation, tuple(network.HYBRID_ACTIVATIONS))
        scarce_labels.check_params(self)
        check_bool("weighted_layers", self.weighted_layers)

    @classmethod
    def _unit_test_params(cls):
        yield {"hidden_sizes": (5, 4), "batch_size": 4, "seed": 1}
        yield {
            "hidden_sizes": (6,),
            "loss": "mse",
            "activation": "relu",
            "dropout": 0.5,
            "pseudo_label": "hard",
            "beta_schedule": (2, 5),
            "batch_size": 3,
            "seed": 2,
        }

    # ------------------------------------------------------------------ layout

    def _layout(self, n_classes: int) -> None:
        """Per-layer offsets tables `[L, 2, 5]` and the start of each layer's block."""
        L = len(self.hidden_sizes)
        self._offs = np.stack(
            [parameters.param_layout(self._sizes[l : l + 2], n_classes) for l in range(L)]
        )
        self._bases = np.concatenate([[0], np.cumsum(self._offs[:, -1, 2])]).astype(np.int64)

    # ------------------------------------------------------------------ hooks

    def _init_params(self, n_features: int) -> None:
        self._sizes = np.array([n_features, *self.hidden_sizes], dtype=np.int64)
        self._hcum = parameters.hidden_offsets(self._sizes)
        self._kind = network.HYBRID_ACTIVATIONS[self.activation]
        self._dec_kind = network.SIGMOID if self.loss == "ce" else self._kind
        self._layout(0)
        theta = np.zeros(self._bases[-1])
        centred = self.init == "centred"
        for l in range(len(self.hidden_sizes)):
            fan_in, fan_out = self._sizes[l], self._sizes[l + 1]
            bound = np.sqrt(6.0 / (fan_in + fan_out))
            o = self._bases[l] + self._offs[l, 0, network.COL_W]
            W = self._rng.uniform(-bound, bound, fan_in * fan_out)
            if centred:  # each layer's units cut its input box (`parameters.centred_biases`)
                W *= parameters.centred_scale(len(self.hidden_sizes))
                b = self._bases[l] + self._offs[l, 0, network.COL_B]
                theta[b : b + fan_out] = parameters.centred_biases(W.reshape(fan_in, fan_out),
                                                                self._rng)
            theta[o : o + fan_in * fan_out] = W
        self._theta = theta
        self._moments = parameters.adam_moments(theta, self.optimizer)
        self._adam_steps = 0
        self._grad = np.zeros_like(theta)
        self._empty = np.zeros(0)
        self._layer_loss = np.zeros(len(self.hidden_sizes))

    def _add_class(self) -> None:
        C = len(self._classes)
        blocks = [
            parameters.regrow_classes(
                self._theta[self._bases[l] : self._bases[l + 1]], self._sizes[l : l + 2], C - 1, C
            )
            for l in range(len(self.hidden_sizes))
        ]
        if self._moments.size:  # Adam's first and second moments, each regrown as `theta`
            self._moments = np.concatenate([
                parameters.regrow_classes(half[self._bases[l] : self._bases[l + 1]],
                                       self._sizes[l : l + 2], C - 1, C)
                for half in self._moments.reshape(2, -1) for l in range(len(self.hidden_sizes))
            ])
        self._theta = np.concatenate(blocks)
        self._layout(C)
        self._grad = np.zeros_like(self._theta)

    def _layer_weights(self) -> np.ndarray:
        """The weights of the layers' predictors in the ensemble (uniform unless
        `weighted_layers`)."""
        L = len(self.hidden_sizes)
        if not self.weighted_layers or L == 1:
            return np.full(L, 1.0 / L)
        z = -self.LAYER_WEIGHT_SHARPNESS * (self._layer_loss - self._layer_loss.min())
        w = np.exp(z)
        return w / w.sum()

    def _update(self, X: np.ndarray, y: np.ndarray, P=None) -> None:
        if self.weighted_layers and len(self.hidden_sizes) > 1 and self._classes:
            labeled = y >= 0  # the batch's own labels, before they are learnt
            if labeled.any():
                hsda_kernels.hsda_track_layers(
                    np.ascontiguousarray(X[labeled]), y[labeled], self._theta, self._bases,
                    self._offs, self._sizes, self._hcum, len(self._classes), self._kind,
                    1.0 - self.dropout, self.LAYER_LOSS_DECAY, self._layer_loss,
                )
        n_batch = len(X)
        steps = scarce_labels.steps_at(self, self.n_labeled_seen)
        X, y = scarce_labels.learning_batch(self, X, y, P, rounds=steps)
        n = X.shape[0]
        rng = self._rng
        if self.dropout > 0:
            mask = (rng.random(n * int(self._hcum[-1])) >= self.dropout).astype(np.float64)
        else:
            mask = self._empty
        if self.corruption > 0:
            size = n * int(self._sizes[:-1].sum())
            kappa = (rng.random(size) >= self.corruption).astype(np.float64)
        else:
            kappa = self._empty
        alpha, beta, disc_weight = scarce_labels.term_weights(
            self, scarce_labels.beta_at(self.beta, self.beta_schedule, self.n_updates)
            * self.learn_unlabeled)
        hsda_kernels.hsda_update(
            X, y, self._theta, self._grad, self._bases, self._offs, self._sizes, self._hcum,
            len(self._classes), self._kind, self._dec_kind, self.loss == "mse",
            float(self.learning_rate) * scarce_labels.step_scale(self, self.n_labeled_seen),
            alpha, beta, disc_weight, self.pseudo_label == "hard",
            mask, kappa,
            self._layer_weights(), self._moments, self._adam_steps + 1, steps, n_batch,
        )
        self._adam_steps += steps

    def _proba(self, X: np.ndarray) -> np.ndarray:
        return hsda_kernels.hsda_proba(
            X, self._theta, self._bases, self._offs, self._sizes, self._hcum,
            len(self._classes), self._kind, 1.0 - self.dropout, self._layer_weights(),
        )
