"""Stream API: River conventions, restart, validation, MOA command lines, paper presets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from river import datasets

import streams
from streams import (
    LED,
    ConceptDriftStream,
    LEDDrift,
    NormalisationFilter,
    Waveform,
    WaveformDrift,
    paper_stream,
)
from streams import presets
from streams.led import SEGMENTS

# factories: a WaveformDrift object remembers that it was started (MOA restart semantics)
ALL = [
    lambda: LED(3),
    lambda: LEDDrift(-3, n_drift_features=5),
    lambda: Waveform(3, has_noise=True),
    lambda: WaveformDrift(3, True, 10),
    lambda: ConceptDriftStream(LED(1), LED(2), position=50, width=10),
    lambda: NormalisationFilter(Waveform(4)),
]
IDS = ["LED", "LEDDrift", "Waveform", "WaveformDrift", "ConceptDriftStream", "Normalisation"]


def head(stream, n):
    X, y = next(stream.iter_arrays(n))
    return X, y


def test_public_names():
    for name in ["LED", "LEDDrift", "Waveform", "WaveformDrift", "ConceptDriftStream",
                 "NormalisationFilter", "paper_stream"]:
        assert name in streams.__all__ and hasattr(streams, name)


@pytest.mark.parametrize("make", ALL, ids=IDS)
def test_river_dataset_conventions(make):
    stream = make()
    assert isinstance(stream, datasets.base.SyntheticDataset)
    assert stream.task == datasets.base.MULTI_CLF and stream.n_samples is None
    x, y = next(iter(stream))
    assert list(x) == list(range(stream.n_features))
    assert all(type(v) is float for v in x.values()) and type(y) is int
    assert 0 <= y < stream.n_classes


@pytest.mark.parametrize("make", ALL, ids=IDS)
def test_iterating_again_starts_over(make):
    stream = make()
    first = list(itertools.islice(stream, 600))
    again = list(itertools.islice(stream, 600))
    if isinstance(stream, WaveformDrift):
        # MOA restart: same permutation, the two preparation draws are not repeated
        assert first != again
        assert again == list(itertools.islice(stream, 600))
    else:
        assert first == again
        X, y = head(stream, 600)
        assert X.tolist() == [list(x.values()) for x, _ in first]


def test_waveform_drift_restart_is_moa_restart():
    stream = WaveformDrift(8, True, 10)
    head(stream, 5)
    X_restart, _ = head(stream, 100)
    # a restarted WaveformDrift = a plain Waveform from the seed, permuted
    X_plain, _ = head(Waveform(8, has_noise=True), 100)
    np.testing.assert_array_equal(X_restart[:, stream.positions_], X_plain)


def test_led_drift_zero_is_led_and_suppression_ignores_drift():
    X_drift0, _ = head(LEDDrift(5, n_drift_features=0), 500)
    np.testing.assert_array_equal(X_drift0, head(LED(5), 500)[0])
    suppressed = LEDDrift(5, irrelevant_features=False, n_drift_features=7)
    assert suppressed.n_features == 7
    np.testing.assert_array_equal(head(suppressed, 500)[0], head(LED(5, 10, False), 500)[0])


def test_led_drift_swaps_segments_with_irrelevant_attributes():
    X0, y0 = head(LED(9), 300)
    X4, y4 = head(LEDDrift(9, n_drift_features=4), 300)
    np.testing.assert_array_equal(y0, y4)
    swapped = [7, 8, 9, 10, 0, 1, 2, 3]
    np.testing.assert_array_equal(X4[:, swapped], X0[:, [0, 1, 2, 3, 7, 8, 9, 10]])


def test_led_noise_rate():
    X, y = head(LED(1, noise_percentage=10), 50_000)
    flipped = X[:, :7] != SEGMENTS[y]
    assert abs(flipped.mean() - 0.10) < 0.005
    X, y = head(LED(1, noise_percentage=0), 1000)
    np.testing.assert_array_equal(X[:, :7], SEGMENTS[y])


def test_waveform_drift_permutation_and_zero_drift_consumes_draws():
    stream = WaveformDrift(1, True, 10)
    assert sorted(stream.positions_) == list(range(40))
    assert not np.array_equal(head(WaveformDrift(1, False, 0), 50)[0], head(Waveform(1), 50)[0])


def test_concept_drift_stream_switches_along_the_sigmoid():
    before, after = LEDDrift(1, n_drift_features=0), LEDDrift(2, n_drift_features=7)
    X, y = head(ConceptDriftStream(before, after, position=20_000, width=2_000), 40_000)
    # column 0 is segment 0 before the change and an irrelevant bit after it
    agree = X[:, 0] == SEGMENTS[y, 0]
    assert agree[:15_000].mean() > 0.85 and agree[25_000:].mean() < 0.55
    assert 0.6 < agree[19_500:20_500].mean() < 0.8  # half of each around the centre


def test_concept_drift_stream_alpha_sets_width():
    stream = ConceptDriftStream(LED(1), LED(2), position=10, alpha=45.0)
    assert stream.effective_width == 1  # (int)(1 / tan(45 deg)) = (int)0.99999... in MOA
    assert ConceptDriftStream(LED(1), LED(2), alpha=0.0, width=77).effective_width == 77
    assert ConceptDriftStream(LED(1), LED(2), alpha=90.0).effective_width == 0
    # a width of 0 gives a sudden change at the position, without errors
    X, y = head(ConceptDriftStream(LEDDrift(1, n_drift_features=0), LEDDrift(2, n_drift_features=7),
                                   position=100, alpha=90.0), 200)
    assert (X[:99, 0] == SEGMENTS[y[:99], 0]).mean() > 0.8


def test_normalisation_filter_is_causal_min_max():
    raw, _ = head(Waveform(2), 300)
    X, _ = head(NormalisationFilter(Waveform(2)), 300)
    lo, hi = np.minimum.accumulate(raw), np.maximum.accumulate(raw)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.where(hi > lo, (raw - lo) / (hi - lo), 0.0)
    np.testing.assert_array_equal(X, expected)
    assert (X[0] == 0).all()
    # LED attributes are nominal in MOA: left alone
    np.testing.assert_array_equal(head(NormalisationFilter(LED(2)), 100)[0], head(LED(2), 100)[0])


def test_moa_cli_strings():
    assert LED(-4, 0, False).moa_cli() == "generators.LEDGenerator -i -4 -n 0 -s"
    assert LEDDrift(1, 10, True, 4).moa_cli() == "generators.LEDGeneratorDrift -i 1 -n 10 -d 4"
    assert Waveform(2, True).moa_cli() == "generators.WaveformGenerator -i 2 -n"
    assert WaveformDrift(2, False, 3).moa_cli() == "generators.WaveformGeneratorDrift -i 2 -d 3"
    cds = ConceptDriftStream(LED(1), LED(2), 250000, 1000, 0.0, 1)
    assert cds.moa_cli() == (
        "ConceptDriftStream -s (generators.LEDGenerator -i 1 -n 10) "
        "-d (generators.LEDGenerator -i 2 -n 10) -p 250000 -w 1000 -r 1"
    )
    assert ConceptDriftStream(LED(1), LED(2), alpha=30.5).moa_cli().endswith("-a 30.5 -r 1")
    assert NormalisationFilter(Waveform(1)).moa_cli() == (
        "FilteredStream -s (generators.WaveformGenerator -i 1) -f NormalisationFilter"
    )


def test_repr_shows_parameters():
    assert repr(LEDDrift(2, n_drift_features=3)) == (
        "LEDDrift(seed=2, noise_percentage=10, irrelevant_features=True, n_drift_features=3)"
    )
    assert repr(NormalisationFilter(Waveform())) == (
        "NormalisationFilter(stream=Waveform(seed=1, has_noise=False))"
    )


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: LED(noise_percentage=101), r"noise_percentage \(101\).*\[0, 100\]"),
        (lambda: LED(noise_percentage=-1), r"noise_percentage \(-1\)"),
        (lambda: LED(noise_percentage=10.0), r"noise_percentage \(10.0\).*integer"),
        (lambda: LED(seed=2**31), r"seed \(2147483648\).*\[-2147483648, 2147483647\]"),
        (lambda: LED(seed=1.5), r"seed \(1.5\)"),
        (lambda: LED(seed=None), r"seed \(None\)"),
        (lambda: LED(irrelevant_features="yes"), r"irrelevant_features \('yes'\)"),
        (lambda: LEDDrift(n_drift_features=8), r"n_drift_features \(8\).*\[0, 7\]"),
        (lambda: WaveformDrift(n_drift_features=41), r"n_drift_features \(41\).*\[0, 40\]"),
        (lambda: WaveformDrift(n_drift_features=-1), r"n_drift_features \(-1\)"),
        (lambda: Waveform(seed=-(2**31) - 1), r"seed"),
        (lambda: ConceptDriftStream(LED(), LED(), width=0), r"width \(0\).*\[1, 2147483647\]"),
        (lambda: ConceptDriftStream(LED(), LED(), width=-5), r"width \(-5\)"),
        (lambda: ConceptDriftStream(LED(), LED(), alpha=91.0), r"alpha \(91.0\).*\[0.0, 90.0\]"),
        (lambda: ConceptDriftStream(LED(), "LED"), r"drift_stream \('LED'\).*stream"),
        (lambda: ConceptDriftStream([1, 2], LED()), r"stream \(\[1, 2\]\)"),
        (lambda: ConceptDriftStream(LED(), Waveform()), r"drift_stream .*21 features"),
        (lambda: ConceptDriftStream(LED(), LED(), seed="1"), r"seed \('1'\)"),
        (lambda: NormalisationFilter(None), r"stream \(None\)"),
        (lambda: paper_stream("sea", 1), r"name \('sea'\).*'led' or 'waveform'"),
        (lambda: next(LED().iter_arrays(0)), r"chunk_size \(0\)"),
    ],
)
def test_invalid_options_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_numpy_integers_and_extreme_seeds_accepted():
    assert LED(np.int64(-(2**31))).moa_cli() == "generators.LEDGenerator -i -2147483648 -n 10"
    head(WaveformDrift(2**31 - 1, True, 40), 10)


# --- paper presets ---


@pytest.mark.parametrize("name, n_features, n_classes", [("led", 24, 10), ("waveform", 40, 3)])
def test_paper_schedule(name, n_features, n_classes):
    stream = paper_stream(name, seed=1)
    assert (stream.n_features, stream.n_classes) == (n_features, n_classes)
    points = presets.change_points_of(stream)
    assert points == list(presets.CHANGE_POINTS)
    assert len(points) >= 3 and points[0] < 50_000 and points[-1] < presets.N_INSTANCES
    assert all(b - a > 10 * presets.WIDTH for a, b in zip(points, points[1:]))


@pytest.mark.parametrize("seed", [1, 2, -7, 2**31 - 1, -(2**31)])
def test_paper_concept_changes_move_relevant_attributes(seed):
    led = presets.concepts_of(paper_stream("led", seed))
    wave = presets.concepts_of(paper_stream("waveform", seed))
    assert len(led) == len(wave) == len(presets.CHANGE_POINTS) + 1
    for concepts, n_relevant, least in [(led, 7, 4), (wave, 21, presets.WAVE_MIN_MOVED)]:
        for before, after in zip(concepts, concepts[1:]):
            moved = presets.relevant_moved(before.positions(), after.positions(), n_relevant)
            assert moved >= least, (before, after)
    assert [c.n_drift_features for c in led] == [4, 0, 4, 0, 4]
    assert all(c.has_noise and c.n_drift_features == 10 for c in wave)
    assert paper_stream("waveform", seed).moa_cli().endswith("-f NormalisationFilter")


def test_paper_led_changes_happen_where_documented():
    """Column 0 shows segment 0 (agreement ~0.9) in d=0 concepts, a random bit (~0.5) else."""
    stream = paper_stream("led", seed=3)
    agree = np.concatenate([X[:, 0] == SEGMENTS[y, 0] for X, y in
                            itertools.islice(stream.iter_arrays(50_000), 17)])
    for k, c in enumerate(presets.CHANGE_POINTS):
        before, after = agree[c - 15_000 : c - 5_000].mean(), agree[c + 5_000 : c + 15_000].mean()
        low, high = (before, after) if k % 2 == 0 else (after, before)
        assert low < 0.55 and high > 0.85, (c, before, after)


def test_paper_waveform_changes_move_columns():
    """The per-column means of the raw chain shift at each documented change."""
    chain = paper_stream("waveform", seed=2).stream  # inside the NormalisationFilter
    X = np.concatenate([X for X, _ in itertools.islice(chain.iter_arrays(20_000), 40)])
    for c in presets.CHANGE_POINTS[:3]:
        shift = np.abs(X[c + 3_000 : c + 13_000].mean(0) - X[c - 13_000 : c - 3_000].mean(0))
        assert shift.max() > 0.5, c
    # no shift where nothing changes
    quiet = np.abs(X[100_000:110_000].mean(0) - X[150_000:160_000].mean(0))
    assert quiet.max() < 0.15


def test_python_m_streams_prints_the_chosen_stream_and_its_moa_line(capsys):
    from streams.__main__ import main

    assert main(["--stream", "waveform", "--n", "3", "--seed", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if " | " in line]
    assert len(rows) == 3 and all(len(row.split(" | ")[0].split()) == 40 for row in rows)
    assert lines[-1] == paper_stream("waveform", seed=2).moa_cli()


def test_python_m_streams_refuses_a_bad_flag_in_one_line(capsys):
    from streams.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(["--n", "0"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: argument --n: Invalid n ('0'). Must be an int >= 1\n"
