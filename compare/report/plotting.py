"""One figure style for reports and paper_figures: Agg canvas (no display, no pyplot state),
a colour-blind-safe palette (Okabe & Ito 2008), theory as lines and measurements as markers,
and one way to draw a measurement over seeds: the median with the seeds' interquartile range
(:func:`seed_band`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from attnverify.empirics import RunResult

PALETTE = {
    "theory": "#000000",
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "red": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "grey": "#999999",
}


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 4.2,
               height: float = 3.2) -> tuple[Figure, list]:
    """A figure with ``nrows x ncols`` axes (flattened list) and the project's style."""
    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel().tolist()
    for ax in axes:
        ax.grid(True, alpha=0.3, linewidth=0.5)
        ax.spines[["top", "right"]].set_visible(False)
    return fig, axes


def seed_band(ax: Axes, steps: np.ndarray, curves: Sequence[np.ndarray], colour: str,
              label: str | None = None, linestyle: str = "-") -> None:
    """Median over seeds of equally long ``curves`` with the band between their first and
    third quartiles (none for one seed).

    Descriptive, not an interval of the mean: runs that learn or stay stuck make a metric
    bimodal over seeds, where a Student-t band of the mean has neither its coverage nor a
    meaning (it spans values no seed takes, past the metric's range). The quartiles assume
    no distribution and stay within the seeds' values."""
    values = np.stack([np.asarray(c, dtype=float) for c in curves])
    low, median, high = np.percentile(values, [25, 50, 75], axis=0)
    ax.plot(steps, median, color=colour, lw=1.8, label=label, linestyle=linestyle)
    if len(values) > 1:
        ax.fill_between(steps, low, high, color=colour, alpha=0.2, linewidth=0)


def runs_with_band(ax: Axes, runs: Sequence[RunResult], metric: str, colour: str,
                   label: str) -> None:
    """Every run's history of ``metric`` (thin) under :func:`seed_band` of the runs that did not
    diverge (thick; drawn when their evaluation steps agree)."""
    for r in runs:
        ax.plot(r.eval_steps, r.metric(metric), color=colour, alpha=0.35, lw=0.7)
    done = [r for r in runs if not r.diverged]
    if done and all(len(r.eval_steps) == len(done[0].eval_steps) for r in done):
        seed_band(ax, done[0].eval_steps, [r.metric(metric) for r in done], colour, label=label)
