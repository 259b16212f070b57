"""The DHBM's fused test-then-train: many mini-batches in one kernel call.

With the mean-field estimator and no dropout a DHBM update draws nothing at random but the
replay's uniforms, so a run of whole mini-batches (`base.HybridClassifier.test_then_train_arrays`)
can be predicted and learnt by one call of `dhbm_test_then_train`, which replays the label
memory and makes proxy labels exactly as the per-batch path (`minibatch.learn`, `DHBM._update`)
does; the Python work per mini-batch costs as much as a quarter of the update. The drift
detector is consulted where the per-batch path would restart (`change.CHECK_EVERY`).
"""

from __future__ import annotations

import numpy as np

from river_dhbm import change, scarce_labels
from river_dhbm._kernels import dhbm as dhbm_kernels

__all__ = ["test_then_train"]


def test_then_train(model, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """`model._test_then_train_run` of a mean-field DHBM without dropout: whole mini-batches
    `X` of known classes, `codes` int64 class indices (-1 unlabeled); the predicted classes.
    Cut where the drift detector may restart the model, so that it restarts at the update
    the per-batch path would."""
    if not model._watch.active:
        return _fused(model, X, codes)
    bs = model.batch_size
    predicted = np.empty(len(X), dtype=np.int64)
    start = 0
    while start < len(X):
        batches = change.CHECK_EVERY - model.n_updates % change.CHECK_EVERY
        stop = min(len(X), start + bs * batches)
        first_update = model.n_updates
        predicted[start:stop] = _fused(model, X[start:stop], codes[start:stop])
        for b, b0 in enumerate(range(start, stop, bs), first_update + 1):
            labeled = codes[b0 : b0 + bs] >= 0
            if labeled.any():
                errors = predicted[b0 : b0 + bs][labeled] != codes[b0 : b0 + bs][labeled]
                model._watch.rose(errors, b * bs)
        if model._watch.due(model.n_updates):
            change.restart(model)
        start = stop
    return predicted


def _fused(model, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Test-then-train on whole mini-batches in one kernel call; the predicted classes."""
    X = X.astype(model._theta.dtype, copy=False)
    n_batches = len(X) // model.batch_size
    if model.beta_schedule is None:
        betas = np.full(n_batches, float(model.beta))
    else:
        t = model.n_updates + np.arange(n_batches)
        betas = np.array([scarce_labels.beta_at(model.beta, model.beta_schedule, b) for b in t])
    if not model.learn_unlabeled:
        betas[:] = 0.0
    predicted = np.empty(len(X), dtype=np.int64)
    memory = scarce_labels.memory_of(model, X.shape[1])
    # each update's steps (the labeled rows seen count its own batch, as `minibatch.learn`
    # does), and the per-batch path's draws, in its order: `replay` uniforms per step
    labeled = (codes >= 0).reshape(n_batches, -1).sum(axis=1)
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
    dhbm_kernels.dhbm_test_then_train(
        X, codes, predicted, model._net(), (model._grad, model._moments, model._adam_steps + 1),
        schedule, settings, (model._part_x, model._part_h, model._part_y, empty, empty, empty),
        model._work_arrays(),
        (memory.X, memory.y, memory.rows, memory.state, uniforms, model.replay,
         scarce_labels.stream_row(model), scarce_labels.MEMORY_HORIZON),
        model._work["first_pred"],
    )
    model._adam_steps += int(steps.sum())
    model.n_updates += n_batches
    model.n_labeled_seen += int((codes >= 0).sum())
    return predicted
