"""``snell.ktiw_harder_on_permutations`` (P4; spec §4.5, §4.7; the abstract: the distribution
"makes KTIW hard to learn"): with attention frozen uniform, KTIW is learned less often on
permutations, where co-occurrence carries no signal, than on subsets. With attention frozen,
every step is taken under the uniform attention that defines stage 1 (§4.1), so the paper's
budget (200 steps at full) is read as a whole. It reads the runs it shares with
``snell.ktiw_learned_under_uniform_attention`` and ``snell.permutation_ktiw_at_chance``
(:mod:`~attnverify.compare.claims.snell.ktiw_uniform_runs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import LENGTH_SPACE, PAPER_COPYING, CopyingParams
from attnverify.compare.claims.snell.figures import curves_figure
from attnverify.compare.claims.snell.ktiw_uniform_runs import (
    KTIW_PARAMS,
    KTIW_SEED_BLOCKS,
    READOUT,
    constructed_probe_run,
    final_probes,
    ktiw_specs,
    probe_levels,
    starts_learned,
)
from attnverify.compare.decision import decide, rate_gain
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ALPHA, BETA = 0.025, 0.10
"""The design's levels: toward H1 at 0.025, against the smallest gain at 0.10."""
MIN_GAIN = 0.3
"""The smallest difference of the learning rates that matters: subsets learning the probe in
at least 3 in 10 more seeds than permutations."""

KTIW_HARDER_PROTOCOL = Protocol(
    endpoint="the learning rates of the KTIW probe with attention frozen uniform: the share "
             "of seeds whose final probe accuracy is above five times chance (5/S, S = L + 1; "
             "at most half-way from chance to 1), on subsets against permutations",
    unit="seed (one frozen-uniform run; a diverged subset run has not learned, a diverged "
         "permutation run is left out)",
    h0="permutations learn the probe at least as often as subsets (rate difference <= 0)",
    h1=f"subsets learn it in at least {MIN_GAIN} more of the seeds (the smallest effect that "
       f"matters)",
    test="exact unconditional test of the difference of two binomial rates (Suissa and "
         "Shuster), one-sided",
    confirm="subset rate above the permutation rate at alpha",
    refute=f"a difference of {MIN_GAIN} or more rejected at beta",
    alpha=ALPHA, beta=BETA,
    error_rates="alpha 0.025 at a difference of 0, beta 0.10 at the smallest difference that "
                "matters (the supremum over the nuisance rate)",
    readout=READOUT,
    precondition="no seed's probe is above the 'learned' level (5/S) at step 0: not testable "
                 "otherwise",
    frozen="2026-12-04",
    secondary=("the mean final probe accuracy per distribution (describes; never decides)",),
    seeds=KTIW_SEED_BLOCKS,
    weaknesses=(
        "A learning rate over seeds, not a speed or a level: a permutation probe that is "
        "learned later, or to a lower level (0.69 against 0.99 at full), counts as learned; "
        "'hard to learn' is read as 'not learned within the budget'.",
        f"The smallest gain {MIN_GAIN} and the factor 5 were set knowing that on other seeds "
        "the full runs' permutation probe ended at 0.68 (28 times chance) and the quick runs' "
        "at 0.061 (1.3 times chance).",
        "The subset runs are also those of snell.ktiw_learned_under_uniform_attention: a "
        "subset side that fails makes both claims fail together."))


class KtiwHarderOnPermutations(Claim):
    """``snell.ktiw_harder_on_permutations`` (module docstring)."""

    id = "snell.ktiw_harder_on_permutations"
    kind = ClaimKind.PAPER
    protocol = KTIW_HARDER_PROTOCOL
    code_version = 1
    paper = "snell"
    statement = ("With attention frozen uniform, KTIW is learned less often on permutations "
                 "than on subsets: permutations make it hard to learn.")
    paper_scale = PAPER_COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, CopyingParams]] = KTIW_PARAMS

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        return ktiw_specs(params)

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        levels = probe_levels(params["L"])
        subset = final_probes(results["subset"], diverged_as=0.0)
        perm = final_probes(results["permutation"], diverged_as=None)
        if not perm.size:
            return Assessment(
                verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE,
                theory=f"subset rate - permutation rate >= {MIN_GAIN}",
                empirical=Measurement(float("nan"), quantity="learning-rate difference"),
                statistic="no permutation run finished",
                tolerance=Tolerance(f"a rate difference of {MIN_GAIN}", {"min_gain": MIN_GAIN}),
                explanation="Not testable here: every permutation run diverged.",
                n_seeds=subset.size)
        k_s, k_p = int((subset > levels.learned).sum()), int((perm > levels.learned).sum())
        test, refutation = rate_gain(k_p, perm.size, k_s, subset.size, MIN_GAIN,
                                     "exact unconditional test, subsets learn more often")
        decision = decide(test, ALPHA, refutation=refutation, beta=BETA,
                          effect="permutations being harder")
        gain = k_s / subset.size - k_p / perm.size
        s_lo, s_hi = binomial_ci(k_s, subset.size)
        p_lo, p_hi = binomial_ci(k_p, perm.size)
        dropped = sum(r.diverged for r in results["permutation"])
        explanation = (f"The probe (final accuracy > {levels.learned:.3f} = 5/S) is learned in "
                       f"{k_s} of {subset.size} subset seeds (95% CI {s_lo:.2f}-{s_hi:.2f}; "
                       f"mean probe {subset.mean():.3f}) and {k_p} of {perm.size} permutation "
                       f"seeds ({p_lo:.2f}-{p_hi:.2f}; mean probe {perm.mean():.3f}); "
                       f"difference {gain:+.2f}, smallest that matters {MIN_GAIN}. "
                       f"{decision.text}"
                       + (f" {dropped} diverged permutation run(s) left out." if dropped
                          else ""))
        verdict, reason = decision.verdict, decision.reason
        early = starts_learned([*results["subset"], *results["permutation"]], levels)
        if early:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            explanation = (f"Not testable here: {early} seed(s) start with the probe above "
                           f"5/S (step 0). The rule read: {explanation}")
        return Assessment(
            verdict=verdict, reason=reason, p_value=decision.p_value,
            refuting_p=decision.refuting_p if verdict is Verdict.REFUTED else None,
            theory=f"subset rate - permutation rate >= {MIN_GAIN}",
            empirical=Measurement(gain, quantity="learning-rate difference, subsets minus "
                                                 "permutations (share of seeds)",
                                  extras={"subset_rate": k_s / subset.size,
                                          "permutation_rate": k_p / perm.size,
                                          "subset_mean_probe": float(subset.mean()),
                                          "permutation_mean_probe": float(perm.mean())}),
            statistic=f"final KTIW-probe accuracy after {params['steps']} steps with frozen "
                      f"uniform attention (H={params['hidden']}, L={params['L']}, "
                      f"{params['seeds']} seeds per distribution)",
            tolerance=Tolerance(f"learned: probe above five times chance; a rate difference "
                                f"of {MIN_GAIN} is the smallest that matters",
                                {"learned_above": levels.learned, "min_gain": MIN_GAIN}),
            explanation=explanation, n_seeds=subset.size + perm.size,
            details={"subset": subset.tolist(), "permutation": perm.tolist(),
                     "chance": levels.chance})

    def negative_control(self, params: dict[str, Any]) -> list[RunResult]:
        """Permutations as easy as subsets: both distributions' seeds end at the same probe
        values, half of them learned."""
        levels = probe_levels(params["L"])
        return [constructed_probe_run(spec, 1.0 if i % 2 == 0 else levels.at_chance)
                for group in self.specs(params).values() for i, spec in enumerate(group)]

    def reachable_verdicts(self, params: dict[str, Any]) -> frozenset[Verdict]:
        """Simulated at the extremes at ``params``' seeds: every subset seed learns and no
        permutation seed does, every seed of both learns, and only the permutation seeds
        learn; with the negative control's verdict between them."""
        specs = self.specs(params)

        def verdict(subset: float, permutation: float) -> Verdict:
            runs = [constructed_probe_run(spec, final) for group, final in
                    (("subset", subset), ("permutation", permutation)) for spec in specs[group]]
            return self.assess(params, self.results_for(params, runs)).verdict

        control = self.results_for(params, self.negative_control(params))
        return frozenset({verdict(1.0, 0.0), verdict(1.0, 1.0), verdict(0.0, 1.0),
                          self.assess(params, control).verdict})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        return {"ktiw_uniform_contrast": curves_figure(
            {"subset": results["subset"], "permutation": results["permutation"]},
            ["ktiw_acc", "acc"],
            "Frozen uniform attention: the KTIW probe on subsets and permutations")}
