from __future__ import annotations

import shutil

import pytest

from evaluation.bench import streams as bench

KEYS = {
    "stream",
    "implementation",
    "instances_per_s",
    "wall_instances_per_s",
    "ratio",
    "n_instances",
    "seconds",
    "cpu_seconds",
    "detail",
}
java_missing = shutil.which("java") is None or bench.moa_jar() is None


def check_shape(rows, n_streams=2):
    assert len(rows) == 2 * n_streams
    assert all(set(row) == KEYS for row in rows)
    ours, theirs = rows[0::2], rows[1::2]
    assert [row["stream"] for row in ours] == [row["stream"] for row in theirs]
    assert [row["stream"] for row in ours] == [label for label, _ in bench.STREAMS]
    for row in ours:
        assert row["implementation"].startswith("river-dhbm array path")
        assert row["instances_per_s"] > 0 and row["wall_instances_per_s"] > 0
        assert len(row["seconds"]) == len(row["cpu_seconds"]) == 2
    return ours, theirs


def test_rows_without_moa():
    rows = bench.bench_streams(n_instances=3000, repeats=2, chunk_size=1000, moa=False)
    ours, theirs = check_shape(rows)
    assert all(row["n_instances"] == 3000 for row in ours)
    assert all(row["instances_per_s"] is None and row["ratio"] is None for row in rows[1::2])
    table = bench.format_table(rows).splitlines()
    assert len(table) == 2 + len(rows)
    assert table[0].startswith("| stream | implementation |")
    assert "not measured" in table[3]


def test_unavailable_without_java(monkeypatch):
    monkeypatch.setattr(bench.shutil, "which", lambda name: None)
    rows = bench.bench_streams(n_instances=1000, repeats=2)
    _, theirs = check_shape(rows)
    assert all(row["detail"].startswith("unavailable") for row in theirs)
    assert "unavailable" in bench.format_table(rows)


@pytest.mark.skipif(java_missing, reason="needs java and capymoa's moa.jar")
def test_rows_with_moa():
    n = 2000
    rows = bench.bench_streams(n_instances=n, repeats=2, warmup=n)
    ours, theirs = check_shape(rows)
    for mine, moa in zip(ours, theirs):
        assert moa["instances_per_s"] > 0 and moa["wall_instances_per_s"] > 0, moa["detail"]
        assert len(moa["seconds"]) == len(moa["cpu_seconds"]) == 2
        assert moa["n_instances"] == n and moa["ratio"] == 1.0
        assert mine["ratio"] == pytest.approx(mine["instances_per_s"] / moa["instances_per_s"])
    led = bench.streams.LEDDrift(noise_percentage=10, n_drift_features=4)
    assert theirs[0]["detail"] == led.moa_cli()


@pytest.mark.slow
@pytest.mark.skipif(java_missing, reason="needs java and capymoa's moa.jar")
def test_jpype_fallback_without_javac(monkeypatch):
    which = shutil.which
    no_javac = lambda name: None if name == "javac" else which(name)  # noqa: E731
    monkeypatch.setattr(bench.shutil, "which", no_javac)
    rows = bench.bench_streams(n_instances=2000, repeats=2)
    _, theirs = check_shape(rows)
    assert all("capymoa" in row["implementation"] and row["instances_per_s"] > 0 for row in theirs)


def test_invalid_arguments():
    with pytest.raises(ValueError, match=r"n_instances \(0\)\. Must be >= 1"):
        bench.bench_streams(n_instances=0)
    with pytest.raises(ValueError, match=r"repeats \(0\)\. Must be >= 1"):
        bench.bench_streams(repeats=0)
