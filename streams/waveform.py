"""MOA's WaveformGenerator and WaveformGeneratorDrift, bit for bit.

Each instance mixes two of three triangular base waves with a random weight and adds
Gaussian noise; optionally 19 pure-noise attributes follow. The drift variant swaps a
window of attributes chosen by two random draws at preparation. The algorithm, from MOA's
source, is in `shared/docs/MOA_GENERATORS.md`.

"""

from __future__ import annotations

import numpy as np
from numba import njit

from streams import java_random as jr
from streams.base import Cursor, MOAStream, check_bool, check_int_range, check_java_int

# The three base waves h1, h2, h3 over the 21 relevant attributes.
WAVES = np.array(
    [
        [0, 1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1, 0],
        [0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0],
    ],
    dtype=np.float64,
)
# Class c mixes waves WAVE_A[c] and WAVE_B[c].
WAVE_A = np.array([0, 0, 1], dtype=np.int64)
WAVE_B = np.array([1, 2, 2], dtype=np.int64)
N_RELEVANT = 21
N_WITH_NOISE = 40


@njit(cache=True)
def waveform_fill(state, pos, X, y):
    """Fill `X` [n, d] and `y` [n] with Waveform instances; attribute i goes to `pos[i]`.

    `d` is 21, or 40 with the noise attributes. `state` is a java_random state array
    (seed and cached Gaussian), advanced in place.

    """
    seed, has_cached, cached = state[0], state[1] != 0, jr.bits_to_double(state[2])
    for row in range(X.shape[0]):
        seed, c = jr.next_int_bounded(seed, 3)
        a = WAVE_A[c]
        b = WAVE_B[c]
        seed, mult_a = jr.next_double(seed)
        mult_b = 1.0 - mult_a
        for i in range(N_RELEVANT):
            seed, has_cached, cached, g = jr.next_gaussian(seed, has_cached, cached)
            X[row, pos[i]] = (mult_a * WAVES[a, i]) + (mult_b * WAVES[b, i]) + g
        for i in range(N_RELEVANT, X.shape[1]):
            seed, has_cached, cached, g = jr.next_gaussian(seed, has_cached, cached)
            X[row, pos[i]] = g
        y[row] = c
    state[0], state[1], state[2] = seed, has_cached, jr.double_to_bits(cached)


class _WaveformCursor(Cursor):
    def __init__(self, state, pos):
        self.state = state
        self.pos = pos

    def fill(self, X, y):
        waveform_fill(self.state, self.pos, X, y)


class Waveform(MOAStream):
    """MOA's Waveform generator (`generators.WaveformGenerator`), instance for instance.

    Three classes; each instance is a random convex mix of two of three triangular waves
    over 21 attributes plus standard Gaussian noise, optionally followed by 19 attributes
    of pure noise. Values are raw (roughly -5 to 9), not normalised.

    Parameters
    ----------
    seed
        MOA's `-i` (instanceRandomSeed): any Java int, negative ones too.
    has_noise
        MOA's `-n` flag: add the 19 noise attributes (40 attributes instead of 21).

    Examples
    --------

    >>> from streams import Waveform
    >>> dataset = Waveform(seed=1, has_noise=True)
    >>> dataset.moa_cli()
    'generators.WaveformGenerator -i 1 -n'
    >>> x, y = next(iter(dataset))
    >>> len(x), y, round(x[0], 6)
    (40, 0, -0.092386)

    Notes
    -----
    `nextGaussian` uses `StrictMath.log`; this port uses fdlibm's algorithm too (glibc's
    log differs on about 7 % of inputs). Iterating again restarts the stream
    (`new Random(seed)`, as MOA's `restart()`).

    References
    ----------
    [^1]: Breiman, L., Friedman, J., Olshen, R., Stone, C. (1984). Classification and
    Regression Trees. Wadsworth.

    """

    _moa_class = "generators.WaveformGenerator"

    def __init__(self, seed: int = 1, has_noise: bool = False):
        self.seed = seed
        self.has_noise = has_noise
        self._check_params()
        super().__init__(n_features=N_WITH_NOISE if has_noise else N_RELEVANT, n_classes=3)

    def _check_params(self):
        check_java_int("seed", self.seed)
        check_bool("has_noise", self.has_noise)

    def positions(self) -> np.ndarray:
        """Column of each generated attribute (MOA's `numberAttribute` array)."""
        return np.arange(self.n_features, dtype=np.int64)

    def _cursor(self, restart):
        return _WaveformCursor(jr.new_state(self.seed), self.positions())

    def _moa_options(self) -> str:
        return f"-i {int(self.seed)}" + (" -n" if self.has_noise else "")

    def moa_cli(self) -> str:
        return f"{self._moa_class} {self._moa_options()}"


def waveform_drift_positions(seed: int, n_features: int, n_drift_features: int):
    """MOA's attribute permutation of WaveformGeneratorDrift and the rng state after it.

    Returns `(pos, state)`: two `nextInt(n_features)` draws `r`, `o` from `Random(seed)`,
    then for i < n_drift_features swap `pos[(i + r) % n]` and `pos[(i + o) % n]`.

    """
    state = jr.new_state(seed)
    draws = np.empty(2, dtype=np.int64)
    jr.fill_next_int(state, n_features, draws)
    r, o = int(draws[0]), int(draws[1])
    pos = np.arange(n_features, dtype=np.int64)
    for i in range(n_drift_features):
        p, q = (i + r) % n_features, (i + o) % n_features
        pos[p], pos[q] = pos[q], pos[p]
    return pos, state


class WaveformDrift(Waveform):
    """MOA's Waveform generator with swapped attributes (`generators.WaveformGeneratorDrift`).

    At preparation MOA draws two offsets `r`, `o` (`nextInt(d)` each, d = 21 or 40) from
    the instance generator and swaps attributes `(i + r) % d` and `(i + o) % d` for
    i < `n_drift_features`. The permutation is fixed, so the stream is stationary; drift
    over time comes from chaining concepts with `ConceptDriftStream`.

    Parameters
    ----------
    seed
        MOA's `-i`: any Java int.
    has_noise
        MOA's `-n` flag: 40 attributes instead of 21.
    n_drift_features
        MOA's `-d`: the length (an integer in [0, 40]) of the swapped window.

    Attributes
    ----------
    positions_
        The permutation: generated attribute i is written to column `positions_[i]`.

    Examples
    --------

    >>> from streams import WaveformDrift
    >>> dataset = WaveformDrift(seed=1, has_noise=True, n_drift_features=10)
    >>> dataset.moa_cli()
    'generators.WaveformGeneratorDrift -i 1 -n -d 10'
    >>> X, y = next(dataset.iter_arrays(chunk_size=100))
    >>> X.shape, y[:5].tolist()
    ((100, 40), [1, 1, 2, 2, 2])

    Notes
    -----
    Restart semantics follow MOA. The two draws consume random numbers, so
    `WaveformDrift(n_drift_features=0)` is NOT the `Waveform` stream. The first iteration
    of an object is MOA's freshly prepared stream; every later iteration (either path) is
    MOA's `restart()`: `new Random(seed)` with the permutation kept and the two draws not
    repeated, so it differs from the first one (and equals every later one). A new
    object always starts with the freshly prepared stream, as `moa_cli()` does in MOA.
    When `r == o` (about 1 seed in d) nothing moves; with noise the window may move only
    noise attributes (`paper_stream` picks its seeds so that this cannot happen).

    """

    _moa_class = "generators.WaveformGeneratorDrift"

    def __init__(self, seed: int = 1, has_noise: bool = False, n_drift_features: int = 0):
        self.n_drift_features = n_drift_features
        super().__init__(seed=seed, has_noise=has_noise)
        self.positions_, self._prepared_state = waveform_drift_positions(
            self.seed, self.n_features, self.n_drift_features
        )

    def _check_params(self):
        super()._check_params()
        check_int_range("n_drift_features", self.n_drift_features, 0, N_WITH_NOISE)

    def positions(self):
        return self.positions_.copy()

    def _cursor(self, restart):
        state = jr.new_state(self.seed) if restart else self._prepared_state.copy()
        return _WaveformCursor(state, self.positions())

    def _moa_options(self):
        return f"{super()._moa_options()} -d {int(self.n_drift_features)}"
