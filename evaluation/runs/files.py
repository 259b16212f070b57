"""Result files written all or nothing: shared by the experiments, the plots and MNIST."""

from __future__ import annotations

import os
from pathlib import Path

from .workers import deferred_interrupt

__all__ = ["atomic_write", "atomic_write_all", "check_writable", "figure_job", "result_jobs",
           "sources_hash"]

#: The packages whose code a result depends on: the models and the streams.
SOURCE_PACKAGES = ("river_dhbm", "streams")


def sources_hash(root: Path | None = None) -> str:
    """A short hash of the code of `SOURCE_PACKAGES` (under `root`, by default where they are
    imported from): what a results file records as `sources`, so that a table can be told apart
    from one the code of today would give (the docs' test flags a page that shows an older one
    unmarked). The code is each file's syntax tree without its docstrings, and comments never
    reach the tree: rewording the documentation does not change a result, so it does not make
    the tables stale."""
    import hashlib
    import importlib

    digest = hashlib.sha256()
    for package in SOURCE_PACKAGES:
        base = (Path(importlib.import_module(package).__file__).parent if root is None
                else Path(root) / package)
        for path in sorted(base.rglob("*.py")):
            digest.update(str(path.relative_to(base.parent)).encode())
            digest.update(_code(path.read_text()).encode())
    return digest.hexdigest()[:16]


def _code(source: str) -> str:
    """`source`'s syntax tree, docstrings removed, as text."""
    import ast

    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


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
        with deferred_interrupt():  # all the files or none: Ctrl-C waits for the renames
            for (path, _), tmp in zip(jobs, tmps):
                os.replace(tmp, path)
    finally:
        for tmp in tmps:
            if tmp.exists():
                tmp.unlink()
    return [Path(path) for path, _ in jobs]


def result_jobs(out: Path, name: str, frame, table: str, settings: dict | None = None) -> list:
    """The `(path, write)` jobs of an experiment's usual files in `out`: `<name>.csv` (the
    `pandas.DataFrame` `frame`), `<name>.md` (the markdown `table`) and, given `settings`,
    `settings.json`."""
    import json

    out = Path(out)
    jobs = [(out / f"{name}.csv", lambda p: frame.to_csv(p, index=False)),
            (out / f"{name}.md", lambda p: p.write_text(table))]
    if settings is not None:
        text = json.dumps(settings | {"sources": sources_hash()}, indent=2, default=str) + "\n"
        jobs.append((out / "settings.json", lambda p: p.write_text(text)))
    return jobs


def figure_job(path: Path, fig) -> tuple:
    """The `(path, write)` job that saves the matplotlib `fig` as `path` (its suffix the
    format), at 150 dpi."""
    path = Path(path)
    return path, lambda p: fig.savefig(p, format=path.suffix[1:], dpi=150, bbox_inches="tight")


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
