"""MOA-exact stream generators as River datasets."""

from __future__ import annotations

from streams.drift import ConceptDriftStream
from streams.led import LED, LEDDrift
from streams.masking import LabelMask
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
]
