"""The drifting LED and Waveform streams of the paper's online experiment."""

from __future__ import annotations

import numpy as np

from streams.base import MOAStream, check_java_int
from streams.drift import ConceptDriftStream
from streams.led import LEDDrift
from streams.normalise import NormalisationFilter
from streams.waveform import N_RELEVANT as WAVE_RELEVANT
from streams.waveform import WaveformDrift

N_INSTANCES = 1_000_000
#: Centres of the concept changes, counted in instances of the whole stream.
CHANGE_POINTS = (25_000, 250_000, 500_000, 750_000)
#: Width of every change (MOA's default): the drift stream's share goes from 12 % to 88 %
#: over the `width` instances around each centre.
WIDTH = 1_000
#: LED concepts alternate between these drift counts: each change swaps 4 of 7 segments.
LED_DRIFT_FEATURES = (4, 0)
#: Waveform concepts: 40 attributes, 10 swapped; a change must move at least this many of
#: the 21 relevant attributes.
WAVE_DRIFT_FEATURES = 10
WAVE_MIN_MOVED = 10


def java_int(value: int) -> int:
    """Wrap an integer to Java's int range, as Java's int arithmetic does."""
    return (int(value) + 2**31) % 2**32 - 2**31


def relevant_moved(before: np.ndarray, after: np.ndarray, n_relevant: int) -> int:
    """How many of the relevant attributes are written to a different column after a change."""
    return int(np.count_nonzero(before[:n_relevant] != after[:n_relevant]))


def waveform_concept_seeds(seed: int, n_concepts: int) -> list[int]:
    """Seeds of the Waveform concepts: the first is `seed`; each next one is the first
    candidate `previous + 1, previous + 2, ...` (Java int wrap-around) whose permutation
    moves at least `WAVE_MIN_MOVED` of the 21 relevant attributes compared with the
    previous concept. About 3 candidates in 4 qualify, so the search is short.
    """
    seeds = [seed]
    before = WaveformDrift(seed, True, WAVE_DRIFT_FEATURES).positions_
    while len(seeds) < n_concepts:
        candidate = seeds[-1]
        while True:
            candidate = java_int(candidate + 1)
            after = WaveformDrift(candidate, True, WAVE_DRIFT_FEATURES).positions_
            if relevant_moved(before, after, WAVE_RELEVANT) >= WAVE_MIN_MOVED:
                break
        seeds.append(candidate)
        before = after
    return seeds


def chain(concepts: list[MOAStream], seed: int) -> ConceptDriftStream:
    """Nest `concepts` into ConceptDriftStreams changing at `CHANGE_POINTS`.

    An inner stream counts only the instances routed to it, which starts at the previous
    change, so its position is the distance between consecutive change points. The
    choice seed of nesting level j is `seed - 1 - j` (concept seeds count upwards).

    """
    relative = np.diff((0,) + CHANGE_POINTS)
    stream = concepts[-1]
    for level in reversed(range(len(CHANGE_POINTS))):
        stream = ConceptDriftStream(
            concepts[level],
            stream,
            position=int(relative[level]),
            width=WIDTH,
            seed=java_int(seed - 1 - level),
        )
    return stream


def concepts_of(stream: MOAStream) -> list[MOAStream]:
    """The concepts of a chain built by `chain` (through a NormalisationFilter too)."""
    if isinstance(stream, NormalisationFilter):
        return concepts_of(stream.stream)
    if isinstance(stream, ConceptDriftStream):
        return [stream.stream] + concepts_of(stream.drift_stream)
    return [stream]


def change_points_of(stream: MOAStream) -> list[int]:
    """Centres of the changes of a chain in whole-stream instances (sum of nested positions)."""
    if isinstance(stream, NormalisationFilter):
        return change_points_of(stream.stream)
    if isinstance(stream, ConceptDriftStream):
        inner = change_points_of(stream.drift_stream)
        return [stream.position] + [stream.position + p for p in inner]
    return []


def paper_stream(name: str, seed: int = 1) -> MOAStream:
    """The drifting stream of the paper's online experiment, as a MOA-exact chain.

    Both streams run 1,000,000 instances (the stream itself is infinite) through five
    concepts, with four gradual changes (width 1,000, MOA's sigmoid) centred at instances
    25,000, 250,000, 500,000 and 750,000: the first falls inside the first 50,000 (the
    paper's zoomed panel). Built as nested `ConceptDriftStream`s; the inner positions are
    25,000, 225,000, 250,000 and 250,000 (an inner stream counts only the instances routed
    to it), and the choice seed of nesting level j = 0..3 is `seed - 1 - j`.

    - `"led"`: 24 attributes, 10 % noise. Concept k is
      `LEDDrift(seed + k, noise_percentage=10, n_drift_features=4 if k is even else 0)`:
      the stream starts as MOA's `LEDGeneratorDrift -n 10 -d 4`, and every change swaps
      the first 4 segments with 4 irrelevant attributes (or swaps them back).
    - `"waveform"`: 40 attributes (with the noise attributes), 10 drifting attributes,
      normalised online to [0, 1] (`NormalisationFilter` around the chain). Concept k is
      `WaveformDrift(s_k, has_noise=True, n_drift_features=10)` with `s_0 = seed` and
      `s_{k+1}` the first seed after `s_k` whose permutation moves at least 10 of the 21
      relevant attributes compared with concept k (`waveform_concept_seeds`).

    Seeds wrap around Java's int range. `moa_cli()` prints the MOA command line.

    Parameters
    ----------
    name
        `"led"` or `"waveform"`.
    seed
        Any Java int; trials use different seeds.

    Examples
    --------

    >>> from streams import paper_stream
    >>> stream = paper_stream("led", seed=1)
    >>> stream.n_features, stream.n_classes
    (24, 10)
    >>> print(stream.moa_cli())  # doctest: +ELLIPSIS
    ConceptDriftStream -s (generators.LEDGeneratorDrift -i 1 -n 10 -d 4) -d (ConceptDriftStream ...
    >>> paper_stream("waveform", seed=1).n_features
    40

    """
    seed = check_java_int("seed", seed)
    n_concepts = len(CHANGE_POINTS) + 1
    if name == "led":
        concepts = [
            LEDDrift(
                seed=java_int(seed + k),
                noise_percentage=10,
                irrelevant_features=True,
                n_drift_features=LED_DRIFT_FEATURES[k % 2],
            )
            for k in range(n_concepts)
        ]
        return chain(concepts, seed)
    if name == "waveform":
        concepts = [
            WaveformDrift(seed=s, has_noise=True, n_drift_features=WAVE_DRIFT_FEATURES)
            for s in waveform_concept_seeds(seed, n_concepts)
        ]
        return NormalisationFilter(chain(concepts, seed))
    raise ValueError(f"Invalid name ({name!r}). Must be 'led' or 'waveform'")
