"""Parallel workers share one warm cache: the parent compiles each model once (`warm_up`)
before the workers start, and they load Numba's cache instead of compiling."""

from __future__ import annotations

import textwrap

import pytest
from fresh_process import run_fresh
from river import naive_bayes, preprocessing

import river_dhbm
from evaluation.experiments import suite
from evaluation.runs import experiment, warmup


def test_only_this_projects_models_compile():
    assert warmup.compiles(river_dhbm.DHBM())
    assert warmup.compiles(preprocessing.MinMaxScaler() | river_dhbm.DHDA())
    assert not warmup.compiles(naive_bayes.GaussianNB())
    assert not warmup.compiles(preprocessing.StandardScaler() | naive_bayes.GaussianNB())


@pytest.mark.parametrize("arrays", [False, True])
def test_warm_up_teaches_one_mini_batch(arrays):
    small = dict(hidden_sizes=(8,), batch_size=4, seed=1)
    models = [river_dhbm.DHBM(**small), preprocessing.MinMaxScaler() | river_dhbm.DHDA(**small)]
    peer = naive_bayes.GaussianNB()
    warmup.warm_up([(m, 5) for m in models] + [(peer, 5)], arrays=arrays)
    for model in models:
        assert list(warmup.last_step(model).classes_) == [0, 1]
    assert not peer.class_counts  # left alone


def test_every_jobs_runner_warms_up_first(monkeypatch):
    calls = []
    monkeypatch.setattr(warmup, "warm_up", lambda pairs, arrays=False, recording=False:
                        calls.append(([type(warmup.last_step(m)).__name__ for m, _ in pairs],
                                      arrays)))
    suite.run(["led"], [0.5], ["dhbm-mf", "GaussianNB"], [1], instances=60, jobs=2,
              progress=False)
    assert calls == [(["DHBM", "GaussianNB"], False)]  # warm_up itself skips GaussianNB
    calls.clear()
    trial = experiment.Trial(stream="led", model="dhda", trial=0, instances=100, label_ratio=0.5,
                             label_batch=0, batch_size=10, fading_factor=0.995, step=50, seed=0,
                             params={"hidden_sizes": [8]}, preset="default")
    twin = experiment.Trial(**{**trial.__dict__, "trial": 1})
    experiment.run_trials([trial, twin], jobs=2, quiet=True)
    assert calls == [(["DHDA"], True)]  # one model for the two trials


_RUN = textwrap.dedent("""
    import os, sys
    from evaluation.runs import experiment
    trial = experiment.Trial(stream="led", model="pl-mlp", trial=0, instances=400,
                             label_ratio=0.5, label_batch=0, batch_size=20, fading_factor=0.995,
                             step=100, seed=0, params={}, preset="default")
    if sys.argv[1] == "parent":
        experiment._warm_up([trial], recording=False)
    else:
        experiment.run_trial(trial)
    print(sorted(f for _, _, files in os.walk(os.environ["NUMBA_CACHE_DIR"]) for f in files))
""")


@pytest.mark.slow
def test_a_worker_compiles_nothing_after_the_parent(tmp_path):
    # an empty cache: the parent's warm-up writes every kernel the worker's trial then loads
    def cached(role):
        return run_fresh(_RUN, role, cache=tmp_path).stdout.splitlines()[-1]

    after_parent = cached("parent")
    assert after_parent != "[]"
    assert cached("worker") == after_parent


def test_a_job_that_records_its_results_names_the_behaviour_panels_models(monkeypatch):
    """Writing results computes the behaviour hash, which trains a panel of every model kind:
    a recording job's one compile notice names those too, a job that writes nothing does not."""
    from evaluation.runs import registry, warmup
    from river_dhbm import DHBM
    from river_dhbm._kernels import first_use

    named = []
    monkeypatch.setattr(first_use, "announce_compilations",
                        lambda models: named.append({type(m).__name__ for m in models}))
    warmup.announce([DHBM()])
    warmup.announce([DHBM()], recording=True)
    assert named[0] == {"DHBM"}
    assert named[1] == {class_name for class_name, _ in registry.MODELS.values()}
