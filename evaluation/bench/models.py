"""Speed of the models against River's own learners and River's loop, measured in one run.

`python -m evaluation bench` (or `bench models`) times, on the paper's LED (24-24-24-24-24-10)
and Waveform (40-40-40-40-40-3) set-ups with 10 % labels, test-then-train instances per second
of DHBM-MF, DHBM-SAP, DHDA and PL-MLP through `evaluation.prequential` (array path) and River's
`evaluate.progressive_val_score` (dict path), next to River's `LogisticRegression`
(one-vs-rest), `HoeffdingTreeClassifier` and the do-nothing `NoChangeClassifier` (River's loop
alone) on the same masked streams, a model that only reads and checks each dict as ours do
(the floor of any exact dict path), plus the stream alone; and the time a fresh process takes
to its first prediction, with a warm and with a cold Numba cache.

Rates come from the process CPU time (`time.process_time`, as the streams bench: the machine is
shared and noisy), wall-clock rates beside them; each figure is the median over the repeats, and
every repeat runs every entry once, in rotating order, so the ratios compare runs made under the
same load. A warm-up run of every entry comes first, so compile time (or cache loading) is left
out. Every run builds a fresh stream and a fresh model outside the timed region.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import importlib
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from evaluation.arguments import names

__all__ = ["Entry", "bench_models", "format_table", "main", "startup_times", "targets"]

#: Set-up name -> (registry stream, hidden layers of the paper's complete representation).
SETUPS = {"led": ("led", (24,) * 4), "waveform": ("waveform", (40,) * 4)}
LABEL_RATIO, LABEL_BATCH, BATCH_SIZE = 0.1, 20, 20  # as evaluation/configs/fig3_*.toml
STREAM_SEED, MASK_SEED, MODEL_SEED = 1, 2, 3

#: Our models: key -> (label, module, class, fixed constructor arguments).
OURS = {
    "dhbm-mf": ("DHBM-MF", "river_dhbm.dhbm", "DHBM", {"estimator": "mf"}),
    "dhbm-sap": ("DHBM-SAP", "river_dhbm.dhbm", "DHBM", {"estimator": "sap"}),
    "dhda": ("DHDA", "river_dhbm.dhda", "DHDA", {}),
    "pl-mlp": ("PL-MLP", "river_dhbm.pseudo_label", "PseudoLabelMLP", {}),
}
#: River's learners: key -> label.
PEERS = {
    "logreg": "LogisticRegression (one-vs-rest)",
    "htree": "HoeffdingTreeClassifier",
    "nochange": "NoChangeClassifier (River's loop)",
    "checks": "dict checks only (the dict path's floor)",
    "predict": "dict checks + one-row predictions of DHBM-MF (no learning)",
}
#: Dict-path floors: peers with no route but River's loop.
FLOORS = ("checks", "predict")
#: Instances the `predict` floor's DHBM-MF learns (untimed) before it only predicts.
PREDICTOR_PREFIX = 2000
STREAM_ONLY = "stream only"
SETTINGS = ("default", "paper")
ROUTES = ("prequential", "progressive_val_score")

# The figures of the targets.
TARGET_LOGREG_RATIO = 10.0
TARGET_RATE = 200_000
TARGET_LOOP_COST = 2.0
TARGET_VARIANT_RATIO = 2.0
TARGET_STARTUP = 3.0
TARGET_REPRODUCE_MIN = 15.0


@dataclasses.dataclass(frozen=True)
class Entry:
    """One thing to time: a model (or the bare stream) through one evaluation route."""

    setup: str  # key of SETUPS
    model: str  # key of OURS or PEERS, or STREAM_ONLY
    settings: str  # "default" / "paper" for our models, "" otherwise
    route: str  # "prequential", "progressive_val_score", "iter_arrays" or "iteration"

    @property
    def label(self) -> str:
        if self.model in OURS:
            return OURS[self.model][0]
        return PEERS.get(self.model, self.model)


# ---------------------------------------------------------------------------------- building


def make_stream(setup: str):
    from evaluation import registry

    name, _ = SETUPS[setup]
    return registry.masked_stream(name, STREAM_SEED, LABEL_RATIO, LABEL_BATCH, MASK_SEED)


def _dict_path_floor(predictor=None):
    """A River classifier doing the part of our models' dict path that comes before any
    learning, exactly as theirs: `predict_one` checks the dict (`_plain_values`) and packs
    it into a buffer slot (`_row`), `learn_one` recognises the dict just predicted
    (`_is_staged`). With a fitted `predictor` (one of our models), `predict_one` is its own,
    one-row prediction included. Their costs bound from below what any exact dict path of
    these models can cost: River asks for each prediction before the next instance, so the
    checks and the one-row pass come on top of the mini-batch updates."""
    import numpy as np
    from river import base

    from river_dhbm.base import HybridClassifier, _canonical_order

    class DictPathFloor(base.Classifier):
        _n_buf = 0
        # our models' own code, not a copy of it
        _plain_values = HybridClassifier._plain_values
        _vector_general = HybridClassifier._vector_general
        _check_value = HybridClassifier._check_value
        _row = HybridClassifier._row
        _is_staged = HybridClassifier._is_staged

        def __init__(self, predictor=None):
            self.predictor = predictor
            self._features = None
            self._feature_index = {}
            self._staged = None

        def predict_one(self, x, **kwargs):
            if self.predictor is not None:
                return self.predictor.predict_one(x)
            if self._features is None:
                self._features = _canonical_order(x)
                self._X_buf = np.zeros((1, len(self._features)))
            self._row(x)
            if self._staged is None:
                raise ValueError("the bench streams yield plain finite numbers")

        def learn_one(self, x, y=None, **kwargs):
            checker = self if self.predictor is None else self.predictor
            if not checker._is_staged(x):
                raise ValueError("River's loop learns the dict it just predicted")
            checker._staged = None

    return DictPathFloor(predictor)


def _fitted_predictor(setup: str):
    """DHBM-MF (default settings) after `learn_arrays` on the first `PREDICTOR_PREFIX`
    instances of the set-up's masked stream: every class known, ready to predict."""
    model = make_model(Entry(setup, "dhbm-mf", "default", "prequential"))
    X, y, labeled = next(make_stream(setup).iter_arrays(PREDICTOR_PREFIX))
    model.learn_arrays(X, y, labeled)
    return model


def make_model(entry: Entry):
    """A fresh model for `entry`: ours with the paper's architecture and either their default
    or the paper's settings; River's peers wrapped in `LabeledOnly` on the dict route."""
    if entry.model in OURS:
        _, module, name, fixed = OURS[entry.model]
        cls = getattr(importlib.import_module(module), name)
        factory = cls.paper if entry.settings == "paper" else cls
        _, hidden = SETUPS[entry.setup]
        return factory(hidden_sizes=hidden, batch_size=BATCH_SIZE, seed=MODEL_SEED, **fixed)
    if entry.model in FLOORS:  # they take every row, labeled or not, as ours do
        return _dict_path_floor(_fitted_predictor(entry.setup) if entry.model == "predict"
                                 else None)
    from river import dummy, linear_model, multiclass, tree

    import streams

    model = {
        "logreg": lambda: multiclass.OneVsRestClassifier(linear_model.LogisticRegression()),
        "htree": lambda: tree.HoeffdingTreeClassifier(),
        "nochange": lambda: dummy.NoChangeClassifier(),
    }[entry.model]()
    # `prequential` gives River's models the labeled rows itself; River's loop passes the
    # `labeled` keyword, which only `LabeledOnly` understands.
    return streams.LabeledOnly(model) if entry.route == "progressive_val_score" else model


def entries(setups, models, settings, routes=ROUTES) -> list[Entry]:
    """Every entry of the benchmark, in table order."""
    out = []
    for setup in setups:
        for model in models:
            if model in OURS:
                out += [Entry(setup, model, s, r) for s in settings for r in routes]
            elif model == "nochange":
                out += [Entry(setup, model, "", r) for r in reversed(routes)]
            elif model in FLOORS:
                out += [Entry(setup, model, "", r) for r in routes if r == "progressive_val_score"]
            else:
                out += [Entry(setup, model, "", r) for r in routes]
        out += [Entry(setup, STREAM_ONLY, "", route) for route in ("iter_arrays", "iteration")]
    return out


# ---------------------------------------------------------------------------------- timing


def run_once(entry: Entry, n_instances: int, instrument=None) -> dict:
    """Build a fresh stream and model (passed to `instrument` if given), then time one
    test-then-train run of `n_instances`."""
    dataset = make_stream(entry.setup)
    model = None if entry.model == STREAM_ONLY else make_model(entry)
    if instrument is not None:
        instrument(model)
    if entry.route == "prequential":
        from evaluation.prequential import prequential

        def work():
            return prequential(dataset, model, n_instances, batch_size=BATCH_SIZE).path

    elif entry.route == "progressive_val_score":
        from river import evaluate, metrics

        def work():
            evaluate.progressive_val_score(dataset.take(n_instances), model, metrics.Accuracy())
            return "dicts"

    elif entry.route == "iter_arrays":

        def work():
            done = 0
            for _, y, _ in dataset.iter_arrays(2000):
                done += len(y)
                if done >= n_instances:
                    return "arrays"

    else:

        def work():
            for _ in itertools.islice(dataset, n_instances):
                pass
            return "dicts"

    gc.collect()  # the garbage of earlier entries is not this entry's cost
    cpu, wall = time.process_time(), time.perf_counter()
    loop = work()
    return {
        "cpu": time.process_time() - cpu,
        "wall": time.perf_counter() - wall,
        "loop": loop,
        "model": model,
    }


def hook_share(entry: Entry, n_instances: int) -> float | None:
    """Share of the wall time spent inside our model's `_update`, `_proba` and
    `_test_then_train_run` (the Numba kernels, the random draws and argument passing of each
    call) in one more run; a hook called from another is counted once."""
    if entry.model not in OURS:
        return None
    spent = [0.0]
    depth = [0]

    def timed(method):
        def wrapper(*args):
            depth[0] += 1
            start = time.perf_counter()
            try:
                return method(*args)
            finally:
                depth[0] -= 1
                if depth[0] == 0:
                    spent[0] += time.perf_counter() - start

        return wrapper

    def instrument(model):
        for hook in ("_update", "_proba", "_test_then_train_run"):
            setattr(model, hook, timed(getattr(model, hook)))

    result = run_once(entry, n_instances, instrument)
    return spent[0] / result["wall"] if result["wall"] > 0 else None


def bench_models(
    n_instances: int = 10_000,
    repeats: int = 5,
    setups=tuple(SETUPS),
    models=(*OURS, *PEERS),
    settings=SETTINGS,
    warmup: int = 1000,
    split: bool = True,
    progress=None,
) -> list[dict]:
    """Time every entry; one row per entry (see `format_table` for the columns).

    Parameters
    ----------
    n_instances
        Instances per timed run.
    repeats
        Timed runs per entry (the median is reported); each repeat runs every entry once.
    setups
        Keys of `SETUPS`.
    models
        Keys of `OURS` and `PEERS`. The ratios need `"logreg"` and `"nochange"`.
    settings
        `"default"` (the models' defaults with the paper's architecture) and/or `"paper"`
        (`Class.paper()`, the settings of `python -m evaluation reproduce`).
    warmup
        Instances of the untimed first run of every entry (compilation, caches).
    split
        Also measure, in one more run, the share of time inside our models' hooks.
    progress
        Optional callable receiving a line of text after each timed run.

    Returns
    -------
    One dict per entry: `setup`, `model` (key), `label`, `settings`, `route`, `loop`
    (`"arrays"` or `"dicts"`), `n_instances`, `cpu_seconds` and `seconds` (every repeat),
    `instances_per_s` (median CPU), `wall_instances_per_s` (median wall), `vs_logreg` (our CPU
    rate over River's LogisticRegression's on the same set-up and route), `vs_loop` (CPU cost
    per instance over that of the do-nothing model in River's loop), `hook_share`.

    """
    for name, value in (("n_instances", n_instances), ("repeats", repeats)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"Invalid {name} ({value!r}). Must be an int >= 1")
    for name, values, legal in (
        ("setup", setups, SETUPS),
        ("model", models, (*OURS, *PEERS)),
        ("settings", settings, SETTINGS),
    ):
        for value in values:
            if value not in legal:
                raise ValueError(f"Unknown {name} {value!r}. Known: {', '.join(legal)}")
    todo = entries(setups, models, settings)
    for entry in todo:  # warm-up: compile, fill caches, import
        run_once(entry, min(n_instances, warmup))
    timings = {entry: [] for entry in todo}
    for r in range(repeats):
        k = r % len(todo)
        for entry in todo[k:] + todo[:k]:  # rotate so no entry always runs first or last
            result = run_once(entry, n_instances)
            result.pop("model")
            timings[entry].append(result)
            if progress is not None:
                progress(
                    f"repeat {r + 1}/{repeats} {entry.setup} {entry.label} {entry.settings} "
                    f"{entry.route}: {n_instances / result['cpu']:,.0f}/s"
                )
    rows = []
    for entry in todo:
        runs = timings[entry]
        cpu = [t["cpu"] for t in runs]
        wall = [t["wall"] for t in runs]
        rows.append(
            {
                "setup": entry.setup,
                "model": entry.model,
                "label": entry.label,
                "settings": entry.settings,
                "route": entry.route,
                "loop": runs[0]["loop"],
                "n_instances": n_instances,
                "cpu_seconds": cpu,
                "seconds": wall,
                "instances_per_s": n_instances / statistics.median(cpu),
                "wall_instances_per_s": n_instances / statistics.median(wall),
                "hook_share": hook_share(entry, n_instances) if split else None,
            }
        )
    _add_ratios(rows)
    _add_paired_ratios(rows, todo, n_instances, 3 * repeats)
    return rows


def _add_paired_ratios(rows: list[dict], todo: list[Entry], n_instances: int,
                       pairs: int) -> None:
    """The two ratio targets once more, from runs back to back: `paired_vs_logreg` on
    DHBM-MF's array-path row (its CPU rate over LogisticRegression's) and `paired_vs_loop` on
    its dict-path row (its CPU time over River's loop's), each the median over `pairs`
    pairs run one right after the other, in alternating order. The machine's speed drifts by
    a third from minute to minute and the main repeats run the two entries up to a minute
    apart; a pair shares the machine's state, so its ratio is the steadier estimate."""
    for row in rows:
        if row["model"] != "dhbm-mf" or row["settings"] != "default":
            continue
        ours = Entry(row["setup"], "dhbm-mf", "default", row["route"])
        if row["route"] == "prequential":
            key, peer = "paired_vs_logreg", Entry(row["setup"], "logreg", "", "prequential")
        else:
            key, peer = "paired_vs_loop", Entry(row["setup"], "nochange", "",
                                                "progressive_val_score")
        if peer not in todo:
            continue
        ratios = []
        for r in range(pairs):
            pair = (ours, peer) if r % 2 == 0 else (peer, ours)
            cpu = {e: run_once(e, n_instances)["cpu"] for e in pair}
            # a rate ratio is the inverse ratio of CPU times; a cost ratio is the ratio itself
            ratios.append(cpu[peer] / cpu[ours] if key == "paired_vs_logreg" else
                          cpu[ours] / cpu[peer])
        row[key] = statistics.median(ratios)


def _add_ratios(rows: list[dict]) -> None:
    def rate(setup, model, route):
        for row in rows:
            if (row["setup"], row["model"], row["route"]) == (setup, model, route):
                return row["instances_per_s"]
        return None

    for row in rows:
        logreg = rate(row["setup"], "logreg", row["route"])
        loop = rate(row["setup"], "nochange", "progressive_val_score")
        row["vs_logreg"] = row["instances_per_s"] / logreg if logreg else None
        row["vs_loop"] = loop / row["instances_per_s"] if loop else None


# ---------------------------------------------------------------------------------- startup

_STARTUP_SCRIPT = r"""
import json, time
marks = [("start", time.time(), time.process_time())]
def mark(name):
    marks.append((name, time.time(), time.process_time()))
import numpy as np
from river_dhbm.dhbm import DHBM
mark("import river_dhbm")
rng = np.random.default_rng(1)
X = (rng.random((20, 24)) < 0.5).astype(np.float64)  # a mini-batch shaped like LED's
y = np.arange(20) % 10
model = DHBM(hidden_sizes=(24,) * 4, seed=3)
model.learn_arrays(X, y)
mark("first learn (20 rows)")
model.predict_proba_arrays(X)
model.predict_one(dict(enumerate(X[0].tolist())))
mark("first predictions")
import streams
mark("import streams")
dataset = streams.LabelMask(streams.paper_stream("led", 1), label_ratio=0.1, batch_size=20, seed=2)
X, y, labeled = next(dataset.iter_arrays(20))
model.test_then_train_arrays(X, y, labeled)
mark("first stream block")
print(json.dumps(marks))
"""
PHASES = ("import river_dhbm", "first learn (20 rows)", "first predictions", "import streams",
          "first stream block")
# the model's first prediction comes before `import streams`: a user's own River stream does
# not import our streams (nor, through River's datasets, scikit-learn)
_FIRST_PREDICTION = PHASES.index("first predictions") + 1


# River imports scikit-learn whenever it is installed (it is in the test extra, not in the
# main install): this hides it, as in an environment made by `pip install .` alone.
_WITHOUT_SKLEARN = "import sys\nsys.modules['sklearn'] = None\n"


def _run_startup(env: dict, prelude: str = "") -> dict:
    spawned = time.time()
    done = subprocess.run(
        [sys.executable, "-c", prelude + _STARTUP_SCRIPT], env=env, capture_output=True,
        text=True, check=True,
    )
    exited = time.time()
    marks = json.loads(done.stdout.strip().splitlines()[-1])
    out = {"interpreter": marks[0][1] - spawned}
    for (_, wall0, cpu0), (name, wall1, cpu1) in zip(marks, marks[1:]):
        out[name] = wall1 - wall0
        out[f"{name} (CPU)"] = cpu1 - cpu0
    out["to_first_prediction"] = marks[_FIRST_PREDICTION][1] - spawned
    out["cpu_to_first_prediction"] = marks[_FIRST_PREDICTION][2]  # the child's CPU since start
    out["to_first_stream_block"] = marks[-1][1] - spawned
    out["cpu_to_first_stream_block"] = marks[-1][2]
    out["process"] = exited - spawned
    return out


def startup_times(cold: bool = True, repeats: int = 3) -> list[dict]:
    """Time a fresh `python` process that imports `river_dhbm`, builds a DHBM (24-24-24-24-24),
    learns one mini-batch of 20 rows and predicts (array and dict path): its first
    prediction; then imports `streams` and runs test-then-train on the first mini-batch of the
    masked paper LED stream. With a warm Numba cache (after one untimed run; median of
    `repeats`), also with scikit-learn hidden (the main install, without the test extra), and,
    if `cold`, with an empty cache (`NUMBA_CACHE_DIR` set to a new temp dir). Wall and CPU
    seconds of each phase."""
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)
    env.pop("NUMBA_DISABLE_JIT", None)
    _run_startup(env)  # fills the cache if it was not
    rows = []
    for label, prelude in (("", ""), (", no scikit-learn", _WITHOUT_SKLEARN)):
        runs = [_run_startup(env, prelude) for _ in range(repeats)]
        warm = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
        rows.append({"cache": f"warm{label} (median of {repeats})", **warm})
    if cold:
        with tempfile.TemporaryDirectory(prefix="numba_cold_") as tmp:
            rows.append({"cache": "cold (empty NUMBA_CACHE_DIR)",
                         **_run_startup({**env, "NUMBA_CACHE_DIR": tmp})})
    return rows


# ---------------------------------------------------------------------------------- report


def _find(rows, setup, model, route, settings=None):
    for row in rows:
        if (row["setup"], row["model"], row["route"]) == (setup, model, route) and (
            settings is None or row["settings"] == settings
        ):
            return row
    return None


def targets(rows: list[dict], startup: list[dict] | None = None, jobs: int = 2) -> list[dict]:
    """The issue's targets checked against the measured rows: `name`, `value`, `ok` (None
    when not measured)."""
    out = []

    def add(name, value, ok, detail=""):
        out.append({"name": name, "value": value, "ok": ok, "detail": detail})

    for setup in SETUPS:
        mf_arr = _find(rows, setup, "dhbm-mf", "prequential", "default")
        mf_dict = _find(rows, setup, "dhbm-mf", "progressive_val_score", "default")
        if mf_arr and mf_arr["vs_logreg"] is not None:
            v, detail = _steadier(mf_arr, "vs_logreg", "paired_vs_logreg")
            add(f"{setup}: DHBM-MF array path >= {TARGET_LOGREG_RATIO:g}x LogisticRegression",
                f"{v:.1f}x", v >= TARGET_LOGREG_RATIO, detail)
        if mf_arr and setup == "led":
            v = mf_arr["instances_per_s"]
            add(f"led: DHBM-MF array path >= {TARGET_RATE:,} instances/s (one core)",
                f"{v:,.0f}/s", v >= TARGET_RATE)
        if mf_dict and mf_dict["vs_loop"] is not None:
            v, detail = _steadier(mf_dict, "vs_loop", "paired_vs_loop")
            # the highest floor measured: River's loop with our checks (and one-row
            # predictions), plus the updates as the array path runs them
            floors = [(_find(rows, setup, "predict", "progressive_val_score"),
                       "the exact dict checks and one-row predictions"),
                      (_find(rows, setup, "checks", "progressive_val_score"),
                       "the exact dict checks alone")]
            floor, what = next((f for f in floors if f[0]), (None, ""))
            if floor and mf_arr and mf_arr["vs_loop"] is not None:
                detail += (
                    f"; floor: {what} cost {floor['vs_loop']:.2f}x, plus the array path's "
                    f"whole test-then-train {mf_arr['vs_loop']:.2f}x = "
                    f"{floor['vs_loop'] + mf_arr['vs_loop']:.2f}x"
                )
            add(f"{setup}: DHBM-MF dict path cost <= {TARGET_LOOP_COST:g}x River's loop",
                f"{v:.1f}x", v <= TARGET_LOOP_COST, detail.lstrip("; "))
        for other in ("dhbm-sap", "dhda"):
            for route, mf in (("prequential", mf_arr), ("progressive_val_score", mf_dict)):
                row = _find(rows, setup, other, route, "default")
                if row and mf:
                    v = mf["instances_per_s"] / row["instances_per_s"]
                    add(f"{setup}: {OURS[other][0]} within {TARGET_VARIANT_RATIO:g}x of DHBM-MF"
                        f" ({route})", f"{v:.2f}x DHBM-MF's time", v <= TARGET_VARIANT_RATIO)
    for row in (startup or [])[:2]:
        v, wall = row["cpu_to_first_prediction"], row["to_first_prediction"]
        add(f"fresh process to first prediction < {TARGET_STARTUP:g} s ({row['cache']})",
            f"{v:.2f} s CPU ({wall:.2f} s wall)", v < TARGET_STARTUP,
            "CPU time of the child process, the wall time depends on the machine's load; "
            f"importing `streams` too and running its first block: "
            f"{row['cpu_to_first_stream_block']:.2f} s CPU")
    minutes = reproduce_minutes(rows, jobs)
    if minutes is not None:
        add(f"`reproduce` (2 streams x 4 models x 10 trials x 1,000,000) < "
            f"{TARGET_REPRODUCE_MIN:g} min on {jobs} cores", f"~{minutes:.0f} min (estimate)",
            minutes < TARGET_REPRODUCE_MIN,
            "estimated from the paper-settings array-path CPU rates, perfect scaling over "
            f"{jobs} jobs")
    return out


def _steadier(row: dict, key: str, paired_key: str) -> tuple[float, str]:
    """A ratio target's value: the median of back-to-back pairs when measured (see
    `_add_paired_ratios`), else the ratio of the medians; and the text saying which."""
    if row.get(paired_key) is None:
        return row[key], ""
    return row[paired_key], (
        f"median over back-to-back pairs; the ratio of the medians of the main repeats is "
        f"{row[key]:.2f}x"
    )


def reproduce_minutes(rows: list[dict], jobs: int = 2, trials: int = 10,
                      instances: int = 1_000_000) -> float | None:
    """Estimated minutes of `python -m evaluation reproduce` from the paper-settings rates of
    the array path (None unless all four models on both set-ups were measured)."""
    seconds = 0.0
    for setup in SETUPS:
        for model in OURS:
            row = _find(rows, setup, model, "prequential", "paper")
            if row is None:
                return None
            seconds += trials * instances / row["instances_per_s"]
    return seconds / jobs / 60.0


def _fmt_rate(v):
    return f"{v:,.0f}"


def format_table(rows: list[dict]) -> str:
    """Markdown table of `bench_models` rows."""
    lines = [
        "| set-up | model | settings | route | loop | instances/s (CPU, median) "
        "| instances/s (wall, median) | x LogisticRegression | cost / River's loop "
        "| in model hooks |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ratio = "" if row["vs_logreg"] is None else f"{row['vs_logreg']:.2f}"
        cost = "" if row["vs_loop"] is None else f"{row['vs_loop']:.2f}"
        share = "" if row.get("hook_share") is None else f"{row['hook_share']:.0%}"
        lines.append(
            f"| {row['setup']} | {row['label']} | {row['settings']} | {row['route']} "
            f"| {row['loop']} | {_fmt_rate(row['instances_per_s'])} "
            f"| {_fmt_rate(row['wall_instances_per_s'])} | {ratio} | {cost} | {share} |"
        )
    return "\n".join(lines)


def format_startup(startup: list[dict]) -> str:
    """Markdown table of `startup_times` rows: wall seconds, CPU seconds in parentheses."""
    lines = [
        "| Numba cache | to first prediction: CPU (wall) | to first stream block: CPU (wall) "
        "| interpreter start (wall) | " + " | ".join(PHASES) + " |",
        "|---|---:|---:|---:|" + "---:|" * len(PHASES),
    ]
    for s in startup:
        phases = " | ".join(f"{s[f'{p} (CPU)']:.2f} s ({s[p]:.2f} s)" for p in PHASES)
        lines.append(
            f"| {s['cache']} | {s['cpu_to_first_prediction']:.2f} s "
            f"({s['to_first_prediction']:.2f} s) | {s['cpu_to_first_stream_block']:.2f} s "
            f"({s['to_first_stream_block']:.2f} s) | {s['interpreter']:.2f} s | {phases} |"
        )
    return "\n".join(lines)


def format_targets(checks: list[dict]) -> str:
    lines = ["| target | measured | met |", "|---|---:|---|"]
    for c in checks:
        met = "yes" if c["ok"] else "NO"
        detail = f" ({c['detail']})" if c["detail"] else ""
        lines.append(f"| {c['name']}{detail} | {c['value']} | {met} |")
    return "\n".join(lines)


def report(rows, startup, checks, command: str) -> str:
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    n = rows[0]["n_instances"] if rows else 0
    reps = len(rows[0]["cpu_seconds"]) if rows else 0
    parts = [
        f"# Model speed ({now})",
        "",
        f"Command: `{command}`. {n:,} test-then-train instances per run, median of {reps} "
        f"repeats, 10 % labels (mini-batches of {BATCH_SIZE}). Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, load average {load} at the end.",
        "Rates from process CPU time; `x LogisticRegression` is the CPU rate over River's "
        "one-vs-rest LogisticRegression's on the same set-up and route; `cost / River's loop` "
        "is the CPU time per instance over that of `NoChangeClassifier` in "
        "`progressive_val_score` (River's loop and the dict stream alone); `in model hooks` is "
        "the share of wall time inside the model's `_update`/`_proba`/`_test_then_train_run` "
        "(Numba kernels, random draws, call overhead), from one more run.",
        "",
        format_table(rows),
    ]
    if startup:
        parts += ["", "Fresh process (DHBM-MF on LED):", "", format_startup(startup)]
    parts += [
        "", "Targets (issue 6):", "",
        f"The two ratio targets are the median over {3 * reps} pairs of runs back to back (in "
        "alternating order): the table's ratio of medians compares runs up to a minute apart, "
        "and the machine's speed drifts by a third in that time.",
        "", format_targets(checks), "",
    ]
    return "\n".join(parts)


# ---------------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of the models benchmark (also used by `python -m evaluation bench`)."""
    p.add_argument("--instances", type=int, default=None,
                   help="instances per timed run (default 10,000; --quick 3,000)")
    p.add_argument("--repeats", type=int, default=None, help="timed repeats (default 5; --quick 3)")
    p.add_argument("--models", type=names, default=None,
                   help=f"comma-separated, from {', '.join((*OURS, *PEERS))} (default all)")
    p.add_argument("--streams", type=names, default=None,
                   help=f"comma-separated, from {', '.join(SETUPS)} (default all)")
    p.add_argument("--settings", type=names, default=None,
                   help="default, paper or both (default both; --quick default only)")
    p.add_argument("--quick", action="store_true",
                   help="small runs, default settings only, no cold-cache start")
    p.add_argument("--no-startup", action="store_true", help="skip the fresh-process timings")
    p.add_argument("--no-split", action="store_true", help="skip the time-in-hooks run")
    p.add_argument("--out", default="bench_models.md",
                   help="markdown file written with the tables (default ./bench_models.md)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")


def run(args: argparse.Namespace, command: str | None = None) -> int:
    n = args.instances if args.instances is not None else (3000 if args.quick else 10_000)
    repeats = args.repeats if args.repeats is not None else (3 if args.quick else 5)
    settings = args.settings or (["default"] if args.quick else list(SETTINGS))
    if settings == ["both"]:
        settings = list(SETTINGS)
    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    rows = bench_models(
        n_instances=n,
        repeats=repeats,
        setups=tuple(args.streams or SETUPS),
        models=tuple(args.models or (*OURS, *PEERS)),
        settings=tuple(settings),
        split=not args.no_split,
        progress=progress,
    )
    startup = None if args.no_startup else startup_times(cold=not args.quick)
    checks = targets(rows, startup)
    command = command or "python -m evaluation bench " + " ".join(sys.argv[1:])
    text = report(rows, startup, checks, command)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation bench models",
                                     description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args, "python -m evaluation bench models " + " ".join(
            sys.argv[1:] if argv is None else argv))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
