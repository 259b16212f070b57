"""The linear expert beside the network: softmax regression of the labeled rows.

A hidden layer needs far more labels than a linear model to learn a linear concept, and where
the concept is linear and labels are scarce, River's logistic regression learning the labeled
rows alone is ahead of a network. The linear expert is that model inside ours: `K x d` weights
and `K` biases over the inputs standardized by the running mean and variance of every row seen
(the unlabeled rows tell the input's scale for free), learnt by one gradient step of the log
loss on the batch's labeled rows and as many rows of the network's label memory as the network
replays (`replay`), as many steps per mini-batch as the network's update takes (`steps` while
the model is young, fewer as its labels grow: `scarce_labels.steps_at`), so each label is learnt
more than once, as the network's are. The step is `RATE` over the rows' mean gradient, from
zero weights (a uniform prediction before its first label). The weights and biases have a
Gaussian prior of precision `PRIOR_PRECISION` (1: scikit-learn's `LogisticRegression(C=1)`),
its pull divided among the labeled rows the memory holds: replayed many times over, a few
hundred noisy labels would otherwise be fitted to their noise (issue 54: LED at 1 % and 10 %
labels gains about 0.01; docs/results.md).

The aggregating mixture (`river_dhbm.aggregating`) then weighs it against the network by their Brier
scores on the labeled rows: where the concept is linear it leads early, where it is not its
weight falls away.
"""

from __future__ import annotations

import numpy as np

from river_dhbm._kernels.entries import linear_proba
from river_dhbm._kernels.linear import linear_learn
from river_dhbm.scarce_labels import MEMORY_HORIZON, steps_at, stream_row

#: The gradient step over the mean gradient of a mini-batch's rows, on standardized inputs
#: (0.05, 0.2 and 0.3 traded one development stream against another: docs/results.md).
RATE = 0.1

_NO_MEMORY = (np.zeros((0, 1)), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
              np.zeros(2, dtype=np.int64))


#: `LinearExpert.arrays` of a model without a linear expert, for the kernels that take them.
NO_LINEAR = (np.zeros((0, 0)), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(1, np.int64))


class LinearExpert:
    """Softmax regression of a model's labeled rows (see the module).

    Attributes
    ----------
    W, b
        Weights `[K, d]` and biases `[K]`, a row per class in the model's column order.
    mean, m2, count
        Welford's running sums of every row seen: the mean, the sum of squared deviations
        `[d]`, and the rows `[1]`.

    """

    def __init__(self, n_features: int, seed: int | None):
        self.W = np.zeros((0, n_features))
        self.b = np.zeros(0)
        self.mean = np.zeros(n_features)
        self.m2 = np.zeros(n_features)
        self.count = np.zeros(1, dtype=np.int64)
        # its own draws, so that the network's stay what they were without it
        self._rng = np.random.default_rng(None if seed is None else [seed, 48])

    @property
    def arrays(self) -> tuple:
        """`(W, b, mean, m2, count)`, as the kernels take them."""
        return self.W, self.b, self.mean, self.m2, self.count

    def add_class(self) -> None:
        self.W = np.vstack([self.W, np.zeros((1, self.W.shape[1]))])
        self.b = np.append(self.b, 0.0)

    def restandardize(self) -> None:
        """Forget the running mean and variance: the rows that follow set them again."""
        self.mean[:] = 0.0
        self.m2[:] = 0.0
        self.count[:] = 0

    def proba(self, X: np.ndarray) -> np.ndarray:
        """`p(y | x)` `[n, K]` of validated rows `X [n, d]`."""
        out = np.empty((len(X), len(self.b)))
        self.proba_into(X, out)
        return out

    def proba_into(self, X: np.ndarray, out: np.ndarray) -> None:
        """`proba(X)` written into `out [n, K]`."""
        linear_proba(*self.arrays, X, out)

    def learn(self, model, X: np.ndarray, codes: np.ndarray) -> None:
        """One update on the mini-batch `X`, `codes` (-1 unlabeled) that `model` has just
        learnt: as many gradient steps as `model`'s own update took (`steps_at`), each with
        `model.replay` rows of its label memory (which holds the batch's labels by now)."""
        memory = model._memory
        arrays = _NO_MEMORY if memory is None else (memory.X, memory.y, memory.rows,
                                                    memory.state)
        R = model.replay if memory is not None and memory.count else 0
        steps = steps_at(model, model.n_labeled_seen)
        n = len(codes)
        out_X = np.empty((n + R, X.shape[1]))
        out_codes = np.empty(n + R, dtype=np.int64)
        now = stream_row(model) - model.batch_size  # `model` has counted its update
        linear_learn(self.W, self.b, self.mean, self.m2, self.count, X, codes, n, *arrays,
                     self._rng.random(steps * R), steps, now, MEMORY_HORIZON, RATE, out_X,
                     out_codes)
