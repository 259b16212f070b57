"""The DHBM's arrays: the flat parameters and their initialisation, the Adam moments, the SAP
particles, the work arrays of one update, and their growth when a class appears."""

from __future__ import annotations

import numpy as np

from river_dhbm import dhbm_kernels, kernels

__all__ = ["ESTIMATORS", "DHBMState"]

#: `estimator` -> the kernels' code of the likelihood-gradient estimator.
ESTIMATORS = {"mf": dhbm_kernels.MF, "sap": dhbm_kernels.SAP}


class DHBMState:
    """Mixed into `DHBM` (before `HybridClassifier`, whose `_reset_state` it extends)."""


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
        self._hcum = kernels.hidden_offsets(self._sizes)
        self._kind = kernels.HYBRID_ACTIVATIONS[self.activation]
        self._estimator = ESTIMATORS[self.estimator]
        self._off = kernels.param_layout(self._sizes, 0)
        dtype = np.dtype(self.dtype)
        theta = np.zeros(self._off[-1, 2], dtype)
        kernels.init_weights(theta, self._off, self._sizes, self._rng,
                             **kernels.first_layer_init(self.init, self.INIT_SCALE))
        self._theta = theta
        A = int(self._hcum[-1])
        M = self.n_particles if self._estimator == dhbm_kernels.SAP else 0
        self._part_x = (self._rng.random((M, n_features)) < 0.5).astype(dtype)
        self._part_h = (self._rng.random(M * A) < 0.5).astype(dtype)
        self._part_y = np.zeros((M, 0), dtype)
        self._moments = kernels.adam_moments(theta, self.optimizer)
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
        narrow = int(self._sizes.max()) <= kernels.MIRROR_MAX_WIDTH
        self._work = dict(
            act=np.zeros(n * A, t), mu=np.zeros(n * A, t), neg=np.zeros(n * A, t),
            delta=np.zeros(n * A, t), zbuf=np.zeros(wide, t), xrec=np.zeros((n, D), t),
            P=np.zeros((n, C), t), T=np.zeros((n, C), t), Y=np.zeros((n, C), t),
            wrow=np.zeros(n, t), wdisc=np.zeros(n, t), first_pred=np.zeros(n, np.int64),
            # the weights' transposes, rebuilt by every update (`kernels.transpose_weights`);
            # none for wide networks (`kernels.MIRROR_MAX_WIDTH`)
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
        self._theta = kernels.regrow_classes(self._theta, self._sizes, C - 1, C).astype(dtype)
        self._moments = kernels.regrow_moments(self._moments, self._sizes, C - 1, C)
        self._off = kernels.param_layout(self._sizes, C)
        self._part_y = np.hstack([self._part_y, np.zeros((self._part_y.shape[0], 1), dtype)])
        self._alloc_work()
