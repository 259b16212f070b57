from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from evaluation import cli
from evaluation.bench import models as bench

TINY = dict(n_instances=100, repeats=2, warmup=40, setups=("led",), settings=("default",))


@pytest.fixture(scope="module")
def rows():
    return bench.bench_models(models=("dhbm-mf", "logreg", "nochange"), **TINY)


def test_rows_shape(rows):
    got = [(r["model"], r["route"]) for r in rows]
    assert got == [
        ("dhbm-mf", "prequential"),
        ("dhbm-mf", "progressive_val_score"),
        ("logreg", "prequential"),
        ("logreg", "progressive_val_score"),
        ("nochange", "progressive_val_score"),
        ("nochange", "prequential"),
        (bench.STREAM_ONLY, "iter_arrays"),
        (bench.STREAM_ONLY, "iteration"),
    ]
    for row in rows:
        assert len(row["cpu_seconds"]) == len(row["seconds"]) == 2
        assert row["instances_per_s"] > 0 and row["wall_instances_per_s"] > 0
    loops = {(r["model"], r["route"]): r["loop"] for r in rows}
    assert loops["dhbm-mf", "prequential"] == "arrays"  # our models take the array path
    assert loops["logreg", "prequential"] == "dicts"
    assert loops["dhbm-mf", "progressive_val_score"] == "dicts"
    shares = [r["hook_share"] for r in rows]
    assert all(0 < s < 1 for s in shares[:2]) and all(s is None for s in shares[2:])


def test_ratios_against_the_peers(rows):
    by = {(r["model"], r["route"]): r for r in rows}
    loop = by["nochange", "progressive_val_score"]["instances_per_s"]
    for (model, route), row in by.items():
        logreg = by["logreg", route]["instances_per_s"] if route in bench.ROUTES else None
        if logreg is None:
            assert row["vs_logreg"] is None
        else:
            assert row["vs_logreg"] == pytest.approx(row["instances_per_s"] / logreg)
        assert row["vs_loop"] == pytest.approx(loop / row["instances_per_s"])
    assert by["logreg", "prequential"]["vs_logreg"] == 1.0
    assert by["nochange", "progressive_val_score"]["vs_loop"] == 1.0


def test_ratio_targets_use_back_to_back_pairs(rows, monkeypatch):
    by = {(r["model"], r["route"]): r for r in rows}
    arrays, dicts = by["dhbm-mf", "prequential"], by["dhbm-mf", "progressive_val_score"]
    assert arrays["paired_vs_logreg"] > 1  # the array path is faster than River's LogReg
    assert dicts["paired_vs_loop"] > 1  # the dict path costs more than River's bare loop
    assert "paired_vs_logreg" not in by["logreg", "prequential"]
    found = {c["name"]: c for c in bench.targets(rows)}
    (ratio,) = [c for n, c in found.items() if "10x LogisticRegression" in n]
    assert ratio["value"] == f"{arrays['paired_vs_logreg']:.1f}x"
    assert f"ratio of the medians of the main repeats is {arrays['vs_logreg']:.2f}x" in (
        ratio["detail"])
    (cost,) = [c for n, c in found.items() if "dict path" in n]
    assert cost["value"] == f"{dicts['paired_vs_loop']:.1f}x"
    # each pair is one run of each entry, one right after the other, alternating which first
    order = []
    monkeypatch.setattr(bench, "run_once", lambda e, n, *a: order.append(e.model) or {"cpu": 1.0})
    bench._add_paired_ratios([dict(arrays)], list(bench.entries(("led",), ("dhbm-mf", "logreg"),
                                                                 ("default",))), 100, 3)
    assert order == ["dhbm-mf", "logreg", "logreg", "dhbm-mf", "dhbm-mf", "logreg"]


def test_table_and_targets(rows):
    table = bench.format_table(rows).splitlines()
    assert len(table) == 2 + len(rows)
    assert all(line.count("|") == table[0].count("|") for line in table)
    names = [c["name"] for c in bench.targets(rows)]
    assert any("10x LogisticRegression" in n for n in names)
    assert any("River's loop" in n for n in names)
    assert not any("reproduce" in n for n in names)  # needs the paper settings of all models


@pytest.mark.parametrize("floor, what", [("checks", "checks alone"),
                                         ("predict", "checks and one-row predictions")])
def test_the_dict_path_floor_is_measured_beside_the_target(floor, what):
    rows = bench.bench_models(models=("dhbm-mf", "nochange", floor), split=False, **TINY)
    floors = [r for r in rows if r["model"] == floor]
    assert [(r["route"], r["loop"]) for r in floors] == [("progressive_val_score", "dicts")]
    # a ratio measured (its size is the benchmark's to report: timing asserts flake on a
    # shared machine)
    assert 0 < floors[0]["vs_loop"] < float("inf")
    (target,) = [c for c in bench.targets(rows) if "dict path" in c["name"]]
    arrays = next(r for r in rows if (r["model"], r["route"]) == ("dhbm-mf", "prequential"))
    assert f"{what} cost {floors[0]['vs_loop']:.2f}x" in target["detail"]
    assert f"{floors[0]['vs_loop'] + arrays['vs_loop']:.2f}x" in target["detail"]


def test_the_prediction_floor_predicts_as_the_model_does():
    # the floor's predictions are DHBM-MF's own (fitted on the stream's prefix), and it learns
    # nothing: its predictor is the same after River's loop
    floor = bench.make_model(bench.Entry("led", "predict", "", "progressive_val_score"))
    model = floor.predictor
    assert model.n_updates == bench.PREDICTOR_PREFIX // bench.BATCH_SIZE
    theta = model._theta.copy()
    stream = bench.make_stream("led")
    for x, y, kwargs in itertools.islice(stream, 50):
        assert floor.predict_one(x, **kwargs) == model.predict_one(x)
        floor.learn_one(x, y, **kwargs)
    np.testing.assert_array_equal(model._theta, theta)
    assert model.n_updates == bench.PREDICTOR_PREFIX // bench.BATCH_SIZE


def test_reproduce_estimate():
    rows = [
        {"setup": s, "model": m, "route": "prequential", "settings": "paper",
         "instances_per_s": 100_000.0}
        for s in bench.SETUPS for m in bench.OURS
    ]
    # 8 runs x 10 trials x 1e6 / 1e5 per s = 800 s, over 2 jobs
    assert bench.reproduce_minutes(rows, jobs=2) == pytest.approx(800 / 2 / 60)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="Unknown model 'svm'"):
        bench.bench_models(models=("svm",), n_instances=10)
    with pytest.raises(ValueError, match="Invalid n_instances"):
        bench.bench_models(n_instances=0)


@pytest.mark.slow  # three fresh processes: ~9 s of CPU
def test_startup_warm():
    warm, bare = bench.startup_times(cold=False, repeats=1)
    assert warm["cache"].startswith("warm") and "no scikit-learn" in bare["cache"]
    for row in (warm, bare):
        assert 0 < row["import river_dhbm"] < row["to_first_prediction"]
        assert row["to_first_prediction"] < row["to_first_stream_block"] <= row["process"]
        assert 0 < row["first predictions (CPU)"] < row["cpu_to_first_prediction"]
        # the first prediction does not wait for `import streams`
        assert row["cpu_to_first_prediction"] + row["import streams (CPU)"] <= (
            row["cpu_to_first_stream_block"] + 1e-9)
    # River's datasets import scikit-learn when it is there
    assert bare["import streams (CPU)"] < warm["import streams (CPU)"]
    assert "warm" in bench.format_startup([warm]).splitlines()[2]


def test_no_twin_rows_time_the_defaults_without_the_twin(capsys):
    rows = bench.bench_models(n_instances=100, repeats=1, warmup=40, setups=("led",),
                              models=("dhda", "logreg", "nochange"),
                              settings=("default", "no-twin"), split=False)
    made = bench.make_model(bench.Entry("led", "dhda", "no-twin", "prequential"))
    assert made.safe_unlabeled is False
    assert bench.make_model(bench.Entry("led", "dhda", "default", "prequential")).safe_unlabeled
    table = bench.report(rows, None, [], "cmd")
    assert "What the labeled-only twin costs" in table
    assert [line for line in table.splitlines() if line.startswith("| led | DHDA | prequential |")]
    with pytest.raises(ValueError, match="Unknown settings 'twin'"):
        bench.bench_models(n_instances=10, repeats=1, settings=("twin",))


def test_cli_default_target_is_models(tmp_path, capsys):
    out = tmp_path / "bench.md"
    code = cli.main([
        "bench", "--instances", "100", "--repeats", "1", "--models", "pl-mlp,logreg,nochange",
        "--streams", "waveform", "--settings", "default", "--no-startup", "--no-split",
        "--no-safety", "--quiet", "--out", str(out),
    ])
    assert code == 0
    text = out.read_text()
    assert text.strip() == capsys.readouterr().out.strip()
    assert "| waveform | PL-MLP | default | prequential | arrays |" in text
    assert "--instances 100" in json.loads((tmp_path / "settings.json").read_text())["command"]
    assert cli.main(["bench", "--instances", "0", "--models", "logreg", "--no-startup"]) == 2
    assert "Invalid n_instances" in capsys.readouterr().err


def test_cli_streams_target_writes_its_report_beside_a_settings_record(tmp_path, monkeypatch,
                                                                       capsys):
    from evaluation.bench import streams
    from evaluation.runs.files import behaviour_hash

    seen = []
    real = streams.bench_streams

    def without_moa(n_instances, repeats):
        seen.append((n_instances, repeats))
        return real(n_instances=n_instances, repeats=repeats, moa=False)

    monkeypatch.setattr(streams, "bench_streams", without_moa)
    assert cli.main(["bench", "streams", "1000", "2"]) == 0  # positional, as before
    out = tmp_path / "streams" / "report.md"
    assert cli.main(["bench", "streams", "--instances", "2000", "--repeats", "1",
                     "--out", str(out)]) == 0
    assert seen == [(1000, 2), (2000, 1)]
    text = out.read_text()
    assert text.startswith("# Stream speed") and "| stream | implementation |" in text
    assert text.strip() in capsys.readouterr().out
    record = json.loads((out.parent / "settings.json").read_text())
    assert record["report"] == "report.md" and "--instances 2000" in record["command"]
    assert record["behaviour"] == behaviour_hash()
    assert cli.main(["bench", "streams", "many"]) == 2
    assert "Invalid instances" in capsys.readouterr().err


def test_cli_safety_target_sets_the_defaults_against_their_ablation(tmp_path, capsys):
    out = tmp_path / "safety" / "report.md"
    assert cli.main(["bench", "safety", "--instances", "100", "--repeats", "1", "--quiet",
                     "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Safety at speed") and text.strip() in capsys.readouterr().out
    for line in ("| `DHBM()` |", "| `River OvR LogisticRegression` | ", "| `HSDA()` |",
                 "- array path: the drift check at most 5%", "Where River's loop spends a row"):
        assert line in text
    record = json.loads((out.parent / "settings.json").read_text())
    assert "bench safety --instances 100" in record["command"]
    assert cli.main(["bench", "safety", "--instances", "0", "--quiet"]) == 2
    assert "Invalid loop_rows" in capsys.readouterr().err
