"""The figure of ``musat.llms_solve_by_prompting``: accuracy against chain depth per
formulation, with Clopper-Pearson intervals and the chance line (the layout of the paper's
Figure 2, whose numbers are unknown)."""

from __future__ import annotations

from collections.abc import Mapping

from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator
from scipy import stats

from attnverify.compare.report.plotting import PALETTE, new_figure

COLOURS = ("blue", "orange", "green", "purple", "sky", "red")


def accuracy_figure(counts: Mapping[str, Mapping[str, int]], questions: int,
                    chains: int) -> Figure:
    """``counts[formulation][depth]``: right answers of ``questions`` per cell."""
    fig, (ax,) = new_figure(width=5.0)
    for i, (formulation, by_depth) in enumerate(counts.items()):
        depths = sorted(by_depth, key=int)
        x = [int(d) for d in depths]
        acc = [by_depth[d] / questions for d in depths]
        cis = [stats.binomtest(by_depth[d], questions).proportion_ci(0.95, method="exact")
               for d in depths]
        low = [a - ci.low for a, ci in zip(acc, cis, strict=True)]
        high = [ci.high - a for a, ci in zip(acc, cis, strict=True)]
        ax.errorbar(x, acc, yerr=[low, high], marker="o", capsize=3, label=formulation,
                    color=PALETTE[COLOURS[i % len(COLOURS)]])
    ax.axhline(1 / chains, color=PALETTE["grey"], linestyle="--",
               label=f"chance (1/{chains})")
    ax.set_xscale("log", base=2)
    ticks = sorted({int(d) for by_depth in counts.values() for d in by_depth})
    ax.set_xticks(ticks, [str(d) for d in ticks])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("chain depth D (links)")
    ax.set_ylabel("multiple-choice accuracy")
    ax.set_title("a pretrained LM on retrieval questions")
    ax.legend(fontsize=7)
    return fig
