"""The DHBM's prediction paths: test-then-train sharing the update's recognition pass, the
one-call run of whole mini-batches, and the one-row predictions of River's loop."""

from __future__ import annotations

import numpy as np

from river_dhbm import dhbm_kernels, scarce_labels

__all__ = ["DHBMPaths"]


class DHBMPaths:
    """Mixed into `DHBM` (before `HybridClassifier`): the hooks of the base class that the
    DHBM answers with fewer passes or kernel calls."""

    def _predict_update(self, X: np.ndarray, y: np.ndarray) -> np.ndarray:
        # Without dropout the update's first step, the recognition pass and `p(y | v)` into the
        # work array `P`, is exactly the prediction (`_proba`): test-then-train needs one pass.
        if (self.dropout > 0 or not self._classes
                or scarce_labels.steps_at(self, self.n_labeled_seen) > 1):
            return super()._predict_update(X, y)
        self._update(X, y)
        return self._work["P"][: len(X)].astype(np.float64)

    def _test_then_train_run(self, X: np.ndarray, codes: np.ndarray) -> np.ndarray:
        # Mean-field estimator without dropout: nothing random, so the whole run of
        # mini-batches is one kernel call (the per-batch Python work costs as much as a
        # quarter of the update).
        if self.dropout > 0 or self._estimator != dhbm_kernels.MF:
            return super()._test_then_train_run(X, codes)
        X = X.astype(self._theta.dtype, copy=False)
        n_batches = len(X) // self.batch_size
        if self.beta_schedule is None:
            betas = np.full(n_batches, float(self.beta))
        else:
            betas = np.array([self._beta_at(self.n_updates + b) for b in range(n_batches)])
        if not self.learn_unlabeled:
            betas[:] = 0.0
        predicted = np.empty(len(X), dtype=np.int64)
        memory = scarce_labels.memory_of(self, X.shape[1])
        # each update's steps (the labeled rows seen count its own batch, as `_flush` does), and
        # the per-batch path's draws, in its order: `replay` uniforms per step of an update
        labeled = (codes >= 0).reshape(n_batches, -1).sum(axis=1)
        steps = scarce_labels.steps_at(self, self.n_labeled_seen + np.cumsum(labeled))
        uniforms = self._rng.random(int(steps.sum()) * self.replay)
        confidence = 2.0 if self.confidence is None or not self.learn_unlabeled else float(
            self.confidence)
        dhbm_kernels.dhbm_test_then_train(
            X, codes, betas, self._adam_steps + 1, predicted, self._theta, self._grad, self._off,
            self._sizes, self._hcum, len(self._classes), self._kind, self.mf_steps,
            self._step_size(), float(self.alpha), float(self.discriminative_weight),
            self.pseudo_label == "hard", self._part_x, self._part_h, self._part_y, self._empty,
            *self._work_arrays(), self._moments, memory.X, memory.y, memory.state, uniforms,
            self.replay, confidence, self.n_labeled_seen, scarce_labels.PSEUDO_LABEL_WARM_UP,
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
