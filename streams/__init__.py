"""MOA-exact stream generators as River datasets, and semi-supervised label masking.

`LED`, `LEDDrift`, `Waveform`, `WaveformDrift`, `ConceptDriftStream` and
`NormalisationFilter` produce, for the same seed and options, exactly MOA's instances (see
`shared/docs/MOA_GENERATORS.md`); `paper_stream` builds the drifting streams of the paper
(schedule in its docstring and the README). Each stream yields `(x: dict, y: int)`, has a jitted
array path `iter_arrays(chunk_size)` and prints its MOA command line with `moa_cli()`.

The names are loaded on first use (PEP 562): the streams subclass River's
`datasets.base.SyntheticDataset`, and importing anything from `river.datasets` imports every
River dataset, scikit-learn and `scipy.stats` with them (about a second), which a bare
`import streams` (or `python -m evaluation --help`) should not pay.

"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the names are, for readers and type checkers
    from streams.drift import ConceptDriftStream
    from streams.led import LED, LEDDrift
    from streams.masking import LabeledOnly, LabelMask
    from streams.normalise import NormalisationFilter
    from streams.presets import paper_stream
    from streams.rows import FirstRows
    from streams.seasons import Seasons
    from streams.waveform import Waveform, WaveformDrift

#: Public name -> the module that defines it.
_HOMES = {
    "LED": "streams.led",
    "LEDDrift": "streams.led",
    "Waveform": "streams.waveform",
    "WaveformDrift": "streams.waveform",
    "ConceptDriftStream": "streams.drift",
    "NormalisationFilter": "streams.normalise",
    "paper_stream": "streams.presets",
    "LabelMask": "streams.masking",
    "LabeledOnly": "streams.masking",
    "FirstRows": "streams.rows",
    "Seasons": "streams.seasons",
}

__all__ = list(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once loaded, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
