"""MNIST for the paper's offline experiment: the IDX files, the images as pixels, the split.

`load_mnist(DIR)` reads the four standard IDX files (raw or `.gz`) from `DIR` (or from the
directory in `$RIVER_DHBM_MNIST`); `split_indices` draws the 100 labeled and 1,000 validation
images, balanced over the classes.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import os
import zlib
from pathlib import Path

import numpy as np

__all__ = [
    "ENV_VAR", "FILES", "MNIST", "MissingData", "find_files", "load_mnist", "pixels",
    "read_idx", "split_indices",
]

ENV_VAR = "RIVER_DHBM_MNIST"

#: The four files, in the order train images, train labels, test images, test labels.
FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)


class MissingData(Exception):
    """No data set where we looked (MNIST, or 20 NewsGroups' copy): the message says what
    is expected where."""


# ---------------------------------------------------------------------------------- IDX files

_IDX_TYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def _read_bytes(path: Path) -> bytes:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            return f.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise ValueError(f"{str(path)!r} is not a valid gzip file: {e}") from None
    except OSError as e:  # unreadable: permissions, a directory of that name, I/O errors
        raise ValueError(f"{str(path)!r} cannot be read: {e.strerror or e}") from None


def read_idx(path) -> np.ndarray:
    """The array stored in the IDX file `path` (gzip-compressed when its name ends in `.gz`).

    The format (LeCun's MNIST page): two zero bytes, a type code (0x08 unsigned byte, 0x09
    signed byte, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64), the number of
    dimensions, each dimension as a big-endian int32, then the values in C order.
    A bad header or a size that does not match the dimensions raises `ValueError`.

    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(
            f"{str(path)!r} is not an IDX file: bad magic number {data[:4].hex() or '(empty)'}"
        )
    dtype, ndim = _IDX_TYPES[data[2]], data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{str(path)!r} is truncated: the header needs {header} bytes")
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = header + math.prod(shape) * dtype.itemsize
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "too long"
        raise ValueError(
            f"{str(path)!r} is {what}: shape {shape} needs {expected} bytes, found {len(data)}"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def _missing_message(directory) -> str:
    names = ", ".join(FILES)
    if directory is None:
        return (f"no MNIST directory given: pass --data DIR or set {ENV_VAR}; the directory "
                f"must hold {names} (raw or .gz)")
    return f"MNIST not found: expected {names} (raw or .gz) in {str(directory)!r}"


def find_files(directory) -> list[Path]:
    """The paths of the four MNIST files in `directory` (each raw, `.gz`, or with a dot before
    `idx` as some copies name them); `MissingData` if any is missing."""
    if directory is None or not Path(directory).is_dir():
        raise MissingData(_missing_message(directory))
    directory = Path(directory)
    found = []
    for name in FILES:
        dotted = name.replace("-idx", ".idx")
        candidates = [directory / f"{n}{ext}" for n in (name, dotted) for ext in ("", ".gz")]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            raise MissingData(_missing_message(directory))
        found.append(path)
    return found


@dataclasses.dataclass(frozen=True)
class MNIST:
    """Images as uint8 `[n, 784]` (scale with `pixels`), labels as int64 `[n]`."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


def _images(array: np.ndarray, path: Path) -> np.ndarray:
    if array.ndim < 2:
        raise ValueError(f"{str(path)!r} holds a {array.ndim}-d array, expected images")
    return array.reshape(len(array), -1)


def _labels(array: np.ndarray, path: Path, n: int) -> np.ndarray:
    if array.ndim != 1 or len(array) != n:
        raise ValueError(f"{str(path)!r} holds labels of shape {array.shape}, expected ({n},)")
    return array.astype(np.int64)


def load_mnist(directory=None) -> MNIST:
    """MNIST from `directory`, else from the directory named by `$RIVER_DHBM_MNIST`."""
    if directory is None:
        directory = os.environ.get(ENV_VAR) or None
    paths = find_files(directory)
    train_x, test_x = _images(read_idx(paths[0]), paths[0]), _images(read_idx(paths[2]), paths[2])
    if train_x.shape[1] != test_x.shape[1]:
        raise ValueError(f"{str(paths[2])!r} holds images of {test_x.shape[1]} pixels, the "
                         f"training images {train_x.shape[1]}")
    return MNIST(
        train_images=train_x,
        train_labels=_labels(read_idx(paths[1]), paths[1], len(train_x)),
        test_images=test_x,
        test_labels=_labels(read_idx(paths[3]), paths[3], len(test_x)),
    )


def pixels(images: np.ndarray) -> np.ndarray:
    """Gray levels in [0, 255] (uint8) -> float64 in [0, 1] (floats are taken as scaled)."""
    if images.dtype == np.uint8:
        return images.astype(np.float64) / 255.0
    return np.asarray(images, dtype=np.float64)


# ---------------------------------------------------------------------------------- protocol


def _quotas(total: int, classes: np.ndarray, rng: np.random.Generator) -> dict:
    """`total` spread over `classes` as evenly as possible; the remainder goes to classes
    drawn at random."""
    base, extra = divmod(total, len(classes))
    lucky = set(rng.choice(classes, size=extra, replace=False).tolist()) if extra else set()
    return {int(c): base + (1 if int(c) in lucky else 0) for c in classes}


def split_indices(labels, n_labeled: int = 100, n_validation: int = 1000, seed: int = 0):
    """Indices of (labeled, validation, unlabeled) rows: the first two balanced over the
    classes and disjoint, the unlabeled rows everything else; all three sorted.

    Seeded: the same `labels`, sizes and `seed` give the same split.

    """
    labels = np.asarray(labels)
    for name, value in (("n_labeled", n_labeled), ("n_validation", n_validation)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"Invalid {name} ({value!r}). Must be an int >= 0")
    classes = np.unique(labels)
    if n_labeled < len(classes):
        raise ValueError(
            f"Invalid n_labeled ({n_labeled}). Must be at least the number of classes "
            f"({len(classes)}) to balance them"
        )
    rng = np.random.default_rng(seed)
    lab_quota, val_quota = _quotas(n_labeled, classes, rng), _quotas(n_validation, classes, rng)
    labeled, validation = [], []
    for c in classes.tolist():
        rows = rng.permutation(np.flatnonzero(labels == c))
        need = lab_quota[c] + val_quota[c]
        if need > len(rows):
            raise ValueError(
                f"Class {c} has {len(rows)} rows, fewer than the {need} the split needs "
                f"(n_labeled={n_labeled}, n_validation={n_validation})"
            )
        labeled.append(rows[: lab_quota[c]])
        validation.append(rows[lab_quota[c] : need])
    labeled = np.sort(np.concatenate(labeled))
    validation = np.sort(np.concatenate(validation))
    unlabeled = np.setdiff1d(np.arange(len(labels)), np.concatenate([labeled, validation]))
    return labeled, validation, unlabeled
