"""Claims on learning to copy with learned attention: the easy distribution, the hard one, KTIW
before attention, kappa and learning speed, and multi-head rescue (Snell et al. 2021).
Thresholds come from chance levels, the suggested starting values of the reconstruction's
test plan (docs/methodology.md#starting-values) and exact tests; each
claim's docstring gives the reasoning."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import (
    COPYING_PARAMS,
    DECISION_SEEDS,
    LENGTH_SPACE,
    PAPER_COPYING,
    SUCCESS,
    CopyingParams,
    constructed_copy_result,
    copy_spec,
    copy_task,
    every_seed_verdict,
    scale_text,
    success_steps,
)
from attnverify.compare.claims.snell.copying_protocols import (
    KTIW_PRECEDES,
    PERMUTATION_IS_HARD,
)
from attnverify.compare.claims.snell.figures import curves_figure, ktiw_vs_attention_figure
from attnverify.compare.decision import count_test, decide, time_test
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci, compare_groups
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ALPHA = 0.025
MIN_QUALIFYING = 6
"""The fewest qualifying seeds with which ``every_seed_verdict`` can confirm (lower bound of
n/n above 0.5)."""
"""One-sided level of the copying comparisons' primary tests."""
SUCCESS_TEXT = (f"token acc >= {SUCCESS['acc']} and aligned attention (argmax at t or t +- 1) "
                f">= {SUCCESS['attn_acc_best_offset']} at one evaluation")


class PermutationIsHard(Claim):
    """``snell.permutation_is_hard`` (P4): permutations (V = L) are learned less often or more
    slowly than the subset distribution (L of V > L) under the same budget.

    Protocol (:data:`PERMUTATION_IS_HARD`): "less often or more slowly" is one endpoint, the
    time to success with runs that never succeed censored at the budget, decided by the
    one-sided log-rank test at 0.025; success counts (Fisher) are secondary and never decide,
    but a secondary test significant the other way makes the verdict inconclusive
    (conflicting evidence). Success is ``SUCCESS``; the budget is fixed for both
    distributions, since the permutation failure is a finite-horizon effect (§9.2). The
    headline is the summary of the same endpoint: the restricted mean step of success up to the
    budget (the area under the Kaplan-Meier curve), permutations minus subset; the success
    rates are among its extras.

    Changed on 2026-11-25 (docs/methodology.md): the rule was "Fisher or Mann-Whitney with
    failures ranked last, either significant" (two chances to confirm, ranks with a
    placeholder time); the decision moved to fresh seeds (``DECISION_SEEDS``).
    """

    id = "snell.permutation_is_hard"
    kind = ClaimKind.PAPER
    code_version = 2
    protocol = PERMUTATION_IS_HARD
    paper = "snell"
    statement = ("Permutation copying (uninformative co-occurrence) is learned less often or "
                 "more slowly than subset copying (40 of 60 in the paper).")
    paper_scale = PAPER_COPYING
    defaults: ClassVar[dict[str, CopyingParams]] = COPYING_PARAMS
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        return normal_copying_specs(params)

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        n = params["seeds"]
        perm, subset = results["permutation"], results["subset"]
        cmp = compare_groups(success_steps(perm), success_steps(subset), params["steps"])
        decision = decide(time_test(cmp, "permutations"), ALPHA,
                          secondary=[count_test(cmp, "permutations")],
                          effect="permutations learned later or less often")
        (k_p, k_s), (m_p, m_s) = cmp.successes, cmp.median_steps
        r_p, r_s = cmp.restricted_mean_steps
        explanation = (
            f"permutations: {k_p}/{n} seeds learned, median steps to success "
            f"{_median_text(m_p)}; subset: {k_s}/{n}, median {_median_text(m_s)} (Kaplan-Meier, "
            f"runs that never learn censored at {params['steps']}; restricted mean steps "
            f"{r_p:.0f} against {r_s:.0f}). {decision.text}")
        return Assessment(
            verdict=decision.verdict, reason=decision.reason, p_value=decision.p_value,
            theory="> 0 (permutations learn later or less often)",
            empirical=Measurement(r_p - r_s,
                                  quantity="restricted mean steps to success, permutations "
                                           "minus subset (runs that never learn at the budget)",
                                  extras={"restricted_mean_steps": [r_p, r_s],
                                          "permutation_success_rate": k_p / n,
                                          "permutation_success_ci": list(binomial_ci(k_p, n)),
                                          "subset_success_rate": k_s / n,
                                          "median_steps": [m_p, m_s]}),
            statistic=f"steps to success ({SUCCESS_TEXT}), censored at the budget, "
                      f"permutation V=L vs subset V={params['subset_V']} "
                      f"({scale_text(params)} each)",
            tolerance=Tolerance("one-sided log-rank test at 0.025 (protocol)", {"alpha": ALPHA}),
            explanation=explanation, n_seeds=2 * n, details=asdict(cmp),
        )

    def negative_control(self, params: dict[str, Any]) -> list[RunResult]:
        """Permutations learn as the subset does: in both groups seed i learns at the i-th
        evaluation and the last seed never does (the same spread of times, not one tie, so
        the log-rank test computes a statistic rather than falling back on p = 1)."""
        return [constructed_copy_result(spec, (i + 1) * spec.eval_every
                                        if i + 1 < len(group) else None)
                for group in self.specs(params).values() for i, spec in enumerate(group)]

    def reachable_verdicts(self, params: dict[str, Any]) -> frozenset[Verdict]:
        """Simulated at the extremes at ``params``' seeds: no permutation seed learns while
        every subset seed learns at its first evaluation, and the reverse; with the negative
        control's verdict between them."""
        specs = self.specs(params)

        def verdict(permutation_at: int | None, subset_at: int | None) -> Verdict:
            results = [constructed_copy_result(spec, at) for group, at in
                       (("permutation", permutation_at), ("subset", subset_at))
                       for spec in specs[group]]
            return self.assess(params, self.results_for(params, results)).verdict

        first = specs["subset"][0].eval_every
        control = self.results_for(params, self.negative_control(params))
        return frozenset({verdict(None, first), verdict(first, None),
                          self.assess(params, control).verdict})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        return {"copying_curves": curves_figure(
            {f"permutations V=L={params['L']}": results["permutation"],
             f"subset {params['L']} of {params['subset_V']}": results["subset"]},
            ["acc", "attn_acc", "ktiw_acc"], "Copying: permutations vs subset")}


def normal_copying_specs(params: dict[str, Any]) -> dict[str, list[RunSpec]]:
    """Normally trained copying runs on the fresh decision seeds: permutations (V = L), then
    the subset (L of ``subset_V``), ``params["seeds"]`` each."""
    seeds = range(DECISION_SEEDS, DECISION_SEEDS + params["seeds"])
    return {"permutation": [copy_spec(params, "permutation", params["L"], s) for s in seeds],
            "subset": [copy_spec(params, "subset", params["subset_V"], s) for s in seeds]}


def _median_text(steps: float | None) -> str:
    return "not reached (half or more never learned)" if steps is None else f"{steps:.0f}"


class KtiwPrecedesAttention(Claim):
    """``snell.ktiw_precedes_attention`` (P3): in normal training the KTIW probe crosses its
    threshold no later than attention accuracy, seed by seed.

    Per seed whose attention is learned (attention accuracy reaches 0.5; seeds whose attention
    never does say nothing about the order): first evaluated step with KTIW-probe accuracy
    >= 0.5 versus first step with attention accuracy >= 0.5 (the spec's T9; 0.5 is S/2 times
    chance 1/S: about 10x at quick's L = 20, 20x at the paper's L = 40). KTIW holds "no
    later" when its step is <= the attention step: a tie (both crossed within the same
    evaluation interval) is no later at the schedule's resolution and is reported separately;
    no slack beyond that. The per-seed outcomes are counted with
    ``every_seed_verdict`` (every seed, Clopper-Pearson). Runs: the permutation and subset runs
    of ``snell.permutation_is_hard`` (shared), on the fresh decision seeds from
    ``DECISION_SEEDS`` since 2026-11-25 (the rule was developed on seeds 0 to 19).
    """

    id = "snell.ktiw_precedes_attention"
    kind = ClaimKind.PAPER
    code_version = 1
    protocol = KTIW_PRECEDES
    paper = "snell"
    statement = ("In normal training the KTIW probe is learned before attention: probe "
                 "accuracy crosses 0.5 no later than attention accuracy, seed by seed.")
    paper_scale = PAPER_COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, CopyingParams]] = COPYING_PARAMS
    threshold = 0.5

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """The runs of ``snell.permutation_is_hard`` (the same keys: trained once)."""
        return normal_copying_specs(params)

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        rows: list[dict[str, Any]] = []
        for r in results:
            attn = r.first_step_reaching({"attn_acc": self.threshold})
            ktiw = r.first_step_reaching({"ktiw_acc": self.threshold})
            if attn is None:
                continue
            rows.append({"distribution": copy_task(r.spec).distribution, "seed": r.spec.seed,
                         "ktiw_step": ktiw, "attention_step": attn,
                         "precedes": ktiw is not None and ktiw <= attn,
                         "tie": ktiw == attn})
        k = sum(r["precedes"] for r in rows)
        ties = sum(r["tie"] for r in rows)
        verdict, why = every_seed_verdict(k, len(rows))
        reason = (Reason.NOT_TESTABLE if verdict is Verdict.INCONCLUSIVE
                  and len(rows) < MIN_QUALIFYING else None)
        if reason is not None:
            why += (f" (not testable here: fewer than {MIN_QUALIFYING} seeds learn attention, "
                    f"and fewer can never confirm; more seeds or a longer budget would)")
        leads = [r["attention_step"] - r["ktiw_step"] for r in rows if r["ktiw_step"] is not None]
        return Assessment(
            verdict=verdict, reason=reason, theory="KTIW first",
            empirical=Measurement(k / len(rows) if rows else None,
                                  ci=list(binomial_ci(k, len(rows))) if rows else None,
                                  confidence=0.95,
                                  quantity="fraction of seeds where KTIW precedes attention",
                                  extras={"median_lead_steps": float(np.median(leads)) if leads
                                          else None}),
            statistic=f"first step with KTIW-probe acc >= 0.5 vs attention acc >= 0.5, over "
                      f"{len(rows)} seeds whose attention is learned ({scale_text(params)}, "
                      f"permutation and subset)",
            tolerance=Tolerance("the schedule's resolution only (ties count as no later); "
                                "'seed by seed' read as every seed, Clopper-Pearson",
                                {"eval_every": params["eval_every"], "rate_claimed": 0.9}),
            explanation=f"KTIW no later than attention in {why}; {ties} of them ties (same "
                        f"evaluation interval); median lead "
                        f"{np.median(leads) if leads else float('nan'):.0f} steps.",
            n_seeds=len(rows), details={"seeds": rows, "ties": ties},
        )

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        return {"ktiw_vs_attention": ktiw_vs_attention_figure(
            assessment.details["seeds"], params["steps"], params["eval_every"])}
