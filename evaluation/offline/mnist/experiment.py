"""The paper's offline experiment: semi-supervised MNIST with 100 labels (its Table 1).

`python -m evaluation mnist --data DIR` reads the four standard IDX files (raw or `.gz`) from
`DIR` (or from the directory in the environment variable `RIVER_DHBM_MNIST`), and follows
section 5.2 and appendix C.1 of the paper:

- 100 labeled training images balanced over the classes, 1,000 more (balanced) held out for
  validation, the rest of the 60,000 used unlabeled; test on the 10,000 test images; pixels
  scaled to [0, 1];
- every update sees a mini-batch of 10 labeled images (cycling through the labeled set) and
  a mini-batch of 10 unlabeled ones (paper Algorithm 1); 6 passes over the unlabeled set;
- `beta` annealed per eq. 17 with T1 = 3 and T2 = 300 labeled epochs (passes over the
  labeled set), converted here to the model's unit, mini-batch updates;
- model selection on the validation images over a coarse grid of learning rate and beta
  (optionally on a shorter run), then `trials` seeded trials with the chosen values.

The settings of each table row live in `configs/mnist_<model>.toml`. `run_protocol` runs
the same protocol over another data set (`DataSet`): the 20 NewsGroups runner
(`evaluation.offline.newsgroups`) is one.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...runs.arguments import assignment, floats, positive_int
from .data import (  # noqa: F401 (the public names this module always had)
    ENV_VAR,
    FILES,
    MNIST,
    MissingData,
    find_files,
    load_mnist,
    pixels,
    read_idx,
    split_indices,
)
from .record import (  # noqa: F401
    SAME_SETTINGS,
    code_record,
    make_specs,
    read_previous,
    read_run,
)
from .table import (  # noqa: F401
    MNIST_TABLE,
    PAPER_ROWS,
    RESULT_COLUMNS,
    PaperTable,
    summarise,
    summary_markdown,
    write_outputs,
)
from .trainer import (  # noqa: F401
    BLAS_THREAD_VARS,
    MODELS,
    TrialSpec,
    batch_plan,
    build_model,
    error_rate,
    planned_updates,
    run_specs,
    run_trial,
    select,
)

__all__ = [
    "ENV_VAR",
    "MNIST",
    "MissingData",
    "PAPER_ROWS",
    "TrialSpec",
    "DataSet",
    "add_arguments",
    "add_protocol_flags",
    "error_rate",
    "find_files",
    "load_mnist",
    "read_idx",
    "run",
    "run_protocol",
    "run_trial",
    "select",
    "split_indices",
    "summary_markdown",
]


# ---------------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags and the command of the `mnist` subcommand, on its parser `p`."""
    p.description = (
        "Semi-supervised MNIST as in the paper's Table 1: 100 balanced labels, "
        "1,000 validation images, the rest unlabeled, test on the 10,000 test images. "
        f"The data directory holds {', '.join(FILES)} (raw or .gz)."
    )
    p.add_argument("--data", help=f"directory of the four MNIST files (default: ${ENV_VAR})")
    add_protocol_flags(p, "mnist", "images")
    p.set_defaults(func=run)


def add_protocol_flags(p, experiment: str, rows: str) -> None:
    """The flags of an offline run of the paper's protocol (`mnist`, `newsgroups`): the
    table row, the config and its overrides, the trials, the output. `rows` names the
    training rows ("images"); the help quotes the settings of the default row's config."""
    from ...runs import registry

    defaults = registry.load_config(f"{experiment}_dhbm")
    p.add_argument("--model", choices=sorted(MODELS), default="dhbm",
                   help="table row (default dhbm)")
    p.add_argument("--config",
                   help=f"a TOML config (default: configs/{experiment}_<model>.toml)")
    p.add_argument("--trials", "--seeds", type=positive_int, dest="trials",
                   help=f"trials after the selection (config: {defaults['trials']})")
    p.add_argument("--first-trial", type=int,
                   help="index of the first trial (its seeds follow from it): split a series "
                   "of trials over several runs (default 0, with --append the next index)")
    p.add_argument("--append", action="store_true",
                   help="add trials to the results already in --out: same settings, the grid "
                   "point chosen there (no new grid search), the earlier trials kept")
    p.add_argument("--labels", type=positive_int,
                   help=f"labeled training {rows} (config: {defaults['labels']})")
    p.add_argument("--validation", type=positive_int,
                   help=f"{rows} held out for the selection (config: {defaults['validation']})")
    p.add_argument("--epochs", type=positive_int,
                   help=f"passes over the unlabeled set (config: {defaults['epochs']})")
    p.add_argument("--max-train", type=positive_int,
                   help=f"use at most this many unlabeled {rows} (quick runs; default: all)")
    p.add_argument("--lr", type=floats, help="learning-rate grid, e.g. 0.05,0.08,0.11")
    p.add_argument("--beta", type=floats, help="beta grid, e.g. 0.35,0.6,0.9")
    p.add_argument("--select-train", type=positive_int,
                   help=f"unlabeled {rows} of each grid-search run (config: "
                   f"{defaults['select_train']})")
    p.add_argument("--select-epochs", type=positive_int,
                   help=f"epochs of each grid-search run (config: {defaults['select_epochs']})")
    p.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                   help="model parameter on top of the config, e.g. --set mf_steps=2 (repeatable)")
    p.add_argument("--seed", type=int, default=0, help="base seed")
    p.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    p.add_argument("--out", type=Path,
                   help=f"output directory (default results/{experiment}-<model>)")
    p.add_argument("--keep-best", action="store_true",
                   help="score each trial's checkpoint of the lowest validation error (checked "
                   "every 1,000 updates and at the end) instead of its final model")
    p.add_argument("--verify", type=int, metavar="TRIAL",
                   help="run trial TRIAL of the results in --out again with the settings they "
                   "recorded (not the config's) and compare every figure; when all are equal, "
                   "record today's code and behaviour in its settings.json (results today's "
                   "code reproduces are not stale); exit 1 on a difference (default: none, "
                   "no verification)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def load_settings(args, experiment: str = "mnist") -> dict:
    """The config of `args.model` (or `args.config`; default `configs/<experiment>_<model>.toml`)
    with the flags on top; `--quick` (where a command has it) keeps one trial, one epoch and
    the grid's first point before the other flags apply."""
    from ...runs import registry

    path = registry.config_path(args.config or f"{experiment}_{args.model}")
    try:
        with open(path, "rb") as f:
            s = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"Invalid config {str(path)!r}: {e}") from None
    s.setdefault("params", {})
    s.setdefault("grid", {})
    if getattr(args, "keep_best", False):
        s["keep_best"] = True
    s["config"] = str(path)
    if args.config:
        s["model"] = s.get("model", args.model)
    else:
        s["model"] = args.model
    if getattr(args, "quick", False):
        s.update(trials=1, epochs=1, select_epochs=1)
        s["grid"] = {k: list(v)[:1] for k, v in s["grid"].items()}
    for key in ("trials", "labels", "validation", "epochs", "max_train", "select_train",
                "select_epochs"):
        value = getattr(args, key, None)
        if value is not None:
            s[key] = value
    if args.lr is not None:
        s["grid"]["learning_rate"] = args.lr
    if args.beta is not None:
        s["grid"]["beta"] = args.beta
    s["params"].update(dict(getattr(args, "set", [])))
    s["seed"] = args.seed
    first = getattr(args, "first_trial", None)
    if first is not None and (isinstance(first, bool) or not isinstance(first, int) or first < 0):
        raise ValueError(f"Invalid first_trial ({first!r}). Must be an int >= 0")
    s["first_trial"] = first
    return s


def fail(message: str, code: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


@dataclasses.dataclass(frozen=True)
class DataSet:
    """What `run_protocol` needs of a data set: `load(out)` reads the arrays (an `MNIST`;
    `MissingData` or `ValueError` for the user to fix) for a run writing to `out`,
    `share(data, out)` is called once `out` is checked and returns what the worker processes
    read, with `loader(shared)` (a module-level function: default `load_mnist`); our rows go
    into `table`; `record` is added to settings.json (after `load`, which may fill it)."""

    load: Callable
    share: Callable
    loader: Callable | None = None
    table: PaperTable = MNIST_TABLE
    record: dict = dataclasses.field(default_factory=dict)


def run(args) -> int:
    """The `mnist` subcommand: select on the validation set, run the trials, report."""
    directory = args.data or os.environ.get(ENV_VAR) or None
    data_set = DataSet(load=lambda out: load_mnist(directory),
                       share=lambda data, out: str(Path(directory).resolve()))
    return run_protocol(args, data_set, "mnist")


def run_protocol(args, data_set: DataSet, experiment: str) -> int:
    """Select on the validation set, run the trials, report: the offline protocol of the
    paper over `data_set`, with the configs `configs/<experiment>_<model>.toml`."""
    if getattr(args, "verify", None) is not None:
        from .verify import verify_trial

        return verify_trial(args, data_set, experiment)
    try:
        settings = load_settings(args, experiment)
        out = args.out or Path("results") / f"{experiment}-{settings['model']}"
        previous, earlier = [], None
        if getattr(args, "append", False):
            previous, earlier = read_previous(out, settings)
            done = {r["trial"] for r in previous}
            if settings["first_trial"] is None:
                settings["first_trial"] = max(done, default=-1) + 1
            settings["grid"] = {}  # the earlier run's chosen point, below
        selection_specs, trial_specs = make_specs(settings)
        if earlier is not None:
            trial_specs = [dataclasses.replace(t, params=dict(earlier["chosen"]))
                           for t in trial_specs]
            again = sorted(done & {t.trial for t in trial_specs})
            if again:
                raise ValueError(f"Trials {again} are already in {str(out)!r}: choose "
                                 "another --first-trial")
        data = data_set.load(Path(out))
        n_classes = len(np.unique(data.train_labels))
        for spec in selection_specs[:1] + trial_specs[:1]:  # bad settings fail now, not later
            split_indices(data.train_labels, spec.labels, spec.validation, spec.split_seed)
            build_model(spec, data.train_images.shape[1], n_classes)
        from ...runs.experiment import check_writable

        check_writable(out)
        directory = data_set.share(data, Path(out))
    except (MissingData, ValueError) as e:
        return fail(str(e))
    loader, table = data_set.loader, data_set.table
    selection = []
    if selection_specs:
        chosen, selection = select(
            selection_specs, data,
            runner=lambda specs: run_specs(specs, data, directory, args.jobs, "grid search",
                                           args.quiet, loader=loader),
        )
        trial_specs = [dataclasses.replace(t, params={**t.params, **chosen}) for t in trial_specs]
        print("grid search (validation error %): " + ", ".join(
            f"lr={r['learning_rate']} beta={r['beta']}: {100 * r['validation_error']:.2f}"
            for r in selection))
        print(f"chosen: learning_rate={chosen.get('learning_rate')} beta={chosen.get('beta')}",
              flush=True)
    code = code_record()
    record = {k: v for k, v in settings.items()} | {
        "data": directory, "jobs": args.jobs, "chosen": trial_specs[0].params,
        "model_params": trial_specs[0].model_params(),
    } | data_set.record | code
    if earlier is not None:
        # The earlier record stays, its code included (the results are as current as their
        # oldest trial), with a note of each addition and the code it ran with.
        added = {k: record[k] for k in ("first_trial", "trials", "data", "jobs")} | code
        record = earlier | {"appended": [*earlier.get("appended", []), added]}
    finished: list = list(previous)

    def trial_done(r: dict) -> None:
        # Each finished trial is reported and saved at once (the files hold the trials so far).
        finished.append(r)
        print(f"trial {r['trial']}: test error {100 * r['test_error']:.2f} %, validation error "
              f"{100 * r['validation_error']:.2f} %, {r['seconds']:.0f} s", flush=True)
        write_outputs(Path(out), sorted(finished, key=lambda x: x["trial"]), selection, record,
                      table)

    results = run_specs(trial_specs, data, directory, args.jobs, "trials", args.quiet,
                        on_result=trial_done, loader=loader)
    results = sorted(finished, key=lambda x: x["trial"])
    print(summary_markdown(summarise(results), table), end="")
    write_outputs(Path(out), results, selection, record, table)
    print(f"results written to {out}")
    return 0

