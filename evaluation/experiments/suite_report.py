"""The suite's report: its tables (accuracy per cell, what unlabeled rows are worth) and its
figure, built from the runs' frame (`suite.csv`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..runs import registry

__all__ = ["experts_markdown", "mean_and_error", "plot", "quarters_markdown", "table_markdown",
           "variants_markdown", "worth_markdown"]


def table_markdown(runs) -> str:
    """Mean +- standard error over seeds: a row per model, a column per stream and ratio;
    the best mean of each column in bold; n/a for a cell left out, with a footnote saying
    why."""
    if "skipped" not in runs:  # a CSV from before runs could be left out
        runs = runs.assign(skipped="")
    runs = runs.assign(skipped=runs["skipped"].fillna(""))
    mean, se = mean_and_error(runs)
    columns = [(s, r) for s in dict.fromkeys(runs["stream"])
               for r in sorted(set(runs["label_ratio"]), reverse=True)]
    lines = ["| model | " + " | ".join(f"{s} {r:g}" for s, r in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    best = {c: max((mean[m, c[0], c[1]] for m in dict.fromkeys(runs["model"])
                    if (m, *c) in mean), default=None) for c in columns}
    left_out = runs[runs["skipped"] != ""]
    skipped = set(zip(left_out["model"], left_out["stream"], left_out["label_ratio"]))
    for m in dict.fromkeys(runs["model"]):
        cells = []
        for c in columns:
            if (m, *c) not in mean:
                cells.append("n/a" if (m, *c) in skipped else "")
                continue
            text = f"{mean[m, c[0], c[1]]:.3f} ± {se[m, c[0], c[1]]:.3f}"
            cells.append(f"**{text}**" if mean[m, c[0], c[1]] == best[c] else text)
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    notes = []
    for why, part in left_out.groupby("skipped", sort=False):
        where = part.drop_duplicates("stream")
        notes.append(f"n/a: {why}: " + ", ".join(
            f"{s} ({n:,} rows)" if why.startswith("label ratio") else s
            for s, n in zip(where["stream"], where["instances"])))
    return "\n".join(lines) + "\n" + "".join(f"\n{n}\n" for n in notes)


def mean_and_error(runs):
    """Mean and standard error over seeds of each (model, stream, label ratio)."""
    g = runs.groupby(["model", "stream", "label_ratio"])["accuracy"]
    return g.mean().dropna(), g.sem().fillna(0.0)


def worth_markdown(runs) -> str:
    """What unlabeled rows are worth: each of our models' accuracy minus its labeled-only
    ablation's, seed by seed (the same rows and label mask), as the mean and the range over
    seeds, with the model's `unlabeled_trust` at the end (mean over seeds); a row per model
    and label ratio, a column per stream. Empty when no ablation ran."""
    runs = runs.dropna(subset=["accuracy"])
    if "unlabeled_trust" not in runs:
        runs = runs.assign(unlabeled_trust=float("nan"))
    pairs = _pairs(runs, _ablation_of)
    if not pairs:
        return ""
    stream_names = list(dict.fromkeys(runs["stream"]))
    lines = ["| model | labels | " + " | ".join(stream_names) + " |",
             "|---|---:|" + "---:|" * len(stream_names)]
    for m, a in pairs.items():
        cell = ["stream", "label_ratio"]
        gain = _paired_gain(runs, m, a).groupby(level=cell).agg(["mean", "min", "max"])
        trust = runs[runs["model"] == m].groupby(cell)["unlabeled_trust"].mean()
        for r in sorted(set(runs["label_ratio"]), reverse=True):
            cells = []
            for s in stream_names:
                if (s, r) not in gain.index:
                    cells.append("")
                    continue
                g, t = gain.loc[(s, r)], trust[(s, r)]
                cells.append(f"{g['mean']:+.3f} ({g['min']:+.3f}, {g['max']:+.3f})"
                             + ("" if np.isnan(t) else f", trust {t:.2f}"))
            lines.append(f"| {m} | {r:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def experts_markdown(runs) -> str:
    """Each of our models beside its own experts: the mixture's accuracy (the model's) minus
    that of its best single expert (the one whose mean over seeds is highest, each expert
    scored on the same rows), both means over seeds, with that expert and its accuracy in
    brackets; a row per model and label ratio, a column per stream. Empty when no run has
    experts."""
    columns = [c for c in runs.columns if c.startswith("expert_")]
    runs = runs.dropna(subset=["accuracy"])
    if not columns or runs[columns].isna().all().all():
        return ""
    stream_names = list(dict.fromkeys(runs["stream"]))
    lines = ["| model | labels | " + " | ".join(stream_names) + " |",
             "|---|---:|" + "---:|" * len(stream_names)]
    ours = runs.dropna(subset=columns, how="all")
    for m in dict.fromkeys(ours["model"]):
        for r in sorted(set(ours["label_ratio"]), reverse=True):
            cells = []
            for s in stream_names:
                part = ours[(ours["model"] == m) & (ours["label_ratio"] == r)
                            & (ours["stream"] == s)]
                experts = part[columns].dropna(axis=1, how="all")
                if part.empty or experts.empty:
                    cells.append("")
                    continue
                best = experts.mean().idxmax()
                gap = part["accuracy"].mean() - experts[best].mean()
                cells.append(f"{gap:+.3f} ({best.removeprefix('expert_')} "
                             f"{experts[best].mean():.3f})")
            lines.append(f"| {m} | {r:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def quarters_markdown(runs) -> str:
    """The accuracy over each quarter of the stream, mean over seeds, with the whole stream's:
    a table per stream, a row per model and label ratio (a stream's first rows, its end, and
    where a model falls below River's `Prior`, the labeled rows' most frequent class)."""
    columns = [f"quarter_{q}" for q in range(1, 5)]
    runs = runs.dropna(subset=["accuracy"])
    if not set(columns) <= set(runs.columns):
        return ""
    parts = []
    for s in dict.fromkeys(runs["stream"]):
        lines = [f"**{s}**", "", "| model | labels | whole | 1st | 2nd | 3rd | 4th |",
                 "|---|---:|---:|---:|---:|---:|---:|"]
        part = runs[runs["stream"] == s]
        for r in sorted(set(part["label_ratio"]), reverse=True):
            for m in dict.fromkeys(part["model"]):
                cell = part[(part["model"] == m) & (part["label_ratio"] == r)]
                if cell.empty:
                    continue
                values = [cell["accuracy"].mean(), *cell[columns].mean()]
                lines.append(f"| {m} | {r:g} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def _ablation_of(name: str) -> str:
    """The labeled-only ablation of our model `name` (`dhbm-mf:steps=4` ->
    `dhbm-mf/labeled-only:steps=4`); `safe_unlabeled` is dropped, since the ablation has no
    twin either way."""
    suffix = registry.ABLATION_SUFFIX
    base_name, _, settings = name.partition(":")
    if base_name.endswith(suffix) or name.startswith(registry.MOA_PREFIX):
        return name
    kept = [item for item in settings.split(";") if item and item.partition("=")[0].strip()
            != "safe_unlabeled"]
    return base_name + suffix + (":" + ";".join(kept) if kept else "")


def plot(runs, path: Path) -> None:
    """Accuracy against label ratio, a panel per stream, a line per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = runs.dropna(subset=["accuracy"])  # the cells left out have no point
    stream_names = list(dict.fromkeys(runs["stream"]))
    fig, axes = plt.subplots(1, len(stream_names), figsize=(3.2 * len(stream_names), 3),
                             squeeze=False)
    for ax, s in zip(axes[0], stream_names):
        part = runs[runs["stream"] == s]
        for m in dict.fromkeys(part["model"]):
            curve = part[part["model"] == m].groupby("label_ratio")["accuracy"].mean()
            ax.plot(curve.index, curve.values, marker="o", label=m,
                    linestyle="--" if m.endswith(registry.ABLATION_SUFFIX) else "-")
        ax.set_xscale("log")
        ax.set_title(s)
        ax.set_xlabel("label ratio")
    axes[0][0].set_ylabel("prequential accuracy")
    axes[0][-1].legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


def variants_markdown(runs) -> str:
    """What each setting is worth: for each variant of one of our models (`dhbm-mf:steps=1`,
    `dhbm-mf/labeled-only`) run beside that model at its defaults (`dhbm-mf`), the default's
    accuracy minus the variant's, seed by seed, averaged over seeds and streams, with the
    stream where the variant does best in brackets; a row per variant, a column per label
    ratio. Empty when no variant ran beside its default."""
    runs = runs.dropna(subset=["accuracy"])
    pairs = _pairs(runs, _default_of)
    if not pairs:
        return ""
    ratios = sorted(set(runs["label_ratio"]), reverse=True)
    lines = ["| variant of the default | " + " | ".join(f"{100 * r:g} % labels" for r in ratios)
             + " |", "|---|" + "---:|" * len(ratios)]
    for variant, default in pairs.items():
        gain = _paired_gain(runs, default, variant)
        per_stream = gain.groupby(level=["label_ratio", "stream"]).mean()
        cells = []
        for r in ratios:
            if r not in per_stream.index.get_level_values(0):
                cells.append("")
                continue
            streams = per_stream.loc[r]
            cells.append(f"{streams.mean():+.3f} ({streams.idxmin()} {streams.min():+.3f})")
        lines.append(f"| `{variant}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _default_of(name: str) -> str:
    """Our model at its defaults that `name` is a variant of (`dhbm-mf:steps=1` and
    `dhbm-mf/labeled-only` -> `dhbm-mf`); `name` itself for a default, a peer or MOA's."""
    if name.startswith(registry.MOA_PREFIX):
        return name
    base_name = name.partition(":")[0]
    return registry.split_ablation(base_name)[0]


def _pairs(runs, partner_of) -> dict:
    """`{model: partner}` for every model of the runs whose `partner_of` (its ablation, its
    default) ran too and is another model, in the runs' order."""
    names = list(dict.fromkeys(runs["model"]))
    partners = {m: partner_of(m) for m in names}
    return {m: p for m, p in partners.items() if p != m and p in partners}


def _paired_gain(runs, model: str, other: str):
    """`model`'s accuracy minus `other`'s, seed by seed on the same stream and label ratio
    (the same rows and label mask), indexed by stream, label ratio and seed."""
    key = ["stream", "label_ratio", "seed"]
    accuracy = runs.set_index(key)
    return (accuracy[accuracy["model"] == model]["accuracy"]
            - accuracy[accuracy["model"] == other]["accuracy"]).dropna()

