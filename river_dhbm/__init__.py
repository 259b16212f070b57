"""Deep hybrid semi-supervised learners (Ororbia, Giles & Reitter, 2016) for River."""

from __future__ import annotations

from river_dhbm.dhbm import DHBM
from river_dhbm.sben import SBEN

from . import (
    blas,
    dhbm_kernels,
    dhbm_phases,
    dhda_kernels,
    first_use,
    gradients,
    hsda_kernels,
    kernels,
    mlp_kernels,
    sben,
    scarce_labels,
)
from .dhda import DHDA
from .hsda import HSDA
from .pseudo_label import PseudoLabelMLP

# one compiled version per kernel and argument types: a shorter first use (see first_use.py)
first_use.compile_without_literals(
    blas, kernels, gradients, dhbm_phases, dhbm_kernels, dhda_kernels, hsda_kernels,
    mlp_kernels, sben, scarce_labels,
)

__all__: list[str] = ["DHBM", "DHDA", "HSDA", "PseudoLabelMLP", "SBEN"]
