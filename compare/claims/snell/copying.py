"""Claims on learning to copy with learned attention: the easy distribution, the hard one, KTIW
before attention, kappa and learning speed, and multi-head rescue (snell2021.md §4.7 P3, P4,
P6). Thresholds come from chance levels, the spec's suggested values and exact tests; each
claim's docstring gives the reasoning."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from scipy import stats

import theory
from compare.claim import Assessment, Claim, Verdict
from compare.claims.snell.common import (
    COPYING,
    LENGTH_SPACE,
    PAPER_COPYING,
    SUCCESS,
    compare_groups,
    copy_spec,
    every_seed_verdict,
    group_verdict,
    scale_text,
    success_steps,
)
from compare.plotting import PALETTE, new_figure, runs_with_band
from compare.space import Dimension
from compare.stats import binomial_ci
from empirics import RunResult, RunSpec

SUCCESS_TEXT = (f"token acc >= {SUCCESS['acc']} and aligned attention (argmax at t or t +- 1) "
                f">= {SUCCESS['attn_acc_best_offset']} at one evaluation")


METRIC_LABELS = {
    "acc": "token accuracy (teacher forced)",
    "attn_acc": "attention accuracy (argmax at t)",
    "ktiw_acc": "KTIW probe accuracy (§3.1)",
}


def curves_figure(groups: dict[str, Sequence[RunResult]], metrics: Sequence[str], title: str):
    """Per-seed curves of ``metrics`` (thin; one panel each) under the mean over seeds with its
    95% band (thick), one colour per group. Diverged runs are drawn but left out of the mean."""
    colours = [PALETTE["blue"], PALETTE["red"], PALETTE["green"], PALETTE["orange"]]
    fig, axes = new_figure(ncols=len(metrics))
    for ax, metric in zip(axes, metrics, strict=True):
        for (label, runs), colour in zip(groups.items(), colours, strict=False):
            runs_with_band(ax, runs, metric, colour, f"{label} (mean, 95% CI)")
        if metric in SUCCESS:
            ax.axhline(SUCCESS[metric], color=PALETTE["grey"], linestyle="--", lw=1)
        ax.set_xlabel(r"training step $\tau$")
        ax.set_ylabel(METRIC_LABELS.get(metric, metric.replace("_", " ")))
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(title)
    return fig


class SubsetLearnedEverySeed(Claim):
    """``snell.subset_learned_every_seed`` (P4, easy half): the subset distribution (L distinct
    of V > L) is learned by every seed ([BLOG]: "successfully learns this copying function
    every time").

    Success of a seed: ``SUCCESS`` (token acc >= 0.95 and aligned attention >= 0.9 at one
    evaluation). "Every time" is read as a per-seed success probability p >= 0.9, decided by
    the exact 95% Clopper-Pearson interval (``every_seed_verdict``): refuted when its upper bound
    is below 0.9; confirmed when every seed succeeds and the lower bound exceeds 0.5; otherwise
    inconclusive. The 12 seeds of ``quick`` confirm only with 12/12; the 3 seeds of ``smoke``
    can never confirm (wiring only).
    """

    id = "snell.subset_learned_every_seed"
    paper = "snell"
    statement = ("The easy copying distribution (L distinct tokens of V > L, random order) is "
                 "learned by every seed within the step budget.")
    paper_scale = PAPER_COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, dict[str, Any]]] = COPYING

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        return [copy_spec(params, "subset", params["subset_V"], seed)
                for seed in range(params["seeds"])]

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        steps = success_steps(list(results))
        n, k = len(results), sum(s is not None for s in steps)
        verdict, why = every_seed_verdict(k, n)
        learned = [s for s in steps if s is not None]
        return Assessment(
            verdict=verdict, theory=1.0,
            empirical={"value": k / n, "ci": list(binomial_ci(k, n)), "confidence": 0.95,
                       "quantity": "fraction of seeds that learn",
                       "median_steps_to_success": float(np.median(learned)) if learned else None},
            statistic=f"seeds reaching {SUCCESS_TEXT} (subset V={params['subset_V']}, "
                      f"{scale_text(params)})",
            tolerance={"success_rate_claimed": 0.9,
                       "why": "'every time' read as p >= 0.9; exact binomial (Clopper-Pearson) "
                              "95% interval over seeds decides"},
            explanation=why, n_seeds=n,
            details={"steps_to_success": steps, "successes": k},
            figures={"subset_curves": curves_figure(
                {f"subset {params['L']} of {params['subset_V']}": results},
                ["acc", "attn_acc"], f"Subset copying, {n} seeds")},
        )


class PermutationIsHard(Claim):
    """``snell.permutation_is_hard`` (P4): permutations (V = L) are learned less often or more
    slowly than the subset distribution (L of V > L) under the same budget.

    Statistic: success counts (Fisher's exact test) and steps-to-success with failures ranked
    last (Mann-Whitney U), both one-sided at 0.025 (Bonferroni over the pair). Confirmed when
    permutations are significantly worse in either; refuted when significantly better in
    either; inconclusive otherwise. Success is ``SUCCESS``; the budget is fixed for both
    distributions, since the permutation failure is a finite-horizon effect (§9.2).
    """

    id = "snell.permutation_is_hard"
    paper = "snell"
    statement = ("Permutation copying (uninformative co-occurrence) is learned less often or "
                 "more slowly than subset copying (40 of 60 in the paper).")
    paper_scale = PAPER_COPYING
    defaults: ClassVar[dict[str, dict[str, Any]]] = COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        return ([copy_spec(params, "permutation", params["L"], s) for s in range(params["seeds"])]
                + [copy_spec(params, "subset", params["subset_V"], s)
                   for s in range(params["seeds"])])

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        n = params["seeds"]
        perm, subset = list(results[:n]), list(results[n:])
        cmp = compare_groups(success_steps(perm), success_steps(subset), params["steps"])
        verdict = group_verdict(cmp)
        (k_p, k_s), (m_p, m_s) = cmp["successes"], cmp["median_steps"]
        explanation = (
            f"permutations: {k_p}/{n} seeds learned, median steps-to-success {m_p:.0f}; subset: "
            f"{k_s}/{n}, median {m_s:.0f} (failures count as {params['steps'] + 1}). One-sided "
            f"p (permutations worse): Fisher {cmp['fisher_p_a_worse']:.3g}, Mann-Whitney "
            f"{cmp['mannwhitney_p_a_slower']:.3g}; (permutations better): Fisher "
            f"{cmp['fisher_p_a_better']:.3g}, Mann-Whitney {cmp['mannwhitney_p_a_faster']:.3g}.")
        return Assessment(
            verdict=verdict, theory="permutations worse",
            empirical={"value": k_p / n, "ci": list(binomial_ci(k_p, n)), "confidence": 0.95,
                       "quantity": "permutation success rate",
                       "subset_success_rate": k_s / n, "median_steps": [m_p, m_s]},
            statistic=f"success ({SUCCESS_TEXT}) and steps-to-success, permutation V=L vs "
                      f"subset V={params['subset_V']} ({scale_text(params)} each)",
            tolerance={"alpha_per_test": 0.025,
                       "why": "two one-sided tests (Fisher, Mann-Whitney) at 0.05 family-wise, "
                              "Bonferroni"},
            explanation=explanation, n_seeds=2 * n, details=cmp,
            figures={"copying_curves": curves_figure(
                {f"permutations V=L={params['L']}": perm,
                 f"subset {params['L']} of {params['subset_V']}": subset},
                ["acc", "attn_acc", "ktiw_acc"], "Copying: permutations vs subset")},
        )


class KtiwPrecedesAttention(Claim):
    """``snell.ktiw_precedes_attention`` (P3): in normal training the KTIW probe crosses its
    threshold no later than attention accuracy, seed by seed.

    Per seed whose attention is learned (attention accuracy reaches 0.5; seeds whose attention
    never does say nothing about the order): first evaluated step with KTIW-probe accuracy
    >= 0.5 versus first step with attention accuracy >= 0.5 (the spec's T9; 0.5 is ~10x chance
    1/S). KTIW holds "no later" when its step is <= the attention step: a tie (both crossed
    within the same evaluation interval) is no later at the schedule's resolution and is
    reported separately; no slack beyond that. The per-seed outcomes are counted with
    ``every_seed_verdict`` (every seed, Clopper-Pearson). Runs: the permutation and subset runs
    of ``snell.permutation_is_hard`` (shared).
    """

    id = "snell.ktiw_precedes_attention"
    paper = "snell"
    statement = ("In normal training the KTIW probe is learned before attention: probe "
                 "accuracy crosses 0.5 no later than attention accuracy, seed by seed.")
    paper_scale = PAPER_COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, dict[str, Any]]] = COPYING
    threshold = 0.5

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        return PermutationIsHard().specs(params)

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        rows = []
        for r in results:
            attn = r.first_step_reaching({"attn_acc": self.threshold})
            ktiw = r.first_step_reaching({"ktiw_acc": self.threshold})
            if attn is None:
                continue
            rows.append({"distribution": r.spec.task.distribution, "seed": r.spec.seed,
                         "ktiw_step": ktiw, "attention_step": attn,
                         "precedes": ktiw is not None and ktiw <= attn,
                         "tie": ktiw == attn})
        k = sum(r["precedes"] for r in rows)
        ties = sum(r["tie"] for r in rows)
        verdict, why = every_seed_verdict(k, len(rows))
        leads = [r["attention_step"] - r["ktiw_step"] for r in rows if r["ktiw_step"] is not None]
        return Assessment(
            verdict=verdict, theory="KTIW first",
            empirical={"value": k / len(rows) if rows else None,
                       "ci": list(binomial_ci(k, len(rows))) if rows else None, "confidence": 0.95,
                       "quantity": "fraction of seeds where KTIW precedes attention",
                       "median_lead_steps": float(np.median(leads)) if leads else None},
            statistic=f"first step with KTIW-probe acc >= 0.5 vs attention acc >= 0.5, over "
                      f"{len(rows)} seeds whose attention is learned ({scale_text(params)}, "
                      f"permutation and subset)",
            tolerance={"eval_every": params["eval_every"], "rate_claimed": 0.9,
                       "why": "the schedule's resolution only (ties count as no later); "
                              "'seed by seed' read as every seed, Clopper-Pearson"},
            explanation=f"KTIW no later than attention in {why}; {ties} of them ties (same "
                        f"evaluation interval); median lead "
                        f"{np.median(leads) if leads else float('nan'):.0f} steps.",
            n_seeds=len(rows), details={"seeds": rows, "ties": ties},
            figures={"ktiw_vs_attention": self._figure(rows, params)},
        )

    @staticmethod
    def _figure(rows: list[dict[str, Any]], params: dict[str, Any]):
        fig, (ax,) = new_figure()
        top = params["steps"] + params["eval_every"]
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


class KappaPredictsLearningSpeed(Claim):
    """``snell.kappa_predicts_learning_speed`` (derived prediction, snell2021.md §4.5; the paper
    does not test it): across a sweep of V at fixed L, copying is learned faster where the
    stage-1 signal kappa(V, L) is larger.

    kappa rises from 0 at V = L to its peak at V* = L + sqrt(L(L-1)) and falls after, so the
    sweep pairs vocabulary sizes below V* with sizes above it of similar kappa (L = 20: kappa(26)
    ~ kappa(80), kappa(22) ~ kappa(160)). "Larger V is easier" and "larger kappa is easier" then
    predict different orders, and the statistic separates them: the partial Spearman rank
    correlation of kappa and speed controlling for V. Speed of a seed = 1 / steps-to-success
    (0 for a failure). One-sided test at 0.05 (t with n - 3 degrees of freedom): confirmed when
    the partial correlation is positive and significant, refuted when negative and significant,
    inconclusive otherwise. The plain correlation is reported too.
    """

    id = "snell.kappa_predicts_learning_speed"
    paper = "snell"
    statement = ("Across vocabulary sizes V at fixed L, learning speed increases with the "
                 "stage-1 signal kappa(V, L), beyond what V alone explains (a derived "
                 "prediction the paper does not test).")
    paper_scale = PAPER_COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {**COPYING["smoke"], "vocab": (16, 20, 64), "seeds": 2},
        "quick": {**COPYING["quick"], "vocab": (20, 22, 26, 40, 80, 160), "seeds": 3},
        "full": {**COPYING["full"], "vocab": (40, 44, 52, 80, 160, 320), "seeds": 10},
    }

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        return [copy_spec(params, "permutation" if v == params["L"] else "subset", v, s)
                for v in params["vocab"] for s in range(params["seeds"])]

    @staticmethod
    def partial_spearman(x: Sequence[float], y: Sequence[float],
                         z: Sequence[float]) -> tuple[float, float, float]:
        """Partial rank correlation of x and y given z, with one-sided p-values (>0, <0)."""
        rx, ry, rz = (stats.rankdata(v) for v in (x, y, z))
        r_xy, r_xz, r_yz = (np.corrcoef(a, b)[0, 1] for a, b in ((rx, ry), (rx, rz), (ry, rz)))
        denom = math.sqrt(max((1 - r_xz**2) * (1 - r_yz**2), 0.0))
        if not denom or not np.isfinite(r_xy):
            return float("nan"), 1.0, 1.0
        r = (r_xy - r_xz * r_yz) / denom
        dof = len(rx) - 3
        t = r * math.sqrt(dof / max(1 - r**2, 1e-300))
        return float(r), float(stats.t.sf(t, dof)), float(stats.t.cdf(t, dof))

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        length = params["L"]
        vocab, kappas, speeds, rows = [], [], [], []
        for r, step in zip(results, success_steps(list(results)), strict=True):
            v = r.spec.task.vocab_size
            kappa = theory.snell.kappa(v, length).value
            vocab.append(v)
            kappas.append(kappa)
            speeds.append(0.0 if step is None else 1.0 / max(step, 1))
            rows.append({"V": v, "seed": r.spec.seed, "kappa": kappa, "steps_to_success": step})
        rho_partial, p_pos, p_neg = self.partial_spearman(kappas, speeds, vocab)
        rho_plain = stats.spearmanr(kappas, speeds).statistic
        if not np.isfinite(rho_partial):
            verdict, why = Verdict.INCONCLUSIVE, "speeds, kappas or V are constant: no ranking"
        elif p_pos < 0.05:
            verdict, why = Verdict.CONFIRMED, f"partial Spearman rho = {rho_partial:.2f} " \
                                              f"(given V), one-sided p = {p_pos:.3g} < 0.05"
        elif p_neg < 0.05:
            verdict, why = Verdict.REFUTED, f"partial Spearman rho = {rho_partial:.2f} (given " \
                                            f"V) is significantly negative (p = {p_neg:.3g})"
        else:
            verdict, why = Verdict.INCONCLUSIVE, f"partial Spearman rho = {rho_partial:.2f} " \
                                                 f"(given V), one-sided p = {p_pos:.3g}: not " \
                                                 f"significant at 0.05"
        why += f"; plain Spearman rho(kappa, speed) = {rho_plain:.2f}."
        return Assessment(
            verdict=verdict, theory="partial rho > 0",
            empirical={"value": rho_partial if np.isfinite(rho_partial) else None,
                       "p_value": p_pos, "plain_rho": rho_plain,
                       "quantity": "partial Spearman rho(kappa, 1/steps-to-success | V)"},
            statistic=f"partial rank correlation of kappa(V, L={length}) and learning speed "
                      f"given V, over V in {list(params['vocab'])} x {params['seeds']} seeds "
                      f"({scale_text(params)})",
            tolerance={"alpha": 0.05, "why": "one-sided test of the partial correlation at 0.05"},
            explanation=why, n_seeds=len(results), details={"runs": rows},
            figures={"kappa_speed": self._figure(rows, params)},
        )

    @staticmethod
    def _figure(rows: list[dict[str, Any]], params: dict[str, Any]):
        fig, (ax_k, ax_s) = new_figure(ncols=2)
        length = params["L"]
        grid = np.arange(length, max(params["vocab"]) + 1)
        ax_k.plot(grid, [theory.snell.kappa(int(v), length).value for v in grid],
                  color=PALETTE["theory"], label=r"$\kappa(V, L)$ theory")
        ax_k.axvline(theory.snell.kappa_peak(length).value, color=PALETTE["grey"], ls=":",
                     label="V*")
        ax_k.set_xlabel(f"vocabulary size V (L = {length})")
        ax_k.set_ylabel(r"$\kappa$")
        ax_k.legend(fontsize=7)
        budget = params["steps"] + params["eval_every"]
        for row in rows:
            y = row["steps_to_success"] if row["steps_to_success"] is not None else budget
            marker = "o" if row["steps_to_success"] is not None else "x"
            ax_s.plot(row["V"], y, marker, color=PALETTE["blue"], alpha=0.7)
        ax_s.axhline(budget, color=PALETTE["grey"], ls="--", lw=1, label="not learned (x)")
        ax_s.set_xlabel("vocabulary size V")
        ax_s.set_ylabel("steps to success")
        ax_s.legend(fontsize=7)
        fig.suptitle("Stage-1 signal and learning speed")
        return fig
