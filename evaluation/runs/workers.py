"""Worker processes that stop with their parent: on Ctrl-C, on an error, and when it dies.

Ctrl-C sends SIGINT to the whole process group, workers included. A `ProcessPoolExecutor`
worker catches the KeyboardInterrupt of the run it is in, reports it as that run's result and
takes the next run; the parent, leaving its `with` block, then waits for every pending run
(minutes). And a worker waits on its call queue forever once the parent is killed (SIGKILL,
out of memory, a crashed notebook kernel), since it holds the queue's write end itself.

So every runner of this package that starts workers goes through `process_pool`: its workers
ignore SIGINT (the parent decides), watch their parent and exit when it is gone, and the
parent, on any exception, cancels the pending runs and terminates the running ones before it
re-raises. A runner turns the KeyboardInterrupt into `Interrupted`, which says how much was
done; the command line prints that in one line.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time
from concurrent import futures

__all__ = ["Interrupted", "counting", "deferred_interrupt", "process_pool", "run_each"]

#: How often (seconds) a worker checks that its parent is alive.
WATCH_SECONDS = 0.5


class Interrupted(Exception):
    """Ctrl-C stopped a runner after `done` of its `total` runs (the rest cancelled)."""

    def __init__(self, done: int, total: int, unit: str = "runs"):
        super().__init__(done, total, unit)
        self.done, self.total, self.unit = done, total, unit

    def __str__(self) -> str:
        return f"{self.done} of {self.total} {self.unit} done, the rest cancelled"


@contextlib.contextmanager
def counting(results: list, unit: str = "runs"):
    """Turn a KeyboardInterrupt in the block into `Interrupted`, counting the entries of
    `results` (one per run, None until it is done) that are done."""
    try:
        yield
    except KeyboardInterrupt:
        done = sum(r is not None for r in results)
        raise Interrupted(done, len(results), unit) from None


def _watch_parent(parent: int) -> None:
    # A dead parent's children are re-parented at once (to init or a subreaper): the parent
    # pid changes even while the dead parent is an unreaped zombie.
    while os.getppid() == parent:
        time.sleep(WATCH_SECONDS)
    os._exit(1)


def _start_worker(initializer, initargs) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the workers on Ctrl-C
    threading.Thread(target=_watch_parent, args=(os.getppid(),), daemon=True,
                     name="watch-parent").start()
    if initializer is not None:
        initializer(*initargs)


def _stop(pool: futures.ProcessPoolExecutor) -> None:
    """Cancel the pending runs and terminate the workers (SIGTERM: a worker inside a compiled
    kernel stops at once), waiting a second at most for each."""
    with _sigint_ignored():  # a second Ctrl-C: no traceback
        processes = list((pool._processes or {}).values())  # gone after shutdown: take them now
        pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            if p.is_alive():
                p.terminate()
        for p in processes:
            p.join(timeout=1.0)


@contextlib.contextmanager
def process_pool(jobs: int, context=None, initializer=None, initargs=()):
    """A `concurrent.futures.ProcessPoolExecutor` of `jobs` workers (`context` a
    multiprocessing context) whose workers ignore SIGINT and exit when their parent dies.
    Leaving the block normally waits for the runs; leaving it by an exception (Ctrl-C's
    KeyboardInterrupt included) cancels the pending runs and terminates the workers first.
    `initializer(*initargs)` runs in each worker, as the executor's own would."""
    pool = futures.ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=_start_worker,
        initargs=(initializer, initargs),
    )
    try:
        _launch(pool, jobs, context)
        yield pool
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown(wait=True)


def run_each(run_one, runs: list, results: list, jobs: int = 1, bar=None, name=None) -> None:
    """`results[i] = run_one(runs[i])` for every run: here with `jobs` 1 (the bar showing
    `name(run)` while it runs, if given), otherwise in a `process_pool` of `jobs` forkserver
    workers (the models' kernels compiled beforehand, so that the workers load Numba's cache),
    `bar.update()` after each. Call it inside `counting(results)`."""
    if jobs <= 1:
        for i, r in enumerate(runs):
            if bar is not None and name is not None:
                bar.set_postfix_str(name(r))
            results[i] = run_one(r)
            if bar is not None:
                bar.update()
        return
    with process_pool(jobs, context=multiprocessing.get_context("forkserver")) as pool:
        pending = {pool.submit(run_one, r): i for i, r in enumerate(runs)}
        for f in futures.as_completed(pending):
            results[pending[f]] = f.result()
            if bar is not None:
                bar.update()


def _launch(pool, jobs: int, context) -> None:
    """Start the workers now, so that no process of the pool starts up while Ctrl-C can
    reach it before it ignores SIGINT: a starting interpreter (a fork server importing
    pandas, a spawned worker) would print a KeyboardInterrupt traceback of its own. A
    process started by exec keeps an ignored SIGINT ignored, so the fork server and the
    resource tracker start with SIGINT ignored here (milliseconds), the fork server's
    workers inherit that, and spawned workers start so too; this process takes a Ctrl-C
    of the rest of the launch when the launch is done."""
    from multiprocessing import forkserver, resource_tracker

    method = (context or multiprocessing.get_context()).get_start_method()
    with _sigint_ignored():
        resource_tracker.ensure_running()
        if method == "forkserver":
            forkserver.ensure_running()
        elif method == "spawn":
            for _ in range(jobs):  # the first submissions start every worker
                pool.submit(int)
            return
    with deferred_interrupt():
        for _ in range(jobs):
            pool.submit(int)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # signal handlers live there


@contextlib.contextmanager
def _sigint_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def deferred_interrupt():
    """Hold a Ctrl-C (SIGINT) until the block ends, then raise its KeyboardInterrupt."""
    if not _main_thread():
        yield
        return
    caught = []
    previous = signal.signal(signal.SIGINT, lambda *frame: caught.append(True))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
