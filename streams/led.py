"""MOA's LEDGenerator and LEDGeneratorDrift, bit for bit.

The seven-segment display of a digit, each segment flipped with probability
`noise_percentage` %, plus 17 random irrelevant bits; the drift variant swaps the first
`n_drift_features` segments with irrelevant attributes. The algorithm, from MOA's source,
is in `shared/docs/MOA_GENERATORS.md`.

"""

from __future__ import annotations

import numpy as np
from numba import njit

from streams import java_random as jr
from streams.base import Cursor, MOAStream, check_bool, check_int_range, check_java_int

# Segment patterns of the digits 0..9 in MOA's attribute order.
SEGMENTS = np.array(
    [
        [1, 1, 1, 0, 1, 1, 1],
        [0, 0, 1, 0, 0, 1, 0],
        [1, 0, 1, 1, 1, 0, 1],
        [1, 0, 1, 1, 0, 1, 1],
        [0, 1, 1, 1, 0, 1, 0],
        [1, 1, 0, 1, 0, 1, 1],
        [1, 1, 0, 1, 1, 1, 1],
        [1, 0, 1, 0, 0, 1, 0],
        [1, 1, 1, 1, 1, 1, 1],
        [1, 1, 1, 1, 0, 1, 1],
    ],
    dtype=np.int64,
)
N_RELEVANT = 7
N_IRRELEVANT = 17


def _jump_ahead(n_steps):
    """Multipliers and addends of k LCG steps at once: seed_k = (A[k] * seed + C[k]) mod 2**48."""
    A, C = [1], [0]
    for _ in range(n_steps):
        A.append(A[-1] * jr.MULTIPLIER & jr.MASK48)
        C.append((C[-1] * jr.MULTIPLIER + jr.ADDEND) & jr.MASK48)
    return np.array(A, dtype=np.int64), np.array(C, dtype=np.int64)


# An instance takes 1 + 7 + 17 draws (unless a bounded draw is rejected, odds ~2e-8).
JUMP_A, JUMP_C = _jump_ahead(1 + N_RELEVANT + N_IRRELEVANT)


@njit(cache=True, inline="always")
def _led_row_serial(seed, noise_percentage, pos, X, y, row, n_irrelevant):
    """One instance, draw after draw, exactly as MOA (handles rejected draws)."""
    seed, digit = jr.next_int_bounded(seed, 10)
    for i in range(N_RELEVANT):
        seed, r = jr.next_int_bounded(seed, 100)
        X[row, pos[i]] = SEGMENTS[digit, i] ^ np.int64(r < noise_percentage)
    for i in range(n_irrelevant):
        seed, bit = jr.next_bits(seed, 1)
        X[row, pos[N_RELEVANT + i]] = bit
    y[row] = digit
    return seed


@njit(cache=True)
def led_fill(state, noise_percentage, pos, X, y):
    """Fill `X` [n, d] and `y` [n] with LED instances; attribute i goes to column `pos[i]`.

    `d` is 24, or 7 when irrelevant attributes are suppressed. `state[0]` is the 48-bit
    java.util.Random seed, advanced in place. MOA draws `nextInt(10)`, seven
    `nextInt(100)` noise tests (flip when `1 + r <= noise`) and `nextInt(2)` per
    irrelevant bit. All draws of an instance are computed straight from its starting seed
    by jump-ahead (independent multiplies instead of one long dependency chain); the rare
    instance with a rejected bounded draw is redone draw by draw.

    """
    seed = state[0]
    n_irrelevant = X.shape[1] - N_RELEVANT
    n_draws = 1 + N_RELEVANT + n_irrelevant
    for row in range(X.shape[0]):
        u = ((JUMP_A[1] * seed + JUMP_C[1]) & jr.MASK48) >> 17
        digit = u % 10
        rejected = u - digit + 9 >= 2147483648
        for i in range(N_RELEVANT):
            u = ((JUMP_A[2 + i] * seed + JUMP_C[2 + i]) & jr.MASK48) >> 17
            r = u % 100
            rejected |= u - r + 99 >= 2147483648
            X[row, pos[i]] = SEGMENTS[digit, i] ^ np.int64(r < noise_percentage)
        for i in range(n_irrelevant):
            # nextInt(2) == next(31) >> 30 == the top bit of the 48-bit seed
            k = 2 + N_RELEVANT + i
            X[row, pos[N_RELEVANT + i]] = ((JUMP_A[k] * seed + JUMP_C[k]) & jr.MASK48) >> 47
        y[row] = digit
        if rejected:
            seed = _led_row_serial(seed, noise_percentage, pos, X, y, row, n_irrelevant)
        else:
            seed = (JUMP_A[n_draws] * seed + JUMP_C[n_draws]) & jr.MASK48
    state[0] = seed


class _LEDCursor(Cursor):
    def __init__(self, state, noise_percentage, pos):
        self.state = state
        self.noise_percentage = noise_percentage
        self.pos = pos

    def fill(self, X, y):
        led_fill(self.state, self.noise_percentage, self.pos, X, y)


class LED(MOAStream):
    """MOA's LED generator (`generators.LEDGenerator`), instance for instance.

    Predict the digit (0..9) shown on a seven-segment display whose segments are each
    flipped with probability `noise_percentage` %. The first 7 attributes are the
    segments, the 17 others are random bits. Values are 0.0 or 1.0.

    Parameters
    ----------
    seed
        MOA's `-i` (instanceRandomSeed): any Java int, negative ones too.
    noise_percentage
        MOA's `-n`: the percentage (an integer in [0, 100]) of segments flipped.
    irrelevant_features
        Whether to add the 17 irrelevant attributes (MOA's `-s` flag suppresses them).

    Examples
    --------

    >>> from streams import LED
    >>> dataset = LED(seed=1)
    >>> dataset.moa_cli()
    'generators.LEDGenerator -i 1 -n 10'
    >>> for x, y in dataset.take(2):
    ...     print([int(v) for v in x.values()], y)
    [1, 1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0] 5
    [1, 1, 1, 0, 1, 1, 0, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1] 9

    The same stream as numpy blocks:

    >>> X, y = next(LED(seed=1).iter_arrays(chunk_size=3))
    >>> X.shape, y.tolist()
    ((3, 24), [5, 9, 2])

    Notes
    -----
    MOA tests noise with `1 + nextInt(100) <= noise_percentage` and draws it even when
    the noise is 0 (River's `synth.LED` does neither, so it cannot match MOA). Iterating
    again restarts the stream: `new Random(seed)`, as MOA's `restart()`.

    References
    ----------
    [^1]: Breiman, L., Friedman, J., Olshen, R., Stone, C. (1984). Classification and
    Regression Trees. Wadsworth.
    [^2]: Bifet, A., Holmes, G., Kirkby, R., Pfahringer, B. (2010). MOA: Massive Online
    Analysis. JMLR 11, 1601-1604.

    """

    nominal_attributes = True
    _moa_class = "generators.LEDGenerator"

    def __init__(self, seed: int = 1, noise_percentage: int = 10, irrelevant_features: bool = True):
        self.seed = seed
        self.noise_percentage = noise_percentage
        self.irrelevant_features = irrelevant_features
        self._check_params()
        n_features = N_RELEVANT + (N_IRRELEVANT if irrelevant_features else 0)
        super().__init__(n_features=n_features, n_classes=10)

    def _check_params(self):
        check_java_int("seed", self.seed)
        check_int_range("noise_percentage", self.noise_percentage, 0, 100)
        check_bool("irrelevant_features", self.irrelevant_features)

    def positions(self) -> np.ndarray:
        """Column of each generated attribute (MOA's `numberAttribute` array)."""
        return np.arange(self.n_features, dtype=np.int64)

    def _cursor(self, restart):
        return _LEDCursor(jr.new_state(self.seed), int(self.noise_percentage), self.positions())

    def _moa_options(self) -> str:
        flags = "" if self.irrelevant_features else " -s"
        return f"-i {int(self.seed)} -n {int(self.noise_percentage)}{flags}"

    def moa_cli(self) -> str:
        return f"{self._moa_class} {self._moa_options()}"


class LEDDrift(LED):
    """MOA's LED generator with swapped attributes (`generators.LEDGeneratorDrift`).

    The first `n_drift_features` segments trade places with the first irrelevant
    attributes: segment i is written to attribute 7 + i and irrelevant bit i to attribute
    i. The permutation is fixed, so the stream is stationary; drift over time comes from
    chaining concepts with `ConceptDriftStream`.

    Parameters
    ----------
    seed
        MOA's `-i`: any Java int.
    noise_percentage
        MOA's `-n`: the percentage (an integer in [0, 100]) of segments flipped.
    irrelevant_features
        Whether to add the 17 irrelevant attributes (MOA's `-s` flag suppresses them;
        without them nothing is swapped).
    n_drift_features
        MOA's `-d`: how many segments (an integer in [0, 7]) are swapped.

    Examples
    --------

    >>> from streams import LEDDrift
    >>> dataset = LEDDrift(seed=1, n_drift_features=4)
    >>> dataset.moa_cli()
    'generators.LEDGeneratorDrift -i 1 -n 10 -d 4'
    >>> x, y = next(iter(dataset))
    >>> [int(v) for v in x.values()], y
    ([1, 1, 0, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0], 5)

    Notes
    -----
    MOA's random offsets for the swap are hard-coded to 0, so no random number is drawn
    at preparation and `LEDDrift(n_drift_features=0)` is exactly the `LED` stream.

    """

    _moa_class = "generators.LEDGeneratorDrift"

    def __init__(
        self,
        seed: int = 1,
        noise_percentage: int = 10,
        irrelevant_features: bool = True,
        n_drift_features: int = 1,
    ):
        self.n_drift_features = n_drift_features
        super().__init__(
            seed=seed, noise_percentage=noise_percentage, irrelevant_features=irrelevant_features
        )

    def _check_params(self):
        super()._check_params()
        check_int_range("n_drift_features", self.n_drift_features, 0, N_RELEVANT)

    def positions(self):
        pos = np.arange(self.n_features, dtype=np.int64)
        if self.irrelevant_features:
            for i in range(self.n_drift_features):
                pos[i], pos[N_RELEVANT + i] = N_RELEVANT + i, i
        return pos

    def _moa_options(self):
        return f"{super()._moa_options()} -d {int(self.n_drift_features)}"
