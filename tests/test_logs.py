"""Output fit for logs: off a terminal, progress is a few plain lines (no carriage returns, no
cursor codes); on a terminal it stays a tqdm bar."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from evaluation.runs import progress

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_lines_every_tenth_and_at_the_end(capsys):
    bar = progress.bar(1000, "suite", unit="run")  # capsys: stderr is not a terminal
    assert isinstance(bar, progress.Lines)
    with bar:
        for _ in range(999):
            bar.update()
        bar.set_postfix_str("led dhbm-mf")
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 10  # 100, 200, ..., 900 runs, then 999 on close
    assert lines[0].startswith("suite: 100/1,000 run (10 %), ")
    assert lines[-1].startswith("suite: 999/1,000 run (100 %), ") and "led dhbm-mf" in lines[-1]


def test_a_line_a_minute_when_progress_is_slow(capsys, monkeypatch):
    clock = iter(range(0, 10_000, 61))  # each call of the clock is 61 s later
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    bar = progress.Lines(10**6, "all trials", unit="inst")
    bar.update(5)
    bar.update(5)
    assert capsys.readouterr().err.splitlines() == [
        "all trials: 5/1,000,000 inst (0 %), 61 s", "all trials: 10/1,000,000 inst (0 %), 122 s"]


def test_quiet_writes_nothing(capsys):
    with progress.bar(10, "x", quiet=True) as bar:
        bar.update(10)
    assert capsys.readouterr().err == ""


def test_a_terminal_gets_a_tqdm_bar(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = progress.bar(10, "x")
    bar.close()
    assert type(bar).__module__.startswith("tqdm")


def _stderr_of(tmp_path, *argv) -> bytes:
    log = tmp_path / "stderr.log"
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with open(log, "wb") as f:
        subprocess.run([sys.executable, "-m", "evaluation", *argv], env=env, cwd=tmp_path,
                       stdout=subprocess.DEVNULL, stderr=f, check=True)
    return log.read_bytes()


def test_suite_log_is_plain_lines(tmp_path):
    err = _stderr_of(tmp_path, "suite", "--streams", "led", "--seeds", "2", "--instances", "200",
                     "--label-ratios", "1,0.1", "--models", "dhbm-mf,GaussianNB",
                     "--out", str(tmp_path / "out"))
    assert b"\r" not in err and b"\x1b" not in err
    lines = err.decode().splitlines()
    assert [line.split(",")[0] for line in lines if line.startswith("suite: ")][-1] == (
        "suite: 8/8 run (100 %)")
    assert len(err) < 2000, err.decode()


def test_experiment_log_is_plain_lines(tmp_path):
    err = _stderr_of(tmp_path, "run", "--stream", "led", "--model",
                     "river:dummy.NoChangeClassifier", "--instances", "3000", "--trials", "3",
                     "--step", "500", "--out", str(tmp_path / "out"))
    assert b"\r" not in err and b"\x1b" not in err
    assert err.decode().splitlines()[-1].startswith("all trials: 9,000/9,000 inst (100 %)")
    assert len(err) < 2000, err.decode()
