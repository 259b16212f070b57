"""Deep hybrid semi-supervised learners (Ororbia, Giles & Reitter, 2016) for River.

The package's map:

- the estimators, one module each: `dhbm` (DHBM), `sben` (SBEN), `dhda` (DHDA), `hsda`
  (HSDA), `pseudo_label` (PseudoLabelMLP), on the River API of `base` (HybridClassifier);
- `scarce_labels`: the learning rule every model shares when labels are scarce (the replayed
  label memory, proxy labels, the steps of an update, the unlabeled rows' weight over time);
- `_input` (private): the checks at the door, for data and for hyper-parameters;
- `_kernels` (private): the Numba kernels, one module per model plus the shared network,
  gradients, BLAS products and replay, and what a first use says while they compile.
"""

from __future__ import annotations

from river_dhbm.dhbm import DHBM
from river_dhbm.dhda import DHDA
from river_dhbm.hsda import HSDA
from river_dhbm.pseudo_label import PseudoLabelMLP
from river_dhbm.sben import SBEN

__all__: list[str] = ["DHBM", "DHDA", "HSDA", "PseudoLabelMLP", "SBEN"]
