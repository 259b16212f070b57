"""The Deep Hybrid Boltzmann Machine (Ororbia, Giles & Reitter, 2016) as a River classifier.

Long because one estimator is read here from top to bottom: its documentation (the paper's
settings, the choices where it is vague, the measured figures), its parameters, its arrays and
the three prediction paths that share the update's recognition pass. Its kernels are in
`river_dhbm._kernels.dhbm`.
"""

from __future__ import annotations

import numpy as np
from river import base

from river_dhbm import change, scarce_labels
from river_dhbm._kernels import dhbm as dhbm_kernels
from river_dhbm._kernels import network
from river_dhbm._input.params import (
    PSEUDO_LABELS,
    _check_beta_schedule,
    _check_choice,
    _check_hidden_sizes,
    _check_int,
    _check_non_negative,
    _check_positive,
    _check_probability,
)
from river_dhbm.base import HybridClassifier

__all__ = ["DHBM"]

#: `estimator` -> the kernels' code of the likelihood-gradient estimator.
ESTIMATORS = {"mf": dhbm_kernels.MF, "sap": dhbm_kernels.SAP}
_NO_CODES = np.zeros(0, dtype=np.int64)  # `first_pred` of an update whose caller needs none


class DHBM(HybridClassifier):
    """Deep Hybrid Boltzmann Machine: a semi-supervised online classifier.

    An L-layer Boltzmann machine over the input, L hidden layers and the label, whose label
    units are connected to every hidden layer (`p(y | h) = softmax(sum_l U^l^T h^l + d)`),
    with a recognition network that infers the hidden layers in one bottom-up pass. It
    learns from mixed mini-batches of labeled and unlabeled instances (paper Algorithm 1):
    labeled rows follow the gradient of `log p(y, x)`, unlabeled rows, weighted by `beta`,
    that of `log p(x)` with a proxy label from the model's own prediction.

    `learn_one(x)` (or `y=None`, or `labeled=False`) is an unlabeled instance; instances
    are buffered and every `batch_size` of them trigger one update.

    Parameters
    ----------
    hidden_sizes
        Number of units of each hidden layer, bottom to top (any depth >= 1).
    estimator
        Likelihood-gradient estimator: `"mf"`, mean-field contrastive divergence (paper
        appendix A), or `"sap"`, stochastic approximation with persistent fantasy particles
        advanced by block Gibbs sampling (appendix B).
    n_particles
        Number of persistent fantasy particles (`"sap"` only).
    gibbs_sweeps
        Block Gibbs sweeps that advance the particles per update (`"sap"` only); the
        statistics come from the last.
    particle_dropout
        Whether the particles get dropout masks as the data does (`"sap"` only; see Notes).
    mf_steps
        Mean-field sweeps run from the recognition network's guess during learning (x and
        label clamped); their result is the positive phase and the recognition network's
        target.
    learning_rate
        Step size of every parameter.
    alpha
        Weight of the labeled rows' gradients.
    beta
        Weight of the unlabeled rows' gradients (the final value if `beta_schedule` is set).
    beta_schedule
        `None` (constant `beta`) or `(T1, T2)`: beta is 0 up to update `T1`, rises linearly
        to `beta` at update `T2`, then stays (paper eq. 17, counted in mini-batch updates).
    dropout
        Probability of dropping each hidden unit during learning (paper: 0.5); predictions
        scale the activities by the keep probability.
    pseudo_label
        Proxy label of an unlabeled row: `"soft"` (the predicted class probabilities) or
        `"hard"` (the predicted class, as the pseudo-label of Lee, 2013).
    discriminative_weight
        Weight of the direct discriminative gradient of `-log p(y | x)` (paper footnote 3)
        back-propagated through the label weights and the recognition network; 0 turns it
        off (the paper's setting).
    activation
        Hidden units: `"sigmoid"` or `"relu"` (a rectifier bounded to [0, 1], see the Notes).
    init
        Initial weights of the first layer: `"centred"` (Glorot's uniform bound times
        `network.centred_scale(depth)`, 3 for one layer, each unit's bias putting its
        hyperplane through a random point of the input box [0, 1]^D, see the Notes) or
        `"glorot"` (Glorot's bound, biases 0: the paper-era default, used by `paper()`).
    optimizer
        `"adam"` (Kingma & Ba, 2015, default moments 0.9 / 0.999) or `"sgd"` (the paper's
        plain gradient steps) applied to every parameter.
    learn_unlabeled
        Whether unlabeled rows teach the model anything. `False` zeroes their weight (`beta`)
        and turns the confident proxy labels off, and changes nothing else (the same batches,
        updates and draws): the ablation that measures what unlabeled rows are worth.
    safe_unlabeled
        Whether the prediction mixes the network with a labeled-only twin by their log loss
        on the labeled rows, so that unlabeled rows never cost more than `ln 5` of cumulative
        log loss (`river_dhbm.safety`; `unlabeled_trust` is the network's weight). Only with
        `learn_unlabeled`; `False`: the network alone predicts (the paper's settings).
    steps
        Gradient steps each update takes on its mini-batch and replayed rows (one kernel
        call either way): a stream shows each row once, and one step per mini-batch leaves
        a network far behind a linear model for its first thousands of rows.
    warm_start
        Labeled rows up to which every update takes `steps` steps; past them an update takes
        `steps * warm_start / labeled rows seen` (at least 1). `None`: always `steps`.
    replay
        Labeled rows drawn from the label memory and added to each step (0: none).
    memory_size
        How many of the latest labeled rows the label memory keeps.
    confidence
        An unlabeled row whose predicted class has at least this probability is learnt as a
        labeled row of that class (a proxy label), once 50 labeled rows have been seen;
        `None`: no proxy labels.
    dtype
        Precision of the parameters and of the update's arithmetic: `"float64"`, or
        `"float32"` (single precision: about twice as fast for wide layers, e.g. MNIST's).
    drift_detector
        A River drift detector fed the labeled rows' 0/1 errors (each predicted before it is
        learnt); when it sees the error rise the model restarts its fast learning (see the
        Notes). Defaults to `drift.ADWIN(delta=0.01)`; `drift.NoDrift()` turns it off.
    batch_size
        Instances per update.
    seed
        Seed of the generator behind the initial weights, dropout masks and Gibbs samples.

    Attributes
    ----------
    n_updates
        Updates done so far.
    n_labeled_seen
        Labeled instances learnt so far.
    unlabeled_trust
        The network's weight against its labeled-only twin in the prediction
        (`safe_unlabeled`; 1.0 without a twin).

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
    >>> model = DHBM(seed=1)
    >>> evaluate.progressive_val_score(dataset.take(2000), model, PrequentialError())
    PrequentialError: 41.46%

    The array path is much faster. On this stream the faded error comes down towards the Bayes
    error (0.26) as the model matures (see the Notes):

    >>> result = prequential(dataset, DHBM(seed=1), 30_000, step=10_000)
    >>> result.faded_error.round(3)
    array([0.32 , 0.331, 0.276])

    Notes
    -----
    The prediction is the network's own: one recognition pass and the joint predictor. A
    `DHBM` learning labels permuted over the rows stays at chance (`tests/test_dhbm.py`).
    By default (`safe_unlabeled`) it is mixed with that of a twin network, the same model
    with `learn_unlabeled=False` learning the same labeled rows (`river_dhbm.safety`), each
    weighted by its log loss on the labeled rows so far: Vovk's aggregating algorithm, whose
    cumulative log loss is never more than `ln 5` above the twin's (prior four to one for
    the network, `safety.PRIOR`), so unlabeled rows that mislead the network cost almost
    nothing. The twin is exactly the ablation (to rounding, without dropout) and learns
    only the labeled and replayed rows; it makes a default model about twice as slow
    (docs/benchmarks.md).

    Defaults, chosen on the development suite (`python -m evaluation suite`: MOA's LED and
    Waveform, scikit-learn's digits, MNIST as a stream, River's Phishing, Bananas and SEA;
    prequential accuracy over the whole stream through River's dict API behind a
    `MinMaxScaler`, per-row label masks; docs/results.md has the tables): one hidden layer
    of 64 bounded rectifiers, Adam with step 0.003, `steps=8` gradient steps per update,
    each on the mini-batch and 20 rows of the label memory, first-layer units centred in the
    input box, the paper's KL step on every row (`mf_steps=1`, `beta=0.3`), the
    discriminative gradient at weight 10, confident proxy labels. What each mechanism is
    worth (ablations on the suite, in docs/results.md):

    - Steps (`steps`): a stream shows each row once, and one gradient step per mini-batch
      left the network at chance on small data sets (digits at 100 % labels: 0.28 with the
      old single step, River's LogisticRegression 0.90). Each step learns the mini-batch with
      its own rows of the label memory: with the same replayed rows at every step the extra
      steps fit one batch's noise (LED at 100 %: 0.67 against 0.71).
    - Warm start (`warm_start=250`): past 250 labeled rows an update takes
      `steps * 250 / labeled rows seen` steps (at least 1). Many steps per label would
      replay each row of the label memory dozens of times and fit its noise: on the
      stationary LED at 10 % labels the faded error over 60,000 rows stays at 0.30-0.34 with
      it and 0.33-0.38 without; it costs the digits at 100 % labels 0.008. It also bounds the
      cost: an update of a long stream takes one step (docs/benchmarks.md).
    - Label memory (`replay=20`, `memory_size=1000`, `scarce_labels`): the rows each step
      replays (against 4: +0.017 / +0.022 at 100 % / 10 % labels on the suite's mean); with
      1 % labels one step per label leaves any network near chance.
    - Initialisation (`init="centred"`): Glorot's bound assumes unit-variance inputs, and
      with biases 0 every first-layer hyperplane passes through the corner 0 of the input
      box [0, 1]^D. Three times steeper and centred at random points of the box, the units cut
      the data from the first row on. In a deep stack steepness compounds (each clipped layer
      feeds the next near-binary activities), so the first layer of `L` starts `L` times
      gentler (`network.centred_scale`), as its Adam step is `L` times smaller.
    - Bounded rectifiers (`activation="relu"`): Bananas needs curved boundaries that a layer
      of 64 sigmoid units does not learn in one pass.
    - A maturing model (past `warm_start` labels): its step shrinks as
      `scarce_labels.step_scale` and its generative terms (the KL step, the likelihood
      gradient) weigh `scarce_labels.generative_share` against the discriminative term,
      like a prior's fixed weight against evidence that grows; with constant weights a long
      stationary stream ended well above the Bayes error (docs/drift.md).
    - Concept changes (`drift_detector`, `river_dhbm.change`): the labeled rows' errors,
      each predicted before it is learnt, feed one of River's detectors (ADWIN, as ARF's);
      when the error rises the model learns as a young one again: labels count from the
      alarm (the warm start's steps, the full step and generative weight return), the label
      memory is emptied, Adam's moments are zeroed. The weights stay: a false alarm costs a
      few noisy updates, never the model. `paper()` watches nothing.
    - The KL step (`mf_steps=1`, paper eq. 11) with `beta=0.3`: the recognition network,
      which predicts, is pulled towards the Boltzmann machine's mean-field posterior of EVERY
      row, labeled or not, and that machine learns `p(x)` from the unlabeled rows: the
      channel through which they reach the prediction. Against the `learn_unlabeled=False`
      ablation at 1 % labels (2 seeds of 20,000 rows): MNIST +0.063, digits +0.027, LED
      +0.035, Waveform 0.000, Phishing -0.011 (standard error 0.10), Bananas -0.004, SEA
      +0.008; at 10 % between -0.006 (Bananas) and +0.010. Without the KL step
      (`mf_steps=0`, the old default) the unlabeled rows added nothing (MNIST 0.000, digits
      -0.012 at 1 %); `beta=1` cost Bananas 0.022 at 10 %, `beta=0.1` gained less on the
      images (MNIST +0.024). The discriminative gradient's weight of 10 keeps the KL pull
      from outweighing the labels.
    - Confident proxy labels (`confidence=0.9`, after 50 labeled rows): an unlabeled row
      whose prediction reaches 0.9 is learnt as a labeled row of its predicted class.
    - Where unlabeled rows carry nothing: on a noisy hyperplane at 10 % labels they cost
      nothing (gains 0.000 to +0.003, `tests/test_unlabeled_gain.py`); at 1 % they cost
      0.012 on average over three seeds (+0.008, -0.032, -0.013) when the network predicts
      alone (`safe_unlabeled=False`); the mixture with the labeled-only twin bounds what
      they can cost (docs/results.md, "Unlabeled rows that never cost").
    - Depth: Adam's step is `learning_rate / len(hidden_sizes)`. Adam moves every weight by
      about its step whatever the gradient, so an L-layer stack's output moves about L
      times as far per update as one layer's. SGD (the paper's optimiser) keeps its step.
      Deep stacks still learn more slowly than one layer from the same steps: at 10 % labels
      four layers of 64 reach 0.584 on LED and 0.764 on Waveform against 0.657 and 0.822
      (whole-stream accuracy; without the division by depth 0.594 and 0.783).

    The paper's literal settings (`DHBM.paper(n_features)`: 4 layers as wide as the input,
    SGD, one step, no label memory, no proxy labels, Glorot's weights) reproduce the
    paper's Figure 3 (docs/evaluation.md).

    Choices where the paper leaves details open:

    - Layout: every parameter of every layer lives in one flat float64 buffer (`W^l` stored
      fan-in by fan-out), so one compiled kernel serves any depth; a new class rebuilds it
      with zero label weights and class bias for the newcomer.
    - Initialisation: `W^l` uniform in `+-sqrt(6 / (H_{l-1} + H_l))` (the first layer's
      scaled by `network.centred_scale` with `init="centred"`, each of its units' biases
      then putting its hyperplane through a point drawn uniformly in [0, 1]^D; other biases
      0), label weights 0; the recognition network starts as a copy of `W^l, b^l` and is
      trained on its own afterwards. Its weights are doubled for every layer but the top one (paper
      eq. 9), its biases are not.
    - Steps: each of an update's `steps` gradient steps runs the whole update (recognition
      pass, KL and discriminative steps, likelihood gradient, Adam) on the mini-batch and
      its own `replay` rows of the label memory, with the same dropout masks; the proxy
      labels come from the first step's prediction; Adam counts every step.
    - Visible units are logistic whatever `activation` is (inputs are expected in [0, 1]).
    - `activation="relu"` is the rectifier bounded to [0, 1], `min(max(z, 0), 1)`, and the
      SAP samples are noisy ReLUs `max(0, z + sqrt(sigmoid(z)) eps)` clipped at 1. The
      hidden layers of a Boltzmann machine feed each other both ways; with unbounded units
      the energy has no lower bound and the mean-field activities (and the squared-error
      recognition targets) grow with the weights that they grow: four plain ReLU layers of
      24 with the paper's settings reached NaN at update 8 on LED. Bounded, the same
      settings stay finite over 20,000 instances (`tests/test_relu_stability.py`).
    - Dropout: one mask per row and hidden unit per update, applied to the recognition
      activities and to every mean-field statistic of the same update (a dropped unit is out
      of the whole update); SAP particles get their own fresh mask per update, or none
      (`particle_dropout=False`).
    - Gradients of each subset are averaged over its own rows: `alpha / n_labeled` per
      labeled row, `beta / n_unlabeled` per unlabeled row.
    - Positive phase: data `x`, clamped label (true or proxy) and the clamped mean-field
      posterior `mu` after `mf_steps` sweeps started at the recognition network's guess
      (`mf_steps=0`: the recognition guess itself, the paper's Algorithm 2).
    - MF negative phase: one free-running mean-field step from `mu`: `x~ = sigmoid(W^1 mu^1
      + c)`, the label PROBABILITIES `y~ = p(y | mu)` (not a one-hot), then one sweep of the
      hiddens given `(x~, y~)`.
    - SAP negative phase: `gibbs_sweeps` sequential block Gibbs sweeps per update (`h^1..h^L`,
      then `x`, then `y`), statistics from the last sweep's conditional probabilities, each
      paired with the neighbour states it was computed from.
    - SAP on MNIST (784-784-784-784, 10 particles, the paper's settings, lr 0.08; 600
      updates on 6,000 unlabeled images): with particle masks it stays near chance (test
      error 79 / 82 % on two seeds; mean-field CD: 25 / 24 %). A fresh mask on half the
      hidden states at every update is not a transition of any one model: the chains never
      settle, their statistics are noise, and that noise random-walks the weights (mean
      |W^2| 0.031 -> 0.097 in 600 updates, flat under MF) until the clamped mean-field
      posteriors, and the recognition network trained to match them, carry nothing about
      the digit. Particles without masks (`particle_dropout=False`, the MNIST config)
      sample the whole machine and learn: 26 / 30 % (the positive phase keeps its masks: the
      hidden units turn sparse, mean activity 0.03).
      What did less: 100 particles with masks (66 %), step 0.01 (71 %), 3 sweeps per
      update without masks (29 %, about 1 ms per sweep), `U`'s statistics from the data's
      `p(y | mu)` instead of the particles' labels (73 % with masks).
    - Recognition step: the exact gradient of the summed layer-wise cross-entropy to `mu`
      (paper eq. 11; squared error for ReLU units), back-propagated through all layers, with
      the same row weights as the model step (so unlabeled rows pull it with weight `beta`);
      skipped when `mf_steps=0` (nothing to match), when the recognition network learns from
      the discriminative gradient only and unlabeled rows reach it through nothing but the
      label weights and the proxy labels.
    - Discriminative gradient: `-log p(y | x)` of the labeled rows and `-beta log p(y' | x)`
      of the unlabeled rows with their proxy label `y'` (zero for soft proxy labels), times
      `discriminative_weight`, into `U`, `d` and the recognition network.
    - Predictions: `p(y | x)` from one recognition pass (no mean-field refinement), which is
      what the discriminative gradient trains.
    - `beta_schedule` counts mini-batch updates (there are no labeled epochs in a stream).
    - The Adam moments are part of the model's state; a new class gets zero moments.

    References
    ----------
    [^1]: Ororbia, A. G., Giles, C. L., & Reitter, D. (2016). Online Semi-Supervised
        Learning with Deep Hybrid Boltzmann Machines and Denoising Autoencoders.
        arXiv:1511.06964.

    """

    # models pickled before these settings existed go on learning as they did
    steps, warm_start, init = 1, None, "glorot"

    _PAPER_SETTINGS = {
        "safe_unlabeled": False,
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
        yield {
            "hidden_sizes": (6,),
            "estimator": "sap",
            "n_particles": 3,
            "dropout": 0.5,
            "pseudo_label": "hard",
            "activation": "relu",
            "beta_schedule": (2, 5),
            "batch_size": 3,
            "seed": 2,
        }

    # ------------------------------------------------------------------ validation

    def _check_params(self) -> None:
        _check_hidden_sizes(self.hidden_sizes)
        _check_choice("estimator", self.estimator, tuple(ESTIMATORS))
        _check_int("n_particles", self.n_particles, 1)
        _check_int("gibbs_sweeps", self.gibbs_sweeps, 1)
        if not isinstance(self.particle_dropout, bool):
            raise ValueError(f"Invalid particle_dropout ({self.particle_dropout!r}). Must be "
                             "True or False")
        _check_int("mf_steps", self.mf_steps, 0)
        _check_int("steps", self.steps, 1)
        if self.warm_start is not None:
            _check_int("warm_start", self.warm_start, 1)
        _check_choice("init", self.init, network.INITS)
        _check_positive("learning_rate", self.learning_rate)
        _check_non_negative("alpha", self.alpha)
        _check_non_negative("beta", self.beta)
        _check_non_negative("discriminative_weight", self.discriminative_weight)
        _check_probability("dropout", self.dropout)
        _check_beta_schedule(self.beta_schedule)
        _check_choice("pseudo_label", self.pseudo_label, PSEUDO_LABELS)
        _check_choice("optimizer", self.optimizer, network.OPTIMIZERS)
        _check_choice("activation", self.activation, tuple(network.HYBRID_ACTIVATIONS))
        _check_choice("dtype", self.dtype, network.DTYPES)
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
    _adam_steps = 0  # Adam steps taken (an update takes `scarce_labels.steps_at` of them)

    def __setstate__(self, state):
        # earlier versions took one Adam step per update, numbered by `n_updates`
        state.setdefault("_adam_steps", state.get("n_updates", 0))
        self.__dict__.update(state)
        if self._theta is not None:
            self._alloc_work()

    def _reset_state(self) -> None:
        super()._reset_state()
        self._theta = None
        self._empty = np.zeros(0, self.dtype)

    def _init_params(self, n_features: int) -> None:
        self._sizes = np.array([n_features, *self.hidden_sizes], dtype=np.int64)
        self._hcum = network.hidden_offsets(self._sizes)
        self._kind = network.HYBRID_ACTIVATIONS[self.activation]
        self._estimator = ESTIMATORS[self.estimator]
        self._off = network.param_layout(self._sizes, 0)
        dtype = np.dtype(self.dtype)
        theta = np.zeros(self._off[-1, 2], dtype)
        network.init_weights(theta, self._off, self._sizes, self._rng,
                             **network.first_layer_init(self.init, len(self.hidden_sizes)))
        self._theta = theta
        A = int(self._hcum[-1])
        M = self.n_particles if self._estimator == dhbm_kernels.SAP else 0
        self._part_x = (self._rng.random((M, n_features)) < 0.5).astype(dtype)
        self._part_h = (self._rng.random(M * A) < 0.5).astype(dtype)
        self._part_y = np.zeros((M, 0), dtype)
        self._moments = network.adam_moments(theta, self.optimizer)
        self._adam_steps = 0
        self._alloc_work()

    def _alloc_work(self) -> None:
        """Work arrays of one update and of a one-row prediction (rebuilt when classes grow)."""
        # room for the mini-batch and its replayed rows (`scarce_labels`)
        n, D, C = self.batch_size + self.replay, int(self._sizes[0]), len(self._classes)
        A = int(self._hcum[-1])
        wide = max(n, self._part_x.shape[0], 1) * int(self._sizes.max())
        t = self._theta.dtype
        self._grad = np.zeros_like(self._theta)
        narrow = int(self._sizes.max()) <= network.MIRROR_MAX_WIDTH
        self._work = dict(
            act=np.zeros(n * A, t), mu=np.zeros(n * A, t), neg=np.zeros(n * A, t),
            delta=np.zeros(n * A, t), zbuf=np.zeros(wide, t), xrec=np.zeros((n, D), t),
            P=np.zeros((n, C), t), T=np.zeros((n, C), t), Y=np.zeros((n, C), t),
            wrow=np.zeros(n, t), wdisc=np.zeros(n, t), first_pred=np.zeros(n, np.int64),
            # the weights' transposes, rebuilt by every update (`network.transpose_weights`);
            # none for wide networks (`network.MIRROR_MAX_WIDTH`)
            mirror=np.zeros_like(self._theta) if narrow else np.zeros(0, t),
        )
        self._pred_act = np.zeros(A)

    _WORK_ORDER = (
        "act", "mu", "neg", "delta", "zbuf", "xrec", "P", "T", "Y", "wrow", "wdisc", "mirror",
    )

    def _work_arrays(self) -> list:
        """The work arrays in the order `dhbm_update` (and `dhbm_test_then_train`) take them."""
        return [self._work[name] for name in self._WORK_ORDER]

    def _add_class(self) -> None:
        C = len(self._classes)
        dtype = self._theta.dtype
        self._theta = network.regrow_classes(self._theta, self._sizes, C - 1, C).astype(dtype)
        self._moments = network.regrow_moments(self._moments, self._sizes, C - 1, C)
        self._off = network.param_layout(self._sizes, C)
        self._part_y = np.hstack([self._part_y, np.zeros((self._part_y.shape[0], 1), dtype)])
        self._alloc_work()

    # ------------------------------------------------------------------ hooks

    def _update(self, X: np.ndarray, y: np.ndarray, P=None) -> None:
        # the kernel makes the proxy labels itself, from the prediction it computes first
        n_batch = len(X)
        steps = scarce_labels.steps_at(self, self.n_labeled_seen)
        X, y = scarce_labels.learning_batch(self, X, y, proxy_labels=False, rounds=steps)
        dtype = self._theta.dtype
        X = X.astype(dtype, copy=False)
        n = X.shape[0]
        A = int(self._hcum[-1])
        keep = 1.0 - self.dropout
        rng = self._rng
        mask = (rng.random(n * A) < keep).astype(dtype) if self.dropout > 0 else self._empty
        M = self._part_x.shape[0]
        if M:
            masked = self.dropout > 0 and self.particle_dropout
            part_mask = (rng.random(M * A) < keep).astype(dtype) if masked else self._empty
            draw = rng.standard_normal if self._kind != network.SIGMOID else rng.random
            K = self.gibbs_sweeps * steps
            noise_h = draw(K * M * A)
            noise_v = rng.random(K * (M * self._part_x.shape[1] + M))
        else:
            part_mask = noise_h = noise_v = self._empty
        # the MF kernel never compiles the SAP negative phase (a shorter first use)
        update = (dhbm_kernels.dhbm_update_mf if self._estimator == dhbm_kernels.MF
                  else dhbm_kernels.dhbm_update)
        alpha, beta, disc_weight = scarce_labels.term_weights(
            self, self._unlabeled_weight(self._current_beta()))
        update(
            X, y, self._theta, self._grad, self._off, self._sizes, self._hcum,
            len(self._classes), self._kind, self._estimator, self.mf_steps,
            self._step_size() * scarce_labels.step_scale(self, self.n_labeled_seen), alpha,
            beta, scarce_labels.proxy_confidence(self),
            disc_weight, self.pseudo_label == "hard", mask,
            self._part_x, self._part_h, self._part_y, part_mask, noise_h, noise_v,
            *self._work_arrays(), self._moments, self._adam_steps + 1, steps, n_batch, _NO_CODES,
        )
        self._adam_steps += steps

    # ------------------------------------------------------------------ predictions

    def _predict_update(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        # Without dropout the update's first step, the recognition pass and `p(y | v)` into the
        # work array `P`, is exactly the prediction (`_proba`): test-then-train needs one pass.
        if (self.dropout > 0 or not self._classes
                or scarce_labels.steps_at(self, self.n_labeled_seen) > 1):
            return super()._predict_update(X, y)
        self._update(X, y)
        return self._work["P"][: len(X)].astype(np.float64)

    def _test_then_train_run(self, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
        # Mean-field estimator without dropout: nothing random, so a run of mini-batches is one
        # kernel call (the per-batch Python work costs as much as a quarter of the update). The
        # drift detector is consulted where the per-batch path would restart (`change`).
        if self.dropout > 0 or self._estimator != dhbm_kernels.MF:
            return super()._test_then_train_run(X, codes)
        if not self._watch.active:
            return self._fused_run(X, codes)
        bs = self.batch_size
        predicted = np.empty(len(X), dtype=np.int64)
        start = 0
        while start < len(X):
            batches = change.CHECK_EVERY - self.n_updates % change.CHECK_EVERY
            stop = min(len(X), start + bs * batches)
            first_update = self.n_updates
            predicted[start:stop] = self._fused_run(X[start:stop], codes[start:stop])
            for b, b0 in enumerate(range(start, stop, bs), first_update + 1):
                labeled = codes[b0 : b0 + bs] >= 0
                if labeled.any():
                    errors = predicted[b0 : b0 + bs][labeled] != codes[b0 : b0 + bs][labeled]
                    self._watch.rose(errors, b * bs)
            if self._watch.due(self.n_updates):
                change.restart(self)
            start = stop
        return predicted

    def _fused_run(self, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """Test-then-train on whole mini-batches in one kernel call; the predicted classes."""
        X = X.astype(self._theta.dtype, copy=False)
        n_batches = len(X) // self.batch_size
        if self.beta_schedule is None:
            betas = np.full(n_batches, float(self.beta))
        else:
            t = self.n_updates + np.arange(n_batches)
            betas = np.array([scarce_labels.beta_at(self.beta, self.beta_schedule, b) for b in t])
        if not self.learn_unlabeled:
            betas[:] = 0.0
        predicted = np.empty(len(X), dtype=np.int64)
        memory = scarce_labels.memory_of(self, X.shape[1])
        # each update's steps (the labeled rows seen count its own batch, as `_flush` does), and
        # the per-batch path's draws, in its order: `replay` uniforms per step of an update
        labeled = (codes >= 0).reshape(n_batches, -1).sum(axis=1)
        seen = self.n_labeled_seen + np.cumsum(labeled)
        steps = scarce_labels.steps_at(self, seen)
        share = scarce_labels.generative_share(self, seen)  # as `term_weights` does
        uniforms = self._rng.random(int(steps.sum()) * self.replay)
        confidence = 2.0 if self.confidence is None or not self.learn_unlabeled else float(
            self.confidence)
        dhbm_kernels.dhbm_test_then_train(
            X, codes, betas * share, self._adam_steps + 1, predicted, self._theta, self._grad,
            self._off, self._sizes, self._hcum, len(self._classes), self._kind, self.mf_steps,
            self._step_size() * scarce_labels.step_scale(self, seen), float(self.alpha) * share,
            float(self.discriminative_weight) / share,
            self.pseudo_label == "hard", self._part_x, self._part_h, self._part_y, self._empty,
            *self._work_arrays(), self._moments, memory.X, memory.y, memory.state, uniforms,
            self.replay, confidence, self.n_labeled_seen - self._labels_before_change,
            scarce_labels.PSEUDO_LABEL_WARM_UP,
            steps, self._work["first_pred"],
        )
        self._adam_steps += int(steps.sum())
        self.n_updates += n_batches
        self.n_labeled_seen += int((codes >= 0).sum())
        return predicted

    def _proba(self, X: np.ndarray) -> np.ndarray:
        n = X.shape[0]
        if n == 1:  # the kernel of `predict_proba_one`: one row gives one answer on every path
            P = np.empty((1, len(self._classes)))
            self._proba_one(X, P)
            return P
        t = self._theta.dtype
        act = np.empty(n * int(self._hcum[-1]), t)
        zbuf = np.empty(n * int(self._sizes.max()), t)
        P = np.empty((n, len(self._classes)), t)
        dhbm_kernels.dhbm_proba(
            X.astype(t, copy=False), self._theta, self._off, self._sizes, self._hcum,
            len(self._classes), self._kind, 1.0 - self.dropout, 0, act, zbuf, P,
        )
        return P.astype(np.float64, copy=False)

    def _proba_row(self, row: np.ndarray) -> list:
        # one row with every buffer preallocated (the output in the scratch `_work`, which is
        # rebuilt when a class is added): the prediction of River's per-instance loop
        P = self._one_row_output()
        self._proba_one(row, P)
        return P[0].tolist()

    def _predict_row(self, row: np.ndarray) -> int:
        return self._proba_one(row, self._one_row_output())

    def _proba_one(self, row: np.ndarray, P: np.ndarray) -> int:
        """`p(y | x)` of one row `[1, d]` into `P [1, C]` (plain loops: `dhbm_proba_row`);
        returns the index of its first maximum."""
        return dhbm_kernels.dhbm_proba_row(
            row, self._theta, self._off, self._sizes, self._hcum, len(self._classes), self._kind,
            1.0 - self.dropout, self._pred_act, P,
        )

    def _one_row_output(self) -> np.ndarray:
        """The `[1, C]` output of a one-row prediction, kept in the scratch `_work` (rebuilt
        when a class is added, left out of pickles)."""
        P = self._work.get("P1")
        if P is None:
            P = self._work["P1"] = np.empty((1, len(self._classes)))
        return P
