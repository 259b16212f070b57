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
import gc
import itertools
import statistics
import sys
import time

from evaluation.runs.arguments import names

from . import write_report
from ._model_report import (  # noqa: F401 (the names this module always had)
    format_table,
    format_targets,
    report,
    reproduce_minutes,
    targets,
)
from ._model_setup import (  # noqa: F401
    BATCH_SIZE,
    FLOORS,
    LABEL_BATCH,
    LABEL_RATIO,
    MASK_SEED,
    MODEL_SEED,
    NO_TWIN,
    OURS,
    PEERS,
    PREDICTOR_PREFIX,
    ROUTES,
    SETTINGS,
    SETUPS,
    STREAM_ONLY,
    STREAM_SEED,
    TARGET_LOGREG_RATIO,
    TARGET_LOOP_COST,
    TARGET_RATE,
    TARGET_REPRODUCE_MIN,
    TARGET_STARTUP,
    TARGET_VARIANT_RATIO,
    Entry,
    entries,
    make_model,
    make_stream,
)
from .first_use import (  # noqa: F401
    PHASES,
    format_startup,
    startup_times,
)

__all__ = ["Entry", "bench_models", "format_table", "main", "startup_times", "targets"]


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
        `"default"` (the models' defaults with the paper's architecture), `"paper"`
        (`Class.paper()`, the settings of `python -m evaluation reproduce`) and/or
        `"no-twin"` (the defaults with `safe_unlabeled=False`: what the twin costs).
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
        ("settings", settings, (*SETTINGS, NO_TWIN)),
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
                   help="comma-separated, from default, paper, both (the two) and no-twin "
                   "(the defaults with safe_unlabeled=False) (default both; --quick default "
                   "only)")
    p.add_argument("--quick", action="store_true",
                   help="small runs, default settings only, no cold-cache start")
    p.add_argument("--no-startup", action="store_true", help="skip the fresh-process timings")
    p.add_argument("--no-split", action="store_true", help="skip the time-in-hooks run")
    p.add_argument("--no-safety", action="store_true",
                   help="skip what the safe defaults cost (`bench safety`), timed at the end")
    p.add_argument("--out", default=None,
                   help="markdown report written (a settings.json beside it records the "
                   "command and the code; default: printed only)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--kernels", action="store_true",
                   help="first_use only: the compile seconds of each jitted function instead")


def run(args: argparse.Namespace, command: str | None = None) -> int:
    n = args.instances if args.instances is not None else (3000 if args.quick else 10_000)
    repeats = args.repeats if args.repeats is not None else (3 if args.quick else 5)
    settings = args.settings or (["default"] if args.quick else list(SETTINGS))
    settings = [s for name in settings for s in (SETTINGS if name == "both" else [name])]
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
    if not args.no_safety:  # the safe defaults against the same models without the twin
        from . import safety

        measured = safety.measure(args)
        text += "\n## What the safe defaults cost\n\n" + "\n".join(
            [*[f"- {line}" for line in safety.targets(measured)], "", safety.tables(measured),
             ""])
    print(text)
    if args.out:
        write_report(args.out, text, command)
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
