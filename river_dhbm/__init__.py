"""Deep hybrid semi-supervised learners (Ororbia, Giles & Reitter, 2016) for River."""

from __future__ import annotations

from river_dhbm.dhbm import DHBM
from river_dhbm.sben import SBEN

from .dhda import DHDA
from .hsda import HSDA
from .pseudo_label import PseudoLabelMLP

__all__: list[str] = ["DHBM", "DHDA", "HSDA", "PseudoLabelMLP", "SBEN"]
