"""What a model does when the concept changes: it watches its labeled rows' errors with River's
drift detectors (ADWIN and DDM by default) and, on an alarm, learns again as a young model does.

A network that has settled on a concept learns the next one slowly: by then its warm start has
brought every update down to one gradient step, its label memory replays rows of the old
concept, and Adam's moments carry the old gradients. ARF and the Hoeffding adaptive tree watch
their own errors with a detector from `river.drift` (ADWIN) and replace what went stale; a
network restarts how it learns instead of what it knows (`restart`): the warm start counts
labels from the alarm on, the label memory is emptied, Adam's moments are zeroed. The weights
stay: a false alarm costs some noisy steps, never the model.

Only a rise of the error is a change to act on: ADWIN also fires when a young model's error
falls, which is the model learning, not the stream changing.

The inputs are watched too (`InputWatch`), every row of them, labeled or not: when a feature
that varied narrows to a fraction of its spread, the stored labeled rows no longer look like the
rows to come (a `MinMaxScaler` in front has stretched its range to an outlier, or a reading
changed meaning), and the model restarts as on an alarm, its linear expert's standardization
too. At 1 % labels the errors take thousands of rows to show a change that the unlabeled rows
show in a few hundred. When the other features held (their spread and mean as before), what
moved is the narrowed features' scale, not the stream: the label memory keeps its older rows,
their narrowed features mapped onto the new mean and spread, instead of forgetting labels that
took thousands of rows to gather.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from river import base as river_base

from river_dhbm._kernels import inputs

__all__ = ["CHECK_EVERY", "ChangeWatch", "DDM_THRESHOLD", "DEFAULT_DELTA", "InputWatch",
           "check_detector", "default_detectors", "labeled_errors", "restart"]

#: ADWIN's confidence of the default detector: ARF's warning detector's, more sensitive than its
#: drift detector's 0.001, since an alarm here costs a restart of the learning, not the model.
DEFAULT_DELTA = 0.01

#: A model restarts its learning at the first multiple of this many updates after an alarm, on
#: every path, so all learn the same model (a fused run of mini-batches in one kernel call that
#: finds a restart due inside it learns again up to there: `fused_run.SPAN`).
CHECK_EVERY = 10


def check_detector(detector) -> None:
    """Refuse anything but None or one of River's drift detectors, in one line."""
    if detector is not None and not isinstance(detector, river_base.DriftDetector):
        raise ValueError(
            f"Invalid drift_detector ({detector!r:.60}). Must be None (ADWIN) or a River drift "
            "detector, e.g. river.drift.ADWIN() (river.drift.NoDrift() turns detection off)"
        )


#: The default detectors are made once this many labeled errors have come: importing
#: `river.drift` takes a second and brings pandas, which a model's first use should not wait
#: for; ADWIN looks for a change only every `clock` (32) values and DDM only after its
#: `warm_start` (30), so they miss nothing.
FIRST_ERRORS = 32


#: Standard deviations above its lowest error at which the default DDM fires (DDM's own default
#: is 3): at 3 it fired on a young model of River's Bananas at 10 % labels, 100 labels in, and
#: the restart cost that run 0.03-0.06 of accuracy; at 3.5 it does not, and still sees a change
#: of the clusters or of STAGGER's rule within a few dozen labels at 1 % labels (at 4 it missed
#: most changes of a young model's error from 0.17 to 0.45).
DDM_THRESHOLD = 3.5


def default_detectors():
    """The detectors a model watches its labeled rows' errors with by default, side by side, as
    fresh instances: River's ADWIN (`DEFAULT_DELTA`) and DDM (Gama et al. 2004; `DDM_THRESHOLD`).

    Each sees what the other misses. ADWIN compares the mean error of two sub-windows, which
    needs a stable error before a change: at 1 % labels a model is young for most of the
    stream, its error still falling when a change comes, and in ADWIN's windows the fall and
    the rise cancel. DDM compares the running error with the lowest the model has reached (the
    minimum of its mean plus one standard deviation), which is what the model should achieve
    now however young it is, and fires `DDM_THRESHOLD` standard deviations above it. Its
    running mean is slow to move late in a long stream, where ADWIN's window is quick.
    """
    from river.drift import ADWIN
    from river.drift.binary import DDM

    return (ADWIN(delta=DEFAULT_DELTA, clock=FIRST_ERRORS),
            DDM(drift_threshold=DDM_THRESHOLD))


def _no_drift(detector) -> bool:
    """Whether `detector` is River's `NoDrift` (whose module is loaded if the user made one)."""
    module = sys.modules.get("river.drift")
    return detector is not None and module is not None and isinstance(detector, module.NoDrift)


#: Rows the inputs' reference spread averages over (`InputWatch`): exponentially, so a slow
#: drift of the spread moves the reference with it and only a sudden narrowing alarms.
INPUT_REFERENCE = 5_000

#: How many times narrower than its reference a feature's standard deviation over the last
#: `CHECK_EVERY` mini-batches must be, twice in a row, to alarm.
NARROWING = 3.0

#: Narrow spans in a row that alarm. One is a few rows' luck for a long-tailed feature (whose
#: spread is a few large values): with one, a stream of such features alarmed about once in
#: 10,000 rows, with two never in 600,000 (`tests/test_input_watch.py`).
NARROW_SPANS = 2

#: Rows a new reference gathers before the watch compares with it: at the stream's start, and
#: after an alarm, which starts the reference again from the rows that follow.
INPUT_QUIET = 1_000

#: Added to a standard deviation before its logarithm: a feature that never varies has a
#: reference of about -28 that nothing falls below.
TINY_SPREAD = 1e-12

#: The share of a span's rows that must differ from its median for the span to tell a
#: feature's spread: fewer are a few rows' luck. A category of 40 values one-hot encoded
#: leaves each column silent for spans on end, and a pixel of the digits lit in three to five
#: rows of a span was five times narrower than its reference, twice in a row: both alarmed.
VARYING_SHARE = 0.1


class InputWatch:
    """Whether the inputs narrowed: every `CHECK_EVERY` mini-batches, each feature's standard
    deviation over their rows against its reference, the exponential average of its logarithm
    over about `INPUT_REFERENCE` rows before them (a geometric mean, which a few wide spans of a
    long-tailed feature do not carry off); `NARROW_SPANS` spans in a row `NARROWING` times
    narrower alarm. A narrow span does not enter the reference, nor does a span in which fewer
    than `VARYING_SHARE` of the rows differ from its median, which tells nothing of the spread.

    `block` holds the rows since the last comparison (`block_rows` of them), `reference` the
    log spreads (None: none yet) and `reference_mean` the means, gathered over `reference_rows`
    rows. After an alarm, `scale_map` is `(scale, shift)`, which takes a row of the old
    reference onto the narrow span's mean and spread (`x * scale + shift`, identity on the
    features that did not narrow), or None when another feature moved as well (`_scale_map`).
    """

    reference_mean = None  # None with a reference: pickled before the means were kept
    scale_map = None

    def __init__(self):
        self.block = None
        self.block_rows = 0
        self.reference = None
        self.reference_mean = None
        self.reference_rows = 0
        self.narrow_spans = 0

    def narrowed(self, X: np.ndarray, update: int) -> bool:
        """Add the rows `X` of the model's update number `update`; at a multiple of
        `CHECK_EVERY`, say whether the inputs narrowed (a new reference then starts from the
        rows that follow)."""
        n, start = len(X), self.block_rows
        if self.block is None or self.block.shape != (CHECK_EVERY * n, X.shape[1]):
            self.block, start = np.empty((CHECK_EVERY * n, X.shape[1])), 0
        self.block[start : start + n] = X
        self.block_rows = start + n
        if update % CHECK_EVERY:
            return False
        rows, self.block_rows = self.block_rows, 0
        d = X.shape[1]
        mean, spread, varying = np.empty(d), np.empty(d), np.empty(d, dtype=np.int64)
        inputs.span_stats(self.block, rows, TINY_SPREAD, mean, spread, varying)
        if self.reference is None or self.reference_mean is None:  # a new reference
            self.reference, self.reference_mean, self.reference_rows = spread, mean, rows
            self.narrow_spans = 0
            return False
        # a span in which few rows vary from the median (a rare feature, one column of a one-hot
        # category, a pixel lit a few times) says little of the feature's scale: neither narrow
        # nor reference
        sparse = varying < VARYING_SHARE * rows
        narrow = ~sparse & (spread < self.reference - math.log(NARROWING))
        if self.reference_rows >= INPUT_QUIET and narrow.any():
            self.narrow_spans += 1
            if self.narrow_spans < NARROW_SPANS:
                return False
            self.scale_map = self._scale_map(narrow, sparse, spread, mean)
            self.reference, self.reference_rows, self.narrow_spans = None, 0, 0
            return True
        self.narrow_spans = 0
        self.reference_rows += rows
        rate = np.where(sparse, 0.0, max(rows / INPUT_REFERENCE, rows / self.reference_rows))
        self.reference += rate * (spread - self.reference)
        self.reference_mean += rate * (mean - self.reference_mean)
        return False

    def _scale_map(self, narrow: np.ndarray, sparse: np.ndarray, spread: np.ndarray,
                   mean: np.ndarray):
        """`(scale, shift)` taking the reference's mean and spread of the `narrow` features onto
        the span's `mean` and log `spread`; None unless every other feature held, its spread
        within a factor `NARROWING` of its reference and its mean within `NARROWING` of its
        reference standard deviations (on a weather record whose columns moved by one, the
        pressure widened 8-fold as the dew point narrowed: the rows' meaning moved); None too
        when no feature is left to hold. The `sparse` features tell nothing either way."""
        others = ~narrow & ~sparse
        if not others.any():
            return None
        held = (np.abs(spread - self.reference)[others] < math.log(NARROWING)).all() and (
            np.abs(mean - self.reference_mean)[others]
            < NARROWING * np.exp(self.reference[others])).all()
        if not held:
            return None
        scale = np.where(narrow, np.exp(spread - self.reference), 1.0)
        return scale, np.where(narrow, mean - scale * self.reference_mean, 0.0)


class ChangeWatch:
    """A fresh copy of `detector` fed with the labeled rows' 0/1 errors; when `detector` is None,
    ADWIN and DDM side by side (`default_detectors`); and the inputs' spread (`InputWatch`),
    unless `detector` is River's `NoDrift`.

    `alarms` lists the rows (counted from 1, in the order the model learnt them) at whose
    mini-batch the error rose, `input_alarms` those at whose the inputs narrowed. A restart
    that only the inputs asked for holds `memory_map`, `(scale, shift, mapped, unsure)`: the
    label memory's rows up to row `mapped` are mapped by it and kept, those after it up to row
    `unsure` are forgotten, the later ones kept as they are (None: all forgotten).
    """

    memory_map = None

    def __init__(self, detector):
        self.detector = None if detector is None else detector.clone()
        self.minimum = None  # the default's DDM, beside its ADWIN (`detector`)
        self.active = not _no_drift(detector)
        self.alarms: list[int] = []
        self.input_alarms: list[int] = []
        self.inputs = InputWatch()
        self.inputs_moved = False  # the pending restart came from the inputs
        self.pending = False  # an alarm whose restart waits for the next check
        self._first: list = []  # errors seen before the default detectors are made

    #: The default ADWIN's window as `[sum, width, mean, emptied]`, kept here because reading
    #: its mean back costs more than its update (None: read it from the detector). Its window
    #: grows by each error, and on the update after an alarm starts empty (River's ADWIN).
    _adwin = None

    def _defaults(self) -> None:
        self.detector, self.minimum = default_detectors()
        self._adwin = [0, 0, 0.0, False]

    def rose(self, errors, row: int) -> bool:
        """Feed `errors` (bools, in row order) and say whether the error rose on any of them;
        `row` is the count of rows learnt at the end of their mini-batch."""
        if self.detector is None:
            self._first.extend(errors)
            if len(self._first) < FIRST_ERRORS:
                return False
            self._defaults()
            errors, self._first = self._first, []
        rose = False
        for error in errors:
            detector, adwin = self.detector, self._adwin
            before = getattr(detector, "estimation", None) if adwin is None else adwin[2]
            detector.update(float(error))
            if adwin is not None:
                if adwin[3]:
                    adwin[:] = [0, 0, 0.0, False]
                adwin[0] += bool(error)
                adwin[1] += 1
                adwin[2] = adwin[0] / adwin[1]
            rose_here = False
            if detector.drift_detected:
                after = getattr(detector, "estimation", None)
                if adwin is not None:
                    adwin[2:] = [after, True]
                # a two-sided detector (ADWIN) keeps the recent window: compare its mean
                rose_here = before is None or after is None or after > before
            if self.minimum is not None:
                self.minimum.update(bool(error))
                if self.minimum.drift_detected:  # ADWIN's window holds the old concept too
                    rose_here = True
                    self._defaults()
                elif rose_here:  # the model is young again; DDM's minimum was the old concept's
                    self.minimum = default_detectors()[1]
            rose |= rose_here
        if rose:
            self.alarms.append(int(row))
            self.pending = True
            self.memory_map = None  # the concept moved: the stored labels go
        return rose

    def narrowed(self, X: np.ndarray, update: int, twin=None) -> bool:
        """Feed the inputs `X` of update number `update` to the input watch; when they narrowed,
        note the alarm and make the restart due, here and in the model's `twin`'s watch."""
        if not self.inputs.narrowed(X, update):
            return False
        row, span = update * len(X), CHECK_EVERY * len(X)
        self.input_alarms.append(row)
        scale_map = self.inputs.scale_map
        # the span before the narrow ones may have narrowed part-way: its rows came at either
        # scale; those before it came at the old one
        unsure = row - NARROW_SPANS * span
        for watch in [self] if twin is None else [self, twin._watch]:
            watch.memory_map = None if scale_map is None or watch.pending else (
                *scale_map, unsure - span, unsure)
            watch.pending = watch.inputs_moved = True
        return True

    def due(self, n_updates: int) -> bool:
        """Whether the model must restart now, after `n_updates` updates (and clear it)."""
        if self.pending and n_updates % CHECK_EVERY == 0:
            self.pending = False
            return True
        return False


def restart(model) -> None:
    """Re-open `model`'s fast learning after a change: the warm start counts labels from now
    on, the label memory forgets the old concept, the experts' scores and Adam's moments start
    again; after the inputs narrowed, the linear expert's standardization too (its weights stay:
    they read standardized inputs, which a new scale of a feature does not move), and when only
    the narrowed features' scale moved (`ChangeWatch.memory_map`), the label memory keeps its
    older rows, mapped onto the new scale."""
    watch, kept = model._watch, None
    if watch.inputs_moved:
        watch.inputs_moved, kept, watch.memory_map = False, watch.memory_map, None
        if model._linear is not None:
            model._linear.restandardize()
    model._labels_before_change = model.n_labeled_seen
    memory = model._memory
    if memory is not None and kept is None:
        memory.state[:] = 0
    elif memory is not None:
        scale, shift, mapped, unsure = kept
        old = memory.rows <= mapped
        memory.X[old] = memory.X[old] * scale + shift
        memory.keep(old | (memory.rows > unsure))
    if model._mixture is not None:  # the best expert may have changed
        model._mixture.restart()
    moments = getattr(model, "_moments", None)
    if moments is not None and moments.size:
        moments[:] = 0.0
        model._adam_steps = 0


def labeled_errors(predicted: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Whether each labeled row (`codes >= 0`) of a mini-batch is mispredicted: `predicted`
    holds the class index predicted for every row."""
    labeled = codes >= 0
    return predicted[labeled] != codes[labeled]
