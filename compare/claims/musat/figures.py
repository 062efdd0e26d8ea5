"""The figures of the retrieval claims on trained transformers (``Claim.figures``): the depth
heat map, head emergence, the implicit curriculum's curves and attention maps (the depth bound's
own figures live with its claims)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from attnverify import theory
from attnverify.compare.claims.musat.common import LEARNED
from attnverify.compare.claims.musat.runs import Cell, cell_shape, final_query, finished, learned
from attnverify.compare.report.plotting import PALETTE, new_figure, runs_with_band
from attnverify.empirics import RunResult
from attnverify.empirics.probes.retrieval_metrics import QUERY_ACCURACY, depth_metric, metric_depths


def depth_heatmap(params: dict[str, Any], plan: Sequence[tuple[Cell, bool, int]],
                  groups: Sequence[Sequence[RunResult]], refined: bool = False) -> Figure:
    """Final query accuracy over (D, layers), one panel for the implicit curriculum and one for
    query-only supervision, for every trained cell (mean over its seeds, and how many of them
    learned the query, a count a mean can hide; a cell trained twice,
    e.g. with and without distractors, shows its first group), with the bound min_layers(D)
    as a line (the frontier max_depth(t) read sideways; the paper's Figure 4 in spirit): the
    shaded cells under it have fewer layers than the bound. ``refined`` adds the refined bound
    for a separate query token (3^t >= 4D + 1) as a dashed line."""
    panels = [ic for ic in (True, False) if any(flag == ic for _, flag, _ in plan)]
    shapes = [cell_shape(params, cell) for cell, _, _ in plan]
    max_D = max([5, *(D for D, _, _ in shapes)])
    max_layers = max([4, *(layers for _, layers, _ in shapes)])
    fig, axes = new_figure(ncols=len(panels), width=4.0 if len(panels) > 1 else 5.0)
    depths = np.arange(1, max_D + 1)
    tops = [theory.musat.min_layers_value(int(D)) - 0.5 for D in depths]
    for ax, ic in zip(axes, panels, strict=True):
        drawn = set()
        for (D, layers, _), (_, flag, _), runs in zip(shapes, plan, groups, strict=True):
            if flag != ic or (D, layers) in drawn or not runs:
                continue
            drawn.add((D, layers))
            kept = finished([final_query(r) for r in runs])[0]
            acc = float(np.mean(kept)) if kept else float("nan")
            ax.scatter([D], [layers], s=620, c=[acc], cmap="cividis", vmin=0, vmax=1,
                       marker="s", edgecolors="black")
            # the count as well as the mean: a mean near chance can be one learned seed of six
            ax.annotate(f"{acc:.2f}\n{sum(learned(r) for r in runs)}/{len(runs)}", (D, layers),
                        ha="center", va="center", fontsize=6.5,
                        color="white" if acc < 0.6 else "black")
        ax.bar(depths, tops, width=1.0, color=PALETTE["grey"], alpha=0.25, linewidth=0,
               label="fewer layers than the bound (3^t < 2D)")
        # the bound as a line: the top edge of the shaded cells, min_layers(D) - 1/2
        ax.step(np.arange(0.5, max_D + 1.0), [*tops, tops[-1]], where="post",
                color=PALETTE["theory"], label="bound: min_layers(D), smallest t with 3^t >= 2D")
        if refined:
            edges = [theory.musat.min_layers_refined_value(int(D)) - 0.5 for D in depths]
            ax.step(np.arange(0.5, max_D + 1.0), [*edges, edges[-1]], where="post",
                    color=PALETTE["theory"], linestyle="--",
                    label="refined bound (separate query): 3^t >= 4D + 1")
        ax.set_xlabel("chain length D (hops)")
        ax.set_ylabel("layers t")
        ax.set_xlim(0.5, max_D + 0.5)
        ax.set_ylim(0, max_layers + 1.8)  # the top rows hold the legend, clear of the cells
        ax.set_title(f"{'implicit curriculum' if ic else 'query-only'}: query accuracy",
                     fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    seeds = sorted({n for _, _, n in plan if n})
    fig.suptitle(f"mean final query accuracy over {' or '.join(map(str, seeds))} seeds per cell"
                 + ("\n" if len(panels) == 1 else " ")  # one panel: too narrow for one line
                 + f"and the seeds that learned (>= {LEARNED}); K = {params['K']}, chance "
                 f"{1 / params['K']:.2f}", fontsize=9)
    return fig


def cells_heatmap(params: dict[str, Any], cells: Sequence[tuple[int, int, int]],
                  groups: Sequence[Sequence[RunResult]]) -> Figure:
    """:func:`depth_heatmap` of the (D, layers, distractors) ``cells``, all with the implicit
    curriculum, ``groups[i]`` the runs of ``cells[i]``, with the refined bound (the depth step's
    four cells)."""
    plan = [(cell, True, len(runs)) for cell, runs in zip(cells, groups, strict=True)]
    return depth_heatmap(params, plan, groups, refined=True)


def emergence_figure(result: RunResult, events: Sequence[tuple[int, int, int, str]]) -> Figure:
    """Per-depth accuracy over training with head emergence steps marked."""
    fig, (ax,) = new_figure(width=5.0)
    colours = [PALETTE[c] for c in ("blue", "orange", "green", "red", "purple")]
    for colour, k in zip(colours, metric_depths(result.metrics), strict=False):
        ax.plot(result.eval_steps, result.metric(depth_metric(k)), color=colour,
                label=f"depth {k}")
    ax.plot(result.eval_steps, result.metric(QUERY_ACCURACY), color=PALETTE["theory"],
            linestyle="--", label="query")
    for step, layer, head, role in events:
        ax.axvline(step, color=PALETTE["grey"], linewidth=0.8, linestyle=":")
        ax.annotate(f"L{layer}H{head} {role}", (step, 0.02), rotation=90, fontsize=6,
                    color=PALETTE["grey"])
    ax.set_xlabel("training step")
    ax.set_ylabel("accuracy")
    ax.set_title(f"per-depth accuracy, seed {result.spec.seed} (dotted: head emergence)")
    ax.legend(fontsize=7)
    return fig


def crossings_figure(results: Sequence[RunResult], rows: Sequence[dict[str, Any]],
                     window: int = 8) -> Figure:
    """Per-depth accuracy (depths >= 1) around its first crossings of the learned threshold,
    one panel per seed (``rows[i]``: the order claim's row of that seed, with
    ``crossing_steps`` of each depth 0..D, None where never reached, and its ``inversions``,
    ``ties`` and ``learned_depths``): every evaluation as a dot, so the grid that orders the
    crossings is visible, and each crossing as a vertical line in its depth's colour; the x
    range is the crossings with ``window`` evaluations either side. The panel title says
    whether the seed orders its depths, ties two of them (one evaluation) or inverts them."""
    colours = [PALETTE[c] for c in ("blue", "orange", "green", "red", "purple", "sky")]
    fig, axes = new_figure(ncols=max(len(results), 1), width=3.0, height=2.8)
    for ax, run, row in zip(axes, results, rows, strict=False):
        steps = row["crossing_steps"]
        eval_steps = np.asarray(run.eval_steps)
        grid = int(np.min(np.diff(eval_steps))) if len(eval_steps) > 1 else 1
        learned = [s for s in steps[1:] if s is not None]
        lo = min(learned, default=int(eval_steps[0])) - window * grid
        hi = max(learned, default=int(eval_steps[-1])) + window * grid
        for k, step in enumerate(steps):
            if k == 0:
                continue  # the token itself, learned at once: it orders nothing
            colour = colours[(k - 1) % len(colours)]
            ax.plot(eval_steps, run.metric(depth_metric(k)), color=colour, marker=".",
                    markersize=3, linewidth=1, label=f"depth {k}")
            if step is not None:
                ax.axvline(step, color=colour, linewidth=1, linestyle="--")
        ax.axhline(LEARNED, color=PALETTE["grey"], linestyle=":", linewidth=1)
        ax.set_xlim(lo, hi)
        ax.set_ylim(-0.02, 1.02)
        if row["inversions"]:
            verdict = "inverted"
        elif row["ties"]:
            verdict = "tie"
        elif row["learned_depths"] == len(steps) - 1:
            verdict = "in order"
        else:
            verdict = "incomplete"
        ax.set_title(f"seed {run.spec.seed}: {verdict}", fontsize=8)
        ax.set_xlabel("training step")
    axes[0].set_ylabel("per-depth accuracy")
    axes[0].legend(fontsize=6, loc="lower right")
    fig.suptitle(f"first crossings of {LEARNED} (dashed), every evaluation a dot", fontsize=9)
    return fig


def ic_figure(groups: Sequence[Sequence[RunResult]]) -> Figure:
    """Query accuracy over training, IC against query-only: every seed (thin) under the median
    over seeds with their interquartile band (thick); diverged runs are drawn but left out of
    the median."""
    fig, (ax,) = new_figure()
    for runs, colour, label in zip(groups, (PALETTE["blue"], PALETTE["red"]),
                                   ("IC", "query-only"), strict=True):
        runs_with_band(ax, runs, QUERY_ACCURACY, colour,
                       f"{label} (median, quartiles; thin: seeds)")
    ax.axhline(LEARNED, color=PALETTE["grey"], linestyle=":", label="learned (0.9)")
    ax.set_xlabel("training step")
    ax.set_ylabel("query accuracy (answer token)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("implicit curriculum vs query-only")
    ax.legend(fontsize=7)
    return fig


def attention_figure(result: RunResult, events: Sequence[tuple[int, int, int, str]]) -> Figure:
    """Every head's attention map on one evaluation instance at the end of training; an emerged
    head (``events``: ``HeadsEmergeInSequence.emerged``) is framed and titled with its role
    and emergence step, the others are titled "not emerged"."""
    maps = result.final.get("attention_example")
    if maps is None:
        fig, (ax,) = new_figure()
        ax.text(0.5, 0.5, "no attention recorded", ha="center")
        return fig
    roles = {(layer, head): (role, step) for step, layer, head, role in events}
    layers, heads = maps.shape[:2]
    fig, axes = new_figure(ncols=heads, nrows=layers, width=2.0, height=2.0)
    for i, ax in enumerate(axes):
        layer, head = divmod(i, heads)
        image = ax.imshow(maps[layer, head], cmap="Greys", vmin=0, vmax=1)
        if (layer, head) in roles:
            role, step = roles[layer, head]
            title = f"L{layer} H{head}: {role} (step {step})"
            for spine in ax.spines.values():
                spine.set(visible=True, color=PALETTE["red"], linewidth=2)
        else:
            title = f"L{layer} H{head}: not emerged"
        ax.set_title(title, fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    fig.suptitle(f"attention at the end of training, seed {result.spec.seed} (rows: query "
                 "positions, columns: key positions; framed: heads that emerged, at the step "
                 "named, and may have faded since)", fontsize=9)
    fig.colorbar(image, ax=axes, fraction=0.02, label="attention weight")
    return fig


def lens_figure(params: dict[str, Any], result: RunResult) -> Figure:
    """What the linear lens reads after each layer (rows; 0 = the embedding) for the statement
    tokens of each depth and for the query (columns), one seed; the paper's bound for the
    query's chain as a line: below it the answer cannot be in the query's stream."""
    by_depth, query = result.final["lens_depth"], result.final["lens_query"]
    table = np.column_stack([by_depth, query])
    D = by_depth.shape[1] - 1
    fig, (ax,) = new_figure(width=4.6)
    image = ax.imshow(table, cmap="cividis", vmin=0, vmax=1, origin="lower", aspect="auto")
    for (layer, col), value in np.ndenumerate(table):
        ax.annotate(f"{value:.2f}", (col, layer), ha="center", va="center", fontsize=7,
                    color="white" if value < 0.6 else "black")
    bound = theory.musat.min_layers_value(D)
    ax.axhline(bound - 0.5, color=PALETTE["theory"],
               label=f"bound: min_layers({D}) = {bound} (3^t >= 2D)")
    ax.set_xticks(range(D + 2), [*(f"depth {k}" for k in range(D + 1)), "query"], fontsize=7)
    ax.set_xlabel("positions read (statement tokens by depth, the query)")
    ax.set_ylabel("after layer (0: embedding)")
    ax.set_title(f"linear lens accuracy of each position's answer, seed {result.spec.seed}",
                 fontsize=9)
    ax.grid(False)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2))
    fig.colorbar(image, ax=ax, fraction=0.05)
    return fig
