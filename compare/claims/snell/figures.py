"""The figure the Snell claims on the copying model share (``Claim.figures``): learning curves
per group of seeds, drawn from the runs a claim read. A figure of one claim only is in that
claim's module."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from matplotlib.figure import Figure

from attnverify.compare.claims.snell.common import SUCCESS
from attnverify.compare.report.plotting import PALETTE, new_figure, runs_with_band
from attnverify.empirics import RunResult

METRIC_LABELS = {
    "acc": "token accuracy (teacher forced)",
    "attn_acc": "attention accuracy (argmax at t)",
    "ktiw_acc": "KTIW probe accuracy (§3.1)",
}


def curves_figure(groups: Mapping[str, Sequence[RunResult]], metrics: Sequence[str],
                  title: str) -> Figure:
    """Per-seed curves of ``metrics`` (thin; one panel each) under the mean over seeds with its
    95% band (thick), one colour per group. Diverged runs are drawn but left out of the mean."""
    colours = [PALETTE["blue"], PALETTE["red"], PALETTE["green"], PALETTE["orange"]]
    fig, axes = new_figure(ncols=len(metrics))
    for ax, metric in zip(axes, metrics, strict=True):
        for (label, runs), colour in zip(groups.items(), colours, strict=False):
            runs_with_band(ax, runs, metric, colour, f"{label} (median, quartiles)")
        if metric in SUCCESS:
            ax.axhline(SUCCESS[metric], color=PALETTE["grey"], linestyle="--", lw=1)
        ax.set_xlabel(r"training step $\tau$")
        ax.set_ylabel(METRIC_LABELS.get(metric, metric.replace("_", " ")))
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(title)
    return fig
