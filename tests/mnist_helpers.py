"""Shared by the MNIST tests: IDX writers, scikit-learn's 8x8 digits standing in for MNIST,
a softmax stand-in model and the `mnist` subcommand's parser."""

from __future__ import annotations

import argparse
import gzip
import struct

import numpy as np

from evaluation.offline.mnist import experiment as mnist
from river_dhbm.base import HybridClassifier


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file holding `array` (uint8 or int32), written by hand from the format spec."""
    code = {np.dtype(np.uint8): 0x08, np.dtype(">i4"): 0x0C}[array.dtype]
    header = bytes([0, 0, code, array.ndim]) + b"".join(struct.pack(">I", n) for n in array.shape)
    return header + array.tobytes()


def write_idx(path, array, compress=False):
    data = idx_bytes(array)
    if compress:
        path = path.with_name(path.name + ".gz")
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


def digits_as_mnist(directory=None):
    """scikit-learn's digits (1,797 8x8 images, gray levels 0..16 stretched to 0..240) as an
    `MNIST` (first 1,400 images to train, the rest to test), optionally also as IDX files."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images * 15).astype(np.uint8)
    labels = digits.target.astype(np.uint8)
    if directory is not None:
        parts = (images[:1400], labels[:1400], images[1400:], labels[1400:])
        for name, array, gz in zip(mnist.FILES, parts, (True, False, False, True)):
            write_idx(directory / name, np.ascontiguousarray(array), compress=gz)
    return mnist.MNIST(images[:1400].reshape(1400, -1), labels[:1400].astype(np.int64),
                       images[1400:].reshape(-1, 64), labels[1400:].astype(np.int64))


class SoftmaxStandIn(HybridClassifier):
    """Stand-in model: softmax regression by SGD on the labeled rows of each mini-batch, with
    the DHBM's hyper-parameter names. Records what it was given."""

    def __init__(self, learning_rate=0.5, beta=0.0, beta_schedule=None, batch_size=20,
                 seed=None):
        super().__init__(batch_size=batch_size, seed=seed)
        self.learning_rate = learning_rate
        self.beta = beta
        self.beta_schedule = beta_schedule
        self._reset_state()
        self.batches = []

    def _init_params(self, n_features):
        self._W = np.zeros((n_features, 0))
        self._b = np.zeros(0)

    def _add_class(self):
        self._W = np.hstack([self._W, np.zeros((len(self._W), 1))])
        self._b = np.append(self._b, 0.0)

    def _update(self, X, y, P=None):
        self.batches.append(y.copy())
        lab = y >= 0
        if lab.any():
            P = self._proba(X[lab])
            P[np.arange(lab.sum()), y[lab]] -= 1.0
            self._W -= self.learning_rate * X[lab].T @ P / lab.sum()
            self._b -= self.learning_rate * P.mean(axis=0)

    def _proba(self, X):
        Z = X @ self._W + self._b
        Z = np.exp(Z - Z.max(axis=1, keepdims=True))
        return Z / Z.sum(axis=1, keepdims=True)


def stand_in(spec, n_features, n_classes):
    params = spec.model_params()
    return SoftmaxStandIn(learning_rate=params.get("learning_rate", 0.5),
                          beta=params.get("beta", 0.0), beta_schedule=params["beta_schedule"],
                          batch_size=params["batch_size"], seed=spec.seed)


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m evaluation")
    mnist.add_arguments(parser.add_subparsers(dest="command").add_parser("mnist"))
    return parser.parse_args(argv)
