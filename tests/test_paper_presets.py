"""Each model's `paper(n_features)` preset learns the paper's drifting streams past their first
change, and stays at chance when the labels carry nothing (the negative control).

The paper's set-up (section 5.1): the drifting LED and Waveform streams, 10 % labels drawn per
mini-batch of 20, test-then-train on the array path (`evaluation.prequential`). The error is
the plain error over rows 150,000-200,000: past the first change (centred at 25,000, see
`CHANGE_POINTS`) and before the second (250,000), so the model must have
learnt the second concept. The paper's settings (one plain SGD step per mini-batch, no label
memory) learn slowly: several stay near chance for the first 100,000 rows (PL-MLP,
docs/evaluation.md), hence the long run; it costs 1-3 s on the array path.
"""

from __future__ import annotations

import numpy as np
import pytest

import streams
from evaluation import prequential
from river_dhbm import DHBM, DHDA, HSDA, SBEN, PseudoLabelMLP
from streams.presets import CHANGE_POINTS

N_ROWS, FROM = 200_000, 150_000
CHANCE = {"led": 0.9, "waveform": 2 / 3}  # LED: 10 balanced digits; Waveform: 3 classes

PRESETS = {
    "dhbm-mf": lambda d: DHBM.paper(d, seed=1),
    "dhbm-sap": lambda d: DHBM.paper(d, estimator="sap", seed=1),
    "dhda": lambda d: DHDA.paper(d, seed=1),
    "pl-mlp": lambda d: PseudoLabelMLP.paper(d, seed=1),
    "sben": lambda d: SBEN.paper(d, seed=1),
    "hsda": lambda d: HSDA.paper(d, seed=1),
}

#: (preset, stream) -> the bound between the learning run's error over rows 150,000-200,000
#: and its control's. Measured with these settings on stream and mask seeds 1-3 (mask seed
#: stream seed + 100 there; the models of main at 036d539), the range over seeds of the
#: learning run's error, then the control's; each bound sits about halfway. DHBM-SAP on Waveform is left out: with the
#: paper's settings it stays at chance (0.657-0.660 against 0.664-0.671), as it does over the
#: whole 1,000,000 rows of Figure 3 (docs/evaluation.md).
BOUNDS = {
    ("dhbm-mf", "led"): 0.64,  # 0.377-0.391; 0.898-0.901
    ("dhbm-mf", "waveform"): 0.44,  # 0.199-0.213; 0.664-0.671
    ("dhbm-sap", "led"): 0.875,  # 0.831-0.850; 0.900 (SAP learns little with these settings)
    ("dhda", "led"): 0.69,  # 0.438-0.492; 0.898-0.901
    ("dhda", "waveform"): 0.54,  # 0.348-0.416; 0.664-0.671
    ("pl-mlp", "led"): 0.87,  # 0.781-0.840; 0.898-0.900
    ("pl-mlp", "waveform"): 0.58,  # 0.450-0.492; 0.664-0.670
    ("sben", "led"): 0.63,  # 0.327-0.361; 0.897-0.901
    ("sben", "waveform"): 0.44,  # 0.203-0.216; 0.664-0.669
    ("hsda", "led"): 0.78,  # 0.623-0.657; 0.898-0.901
    ("hsda", "waveform"): 0.59,  # 0.516 on each seed; 0.666-0.669
}


class Rows:
    """Rows given as arrays, with the array interface of `streams.LabelMask`."""

    def __init__(self, X, y, labeled):
        self.X, self.y, self.labeled = X, y, labeled

    def iter_arrays(self, chunk_size):
        for i in range(0, len(self.y), chunk_size):
            s = slice(i, i + chunk_size)
            yield self.X[s], self.y[s], self.labeled[s]


def late_error(preset: str, X, y, labeled) -> float:
    """Plain prequential error of `preset` over rows `FROM` to `N_ROWS`."""
    result = prequential(Rows(X, y, labeled), PRESETS[preset](X.shape[1]), N_ROWS, step=FROM)
    assert list(result.positions) == [FROM, N_ROWS]
    before, whole = result.error
    return (whole * N_ROWS - before * FROM) / (N_ROWS - FROM)


@pytest.mark.parametrize("preset, stream", list(BOUNDS))
def test_paper_preset_learns_past_the_first_change(preset, stream):
    masked = streams.LabelMask(streams.paper_stream(stream, seed=1), label_ratio=0.1,
                               batch_size=20, seed=101)
    X, y, labeled = next(masked.iter_arrays(N_ROWS))
    assert CHANGE_POINTS[0] < FROM < N_ROWS < CHANGE_POINTS[1]
    learnt = late_error(preset, X, y, labeled)
    # the control: the same rows with their labels permuted over them, nothing to learn
    control = late_error(preset, X, np.random.default_rng(1).permutation(y), labeled)
    assert learnt < BOUNDS[preset, stream] < control, (learnt, control)
    assert control > CHANCE[stream] - 0.02, control
