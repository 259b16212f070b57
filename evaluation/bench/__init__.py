"""Speed benchmarks on this machine, each public module a target of `python -m evaluation bench`:
the models against River's learners and loop (`models`, whose parts are `_model_setup` and
`_model_report`), the first use on a fresh install (`first_use`) and the streams against MOA's
generators (`streams`)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_report"]


def write_report(out, text: str, command: str) -> list[Path]:
    """Write a benchmark's markdown report to `out` and, beside it, the `settings.json` every
    results directory holds: the command, the report's name and the code it ran with
    (`sources`, `behaviour`), so a docs page that includes the report can tell its age. One
    report a directory: a second one would take over the `settings.json`."""
    import datetime

    from ..runs.files import atomic_write_all, check_writable, settings_job

    out = Path(out)
    check_writable(out.parent)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    record = {"command": command, "report": out.name, "date": now}
    return atomic_write_all([(out, lambda p: p.write_text(text)),
                             settings_job(out.parent, record)])
