"""``musat.sufficient_depth_learns``: with enough layers and the implicit curriculum, trained
transformers learn the query (the retrieval runs: :mod:`.runs`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.common import (
    BUDGET,
    DECISION_SEEDS,
    FINAL,
    FROZEN,
    LEARNED,
    RECONSTRUCTION,
    SEEDS,
    SUFFICIENT_DESIGN,
)
from attnverify.compare.claims.musat.figures import emergence_figure
from attnverify.compare.claims.musat.heads import emerged
from attnverify.compare.claims.musat.retrieval_claim import (
    RetrievalClaim,
    cell_runs,
    look_group,
)
from attnverify.compare.claims.musat.runs import Cell, final_query, learned, retrieval_spec
from attnverify.compare.decision import design_verdicts, sequential_verdict
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.sequential import SequentialDesign, Stop
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunSpec
from attnverify.empirics.probes.retrieval_metrics import depth_metric

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SUFFICIENT_PROTOCOL = Protocol(
    endpoint=("whether the query is learned (final accuracy >= 0.9) under the implicit "
              "curriculum with at least the refined bound + 1 layers (the 'deep' cell), per "
              "seed"),
    unit="per-seed success indicator (a diverged run is a failed seed)",
    h0="a seed learns with probability <= 0.5", h1="it learns with probability >= 0.9",
    test=("group-sequential exact binomial design, O'Brien-Fleming-type spending, binding "
          "futility; looks at 5, 10 and 15 seeds (full); quick's single look at 3 seeds "
          "cannot confirm (the full profile decides)"),
    confirm="the count of learned seeds reaches a look's efficacy boundary",
    refute="it falls to a look's futility boundary (p >= 0.9 rejected)",
    alpha=0.025, beta=0.10, readout=FINAL, frozen=FROZEN,
    precondition="the cell has at least the refined bound + 1 layers",
    secondary=("the mean final query accuracy", "the depth-D statement accuracy of the seeds "
               "that did not learn (the query plateau)"),
    seeds=SEEDS,
    weaknesses=("one cell per profile: 'enough layers' is tested at a single D", BUDGET,
                "quick cannot confirm: 3 seeds of about 85 s each are what the quick budget "
                "affords"))


class SufficientDepthLearns(RetrievalClaim):
    """``musat.sufficient_depth_learns``: with at least the refined bound + 1 layers (a separate
    query token needs the refined bound, and the bound is only necessary: pitfalls b, c of
    §9.2; the profile states the cell) and IC, the query is learned (accuracy >= 0.9).

    Protocol (``SUFFICIENT_PROTOCOL``): per seed, whether the query is learned (a diverged
    seed did not learn); a group-sequential exact binomial design (H0: p <= 0.5, H1: p >= 0.9)
    with looks at ``looks`` seeds, the next block trained only while the design continues.
    The explanation gives the depth-D statement accuracy of the seeds that did not learn (the
    query plateau). The rule's history: docs/methodology.md.
    """

    id = "musat.sufficient_depth_learns"
    kind = ClaimKind.PAPER
    protocol = SUFFICIENT_PROTOCOL
    code_version = 2
    statement = ("With enough layers (at least the refined bound + 1, for the separate query "
                 "token) and the implicit curriculum, the query is learned.")
    cells = (("deep", True),)

    @staticmethod
    def design(params: dict[str, Any]) -> SequentialDesign:
        return SequentialDesign(tuple(params["looks"]), **SUFFICIENT_DESIGN)

    def check_params(self, params: dict[str, Any]) -> None:
        super().check_params(params)
        self.design(params)

    def plan(self, params: dict[str, Any]) -> list[tuple[Cell, bool, int]]:
        """The first look's seeds of the deep cell (group "deep"); later looks follow."""
        return [("deep", True, params["looks"][0])]

    def staged(self, params: dict[str, Any]) -> bool:
        return True

    def followup(self, params: dict[str, Any], results: GroupedResults
                 ) -> dict[str, list[RunSpec]]:
        """The next look's seeds while the design continues (:func:`look_group`)."""
        results = self.results_for(params, results)
        design = self.design(params)
        pending = design.pending([learned(r) for r in cell_runs(results, "deep")])
        if not pending:
            return {}
        return {look_group("deep", design, pending):
                [retrieval_spec(params, "deep", True, DECISION_SEEDS + i) for i in pending]}

    def seed_plan(self, params: dict[str, Any]) -> str:
        return self.design(params).seed_text()

    def reachable_verdicts(self, params: dict[str, Any]) -> frozenset[Verdict]:
        """The design's: its verdict is the sequential stop (:func:`design_verdicts`)."""
        return design_verdicts(self.design(params))

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        results = self.results_for(params, results)
        design = self.design(params)
        seeds = cell_runs(results, "deep")
        result = design.decide([learned(r) for r in seeds])
        runs = seeds[:result.seeds]
        D, layers = params["deep"][:2]
        refined = theory.musat.min_layers_refined_value(D)
        accs = [0.0 if r.diverged else final_query(r) for r in runs]
        why = (f"{layers} layers for D = {D} (paper bound {theory.musat.min_layers_value(D)}, "
               f"refined {refined}, so refined {layers - refined:+d}): {result.successes} of "
               f"{result.seeds} seeds learned the query (>= {LEARNED}) after {params['steps']} "
               f"steps")
        if result.look:
            why += f"; {design.look_text(result)}"
        plateau = [round(float(r.metrics[depth_metric(D)][-1]), 2) for r in runs
                   if depth_metric(D) in r.metrics and not learned(r)]
        if plateau:
            why += (f" (the others' depth-{D} statement accuracy at the end: {plateau}; a seed "
                    "with every statement right and the query at chance has learned the chain "
                    "but not the separate query token's extra read)")
        if diverged := sum(r.diverged for r in runs):
            why += f"; {diverged} diverged run(s) counted as failed seeds"
        if layers < refined + 1:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            why = f"not testable here: {layers} layers are fewer than the refined bound + 1. {why}"
        elif result.look == 0:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
        else:
            verdict, reason = sequential_verdict(result.stop)
        n = result.seeds
        lo, hi = binomial_ci(result.successes, n) if n else (float("nan"), float("nan"))
        return Assessment(
            verdict=verdict, reason=reason,
            p_value=design.p_value(result) if result.look and result.stop is not Stop.CONTINUE
            and reason is not Reason.NOT_TESTABLE else None,
            theory=f"p >= {SUFFICIENT_DESIGN['p1']} of seeds learn",
            empirical=Measurement(result.successes / n if n else None, ci=[lo, hi],
                                  confidence=0.95, quantity="fraction of seeds that learn",
                                  at=self.describe(params, "deep", True),
                                  extras={"mean_query_acc": float(np.mean(accs)) if accs
                                          else None}),
            statistic=f"seeds that learn the query, over {n} seeds. {RECONSTRUCTION}",
            tolerance=Tolerance("the spec's success threshold; exact group-sequential design",
                                {"learned": LEARNED, **SUFFICIENT_DESIGN}),
            explanation=why, n_seeds=n, details={"query_acc": accs, "look": result.look})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        """The first of the seeds the design read (``n_seeds``), with its heads' emergence."""
        if not assessment.n_seeds:
            return {}
        first = cell_runs(self.results_for(params, results), "deep")[0]
        return {"emergence": emergence_figure(first, emerged(first))}
