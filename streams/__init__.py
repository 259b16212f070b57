"""MOA-exact stream generators as River datasets, and semi-supervised label masking.

`LED`, `LEDDrift`, `Waveform`, `WaveformDrift`, `ConceptDriftStream` and
`NormalisationFilter` produce, for the same seed and options, exactly MOA's instances (see
`shared/docs/MOA_GENERATORS.md`); `paper_stream` builds the drifting streams of the paper
(schedule in its docstring and the README). Each stream yields `(x: dict, y: int)`, has a jitted
array path `iter_arrays(chunk_size)` and prints its MOA command line with `moa_cli()`.

"""

from __future__ import annotations

from streams.drift import ConceptDriftStream
from streams.led import LED, LEDDrift
from streams.masking import LabeledOnly, LabelMask
from streams.normalise import NormalisationFilter
from streams.presets import paper_stream
from streams.waveform import Waveform, WaveformDrift

__all__ = [
    "LED",
    "LEDDrift",
    "Waveform",
    "WaveformDrift",
    "ConceptDriftStream",
    "NormalisationFilter",
    "paper_stream",
    "LabelMask",
    "LabeledOnly",
]
