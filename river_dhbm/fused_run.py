"""The DHBM's fused test-then-train: many mini-batches in one kernel call.

With the mean-field estimator and no dropout a DHBM update draws nothing at random but the
replay's uniforms, so a run of whole mini-batches (`base.HybridClassifier.test_then_train_arrays`)
can be predicted and learnt by one call, which replays the label memory and makes proxy labels
exactly as the per-batch path (`minibatch.learn`, `DHBM._update`) does: `dhbm_test_then_train`
for the network alone, `dhbm_experts_run` with its twin, its linear expert and their mixture
(`river_dhbm.safety`, as `minibatch.mixed_flush`). The Python work per mini-batch costs as much
as a quarter of the update. The drift detectors hear a run's errors after it, and a restart due
inside the run (at a multiple of `change.CHECK_EVERY` updates, as on the per-batch path) learns
it again up to there (`SPAN`).
"""

from __future__ import annotations

import numpy as np

from river_dhbm import change, scarce_labels
from river_dhbm._kernels import dhbm as dhbm_kernels
from river_dhbm._kernels import dhbm_experts
from river_dhbm.linear_expert import NO_LINEAR, RATE

__all__ = ["applies", "test_then_train"]


def applies(model) -> bool:
    """Whether `model`'s runs of mini-batches go to one kernel call: a mean-field DHBM without
    dropout, in double precision when experts share the call (the linear expert's is)."""
    return (model.dropout == 0 and model._estimator == dhbm_kernels.MF
            and (model._mixture is None or model._theta.dtype == np.float64))


#: Mini-batches a watched run learns in one call before its drift detectors hear their errors:
#: the detectors (River's, in Python) cannot be consulted inside the kernel, so the run goes on
#: as if no restart came, and when one is due inside it, it learns again from where it began up
#: to that update (a rare cost: alarms are few) and restarts there.
SPAN = 100


def test_then_train(model, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """`model._test_then_train_run` of a mean-field DHBM without dropout: whole mini-batches
    `X` of known classes, `codes` int64 class indices (-1 unlabeled); the predicted classes.
    A drift detector restarts the model or its twin at the update the per-batch path would
    (`SPAN`)."""
    twin = model._twin
    if not model._watch.active and (twin is None or not twin._watch.active):
        return _fused(model, X, codes)[0]
    bs = model.batch_size
    predicted = np.empty(len(X), dtype=np.int64)
    start = 0
    while start < len(X):
        stop = min(len(X), start + bs * SPAN)
        first_update = model.n_updates
        saved = _State(model)
        predicted[start:stop], by_network, by_twin = _fused(model, X[start:stop],
                                                            codes[start:stop])
        heard = _hear(model, X[start:stop], by_network, by_twin, codes[start:stop],
                      first_update)
        if heard is not None:  # a restart due after `batches`: learn them again, restart there
            batches, due = heard
            stop = start + batches * bs
            saved.restore()
            _fused(model, X[start:stop], codes[start:stop], hold=True)
            _restart(model, due, X[stop - bs : stop], codes[stop - bs : stop])
        start = stop
    return predicted


def _restart(model, due, X: np.ndarray, codes: np.ndarray) -> None:
    """Restart the experts `due` after the last mini-batch `X`, `codes` of a run, which the
    linear expert has not learnt (`hold`), then let it learn it, as `minibatch.flush` does
    after the network's restart."""
    for expert in due:
        change.restart(expert)
    if model._linear is not None:
        model._linear.learn(model, X, codes)


def _hear(model, X: np.ndarray, by_network: np.ndarray, by_twin: np.ndarray, codes: np.ndarray,
          first_update: int):
    """Feed the drift detectors of `model` and its twin the errors of their predictions
    (`by_network`, `by_twin`) of the labeled rows of the mini-batches `X` they have just
    learnt, and `model`'s input watch their rows, from update `first_update` on, one mini-batch
    after another, up to the first update after which one of them must restart
    (`ChangeWatch.due`). Returns None when none must, else the mini-batches up to that update
    and the experts to restart."""
    bs = model.batch_size
    labeled = np.flatnonzero(codes >= 0)
    # the labeled rows of mini-batch `b` are `labeled[ends[b]:ends[b + 1]]`
    ends = np.searchsorted(labeled, np.arange(0, len(codes) + 1, bs)).tolist()
    watched = [(expert, (predicted[labeled] != codes[labeled]).tolist())
               for expert, predicted in ((model, by_network), (model._twin, by_twin))
               if expert is not None]
    for b in range(len(ends) - 1):
        update = first_update + b + 1
        if model._watch.active:  # as `minibatch.flush` does, before the errors
            model._watch.narrowed(X[b * bs : (b + 1) * bs], update, model._twin)
        due = []
        for expert, errors in watched:
            if ends[b] < ends[b + 1] and expert._watch.active:
                expert._watch.rose(errors[ends[b] : ends[b + 1]], update * bs)
            if update % change.CHECK_EVERY == 0 and expert._watch.due(update):
                due.append(expert)
        if due:
            return b + 1, due
    return None


class _State:
    """What a fused run changes of a model, its twin, its linear expert and their mixture (not
    the drift detectors), kept to be put back (`restore`)."""

    def __init__(self, model):
        self.arrays, self.counts, self.generators = [], [], []
        for expert in (model, model._twin):
            if expert is not None:
                memory = scarce_labels.memory_of(expert, int(expert._sizes[0]))
                self.arrays += [expert._theta, expert._moments, memory.X, memory.y,
                                memory.rows, memory.state]
                self.counts.append((expert, ("_adam_steps", "n_updates", "n_labeled_seen")))
                self.generators.append(expert._rng)
        if model._linear is not None:
            self.arrays += list(model._linear.arrays)
            self.generators.append(model._linear._rng)
        if model._mixture is not None:
            self.arrays += [model._mixture.losses, model._mixture.weights,
                            model._mixture.log_temps, model._mixture.evidence,
                            model._mixture.errors]
            self.counts.append((model._mixture, ("loss_mixture", "n_scored")))
        self.saved_arrays = [a.copy() for a in self.arrays]
        self.saved_counts = [[getattr(o, name) for name in names] for o, names in self.counts]
        self.saved_generators = [g.bit_generator.state for g in self.generators]

    def restore(self) -> None:
        for a, saved in zip(self.arrays, self.saved_arrays):
            a[...] = saved
        for (o, names), values in zip(self.counts, self.saved_counts):
            for name, value in zip(names, values):
                setattr(o, name, value)
        for g, state in zip(self.generators, self.saved_generators):
            g.bit_generator.state = state


def _fused(model, X: np.ndarray, codes: np.ndarray, hold: bool = False):
    """Test-then-train on whole mini-batches in one kernel call: the predicted classes, the
    network's and the twin's (of the labeled rows, -1 elsewhere); with `hold`, the linear
    expert leaves the last mini-batch to the caller (`_restart`)."""
    X = X.astype(model._theta.dtype, copy=False)
    labeled = (codes >= 0).reshape(-1, model.batch_size).sum(axis=1)
    network, steps = _learner(model, X, labeled)
    predicted = np.empty(len(X), dtype=np.int64)
    mixture = model._mixture
    if mixture is None:
        dhbm_kernels.dhbm_test_then_train(X, codes, predicted, *network)
        by_network = by_twin = predicted
    else:
        twin, linear = model._twin, model._linear
        twin_learner, twin_steps = (network, None) if twin is None else _learner(twin, X,
                                                                                 labeled)
        if linear is None:
            lin = (*NO_LINEAR, np.zeros(0), RATE, False)
        else:  # the uniforms it may draw; those it did not use go back (`advance`)
            rng = linear._rng
            before = rng.bit_generator.state
            lin = (*linear.arrays, rng.random(int(steps.sum()) * model.replay), RATE, True)
        by_network, by_twin = np.empty_like(predicted), np.empty_like(predicted)
        loss, scored, drawn = dhbm_experts.dhbm_experts_run(
            X, codes, predicted, network, twin_learner, lin,
            (mixture.log_prior, mixture.needs, mixture.evidence, mixture.losses,
             mixture.weights, mixture.log_temps,
             mixture.step, mixture.errors, twin is not None), int(hold),
            by_network, by_twin)
        if linear is not None:
            rng.bit_generator.state = before
            rng.bit_generator.advance(drawn)
        mixture.loss_mixture += loss
        mixture.n_scored += scored
        if twin is not None:
            _count(twin, labeled, twin_steps)
    _count(model, labeled, steps)
    return predicted, by_network, by_twin



def _learner(model, X: np.ndarray, labeled: np.ndarray) -> tuple:
    """The kernels' arguments for `model`'s updates on mini-batches with `labeled[b]` labeled
    rows each (the twin learns those rows only), its uniforms drawn as the per-batch path
    draws them, and each update's steps."""
    n_batches = len(labeled)
    if model.beta_schedule is None:
        betas = np.full(n_batches, float(model.beta))
    else:
        t = model.n_updates + np.arange(n_batches)
        betas = np.array([scarce_labels.beta_at(model.beta, model.beta_schedule, b) for b in t])
    if not model.learn_unlabeled:
        betas[:] = 0.0
    memory = scarce_labels.memory_of(model, X.shape[1])
    # each update's steps (the labeled rows seen count its own batch, as `minibatch.learn`
    # does), and the per-batch path's draws, in its order: `replay` uniforms per step
    seen = model.n_labeled_seen + np.cumsum(labeled)
    steps = scarce_labels.steps_at(model, seen)
    share = scarce_labels.generative_share(model, seen)  # as `term_weights` does
    uniforms = model._rng.random(int(steps.sum()) * model.replay)
    schedule = (model._step_size() * scarce_labels.share_step_scale(share),
                float(model.alpha) * share, betas * share,
                float(model.discriminative_weight) / share, steps)
    settings = (model.mf_steps, model.pseudo_label == "hard", scarce_labels.warm_confidence(model),
                scarce_labels.labels_since_change(model, model.n_labeled_seen),
                scarce_labels.PSEUDO_LABEL_WARM_UP)
    empty = model._empty  # the mean-field estimator's particles: no mask, no draws
    learner = (model._net(), (model._grad, model._moments, model._adam_steps + 1), schedule,
               settings, (model._part_x, model._part_h, model._part_y, empty, empty, empty),
               model._work_arrays(),
               (memory.X, memory.y, memory.rows, memory.state, uniforms, model.replay,
                scarce_labels.stream_row(model), scarce_labels.MEMORY_HORIZON),
               model._work["first_P"])
    return learner, steps


def _count(model, labeled: np.ndarray, steps: np.ndarray) -> None:
    """Count the updates `model` has just made, one per entry of `labeled`."""
    model._adam_steps += int(steps.sum())
    model.n_updates += len(labeled)
    model.n_labeled_seen += int(labeled.sum())
