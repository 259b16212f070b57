"""Trials of the online experiment: seeding, local or Dask execution, CSV and markdown outputs."""

from __future__ import annotations

import time
import zlib
from concurrent import futures
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..curve import Curve
from ..prequential import prequential
from . import progress, registry
from .files import atomic_write, atomic_write_all, check_writable  # noqa: F401 (old home)
from .warmup import announce
from .workers import counting, process_pool

__all__ = [
    "Trial",
    "run_trial",
    "run_trials",
    "summarise",
    "trial_seeds",
    "write_outputs",
]

CURVE_COLUMNS = ["stream", "model", "trial", "position", "faded_error", "error"]


@dataclass(frozen=True)
class Trial:
    """Everything one trial needs: a picklable recipe, run the same anywhere."""

    stream: str
    model: str
    trial: int
    instances: int
    label_ratio: float = 0.1
    label_batch: int | None = 20
    batch_size: int = 20
    fading_factor: float = 0.995
    step: int = 1000
    seed: int = 0
    params: dict = field(default_factory=dict, hash=False)
    preset: str = "paper"
    delay: int = 0  # kept labels reach the learner this many rows late (`streams.LabelMask`)
    warm_up: int = 0  # the first rows all keep their labels

    def seeds(self) -> tuple[int, int, int]:
        return trial_seeds(self.stream, self.model, self.trial, self.seed)

    def build(self):
        """The masked stream and the fresh model of this trial."""
        stream_seed, mask_seed, model_seed = self.seeds()
        dataset = registry.masked_stream(  # label_batch 0 or None: each instance on its own
            self.stream, stream_seed, self.label_ratio, self.label_batch or None, mask_seed,
            delay=self.delay, warm_up=self.warm_up,
        )
        model = registry.make_model(
            self.model, dataset.n_features, dataset.n_classes, seed=model_seed,
            params=self.params, batch_size=self.batch_size, preset=self.preset,
        )
        return dataset, model


def _seed(*parts) -> int:
    """A seed in [0, 2**31) (a non-negative Java int) from ints and strings, stable across runs."""
    words = [zlib.crc32(p.encode()) if isinstance(p, str) else int(p) % 2**32 for p in parts]
    return int(np.random.SeedSequence(words).generate_state(1)[0] % 2**31)


def trial_seeds(stream: str, model: str, trial: int, seed: int = 0) -> tuple[int, int, int]:
    """Seeds of (stream, label mask, model) for one trial.

    The stream and its mask depend on (stream, trial, seed) only, so every model of a trial sees
    the same instances and the same kept labels; the model's own seed also depends on its name.
    Nothing depends on the order or the place the trials run in.
    """
    stream_seed = _seed(seed, stream, trial, "stream")
    mask_seed = _seed(seed, stream, trial, "mask")
    # an ablation (`<model>/labeled-only`) starts from its model's seed: a paired comparison
    model_seed = _seed(seed, stream, registry.split_ablation(model)[0], trial, "model")
    return stream_seed, mask_seed, model_seed


def run_trial(trial: Trial, progress=None) -> dict:
    """Run one trial; returns its spec and curve as plain data (cheap to pickle)."""
    dataset, model = trial.build()
    cpu = time.process_time()  # this process's CPU: comparable whatever else runs beside it
    result = prequential(
        dataset, model, trial.instances, batch_size=trial.batch_size,
        fading_factor=trial.fading_factor, step=trial.step, progress=progress,
    )
    return {
        "trial": asdict(trial),
        "positions": result.positions,
        "faded_error": result.faded_error,
        "error": result.error,
        "seconds": result.seconds,
        "cpu_seconds": time.process_time() - cpu,
    }


_progress_queue = None  # set in each worker process by `_init_worker`


def _init_worker(queue) -> None:
    global _progress_queue
    _progress_queue = queue


def _run_in_worker(trial: Trial, index: int) -> dict:
    queue = _progress_queue
    return run_trial(trial, progress=None if queue is None else lambda n: queue.put((index, n)))


class _Bars:
    """An overall bar (instances) and, on a terminal, one bar per running trial; no-op when
    quiet (`evaluation.runs.progress` draws bars or writes lines)."""

    def __init__(self, trials, quiet: bool):
        self.trials, self.quiet = trials, quiet
        self.per_trial: dict[int, object] = {}
        self.nested = not quiet and progress.interactive()  # a log gets the overall lines only
        self.total = progress.bar(sum(t.instances for t in trials), "all trials", unit="inst",
                                  quiet=quiet, unit_scale=True, position=0, dynamic_ncols=True)

    def update(self, index: int, n: int) -> None:
        if self.quiet:
            return
        bar = self.per_trial.get(index)
        if bar is None and self.nested:
            from tqdm.auto import tqdm

            t = self.trials[index]
            used = {b.pos for b in self.per_trial.values()}
            line = next(k for k in range(1, len(used) + 2) if k not in used and -k not in used)
            bar = tqdm(
                total=t.instances, desc=f"{t.stream} {t.model} #{t.trial}", unit="inst",
                unit_scale=True, leave=False, position=line, dynamic_ncols=True,
            )
            self.per_trial[index] = bar
        if bar is not None:
            bar.update(n)
        self.total.update(n)

    def done(self, index: int) -> None:
        bar = self.per_trial.pop(index, None)
        if bar is not None:
            bar.close()

    def close(self) -> None:
        for index in list(self.per_trial):
            self.done(index)
        self.total.close()


def run_trials(trials, jobs: int = 1, scheduler: str | None = None, quiet: bool = False,
               recording: bool = False) -> list:
    """Run `trials` and return their results in the same order.

    `jobs` > 1 runs them in that many local worker processes, `scheduler` (the address of a
    `dask.distributed` scheduler, or a `distributed.Client`) on a Dask cluster. Each trial is
    seeded from its own spec, so the results do not depend on where or in which order it runs.
    """
    trials = list(trials)
    bars = _Bars(trials, quiet)
    try:
        if scheduler is not None:
            return _run_dask(trials, scheduler, bars)
        if jobs <= 1 or len(trials) == 1:
            # one notice names every model (`recording`: the results' behaviour panel too)
            announce((t.build()[1] for t in _kinds(trials)), recording)
            results: list = [None] * len(trials)
            with counting(results, "trials"):
                for i, t in enumerate(trials):
                    results[i] = run_trial(t, progress=lambda n, i=i: bars.update(i, n))
                    bars.done(i)
            return results
        return _run_processes(trials, jobs, bars, recording)
    finally:
        bars.close()


def _kinds(trials) -> list:
    """One trial of each kind of this project's models (stream, model and settings) in
    `trials`: what compiles differently."""
    kinds = {}
    for t in trials:
        if registry.split_ablation(t.model)[0] in registry.MODELS:  # no other library's
            key = (t.stream, t.model, t.preset, t.batch_size, repr(sorted(t.params.items())))
            kinds.setdefault(key, t)
    return list(kinds.values())


def _warm_up(trials, recording: bool) -> None:
    """Compile each of this project's models the trials run, here, once (`warmup.warm_up`)."""
    from .warmup import warm_up

    built = [t.build() for t in _kinds(trials)]
    for dataset, _ in built:  # the streams' own kernels, and the curve's
        X, y, _ = next(dataset.iter_arrays(100))
        Curve(len(y), len(y), 0.995).fold(np.ones(len(y)))
    warm_up(((model, dataset.n_features) for dataset, model in built), arrays=True,
            recording=recording)


def _run_processes(trials, jobs, bars, recording: bool) -> list:
    import multiprocessing as mp
    import queue as queue_module

    _warm_up(trials, recording)

    # Workers fork from a server that imported this module once: cheap to start, and no
    # threads of this process (progress bars) are copied into them.
    context = mp.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    queue = None if bars.quiet else context.Queue()
    results: list = [None] * len(trials)
    with counting(results, "trials"), process_pool(
        jobs, context=context, initializer=_init_worker, initargs=(queue,)
    ) as pool:
        pending = {pool.submit(_run_in_worker, t, i): i for i, t in enumerate(trials)}

        def drain(timeout):
            while queue is not None:
                try:
                    bars.update(*queue.get(timeout=timeout))
                except queue_module.Empty:
                    return

        while pending:
            done, _ = futures.wait(pending, timeout=0.2, return_when=futures.FIRST_COMPLETED)
            drain(timeout=0.001)
            for f in done:
                i = pending.pop(f)
                results[i] = f.result()
                bars.done(i)
        drain(timeout=0.05)  # messages still in flight when the last trial returned
    return results


def _run_dask(trials, scheduler, bars) -> list:
    from distributed import Client, as_completed

    client = scheduler if isinstance(scheduler, Client) else Client(scheduler, timeout="10s")
    try:
        jobs = client.map(run_trial, trials, pure=False)
        index = {f.key: i for i, f in enumerate(jobs)}
        results: list = [None] * len(trials)
        for f in as_completed(jobs):
            i = index[f.key]
            results[i] = f.result()
            bars.update(i, trials[i].instances)
            bars.done(i)
        return results
    finally:
        if client is not scheduler:
            client.close()


# ---------------------------------------------------------------------------------- outputs


def curves_frame(results) -> pd.DataFrame:
    """The long table of curves: one row per (stream, model, trial, position)."""
    frames = []
    for r in results:
        t = r["trial"]
        n = len(r["positions"])
        frames.append(
            pd.DataFrame(
                {
                    "stream": [t["stream"]] * n,
                    "model": [t["model"]] * n,
                    "trial": np.full(n, t["trial"]),
                    "position": r["positions"],
                    "faded_error": r["faded_error"],
                    "error": r["error"],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)[CURVE_COLUMNS]


def trials_frame(results) -> pd.DataFrame:
    """One row per trial: its seeds, wall and CPU time and speed."""
    rows = []
    for r in results:
        t = Trial(**r["trial"])
        stream_seed, mask_seed, model_seed = t.seeds()
        n = int(r["positions"][-1])
        rows.append({
            "stream": t.stream, "model": t.model, "trial": t.trial, "instances": n,
            "stream_seed": stream_seed, "mask_seed": mask_seed, "model_seed": model_seed,
            "seconds": r["seconds"], "cpu_seconds": r["cpu_seconds"],
            "instances_per_second": n / r["seconds"],
            "final_faded_error": float(r["faded_error"][-1]),
        })
    return pd.DataFrame(rows)


def summarise(curves: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard error over trials of the faded error: its average over the run, its
    average over the run's last quarter (the last 50,000 of 200,000 instances: the learning
    targets' measure) and its final value.

    Computed from the curves table alone, so it can be redone from a CSV.
    """
    keys = ["stream", "model", "trial"]
    by_position = curves.sort_values("position", kind="stable")
    last = by_position.groupby(keys, sort=False)["position"].transform("max")
    tail = (
        by_position[by_position.position > 0.75 * last]
        .groupby(keys, sort=False)["faded_error"].mean().rename("tail_faded_error")
    )
    per_trial = (
        by_position.groupby(keys, sort=False)
        .agg(
            instances=("position", "last"),
            mean_faded_error=("faded_error", "mean"),
            final_faded_error=("faded_error", "last"),
            final_error=("error", "last"),
        )
        .join(tail)
        .reset_index()
    )
    rows = []
    groups = dict(list(per_trial.groupby(["stream", "model"], sort=False)))
    for stream, model in dict.fromkeys(zip(curves.stream, curves.model)):  # order of the run
        g = groups[(stream, model)]
        row = {"stream": stream, "model": model, "trials": len(g),
               "instances": int(g.instances.max())}
        for col in ("mean_faded_error", "tail_faded_error", "final_faded_error", "final_error"):
            values = g[col].to_numpy()
            row[col] = values.mean()
            n = len(values)
            row[f"{col}_se"] = values.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def summary_markdown(summary: pd.DataFrame) -> str:
    """The summary as a markdown table, errors in percent as `mean ± standard error`."""

    def cell(mean, se):
        return f"{100 * mean:.2f}" if np.isnan(se) else f"{100 * mean:.2f} ± {100 * se:.2f}"

    lines = [
        "| stream | model | trials | instances | average faded error (%) "
        "| last quarter (%) | final faded error (%) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in summary.itertuples(index=False):
        lines.append(
            f"| {r.stream} | {r.model} | {r.trials} | {r.instances:,} | "
            f"{cell(r.mean_faded_error, r.mean_faded_error_se)} | "
            f"{cell(r.tail_faded_error, r.tail_faded_error_se)} | "
            f"{cell(r.final_faded_error, r.final_faded_error_se)} |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(
    results, out, settings: dict | None = None, figure: str | None = "prequential_error"
) -> list[Path]:
    """Write curves.csv, summary.csv, summary.md, trials.csv, settings.json and the figure (PNG
    and PDF, unless `figure` is None) into `out`, all or nothing."""
    out = check_writable(out)
    curves = curves_frame(results)
    summary = summarise(curves)
    per_trial = trials_frame(results)
    jobs = [
        (out / "curves.csv", lambda p: curves.to_csv(p, index=False)),
        (out / "trials.csv", lambda p: per_trial.to_csv(p, index=False)),
        (out / "summary.csv", lambda p: summary.to_csv(p, index=False)),
        (out / "summary.md", lambda p: p.write_text(summary_markdown(summary))),
    ]
    if settings is not None:
        from .files import settings_job

        jobs.append(settings_job(out, settings))
    fig = None
    if figure is not None:
        from .plots import draw_figure

        fig = draw_figure(curves)
        for ext in ("png", "pdf"):
            jobs.append((out / f"{figure}.{ext}",
                         lambda p, ext=ext: fig.savefig(p, format=ext, dpi=150)))
    try:
        return atomic_write_all(jobs)
    finally:
        if fig is not None:
            import matplotlib.pyplot as plt

            plt.close(fig)
