"""Speed benchmarks on this machine, each public module a target of `python -m evaluation bench`:
the models against River's learners and loop (`models`, whose parts are `_model_setup` and
`_model_report`), the first use on a fresh install (`first_use`) and the streams against MOA's
generators (`streams`)."""

from __future__ import annotations
