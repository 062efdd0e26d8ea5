"""One figure style for reports and paper_figures: Agg canvas (no display, no pyplot state),
a colour-blind-safe palette (Okabe & Ito 2008), theory as lines and measurements as markers,
and one way to draw a measurement over seeds: the mean with its 95% band (:func:`seed_band`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats

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


SHARE = (0.0, 1.0)
"""The range of an accuracy, a probability or a normalised entropy (``seed_band``'s bounds)."""


def seed_band(ax: Axes, steps: np.ndarray, curves: Sequence[np.ndarray], colour: str,
              label: str | None = None, confidence: float = 0.95, linestyle: str = "-",
              bounds: tuple[float, float] | None = None) -> None:
    """Mean over seeds of equally long ``curves`` with a Student-t band (none for one seed).

    ``bounds``: the range the metric cannot leave (an accuracy's (0, 1)); the band is cut to
    it. The mean lies in that range, so the cut band covers it as often as the whole one."""
    values = np.stack([np.asarray(c, dtype=float) for c in curves])
    mean = values.mean(0)
    ax.plot(steps, mean, color=colour, lw=1.8, label=label, linestyle=linestyle)
    if len(values) > 1:
        half = (stats.t.ppf(0.5 + confidence / 2, len(values) - 1) * values.std(0, ddof=1)
                / np.sqrt(len(values)))
        low, high = mean - half, mean + half
        if bounds is not None:
            low, high = np.clip(low, *bounds), np.clip(high, *bounds)
        ax.fill_between(steps, low, high, color=colour, alpha=0.2, linewidth=0)


def runs_with_band(ax: Axes, runs: Sequence[RunResult], metric: str, colour: str,
                   label: str, bounds: tuple[float, float] | None = None) -> None:
    """Every run's history of ``metric`` (thin) under :func:`seed_band` of the runs that did not
    diverge (thick; drawn when their evaluation steps agree; its band cut to ``bounds``)."""
    for r in runs:
        ax.plot(r.eval_steps, r.metric(metric), color=colour, alpha=0.35, lw=0.7)
    done = [r for r in runs if not r.diverged]
    if done and all(len(r.eval_steps) == len(done[0].eval_steps) for r in done):
        seed_band(ax, done[0].eval_steps, [r.metric(metric) for r in done], colour, label=label,
                  bounds=bounds)
