"""Prequential error with a fading factor (Gama et al. 2013; paper eq. 18) as a River metric."""

from __future__ import annotations

from river import base, metrics

__all__ = ["PrequentialError"]


class PrequentialError(metrics.base.MultiClassMetric):
    """Prequential error with a fading factor.

    At time $i$ the metric is

    $$P_\\alpha(i) = \\frac{\\sum_{k=1}^i \\alpha^{i-k} L(y_k, \\hat{y}_k)}
                         {\\sum_{k=1}^i \\alpha^{i-k}}$$

    with the 0-1 loss $L$, so recent mistakes weigh more than old ones and the metric follows a
    drifting stream. Both sums are kept as running totals, so an update costs O(1) and the memory
    does not grow with the stream.

    Parameters
    ----------
    fading_factor
        The forgetting factor $\\alpha$ in (0, 1]. With 1 the metric is the plain cumulative error
        rate; the paper uses 0.995.

    Attributes
    ----------
    n
        The number of predictions scored so far.

    Examples
    --------

    >>> from evaluation import PrequentialError

    >>> metric = PrequentialError(fading_factor=0.5)
    >>> for y_true, y_pred in [(0, 0), (1, 0), (2, 2)]:
    ...     metric.update(y_true, y_pred)

    The last loss (0) weighs 1, the middle one (1) weighs 0.5, the first one (0) weighs 0.25:

    >>> metric.get()
    0.2857...
    >>> metric
    PrequentialError: 28.57%

    A missing prediction (River's `predict_one` returns `None` before any label) is a mistake:

    >>> metric.update(1, None)
    >>> round(metric.get(), 4)
    0.6667

    It plugs into River's evaluation loop. Note that `progressive_val_score` itself skips
    `None` predictions, whereas `evaluation.prequential` scores them.

    >>> from river import datasets, evaluate, linear_model, preprocessing
    >>> model = preprocessing.StandardScaler() | linear_model.LogisticRegression()
    >>> evaluate.progressive_val_score(datasets.Phishing(), model, PrequentialError())
    PrequentialError: 10.01%

    Notes
    -----
    `revert` undoes the most recent update only: a fading sum cannot forget an old observation
    without knowing everything that came after it.

    References
    ----------
    [^1]: Gama, J., Sebastiao, R. and Rodrigues, P.P., 2013. On evaluating stream learning
    algorithms. Machine Learning, 90(3), pp. 317-346.
    [^2]: Ororbia II, A.G., Giles, C.L. and Reitter, D., 2016. Online semi-supervised learning
    with deep hybrid Boltzmann machines and denoising autoencoders. arXiv:1511.06964, eq. 18.

    """

    def __init__(self, fading_factor: float = 0.995):
        if not 0.0 < fading_factor <= 1.0:
            raise ValueError(f"Invalid fading_factor ({fading_factor}). Valid range is (0, 1]")
        self.fading_factor = fading_factor
        self._loss_sum = 0.0  # sum of alpha^(i-k) * w_k * L_k
        self._weight_sum = 0.0  # sum of alpha^(i-k) * w_k
        self.n = 0

    @staticmethod
    def _loss(y_true, y_pred) -> float:
        return 1.0 if y_pred is None or y_pred != y_true else 0.0

    def update(self, y_true, y_pred, w=1.0) -> None:
        a = self.fading_factor
        self._loss_sum = a * self._loss_sum + w * self._loss(y_true, y_pred)
        self._weight_sum = a * self._weight_sum + w
        self.n += 1

    def revert(self, y_true, y_pred, w=1.0) -> None:
        a = self.fading_factor
        self._loss_sum = (self._loss_sum - w * self._loss(y_true, y_pred)) / a
        self._weight_sum = (self._weight_sum - w) / a
        self.n -= 1

    def get(self) -> float:
        if self._weight_sum <= 0.0:
            return 0.0
        return self._loss_sum / self._weight_sum

    @property
    def bigger_is_better(self) -> bool:
        return False

    @property
    def requires_labels(self) -> bool:
        return True

    def works_with(self, model) -> bool:
        return isinstance(model, base.Classifier)
