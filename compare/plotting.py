"""One figure style for reports and paper_figures: Agg canvas (no display, no pyplot state),
a colour-blind-safe palette (Okabe & Ito 2008), theory as lines and measurements as markers."""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

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
