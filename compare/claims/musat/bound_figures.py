"""The figures of the claims on the depth bound itself (``Claim.figures``): the closed forms
against the information-flow game, and the written-down construction against both bounds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from attnverify import theory
from attnverify.compare.report.plotting import PALETTE, new_figure


def bound_figure(d_max: int) -> Figure:
    """The closed forms of the depth bound (the paper's and both refined ones) up to ``d_max``,
    with the game's values at a few D."""
    fig, (ax,) = new_figure(width=5.0)
    D = np.unique(np.geomspace(1, d_max, 400).astype(int))
    for values, colour, label in (
            ([theory.musat.min_layers_value(int(d)) for d in D], PALETTE["theory"],
             "paper: 3^t >= 2D"),
            ([theory.musat.min_layers_refined_value(int(d), False) for d in D],
             PALETTE["orange"], "refined, query = last chain token: 3^t >= 4D - 1"),
            ([theory.musat.min_layers_refined_value(int(d), True) for d in D],
             PALETTE["blue"], "refined, separate query: 3^t >= 4D + 1")):
        ax.step(D, values, where="post", color=colour, label=label)
    sims = np.unique(np.geomspace(1, min(d_max, 60), 12).astype(int))
    ax.plot(sims, [theory.musat.simulate(int(d)).any_position for d in sims], "o",
            color=PALETTE["theory"], markersize=4, label="game simulator (some position)")
    ax.set_xscale("log")
    ax.set_xlabel("chain length D (links)")
    ax.set_ylabel("layers t needed")
    ax.set_title("depth bound: closed forms and the game")
    ax.legend(fontsize=7)
    return fig


def construction_figure(rows: Sequence[dict[str, Any]]) -> Figure:
    """Per D, the fewest layers the written-down transformer needs (``rows``: the claim's
    ``details["depths"]``) against the paper's bound and the refined one."""
    fig, (ax,) = new_figure(width=5.0)
    D = [r["D"] for r in rows]
    ax.step(D, [r["paper_bound"] for r in rows], where="mid", color=PALETTE["theory"],
            label="paper: min t with 3^t >= 2D")
    ax.step(D, [r["refined_bound"] for r in rows], where="mid", color=PALETTE["blue"],
            linestyle="--", label="refined (answer at the query): 3^t >= 4D + 1")
    ax.plot(D, [r["construction_layers"] or np.nan for r in rows], "o",
            color=PALETTE["orange"], label="construction: layers to solve every instance")
    ax.set_xlabel("chain length D")
    ax.set_ylabel("layers")
    ax.set_title("a transformer with written-down weights")
    ax.legend(fontsize=7)
    return fig
