"""What every model does when labels are scarce: a bounded memory of labeled rows replayed into
each update, and confident proxy labels for unlabeled rows.

A stream learner sees each labeled row once. With 1 % or 0.1 % labels that is one gradient step
per label, far too few for a network to learn what a naive Bayes model gets from the same rows
in closed form. The memory keeps the last `memory_size` labeled rows of the last
`MEMORY_HORIZON` stream rows (a ring, so it follows drift) and each update appends `replay` of
them, drawn uniformly, to the mini-batch. Confident proxy labels turn an unlabeled row whose
prediction reaches `confidence` into a labeled row of its predicted class for that update
(self-training, Lee 2013, gated as in Grandvalet & Bengio's entropy minimisation), once the
model has seen `PSEUDO_LABEL_WARM_UP` labeled rows.

The kernels work on the memory's arrays so that the DHBM's fused run (one Numba call for many
mini-batches) replays exactly what the per-batch path does. All draws are uniforms from the
model's generator, passed in.
"""

from __future__ import annotations

import numpy as np
from river_dhbm._input.params import check_bool, check_int, check_range
from river_dhbm._kernels.entries import confident_labels, memory_push, memory_replay
from river_dhbm._kernels.replay import NO_PROXY_LABELS

#: Labeled rows a model must have learnt before its confident proxy labels start: a model fitted
#: to a handful of labels is confidently wrong (the measurement: docs/models/index.md).
PSEUDO_LABEL_WARM_UP = 50


#: Stream rows a labeled row stays in the label memory, whatever the label ratio: a memory
#: measured in labels alone is a memory of the past when labels are scarce (1,000 labels span
#: 100,000 rows at 1 %), and replays an old concept against the new labels long after a
#: change. At 10 % labels, where the defaults were tuned, the default memory's 1,000 rows span
#: about this many rows: the horizon trims only the oldest few of them.
MEMORY_HORIZON = 10_000


class LabelMemory:
    """The last `size` labeled rows (`X [size, d]`, class codes `y [size]`) of the last
    `MEMORY_HORIZON` stream rows, as a ring.

    `rows [size]` holds the stream row at which each stored row came (the rows the model had
    learnt at the end of its mini-batch); `state` holds `(rows stored, next slot)` as int64,
    so kernels update it in place. The stored rows are the `rows stored` slots before the
    next one.
    """

    def __init__(self, size: int, n_features: int):
        self.X = np.zeros((size, n_features))
        self.y = np.zeros(size, dtype=np.int64)
        self.rows = np.zeros(size, dtype=np.int64)
        self.state = np.zeros(2, dtype=np.int64)

    @property
    def count(self) -> int:
        return int(self.state[0])

    def keep(self, which: np.ndarray) -> None:
        """Keep only the stored rows whose slot is True in `which [size]`, oldest first, as a
        ring that starts again at slot 0."""
        count, next_slot = self.count, int(self.state[1])
        slots = (next_slot - count + np.arange(count)) % len(self.y)
        slots = slots[which[slots]]
        for stored in (self.X, self.y, self.rows):
            stored[: len(slots)] = stored[slots]
        self.state[:] = (len(slots), len(slots) % len(self.y))


def beta_at(beta: float, schedule, t: float) -> float:
    """The unlabeled rows' weight of the update that follows `t` updates (paper eq. 17): 0
    before `T1`, linear up to `beta` at `T2`, then `beta`; `beta` throughout when `schedule`
    is None."""
    if schedule is None:
        return float(beta)
    t1, t2 = schedule
    if t <= t1:
        return 0.0
    if t >= t2:
        return float(beta)
    return float(beta) * (t - t1) / (t2 - t1)


def check_params(model, confidence: bool = True) -> None:
    """Check `learn_unlabeled`, `replay`, `memory_size` (and `confidence`) of `model`."""
    check_bool("learn_unlabeled", model.learn_unlabeled)
    check_int("replay", model.replay, 0)
    check_int("memory_size", model.memory_size, 1 if model.replay else 0)
    if confidence and model.confidence is not None:
        check_range("confidence", model.confidence, 0.0, 1.0, low_open=True)


def labels_since_change(model, n_labeled) -> np.ndarray | int:
    """Of `n_labeled` labeled rows seen in all (an int or an array of them), how many came
    after the last change `model` detected (`change.restart`): what the warm start counts, so
    that a change restarts it."""
    if np.isscalar(n_labeled):
        return int(n_labeled) - model._labels_before_change
    return np.asarray(n_labeled) - model._labels_before_change


def steps_at(model, n_labeled) -> np.ndarray | int:
    """Gradient steps of an update once `n_labeled` labeled rows have been seen (an int or an
    array of them): `model.steps` up to `model.warm_start` labeled rows, then
    `steps * warm_start / n_labeled` rounded, never below 1; always `steps` when
    `warm_start` is None. Labels are counted from the last change the model detected. Many
    steps let a young network catch up with a linear model; once its labels are many, they
    would replay each row of the label memory dozens of times and fit its noise."""
    steps, warm = model.steps, model.warm_start
    if warm is None:
        return steps if np.isscalar(n_labeled) else np.full(np.shape(n_labeled), steps)
    n_labeled = labels_since_change(model, n_labeled)
    if np.isscalar(n_labeled):  # Python's scalars: River's loop asks once a mini-batch
        return int(min(max(round(steps * warm / max(n_labeled, 1)), 1), steps))
    return np.clip(np.rint(steps * warm / np.maximum(n_labeled, 1)), 1, steps).astype(np.int64)


def generative_share(model, n_labeled) -> np.ndarray | float:
    """Weight of an update's generative terms (the KL step towards the Boltzmann machine's or
    the autoencoder's posterior, the likelihood gradient) relative to its discriminative term,
    once `n_labeled` labeled rows have been seen since the last change (an int or an array): 1
    up to `model.warm_start` of them, then `warm_start / n_labeled`; always 1 when `warm_start`
    is None.

    The generative terms act as a prior learnt from every row. At a constant weight per update
    their pull grows with the stream as fast as the labels' evidence does, and a network that
    learns a stationary stream for long ends where the prior and the labels balance, short of
    what the labels alone reach; a prior's weight stays fixed while the evidence grows."""
    warm = model.warm_start
    if warm is None:
        return 1.0 if np.isscalar(n_labeled) else np.ones(np.shape(n_labeled))
    n_labeled = labels_since_change(model, n_labeled)
    if np.isscalar(n_labeled):
        return float(min(1.0, warm / max(n_labeled, 1)))
    return np.minimum(1.0, warm / np.maximum(n_labeled, 1))


#: A mature model's step shrinks as `generative_share ** STEP_POWER`: with a constant step the
#: weights keep jittering around the optimum of a long stationary stream (a quarter power keeps
#: a third of the step after 20,000 labels, so the model still follows slow drift).
STEP_POWER = 0.25


def step_scale(model, n_labeled) -> np.ndarray | float:
    """Factor of the step size once `n_labeled` labeled rows have been seen since the last
    change: 1 while the model is young (`warm_start`), then `generative_share ** STEP_POWER`
    (`share_step_scale`)."""
    return share_step_scale(generative_share(model, n_labeled))


def share_step_scale(share) -> np.ndarray | float:
    """The step size's factor at the generative share `share` (a float or an array):
    `share ** STEP_POWER`. Python's power on each value, so that the fused run and the
    per-batch path take the very same steps (numpy's vector power may differ in the last
    bit)."""
    if np.isscalar(share):
        return share**STEP_POWER
    return np.array([s**STEP_POWER for s in share.tolist()])


def term_weights(model, beta: float) -> tuple[float, float, float]:
    """`(alpha, beta, discriminative_weight)` of `model`'s next update, the generative terms
    scaled by `generative_share`: scaling a row's weight and dividing the discriminative
    weight by the same share leaves the discriminative term as it was."""
    share = generative_share(model, model.n_labeled_seen)
    return (float(model.alpha) * share, float(beta) * share,
            float(model.discriminative_weight) / share)


def memory_of(model, n_features: int) -> LabelMemory:
    """`model`'s label memory, made on first use (empty when the model replays nothing)."""
    if model._memory is None:
        model._memory = LabelMemory(model.memory_size if model.replay else 0, n_features)
    return model._memory


def warm_confidence(model) -> float:
    """The confidence an unlabeled row's prediction needs to become a proxy label once `model`
    has seen `PSEUDO_LABEL_WARM_UP` labeled rows: its `confidence`, or `NO_PROXY_LABELS`
    (above 1, never reached) when that is None or the model does not learn from unlabeled
    rows."""
    if model.confidence is None or not model.learn_unlabeled:
        return NO_PROXY_LABELS
    return float(model.confidence)


def proxy_confidence(model) -> float:
    """The confidence an unlabeled row's prediction needs to become a proxy label in the next
    update: `warm_confidence`, or `NO_PROXY_LABELS` while fewer than `PSEUDO_LABEL_WARM_UP`
    labeled rows have been seen since the last change."""
    if labels_since_change(model, model.n_labeled_seen) < PSEUDO_LABEL_WARM_UP:
        return NO_PROXY_LABELS
    return warm_confidence(model)


def learning_batch(model, X: np.ndarray, y: np.ndarray, P=None, proxy_labels: bool = True,
                   rounds: int = 1):
    """The rows one update of `model` learns from: the mini-batch `(X, y)`, its confident
    unlabeled rows labeled (`proxy_labels`; `P` is the batch's prediction, computed if None)
    and `rounds` times `model.replay` rows of the label memory (one draw per step of an
    update that takes several). Stores the batch's true labels in the memory
    afterwards. Returns fresh arrays (the buffer stays as it was)."""
    n, d = X.shape
    codes = y.copy()
    if proxy_labels and model._classes:
        confidence = proxy_confidence(model)
        if confidence <= 1.0 and (codes < 0).any():
            confident_labels(codes, model._proba(X) if P is None else P, n, confidence)
    R = model.replay * rounds
    if R == 0:
        return X, codes
    memory = memory_of(model, d)
    u = model._rng.random(R)
    out_X = np.empty((n + R, d))
    out_codes = np.empty(n + R, dtype=np.int64)
    now = stream_row(model)
    m = memory_replay(memory.X, memory.y, memory.rows, memory.state, X, codes, n, u, out_X,
                      out_codes, now, MEMORY_HORIZON)
    memory_push(memory.X, memory.y, memory.rows, memory.state, X, y, n, now)
    return out_X[:m], out_codes[:m]


def stream_row(model) -> int:
    """The stream rows `model` will have learnt at the end of the update it is making: its
    mini-batches count them (a twin, which learns each mini-batch's labeled rows, counts the
    same)."""
    return (model.n_updates + 1) * model.batch_size
