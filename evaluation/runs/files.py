"""Result files written all or nothing: shared by the experiments, the plots and MNIST."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from .workers import deferred_interrupt

__all__ = ["atomic_write", "atomic_write_all", "behaviour_hash", "behaviour_models",
           "check_writable", "figure_job", "record_behaviour", "result_jobs", "settings_job",
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


#: The behaviour panel's size: the stream rows hashed, the rows each model learns through the
#: array path then through River's dict loop, and the last rows whose probabilities count.
PANEL_ROWS, ARRAY_ROWS, DICT_ROWS, PROBA_ROWS = 2_000, 1_000, 200, 20


@functools.cache
def behaviour_hash() -> str:
    """A short hash of what the models and streams *do* on a fixed panel, computed here and
    now: what a results file records as `behaviour`, and what the docs' test compares to tell
    a table that today's code would give from an older one.

    Unlike `sources_hash`, it stays the same when the code is rewritten without changing a
    result (a refactor, a renamed variable, a moved function), and changes when a default, a
    stream or a learning rule does. The panel:

    - every stream of `registry.STREAMS` (seed 1): its first `PANEL_ROWS` rows through
      `iter_arrays`, and the per-row mask of `streams.LabelMask` (ratio 0.1, seed 2) on them;
    - every model of `registry.MODELS` in three settings (its defaults, its `paper()` preset
      as the evaluation builds it, and `learn_unlabeled=False`), plus the DHBM and the DHDA with
      `hidden_sizes=(16, 16)`; each learns the masked LED stream (the DHBM and the DHDA the
      masked Waveform one too) prequentially, `ARRAY_ROWS` rows through
      `test_then_train_arrays` then `DICT_ROWS` rows through River's dict loop
      (`predict_proba_one`, then `learn_one`);
    - the constructor defaults of the registry's model classes (`inspect.signature`).

    It hashes the predicted class of every row and the probabilities of the last `PROBA_ROWS`
    rows rounded to 4 decimals (the stream's features to 6), so that round-off differences
    between machines and BLAS builds do not change it; a change smaller than that, or one
    that waits longer than the panel's rows, goes unseen. It cannot see settings outside the
    panel either: a model's behaviour under other parameters, other streams, more rows,
    delayed labels, label batches or a drift detector that does not fire in these rows, the
    evaluation's own code (`evaluation/`), MNIST and the newsgroups. A change there leaves
    the tables marked fresh: re-run them by hand (CONTRIBUTING.md).
    """
    import hashlib
    import inspect

    import numpy as np

    import river_dhbm
    from river_dhbm._kernels.first_use import announce_compilations

    from . import registry

    digest = hashlib.sha256()

    def add(*parts) -> None:
        for part in parts:
            digest.update(part.tobytes() if isinstance(part, np.ndarray) else repr(part).encode())

    masked = {}
    for name in registry.STREAMS:
        X, y, labeled = _panel_rows(registry.masked_stream(name, 1, 0.1, None, mask_seed=2))
        add(name, np.round(X, 6) + 0.0, y.astype(np.int64), labeled)
        masked[name] = X, y, labeled
    runs = _panel_models(masked["led"][0].shape[1])
    announce_compilations(model for _, model, _ in runs)  # one notice naming every model
    for key, model, stream in runs:
        add(*key, _prequential(model, *masked[stream]))
    classes = {class_name: getattr(river_dhbm, class_name)
               for class_name, _ in registry.MODELS.values()}
    for class_name, cls in sorted(classes.items()):
        add(class_name, [(p.name, p.default) for p in inspect.signature(cls).parameters.values()])
    return digest.hexdigest()[:16]


def _panel_models(width: int) -> list:
    """The behaviour panel's fresh models as `(what the hash names, model, its stream)`; `width`
    is the LED's, as wide as the paper preset's hidden layers."""
    import river_dhbm

    from . import registry

    runs = []
    for name in registry.MODELS:
        for setting, model_name, preset in (
                ("default", name, "default"), ("paper", name, "paper"),
                ("labeled-only", f"{name}{registry.ABLATION_SUFFIX}", "default")):
            model = registry.make_model(model_name, width, None, seed=1, preset=preset)
            runs.append(((name, setting), model, "led"))
    for class_name in ("DHBM", "DHDA"):
        for stream in ("led", "waveform"):
            for hidden in (None, (16, 16)):
                if stream == "led" and hidden is None:
                    continue  # learnt above
                params = {} if hidden is None else {"hidden_sizes": hidden}
                model = getattr(river_dhbm, class_name)(seed=1, **params)
                runs.append(((class_name, stream, hidden), model, stream))
    return runs


def behaviour_models() -> list:
    """Fresh models of every kind `behaviour_hash` trains: a job that records its results
    (whose settings hold the hash) names them in its compile notice too
    (`warmup.announce`)."""
    from . import registry

    width = registry.masked_stream("led", 1, 0.1, None, mask_seed=2).n_features
    return [model for _, model, _ in _panel_models(width)]


def _panel_rows(masked):
    """The first `PANEL_ROWS` rows of the masked stream as `(X, y, labeled)`."""
    import numpy as np

    blocks, n = [], 0
    for X, y, labeled in masked.iter_arrays(chunk_size=PANEL_ROWS):
        blocks.append((X, y, labeled))
        n += len(X)
        if n >= PANEL_ROWS:
            break
    return tuple(np.concatenate(parts)[:PANEL_ROWS] for parts in zip(*blocks))


def _prequential(model, X, y, labeled):
    """What `model` predicts, learning `X` test-then-train: the predicted class of every row
    and the probabilities of the last `PROBA_ROWS` rows, rounded to 4 decimals, as an array."""
    import numpy as np

    n = ARRAY_ROWS + DICT_ROWS
    codes = model.test_then_train_arrays(X[:ARRAY_ROWS], y[:ARRAY_ROWS], labeled[:ARRAY_ROWS])
    predicted = [model.classes_[c] if c >= 0 else -1 for c in codes]
    probas = []
    for i in range(ARRAY_ROWS, n):
        x = dict(enumerate(X[i].tolist()))
        proba = model.predict_proba_one(x)
        predicted.append(max(proba, key=proba.get) if proba else -1)
        if i >= n - PROBA_ROWS:
            probas.append([proba.get(c, 0.0) for c in sorted(proba)])
        model.learn_one(x, y[i].item(), labeled=bool(labeled[i]))
    rounded = np.round(np.asarray(probas, dtype=np.float64).ravel(), 4) + 0.0  # no -0.0
    return np.concatenate([np.asarray(predicted, dtype=np.float64), rounded])


#: The results the docs include: `evaluation/results/`.
RESULTS = Path(__file__).resolve().parent.parent / "results"


def record_behaviour(results: Path = RESULTS) -> list[Path]:
    """Add today's `behaviour` to every `settings.json` under `results` that records today's
    `sources` but no `behaviour`, and return their directories (run it after a merge that
    brings such results).

    Sound because the same sources behave the same: such a directory ran with today's code
    (docstrings aside), so today's behaviour hash is the one it ran with. It brings results
    written before the behaviour was recorded (or by a branch that did not record it) under
    the docs' test without re-running them; a directory with other sources stays as it is,
    stale."""
    import json

    today, done = sources_hash(), []
    for settings in sorted(Path(results).rglob("settings.json")):
        record = json.loads(settings.read_text())
        if record.get("sources") == today and "behaviour" not in record:
            record["behaviour"] = behaviour_hash()
            text = _settings_text(record)
            atomic_write(settings, lambda p, text=text: p.write_text(text))
            done.append(settings.parent)
    return done


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
    `settings.json` (`settings_job`)."""
    out = Path(out)
    jobs = [(out / f"{name}.csv", lambda p: frame.to_csv(p, index=False)),
            (out / f"{name}.md", lambda p: p.write_text(table))]
    if settings is not None:
        jobs.append(settings_job(out, settings))
    return jobs


def settings_job(out: Path, settings: dict) -> tuple:
    """The `(path, write)` job of `out/settings.json`: `settings` and the code they ran with,
    `sources` (`sources_hash`, for the record) and `behaviour` (`behaviour_hash`, what the docs'
    test compares with today's)."""
    text = _settings_text(settings | {"sources": sources_hash(), "behaviour": behaviour_hash()})
    return Path(out) / "settings.json", lambda p: p.write_text(text)


def _settings_text(record: dict) -> str:
    import json

    return json.dumps(record, indent=2, default=str) + "\n"


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
