"""Progress on stderr: a live bar on a terminal, plain lines in a log.

A tqdm bar redraws itself with carriage returns and cursor codes; written to a file (a batch
job's log, `2> run.log`) that is hundreds of kilobytes of half-lines. So `bar` decides once,
for every runner of this package: a tqdm bar when stderr is a terminal (or a notebook), else
`Lines`, one plain line every tenth of the way and at least one a minute.
"""

from __future__ import annotations

import sys
import time

__all__ = ["Lines", "bar", "interactive"]

#: A line at least this often (seconds), so that a slow job shows it is alive.
LINE_EVERY_SECONDS = 60.0


def interactive() -> bool:
    """Whether progress can be drawn in place: stderr is a terminal, or a notebook shows it."""
    return sys.stderr.isatty() or "ipykernel" in sys.modules


def bar(total: int, desc: str, unit: str = "it", quiet: bool = False, **tqdm_options):
    """A progress bar over `total` units: tqdm when `interactive()`, else `Lines`; silent
    (`Lines` that never write) when `quiet`. Either has tqdm's `update`, `set_postfix_str`
    and `close`, and is a context manager; `tqdm_options` go to tqdm only."""
    if quiet:
        return Lines(total, desc, unit, quiet=True)
    if interactive():
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, **tqdm_options)
    return Lines(total, desc, unit)


class Lines:
    """Progress as whole lines: `desc: done/total unit (percent), elapsed, postfix`.

    A line on stderr when the count crosses the next tenth of `total` or `LINE_EVERY_SECONDS`
    after the last one, and a last line on `close` if the count moved since; none if `quiet`.
    """

    def __init__(self, total: int, desc: str, unit: str = "it", quiet: bool = False):
        self.total, self.desc, self.unit, self.quiet = total, desc, unit, quiet
        self.n = 0
        self.postfix = ""
        self._start = self._last_time = time.monotonic()
        self._last_n = 0
        self._next_tenth = 1

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        tenth = 10 * self.n // self.total if self.total else 0
        if tenth >= self._next_tenth or now - self._last_time >= LINE_EVERY_SECONDS:
            self._next_tenth = tenth + 1
            self._write(now)

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text

    def close(self) -> None:
        if self.n != self._last_n:
            self._write(time.monotonic())

    def _write(self, now: float) -> None:
        self._last_time, self._last_n = now, self.n
        if self.quiet:
            return
        done = f"{self.n:,}/{self.total:,} {self.unit}" if self.total else f"{self.n:,} {self.unit}"
        share = f" ({100 * self.n / self.total:.0f} %)" if self.total else ""
        extra = f", {self.postfix}" if self.postfix else ""
        print(f"{self.desc}: {done}{share}, {now - self._start:.0f} s{extra}", file=sys.stderr,
              flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
