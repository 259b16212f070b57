"""Deep hybrid semi-supervised learners (Ororbia, Giles & Reitter, 2016) for River."""

from __future__ import annotations

from .pseudo_label import PseudoLabelMLP

__all__: list[str] = ["PseudoLabelMLP"]
