"""The pseudo-labeled drop-out rectifier network of Lee (2013), the paper's competitor."""

from __future__ import annotations

import warnings

import numpy as np
from river import base

from river_dhbm import scarce_labels

from river_dhbm._kernels import mlp as mlp_kernels
from river_dhbm._kernels import network, parameters
from river_dhbm._input.params import (
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

__all__ = ["PseudoLabelMLP"]


class PseudoLabelMLP(HybridClassifier):
    """Multi-layer perceptron trained with pseudo-labels (Lee 2013).

    A feed-forward network with a softmax output, trained online (Adam; `paper()`: plain
    gradient steps) on mini-batches on `CE(labeled) + beta * CE(pseudo-labeled)`: each
    unlabeled row is treated as labeled with the class the network currently predicts for it.
    This is the semi-supervised competitor of the deep hybrid models in Ororbia et al. (2016)
    [^1]: a drop-out rectifier network.

    Parameters
    ----------
    hidden_sizes
        Units of each hidden layer, bottom to top (a non-empty tuple of ints >= 1).
    learning_rate
        Step size, > 0.
    beta
        Weight of the pseudo-labeled term, >= 0 (0 ignores unlabeled rows).
    beta_schedule
        `None` (constant `beta`) or `(T1, T2)`: beta rises linearly from 0 at `T1` to `beta` at
        `T2` (paper eq. 17, Lee's alpha(t)), `t` counted in mini-batch updates.
    dropout
        Probability of dropping each hidden unit during learning, in [0, 1); predictions
        multiply the hidden units by the keep probability instead.
    activation
        Hidden units: `"relu"` (Lee's rectifier network) or `"sigmoid"`.
    learn_unlabeled
        Whether unlabeled rows teach the model anything. `False` zeroes their weight (`beta`)
        and changes nothing else (the same batches, updates and draws): the ablation that
        measures what the pseudo-labels are worth.
    safe_unlabeled
        Whether the prediction mixes the network with a labeled-only twin (see `DHBM`).
    linear_expert
        Whether the prediction mixes in a linear softmax model of the labeled rows (see `DHBM`).
    deep_identity
        Whether the hidden layers above the first start as the identity (the network starts
        as its one-layer net) and take `UPPER_STEP` times the step (see the Notes); `False`:
        every layer Glorot-initialised and on the same step (the paper's settings).
    optimizer
        `"adam"` (Kingma & Ba, 2015) or `"sgd"` (Lee's and the paper's plain gradient steps).
    init
        First-layer weights: `"centred"` (as the hybrids', see `DHBM`) or `"glorot"`.
    steps
        Gradient steps each update takes, each with its own `replay` rows (see `DHBM`).
    warm_start
        Labeled rows up to which every update takes `steps` steps, fewer after (see `DHBM`).
    replay
        Labeled rows drawn from the label memory and added to each step (0: none).
    memory_size
        How many labeled rows the label memory keeps (those of the last 10,000 stream rows).
    drift_detector
        A River drift detector fed the labeled rows' 0/1 errors (each predicted before it is
        learnt); when it sees the error rise the model restarts its fast learning (see the
        Notes). Default: ADWIN (delta 0.01) and DDM; `drift.NoDrift()` turns it off.
    batch_size
        Instances per update.
    seed
        Seed of the weight initialisation and of the dropout masks.

    Attributes
    ----------
    n_updates
        Mini-batch updates done so far.
    n_labeled_seen
        Labeled instances learnt so far.

    Examples
    --------

    >>> from river import evaluate, metrics
    >>> import streams
    >>> from river_dhbm import PseudoLabelMLP

    >>> dataset = streams.LabelMask(
    ...     streams.LEDDrift(seed=1, noise_percentage=10, n_drift_features=4),
    ...     label_ratio=0.1, batch_size=20, seed=2,
    ... )

    >>> model = PseudoLabelMLP(seed=3)
    >>> evaluate.progressive_val_score(dataset.take(5000), model, metrics.Accuracy())
    Accuracy: 61.59%

    Notes
    -----
    Defaults, as the hybrids' and for their reasons (issue 27; see `DHBM`): Adam with step
    0.003, `steps=8` gradient steps per update tapering after `warm_start=250` labeled rows,
    each step on the mini-batch and `replay=20` rows of the label memory (Lee trains offline
    for many epochs over his labels, a stream sees each once), the first layer centred in
    the input box; one ReLU layer of 64 without dropout (dropout 0.5 learnt slower online).
    Unlike the hybrids it has no confidence-gated proxy labels: its unlabeled rows get Lee's
    pseudo-labels, every row, weighted `beta`. As the hybrids, past `warm_start` labels its
    step shrinks and a rise of its labeled rows' error seen by `drift_detector` makes it
    young again, so that it stays their yardstick over a stream's whole life.

    Choices where Lee (2013) and the paper leave room, each pinned by a test:

    - Pseudo-labels come from the prediction-mode network (dropout scaled out) before the
      step, recomputed at every update; they are fixed targets (no gradient flows through the
      argmax).
    - The labeled term is averaged over the labeled rows of the mini-batch and the
      pseudo-labeled term over its unlabeled rows (Lee's `1/n` and `1/n'`); a mini-batch
      without labeled rows still takes the `beta` step.
    - Dropout masks hidden units only (not the input), with the same mask on their error
      deltas; at prediction the hidden units are multiplied by `1 - dropout`.
    - `optimizer="sgd"` is plain SGD (no momentum, no weight decay), as the paper's online
      runs (`paper()`); weights start Glorot-uniform, biases 0 (`init` as the hybrids').
      An SGD update that leaves a weight beyond `DIVERGED` or not finite is undone, with a
      `RuntimeWarning`: a plain step grows with the features (Adam's are bounded).
    - `deep_identity` (not in Lee 2013 nor the paper; off under `paper()`): the layers above
      the first start as the identity and take `UPPER_STEP` of the step, so a deep net
      starts as its one-layer net and learns about as well.

    docs/models/pseudo-label-mlp.md has the figures behind these choices.

    References
    ----------
    [^1]: Ororbia II, A. G., Giles, C. L., & Reitter, D. (2016). Online semi-supervised
    learning with deep hybrid Boltzmann machines and denoising autoencoders. arXiv:1511.06964.
    [^2]: Lee, D.-H. (2013). Pseudo-label: the simple and efficient semi-supervised learning
    method for deep neural networks. ICML Workshop on Challenges in Representation Learning.

    """

    _PAPER_SETTINGS = {
        "safe_unlabeled": False,
        "linear_expert": False,
        "learning_rate": 0.051,
        "beta": 0.1,
        "beta_schedule": None,
        "dropout": 0.5,
        "activation": "relu",
        "replay": 0,
        "steps": 1,
        "warm_start": None,
        "init": "glorot",
        "optimizer": "sgd",
        "deep_identity": False,
        "batch_size": 20,
    }

    #: Step of the hidden layers above the first, relative to `learning_rate`, when
    #: `deep_identity` (the same for every depth).
    UPPER_STEP = 0.03
    #: A weight beyond this after a plain SGD update means the step diverged: it is undone.
    #: Trained weights stay below 1 on LED and Waveform (`paper()`, 20,000 rows).
    DIVERGED = 100.0

    def __init__(
        self,
        hidden_sizes: tuple = (64,),
        learning_rate: float = 0.003,
        beta: float = 0.1,
        beta_schedule: tuple | None = None,
        dropout: float = 0.0,
        activation: str = "relu",
        learn_unlabeled: bool = True,
        safe_unlabeled: bool = True,
        linear_expert: bool = True,
        deep_identity: bool = True,
        optimizer: str = "adam",
        init: str = "centred",
        steps: int = 8,
        warm_start: int | None = 250,
        replay: int = 20,
        memory_size: int = 1000,
        drift_detector: base.DriftDetector | None = None,
        batch_size: int = 20,
        seed: int | None = None,
    ):
        super().__init__(batch_size=batch_size, seed=seed, drift_detector=drift_detector)
        self.hidden_sizes = hidden_sizes
        self.learning_rate = learning_rate
        self.beta = beta
        self.beta_schedule = beta_schedule
        self.dropout = dropout
        self.activation = activation
        self.learn_unlabeled = learn_unlabeled
        self.safe_unlabeled = safe_unlabeled
        self.linear_expert = linear_expert
        self.deep_identity = deep_identity
        self.optimizer = optimizer
        self.init = init
        self.steps = steps
        self.warm_start = warm_start
        self.replay = replay
        self.memory_size = memory_size
        self._check_params()
        self._reset_state()

    def _check_params(self) -> None:
        self._check_common_params()
        check_hidden_sizes(self.hidden_sizes)
        check_positive("learning_rate", self.learning_rate)
        check_non_negative("beta", self.beta)
        check_beta_schedule(self.beta_schedule)
        check_probability("dropout", self.dropout)
        check_choice("activation", self.activation, tuple(network.ACTIVATIONS))
        scarce_labels.check_params(self, confidence=False)
        check_bool("deep_identity", self.deep_identity)
        check_choice("optimizer", self.optimizer, parameters.OPTIMIZERS)
        check_choice("init", self.init, parameters.INITS)
        check_int("steps", self.steps, 1)
        if self.warm_start is not None:
            check_int("warm_start", self.warm_start, 1)

    @classmethod
    def _unit_test_params(cls):
        yield {"hidden_sizes": (8, 6), "batch_size": 4, "seed": 42}
        yield {"hidden_sizes": (5,), "dropout": 0.5, "activation": "sigmoid", "batch_size": 3,
               "seed": 7}

    # ------------------------------------------------------------------ hooks

    def _init_params(self, n_features: int) -> None:
        self._sizes = np.array((n_features, *self.hidden_sizes), dtype=np.int64)
        self._hcum = parameters.hidden_offsets(self._sizes)
        self._off = parameters.param_layout(self._sizes, 0)
        self._theta = np.zeros(self._off[-1, 2])
        for l in range(len(self.hidden_sizes)):
            n_in, n_out = self._sizes[l], self._sizes[l + 1]
            r = np.sqrt(6.0 / (n_in + n_out))
            o = self._off[l, network.COL_W]
            W = self._rng.uniform(-r, r, (n_in, n_out))
            if l > 0 and self.deep_identity:
                k = min(n_in, n_out)
                W[:, :k] = np.eye(n_in, k)  # units beyond the width below keep their draw
            self._theta[o : o + n_in * n_out] = W.ravel()
        if self.init == "centred":  # as the hybrids' (`parameters.init_weights`), drawn after
            W = self._theta[self._off[0, network.COL_W] :][: n_features * self._sizes[1]]
            W *= parameters.INIT_SCALE  # its plain rectifiers do not clip: no depth rule
            b = self._off[0, network.COL_B]
            self._theta[b : b + self._sizes[1]] = parameters.centred_biases(
                W.reshape(n_features, self._sizes[1]), self._rng)
        self._grad = np.zeros_like(self._theta)
        self._moments = parameters.adam_moments(self._theta, self.optimizer)
        self._adam_steps = 0
        self._kind = network.ACTIVATIONS[self.activation]

    def _add_class(self) -> None:
        n = len(self._classes)
        self._theta = parameters.regrow_classes(self._theta, self._sizes, n - 1, n)
        self._off = parameters.param_layout(self._sizes, n)
        self._grad = np.zeros_like(self._theta)
        self._moments = parameters.regrow_moments(self._moments, self._sizes, n - 1, n)

    def _update(self, X: np.ndarray, y: np.ndarray) -> None:
        n_batch = len(X)
        steps = scarce_labels.steps_at(self, self.n_labeled_seen)
        # Lee's own pseudo-labels, not the confident ones
        X, y = scarce_labels.learning_batch(self, X, y, proxy_labels=False, rounds=steps)
        keep = 1.0 - self.dropout
        if self.dropout > 0.0:
            mask = (self._rng.random(len(X) * int(self._hcum[-1])) < keep).astype(np.float64)
        else:
            mask = np.empty(0)
        beta = scarce_labels.beta_at(self.beta, self.beta_schedule, self.n_updates)
        beta *= self.learn_unlabeled
        scale = scarce_labels.step_scale(self, self.n_labeled_seen)
        # a plain SGD step grows with the features (Adam's is bounded by the step size): keep
        # the weights to undo a step that diverged (see the Notes)
        before = self._theta.copy() if self.optimizer == "sgd" else None
        mlp_kernels.mlp_update(
            X, y, self._theta, self._off, self._sizes, self._hcum, len(self._classes),
            self._kind, mask, keep, float(self.learning_rate) * scale, self._upper_lr() * scale,
            beta, self._grad, self._moments, self._adam_steps + 1, steps, n_batch,
        )
        self._adam_steps += steps
        bound = self.DIVERGED
        if before is not None and not (-bound <= self._theta.min() and self._theta.max() <= bound):
            self._theta[:] = before
            warnings.warn(
                f"PseudoLabelMLP: an SGD update diverged (a weight beyond {bound:g}) and was "
                "undone; scale the features or lower learning_rate", RuntimeWarning, stacklevel=2
            )

    def _upper_lr(self) -> float:
        """Step of the hidden layers above the first."""
        factor = self.UPPER_STEP if self.deep_identity else 1.0
        return float(self.learning_rate) * factor

    def _predict_update(self, X: np.ndarray, y: np.ndarray, P=None) -> np.ndarray:
        # the kernel makes Lee's pseudo-labels itself: the update takes no `P`
        P = self._proba(X) if P is None else P
        self._update(X, y)
        return P

    def _proba(self, X: np.ndarray) -> np.ndarray:
        return mlp_kernels.mlp_proba(
            X, self._theta, self._off, self._sizes, self._hcum, len(self._classes), self._kind,
            1.0 - self.dropout,
        )
