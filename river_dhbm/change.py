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
"""

from __future__ import annotations

import sys

import numpy as np
from river import base as river_base

__all__ = ["CHECK_EVERY", "ChangeWatch", "DDM_THRESHOLD", "DEFAULT_DELTA", "check_detector",
           "default_detectors", "labeled_errors", "restart"]

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


class ChangeWatch:
    """A fresh copy of `detector` fed with the labeled rows' 0/1 errors; when `detector` is None,
    ADWIN and DDM side by side (`default_detectors`).

    `alarms` lists the rows (counted from 1, in the order the model learnt them) at whose
    mini-batch the error rose.
    """

    def __init__(self, detector):
        self.detector = None if detector is None else detector.clone()
        self.minimum = None  # the default's DDM, beside its ADWIN (`detector`)
        self.active = not _no_drift(detector)
        self.alarms: list[int] = []
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
        return rose

    def due(self, n_updates: int) -> bool:
        """Whether the model must restart now, after `n_updates` updates (and clear it)."""
        if self.pending and n_updates % CHECK_EVERY == 0:
            self.pending = False
            return True
        return False


def restart(model) -> None:
    """Re-open `model`'s fast learning after a change: the warm start counts labels from now
    on, the label memory forgets the old concept, the experts' scores and Adam's moments start
    again."""
    model._labels_before_change = model.n_labeled_seen
    if model._memory is not None:
        model._memory.state[:] = 0
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
