"""The figure of ``snell.uniform_probe_agrees_with_attention``: per seed pair, the agreement
A(alpha, beta^uf) beside its shuffled baseline, subsets and permutations side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.figure import Figure

from attnverify.compare.report.plotting import PALETTE, new_figure


def agreement_figure(pairs: Sequence[dict[str, Any]]) -> Figure:
    """``pairs``: the claim's rows (distribution, seed, learned, agreement, baseline)."""
    fig, axes = new_figure(ncols=2, width=3.6)
    for ax, dist in zip(axes, ("subset", "permutation"), strict=True):
        rows = [p for p in pairs if p["distribution"] == dist and p["learned"]]
        x = range(len(rows))
        ax.bar([i - 0.2 for i in x], [p["agreement"] for p in rows], width=0.4,
               color=PALETTE["blue"], label="A(alpha, beta^uf)")
        ax.bar([i + 0.2 for i in x], [p["baseline"] for p in rows], width=0.4,
               color=PALETTE["grey"], label="shuffled baseline")
        ax.set_xticks(list(x), [str(p["seed"]) for p in rows])
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("seed pair")
        ax.set_title(f"{dist} ({len(rows)} pairs learned)")
    axes[0].set_ylabel("agreement (top-5% match)")
    axes[0].legend(fontsize=7)
    return fig
