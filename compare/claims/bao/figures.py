"""The figures of the Bao claims (``Claim.figures``): rho-profiles against Monte Carlo, the
regimes' phase map, entropy along the spectrum's axes, rank collapse, and the trained models
(spectrum against entropy, LocAteR's curves, token diversity). Each draws what its claim's
assessment measured (its ``details``) or the runs it read; none computes a statistic."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from attnverify import theory
from attnverify.compare.report.plotting import PALETTE, new_figure, seed_band
from attnverify.empirics import RunResult

RhoProfile = tuple[np.ndarray, np.ndarray, np.ndarray]
"""rho_t from theory, its Monte Carlo estimate and the estimate's standard error, per t."""


def rho_profiles_figure(profiles: Mapping[tuple[float, float], RhoProfile], T: int,
                        by_d: Mapping[int, float], rows: Sequence[dict[str, Any]]) -> Figure:
    """Left: the rho-profiles at d = 64 per (mean, std), theory as lines and Monte Carlo as
    markers; right: the largest error per d (``by_d``) against the approximation's accuracy
    and the sampling noise allowed beside it (``rows``: the claim's ``details["cases"]``)."""
    fig, axes = new_figure(ncols=2, width=4.4)
    s_pos = np.arange(1, T + 1) / T
    colours = [PALETTE[c] for c in ("blue", "orange", "green", "red", "purple")]
    for colour, ((m, s), (rho_th, rho_mc, se)) in zip(colours, profiles.items(), strict=False):
        axes[0].plot(s_pos, rho_th, color=colour, label=f"m={m}, σ={s}")
        every = max(T // 32, 1)
        axes[0].errorbar(s_pos[::every], rho_mc[::every], yerr=1.96 * se[::every], fmt="o",
                         color=colour, markersize=3)
    axes[0].set_xlabel("position s = t/T")
    axes[0].set_ylabel(r"$\rho_t$ (line: theory; markers: Monte Carlo)")
    axes[0].set_title(f"signal propagation, d = 64, T = {T}")
    axes[0].legend(fontsize=7)
    dims = list(by_d)
    axes[1].plot(dims, [by_d[d] for d in dims], "o-", color=PALETTE["blue"],
                 label="measured max error")
    axes[1].step([min(dims), 32, max(dims)], [0.12, 0.06, 0.06], where="post",
                 color=PALETTE["theory"], linestyle="--", label="accuracy (spec)")
    worst_allowed = [min(r["allowed"] for r in rows if r["d"] == d) for d in dims]
    axes[1].plot(dims, worst_allowed, color=PALETTE["grey"], linestyle=":",
                 label="+ 4 SE sampling noise")
    axes[1].set_xscale("log", base=2)
    axes[1].set_xlabel("dimension d")
    axes[1].set_ylabel(r"max$_t |\hat\rho_t - \rho_t|$")
    axes[1].set_title("Gaussian approximation vs d")
    axes[1].legend(fontsize=7)
    return fig


def phase_map_figure(T: int, d: int = 64) -> Figure:
    """The theory's (mean, std) plane: N_eff(rho)/T with the regimes' borders, and the
    annealed softmax entropy (grey where the approximation goes negative)."""
    means = np.linspace(-0.3, 0.3, 121)
    stds = np.geomspace(1e-3, 30, 121)
    mm, ss = np.meshgrid(means, stds)
    loc = theory.bao.localization_grid(d, T, mm.ravel(), ss.ravel())
    ratio = (loc.participation / T).reshape(mm.shape)
    entropy = theory.bao.annealed_entropy_grid(d, T, mm, ss) / np.log(T)
    # the annealed approximation breaks down at large std (it goes negative): masked
    entropy = np.ma.masked_less(entropy, 0.0)
    fig, axes = new_figure(ncols=2, width=4.4)
    for ax, field, label, cmap in (
            (axes[0], ratio, r"$N_{\rm eff}(\rho)/T$", "cividis"),
            (axes[1], entropy, r"annealed entropy / $\log T$", "viridis")):
        colours = matplotlib.colormaps[cmap].with_extremes(bad=PALETTE["grey"])
        mesh = ax.pcolormesh(means, stds, field, cmap=colours, shading="auto",
                             vmin=None if ax is axes[0] else 0.0, vmax=1.0)
        fig.colorbar(mesh, ax=ax, label=label)
        ax.set_yscale("log")
        ax.set_xlabel("eigen-mean m")
        ax.set_ylabel(r"eigen-std $\sigma$")
    regimes = theory.bao.classify_regime(loc, T).reshape(mm.shape)
    code = np.select([regimes == "uniform", regimes == "localized"], [0, 1], 2)
    axes[0].contour(means, stds, code, levels=[0.5, 1.5], colors="white", linewidths=1)
    for x, y, text in ((0.0, 2e-3, "uniform"), (0.2, 3e-3, "localized"),
                       (-0.2, 3e-3, "localized"), (0.0, 15.0, "vanishing")):
        axes[0].text(x, y, text, color="white", ha="center", fontsize=7)
    axes[0].set_title(f"regimes from rho (d = {d}, T = {T})", fontsize=8)
    axes[1].set_title("softmax entropy, annealed (grey: approximation < 0, invalid)",
                      fontsize=8)
    return fig


def entropy_figure(chains: Sequence[dict[str, Any]], axis: Callable[[tuple[float, float]], float],
                   axis_label: str, T: int) -> Figure:
    """Monte Carlo entropy with its 95% interval and the annealed approximation along each
    chain of (mean, std) points (``chains``: the claim's ``details["chains"]``), against
    |``axis``|."""
    fig, (ax,) = new_figure()
    colours = (PALETTE["blue"], PALETTE["orange"], PALETTE["green"])
    for row, colour in zip(chains, colours, strict=False):
        points = [tuple(p) for p in row["points"]]
        x = [abs(axis(p)) for p in points]
        sign = "-" if any(axis(p) < 0 for p in points) else ""
        ax.errorbar(x, row["mc_entropy"], yerr=[1.96 * s for s in row["mc_entropy_se"]],
                    fmt="o", color=colour, markersize=4, label=f"Monte Carlo {sign}(95% CI)")
        ax.plot(x, row["annealed_entropy"], color=colour, alpha=0.5,
                label="annealed approximation (§3.6)")
    ax.axhline(np.log(T), color=PALETTE["grey"], linestyle=":", label=r"$\log T$")
    ax.set_xlabel(axis_label)
    ax.set_ylabel("softmax entropy of the last query (nats)")
    ax.legend(fontsize=7)
    return fig


def rank_collapse_figure(means: Sequence[float], ratio: Sequence[float], se: Sequence[float],
                         std: float, d: int) -> Figure:
    """The mean res(Y)/res(X) with its 95% interval along the eigen-mean, at eigen-std
    ``std``, against the exact collapse at W = 0."""
    fig, (ax,) = new_figure()
    ax.errorbar(list(means), list(ratio), yerr=[1.96 * s for s in se], fmt="o-",
                color=PALETTE["blue"], markersize=4, label=f"Monte Carlo, std = {std}")
    ax.axhline(0, color=PALETTE["theory"], linewidth=0.8, label="W = 0: exact collapse")
    ax.set_xlabel("eigen-mean m")
    ax.set_ylabel("res(Y) / res(X)")
    ax.set_title(f"token diversity after attention (d = {d})")
    ax.legend(fontsize=7)
    return fig


def spectrum_figure(finished: Mapping[float, Sequence[RunResult]]) -> Figure:
    """Left: final eigen-variance against final validation attention entropy of every run
    that did not diverge, per LocAteR coefficient; right: the trained W_QK's eigenvalues of
    the first run with a final snapshot without LocAteR and at the largest coefficient."""
    fig, axes = new_figure(ncols=2, width=4.4)
    colours = [PALETTE[c] for c in ("theory", "sky", "blue", "orange", "red", "purple")]
    for colour, (lam, ok) in zip(colours, finished.items(), strict=False):
        axes[0].scatter([float(r.metric("eig_var")[-1]) for r in ok],
                        [float(r.metric("attn_entropy_norm")[-1]) for r in ok], color=colour,
                        s=14, label=f"λ = {lam:g}")
    axes[0].set_xscale("log")
    axes[0].set_xlabel(r"eigen-variance of trained $W_{QK}$")
    axes[0].set_ylabel("validation attention entropy / log i")
    axes[0].legend(fontsize=7)
    for colour, lam in ((PALETTE["red"], 0.0), (PALETTE["blue"], max(finished))):
        run = next((r for r in finished[lam] if r.final), None)
        if run is not None:
            axes[1].scatter(run.final["eig_real"], run.final["eig_imag"], s=10,
                            color=colour, label=f"λ = {lam:g} (seed {run.spec.seed})")
    axes[1].axhline(0, color=PALETTE["grey"], linewidth=0.5)
    axes[1].axvline(0, color=PALETTE["grey"], linewidth=0.5)
    axes[1].set_xlabel(r"Re $\lambda(W_{QK})$")
    axes[1].set_ylabel(r"Im $\lambda(W_{QK})$")
    axes[1].set_title("eigenvalues with and without LocAteR", fontsize=8)
    if axes[1].get_legend_handles_labels()[0]:
        axes[1].legend(fontsize=7)
    return fig


def locater_figure(arms: Sequence[tuple[str, Sequence[RunResult]]]) -> Figure:
    """Validation loss, attention entropy and eigen-variance over training, the median over
    the decision seeds with their interquartile band, per arm (``arms``: label and the runs
    that did not diverge; none, LocAteR at lambda*, the Frobenius control at mu*, in that
    order)."""
    fig, axes = new_figure(ncols=3, width=3.6)
    colours = (PALETTE["theory"], PALETTE["blue"], PALETTE["orange"])
    panels = (("loss", "validation loss (nats)"),
              ("attn_entropy_norm", "attention entropy / log i"),
              ("eig_var", r"eigen-variance of $W_{QK}$"))
    for (label, ok), colour in zip(arms, colours, strict=True):
        if not ok:
            continue
        for ax, (name, ylabel) in zip(axes, panels, strict=True):
            seed_band(ax, ok[0].eval_steps, [r.metric(name) for r in ok], colour, label)
            ax.set_xlabel("training step")
            ax.set_ylabel(ylabel)
    axes[2].set_yscale("log")
    axes[0].legend(fontsize=7, title="decision seeds, median and quartiles", title_fontsize=7)
    return fig


def token_diversity_figure(variance: Sequence[float], diversity: Sequence[float],
                           lam: float) -> Figure:
    """Per decision seed, the paired change of token diversity against that of the
    eigen-variance (LocAteR at ``lam`` minus none)."""
    fig, (ax,) = new_figure()
    ax.scatter(variance, diversity, color=PALETTE["blue"], s=18,
               label=f"decision seeds, LocAteR λ = {lam:g} minus none")
    ax.axhline(0, color=PALETTE["grey"], linewidth=0.8)
    ax.axvline(0, color=PALETTE["grey"], linewidth=0.8)
    ax.set_xlabel("paired change of eigen-variance")
    ax.set_ylabel("paired change of res(Y)/res(X)")
    ax.set_title("smaller variance: tokens kept apart (up) or collapsed (down)", fontsize=8)
    ax.legend(fontsize=7)
    return fig
