"""Claims on trained transformers: enough depth with the implicit curriculum learns, and
query-only supervision does not (depth below the bound: :mod:`.shallow`; the order of
emergence: :mod:`.emergence`).

Configurations are CPU-sized at ``quick`` and avoid three known pitfalls: K = 4 chains (chance
1/4 on the query, no single-chain shortcut); a separate query token, so the learning runs use
at least the refined bound + 1 layers (the bound is only necessary, and with a separate query
the refined bound can be a layer higher:
docs/derivations.md#information-flow-game-and-refined-bound); the same step budget for IC and
query-only (training near the bound may need many steps). Runs are shared between the claims
through the cache.

The learning cell at ``quick`` is D = 2 with 4 layers (refined bound 2, so + 2), the smallest
chain with two depths >= 1 to order. Measured on this CPU before choosing it (IC, K = 4, no
distractors): with 3 layers (refined + 1, d_model 64, lr 1e-3, batch 128) 1 of 3 seeds learned
the query in 8000 steps; with 4 layers (d_model 32, lr 3e-3, batch 64) 3 of 4 seeds did within
3000 steps. Every seed that missed sat on the same plateau: every statement token right, the
query at chance (see ``RetrievalTransformer.depth_accuracy``). A profile can add a grid of
(D, layers) cells, IC and query-only, for the heat map (PF1); ``full`` trains only the cells
that decide a claim (the grid would cost more than the claims).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.bounds import RECONSTRUCTION
from attnverify.compare.claims.musat.emergence import HeadsEmergeInSequence
from attnverify.compare.claims.musat.figures import (
    emergence_figure,
    ic_figure,
)
from attnverify.compare.claims.musat.protocols import (
    DECISION_SEEDS,
    IC_MIN_GAP,
    IC_PROTOCOL,
    LEARNED,
    SUFFICIENT_DESIGN,
    SUFFICIENT_PROTOCOL,
)
from attnverify.compare.claims.musat.retrieval_claim import RetrievalClaim
from attnverify.compare.claims.musat.runs import (
    Cell,
    final_query,
    learned,
    retrieval_spec,
)
from attnverify.compare.decision import decide, rate_gain, sequential_verdict
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.sequential import SequentialDesign, Stop
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunResult, RunSpec
from attnverify.empirics.probes.retrieval_metrics import depth_metric

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class SufficientDepthLearns(RetrievalClaim):
    """``musat.sufficient_depth_learns``: with at least the refined bound + 1 layers (a separate
    query token needs the refined bound, and the bound is only necessary: pitfalls b, c of
    §9.2; the profile states the cell) and IC, the query is learned (accuracy >= 0.9).

    Protocol (``SUFFICIENT_PROTOCOL``): per seed, whether the query is learned (a diverged
    seed did not learn); a group-sequential exact binomial design (H0: p <= 0.5, H1: p >= 0.9)
    with looks at ``looks`` seeds, the next block trained only while the design continues.
    The explanation gives the depth-D statement accuracy of the seeds that did not learn (the
    query plateau).

    Changed on 2026-11-25 (docs/methodology.md): the rule was a t-interval over per-seed
    accuracies (learned or stuck, far from normal) that confirmed on the point mean.
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
        return [("deep", True, params["looks"][0])]

    def staged(self, params: dict[str, Any]) -> bool:
        return True

    def followup(self, params: dict[str, Any], results: Sequence[RunResult]) -> list[RunSpec]:
        pending = self.design(params).pending([learned(r) for r in results])
        return [retrieval_spec(params, "deep", True, DECISION_SEEDS + i) for i in pending]

    def seed_plan(self, params: dict[str, Any]) -> str:
        return self.design(params).seed_text()

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        design = self.design(params)
        result = design.decide([learned(r) for r in results])
        runs = list(results[:result.seeds])
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

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        """The first of the seeds the design read (``n_seeds``), with its heads' emergence."""
        if not assessment.n_seeds:
            return {}
        first = results[0]
        return {"emergence": emergence_figure(first, HeadsEmergeInSequence().emerged(first))}


class ImplicitCurriculumNeeded(RetrievalClaim):
    """``musat.implicit_curriculum_needed``: at the same size and steps, query-only supervision
    fails where IC succeeds.

    Protocol (``IC_PROTOCOL``): per seed and arm, whether the query is learned (a diverged IC
    run did not learn; a diverged query-only run is left out: a crash is no evidence that
    query-only supervision fails). Testable where IC learns in at least half of its seeds.
    The exact unconditional test of the two success rates confirms at 0.025 when IC succeeds
    more often; a gap of :data:`IC_MIN_GAP` or more is refuted at 0.10. The paired difference
    of accuracies is reported.

    Changed on 2026-11-25 (docs/methodology.md): the rule was a t-interval of paired accuracy
    differences with point-estimate conditions on each arm.
    """

    id = "musat.implicit_curriculum_needed"
    kind = ClaimKind.PAPER
    protocol = IC_PROTOCOL
    code_version = 3
    statement = ("At the same size and steps, query-only supervision fails where the implicit "
                 "curriculum succeeds.")
    cells = (("deep", True), ("deep", False))

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        ic_runs, q_runs = self.groups(params, results)
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

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        return {"ic_vs_query": ic_figure(self.groups(params, results))}
