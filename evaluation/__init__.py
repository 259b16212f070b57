"""Semi-supervised prequential evaluation and the paper's online experiment."""

from __future__ import annotations

from .metrics import PrequentialError
from .prequential import PrequentialResult, prequential, takes_unlabeled

__all__ = ["PrequentialError", "PrequentialResult", "prequential", "takes_unlabeled"]
