"""`python -m evaluation` (or `river-dhbm`): the paper's experiments from the command line.

    python -m evaluation reproduce --quick --out results/quick   # figure 3, short (< 2 min)
    python -m evaluation reproduce --jobs 2                       # figure 3, the paper's size
    python -m evaluation run --stream led --model dhbm-mf --instances 100000 --seed 3
    python -m evaluation run --stream waveform --model river:tree.HoeffdingTreeClassifier
    python -m evaluation compare --quick                          # vs River's learners
    python -m evaluation scarcity --quick                         # error against label ratio
    python -m evaluation suite --quick                            # the development suite
    python -m evaluation tracks --quick --label-ratio 0.1         # River's benchmark tracks
    python -m evaluation plot --csv results/reproduce/curves.csv --out figures
    python -m evaluation bench streams
    python -m evaluation mnist --data DIR                         # the paper's table 1
    python -m evaluation newsgroups --data 20news-bydate.tar.gz   # its 20 NewsGroups figures
    python -m evaluation drift --quick                            # recovery after a change
    python -m evaluation detector --quick                         # the detector's sensitivity

Settings come from the TOML files in `evaluation/configs/` (one per figure row or table),
flags override them. `--jobs N` runs trials in N local processes, `--scheduler ADDRESS` on a
`dask.distributed` cluster whose workers have this package installed; results are the same.

Each subcommand is a line in `SUBCOMMANDS`: its one-line help and the function that adds its
flags (`_add_<name>` here, or its module's `add_arguments`), called only for the subcommand
chosen, so that `--help` imports none of them; `_cmd_<name>` (or the module) runs it. Bad
arguments end in one `error: ...` line on stderr and exit code 2. The `river-dhbm` console
script is `main` under its own name (`evaluation.__main__`).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import shlex
import sys
from pathlib import Path

from .runs import registry
from .runs.arguments import (EPILOG, HelpFormatter, assignment, names, non_negative_int,
                             positive_int, ratio)
from .runs.workers import Interrupted

__all__ = ["main"]

REPRODUCE_CONFIGS = ["fig3_waveform", "fig3_led"]  # the paper's figure 3, top row first


class BadArguments(Exception):
    """Raised for anything the user can fix on the command line: one line, exit code 2."""


@contextlib.contextmanager
def _user_errors():
    """Invalid values found while setting a run up are the user's to fix: one line, exit 2."""
    try:
        yield
    except ValueError as e:
        raise BadArguments(str(e)) from None


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BadArguments(message)


# ---------------------------------------------------------------------------------- flags


def _add_run_flags(p, configs: list[str] | None) -> None:
    """Flags shared by reproduce, compare and run (None: keep the config's value); `configs`,
    the bundled configs that give the defaults (`run`: none)."""
    p.add_argument("--trials", "--seeds", type=positive_int, dest="trials",
                   help="trials per stream and model, numbered 0..N-1; trial k's seeds are "
                   "drawn from (--seed, stream, model, k)")
    p.add_argument("--instances", type=positive_int, help="instances per trial")
    p.add_argument("--label-ratio", type=ratio, help="expected share of labeled instances")
    p.add_argument("--label-batch", type=non_negative_int,
                   help="each block of this many instances draws its own label ratio in "
                   "[0, 2 x label ratio]; 0: each instance keeps its label independently")
    p.add_argument("--batch-size", type=positive_int, help="mini-batch size")
    p.add_argument("--fading-factor", type=float, help="forgetting factor of the faded error")
    p.add_argument("--step", type=positive_int, help="record the curve every STEP instances")
    p.add_argument("--preset", choices=registry.PRESETS,
                   help="this project's models: the paper's literal settings or the class "
                   "defaults (what learns best) (default: the config's; run without --config: "
                   "default)")
    p.add_argument("--seed", type=int, default=0, help="base seed of every trial")
    p.add_argument("--set", type=assignment, action="append", default=[], metavar="KEY=VALUE",
                   help="model parameter, e.g. --set learning_rate=0.05 (repeatable)")
    p.add_argument("--jobs", type=positive_int, default=1, help="local worker processes")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the trials on this dask.distributed scheduler (instead of --jobs; "
                   "default: local processes)")
    p.add_argument("--out", type=Path,
                   help="output directory (default: results/<command>, -quick with --quick; "
                   "run: nothing written)" if configs is not None else
                   "output directory (default: nothing written, the table printed)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    if configs is not None:
        p.add_argument("--quick", action="store_true",
                       help=f"the configs' short version ({_quick_version(configs)})")
        p.add_argument("--models", type=names,
                       help="comma-separated models instead of the config's")
        p.add_argument("--streams", type=names,
                       help="comma-separated streams instead of the config's")


def _quick_version(configs: list[str]) -> str:
    """What `--quick` runs, from the configs' [quick] tables: "1 trial x 20,000 instances"."""
    quick = [config | config.get("quick", {}) for config in map(registry.load_config, configs)]
    return "; ".join(dict.fromkeys(  # each version once, in the configs' order
        f"{q['trials']} trial{'s' * (q['trials'] != 1)} x {q['instances']:,} instances"
        for q in quick))


def _add_reproduce(p) -> None:
    p.description = (
        "Reproduce figure 3 of the paper: LED and Waveform, 10 % labels, PL-MLP, DHBM-MF, "
        "DHBM-SAP and DHDA, 10 trials of 1,000,000 instances (configs "
        + ", ".join(f"{c}.toml" for c in REPRODUCE_CONFIGS) + ")."
    )
    _add_run_flags(p, REPRODUCE_CONFIGS)
    p.set_defaults(func=_cmd_reproduce, configs=REPRODUCE_CONFIGS, figure="figure3")


def _add_compare(p) -> None:
    _add_run_flags(p, ["compare"])
    p.set_defaults(func=_cmd_reproduce, configs=["compare"], figure="compare")


def _add_run(p) -> None:
    p.add_argument("--stream", help=f"one of {', '.join(registry.STREAMS)} (default: the "
                   "config's; one of --stream and --config is needed)")
    p.add_argument("--model",
                   help=f"one of {', '.join(registry.MODELS)} (also <model>/labeled-only), "
                   "river:<module>.<Class> or moa:<learner> (e.g. moa:SLEADE) (default: the "
                   "config's; one of --model and --config is needed)")
    p.add_argument("--config", help="a TOML config (a file or a bundled name); flags override "
                   "(default: none, the run defaults: 100,000 instances, 1 trial, 10 %% labels)")
    _add_run_flags(p, None)
    p.set_defaults(func=_cmd_run, figure="prequential_error")


def _add_plot(p) -> None:
    p.add_argument("--csv", type=Path, required=True,
                   help="a curves.csv written by this CLI (required, no default)")
    p.add_argument("--out", type=Path, required=True,
                   help="output directory (required, no default)")
    p.add_argument("--zoom", type=positive_int, default=50_000,
                   help="instances shown in the left panels")
    p.add_argument("--name", default="prequential_error", help="figure file name, no extension")
    p.set_defaults(func=_cmd_plot)


def _benchmarks() -> list[str]:
    """The modules of `evaluation.bench`: the targets of `bench`."""
    import pkgutil

    from . import bench

    return sorted(m.name for m in pkgutil.iter_modules(bench.__path__)
                  if not m.ispkg and not m.name.startswith("_"))  # _helpers: not benchmarks


def _add_bench(p) -> None:
    from .bench import models  # owns the flags of the models benchmark (the default target)

    targets = _benchmarks()
    p.add_argument("target", nargs="?", default="models", choices=targets,
                   help="what to benchmark (default models)")
    p.add_argument("rest", nargs="*",
                   help="first_use: the models (default all five); streams: instances, repeats")
    models.add_arguments(p)
    p.set_defaults(func=_cmd_bench)


# ---------------------------------------------------------------------------------- plans

_SETTINGS = ["instances", "trials", "label_ratio", "label_batch", "batch_size", "fading_factor",
             "step", "preset"]
_RUN_DEFAULTS = {"instances": 100_000, "trials": 1, "label_ratio": 0.1, "label_batch": 20,
                 "batch_size": 20, "fading_factor": 0.995, "step": 1000, "params": {},
                 "preset": "default"}


def _settings(config: dict, args) -> dict:
    """Config values, then its [quick] table with --quick, then the flags."""
    settings = {**_RUN_DEFAULTS, **config}
    if getattr(args, "quick", False):
        settings.update(config.get("quick", {}))
    for key in _SETTINGS:
        value = getattr(args, key, None)
        if value is not None:
            settings[key] = value
    for key in ("instances", "trials", "batch_size", "step"):
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"Invalid {key} ({value!r}). Must be a positive integer")
    registry.check_preset(settings["preset"])
    if not 0.0 < settings["fading_factor"] <= 1.0:
        value = settings["fading_factor"]
        raise ValueError(f"Invalid fading_factor ({value}). Valid range is (0, 1]")
    return settings


def _trials(config: dict, args) -> tuple[list, dict]:
    from .runs.experiment import Trial

    s = _settings(config, args)
    streams = getattr(args, "streams", None) or list(s.get("streams", []))
    models = getattr(args, "models", None) or list(s.get("models", []))
    if not streams or not models:
        raise ValueError("No stream or no model to run: give --stream and --model, or --config")
    for name in streams:
        registry.check_stream_name(name)
    for name in models:
        registry.check_model_name(name)
    skipped, why = registry.missing_peers(models)
    if why:  # MOA's peers without capymoa: their rows only are left out
        models = [m for m in models if m not in skipped]
        if not models:
            raise ValueError(why)
        print(why, file=sys.stderr)
    overrides = dict(args.set)
    trials = [
        Trial(
            stream=stream, model=model, trial=k, instances=s["instances"],
            label_ratio=s["label_ratio"], label_batch=s["label_batch"],
            batch_size=s["batch_size"], fading_factor=s["fading_factor"], step=s["step"],
            seed=args.seed, params={**s["params"].get(model, {}), **overrides},
            preset=s["preset"],
        )
        for stream in streams
        for model in models
        for k in range(s["trials"])
    ]
    summary = {k: s[k] for k in _SETTINGS} | {"streams": streams, "models": models,
                                              "seed": args.seed, "params": s["params"],
                                              "set": overrides, "config": s.get("_path")}
    return trials, summary


def _validate(trials) -> None:
    """Build each (stream, model) once, so bad names or parameters fail before a long run."""
    seen = set()
    for t in trials:
        if (t.stream, t.model) not in seen:
            seen.add((t.stream, t.model))
            t.build()


def _execute(trials, settings, args, figure: str) -> int:
    from .runs import experiment

    with _user_errors():
        _validate(trials)
        if args.out is not None:
            experiment.check_writable(args.out)
    scheduler = args.scheduler
    try:
        results = experiment.run_trials(trials, jobs=args.jobs, scheduler=scheduler,
                                        quiet=args.quiet, recording=args.out is not None)
    except OSError as e:
        if scheduler is not None:
            raise BadArguments(f"cannot reach the Dask scheduler {scheduler!r}: {e}") from None
        raise
    curves = experiment.curves_frame(results)
    print(experiment.summary_markdown(experiment.summarise(curves)), end="")
    cpu = sum(r["cpu_seconds"] for r in results)
    print(f"{len(results)} trials, {cpu / 60:.1f} CPU minutes in all")
    if args.out is not None:
        settings = settings | {"command": args.command, "jobs": args.jobs,
                               "command_line": args.command_line}
        experiment.write_outputs(results, args.out, settings=settings, figure=figure)
        print(f"results written to {args.out}")
    return 0


# ---------------------------------------------------------------------------------- commands


def _cmd_reproduce(args) -> int:
    trials, settings = [], {}
    with _user_errors():
        for name in args.configs:
            t, s = _trials(registry.load_config(name), args)
            trials += t
            settings[name] = s
    if args.out is None:
        args.out = Path("results") / (f"{args.command}-quick" if args.quick else args.command)
    return _execute(trials, settings, args, args.figure)


def _cmd_run(args) -> int:
    with _user_errors():
        config = registry.load_config(args.config) if args.config else {}
        if args.stream:
            config["streams"] = [args.stream]
        if args.model:
            config["models"] = [args.model]
        trials, settings = _trials(config, args)
    return _execute(trials, settings, args, args.figure)


def _cmd_plot(args) -> int:
    import pandas as pd

    from .runs.experiment import check_writable
    from .runs.plots import check_curves, plot_curves

    try:
        curves = pd.read_csv(args.csv)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise BadArguments(f"cannot read {str(args.csv)!r}: {e}") from None
    with _user_errors():
        check_writable(args.out)
        check_curves(curves)
    for path in plot_curves(curves, args.out, zoom=args.zoom, name=args.name):
        print(path)
    return 0


def _cmd_suite(args) -> int:
    from .experiments import suite

    with _user_errors():
        suite.check(args)
    return suite.command(args)


def _cmd_bench(args) -> int:
    import importlib

    module = importlib.import_module(f"evaluation.bench.{args.target}")
    if args.target == "models" and args.rest:
        raise BadArguments(f"unrecognized arguments: {' '.join(args.rest)}")
    if hasattr(module, "run"):  # the benchmark reads the bench parser's flags
        with _user_errors():
            return module.run(args, args.command_line)
    return module.main(args.rest) or 0


def _cmd_tracks(args) -> int:
    from .experiments import tracks

    with _user_errors():
        runs = tracks.plan(args)
    return tracks.run(runs, args)


# ---------------------------------------------------------------------------------- parser


def _module_parser(name: str, command=None):
    """The add function of a subcommand whose module owns its flags (and its command, unless
    `command` names cli's function that wraps it)."""

    def add(p) -> None:
        import importlib

        importlib.import_module(f"evaluation.{name}").add_arguments(p)
        if command is not None:
            p.set_defaults(func=command)

    return add


#: Subcommand -> (its line in the top-level help, the function that adds its flags). Only the
#: chosen subcommand's flags are built: each module imports what it runs (pandas, River's
#: metrics, ...), which the top-level help should not wait for.
SUBCOMMANDS = {
    "reproduce": ("the paper's online experiment (figure 3)", _add_reproduce),
    "run": ("one stream and one model (or a config file)", _add_run),
    "compare": ("this project's models against River's learners (configs/compare.toml)",
                _add_compare),
    "scarcity": ("error against label ratio: our models, their ablations, the peers",
                 _module_parser("experiments.scarcity")),
    "suite": ("the development suite: dict API, whole-stream accuracy",
              _module_parser("experiments.suite", _cmd_suite)),
    "plot": ("figures from a curves CSV, without re-running", _add_plot),
    "bench": ("speed benchmarks (default: the models)", _add_bench),
    "mnist": ("the paper's offline MNIST experiment (Table 1, 100 labels)",
              _module_parser("offline.mnist.experiment")),
    "tracks": ("River's benchmark tracks (binary, multi-class), optionally semi-supervised",
               _module_parser("experiments.tracks", _cmd_tracks)),
    "newsgroups": ("the paper's 20 NewsGroups experiment, over your copy of the data",
                   _module_parser("offline.newsgroups.experiment")),
    "drift": ("abrupt concept changes: recovery against River's drift-aware learners",
              _module_parser("experiments.drift")),
    "detector": ("the drift detector's delta: how late it sees a change, its false alarms",
                 _module_parser("experiments.detector")),
}


#: Subcommands whose settings come from TOML configs: an unset option keeps the config's value.
CONFIG_COMMANDS = ("reproduce", "run", "compare", "scarcity", "mnist", "newsgroups")


def _chosen(argv: list[str]) -> str | None:
    """The subcommand in `argv`: its first word (the top level has no flag taking a value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: list[str] | None = None,
                 prog: str = "python -m evaluation") -> argparse.ArgumentParser:
    """The command line's parser, with the flags of the subcommand `argv` names (all of them
    when `argv` is None)."""
    parser = _Parser(
        prog=prog,
        description="Semi-supervised prequential evaluation of river-dhbm's online learners.",
        epilog=EPILOG, formatter_class=HelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = _chosen(argv) if argv is not None else None
    for name, (summary, add) in SUBCOMMANDS.items():
        unset = "the config's value" if name in CONFIG_COMMANDS else "none"
        p = sub.add_parser(name, help=summary, description=summary, epilog=EPILOG,
                           formatter_class=functools.partial(HelpFormatter, unset=unset))
        if argv is None or name == chosen:
            add(p)
    return parser


def main(argv: list[str] | None = None, prog: str = "python -m evaluation") -> int:
    """Entry point of `python -m evaluation`; the `river-dhbm` console script calls it with its
    own name as `prog` (`evaluation.__main__.main`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv, prog)
    args = None
    try:
        args = parser.parse_args(argv)
        args.command_line = f"{prog} {shlex.join(argv)}"  # what reproduces the run, in reports
        return args.func(args)
    except BadArguments as e:
        print("error:", " ".join(str(e).split()), file=sys.stderr)  # one line, whatever e says
        return 2
    except (KeyboardInterrupt, Interrupted) as e:  # Ctrl-C: one line, no traceback
        print(_interrupted_line(e, args), file=sys.stderr)
        return 130  # 128 + SIGINT, as a shell reports it


def _interrupted_line(e: BaseException, args) -> str:
    """What Ctrl-C left: the runs done, and what was not written (result files are written
    all at once at the end, so none is; MNIST's are rewritten after each finished trial)."""
    done = f"{e}" if isinstance(e, Interrupted) else "stopped"
    out = getattr(args, "out", None)
    if getattr(args, "command", None) == "mnist":
        return f"interrupted: {done}; the files in {out or 'the output directory'} hold the " \
               "finished trials only"
    return f"interrupted: {done}; nothing written" + (f" to {out}" if out else "")
