"""The first update compiled ahead, on a second core, while this process scores the first rows.

A newcomer's first use compiles two things one after the other: the experts' one-row
prediction (the first `learn_one` scores its row) and the learning kernel, which is most of
the wait and is first needed `batch_size` rows later. They need not wait for each other. When
a model whose learning kernel is not in the cache fixes its features, a forked copy of this
process (`start`) learns one made-up mini-batch of two classes with its copy of the model
(`minibatch.learn_made_up_batch`), which compiles the learning kernel (and the linear
expert's) into the shared cache, and exits. This process goes on with its rows; its first
update waits for the copy (`wait`), then loads what the copy compiled instead of compiling it
again.

Nothing learnt depends on it: the copy's model is its own (a fork copies the memory), the
machine code is the same whichever process compiled it, and a copy that fails or is stopped
only means that this process compiles what it needs itself. The cache's files are read and
written under a lock (`build.lock_cache_files`), so the two processes cannot mix up entries.

Off without `os.fork` (Windows), on one core, in a process that runs a JVM (MOA's, through
capymoa or jpype: it does not survive a fork), inside a copy, and when the environment sets
`RIVER_DHBM_COMPILE_AHEAD=0`.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import time
import warnings

__all__ = ["enabled", "start", "stop", "wait"]

#: The longest wait for a copy, in seconds: one still compiling after it (a machine far slower
#: than any measured, or a copy stuck) is stopped, and this process compiles for itself.
WAIT_LIMIT = 300.0

_children: dict[int, float] = {}  # pid -> when it started (time.monotonic)
_in_copy = False  # this process is a copy: it starts none of its own


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def _jvm_running() -> bool:
    jpype = sys.modules.get("jpype")
    try:
        return jpype is not None and bool(jpype.isJVMStarted())
    except Exception:  # an odd jpype: assume the worst
        return True


def enabled() -> bool:
    """Whether a first update may be compiled ahead in a forked copy of this process."""
    return (hasattr(os, "fork") and not _in_copy and _cores() > 1 and not _jvm_running()
            and os.environ.get("RIVER_DHBM_COMPILE_AHEAD", "1") != "0")


def start(work) -> int | None:
    """When `enabled`, run `work()` in a forked copy of this process, silent, that exits when
    it is done (without this process's exit handlers); its pid, remembered for `wait`."""
    if not enabled():
        return None
    from numba.core.compiler_lock import global_compiler_lock

    # Numba's compiler lock is held across the fork: a copy made while another thread compiles
    # would find it taken for good. Python >= 3.12 warns of forking beside threads (BLAS's).
    with warnings.catch_warnings(), global_compiler_lock:
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            pid = os.fork()
        except OSError:  # no process to spare (a limit, the memory): compile here instead
            return None
    if pid == 0:  # the copy
        global _in_copy
        _in_copy = True
        _children.clear()  # this process's, not the copy's
        status = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C stops it at once
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            work()
            status = 0
        finally:
            os._exit(status)
    _children[pid] = time.monotonic()
    return pid


def wait(limit: float = WAIT_LIMIT) -> None:
    """Wait for the copies still compiling (none: returns at once); stop one that has run for
    `limit` seconds."""
    while _children:
        for pid, started in list(_children.items()):
            if _exited(pid):
                del _children[pid]
            elif time.monotonic() - started > limit:
                _kill(pid)
        if _children:
            time.sleep(0.005)


def _exited(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:  # reaped by someone else (a SIGCHLD handler, `os.wait`)
        return True


def stop() -> None:
    """Stop the copies still running (at exit: their work is for this process only)."""
    for pid in list(_children):
        _kill(pid)


atexit.register(stop)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):  # gone already
        pass
    _children.pop(pid, None)
