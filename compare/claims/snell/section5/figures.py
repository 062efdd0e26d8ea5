"""The figures of the §5 family: success rates of
the bundle kinds and per-head attention in the bundles (both claims draw them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from attnverify.compare.claims.snell.common import seq2seq_model
from attnverify.compare.claims.snell.section5.success import GOOD_ACC, official_success_steps
from attnverify.compare.report.plotting import (
    PALETTE,
    new_figure,
    runs_with_band,
    seed_band,
)
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

KIND_COLOURS = {"random": PALETTE["blue"], "bad + 1 good": PALETTE["green"],
                "bad": PALETTE["red"]}
"""The colour of each bundle kind of §5."""


def head_curves(run: RunResult, good: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """Per-head attention accuracy of one bundle (``attn_acc_head<k>``, heads in head-seed
    order): the first head in ``good`` and the mean of the others, or, with none in ``good``,
    the head best aligned at the last evaluation and the mean over all heads."""
    seeds = seq2seq_model(run.spec).head_seeds
    heads = np.stack([run.metric(f"attn_acc_head{i}") for i in range(len(seeds))])
    mine = [i for i, seed in enumerate(seeds) if seed in good]
    if mine:
        return heads[mine[0]], np.delete(heads, mine[0], axis=0).mean(0)
    return heads[int(heads[:, -1].argmax())], heads.mean(0)


def section5_curves(groups: dict[str, list[RunResult]], names: dict[str, str],
                     good: set[int]) -> Figure:
    """The outputs the official multi-head protocol is designed for: token accuracy of
    the bundles, every bundle and the mean with its 95% band per kind; and per-head
    attention accuracy (argmax on time, ``attn_acc_head<k>``): in bundles with a good
    head, the good head (solid) against the mean of its bad heads (dashed), i.e. how bad
    heads fare beside a good one; in the other kinds the best head (solid) against the
    mean over heads (dashed). Diverged bundles are drawn but left out of the means."""
    fig, (ax_acc, ax_head) = new_figure(ncols=2)
    for kind, runs in groups.items():
        if not runs:
            continue
        runs_with_band(ax_acc, runs, "acc", KIND_COLOURS[kind],
                       f"{names[kind]} (median, quartiles)")
        done = [r for r in runs if not r.diverged]
        if not done or any(len(r.eval_steps) != len(done[0].eval_steps) for r in done):
            continue
        solid, dashed = zip(*(head_curves(r, good if kind == "bad + 1 good" else set())
                              for r in done), strict=True)
        first, rest = (("good head", "its bad heads") if kind == "bad + 1 good" else
                       ("best head", "mean over heads"))
        steps = done[0].eval_steps
        seed_band(ax_head, steps, solid, KIND_COLOURS[kind], f"{names[kind]}: {first}")
        seed_band(ax_head, steps, dashed, KIND_COLOURS[kind], f"{names[kind]}: {rest}",
                  linestyle="--")
    ax_acc.axhline(GOOD_ACC, color=PALETTE["grey"], linestyle="--", lw=1)
    ax_acc.set_ylabel("token accuracy (teacher forced)")
    ax_head.set_ylabel("one head's attention accuracy")
    for ax in (ax_acc, ax_head):
        ax.set_xlabel(r"training step $\tau$")
        ax.set_ylim(-0.02, 1.02)
        if ax.get_legend_handles_labels()[0]:  # no bundles yet: no legend
            ax.legend(fontsize=6, loc="lower right")
    fig.suptitle("§5 bundles on permutations: accuracy and per-head attention")
    return fig


def section5_figure(single: list[RunResult], groups: dict[str, list[RunResult]],
                    names: dict[str, str], success: str) -> Figure:
    """The success rate of single heads and of each bundle kind (``groups`` by kind, named
    by ``names``), with 95% intervals."""
    fig, (ax,) = new_figure(width=5.0)
    bars = {"1 random head": (single, PALETTE["grey"]),
            **{names[kind]: (runs, KIND_COLOURS[kind]) for kind, runs in groups.items()}}
    for x, (runs, colour) in enumerate(bars.values()):
        k = sum(s is not None for s in official_success_steps(runs))
        n = len(runs)
        if n == 0:
            continue
        lo, hi = binomial_ci(k, n)
        ax.bar(x, k / n, color=colour, alpha=0.8)
        ax.errorbar(x, k / n, yerr=[[k / n - lo], [hi - k / n]], color="black", capsize=4)
        ax.annotate(f"{k}/{n}", (x, min(hi + 0.03, 1.0)), ha="center", fontsize=7)
    ax.set_xticks(np.arange(len(bars)), list(bars), fontsize=7)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel(f"success rate, 95% CI\n({success})", fontsize=8)
    ax.set_title("§5 protocol on permutations (shared base)", fontsize=10)
    return fig
