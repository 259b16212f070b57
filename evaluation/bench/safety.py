"""What the safe defaults cost in speed: every model with its labeled-only twin, its linear
expert and their mixture against the same model with `safe_unlabeled=False`, and against
River's learners and loop, measured in one run.

`python -m evaluation bench safety` (and, at its end, `python -m evaluation bench`) times:

- River's loop: `evaluate.progressive_val_score` over `streams.LabelMask` (10 % labels) of
  `streams.LEDDrift` (seed 1, noise 10 %, 4 drifting features), behind River's `MinMaxScaler`,
  every model at its defaults and with `safe_unlabeled=False`; River's one-vs-rest
  `LogisticRegression` and `HoeffdingTreeClassifier` learn the labeled rows only
  (`streams.LabeledOnly`, the scaler too); the do-nothing loop is River's `PriorClassifier`
  behind a scaler that learns every row, as ours does: what any semi-supervised model pays
  before it computes anything;
- the array path: `evaluation.prequential` over MOA's LED (10 % labels), every model's
  defaults against `safe_unlabeled=False`, the DHBM's against its defaults with
  `drift_detector=river.drift.NoDrift()` (what watching for a change costs), and
  `DHBM.paper(24)`, which has no experts;
- where River's loop spends a row of `DHBM()` and of `DHBM(safe_unlabeled=False)`: its
  kernels' time, one more run each (`profile`).

Rates come from the process CPU time, the median of the repeats; every repeat runs every entry
once, in rotating order, after an untimed warm-up of each (compilation, caches).
"""

from __future__ import annotations

import datetime
import gc
import os
import platform
import statistics
import sys
import time

__all__ = ["ARRAY_MODELS", "LOOP_MODELS", "bench_safety", "measure", "report", "run"]

#: Our models, by the name the tables show.
OURS = ("DHBM", "DHDA", "PseudoLabelMLP", "SBEN", "HSDA")
#: Ours at their defaults and without the twin: label -> what it builds (`_make`).
_SAFE_AND_NOT = {f"{name}{args}": (name, kw) for name in OURS
                 for args, kw in (("()", {}), ("(safe_unlabeled=False)",
                                               {"safe_unlabeled": False}))}
#: River's loop: label -> what it builds.
LOOP_MODELS = {
    **_SAFE_AND_NOT,
    "River OvR LogisticRegression": ("logreg", {}),
    "River HoeffdingTreeClassifier": ("htree", {}),
    "do-nothing (PriorClassifier)": ("prior", {}),
}
#: The array path: label -> what it builds.
ARRAY_MODELS = {
    **_SAFE_AND_NOT,
    "DHBM(drift_detector=NoDrift())": ("DHBM", {"drift_detector": "nodrift"}),
    "DHBM.paper(24)": ("DHBM.paper", {}),
}
LOGREG, PRIOR = "River OvR LogisticRegression", "do-nothing (PriorClassifier)"
LABEL_RATIO, SEED = 0.1, 1
#: The issue's targets: the defaults at least this share of `safe_unlabeled=False`, the drift
#: check at most this share of the fused run.
TARGET_SAFE_SHARE, TARGET_DRIFT_COST = 0.85, 0.05


def _make(spec):
    import river_dhbm

    name, kw = spec
    kw = dict(kw)
    if kw.get("drift_detector") == "nodrift":
        from river.drift import NoDrift

        kw["drift_detector"] = NoDrift()
    if name == "DHBM.paper":
        return river_dhbm.DHBM.paper(24, seed=SEED)
    if name in OURS:
        return getattr(river_dhbm, name)(seed=SEED, **kw)
    from river import dummy, linear_model, multiclass, tree

    return {"logreg": lambda: multiclass.OneVsRestClassifier(linear_model.LogisticRegression()),
            "htree": tree.HoeffdingTreeClassifier, "prior": dummy.PriorClassifier}[name]()


def _loop_run(label: str, n: int) -> float:
    """CPU seconds of River's loop over `n` rows with the model of `label`."""
    from river import evaluate, metrics, preprocessing

    import streams

    name = LOOP_MODELS[label][0]
    model = preprocessing.MinMaxScaler() | _make(LOOP_MODELS[label])
    if name in ("logreg", "htree"):
        model = streams.LabeledOnly(model)
    data = streams.LabelMask(streams.LEDDrift(seed=SEED, noise_percentage=10,
                                              n_drift_features=4),
                             label_ratio=LABEL_RATIO, batch_size=20, seed=SEED)
    gc.collect()
    start = time.process_time()
    evaluate.progressive_val_score(data.take(n), model, metrics.Accuracy())
    return time.process_time() - start


def _array_run(label: str, n: int) -> float:
    """CPU seconds of `evaluation.prequential` over `n` rows with the model of `label`."""
    import streams
    from evaluation.prequential import prequential

    model = _make(ARRAY_MODELS[label])
    data = streams.LabelMask(streams.LED(seed=SEED), label_ratio=LABEL_RATIO, batch_size=20,
                             seed=SEED + 1)
    gc.collect()
    start = time.process_time()
    prequential(data, model, n)
    return time.process_time() - start


def bench_safety(loop_rows: int = 20_000, array_rows: int = 100_000, repeats: int = 3,
                 progress=None) -> dict:
    """Time every entry of both tables and `profile` River's loop: `{"loop": {label: rows/s},
    "array": {label: rows/s}, "profile", "loop_rows", "array_rows", "repeats"}` (each rate
    from the median CPU time)."""
    for name, value in (("loop_rows", loop_rows), ("array_rows", array_rows),
                        ("repeats", repeats)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"Invalid {name} ({value!r}). Must be an int >= 1")
    todo = [("loop", label) for label in LOOP_MODELS] + [("array", label)
                                                          for label in ARRAY_MODELS]
    run = {"loop": (_loop_run, loop_rows), "array": (_array_run, array_rows)}
    for path, label in todo:  # warm-up: compile, fill caches, import
        run[path][0](label, min(run[path][1], 2000))
    seconds = {entry: [] for entry in todo}
    for r in range(repeats):
        k = r % len(todo)
        for entry in todo[k:] + todo[:k]:  # rotate so no entry always runs first or last
            work, rows = run[entry[0]]
            seconds[entry].append(work(entry[1], rows))
            if progress is not None:
                progress(f"repeat {r + 1}/{repeats} {entry[0]} {entry[1]}: "
                         f"{rows / seconds[entry][-1]:,.0f} rows/s")
    rates = {"loop": {}, "array": {}}
    for (path, label), times in seconds.items():
        rates[path][label] = run[path][1] / statistics.median(times)
    return {**rates, "profile": profile(loop_rows), "loop_rows": loop_rows,
            "array_rows": array_rows, "repeats": repeats}


#: The entries whose time in River's loop `profile` splits.
PROFILED = ("DHBM()", "DHBM(safe_unlabeled=False)")


def profile(rows: int) -> dict:
    """Where River's loop spends a row of `PROFILED`, in microseconds of wall time, from one
    more run of each: the one-row kernel of every expert's prediction and their mixture
    (`hybrid_experts_row`), the kernels of every expert's update (the network's and its
    twin's `dhbm_update`, the linear expert's `linear_learn`), and the rest (River's loop and
    scaler, the dict at the door, the Python around the kernels)."""
    from river_dhbm import linear_expert
    from river_dhbm._kernels import dhbm as dhbm_kernels
    from river_dhbm._kernels import mixture as mixture_kernels

    out = {}
    for label in PROFILED:
        spent = {"predict": 0.0, "update": 0.0}
        kernels = [(mixture_kernels.__dict__, "hybrid_experts_row", "predict"),
                   (dhbm_kernels.UPDATE_KERNELS, dhbm_kernels.MF, "update"),
                   (linear_expert.__dict__, "linear_learn", "update")]
        originals = [where[key] for where, key, _ in kernels]

        def timed(kernel, part):
            def call(*args):
                start = time.perf_counter()
                try:
                    return kernel(*args)
                finally:
                    spent[part] += time.perf_counter() - start
            return call

        for (where, key, part), kernel in zip(kernels, originals):
            where[key] = timed(kernel, part)
        try:
            start = time.perf_counter()
            _loop_run(label, rows)
            total = time.perf_counter() - start
        finally:
            for (where, key, _), kernel in zip(kernels, originals):
                where[key] = kernel
        us = 1e6 / rows
        out[label] = {"total": total * us, "predict": spent["predict"] * us,
                      "update": spent["update"] * us,
                      "rest": (total - spent["predict"] - spent["update"]) * us}
    return out


def _share(rates: dict, label: str) -> float | None:
    """The defaults' rate over `safe_unlabeled=False`'s for the model of a `()` label."""
    alone = rates.get(label.replace("()", "(safe_unlabeled=False)"))
    return rates[label] / alone if alone else None


def tables(result: dict) -> str:
    """The two tables in markdown."""
    loop, array = result["loop"], result["array"]
    lines = ["| model | rows/s | x River's LogisticRegression | of the do-nothing loop | "
             "x safe_unlabeled=False |", "|---|---:|---:|---:|---:|"]
    for label, rate in loop.items():
        share = _share(loop, label) if label.endswith("()") else None
        lines.append(f"| `{label}` | {rate:,.0f} | {rate / loop[LOGREG]:.2f} | "
                     f"{rate / loop[PRIOR]:.0%} | {'' if share is None else f'{share:.2f}'} |")
    lines += ["", "| model | defaults rows/s | safe_unlabeled=False rows/s | defaults / "
              "safe_unlabeled=False |", "|---|---:|---:|---:|"]
    for name in OURS:
        ours, alone = array[f"{name}()"], array[f"{name}(safe_unlabeled=False)"]
        lines.append(f"| `{name}()` | {ours:,.0f} | {alone:,.0f} | {ours / alone:.2f} |")
    lines += ["", "Where River's loop spends a row (microseconds, wall time, one more run each; "
              "the do-nothing loop's row costs "
              f"{1e6 / loop[PRIOR]:.1f} of CPU):", "",
              "| model | all | the experts' one-row predictions (one kernel) | every expert's "
              "update (their kernels) | the rest |", "|---|---:|---:|---:|---:|"]
    for label, part in result["profile"].items():
        lines.append(f"| `{label}` | {part['total']:.1f} | {part['predict']:.1f} | "
                     f"{part['update']:.1f} | {part['rest']:.1f} |")
    unwatched = array["DHBM(drift_detector=NoDrift())"]
    lines += ["", f"The drift check: `DHBM()` {array['DHBM()']:,.0f} rows/s against "
              f"{unwatched:,.0f} with `drift_detector=NoDrift()`: it costs "
              f"{1 - array['DHBM()'] / unwatched:.1%} of the run. `DHBM.paper(24)` (no experts): "
              f"{array['DHBM.paper(24)']:,.0f} rows/s."]
    return "\n".join(lines)


def targets(result: dict) -> list[str]:
    """The issue's targets, one line each, met or not."""
    loop, array = result["loop"], result["array"]
    out = []
    for name in ("DHBM", "DHDA"):
        v = loop[f"{name}()"] / loop[LOGREG]
        out.append(f"River's loop: `{name}()` at least River's LogisticRegression: {v:.2f}x "
                   f"({'met' if v >= 1 else 'not met'})")
    for path, rates in (("River's loop", loop), ("array path", array)):
        shares = {name: _share(rates, f"{name}()") for name in OURS}
        low = min(shares.values())
        out.append(f"{path}: every model's defaults at least {TARGET_SAFE_SHARE:.0%} of "
                   f"`safe_unlabeled=False`: {low:.2f} at the lowest "
                   f"({'met' if low >= TARGET_SAFE_SHARE else 'not met'}; "
                   + ", ".join(f"{n} {s:.2f}" for n, s in shares.items()) + ")")
    cost = 1 - array["DHBM()"] / array["DHBM(drift_detector=NoDrift())"]
    out.append(f"array path: the drift check at most {TARGET_DRIFT_COST:.0%} of the DHBM's run: "
               f"{cost:.1%} ({'met' if cost <= TARGET_DRIFT_COST else 'not met'})")
    return out


def report(result: dict, command: str) -> str:
    """The markdown report: a title, the command and conditions, the targets, the tables."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    except OSError:
        load = "unknown"
    return "\n".join([
        f"# Safety at speed ({now})", "",
        f"Command: `{command}`. River's loop: {result['loop_rows']:,} rows of `LEDDrift` behind "
        f"`MinMaxScaler`; array path: {result['array_rows']:,} rows of MOA's LED; 10 % labels; "
        f"median of {result['repeats']} repeats of process CPU time. Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, load average {load} at the end.",
        "", *[f"- {line}" for line in targets(result)], "", tables(result), ""])


def measure(args) -> dict:
    """`bench_safety` with the bench parser's flags: `--instances` (rows of both paths;
    default 20,000 in River's loop and 100,000 on the array path, a quarter and a fifth with
    `--quick`), `--repeats` (default 3, 1 with `--quick`), `--quiet`."""
    def given(value, default, quick):
        return value if value is not None else (quick if args.quick else default)

    progress = None if args.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    return bench_safety(loop_rows=given(args.instances, 20_000, 5000),
                        array_rows=given(args.instances, 100_000, 20_000),
                        repeats=given(args.repeats, 3, 1), progress=progress)


def run(args, command: str | None = None) -> int:
    """`python -m evaluation bench safety`: print the report, and write it to `--out`."""
    command = command or "python -m evaluation bench safety " + " ".join(sys.argv[1:])
    text = report(measure(args), command)
    print(text)
    if args.out:
        from . import write_report

        write_report(args.out, text, command)
    return 0
