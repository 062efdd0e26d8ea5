"""``musat.implicit_curriculum_needed``: at the same size and steps, query-only supervision
fails where the implicit curriculum succeeds (the retrieval runs: :mod:`.runs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.common import (
    BUDGET,
    FINAL,
    FROZEN,
    LEARNED,
    RECONSTRUCTION,
    SEEDS,
)
from attnverify.compare.claims.musat.figures import ic_figure
from attnverify.compare.claims.musat.retrieval_claim import RetrievalClaim
from attnverify.compare.claims.musat.runs import final_query, learned
from attnverify.compare.decision import decide, rate_gain
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason

if TYPE_CHECKING:
    from matplotlib.figure import Figure

IC_MIN_GAP = 0.5
"""The smallest gap in success rate (IC minus query-only) that reads as 'query-only fails
where IC succeeds'."""

IC_PROTOCOL = Protocol(
    endpoint=("the success rate (final query >= 0.9) under the implicit curriculum against "
              "query-only supervision, at the same cell, size and budget (the 'deep' cell)"),
    unit=("per-seed success indicator per arm (a diverged IC run is a failed seed; a diverged "
          "query-only run is left out: a crash is no evidence that query-only fails)"),
    h0="IC succeeds no more often than query-only",
    h1=f"IC succeeds more often by at least {IC_MIN_GAP} in rate",
    test=("exact unconditional test of the difference of two rates (Suissa-Shuster, "
          "supremum over the nuisance rate)"),
    confirm="p (IC rate - query-only rate <= 0) < 0.025",
    refute=f"p (IC rate - query-only rate >= {IC_MIN_GAP}) < 0.10",
    alpha=0.025, beta=0.10, readout=FINAL, frozen=FROZEN,
    precondition="IC learns in at least half of its seeds (else 'fails where IC succeeds' "
                 "cannot be judged)",
    secondary=("the paired difference of final query accuracies (mean)",
               "query accuracy curves of both arms (figure)"),
    seeds=SEEDS,
    weaknesses=("3 seeds per arm at quick: only 3 of 3 against 0 of 3 can confirm", BUDGET,
                "'fails' is 'not learned' (final query below 0.9), not 'near chance': a "
                "query-only run at 0.85 counts as failing (the explanation lists the "
                "query-only accuracies)",
                "the curriculum supervises 2 K D + 1 positions per example against 1 for "
                "query-only (17 at quick, 25 at full): the arms differ in the amount of "
                "supervision as well as in its order, and no arm of matched supervision is "
                "trained",
                "the precondition is measured on the IC runs that also decide: where IC "
                "learns in fewer than half, a refutation the counts would give is reported "
                "as not testable"))


def supervision_note(task: Any) -> str:
    """How much more the curriculum supervises than query-only: every chain position (both
    tokens of each of the K D statements, with ``ic_scope="all"``) and the query, 2 K D + 1
    positions per example, against the query alone."""
    positions = 2 * task.K * task.D + 1
    bound = "" if getattr(task, "ic_scope", "all") == "all" else "up to "
    return (f"The arms differ in the amount of supervision as well: the curriculum supervises "
            f"{bound}{positions} positions per example (2 K D + 1 at K = {task.K}, D = "
            f"{task.D}) against 1 for query-only, and no arm of matched supervision is "
            f"trained, so a difference does not tell the curriculum from the extra targets")


class ImplicitCurriculumNeeded(RetrievalClaim):
    """``musat.implicit_curriculum_needed``: at the same size and steps, query-only supervision
    fails where IC succeeds.

    Protocol (``IC_PROTOCOL``): per seed and arm, whether the query is learned (a diverged IC
    run did not learn; a diverged query-only run is left out: a crash is no evidence that
    query-only supervision fails). Testable where IC learns in at least half of its seeds.
    The exact unconditional test of the two success rates confirms at 0.025 when IC succeeds
    more often; a gap of :data:`IC_MIN_GAP` or more is refuted at 0.10. The paired difference
    of accuracies is reported. The rule's history: docs/methodology.md.
    """

    id = "musat.implicit_curriculum_needed"
    kind = ClaimKind.PAPER
    protocol = IC_PROTOCOL
    code_version = 3
    statement = ("At the same size and steps, query-only supervision fails where the implicit "
                 "curriculum succeeds.")
    cells = (("deep", True), ("deep", False))
    """The groups "deep" (IC) and "deep_query_only"."""

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        results = self.results_for(params, results)
        ic_runs, q_runs = results["deep"], results["deep_query_only"]
        ic = [learned(r) for r in ic_runs]
        query_only = [final_query(r) >= LEARNED for r in q_runs if not r.diverged]
        k_ic, k_q = sum(ic), sum(query_only)
        n_ic, n_q = len(ic), len(query_only)
        diffs = [(0.0 if a.diverged else final_query(a)) - final_query(b)
                 for a, b in zip(ic_runs, q_runs, strict=True) if not b.diverged]
        q_accs = ", ".join(f"{final_query(r):.2f}" for r in q_runs if not r.diverged)
        why = (f"IC learned in {k_ic} of {n_ic} seeds, query-only in {k_q} of {n_q} (final "
               f"query accuracy {q_accs or 'none'}; below {LEARNED} counts as failing), at "
               f"{self.describe(params, 'deep', True)}; mean paired accuracy difference "
               f"{np.mean(diffs) if diffs else float('nan'):+.3f} (reported)")
        if n_q < len(q_runs):
            why += f"; {len(q_runs) - n_q} diverged query-only run(s) left out"
        if ic_runs:
            why += f". {supervision_note(ic_runs[0].spec.task)}"
        if not n_ic or not n_q or 2 * k_ic < n_ic:
            return Assessment(
                verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE,
                theory="IC learns, query-only does not",
                empirical=Measurement(None), statistic=f"seeds that learn per arm. "
                                                      f"{RECONSTRUCTION}",
                tolerance=Tolerance("the protocol's precondition", {"learned": LEARNED}),
                explanation=(f"not testable here: IC itself learns in fewer than half of its "
                             f"seeds, so 'fails where IC succeeds' cannot be judged (a longer "
                             f"budget would make it testable). {why}"),
                n_seeds=n_ic)
        primary, refutation = rate_gain(k_q, n_q, k_ic, n_ic, IC_MIN_GAP,
                                        "exact test on success counts (IC more often)")
        d = decide(primary, 0.025, refutation=refutation, beta=0.10,
                   effect="IC learning more often than query-only")
        return Assessment(
            verdict=d.verdict, reason=d.reason, p_value=d.p_value,
            refuting_p=d.refuting_p,
            theory="IC learns, query-only does not",
            empirical=Measurement(k_ic / n_ic - k_q / n_q,
                                  quantity="success rate, IC minus query-only",
                                  at="final query >= 0.9"),
            statistic=f"seeds that learn per arm, {n_ic} IC and {n_q} query-only. "
                      f"{RECONSTRUCTION}",
            tolerance=Tolerance("exact unconditional test of two rates",
                                {"learned": LEARNED, "min_gap": IC_MIN_GAP, "alpha": 0.025,
                                 "beta": 0.10}),
            explanation=f"{why}. {d.text}", n_seeds=n_ic + n_q,
            details={"ic_learned": ic, "query_only_learned": query_only,
                     "paired_accuracy_diff": diffs})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        results = self.results_for(params, results)
        return {"ic_vs_query": ic_figure([results["deep"], results["deep_query_only"]])}
