"""evaluation.offline.mnist.data: IDX files, loading, pixels, the balanced split."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
from mnist_helpers import digits_as_mnist, idx_bytes, parse, write_idx  # noqa: F401

from evaluation.offline.mnist import experiment as mnist


@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_round_trip(tmp_path, compress):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    path = write_idx(tmp_path / "images-idx3-ubyte", images, compress)
    out = mnist.read_idx(path)
    assert out.shape == (2, 3, 4) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, images)


def test_read_idx_big_endian_int32(tmp_path):
    values = np.array([1, -2, 70000], dtype=">i4")
    out = mnist.read_idx(write_idx(tmp_path / "ints", values))
    assert out.tolist() == [1, -2, 70000]


def test_read_idx_rejects_bad_magic(tmp_path):
    path = tmp_path / "bad"
    path.write_bytes(b"\x01\x00\x08\x01" + struct.pack(">I", 1) + b"\x05")
    with pytest.raises(ValueError, match="bad magic"):
        mnist.read_idx(path)
    path.write_bytes(b"\x00\x00\x07\x01" + struct.pack(">I", 1) + b"\x05")  # unknown type code
    with pytest.raises(ValueError, match="bad magic"):
        mnist.read_idx(path)


@pytest.mark.parametrize("compress", [False, True])
def test_read_idx_rejects_truncated_and_long_files(tmp_path, compress):
    data = idx_bytes(np.zeros((3, 2, 2), dtype=np.uint8))
    for name, cut, what in (("short", data[:-1], "truncated"), ("header", data[:9], "truncated"),
                            ("long", data + b"\x00", "too long")):
        path = tmp_path / name
        if compress:
            path = tmp_path / f"{name}.gz"
            path.write_bytes(gzip.compress(cut))
        else:
            path.write_bytes(cut)
        with pytest.raises(ValueError, match=what):
            mnist.read_idx(path)


def test_read_idx_rejects_broken_gzip(tmp_path):
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(idx_bytes(np.zeros(5, dtype=np.uint8)))[:-6])
    with pytest.raises(ValueError, match="gzip"):
        mnist.read_idx(path)


def test_load_mnist_mixes_raw_and_gz_and_reads_the_environment(tmp_path, monkeypatch):
    data = digits_as_mnist(tmp_path)
    loaded = mnist.load_mnist(tmp_path)
    np.testing.assert_array_equal(loaded.train_images, data.train_images)
    np.testing.assert_array_equal(loaded.test_labels, data.test_labels)
    assert loaded.train_images.shape == (1400, 64) and loaded.train_labels.dtype == np.int64
    monkeypatch.setenv(mnist.ENV_VAR, str(tmp_path))
    assert mnist.load_mnist().test_images.shape == (397, 64)


def test_pixels_scale_to_unit_interval():
    X = mnist.pixels(np.array([[0, 51, 255]], dtype=np.uint8))
    np.testing.assert_allclose(X, [[0.0, 0.2, 1.0]])


# ---------------------------------------------------------------------------------- missing data


def test_missing_files_name_all_four(tmp_path):
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"")
    with pytest.raises(mnist.MissingData) as info:
        mnist.find_files(tmp_path)
    message = str(info.value)
    assert all(name in message for name in mnist.FILES) and str(tmp_path) in message


def test_split_is_balanced_disjoint_complete_and_seeded():
    labels = np.random.default_rng(0).integers(0, 10, 5000)
    lab, val, unlab = mnist.split_indices(labels, 100, 1000, seed=3)
    assert np.bincount(labels[lab], minlength=10).tolist() == [10] * 10
    assert np.bincount(labels[val], minlength=10).tolist() == [100] * 10
    assert len(np.intersect1d(lab, val)) == 0
    assert sorted(np.concatenate([lab, val, unlab]).tolist()) == list(range(5000))
    again = mnist.split_indices(labels, 100, 1000, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip((lab, val, unlab), again))
    other = mnist.split_indices(labels, 100, 1000, seed=4)
    assert not np.array_equal(lab, other[0])


def test_split_spreads_a_remainder_and_rejects_impossible_sizes():
    labels = np.repeat(np.arange(10), 20)
    lab, val, _ = mnist.split_indices(labels, 25, 13, seed=0)
    counts = np.bincount(labels[lab], minlength=10)
    assert counts.sum() == 25 and set(counts.tolist()) == {2, 3}
    assert set(np.bincount(labels[val], minlength=10).tolist()) == {1, 2}
    with pytest.raises(ValueError, match="fewer than"):
        mnist.split_indices(labels, 100, 150, seed=0)
    with pytest.raises(ValueError, match="n_labeled"):
        mnist.split_indices(labels, 5, 0, seed=0)
