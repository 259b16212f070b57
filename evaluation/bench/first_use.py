"""The first use on a fresh install: seconds from a new process to a model's first prediction.

`python -m evaluation bench first_use [DHBM DHDA ...] [--out FILE]` runs, for each model in a
process of its own with an empty Numba cache (`NUMBA_CACHE_DIR` set to a new temporary
directory), what a new user's first lines do: import `river_dhbm` and `streams`, build the
model with its defaults and a seed, learn 41 labeled rows of `streams.LEDDrift` (`learn_one`)
and predict one row; then the same with the cache warm (not with `--quick`). With `--kernels`
it says where each model's first use goes instead: the seconds Numba spends on each jitted
function it compiles (`CompileClock`), and how much of the whole is LLVM's. The models
benchmark (`bench models`) times the phases of the DHBM's start (`startup_times`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from . import write_report

# ------------------------------------------------------------------ the models benchmark's start

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


# ---------------------------------------------------------------------------------- first use

#: What a new user runs (issue 55's sequence): import the models and the streams, build a model
#: with its defaults and a seed, learn 41 labeled rows of MOA's drifting LED stream one by one
#: (two updates, which compile the learning kernels on a cold cache, and one row more), then
#: predict one row.
_FIRST_USE_SCRIPT = r"""
import json, sys, time
start = time.time()
import river_dhbm, streams
imported = time.time()
model = getattr(river_dhbm, sys.argv[1])(seed=1)
for i, (x, y) in enumerate(streams.LEDDrift(seed=1)):
    model.learn_one(x, y)
    if i == FIRST_USE_ROWS - 1:
        break
model.predict_one(x)
try:  # the copy that compiled the first update ahead (`river_dhbm._kernels.ahead`), reaped
    import resource
    copies = resource.getrusage(resource.RUSAGE_CHILDREN)
    copies = copies.ru_utime + copies.ru_stime
except ImportError:
    copies = 0.0
print(json.dumps({"import": imported - start, "predicted_at": time.time(),
                  "cpu": time.process_time() + copies}))
"""

FIRST_USE_ROWS = 41  # labeled rows learnt before the first prediction
FIRST_USE_MODELS = ("DHBM", "DHDA", "SBEN", "HSDA", "PseudoLabelMLP")
#: Seconds to the first prediction with an empty cache on a 2-core machine (issue 55): the
#: DHBM's, and every other model's.
TARGET_FIRST_USE = {"DHBM": 12.0}
TARGET_FIRST_USE_OTHERS = 15.0


def _script(script: str) -> str:
    return script.replace("FIRST_USE_ROWS", str(FIRST_USE_ROWS))


def verdict(rows: list[dict]) -> str:
    """One line: each model's first prediction with an empty cache against its target."""
    parts = []
    for r in rows:
        if r["cache"] == "empty":
            target = TARGET_FIRST_USE.get(r["model"], TARGET_FIRST_USE_OTHERS)
            mark = "met" if r["to_first_prediction"] <= target else "not met"
            parts.append(f"{r['model']}() {r['to_first_prediction']:.1f} s "
                         f"(target <= {target:.0f} s: {mark})")
    line = "first prediction with an empty cache: " + "; ".join(parts)
    alone = {r["model"]: r["to_first_prediction"] for r in rows if r["cache"] == "empty, no copy"}
    saved = [f"{r['model']}() {alone[r['model']] - r['to_first_prediction']:.1f} s"
             for r in rows if r["cache"] == "empty" and r["model"] in alone]
    if saved:
        line += "\nthe copy that compiles ahead saved: " + "; ".join(saved)
    return line


def _run_fresh(script: str, model: str, cold: bool = True,
               **settings: str) -> tuple[dict, str, float]:
    """Run `script` with the argument `model` in a new Python process, the JIT on, `settings`
    in its environment and, when `cold`, an empty Numba cache (a new `NUMBA_CACHE_DIR`): the
    JSON of its last line on stdout, its stderr, and the time it was started."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_JIT"}
    env.update(settings)
    with tempfile.TemporaryDirectory(prefix="numba_first_use_") as tmp:
        if cold:
            env["NUMBA_CACHE_DIR"] = tmp
        spawned = time.time()
        done = subprocess.run([sys.executable, "-c", script, model], env=env,
                              capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the {model} process failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr, spawned


def first_use_time(model: str = "DHBM", cold: bool = True, ahead: bool = True) -> dict:
    """Seconds from the start of a new process (interpreter start included) to `model()`'s
    first prediction after it has learnt one labeled mini-batch, wall (`to_first_prediction`)
    and the CPU of the process and of the copy that compiled ahead (`cpu`); with an empty
    Numba cache (`cold`, a new `NUMBA_CACHE_DIR`) or the usual one; without the copy
    (`RIVER_DHBM_COMPILE_AHEAD=0`) unless `ahead`. Also the import's seconds and the line the
    process wrote on stderr (the compile notice)."""
    settings = {} if ahead else {"RIVER_DHBM_COMPILE_AHEAD": "0"}
    marks, stderr, spawned = _run_fresh(_script(_FIRST_USE_SCRIPT), model, cold, **settings)
    notice = [line for line in stderr.splitlines() if line.startswith("river_dhbm:")]
    cache = ("empty" if cold else "warm") + ("" if ahead else ", no copy")
    return {"model": model, "cache": cache,
            "to_first_prediction": marks["predicted_at"] - spawned,
            "cpu": marks["cpu"], "import": marks["import"], "notice": notice[0] if notice else ""}


# ------------------------------------------------------------- where the first use goes


class CompileClock:
    """Numba's compile events (`numba.core.event`, kind "numba:compile") turned into each jitted
    function's OWN seconds: the time its compilation took less the time of the compilations
    it started (its callees, typed and compiled while it is typed). `register()` starts
    listening, `unregister()` stops; `kernels()` gives `(name, compilations, own seconds)` from
    the costliest."""

    def __init__(self) -> None:
        self._open: list[list[float]] = []  # [start, seconds of the callees] per open compile
        self.own: dict[str, float] = {}
        self.count: dict[str, int] = {}

    def on_start(self, event) -> None:
        self._open.append([time.perf_counter(), 0.0])

    def on_end(self, event) -> None:
        start, callees = self._open.pop()
        took = time.perf_counter() - start
        if self._open:
            self._open[-1][1] += took
        func = getattr((event.data or {}).get("dispatcher"), "py_func", None)
        name = f"{func.__module__}.{func.__qualname__}" if func is not None else "?"
        self.own[name] = self.own.get(name, 0.0) + took - callees
        self.count[name] = self.count.get(name, 0) + 1

    def register(self) -> "CompileClock":
        from numba.core import event  # here: the bench CLI's parser imports this module

        class _Listener(event.Listener):
            def on_start(_, ev):
                self.on_start(ev)

            def on_end(_, ev):
                self.on_end(ev)

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        return self

    def unregister(self) -> None:
        from numba.core import event

        event.unregister("numba:compile", self._listener)

    def kernels(self) -> list[tuple[str, int, float]]:
        return sorted(((n, self.count[n], s) for n, s in self.own.items()), key=lambda r: -r[2])


#: The first-use script with the clocks on: each function's own compile seconds, and LLVM's
#: share (Numba's own "numba:llvm_lock" timer: the time spent holding LLVM).
_KERNELS_SCRIPT = r"""
import json, sys, time
from numba.core import event
from evaluation.bench.first_use import CompileClock
clock = CompileClock().register()
llvm = []
import river_dhbm, streams
model = getattr(river_dhbm, sys.argv[1])(seed=1)
start = time.process_time()
with event.install_timer("numba:llvm_lock", llvm.append):
    for i, (x, y) in enumerate(streams.LEDDrift(seed=1)):
        model.learn_one(x, y)
        if i == FIRST_USE_ROWS - 1:
            break
    model.predict_one(x)
print(json.dumps({"cpu": time.process_time() - start, "llvm": sum(llvm),
                  "kernels": clock.kernels()}))
"""


def kernel_breakdown(model: str = "DHBM") -> dict:
    """Where `model()`'s first use goes, in a fresh process with an empty Numba cache: CPU
    seconds of its first update and prediction (`cpu`), of which LLVM (`llvm`), and each
    compiled function's `(name, compilations, own seconds)` (`kernels`). Everything compiles
    in that one process (`RIVER_DHBM_COMPILE_AHEAD=0`), so that its clock sees it all."""
    breakdown = _run_fresh(_script(_KERNELS_SCRIPT), model, RIVER_DHBM_COMPILE_AHEAD="0")[0]
    return {"model": model, **breakdown}


def format_kernels(breakdown: dict, top: int = 12) -> str:
    """Markdown table of a `kernel_breakdown`: its `top` costliest functions, then the rest."""
    cpu, kernels = breakdown["cpu"], breakdown["kernels"]
    lines = [f"{breakdown['model']}(): {cpu:.1f} s of CPU to the first prediction, "
             f"{breakdown['llvm']:.1f} s of it in LLVM; {sum(c for _, c, _ in kernels)} "
             f"compilations of {len(kernels)} functions", "",
             "| function | compilations | own seconds | share |", "|---|---:|---:|---:|"]
    for name, count, seconds in kernels[:top]:
        lines.append(f"| `{name}` | {count} | {seconds:.2f} | {seconds / cpu:.0%} |")
    rest = kernels[top:]
    if rest:
        seconds = sum(s for _, _, s in rest)
        lines.append(f"| {len(rest)} others | {sum(c for _, c, _ in rest)} | {seconds:.2f} "
                     f"| {seconds / cpu:.0%} |")
    return "\n".join(lines)


def bench_first_use(models=FIRST_USE_MODELS, warm: bool = True) -> list[dict]:
    """`first_use_time` of each model, with an empty cache, then the same without the copy
    that compiles ahead (the peer, in the same run), then, if `warm`, a warm cache."""
    rows = []
    for model in models:
        rows.append(first_use_time(model, cold=True))
        rows.append(first_use_time(model, cold=True, ahead=False))
        if warm:
            first_use_time(model, cold=False)  # fills the usual cache if it was not
            rows.append(first_use_time(model, cold=False))
    return rows


#: Columns of `format_table`: (header, right-aligned, cell of a row).
_COLUMNS = (
    ("model", False, lambda r: f"{r['model']}()"),
    ("Numba cache", False, lambda r: r["cache"]),
    ("first prediction (wall)", True,
     lambda r: f"{r['to_first_prediction']:.1f} s"),
    ("CPU", True, lambda r: f"{r['cpu']:.1f} s"),
    ("import river_dhbm", True, lambda r: f"{r['import']:.2f} s"),
    ("stderr", False, lambda r: r["notice"] or "(nothing)"),
)


def format_table(rows: list[dict]) -> str:
    """Markdown table of `bench_first_use` rows."""
    table = [[h for h, _, _ in _COLUMNS], ["---:" if right else "---" for _, right, _ in _COLUMNS]]
    table += [[cell(r) for _, _, cell in _COLUMNS] for r in rows]
    return "\n".join("| " + " | ".join(line) + " |" for line in table)


def _machine() -> str:
    import platform

    import numba

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{os.cpu_count()} cores, load average {load:.1f} at the end; Python "
            f"{platform.python_version()}, Numba {numba.__version__}")


def run(args: argparse.Namespace, command: str) -> int:
    """`bench first_use`: the models named in `args.rest` (or `--models`; default all five),
    with a warm cache too unless `--quick`; the report goes to `args.out` if given."""
    models = args.rest or args.models or list(FIRST_USE_MODELS)
    unknown = [m for m in models if m not in FIRST_USE_MODELS]
    if unknown:
        raise ValueError(f"unknown model {unknown[0]!r}; choose from {', '.join(FIRST_USE_MODELS)}")
    if getattr(args, "kernels", False):
        try:
            report = "\n\n".join(format_kernels(kernel_breakdown(m)) for m in models)
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(report)
        if args.out:
            write_report(args.out, "\n".join(["# Where the first use goes", "", f"`{command}`",
                                               "", report, "", f"Machine: {_machine()}.", ""]),
                         command)
        return 0
    try:
        rows = bench_first_use(models) if not args.quick else bench_first_use(models, warm=False)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    line = verdict(rows)
    print(format_table(rows), "", line, sep="\n")
    if args.out:
        text = "\n".join([
            "# First use", "", f"`{command}`", "",
            f"Seconds from the start of a new process to the first prediction after "
            f"{FIRST_USE_ROWS} labeled rows of `streams.LEDDrift` (`learn_one`), each model "
            "in a process of its own; `empty`: a new "
            "NUMBA_CACHE_DIR (a fresh install), `empty, no copy`: the same with "
            "RIVER_DHBM_COMPILE_AHEAD=0 (everything compiled in the one process), `warm`: "
            "the cache the first run filled. "
            "CPU: the process's and that of the copy that compiles its first update ahead "
            "(`river_dhbm._kernels.ahead`).", "",
            format_table(rows), "", line, "", f"Machine: {_machine()}.", ""])
        write_report(args.out, text, command)
    return 0


def main(argv: list[str] | None = None, prog: str = "python -m evaluation bench first_use") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("rest", nargs="*", metavar="model",
                        help=f"from {', '.join(FIRST_USE_MODELS)} (default all)")
    parser.add_argument("--out", help="markdown file written with the table")
    parser.add_argument("--quick", action="store_true", help="empty cache only")
    parser.add_argument("--kernels", action="store_true",
                        help="instead: the compile seconds of each jitted function (empty cache)")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    args.models = None
    try:
        return run(args, " ".join([prog, *argv]))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
