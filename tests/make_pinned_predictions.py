"""Write every model's predictions on a fixed stream to tests/data/pinned_predictions.npz (run by
hand: `python tests/make_pinned_predictions.py`), for tests/test_pinned_predictions.py.

Each case learns 600 rows of MOA's LED (10 % labels) through `test_then_train_arrays`, then 200
rows through River's dict loop (`predict_proba_one`, then `learn_one`), and records the dict
loop's probabilities of its last 40 rows and `predict_proba_arrays` of 60 fixed rows at the
end. A rewrite of how the predictions are computed (the experts and their mixture moved into
the kernels, say) must leave them where they were, to round-off; a change of what the models
learn or predict must regenerate this file, and say so.
"""

from __future__ import annotations

import pathlib

import numpy as np

import streams
from river_dhbm import DHBM, DHDA, HSDA, SBEN, PseudoLabelMLP

PATH = pathlib.Path(__file__).parent / "data" / "pinned_predictions.npz"

#: Name -> a fresh model: every class at its defaults (with the twin and the linear expert),
#: the DHBM's SAP estimator, and the networks alone.
CASES = {
    "dhbm": lambda: DHBM(seed=1),
    "dhbm-sap": lambda: DHBM(estimator="sap", seed=2),
    "dhda": lambda: DHDA(seed=3),
    "sben": lambda: SBEN(seed=4),
    "hsda": lambda: HSDA(seed=5),
    "pl-mlp": lambda: PseudoLabelMLP(seed=6),
    "dhbm-alone": lambda: DHBM(seed=7, safe_unlabeled=False, linear_expert=False),
    "dhda-paper": lambda: DHDA.paper(24, seed=8),
}
ARRAY_ROWS, DICT_ROWS, LAST, QUERY = 600, 200, 40, 60


def stream():
    """`(X, y, labeled)`: the first rows of MOA's LED at 10 % labels (seed 1)."""
    masked = streams.LabelMask(streams.LED(seed=1), label_ratio=0.1, batch_size=20, seed=2)
    for X, y, labeled in masked.iter_arrays(chunk_size=ARRAY_ROWS + DICT_ROWS + QUERY):
        return X, y, labeled


def predictions(model) -> tuple[np.ndarray, np.ndarray]:
    """The dict loop's `p(y | x)` of its last `LAST` rows `[LAST, K]` and the array path's of
    the `QUERY` rows after the stream `[QUERY, K]`, in the model's column order."""
    X, y, labeled = stream()
    model.test_then_train_arrays(X[:ARRAY_ROWS], y[:ARRAY_ROWS], labeled[:ARRAY_ROWS])
    rows = []
    for i in range(ARRAY_ROWS, ARRAY_ROWS + DICT_ROWS):
        x = dict(enumerate(X[i].tolist()))
        proba = model.predict_proba_one(x)
        rows.append([proba.get(c, 0.0) for c in model.classes_])
        model.learn_one(x, y[i].item() if labeled[i] else None)
    width = len(model.classes_)
    last = np.array([r + [0.0] * (width - len(r)) for r in rows[-LAST:]])
    return last, model.predict_proba_arrays(X[ARRAY_ROWS + DICT_ROWS :])


if __name__ == "__main__":
    arrays = {}
    for name, make in CASES.items():
        arrays[f"{name}/dict"], arrays[f"{name}/arrays"] = predictions(make())
    np.savez_compressed(PATH, **arrays)
    print(f"wrote {PATH} ({len(CASES)} cases)")
