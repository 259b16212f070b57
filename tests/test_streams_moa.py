"""The streams against MOA's own output, bit for bit (fixtures from make_moa_fixtures.py)."""

from __future__ import annotations

import itertools
import pathlib

import numpy as np
import pytest

from streams import (
    LED,
    ConceptDriftStream,
    LEDDrift,
    NormalisationFilter,
    Waveform,
    WaveformDrift,
    paper_stream,
)
from optional import needs_moa

DATA_DIR = pathlib.Path(__file__).parent / "data" / "moa"

CDS = ConceptDriftStream
Norm = NormalisationFilter


def _chain_wave():
    inner = CDS(WaveformDrift(2, True, 10), WaveformDrift(3, True, 10), 300, 50, seed=2)
    return Norm(CDS(WaveformDrift(1, True, 10), inner, 400, 100, seed=1))


# fixture name -> the same stream built with this package (make_moa_fixtures.CONFIGS)
STREAMS = {
    "led_default": lambda: LED(1),
    "led_neg_seed": lambda: LED(-7, noise_percentage=25),
    "led_noise0_suppressed": lambda: LED(42, noise_percentage=0, irrelevant_features=False),
    "led_noise100": lambda: LED(-2147483648, noise_percentage=100),
    "leddrift_d4": lambda: LEDDrift(1, n_drift_features=4),
    "leddrift_d7_neg": lambda: LEDDrift(-123456, n_drift_features=7),
    "leddrift_d0_seed_max": lambda: LEDDrift(2147483647, 50, n_drift_features=0),
    "leddrift_suppressed_d3": lambda: LEDDrift(5, 10, False, n_drift_features=3),
    "wave_default": lambda: Waveform(1),
    "wave_noise_neg": lambda: Waveform(-99, has_noise=True),
    "wavedrift_d0": lambda: WaveformDrift(1, n_drift_features=0),
    "wavedrift_noise_d10": lambda: WaveformDrift(1, True, n_drift_features=10),
    "wavedrift_d40_neg": lambda: WaveformDrift(-2147483648, n_drift_features=40),
    "wavedrift_noise_d21": lambda: WaveformDrift(77, True, n_drift_features=21),
    "cds_led": lambda: CDS(
        LEDDrift(1, n_drift_features=0), LEDDrift(2, n_drift_features=4), 1000, 500
    ),
    "cds_led_chain_neg": lambda: CDS(
        LEDDrift(-1, n_drift_features=4),
        CDS(LEDDrift(-2, n_drift_features=0), LEDDrift(-3, n_drift_features=4), 800, 100, seed=-9),
        700,
        200,
        seed=-8,
    ),
    "cds_led_sudden_alpha": lambda: CDS(LED(3), LED(4), 1500, 1000, alpha=90.0, seed=5),
    "cds_led_alpha45": lambda: CDS(LED(3), LEDDrift(4, n_drift_features=2), 1500, 1000, 45.0, 5),
    "cds_wave": lambda: CDS(
        WaveformDrift(1, True, 10), WaveformDrift(2, True, 10), 500, 100, seed=3
    ),
    "norm_wave": lambda: Norm(Waveform(-5, has_noise=True)),
    "norm_cds_wave_chain": _chain_wave,
    "norm_led": lambda: Norm(LEDDrift(1, n_drift_features=4)),
    "paper_led": lambda: paper_stream("led", seed=1),
    "paper_waveform": lambda: paper_stream("waveform", seed=1),
}


def load(name):
    data = np.load(DATA_DIR / f"{name}.npz")
    return {key: data[key] for key in data.files}


def array_path(stream, n, chunk_size):
    blocks = itertools.islice(stream.iter_arrays(chunk_size), -(-n // chunk_size))
    X, y = zip(*blocks)
    return np.concatenate(X)[:n], np.concatenate(y)[:n]


def assert_bitwise_equal(actual, expected):
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    bad = np.flatnonzero((actual.view(np.int64) != expected.view(np.int64)).any(axis=-1))
    assert bad.size == 0, f"{bad.size} rows differ, first at {bad[:1]}"


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_moa_cli_matches_fixture(name):
    assert STREAMS[name]().moa_cli() == str(load(name)["cli"])


@pytest.mark.parametrize("name", sorted(STREAMS))
@pytest.mark.parametrize("chunk_size", [1, 97, 1000])
def test_array_path_equals_moa(name, chunk_size):
    expected = load(name)
    X_moa = expected["X"].astype(np.float64)
    n = len(X_moa) if chunk_size > 1 else min(len(X_moa), 300)  # chunks of 1 are slow
    X, y = array_path(STREAMS[name](), n, chunk_size)
    assert X.flags.c_contiguous and X.dtype == np.float64 and y.dtype == np.int64
    assert_bitwise_equal(X, X_moa[:n])
    np.testing.assert_array_equal(y, expected["y"][:n])


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_dict_path_equals_moa(name):
    expected = load(name)
    X_moa = expected["X"].astype(np.float64)
    stream = STREAMS[name]()
    rows = list(itertools.islice(stream, len(X_moa)))
    assert all(list(x) == list(range(stream.n_features)) for x, _ in rows)
    assert all(type(v) is float for v in rows[0][0].values()) and type(rows[0][1]) is int
    X = np.array([list(x.values()) for x, _ in rows])
    assert_bitwise_equal(X, X_moa)
    np.testing.assert_array_equal([y for _, y in rows], expected["y"])


@pytest.mark.parametrize("name", sorted(n for n in STREAMS if not n.startswith("paper")))
def test_second_iteration_equals_moa_restart(name):
    """Iterating again = MOA's restart() (WaveformDrift keeps its permutation, skips draws)."""
    expected = load(name)
    stream = STREAMS[name]()
    next(stream.iter_arrays(7))
    X, y = next(stream.iter_arrays(50))
    assert_bitwise_equal(X, expected["X_restart"])
    np.testing.assert_array_equal(y, expected["y_restart"])


@needs_moa
@pytest.mark.parametrize(
    "stream",
    [
        LEDDrift(-31, noise_percentage=37, n_drift_features=5),
        # Java int overflow of t - position, extreme seeds, width saturated from a tiny alpha
        ConceptDriftStream(LED(1), LEDDrift(2), position=-(2**31), width=1, seed=-(2**31)),
        ConceptDriftStream(LED(1), LEDDrift(2, n_drift_features=7), position=100, alpha=1e-5),
        NormalisationFilter(
            ConceptDriftStream(
                WaveformDrift(11, True, 13), Waveform(-12, True), position=150, width=60, seed=-4
            )
        ),
    ],
    ids=repr,
)
def test_live_against_moa(stream):
    import make_moa_fixtures as moa

    X_moa, y_moa = moa.moa_instances(moa.moa_stream(stream.moa_cli()), 400)
    X, y = next(stream.iter_arrays(400))
    assert_bitwise_equal(X, X_moa)
    np.testing.assert_array_equal(y, y_moa)
