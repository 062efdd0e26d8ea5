"""How the §5 family decides: its error rates and smallest rescue, the testability
precondition, the decision on success counts (``rescue_decision``, both claims), and the
assessment ``snell.multihead_rescues_permutations`` makes of it under either of its protocols
(:func:`count_assessment`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

from attnverify.compare.claim import Assessment, Verdict
from attnverify.compare.claims.snell.common import scale_text
from attnverify.compare.decision import Decision, OneSided, decide, rate_gain
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.stats import GroupComparison, compare_groups, rate_difference_test
from attnverify.empirics import RunResult

ALPHA, BETA = 0.025, 0.10
"""One-sided error rates: "confirmed" when the heads do not help, "refuted" when they help by
:data:`MIN_RESCUE`."""
MIN_RESCUE = 0.3
"""The smallest gain in success rate that matters: the paper's single head "frequently
fails" where 8 heads learn, a gain of a third of the runs or more; a smaller one would not
be the rescue the paper reports."""


@dataclass(frozen=True)
class Testability:
    testable: bool
    failures: int
    runs: int
    text: str


def precondition(single_steps: Sequence[int | None],
                 runs: str = "precondition runs") -> Testability:
    """Whether the single head fails in at least a share :data:`MIN_RESCUE` of these
    ``runs`` (else 8 heads cannot gain the smallest rescue that matters)."""
    failures = sum(s is None for s in single_steps)
    n = len(single_steps)
    needed = max(1, math.ceil(MIN_RESCUE * n - 1e-9))
    ok = failures >= needed
    text = (f"a single head fails in {failures} of {n} {runs} (the precondition needs "
            f"{needed}, a share {MIN_RESCUE})")
    if not ok:
        text += (": it learns too reliably here to leave anything for more heads to rescue. "
                 "Testable where a single head fails often: a longer sequence (the paper's "
                 "L = 40) or fewer steps")
    return Testability(ok, failures, n, text)


def rescue_decision(single_steps: Sequence[int | None], multi_steps: Sequence[int | None],
                    budget: int, rescued: str = "1 head", rescuer: str = "more heads"
                    ) -> tuple[Decision, GroupComparison]:
    """The protocol's decision on group A (``rescued``, e.g. one head) against group B
    (``rescuer``): success counts primary (exact unconditional test), the smallest rescue
    refuted at ``BETA``, log-rank and Fisher secondary."""
    cmp = compare_groups(single_steps, multi_steps, budget)
    (k1, km), (n1, nm) = cmp.successes, cmp.n
    primary, refutation = rate_gain(k1, n1, km, nm, MIN_RESCUE,
                                    f"exact test on success counts ({rescuer} more often)")
    secondary = [OneSided(f"log-rank on steps to success ({rescued} slower)",
                          cmp.logrank_p_a_slower, cmp.logrank_p_a_faster),
                 OneSided(f"Fisher on counts ({rescued} less often)", cmp.fisher_p_a_worse,
                          cmp.fisher_p_a_better)]
    return decide(primary, ALPHA, secondary, refutation, BETA,
                  effect=f"{rescuer} learning more often"), cmp


def operating_characteristics(n: int, p_single: float, p_multi: float) -> tuple[float, float]:
    """(P(confirmed), P(refuted)) of the count rule at ``n`` runs per head count and true
    success rates ``p_single``, ``p_multi``, by enumerating every pair of counts (the
    secondary tests left out: a conflict can only turn a decision into inconclusive)."""
    confirm = refute = 0.0
    pmf_a = stats.binom.pmf(np.arange(n + 1), n, p_single)
    pmf_b = stats.binom.pmf(np.arange(n + 1), n, p_multi)
    for a in range(n + 1):
        for b in range(n + 1):
            if rate_difference_test(a, n, b, n, 0.0, "greater") < ALPHA:
                confirm += pmf_a[a] * pmf_b[b]
            elif rate_difference_test(a, n, b, n, MIN_RESCUE, "less") < BETA:
                refute += pmf_a[a] * pmf_b[b]
    return float(confirm), float(refute)


@dataclass(frozen=True)
class SuccessCount:
    """How a protocol of ``snell.multihead_rescues_permutations`` counts a success: the steps
    of success of runs, the criterion in words, and whether the decision first checks that
    single random heads fail (§5; the direct protocol checks its calibration runs before
    its decision runs)."""

    steps: Callable[[Sequence[RunResult]], list[int | None]]
    text: Callable[[dict[str, Any]], str]
    checks_single_heads: bool


def count_assessment(params: dict[str, Any], success: SuccessCount, single: list[RunResult],
                     multi: list[RunResult], name_a: str, name_b: str,
                     details: dict[str, Any], note: str = "") -> Assessment:
    """``snell.multihead_rescues_permutations``' decision on the success counts of ``single``
    against ``multi`` (``rescue_decision``), after the §5 precondition where ``success``
    asks for it."""
    heads = params["heads"]
    theory = f"{heads} heads learn more often"
    if not (single and multi):
        return Assessment(
            verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE, theory=theory,
            empirical=Measurement(float("nan")), statistic=f"{name_a} vs {name_b}",
            tolerance=Tolerance("nothing to compare", {"alpha": ALPHA}),
            explanation=f"nothing to compare: {name_a} vs {name_b}." + note,
            details=details)
    steps_a, steps_b = success.steps(single), success.steps(multi)
    if success.checks_single_heads:
        testable = precondition(steps_a, "single random heads' runs")
        if not testable.testable:
            return Assessment(
                verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE, theory=theory,
                empirical=Measurement(None), statistic=f"single-head failures, {name_a}",
                tolerance=Tolerance("the testability precondition of the protocol",
                                    {"min_failure_share": MIN_RESCUE}),
                explanation=testable.text + "." + note, details=details)
    decision, cmp = rescue_decision(steps_a, steps_b, params["steps"])
    (k1, km), (n1, nm) = cmp.successes, cmp.n
    m1, mm = (("never" if m is None else f"{m:.0f}") for m in cmp.median_steps)
    explanation = (f"{name_a}: {k1}/{n1} learned, median step {m1}; {name_b}: {km}/{nm}, "
                   f"median {mm} (Kaplan-Meier). {decision.text}")
    return Assessment(
        verdict=decision.verdict, reason=decision.reason, p_value=decision.p_value,
        refuting_p=decision.refuting_p, theory=theory,
        empirical=Measurement(km / nm - k1 / n1,
                              quantity=f"success rate, {heads} heads minus 1 head",
                              extras={f"rate_{heads}_heads": km / nm, "rate_1_head": k1 / n1,
                                      "median_steps": list(cmp.median_steps)}),
        statistic=(f"success ({success.text(params)}) on permutations, GRU, "
                   f"{params['protocol']} protocol: {name_a} vs {name_b} "
                   f"({scale_text(params)})"),
        tolerance=Tolerance("exact unconditional test of the success rates (protocol)",
                            {"alpha": ALPHA, "beta": BETA, "min_rescue": MIN_RESCUE}),
        explanation=explanation + note, n_seeds=n1 + nm,
        details={"test": asdict(cmp), **details})
