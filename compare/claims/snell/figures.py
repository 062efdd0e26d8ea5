"""The figures of the Snell claims on the copying model and its data (``Claim.figures``):
learning curves per group of seeds, KTIW against attention, kappa against the data generator,
attention at initialisation, learning speed along kappa, and the frozen-uniform loss band (the
toy models' figures: :mod:`~attnverify.compare.claims.snell.toy_figures`). Each draws what its
claim's assessment measured (its ``details``) or the runs it read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from attnverify import theory
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


def ktiw_vs_attention_figure(rows: Sequence[dict[str, Any]], steps: int,
                             eval_every: int) -> Figure:
    """Per seed (``rows``: the claim's ``details["seeds"]``), the first step with KTIW-probe
    accuracy >= 0.5 against the first with attention accuracy >= 0.5; a probe that never
    crossed is drawn past the budget."""
    fig, (ax,) = new_figure()
    top = steps + eval_every
    for row in rows:
        colour = PALETTE["red"] if row["distribution"] == "permutation" else PALETTE["blue"]
        y = row["ktiw_step"] if row["ktiw_step"] is not None else top
        ax.plot(row["attention_step"], y, "o", color=colour, alpha=0.7)
    ax.plot([0, top], [0, top], color=PALETTE["theory"], lw=1, label="same step")
    ax.plot([], [], "o", color=PALETTE["red"], label="permutation")
    ax.plot([], [], "o", color=PALETTE["blue"], label="subset")
    ax.set_xlabel("first step attention acc >= 0.5")
    ax.set_ylabel("first step KTIW-probe acc >= 0.5")
    ax.set_title("KTIW before attention: points below the line")
    ax.legend(fontsize=7)
    return fig


def kappa_figure(rows: Sequence[dict[str, Any]]) -> Figure:
    """kappa(V, L = 40) from theory, L of V distinct and i.i.d., with the Monte Carlo estimates
    at L = 40 (``rows``: the claim's ``details["points"]``)."""
    fig, (ax,) = new_figure()
    length = 40
    vocab = np.arange(length, 161)
    ax.plot(vocab, [theory.snell.kappa(int(v), length).value for v in vocab],
            color=PALETTE["theory"], label="theory, L of V distinct")
    ax.plot(vocab, 1 / vocab, color=PALETTE["theory"], linestyle="--",
            label="theory, i.i.d. (1/V)")
    peak = theory.snell.kappa_peak(length).value
    ax.axvline(peak, color=PALETTE["grey"], linestyle=":", label=f"V* = {peak:.1f}")
    for r in (r for r in rows if r["L"] == length):
        color = PALETTE["orange"] if r["distribution"] == "iid" else PALETTE["blue"]
        ax.errorbar(r["V"], r["kappa_measured"], yerr=1.96 * r["kappa_se"], fmt="o",
                    color=color, markersize=5)
    ax.plot([], [], "o", color=PALETTE["blue"], label="Monte Carlo, subset/permutation")
    ax.plot([], [], "o", color=PALETTE["orange"], label="Monte Carlo, i.i.d.")
    ax.set_xlabel("vocabulary size V (L = 40)")
    ax.set_ylabel(r"stage-1 KTIW margin $\kappa$")
    ax.set_title(r"$\kappa(V, L)$: theory vs data generator")
    ax.legend(fontsize=7)
    return fig


def attention_at_init_figure(rows: Sequence[dict[str, Any]],
                             per_config: Sequence[Sequence[tuple[np.ndarray, np.ndarray]]],
                             entropy_ratio_min: float, max_weight_factor: float) -> Figure:
    """Histograms over every query of every seed, per configuration (``rows``: the claim's
    ``details["configs"]``; ``per_config``: per configuration and seed, the per-query entropy
    / log S and S * max weight), with the thresholds and the uniform value."""
    fig, (ax_h, ax_m) = new_figure(ncols=2)
    colors = [PALETTE["blue"], PALETTE["orange"], PALETTE["green"]]
    ratios = [np.concatenate([s[0] for s in stats]) for stats in per_config]
    maxima = [np.concatenate([s[1] for s in stats]) for stats in per_config]
    # fixed ranges that always show the thresholds (and never collapse to zero width)
    ratio_bins = np.linspace(min(min(r.min() for r in ratios), entropy_ratio_min - 0.01),
                             1.0 + 1e-9, 41)
    max_bins = np.linspace(1.0, max(max(m.max() for m in maxima), max_weight_factor + 0.5), 41)
    for row, ratio, maximum, color in zip(rows, ratios, maxima, colors, strict=False):
        label = f"H={row['hidden']}, S={row['L'] + 1}"
        ax_h.hist(ratio, bins=ratio_bins, color=color, alpha=0.6, label=label)
        ax_m.hist(maximum, bins=max_bins, color=color, alpha=0.6, label=label)
    ax_h.axvline(entropy_ratio_min, color=PALETTE["red"], linestyle="--",
                 label="threshold e = 0.95")
    ax_h.axvline(1.0, color=PALETTE["theory"], label="uniform (theory)")
    ax_m.axvline(max_weight_factor, color=PALETTE["red"], linestyle="--",
                 label="threshold k = 3")
    ax_m.axvline(1.0, color=PALETTE["theory"], label="uniform (theory)")
    ax_h.set_xlabel(r"entropy$(\alpha_t)$ / log S per query")
    ax_m.set_xlabel(r"S $\cdot$ max$_l\ \alpha_{t,l}$ per query")
    for ax in (ax_h, ax_m):
        ax.set_ylabel("queries (all seeds)")
        ax.legend(fontsize=7)
    fig.suptitle("Attention at step 0")
    return fig


def kappa_speed_figure(rows: Sequence[dict[str, Any]], length: int,
                       vocab: Sequence[int]) -> Figure:
    """Left: kappa(V, L) from theory with its peak; right: each run's learning speed against
    V (``rows``: the claim's ``details["runs"]``; permutations in red, shown only)."""
    fig, (ax_k, ax_s) = new_figure(ncols=2)
    grid = np.arange(length, max(vocab) + 1)
    ax_k.plot(grid, [theory.snell.kappa(int(v), length).value for v in grid],
              color=PALETTE["theory"], label=r"$\kappa(V, L)$ theory")
    ax_k.axvline(theory.snell.kappa_peak(length).value, color=PALETTE["grey"], ls=":",
                 label="V*")
    ax_k.set_xlabel(f"vocabulary size V (L = {length})")
    ax_k.set_ylabel(r"$\kappa$")
    ax_k.legend(fontsize=7)
    for row in rows:
        colour = PALETTE["red"] if row["V"] == length else PALETTE["blue"]
        ax_s.plot(row["V"], row["speed"], "o", color=colour, alpha=0.7)
    ax_s.set_xscale("log")
    ax_s.set_xlabel("vocabulary size V (red: permutations, shown only)")
    ax_s.set_ylabel("area under the token-accuracy curve")
    fig.suptitle("Stage-1 signal and learning speed")
    return fig


def uniform_loss_figure(subset: Sequence[RunResult], perm: Sequence[RunResult], floor: float,
                        ceiling: float, length: int) -> Figure:
    """Per-word loss of every frozen-uniform run over training, with the band's top (the
    subset's bag-of-words optimum, ``ceiling``) and its floor log(L!)/L."""
    fig, (ax,) = new_figure(width=5.0)
    for runs, colour, name in ((subset, PALETTE["blue"], "subset"),
                               (perm, PALETTE["red"], "permutation")):
        for i, r in enumerate(runs):
            ax.plot(r.eval_steps, r.metric("loss_words"), color=colour, alpha=0.7, lw=1,
                    label=f"{name} (measured)" if i == 0 else None)
    ax.axhline(ceiling, color=PALETTE["theory"], lw=1,
               label=f"log L = {ceiling:.2f} (BoW optimum)")
    ax.axhline(floor, color=PALETTE["theory"], ls="--", lw=1,
               label=f"log(L!)/L = {floor:.2f} (no-order floor)")
    ax.set_xlabel(r"training step $\tau$")
    ax.set_ylabel("per-word loss (nats)")
    ax.set_title(f"Frozen uniform attention, L = {length}")
    ax.legend(fontsize=7)
    return fig
