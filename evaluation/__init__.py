"""Semi-supervised prequential evaluation, at this package's top (`prequential`, `curve`,
`metrics`, `delayed`), and the paper's experiments around it: the machinery every run shares in
`runs`, the online experiments in `experiments`, the offline ones (MNIST, 20 NewsGroups) in
`offline`, the speed benchmarks in `bench`; `cli` is the command line."""

from __future__ import annotations

from typing import TYPE_CHECKING

# `prequential` is a module and the function it defines: the function must win, so it is
# imported here (a module kept light for that); `python -m evaluation --help` runs this file
from .prequential import PrequentialResult, prequential, takes_unlabeled

if TYPE_CHECKING:
    from .metrics import PrequentialError

__all__ = ["PrequentialError", "PrequentialResult", "prequential", "takes_unlabeled"]


def __getattr__(name: str):
    # loaded on first use: River's metrics import scipy.stats (about half a second)
    if name == "PrequentialError":
        from .metrics import PrequentialError

        return PrequentialError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
