"""The first update compiled ahead in a forked copy (`river_dhbm._kernels.ahead`), and the
cache's lock that lets processes compile into one cache at once (`build.lock_cache_files`)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import threading
import time
import types
import uuid

import pytest
from fresh_process import run_fresh
from numba.core import caching, config

from river_dhbm._kernels import ahead, build

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")

# A newcomer's first use of `PseudoLabelMLP()` (the model that compiles fastest) in a fresh
# process: 41 labeled rows, then a prediction. Prints the prediction, the kernels this process
# compiled itself (Numba's compile events) and the copies still to wait for.
_SCRIPT = textwrap.dedent(
    """
    import itertools, json
    from numba.core import event
    import river_dhbm, streams
    from river_dhbm._kernels import ahead

    compiled = []

    class Compiled(event.Listener):
        def on_start(self, compilation):
            compiled.append(compilation.data["dispatcher"].py_func.__name__)

        def on_end(self, compilation):
            pass

    event.register("numba:compile", Compiled())
    model = river_dhbm.PseudoLabelMLP(seed=1)
    for x, y in itertools.islice(streams.LEDDrift(seed=1), 41):
        model.learn_one(x, y)
    proba = model.predict_proba_one(x)
    print(json.dumps({"proba": repr(proba), "compiled": compiled,
                      "waiting": len(ahead._children)}))
    """
)


def _first_use(cache, ahead_on: bool) -> dict:
    done = run_fresh(_SCRIPT, cache=cache, RIVER_DHBM_COMPILE_AHEAD="1" if ahead_on else "0")
    return json.loads(done.stdout.strip().splitlines()[-1])


@needs_fork
@pytest.mark.skipif(config.DISABLE_JIT, reason="nothing compiles without the JIT")
@pytest.mark.skipif(ahead._cores() < 2, reason="one core: nothing is compiled ahead")
def test_a_copy_compiles_the_first_update_and_nothing_learnt_differs(tmp_path):
    """With an empty cache, the learning kernel is compiled by the copy, not by the process
    that learns; the prediction is the same to the last bit. The control: with the copy off,
    the process compiles the learning kernel itself."""
    on = _first_use(tmp_path / "on", ahead_on=True)
    off = _first_use(tmp_path / "off", ahead_on=False)
    assert "mlp_update" in off["compiled"]  # the control: compiled where it is called
    assert "mlp_update" not in on["compiled"]  # compiled by the copy, loaded here
    assert on["proba"] == off["proba"]
    assert on["waiting"] == 0  # the copy was waited for, and reaped


def _reaped(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.fixture
def forking(monkeypatch):
    """`ahead` allowed to fork here, whatever the machine and the environment."""
    monkeypatch.setattr(ahead, "enabled", lambda: True)
    yield
    ahead.stop()


@needs_fork
def test_a_failing_copy_costs_nothing(forking):
    pid = ahead.start(lambda: 1 / 0)
    ahead.wait()  # returns, raises nothing
    assert not ahead._children and _reaped(pid)


@needs_fork
def test_no_process_to_spare_means_no_copy(forking, monkeypatch):
    def refuse():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", refuse)
    assert ahead.start(lambda: None) is None and not ahead._children
    ahead.wait()  # nothing to wait for


@needs_fork
@pytest.mark.skipif(config.DISABLE_JIT, reason="nothing compiles without the JIT")
def test_a_copy_compiles_even_if_another_thread_was_compiling(forking, tmp_path):
    """A thread holds Numba's compiler lock (as while compiling) when the copy is asked for:
    the fork waits for it, so the copy's own compilation does not find the lock taken for
    good (without the wait, the copy hangs until `wait` stops it, and leaves no file)."""
    from numba import njit
    from numba.core.compiler_lock import global_compiler_lock

    done = tmp_path / "compiled"

    def work():
        assert njit(lambda x: x + 1)(1) == 2  # a fresh function: compiles, under the lock
        done.write_text("yes")

    held = threading.Event()

    def compiling():
        with global_compiler_lock:
            held.set()
            time.sleep(0.5)

    thread = threading.Thread(target=compiling)
    thread.start()
    held.wait()
    ahead.start(work)
    thread.join()
    ahead.wait(limit=20)
    assert done.exists()


@needs_fork
def test_wait_stops_a_copy_past_its_limit(forking):
    pid = ahead.start(lambda: time.sleep(60))
    began = time.monotonic()
    ahead.wait(limit=0.3)
    assert time.monotonic() - began < 10  # the copy would have slept a minute
    assert not ahead._children and _reaped(pid)


@needs_fork
def test_stop_ends_a_copy_still_running(forking):
    pid = ahead.start(lambda: time.sleep(60))
    ahead.stop()
    assert not ahead._children and _reaped(pid)


def test_enabled_only_with_fork_cores_no_jvm_and_not_switched_off(monkeypatch):
    monkeypatch.delenv("RIVER_DHBM_COMPILE_AHEAD", raising=False)
    monkeypatch.setattr(ahead, "_cores", lambda: 2)
    monkeypatch.setitem(sys.modules, "jpype", None)
    if not hasattr(os, "fork"):
        assert not ahead.enabled()
        return
    assert ahead.enabled()
    monkeypatch.setenv("RIVER_DHBM_COMPILE_AHEAD", "0")
    assert not ahead.enabled()
    monkeypatch.setenv("RIVER_DHBM_COMPILE_AHEAD", "1")
    monkeypatch.setattr(ahead, "_cores", lambda: 1)
    assert not ahead.enabled()
    monkeypatch.setattr(ahead, "_cores", lambda: 2)
    monkeypatch.setitem(sys.modules, "jpype", types.SimpleNamespace(isJVMStarted=lambda: True))
    assert not ahead.enabled()
    monkeypatch.setitem(sys.modules, "jpype", types.SimpleNamespace(isJVMStarted=lambda: False))
    assert ahead.enabled()
    monkeypatch.setattr(ahead, "_in_copy", True)
    assert not ahead.enabled()


# ------------------------------------------------------------------------------ the lock


@pytest.mark.skipif(sys.platform == "win32", reason="the lock is fcntl's")
def test_cache_entries_are_saved_under_the_lock_of_their_directory():
    """A cache entry of this package's cache waits while another holds its directory's lock;
    the control: Numba's own `save` (the method the lock wraps) does not."""
    import fcntl

    directory = build.kernels_dir() / f"lock-test-{uuid.uuid4().hex[:8]}"
    directory.mkdir(parents=True)
    files = caching.IndexDataCacheFile(str(directory), "probe", source_stamp="stamp")
    holder = os.open(directory / ".river_dhbm.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        unlocked = threading.Thread(target=files.save.__wrapped__, args=(files, "a", b"1"))
        unlocked.start()
        unlocked.join(5)
        assert not unlocked.is_alive()  # the control: Numba's own save does not wait
        locked = threading.Thread(target=files.save, args=("b", b"2"))
        locked.start()
        locked.join(0.3)
        assert locked.is_alive()  # waits for the lock
        fcntl.flock(holder, fcntl.LOCK_UN)
        locked.join(5)
        assert not locked.is_alive()
        assert files.load("a") == b"1" and files.load("b") == b"2"
    finally:
        os.close(holder)
        for path in directory.iterdir():
            path.unlink()
        directory.rmdir()
