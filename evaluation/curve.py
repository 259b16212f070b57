"""The prequential curve: the faded and cumulative error folded in as the losses come, and
the result of one run."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ["Curve", "PrequentialResult"]


class Curve:
    """Running faded and cumulative error with the recorded curve (eq. 18 of the paper).

    The faded sums follow `S_i = alpha S_(i-1) + L_i` and `W_i = alpha W_(i-1) + 1`, the error
    being `S_i / W_i`; a block of losses is folded in at once by a compiled loop (`_fold`)
    doing exactly that recursion, with the rounding of one update at a time.
    """

    def __init__(self, n_instances: int, step: int, fading_factor: float):
        n_points = n_instances // step + (n_instances % step != 0)
        self.step = step
        self.alpha = float(fading_factor)
        self.loss_sum = self.weight_sum = 0.0
        self.n_errors = 0.0
        self.position = 0
        self.positions = np.zeros(n_points, dtype=np.int64)
        self.faded = np.zeros(n_points)
        self.errors = np.zeros(n_points)
        self.n_recorded = 0

    def fold(self, losses: np.ndarray) -> None:
        losses = np.ascontiguousarray(losses, dtype=np.float64)
        self.loss_sum, self.weight_sum, self.n_errors, self.n_recorded = _fold(
            losses, self.alpha, self.loss_sum, self.weight_sum, self.n_errors, self.position,
            self.step, self.positions, self.faded, self.errors, self.n_recorded,
        )
        self.position += len(losses)

    def finish(self) -> None:
        """Record the last position when the run does not end on a multiple of `step`."""
        if self.position and self.position % self.step:
            self.positions[self.n_recorded] = self.position
            self.faded[self.n_recorded] = self.loss_sum / self.weight_sum
            self.errors[self.n_recorded] = self.n_errors / self.position
            self.n_recorded += 1


@njit(cache=True)  # no fastmath: no fused multiply-add, the rounding of one update at a time
def _fold(losses, alpha, loss_sum, weight_sum, n_errors, position, step, positions, faded,
          errors, n_recorded):
    """`Curve.fold`'s recursion over `losses`, recording every `step`-th position into
    `positions, faded, errors` from index `n_recorded` on. Returns the new sums and count."""
    k = n_recorded
    for i in range(losses.shape[0]):
        loss_sum = alpha * loss_sum + losses[i]
        weight_sum = alpha * weight_sum + 1.0
        n_errors += losses[i]
        position += 1
        if position % step == 0:
            positions[k] = position
            faded[k] = loss_sum / weight_sum
            errors[k] = n_errors / position
            k += 1
    return loss_sum, weight_sum, n_errors, k


@dataclass
class PrequentialResult:
    """The curve of one prequential run.

    Attributes
    ----------
    positions
        Number of instances seen at each recorded point (int64), every `step` instances and the
        last instance.
    faded_error
        Faded prequential error (paper eq. 18) at each point.
    error
        Cumulative error rate (fraction of mistakes so far) at each point.
    seconds
        Wall time of the run, in seconds.
    path
        `"arrays"` or `"dicts"`: which evaluation loop ran.

    """

    positions: np.ndarray
    faded_error: np.ndarray
    error: np.ndarray
    seconds: float
    path: str = "arrays"

    @property
    def n_instances(self) -> int:
        return int(self.positions[-1]) if len(self.positions) else 0

    @property
    def final(self) -> float:
        """The faded error at the end of the run."""
        return float(self.faded_error[-1])

    @property
    def mean_faded_error(self) -> float:
        """The faded error averaged over the recorded points (the area under the curve)."""
        return float(np.mean(self.faded_error))

    @property
    def instances_per_second(self) -> float:
        return self.n_instances / self.seconds if self.seconds > 0 else float("inf")

    def summary(self) -> dict:
        """Scalar summary: instances, final and mean faded error, final cumulative error, time."""
        return {
            "instances": self.n_instances,
            "final_faded_error": self.final,
            "mean_faded_error": self.mean_faded_error,
            "final_error": float(self.error[-1]),
            "seconds": self.seconds,
        }

    def __repr__(self) -> str:
        return (
            f"PrequentialResult(instances={self.n_instances}, final={self.final:.4f}, "
            f"mean={self.mean_faded_error:.4f}, error={self.error[-1]:.4f}, "
            f"seconds={self.seconds:.2f}, path={self.path!r})"
        )
