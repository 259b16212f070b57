"""Result files written all or nothing: shared by the experiments, the plots and MNIST."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_all", "check_writable"]


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def atomic_write(path: Path, write) -> Path:
    """Call `write(tmp_path)` then rename onto `path`, so a file that exists is complete."""
    return atomic_write_all([(Path(path), write)])[0]


def atomic_write_all(jobs) -> list[Path]:
    """Write every `(path, write)` to a temporary name first and rename them all at the end:
    a failure leaves no new file behind, let alone a partial one."""
    tmps = []
    try:
        for path, write in jobs:
            tmps.append(_tmp_name(Path(path)))
            write(tmps[-1])
        for (path, _), tmp in zip(jobs, tmps):
            os.replace(tmp, path)
    finally:
        for tmp in tmps:
            if tmp.exists():
                tmp.unlink()
    return [Path(path) for path, _ in jobs]


def check_writable(out: Path) -> Path:
    """Create `out` if needed and check a file can be written there (before any long run)."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test.{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        reason = e.strerror or e
        raise ValueError(f"Cannot write to output directory {str(out)!r}: {reason}") from None
    return out
