"""Figures from a curves table (CSV) alone, in the layout of the paper's figure 3."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .files import atomic_write_all

__all__ = ["STREAM_ORDER", "check_curves", "draw_figure", "model_label", "ordered",
           "plot_curves"]

# The paper draws Waveform above LED; other streams follow in the order met.
STREAM_ORDER = ["waveform", "waveform-stationary", "led", "led-stationary"]
# The paper's model order (its legend), then anything else in the order met.
_MODEL_ORDER = ["pl-mlp", "dhbm-mf", "dhbm-sap", "dhda", "sben", "hsda"]
_LABELS = {"pl-mlp": "PL-MLP", "dhbm-mf": "DHBM_MF", "dhbm-sap": "DHBM_SAP", "dhda": "DHDA",
           "sben": "SBEN", "hsda": "HSDA"}


def ordered(values, preferred):
    """`values` once each: those in `preferred` first, in its order, then the others as met."""
    values = list(dict.fromkeys(values))
    return [v for v in preferred if v in values] + [v for v in values if v not in preferred]


def model_label(model: str) -> str:
    """What a legend calls `model`: the paper's name for ours, the class name for River's."""
    return _LABELS.get(model, model.removeprefix("river:").rpartition(".")[2] or model)


def _draw(ax, curves: pd.DataFrame, models, colours, limit=None) -> None:
    for model in models:
        g = curves[curves.model == model]
        if limit is not None:
            g = g[g.position <= limit]
        table = g.pivot_table(index="position", columns="trial", values="faded_error")
        mean = table.mean(axis=1)
        ax.plot(mean.index, 100 * mean.to_numpy(), color=colours[model], lw=1.2,
                label=model_label(model))
        if table.shape[1] > 1:  # a band of one standard deviation over the trials
            sd = table.std(axis=1, ddof=1).to_numpy()
            ax.fill_between(mean.index, 100 * (mean - sd), 100 * (mean + sd),
                            color=colours[model], alpha=0.2, lw=0)


def check_curves(curves: pd.DataFrame) -> None:
    """Raise ValueError unless `curves` is a non-empty curves table."""
    missing = {"stream", "model", "trial", "position", "faded_error"} - set(curves.columns)
    if missing:
        raise ValueError(f"The curves table lacks the columns {', '.join(sorted(missing))}")
    if curves.empty:
        raise ValueError("The curves table is empty")


def draw_figure(curves: pd.DataFrame, zoom: int = 50_000):
    """The matplotlib figure of `plot_curves` (not saved)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    check_curves(curves)
    streams = ordered(curves.stream, STREAM_ORDER)
    models = ordered(curves.model, _MODEL_ORDER)
    colours = {m: plt.cm.tab10(i % 10) for i, m in enumerate(models)}

    fig, axes = plt.subplots(len(streams), 2, figsize=(11, 3.6 * len(streams)), squeeze=False)
    for row, stream in zip(axes, streams):
        c = curves[curves.stream == stream]
        end = int(c.position.max())
        _draw(row[0], c, models, colours, limit=zoom)
        _draw(row[1], c, models, colours)
        row[0].set_title(f"{stream}: first {min(zoom, end):,} instances")
        row[1].set_title(f"{stream}: {end:,} instances")
        for ax in row:
            ax.set_xlabel("instances")
            ax.set_ylabel("faded prequential error (%)")
            ax.grid(alpha=0.3)
            ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
    handles, labels = axes[0][1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(models), 6), frameon=False)
    fig.tight_layout(rect=(0, 0.06 / len(streams), 1, 1))  # room for the legend below
    return fig


def _thousands(value, _position) -> str:
    return f"{value / 1000:g}k" if value else "0"


def plot_curves(curves, out, zoom: int = 50_000, name: str = "prequential_error") -> list[Path]:
    """Draw the faded prequential error curves and save them as PNG and PDF in `out`.

    One row per stream (Waveform above LED, as in the paper): on the left the first `zoom`
    instances, on the right the whole run; one line per model (the mean over trials) with a band
    of one standard deviation over trials.

    Parameters
    ----------
    curves
        A curves table (a `pandas.DataFrame` or the path of the CSV) with the columns stream,
        model, trial, position, faded_error.
    out
        Output directory.
    zoom
        Number of instances shown in the left panels.
    name
        File name of the figure, without extension.

    Returns
    -------
    The paths of the PNG and the PDF.

    """
    import matplotlib.pyplot as plt

    if not isinstance(curves, pd.DataFrame):
        curves = pd.read_csv(curves)
    fig = draw_figure(curves, zoom=zoom)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        return atomic_write_all([
            (out / f"{name}.{ext}", lambda p, ext=ext: fig.savefig(p, format=ext, dpi=150))
            for ext in ("png", "pdf")
        ])
    finally:
        plt.close(fig)
