"""The development suite: how a River user meets the models, on streams of many shapes.

    python -m evaluation suite --quick --jobs 2             # a first look, about 30 s
    python -m evaluation suite --mnist DIR --moa --jobs 2   # the whole suite, 5 seeds
    python -m evaluation suite --streams digits,river:datasets.Elec2 --label-ratios 1,0.1
    python -m evaluation suite --instances 100000 --streams led,sea   # adds the 0.1 % labels

Every run is test-then-train one row at a time through River's dict API: `predict_one`, then
`learn_one(x, y)` for a labeled row and `learn_one(x)` for an unlabeled one, each row keeping
its label with the given probability (a per-row mask drawn from the seed). Our models sit
behind `preprocessing.MinMaxScaler()` and learn every row; River's peers learn the labeled
rows only (`GaussianNB`, `BernoulliNB`, `HoeffdingTreeClassifier` and `ARFClassifier` on the
raw features, `LogisticRegression` and `KNNClassifier` behind a `StandardScaler`; by name,
`Prior`: River's `PriorClassifier`, the labeled rows' most frequent class).
`BernoulliNB` runs only on a stream whose features are all 0 or 1 over the run's rows (LED's);
elsewhere its cell is n/a. The measure is the prequential accuracy over the whole stream, so a
slow start counts. Writes `suite.csv` (one row per run; a run left out has no accuracy and
says why in `skipped`), `suite.md` (mean +- standard error over seeds, footnotes for the n/a
cells) and `suite.png` into `--out`.

MOA's learners join through the `moa` extra (capymoa, Java 17+) by name, `moa:NaiveBayes`,
`moa:HoeffdingTree`, `moa:SLEADE` or a MOA CLI string (`evaluation.runs.moa_peers`); `--moa` adds
those three. They are not in the default models: starting the JVM costs seconds, and the
defaults should give the same table on every machine. A supervised MOA learner learns the
labeled rows only, as River's peers do; a semi-supervised one (`SLEADE`) also sees the
unlabeled rows, as in capymoa's `prequential_ssl_evaluation`. Without capymoa the command ends
in one line naming the install hint.

Label ratios: 100 %, 10 % and 1 % by default, and 0.1 % when `--instances` is at least
100,000. A ratio below 1 % runs only on a stream with at least 100,000 rows in the run (fewer
would give under a hundred labels); a shorter stream's cell is n/a.

Streams: `led` and `waveform` (MOA's stationary generators), `digits` (scikit-learn's 8x8
digits, shuffled by the seed), `mnist` (the user's IDX directory, `--mnist DIR`; the first
`--instances` of the shuffled training images), `phishing`, `bananas` and `sea` (River's
`Phishing`, `Bananas` and `synth.SEA(noise=0.1)`), and any River dataset or generator by name
(`river:datasets.Elec2`, `river:datasets.synth.Hyperplane`), settings in brackets separated by
`;` (`river:datasets.synth.SEA(variant=2;noise=0.05)`). By name only: `clusters` and
`clusters-across` (`evaluation.experiments.clusters`: where the cluster assumption holds,
and where the classes cut across the clusters).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from ..runs import moa_peers, registry
from ..runs.arguments import floats, names, positive_int
from ..runs.files import atomic_write_all, check_writable, result_jobs
from ..runs.warmup import announce
from ..runs.workers import counting, process_pool
from .suite_streams import DEFAULT_INSTANCES, PLANTED, REALISTIC, STREAMS, load_stream
from .suite_report import (
    experts_markdown,
    mean_and_error,
    plot,
    quarters_markdown,
    table_markdown,
    variants_markdown,
    worth_markdown,
)

__all__ = ["PEERS", "STREAMS", "add_arguments", "check", "command", "load_stream", "make_learner",
           "mean_and_error", "run", "run_one"]

#: Our models' experts, in the mixture's order: each one's accuracy is a column of the runs.
EXPERTS = ("network", "twin", "linear")

#: River's peers, which learn the labeled rows only (their pipelines: `make_learner`).
PEERS = ("LogisticRegression", "GaussianNB", "BernoulliNB", "HoeffdingTree", "KNN", "ARF", "Prior")

#: Peers for binary features only: elsewhere their cells are n/a (`skip_reason`).
BINARY_PEERS = ("BernoulliNB",)

#: The scalers our models can sit behind (`scaler=` among a model's settings; the first is the
#: default): River's `MinMaxScaler`, the [0, 1] the paper's models take, or its
#: `StandardScaler`. Which does better depends on the stream (docs/results.md).
SCALERS = ("minmax", "standard")

#: MOA's peers that `--moa` adds (the `moa` extra): two supervised, one semi-supervised.
MOA_PEERS = ("moa:NaiveBayes", "moa:HoeffdingTree", "moa:SLEADE")

# KNN is left out by default: in River's dict loop it takes hours on MNIST's 784 pixels
DEFAULT_MODELS = ["dhbm-mf", "dhda", "pl-mlp", "dhbm-mf/labeled-only", "dhda/labeled-only",
                  "pl-mlp/labeled-only", "LogisticRegression", "GaussianNB", "BernoulliNB",
                  "HoeffdingTree"]
QUICK_MODELS = ["dhbm-mf", "dhda", "dhbm-mf/labeled-only", "dhda/labeled-only",
                "LogisticRegression", "GaussianNB", "HoeffdingTree"]
DEFAULT_RATIOS = [1.0, 0.1, 0.01]
SCARCEST_RATIO = 0.001  # a default too when --instances >= SCARCE_MIN_ROWS
# a ratio below SCARCE_RATIO runs only on streams of SCARCE_MIN_ROWS rows: 100 labels or more
SCARCE_RATIO, SCARCE_MIN_ROWS = 0.01, 100_000


def default_ratios(instances: int) -> list[float]:
    """1, 0.1 and 0.01, and 0.001 when `instances` rows can give 100 labels at 0.1 %."""
    return DEFAULT_RATIOS + ([SCARCEST_RATIO] if instances >= SCARCE_MIN_ROWS else [])


# ---------------------------------------------------------------------------------- models


def make_learner(name: str, seed: int, rows: list | None = None):
    """A fresh learner: one of `PEERS`, in the pipeline a River user would put it in, one of
    MOA's (`moa:<learner>`, `MOAPeer`: sized from the run's `rows`), or one of ours
    (`registry.MODELS`, `/labeled-only` for the ablation, `key=value` settings after a colon,
    `;` between them: `dhbm-mf:steps=1;activation=sigmoid`) behind a `MinMaxScaler`. Returns
    `(learner, learns_unlabeled)`."""
    from river import (
        dummy,
        forest,
        linear_model,
        multiclass,
        naive_bayes,
        neighbors,
        preprocessing,
        tree,
    )
    from river.checks.utils import seed_params

    if name.startswith(registry.MOA_PREFIX):
        if rows is None:
            raise ValueError(f"{name} is sized from the stream: pass its rows")
        peer = MOAPeer(name, rows, seed)
        return peer, peer.learner._takes_unlabeled
    if name in PEERS:
        peer = {
            "LogisticRegression": lambda: preprocessing.StandardScaler()
            | multiclass.OneVsRestClassifier(linear_model.LogisticRegression()),
            "GaussianNB": naive_bayes.GaussianNB,
            "BernoulliNB": naive_bayes.BernoulliNB,  # binary streams only: `skip_reason`
            "HoeffdingTree": tree.HoeffdingTreeClassifier,
            "KNN": lambda: preprocessing.StandardScaler() | neighbors.KNNClassifier(),
            "ARF": lambda: forest.ARFClassifier(seed=seed),
            "Prior": dummy.PriorClassifier,  # the labeled rows' most frequent class
        }[name]()
        # every random part seeded, River's way: the KNN's search engine is unseeded by default
        return peer.clone(seed_params(peer._get_params(), seed)), False
    base_name, params = _settings_of(check_model_name(name))
    scaler = params.pop("scaler", SCALERS[0])
    model = registry.make_model(base_name, None, None, seed=seed, params=params, preset="default")
    front = (preprocessing.MinMaxScaler if scaler == "minmax" else preprocessing.StandardScaler)
    return front() | model, True


def _settings_of(name: str) -> tuple[str, dict]:
    """`(registry name, settings)` of one of our models' names: `dhbm-mf:steps=2;init=glorot`
    gives `("dhbm-mf", {"steps": 2, "init": "glorot"})`."""
    base_name, _, settings = name.partition(":")
    params = {}
    for item in filter(None, settings.split(";")):
        key, _, value = item.partition("=")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:  # a bare word: a string setting
            params[key] = value
    return base_name, params


class MOAPeer:
    """A MOA learner (`moa_peers.MOAClassifier`, which takes vectors and class indices) on a
    suite stream's dicts: the features in the order the rows first show them (a missing one
    is 0), the classes those of the run's rows, since MOA's schema names every class up
    front. Before any vote MOA predicts the first class, as the adapter does."""

    def __init__(self, name: str, rows: list, seed: int):
        self.features = list(dict.fromkeys(k for x, _ in rows for k in x))
        self.classes = sorted({y for _, y in rows}, key=repr)  # repr: bools, ints and strings
        self._index = {c: i for i, c in enumerate(self.classes)}
        self.learner = moa_peers.make(name, len(self.features), len(self.classes), seed, {})

    def _vector(self, x: dict) -> np.ndarray:
        return np.array([[float(x.get(k, 0.0)) for k in self.features]])

    def predict_one(self, x: dict):
        return self.classes[int(self.learner.predict_proba_arrays(self._vector(x))[0].argmax())]

    def learn_one(self, x: dict, y=None) -> None:
        kept = y is not None
        self.learner.learn_arrays(self._vector(x), np.array([self._index[y] if kept else 0]),
                                  np.array([kept]))


def model_names(text: str) -> list[str]:
    """Comma-separated model names; commas inside brackets belong to a setting's list."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text + ","):
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    return [name for name in out if name]


def check_model_name(name: str) -> str:
    if name in PEERS:
        return name
    if name.startswith(registry.MOA_PREFIX):
        return registry.check_model_name(name)
    base_name, params = _settings_of(name)
    registry.check_model_name(base_name)
    if params.get("scaler", SCALERS[0]) not in SCALERS:
        raise ValueError(f"Invalid scaler ({params['scaler']!r}) in {name!r}. Valid options: "
                         f"{', '.join(SCALERS)}")
    return name


# ---------------------------------------------------------------------------------- runs


def _binary(rows: list) -> bool:
    return all(v == 0 or v == 1 for x, _ in rows for v in x.values())


def skip_reason(model: str, label_ratio: float, rows: list) -> str:
    """Why `model` does not run at `label_ratio` on `rows` (the stream's rows for the run),
    or "" when it runs."""
    if label_ratio < SCARCE_RATIO and len(rows) < SCARCE_MIN_ROWS:
        return f"label ratio {label_ratio:g} runs on streams of {SCARCE_MIN_ROWS:,} rows or more"
    if model in BINARY_PEERS and not _binary(rows):
        return f"{model} takes features in {{0, 1}} only"
    return ""


def run_one(rows: list, learner, learns_unlabeled: bool, label_ratio: float, seed: int,
            experts: dict | None = None, quarters: list | None = None) -> float:
    """Prequential accuracy over `rows`, each row labeled with probability `label_ratio`.
    With a dict `experts` and one of our models, each expert's accuracy over the same rows
    goes into it by name (`predict_experts_one`: what each would have scored alone); with a
    list `quarters`, the accuracy over each quarter of the rows is appended to it."""
    labeled = np.random.default_rng([seed, 7919]).random(len(rows)) < label_ratio
    model, head = _our_model(learner)
    right = np.zeros(len(rows), dtype=bool)
    hits: dict = {}
    for i, ((x, y), keep) in enumerate(zip(rows, labeled.tolist())):
        if experts is not None and model is not None:
            z = x
            for step in head:
                z = step.transform_one(z)
            right[i] = model.predict_one(z) == y
            for name, label in model.predict_experts_one(z).items():
                hits[name] = hits.get(name, 0) + (label == y)
        else:
            right[i] = learner.predict_one(x) == y
        if keep:
            learner.learn_one(x, y)
        elif learns_unlabeled:
            learner.learn_one(x)
    if experts is not None:
        experts.update({name: n / len(rows) for name, n in hits.items()})
    if quarters is not None:
        quarters.extend(float(part.mean()) for part in np.array_split(right, 4))
    return float(right.mean())


def _our_model(learner) -> tuple:
    """`(model, the pipeline's steps before it)` when `learner` ends in one of our models, else
    `(None, [])`."""
    from river_dhbm.base import HybridClassifier

    steps = list(learner.steps.values()) if hasattr(learner, "steps") else [learner]
    if isinstance(steps[-1], HybridClassifier):
        return steps[-1], steps[:-1]
    return None, []


def _task(args):
    stream, ratio, model, seed, instances, mnist = args
    rows = load_stream(stream, seed, instances, mnist)
    out = dict(stream=stream, label_ratio=ratio, model=model, seed=seed, instances=len(rows),
               accuracy=float("nan"), skipped=skip_reason(model, ratio, rows),
               unlabeled_trust=float("nan"))
    out.update({f"expert_{name}": float("nan") for name in EXPERTS})
    out.update({f"quarter_{q}": float("nan") for q in range(1, 5)})
    if not out["skipped"]:
        learner, unlabeled = make_learner(model, seed, rows)
        experts: dict = {}
        quarters: list = []
        out["accuracy"] = run_one(rows, learner, unlabeled, ratio, seed, experts, quarters)
        out["unlabeled_trust"] = _unlabeled_trust(learner)
        out.update({f"expert_{name}": acc for name, acc in experts.items()})
        out.update({f"quarter_{q}": acc for q, acc in enumerate(quarters, 1)})
    return out


def _unlabeled_trust(learner) -> float:
    """Our model's `unlabeled_trust` at the end of the run (NaN for a peer)."""
    model = learner[-1] if hasattr(learner, "steps") else learner
    return float(getattr(model, "unlabeled_trust", float("nan")))


def run(streams, label_ratios, models, seeds, instances=DEFAULT_INSTANCES, mnist=None,
        jobs=1, progress=True):
    """Every (stream, label ratio, model, seed) run; returns a DataFrame of their accuracies,
    with NaN and the reason in `skipped` for a run left out (`skip_reason`)."""
    import pandas as pd

    from ..runs.progress import bar as progress_bar

    tasks = [(s, r, m, seed, instances, mnist) for s in streams for seed in seeds
             for r in label_ratios for m in models]
    rows: list = [None] * len(tasks)
    with progress_bar(len(tasks), "suite", unit="run", quiet=not progress) as bar, \
            counting(rows):
        ours = [m for m in models if not m.startswith(registry.MOA_PREFIX)]
        fresh = [make_learner(m, seeds[0])[0] for m in ours]
        # one notice names them all, and the models of the behaviour hash the results record
        announce(fresh, recording=True)
        if jobs == 1:
            for i, t in enumerate(tasks):
                rows[i] = _task(t)
                bar.update()
        else:
            import multiprocessing as mp

            from ..runs.warmup import warm_up

            # compile once here (the streams' kernels too), the workers load Numba's cache
            widths = [len(load_stream(s, seeds[0], 1, mnist)[0][0]) for s in streams]
            warm_up((learner, widths[0]) for learner in fresh)
            # a JVM (MOA's) does not survive a fork: workers from a fresh server start their own
            context = None if ours == list(models) else mp.get_context("forkserver")
            with process_pool(jobs, context=context) as pool:
                for i, r in enumerate(pool.map(_task, tasks)):
                    rows[i] = r
                    bar.update()
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of the `suite` subcommand (its command: `command`), on its parser `p`."""
    p.add_argument("--streams", type=names, default=None,
                   help=f"comma-separated streams (default: {','.join(STREAMS)}, mnist only "
                   f"with --mnist; also {', '.join(PLANTED)}, river:<module>.<Dataset>)")
    p.add_argument("--label-ratios", type=floats, default=None,
                   help="comma-separated (default: 1,0.1,0.01, and 0.001 when --instances >= "
                   f"{SCARCE_MIN_ROWS:,}); a ratio below {SCARCE_RATIO:g} runs only on a "
                   f"stream with at least {SCARCE_MIN_ROWS:,} rows in the run, a shorter "
                   "stream's cell is n/a")
    p.add_argument("--models", type=model_names, default=DEFAULT_MODELS,
                   help="comma-separated: ours (registry names, `/labeled-only`, settings after "
                   "a colon: `dhbm-mf:hidden_sizes=[64,64];steps=4`, behind River's MinMaxScaler "
                   "or, with `scaler=standard`, its StandardScaler), River's peers "
                   f"({', '.join(PEERS)}; BernoulliNB only where the features are all 0 or 1, "
                   "n/a elsewhere) and MOA's through the `moa` extra (moa:NaiveBayes, "
                   "moa:SLEADE, moa:<MOA CLI string>; not in the default list)")
    p.add_argument("--moa", action="store_true",
                   help=f"add MOA's peers {', '.join(MOA_PEERS)}; they need the moa extra: "
                   f"{moa_peers.INSTALL_HINT}")
    p.add_argument("--seeds", type=positive_int, default=5,
                   help="seeds per cell: --seed, --seed + 1, ..., each the seed of the stream, "
                   "the label mask and the model")
    p.add_argument("--seed", type=int, default=0, help="the first seed")
    p.add_argument("--instances", type=positive_int, default=DEFAULT_INSTANCES,
                   help="rows per stream (a shorter data set: all of its rows)")
    p.add_argument("--mnist", metavar="DIR",
                   help="MNIST's IDX directory (adds the stream; default: no MNIST)")
    p.add_argument("--jobs", type=positive_int, default=1, help="local worker processes")
    p.add_argument("--out", type=Path, default=Path("results/suite"), help="output directory")
    p.add_argument("--quick", action="store_true",
                   help="the first look: 3,000 rows of every stream but MNIST, 2 seeds, "
                   "labels 100 %%, 10 %% and 1 %%, the hybrids, their ablations and three "
                   "of River's peers (about 30 s with --jobs 2; about 70 s the first time, "
                   "compiling the kernels)")
    p.add_argument("--quarters", action="store_true",
                   help="also print each stream's accuracy over each quarter of its rows (the "
                   "CSV has them always)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def command(args) -> int:
    """The `suite` subcommand (`check(args)` first: it raises ValueError for bad settings)."""
    _run_and_write(args)
    return 0


def _settings(args):
    streams = args.streams or [s for s in STREAMS if s != "mnist" or args.mnist]
    models, ratios, seeds, instances = args.models, args.label_ratios, args.seeds, args.instances
    if args.quick:
        streams = [s for s in streams if s != "mnist"]
        models = QUICK_MODELS
        ratios, seeds, instances = DEFAULT_RATIOS, 2, 3000
    if args.moa:
        models = list(dict.fromkeys([*models, *MOA_PEERS]))
    return streams, models, ratios or default_ratios(instances), seeds, instances


def check(args) -> None:
    """Raise ValueError, in one line, for settings that cannot run."""
    streams, models, ratios, _, _ = _settings(args)
    for m in models:
        check_model_name(m)
    moa = [m for m in models if m.startswith(registry.MOA_PREFIX)]
    if moa and (reason := moa_peers.available()) is not None:
        raise ValueError(f"{', '.join(moa)} need capymoa, which is not available ({reason}); "
                         f"{moa_peers.INSTALL_HINT}")
    for r in ratios:
        if not 0 < r <= 1:
            raise ValueError(f"Invalid label ratio ({r!r}). Valid range is (0, 1]")
    for s in streams:
        if s == "mnist" and not args.mnist:
            raise ValueError("The mnist stream needs --mnist DIR (MNIST's IDX files)")
        if s not in STREAMS + PLANTED + REALISTIC and not s.startswith(registry.RIVER_PREFIX):
            raise ValueError(f"Unknown stream {s!r}. Choose from "
                             f"{', '.join(STREAMS + PLANTED + REALISTIC)} or "
                             "river:<module>.<Dataset>")


def _run_and_write(args) -> None:
    streams, models, ratios, seeds, instances = _settings(args)
    first = args.seed
    runs = run(streams, ratios, models, list(range(first, first + seeds)), instances, args.mnist,
               args.jobs, progress=not args.quiet)
    table = table_markdown(runs)
    worth = worth_markdown(runs)
    if worth:
        table += ("\nWhat unlabeled rows are worth: accuracy minus the labeled-only ablation's, "
                  f"mean (range) over {seeds} seeds, and `unlabeled_trust` at the end.\n\n"
                  + worth)
    experts = experts_markdown(runs)
    if experts:
        table += ("\nEach model beside its own experts: its mean accuracy over the seeds "
                  "minus its best single expert's (in brackets: that expert and its accuracy; "
                  "every expert's is in the CSV).\n\n"
                  + experts)
    if args.quarters:
        table += ("\nAccuracy over each quarter of the rows, mean over the seeds.\n\n"
                  + quarters_markdown(runs))
    variants = variants_markdown(runs)
    if variants:
        table += ("\nWhat each setting is worth: the default's accuracy minus the variant's, "
                  "seed by seed, averaged over the streams (in brackets the stream where the "
                  "variant does best).\n\n" + variants)
    text = ("Prequential accuracy over the whole stream (dict API, per-row label mask), mean ± "
            f"standard error over {seeds} seeds ({first}-{first + seeds - 1}).\n\n" + table)
    out = check_writable(args.out)
    settings = {k: v for k, v in vars(args).items() if k != "func"}
    atomic_write_all([*result_jobs(out, "suite", runs, text, settings),
                      (out / "suite.png", lambda p: plot(runs, p))])
    print(table, end="")
