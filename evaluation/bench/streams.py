"""Speed of the streams' array path against MOA's own generators, measured in one run.

Run it with `python -m evaluation bench streams [--instances N] [--repeats R] [--out FILE]`; it
prints a markdown report of instances per second (median over the repeats) and the speed ratio
ours / MOA, and writes it to FILE with a `settings.json` beside it.

Rates and ratio come from the CPU time of the thread doing the work (`time.thread_time`, Java's
`ThreadMXBean`, as MOA's own `MeasureStreamSpeed`), which stays meaningful on a machine shared
with other jobs; wall-clock rates are reported beside them. The Numba kernels run in the calling
thread; Java's GC and JIT threads are not counted, which can only favour MOA.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import streams

__all__ = ["bench_streams", "format_table", "moa_jar", "report", "run"]

JAVA_SOURCE = pathlib.Path(__file__).with_name("MoaStreamBench.java")

# (label, factory) of the streams the issue names: MOA's `-n 10 -d 4` and `-n -d 10`.
STREAMS = (
    (
        "LEDDrift(noise_percentage=10, n_drift_features=4)",
        lambda: streams.LEDDrift(noise_percentage=10, n_drift_features=4),
    ),
    (
        "WaveformDrift(has_noise=True, n_drift_features=10)",
        lambda: streams.WaveformDrift(has_noise=True, n_drift_features=10),
    ),
)


def moa_jar() -> pathlib.Path | None:
    """The `moa.jar` bundled with capymoa, found without importing capymoa (which starts a JVM)."""
    spec = importlib.util.find_spec("capymoa")
    if spec is None or spec.origin is None:
        return None
    jar = pathlib.Path(spec.origin).parent / "jar" / "moa.jar"
    return jar if jar.is_file() else None


def time_array_path(stream, n_instances: int, repeats: int, chunk_size: int) -> dict:
    """Wall and thread CPU time to draw `n_instances` through `stream.iter_arrays(chunk_size)`.

    A first block is drawn before timing so Numba's compile (or cache load) is excluded.

    """
    next(stream.iter_arrays(chunk_size=chunk_size))
    seconds, cpu_seconds = [], []
    for _ in range(repeats):
        cpu_start, start = time.thread_time(), time.perf_counter()
        n_drawn = 0
        for _, y in stream.iter_arrays(chunk_size=chunk_size):
            n_drawn += len(y)
            if n_drawn >= n_instances:
                break
        seconds.append(time.perf_counter() - start)
        cpu_seconds.append(time.thread_time() - cpu_start)
    return {"n_instances": n_drawn, "seconds": seconds, "cpu_seconds": cpu_seconds}


def time_moa_javac(clis: list[str], n_instances: int, repeats: int, warmup: int) -> list[dict]:
    """Compile `MoaStreamBench.java` against moa.jar in a temp dir and run it with `java`."""
    jar = moa_jar()
    with tempfile.TemporaryDirectory(prefix="moa_bench_") as tmp:
        subprocess.run(
            [shutil.which("javac"), "-nowarn", "-cp", str(jar), "-d", tmp, str(JAVA_SOURCE)],
            check=True,
            capture_output=True,
            text=True,
        )
        done = subprocess.run(
            [shutil.which("java"), "-cp", f"{jar}{os.pathsep}{tmp}", "MoaStreamBench"]
            + [str(n_instances), str(repeats), str(warmup), *clis],
            check=True,
            capture_output=True,
            text=True,
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def time_moa_jpype(clis: list[str], n_instances: int, repeats: int, warmup: int) -> list[dict]:
    """Time MOA's `MeasureStreamSpeed` task (a pure Java loop) through capymoa's JVM.

    Used when `javac` is missing. The times around `doTask()` include the stream's
    `prepareForUse()` (negligible) and one JPype call per repeat; JPype runs the task in the
    calling thread, so `time.thread_time` measures it.

    """
    import capymoa  # noqa: F401  (starts the JVM with moa.jar on the class path)
    from jpype import JClass

    class_option, task_type = JClass("moa.options.ClassOption"), JClass("moa.tasks.Task")

    def run(cli, n):
        task_cli = f"MeasureStreamSpeed -s ({cli}) -g {n}"
        task = class_option.cliStringToObject(task_cli, task_type, None)
        task.prepareForUse()
        cpu_start, start = time.thread_time(), time.perf_counter()
        task.doTask()
        return time.perf_counter() - start, time.thread_time() - cpu_start

    results = []
    for cli in clis:
        run(cli, warmup)
        seconds, cpu_seconds = zip(*(run(cli, n_instances) for _ in range(repeats)))
        results.append(
            {
                "cli": cli,
                "n_instances": n_instances,
                "seconds": list(seconds),
                "cpu_seconds": list(cpu_seconds),
            }
        )
    return results


def time_moa(clis: list[str], n_instances: int, repeats: int, warmup: int) -> tuple[str, object]:
    """(method, per-stream timings) or (method, reason) when MOA cannot be run."""
    if moa_jar() is None:
        return "MOA", "unavailable: capymoa (moa.jar) is not installed"
    if shutil.which("java") is None:
        return "MOA", "unavailable: no java on PATH"
    try:
        if shutil.which("javac") is not None:
            return "MOA (Java loop, javac)", time_moa_javac(clis, n_instances, repeats, warmup)
        return "MOA (MeasureStreamSpeed via capymoa)", time_moa_jpype(
            clis, n_instances, repeats, warmup
        )
    except (OSError, subprocess.CalledProcessError, ImportError, RuntimeError, ValueError) as error:
        detail = getattr(error, "stderr", None) or str(error)
        return "MOA", f"unavailable: {detail.strip().splitlines()[-1] if detail.strip() else error}"


def bench_streams(
    n_instances: int = 200_000,
    repeats: int = 5,
    chunk_size: int = 1000,
    warmup: int | None = None,
    moa: bool = True,
) -> list[dict]:
    """Instances per second of our array path and of MOA, for the paper's two streams.

    Parameters
    ----------
    n_instances
        Instances drawn per timed repeat.
    repeats
        Timed repeats; the median time is reported.
    chunk_size
        Block size of the array path.
    warmup
        Instances MOA draws before timing, for the JIT (default: `n_instances`).
    moa
        Whether to time MOA too.

    Returns
    -------
    One row per (stream, implementation): `stream`, `implementation`, `instances_per_s`
    (from the median thread CPU time; `None` if unavailable), `wall_instances_per_s` (from the
    median wall time), `ratio` (our CPU rate over MOA's; 1.0 on MOA's row, `None` without
    MOA), `n_instances`, `seconds` and `cpu_seconds` (every repeat) and `detail` (MOA command
    line, or why MOA is unavailable).

    """
    for name, value in (("n_instances", n_instances), ("repeats", repeats)):
        if value < 1:
            raise ValueError(f"Invalid {name} ({value}). Must be >= 1")
    made = [(label, factory()) for label, factory in STREAMS]
    ours = [time_array_path(stream, n_instances, repeats, chunk_size) for _, stream in made]
    clis = [stream.moa_cli() for _, stream in made]
    if moa:
        method, theirs = time_moa(clis, n_instances, repeats, warmup or n_instances)
    else:
        method, theirs = "MOA", "not measured (moa=False)"

    rows = []
    for i, (label, _) in enumerate(made):
        mine = _row(label, f"river-dhbm array path (chunk_size={chunk_size})", ours[i], "")
        if isinstance(theirs, str):
            moa_row = _row(label, method, None, theirs)
            mine["ratio"] = None
        else:
            moa_row = _row(label, method, theirs[i], clis[i])
            mine["ratio"] = mine["instances_per_s"] / moa_row["instances_per_s"]
        rows += [mine, moa_row]
    return rows


def _row(stream: str, implementation: str, timing: dict | None, detail: str) -> dict:
    if timing is None:
        return {
            "stream": stream,
            "implementation": implementation,
            "instances_per_s": None,
            "wall_instances_per_s": None,
            "ratio": None,
            "n_instances": None,
            "seconds": [],
            "cpu_seconds": [],
            "detail": detail,
        }
    n = timing["n_instances"]
    return {
        "stream": stream,
        "implementation": implementation,
        "instances_per_s": n / statistics.median(timing["cpu_seconds"]),
        "wall_instances_per_s": n / statistics.median(timing["seconds"]),
        "ratio": 1.0,
        "n_instances": n,
        "seconds": list(timing["seconds"]),
        "cpu_seconds": list(timing["cpu_seconds"]),
        "detail": detail,
    }


def format_table(rows: list[dict]) -> str:
    """Markdown table of `bench_streams` rows."""
    lines = [
        "| stream | implementation | instances/s (CPU, median) | instances/s (wall, median)"
        " | ratio ours/MOA (CPU) |",
        "|---|---|---:|---:|---:|",
    ]
    for row in rows:
        if row["instances_per_s"] is None:
            rates = f"{row.get('detail') or 'unavailable'} | "
        else:
            rates = f"{row['instances_per_s']:,.0f} | {row['wall_instances_per_s']:,.0f}"
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}"
        lines.append(f"| {row['stream']} | {row['implementation']} | {rates} | {ratio} |")
    return "\n".join(lines)


def report(rows: list[dict], command: str) -> str:
    """The markdown report of `bench_streams` rows: the command, how the rates are measured,
    the table and the machine."""
    import datetime
    import platform

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    n = next((r["n_instances"] for r in rows if r["n_instances"]), 0)
    repeats = max(len(r["cpu_seconds"]) for r in rows) if rows else 0
    return "\n".join([
        f"# Stream speed ({now})", "",
        f"Command: `{command}`. {n:,} instances per timed repeat, median of {repeats} repeats; "
        "rates per CPU second of the generating thread (`time.thread_time`, Java's "
        "`ThreadMXBean`), wall-clock rates beside them. Python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, load average {load} at the end.",
        "", format_table(rows), ""])


def run(args, command: str) -> int:
    """`bench streams`: `--instances` per repeat (or the first of `args.rest`; default
    200,000), `--repeats` (or the second; default 5); the report goes to `args.out` if given."""
    from . import write_report

    rest = list(getattr(args, "rest", None) or [])
    if len(rest) > 2:
        raise ValueError(f"unrecognized arguments: {' '.join(rest[2:])}")
    try:
        n = int(rest[0]) if rest else (args.instances or 200_000)
        repeats = int(rest[1]) if len(rest) > 1 else (args.repeats or 5)
    except ValueError:
        raise ValueError(f"Invalid instances or repeats ({' '.join(rest)}). Must be "
                         "integers") from None
    text = report(bench_streams(n_instances=n, repeats=repeats), command)
    print(text)
    if args.out:
        write_report(args.out, text, command)
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m evaluation.bench.streams",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("rest", nargs="*", metavar="N", help="instances, repeats")
    parser.add_argument("--instances", type=int, default=None,
                        help="instances per timed repeat (default 200,000)")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (default 5)")
    parser.add_argument("--out", help="markdown report written, with a settings.json beside it")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    try:
        return run(args, " ".join(["python -m evaluation.bench.streams", *argv]))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
