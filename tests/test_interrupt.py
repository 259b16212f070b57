"""Ctrl-C stops a command and its workers with one line; a killed parent leaves no worker.

Each test starts `python -m evaluation ...` in its own process group (as a shell starts a
job), waits until its two workers run, then sends SIGINT to the group (what Ctrl-C does) or
SIGKILL to the parent alone (an out-of-memory kill), and checks what is left.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists(),
                                reason="reads the process table from /proc")


def _alive_in_group(pgid: int) -> list[int]:
    """The pids of the running (not zombie) processes of process group `pgid`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = pathlib.Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, _, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state != "Z":
            pids.append(int(entry))
    return pids


def _as_a_shell_starts_a_job():
    # Ctrl-C reaches a shell's foreground job: whatever the test process ignores or blocks
    # (an ignored or blocked signal stays so across exec) must not carry over to the command
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _start(args, tmp_path):
    """The command, started in its own process group once its workers run (two processes
    besides the parent that are its children)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "evaluation", *args, "--out", str(tmp_path / "out")],
        cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=_as_a_shell_starts_a_job,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if len(_workers(process.pid)) >= 2:
            time.sleep(1.0)  # the workers are inside their runs
            return process
        time.sleep(0.1)
    process.kill()
    pytest.fail(f"no workers started: {process.communicate()[1][-2000:]}")


def _workers(parent: int) -> list[int]:
    """The pool's workers among the processes of `parent`'s group: neither the resource
    tracker nor the fork server (whose children, the workers, share its command line)."""
    workers = []
    for pid in _alive_in_group(parent):
        try:
            command = pathlib.Path(f"/proc/{pid}/cmdline").read_bytes()
            ppid = int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
        server = b"forkserver" in command and ppid == parent
        if pid != parent and b"resource_tracker" not in command and not server:
            workers.append(pid)
    return workers


def _gone(pgid: int, seconds: float) -> list[int]:
    """Wait up to `seconds` for process group `pgid` to be empty; what is left."""
    deadline = time.monotonic() + seconds
    while (left := _alive_in_group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def _interrupt(process, tmp_path):
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=10)  # within 2 s when measured; 10: a loaded CI
    assert _gone(process.pid, 5) == []  # workers, fork server, resource tracker: all gone
    assert process.returncode == 130
    assert "Traceback" not in stderr and "leaked" not in stderr, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("interrupted: ") and "nothing written" in last, last
    assert not any((tmp_path / "out").glob("*.*"))  # no result file, not even a partial one
    return last


def test_ctrl_c_stops_suite_and_its_workers(tmp_path):
    process = _start(["suite", "--streams", "led,waveform", "--models", "GaussianNB,HoeffdingTree",
                      "--label-ratios", "1", "--seeds", "40", "--instances", "20000",
                      "--jobs", "2"], tmp_path)
    last = _interrupt(process, tmp_path)
    assert " of 160 runs done, the rest cancelled" in last


def test_ctrl_c_stops_reproduce_and_its_workers(tmp_path):
    process = _start(["reproduce", "--models", "river:naive_bayes.GaussianNB",
                      "--instances", "1000000", "--trials", "3", "--jobs", "2"], tmp_path)
    last = _interrupt(process, tmp_path)
    assert "0 of 6 trials done" in last  # a million rows each: none finished


def test_workers_of_a_killed_parent_exit(tmp_path):
    process = _start(["suite", "--streams", "led", "--models", "GaussianNB", "--seeds", "40",
                      "--instances", "20000", "--jobs", "2"], tmp_path)
    workers = _workers(process.pid)
    process.kill()  # SIGKILL: no handler runs in the parent
    process.communicate()
    assert workers and _gone(process.pid, 5) == []
