"""The five models validate their hyper-parameters alike (`river_dhbm.base` validators)."""

from __future__ import annotations

import pytest

from river_dhbm import DHBM, DHDA, HSDA, SBEN, PseudoLabelMLP

MODELS = [DHBM, SBEN, DHDA, HSDA, PseudoLabelMLP]

BAD = [
    ({"learning_rate": -0.01}, r"Invalid learning_rate \(-0.01\)\. Valid range is \(0, inf\)"),
    ({"learning_rate": 0}, r"Invalid learning_rate \(0\)\. Valid range is \(0, inf\)"),
    ({"dropout": 1.0}, r"Invalid dropout \(1\.0\)\. Valid range is \[0, 1\)"),
    ({"dropout": -0.2}, r"Invalid dropout \(-0\.2\)\. Valid range is \[0, 1\)"),
    ({"dropout": float("nan")}, r"Invalid dropout \(nan\)\. Valid range is \[0, 1\)"),
    (
        {"hidden_sizes": ()},
        r"Invalid hidden_sizes \(\(\)\)\. Must be a non-empty tuple of ints >= 1",
    ),
    ({"activation": "tanh"}, r"Invalid activation \('tanh'\)\. Must be one of 'sigmoid', 'relu'"),
    ({"beta": -1}, r"Invalid beta \(-1\)\. Valid range is \[0, inf\)"),
    ({"batch_size": 0}, r"Invalid batch_size \(0\)\. Must be an int >= 1"),
]


@pytest.mark.parametrize("params, match", BAD, ids=[next(iter(p)) for p, _ in BAD])
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_invalid_hyper_parameter_fails_in_init_with_value_and_range(model, params, match):
    with pytest.raises(ValueError, match=match):
        model(**params)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_legal_edges_are_accepted(model):
    model(dropout=0.0, beta=0.0, hidden_sizes=[3], activation="relu", batch_size=1)
