"""``snell.permutation_is_hard`` (P4): permutation copying (V = L, uninformative
co-occurrence) is learned less often or more slowly than subset copying (L of V > L) under the
same budget (Snell et al. 2021, the copying experiment)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, ClassVar

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import (
    COPYING_PARAMS,
    DECISION_SEEDS,
    LENGTH_SPACE,
    PAPER_COPYING,
    CopyingParams,
    constructed_copy_result,
    scale_text,
    success_steps,
)
from attnverify.compare.claims.snell.copying_runs import SUCCESS_TEXT, normal_copying_specs
from attnverify.compare.claims.snell.figures import curves_figure
from attnverify.compare.decision import count_test, decide, time_test
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, SeedBlock, SeedUse
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci, compare_groups, mean_difference_test
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ALPHA, BETA = 0.025, 0.10
"""One-sided levels of the primary test and of the refutation test."""
MIN_DIFFERENCE = 0.1
"""The smallest difference of restricted mean steps to success that matters, as a share of
the budget."""

PERMUTATION_IS_HARD = Protocol(
    endpoint="steps to success (SUCCESS) of permutation runs against subset runs, a run that "
             "never succeeds censored at the step budget: 'less often or more slowly' is a "
             "later time to success",
    unit="one run per seed and distribution: its step of success or a censored budget",
    h0="permutations learn at the subset's rate or faster (equal or lower survival of "
       "'not yet learned')",
    h1="permutations learn later or never more often than subsets",
    test="one-sided log-rank test on right-censored steps to success (scipy.stats.logrank, "
         "normal approximation)",
    confirm="log-rank p (permutations slower) < 0.025, unless a test is significant the "
            "other way (then inconclusive: conflicting evidence)",
    refute=("a difference of restricted mean steps to success (permutations minus subset, "
            "a run that never learns counted at the budget) of a tenth of the budget or more "
            "rejected at 0.10 (the smallest difference that reads as 'frequently fails or "
            "learns more slowly'), by a permutation test of the shifted difference of means; "
            "a significant log-rank test beside it is conflicting evidence"),
    alpha=0.025, beta=0.10,
    error_rates="alpha 0.025 for the log-rank test at no difference; beta 0.10 at the "
                "smallest difference (a tenth of the budget in restricted mean steps), by a "
                "permutation test under the shift model",
    readout="the first evaluation meeting SUCCESS (token accuracy >= 0.95 and aligned "
            "attention >= 0.9), on the fixed evaluation grid",
    frozen="2026-11-25",
    secondary=("Fisher's exact test on the success counts (both directions)",
               "Kaplan-Meier median steps to success per distribution"),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS, "seeds per distribution as the "
                     "profile's 'seeds'; subset runs shared with snell.subset_learned_every_seed"),
           SeedBlock(SeedUse.DEVELOPMENT, 0, "the Mann-Whitney rule used before")),
    weaknesses=("the log-rank p-value is a normal approximation at 12 runs per group",
                "the refutation's shift model is an approximation for times censored at the "
                "budget (a point mass there); its smallest difference, a tenth of the budget, "
                "was declared after the log-rank verdicts at quick and full had been seen",
                "no testability precondition: the subset distribution learning reliably is "
                "another claim's verdict, not checked here"))


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

    Decided on the fresh seeds from ``DECISION_SEEDS`` (its protocol's history:
    docs/methodology.md).
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
        smallest = MIN_DIFFERENCE * params["steps"]
        refutation = mean_difference_test(
            [params["steps"] if s is None else s for s in success_steps(perm)],
            [params["steps"] if s is None else s for s in success_steps(subset)],
            smallest, "less")
        decision = decide(time_test(cmp, "permutations"), ALPHA,
                          secondary=[count_test(cmp, "permutations")],
                          refutation=refutation, beta=BETA,
                          effect="permutations learned later or less often")
        (k_p, k_s), (m_p, m_s) = cmp.successes, cmp.median_steps
        r_p, r_s = cmp.restricted_mean_steps
        explanation = (
            f"permutations: {k_p}/{n} seeds learned, median steps to success "
            f"{_median_text(m_p)}; subset: {k_s}/{n}, median {_median_text(m_s)} (Kaplan-Meier, "
            f"runs that never learn censored at {params['steps']}; restricted mean steps "
            f"{r_p:.0f} against {r_s:.0f}; the smallest difference that matters is "
            f"{smallest:.0f} steps, a tenth of the budget). {decision.text}")
        return Assessment(
            verdict=decision.verdict, reason=decision.reason, p_value=decision.p_value,
            refuting_p=decision.refuting_p,
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
            tolerance=Tolerance("one-sided log-rank test at 0.025; a difference of a tenth of "
                                "the budget refuted at 0.10 (protocol)",
                                {"alpha": ALPHA, "beta": BETA, "smallest_steps": smallest}),
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


def _median_text(steps: float | None) -> str:
    return "not reached (half or more never learned)" if steps is None else f"{steps:.0f}"
