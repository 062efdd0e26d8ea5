"""The figures of the Snell claims on the toy models (``Claim.figures``): the warm-up
classifier against its closed form, the free-attention toy at the permutation saddle, and the
initialisation scale's effect on when attention escapes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from attnverify import theory
from attnverify.compare.report.plotting import PALETTE, new_figure
from attnverify.empirics import RunResult


def toy_classifier_figure(runs: Sequence[RunResult],
                          starts: Mapping[str, tuple[float, float, float]],
                          tau_max: Mapping[str, float], lr: float) -> Figure:
    """Per start (p0, beta0, beta1), the closed-form trajectory of p, beta_0 and beta_1 (lines)
    against gradient descent at step ``lr`` (markers; ``runs``: one per start, in order)."""
    fig, axes = new_figure(ncols=2)
    for ax, (name, (p0, b0, b1)), r in zip(axes, starts.items(), runs, strict=True):
        tau = np.linspace(0, tau_max[name], 300)
        flow = theory.snell.toy_classifier_trajectory(tau, p0, b0, b1).value
        colours = {"p": PALETTE["blue"], "beta0": PALETTE["red"], "beta1": PALETTE["green"]}
        labels = {"p": "p", "beta0": r"$\beta_0$", "beta1": r"$\beta_1$"}
        every = max(1, len(r.eval_steps) // 25)
        for key, colour in colours.items():
            ax.plot(tau, flow[key], color=colour, lw=1.5, label=f"{labels[key]} theory")
            ax.plot(r.eval_steps[::every] * lr, r.metric(key)[::every], "o",
                    color=colour, ms=3, label=f"{labels[key]} GD")
        ax.set_xlabel(r"training time $\tau$")
        ax.set_title(f"{name} start")
        ax.legend(fontsize=6, ncol=2)
    fig.suptitle("Toy classifier: gradient descent vs closed form")
    return fig


def saddle_figure(perm: Sequence[RunResult], subset: Sequence[RunResult],
                  log_v: float) -> Figure:
    """Loss and mean gold attention over training from B = Q = 0, every run, on permutations
    (which stay at the saddle, loss log V) and on subsets (which escape)."""
    fig, (ax_l, ax_g) = new_figure(ncols=2)
    for runs, colour, name in ((perm, PALETTE["red"], "permutation"),
                               (subset, PALETTE["blue"], "subset")):
        for i, r in enumerate(runs):
            label = name if i == 0 else None
            ax_l.plot(r.eval_steps, r.metric("loss"), "o-", color=colour, ms=3, lw=1,
                      label=label)
            ax_g.plot(r.eval_steps, r.metric("gold_attention"), "o-", color=colour, ms=3,
                      lw=1, label=label)
    ax_l.axhline(log_v, color=PALETTE["theory"], lw=1, label="log V (theory)")
    ax_l.set_ylabel("loss")
    ax_g.set_ylabel("mean gold attention weight")
    for ax in (ax_l, ax_g):
        ax.set_xlabel("SGD step")
        ax.legend(fontsize=7)
    fig.suptitle("Free-attention toy from B = Q = 0")
    return fig


def init_scale_figure(rows: Sequence[dict[str, Any]], budget: int) -> Figure:
    """Per run (``rows``: the claim's ``details["runs"]``), the steps to mean gold attention
    1/2 against the initialisation scale; runs that never got there at the budget."""
    fig, (ax,) = new_figure()
    for dist, colour in (("permutation", PALETTE["red"]), ("subset", PALETTE["blue"])):
        sample = [row for row in rows if row["distribution"] == dist]
        ax.scatter([row["sigma"] for row in sample],
                   [budget if row["steps"] is None else row["steps"] for row in sample],
                   color=colour, s=16, alpha=0.7, label=dist, marker="o")
    ax.axhline(budget, color=PALETTE["grey"], linestyle="--", linewidth=0.8,
               label="budget (never learned)")
    ax.set_xscale("log")
    ax.set_xlabel(r"init std $\sigma$ of B and Q")
    ax.set_ylabel("steps to mean gold attention 1/2")
    ax.legend(fontsize=7)
    return fig
