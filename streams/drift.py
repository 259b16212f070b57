"""MOA's ConceptDriftStream: a sigmoid blend of two streams, for drift over time."""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba import njit

from streams import java_random as jr
from streams.base import Cursor, MOAStream, check_int_range, check_java_int


@njit(cache=True, error_model="numpy")
def drift_choices(state, position, width, from_drift):
    """Draw which stream each of the next `len(from_drift)` instances comes from.

    `state` is `[48-bit seed, instance counter]`. For instance t (1-based, Java int
    arithmetic): `P = 1 / (1 + exp(-4 (t - position) / width))`; the instance comes from
    the drift stream unless `nextDouble() > P`. Returns how many come from the drift stream.

    """
    seed = state[0]
    t = state[1]
    n_drift = 0
    for i in range(from_drift.shape[0]):
        t = ((t + 1 + 2147483648) & 0xFFFFFFFF) - 2147483648  # Java int counter
        dt = ((t - position + 2147483648) & 0xFFFFFFFF) - 2147483648
        x = -4.0 * float(dt) / float(width)
        seed, u = jr.next_double(seed)
        # Far from the centre the comparison is decided without exp (exactly, whatever
        # exp's last bit): for x <= -40, 1 + exp(x) rounds to 1 so P == 1.0; for x >= 40,
        # 0 <= P < 2**-53 (Java's exp overflows to +inf: P = 0), the smallest non-zero u.
        # A width of 0 (from alpha = 90) gives x = +-inf or NaN, handled alike.
        if x <= -40.0:
            choose_drift = True
        elif x >= 40.0:
            choose_drift = u == 0.0
        else:
            probability = 1.0 / (1.0 + math.exp(x))
            choose_drift = not (u > probability)
        from_drift[i] = choose_drift
        n_drift += choose_drift
    state[0] = seed
    state[1] = t
    return n_drift


@njit(cache=True)
def interleave(from_drift, X_base, y_base, X_drift, y_drift, X, y):
    """Merge the two sub-streams' rows in the drawn order into `X`, `y`."""
    i_base = 0
    i_drift = 0
    for i in range(from_drift.shape[0]):
        if from_drift[i]:
            X[i, :] = X_drift[i_drift, :]
            y[i] = y_drift[i_drift]
            i_drift += 1
        else:
            X[i, :] = X_base[i_base, :]
            y[i] = y_base[i_base]
            i_base += 1


class _DriftCursor(Cursor):
    def __init__(self, state, position, width, base: Cursor, drift: Cursor, n_features):
        self.state = state
        self.position = position
        self.width = width
        self.base = base
        self.drift = drift
        self.n_features = n_features
        self._scratch = None

    def _buffer(self, n):
        # scratch arrays for the two sub-streams, grown when a larger block is asked for
        if self._scratch is None or self._scratch[1].shape[0] < n:
            d = self.n_features
            self._scratch = (
                np.empty((n, d)),
                np.empty(n, dtype=np.int64),
                np.empty((n, d)),
                np.empty(n, dtype=np.int64),
                np.empty(n, dtype=np.bool_),
            )
        return self._scratch

    def fill(self, X, y):
        n = y.shape[0]
        X_base, y_base, X_drift, y_drift, from_drift = self._buffer(n)
        from_drift = from_drift[:n]
        n_drift = drift_choices(self.state, self.position, self.width, from_drift)
        n_base = n - n_drift
        # far from the change point every choice is the same: fill in place
        if n_drift == 0:
            self.base.fill(X, y)
        elif n_base == 0:
            self.drift.fill(X, y)
        else:
            self.base.fill(X_base[:n_base], y_base[:n_base])
            self.drift.fill(X_drift[:n_drift], y_drift[:n_drift])
            interleave(from_drift, X_base, y_base, X_drift, y_drift, X, y)


def width_from_alpha(alpha: float, width: int) -> int:
    """MOA: a non-zero alpha replaces the width by `(int)(1 / tan(alpha * pi / 180))`."""
    if alpha == 0.0:
        return width
    w = 1.0 / math.tan(alpha * math.pi / 180.0)
    # Java's d2i: truncate toward zero, saturate at the int bounds
    return int(max(min(w, jr.JAVA_INT_MAX), jr.JAVA_INT_MIN))


class ConceptDriftStream(MOAStream):
    """MOA's ConceptDriftStream: switches from `stream` to `drift_stream` along a sigmoid.

    For the t-th instance (t = 1, 2, ...) the probability of drawing from `drift_stream`
    is `1 / (1 + exp(-4 (t - position) / width))`: one half at `position`, about 0.982 at
    `position + width`. Only the chosen sub-stream advances. Nesting a ConceptDriftStream
    as `drift_stream` builds a chain of concepts; the inner stream's counter only advances
    on the instances routed to it, so its `position` counts from about the outer
    `position` on.

    Parameters
    ----------
    stream
        The stream before the change (any stream of this package).
    drift_stream
        The stream after the change, with the same number of features and classes.
    position
        MOA's `-p`: the centre of the change, any Java int.
    width
        MOA's `-w`: the length of the change (an integer in [1, 2147483647]).
    alpha
        MOA's `-a`: an angle in [0, 90] degrees; when non-zero it replaces the width by
        `int(1 / tan(alpha * pi / 180))`.
    seed
        MOA's `-r`: the seed (any Java int) of the choices between the two streams.

    Examples
    --------

    >>> from streams import ConceptDriftStream, LEDDrift
    >>> dataset = ConceptDriftStream(
    ...     LEDDrift(seed=1, n_drift_features=0),
    ...     LEDDrift(seed=2, n_drift_features=4),
    ...     position=500, width=100,
    ... )
    >>> dataset.moa_cli()  # doctest: +NORMALIZE_WHITESPACE
    'ConceptDriftStream -s (generators.LEDGeneratorDrift -i 1 -n 10 -d 0)
     -d (generators.LEDGeneratorDrift -i 2 -n 10 -d 4) -p 500 -w 100 -r 1'
    >>> X, y = next(dataset.iter_arrays(chunk_size=1000))
    >>> X.shape
    (1000, 24)

    Notes
    -----
    Iterating again restarts both sub-streams (MOA `restart()`) and also re-seeds the
    choice generator. MOA's own `restart()` keeps that generator running, which cannot
    be reproduced from Python (it would depend on how far the previous iteration was
    read); re-seeding makes every iteration the MOA stream of `moa_cli()` (up to
    `WaveformDrift`'s own restart rule). MOA uses `Math.exp`, which may differ from the C
    library's `exp` by one ulp on rare inputs; a choice can only change if the uniform
    draw falls between the two values (odds about 1e-16 per instance). Pass distinct
    objects as `stream` and `drift_stream` (as MOA's command line builds them): one object
    passed twice is started twice, and a `WaveformDrift`'s second start is a restart.

    """

    def __init__(
        self,
        stream: MOAStream,
        drift_stream: MOAStream,
        position: int = 0,
        width: int = 1000,
        alpha: float = 0.0,
        seed: int = 1,
    ):
        self.stream = stream
        self.drift_stream = drift_stream
        self.position = position
        self.width = width
        self.alpha = alpha
        self.seed = seed
        self._check_params()
        super().__init__(n_features=stream.n_features, n_classes=stream.n_classes)
        self.nominal_attributes = stream.nominal_attributes and drift_stream.nominal_attributes

    def _check_params(self):
        for name in ("stream", "drift_stream"):
            value = getattr(self, name)
            if not isinstance(value, MOAStream):
                raise ValueError(
                    f"Invalid {name} ({value!r}). Must be a stream of this package "
                    "(LED, LEDDrift, Waveform, WaveformDrift, ConceptDriftStream, "
                    "NormalisationFilter)"
                )
        if self.stream.n_features != self.drift_stream.n_features:
            raise ValueError(
                f"Invalid drift_stream ({self.drift_stream!r}): it has "
                f"{self.drift_stream.n_features} features, stream has {self.stream.n_features}"
            )
        if self.stream.n_classes != self.drift_stream.n_classes:
            raise ValueError(
                f"Invalid drift_stream ({self.drift_stream!r}): it has "
                f"{self.drift_stream.n_classes} classes, stream has {self.stream.n_classes}"
            )
        check_java_int("position", self.position)
        check_int_range("width", self.width, 1, jr.JAVA_INT_MAX)
        alpha = self.alpha
        if (
            isinstance(alpha, bool)
            or not isinstance(alpha, numbers.Real)
            or not 0.0 <= float(alpha) <= 90.0
        ):
            raise ValueError(f"Invalid alpha ({alpha!r}). Valid range is [0.0, 90.0]")
        check_java_int("seed", self.seed)

    @property
    def effective_width(self) -> int:
        """The width MOA uses: `width`, or the one derived from a non-zero `alpha`."""
        return width_from_alpha(float(self.alpha), int(self.width))

    def _cursor(self, restart):
        state = np.array([jr.initial_seed(self.seed), 0], dtype=np.int64)
        return _DriftCursor(
            state,
            int(self.position),
            self.effective_width,
            self.stream.start(),
            self.drift_stream.start(),
            self.n_features,
        )

    def moa_cli(self) -> str:
        alpha = f" -a {float(self.alpha)!r}" if self.alpha != 0 else ""
        return (
            f"ConceptDriftStream -s ({self.stream.moa_cli()}) -d ({self.drift_stream.moa_cli()})"
            f" -p {int(self.position)} -w {int(self.width)}{alpha} -r {int(self.seed)}"
        )
