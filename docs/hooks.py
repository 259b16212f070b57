"""MkDocs hooks: serve the figures of `evaluation/results/` as `img/...` without copying them
into `docs/` (one copy of each figure, the one the experiments write), and build the results
page's suite tables from the CSVs the suite wrote (a line `<!-- suite-tables: DIR ... -->`
becomes one table per label ratio over the `suite.csv` of each DIR), so that no table is
retyped; and a line `<!-- model-defaults: PARAM ... -->` becomes a table of those constructor
defaults of each model, read from the constructors themselves."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project's packages, for the tables built from them
    sys.path.insert(0, str(ROOT))

FIGURES = {
    "img/figure3-paper.png": "evaluation/results/paper/figure3.png",
    "img/figure3-default.png": "evaluation/results/default/figure3.png",
    "img/scarcity.png": "evaluation/results/scarcity/scarcity.png",
    "img/tracks-binary.png": "evaluation/results/tracks/tracks-binary.png",
    "img/tracks-multiclass.png": "evaluation/results/tracks/tracks-multiclass.png",
    "img/tracks-10-binary.png": "evaluation/results/tracks-10/tracks-binary.png",
    "img/tracks-10-multiclass.png": "evaluation/results/tracks-10/tracks-multiclass.png",
    "img/drift.png": "evaluation/results/drift/drift.png",
    "img/drift-scarce.png": "evaluation/results/drift-scarce/drift.png",
}


SUITE_TABLES = re.compile(r"<!-- suite-tables: ([^>]+?) -->")


def suite_tables(markdown: str) -> str:
    """`markdown` with each suite-tables line replaced by its tables."""

    def tables(match) -> str:
        import pandas as pd

        runs = pd.concat([pd.read_csv(ROOT / d / "suite.csv") for d in match.group(1).split()])
        return ratio_tables(runs)

    return SUITE_TABLES.sub(tables, markdown)


MODEL_DEFAULTS = re.compile(r"<!-- model-defaults: ([^>]+?) -->")


def model_defaults(markdown: str) -> str:
    """`markdown` with each model-defaults line replaced by a table: a row per model of
    `river_dhbm`, a column per parameter named, the constructor's default ("" where the model
    has no such parameter)."""

    def table(match) -> str:
        import inspect

        import river_dhbm

        params = match.group(1).split()
        lines = ["| model | " + " | ".join(f"`{p}`" for p in params) + " |",
                 "|---|" + "---|" * len(params)]
        for name in river_dhbm.__all__:
            signature = inspect.signature(getattr(river_dhbm, name)).parameters
            cells = [f"`{signature[p].default!r}`" if p in signature else "" for p in params]
            lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    return MODEL_DEFAULTS.sub(table, markdown)


def _display_name(model: str) -> str:
    """`DHBM`, `DHBM`, labeled-only, River `GaussianNB`: a model as the docs' tables name it."""
    from evaluation.experiments import suite
    from evaluation.runs import registry

    base, ablation = registry.split_ablation(model)
    if base in registry.MODELS:
        return f"`{registry.MODELS[base][0]}`" + (", labeled-only" if ablation else "")
    return f"River `{model}`" if model in suite.PEERS else f"`{model}`"


def ratio_tables(runs) -> str:
    """One markdown table per label ratio (highest first): a row per model (each of ours
    followed by its ablation, then River's peers), a column per stream, mean ± standard error
    over seeds, the best mean of each column in bold, "not run" where a model did not run. The
    docs' results page shows the suite this way."""
    from evaluation.experiments.suite_report import mean_and_error
    from evaluation.runs import registry

    mean, se = mean_and_error(runs)
    streams = list(dict.fromkeys(runs["stream"]))
    seen = list(dict.fromkeys(runs["model"]))
    ours = [m for m in seen if registry.split_ablation(m)[0] in registry.MODELS]
    bases = list(dict.fromkeys(registry.split_ablation(m)[0] for m in ours))
    models = [m for b in bases for m in (b, b + registry.ABLATION_SUFFIX) if m in seen]
    models += [m for m in seen if m not in models]
    out = []
    for ratio in sorted(set(runs["label_ratio"]), reverse=True):
        title = f"{100 * ratio:g} % labels"
        names = [("LED" if s == "led" else s) for s in streams]
        lines = [f"## {title}", "", "| model | " + " | ".join(names) + " |",
                 "|---|" + "---:|" * len(streams)]
        best = {s: max((mean[m, s, ratio] for m in models if (m, s, ratio) in mean),
                       default=None) for s in streams}
        for m in models:
            cells = []
            for s in streams:
                if (m, s, ratio) not in mean:
                    cells.append("not run")
                    continue
                text = f"{mean[m, s, ratio]:.3f} ± {se[m, s, ratio]:.3f}"
                cells.append(f"**{text}**" if mean[m, s, ratio] == best[s] else text)
            lines.append(f"| {_display_name(m)} | " + " | ".join(cells) + " |")
        out.append("\n".join(lines) + "\n")
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files):
    return model_defaults(suite_tables(markdown))


def on_files(files, config):
    for dest, src in FIGURES.items():
        file = File(dest, src_dir=None, dest_dir=config["site_dir"],
                    use_directory_urls=config["use_directory_urls"])
        file.abs_src_path = str(ROOT / src)
        files.append(file)
    return files
