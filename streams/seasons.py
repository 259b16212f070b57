"""A binary stream that drifts the way real sensor data do: seasons, a slow trend, persistent
weather, long-tailed features and a class prior that moves with all three.

Real drifting streams (daily weather, electricity prices, sensor logs) differ from the textbook
generators in ways that matter at scarce labels: the class prior moves (in a season, over years),
the features' distributions move with it, several features have long tails (a few huge values
squash a min-max scale into a narrow band), consecutive rows are alike, and the labels say only a
little more than the prior does. `Seasons` has each of these, in a shape that no model here was
built after: rain tomorrow from eight readings of today.

Every row `t` (a day) has a season `phi = 2 pi t / period`, a trend `c` (a random walk kept in
[-1, 1], steps of `trend_step`) and a persistent weather state `w` (AR(1), coefficient 0.8, unit
variance). The label is 1 with probability `sigmoid(-0.9 + 0.8 sin(phi) + 0.6 c + w)`; the
features, given the label, the season and the weather (none of them standardized):

====  ==================  =================================================================
 x    reading             distribution
====  ==================  =================================================================
 0    temperature         normal, mean `12 + 12 sin(phi - 0.4) + 3 c + w`, sd 4
 1    dew-point spread    gamma, shape 2, scale `2.5 (1 - 0.15 y (1 + 0.5 cos phi))`
 2    humidity            `100 sigmoid(0.6 + 0.25 y (1 + 0.5 cos phi) + 0.15 w + N(0, 1))`
 3    pressure            normal, mean `1015 - 1.5 y - 1.2 w + 4 cos(phi)`, sd 7
 4    wind                log-normal, `exp(1 + 0.12 y + 0.2 sin(phi) + N(0, 0.6))`
 5    gust                wind times `1.4 + exp(N(0, 0.7))`
 6    precipitation       0, or with probability `sigmoid(-1.2 + 0.4 y + 0.3 w)`
                          log-normal `exp(N(0, 1.3))`
 7    visibility          `max(0.1, 10 - gamma(1, 1.5 (1 + 0.35 y)))`
====  ==================  =================================================================

With the default period and trend, the class prior's yearly mean moves between about 0.2 and
0.45 over decades, and within a year by as much again.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from river import datasets

from streams.base import check_int_range

__all__ = ["Seasons"]

FEATURES = ("temperature", "dew_spread", "humidity", "pressure", "wind", "gust", "precipitation",
            "visibility")


class Seasons(datasets.base.SyntheticDataset):
    """Rain tomorrow from today's readings, over decades of seasons (see the module).

    Parameters
    ----------
    seed
        Seed of every draw.
    period
        Rows per season cycle (a year of days).
    trend_step
        Standard deviation of the trend's daily step.

    Examples
    --------
    >>> import streams
    >>> x, y = next(iter(streams.Seasons(seed=1)))
    >>> sorted(x) == sorted(streams.seasons.FEATURES), y in (0, 1)
    (True, True)

    """

    def __init__(self, seed: int | None = None, period: int = 365, trend_step: float = 0.01):
        super().__init__(task=datasets.base.BINARY_CLF, n_features=len(FEATURES))
        self.seed = seed
        self.period = check_int_range("period", period, 2, 10**9)
        if not (isinstance(trend_step, (int, float)) and 0.0 <= trend_step <= 1.0):
            raise ValueError(f"Invalid trend_step ({trend_step!r}). Must be in [0, 1]")
        self.trend_step = float(trend_step)

    def __iter__(self):
        rng = np.random.default_rng(self.seed)
        trend, weather = 0.0, rng.normal()
        for t in itertools.count():
            phi = 2.0 * math.pi * t / self.period
            trend = min(1.0, max(-1.0, trend + self.trend_step * rng.normal()))
            weather = 0.8 * weather + 0.6 * rng.normal()
            logit = -0.9 + 0.8 * math.sin(phi) + 0.6 * trend + weather
            y = int(rng.random() < 1.0 / (1.0 + math.exp(-logit)))
            strength = y * (1.0 + 0.5 * math.cos(phi))  # the label shows more in winter
            wind = math.exp(1.0 + 0.12 * y + 0.2 * math.sin(phi) + 0.6 * rng.normal())
            wet = rng.random() < 1.0 / (1.0 + math.exp(1.2 - 0.4 * y - 0.3 * weather))
            x = {
                "temperature": 12 + 12 * math.sin(phi - 0.4) + 3 * trend + weather
                + 4 * rng.normal(),
                "dew_spread": rng.gamma(2.0, 2.5 * (1.0 - 0.15 * strength)),
                "humidity": 100.0 / (1.0 + math.exp(-(0.6 + 0.25 * strength + 0.15 * weather
                                                       + rng.normal()))),
                "pressure": 1015 - 1.5 * y - 1.2 * weather + 4 * math.cos(phi) + 7 * rng.normal(),
                "wind": wind,
                "gust": wind * (1.4 + math.exp(0.7 * rng.normal())),
                "precipitation": math.exp(1.3 * rng.normal()) if wet else 0.0,
                "visibility": max(0.1, 10.0 - rng.gamma(1.0, 1.5 * (1.0 + 0.35 * y))),
            }
            yield x, y
