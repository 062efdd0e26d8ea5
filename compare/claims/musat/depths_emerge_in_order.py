"""``musat.depths_emerge_in_order``: under the implicit curriculum, the statement depths are
learned in increasing order (Mușat 2024; the measurement is reconstructed [R])."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.common import FROZEN, LEARNED, RECONSTRUCTION, SEEDS
from attnverify.compare.claims.musat.figures import crossings_figure
from attnverify.compare.claims.musat.retrieval_claim import CELL_NOT_RUN, RetrievalClaim
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.empirics.probes.retrieval_metrics import depth_metric

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ORDER_PROTOCOL = Protocol(
    endpoint=("the order in which the per-depth accuracies of depths >= 1 first reach 0.9 under "
              "the implicit curriculum (the 'deep' cell)"),
    unit="per seed: the first crossing step of each learned depth >= 1",
    h0="some deeper depth is learned before a shallower one",
    h1="in every seed the learned depths >= 1 cross in increasing order",
    test="per-seed check of the crossing steps; no statistical test",
    confirm=("every seed learns every depth 1..D, each at a later evaluation than the depth "
             "before"),
    refute=("a seed in which a deeper depth first reaches 0.9 at an earlier evaluation than a "
            "shallower one (a depth never learned counts as later than any learned one)"),
    alpha=None, beta=None, frozen=FROZEN,
    error_rates=("a deterministic rule without an error rate; a confirmation needs every seed "
                 "to order all D >= 3 depths, which a random order passes with probability "
                 "1/D! (1/6 at D = 3) per seed"),
    readout="the first evaluation at which acc_depth{k} >= 0.9 (no hold), k = 1..D",
    precondition=("D >= 3 (an order of depths beyond a single pair); two depths crossing at "
                  "the same evaluation are a tie and depths not all learned leave the order "
                  "incomplete, both inconclusive (budget reached)"),
    secondary=("depth 0's crossing step (the token itself, learned at once)",
               "fraction of seeds in order"),
    seeds=SEEDS,
    weaknesses=("no statistical test: every seed ordered confirms, one inversion refutes",
                "a crossing is one evaluation at >= 0.9 (no hold), so a transient spike can "
                "make an inversion",
                "0.9 is the spec's example threshold, not calibrated",
                "at quick D = 2: not testable there"))


class DepthsEmergeInOrder(RetrievalClaim):
    """``musat.depths_emerge_in_order``: under IC, per-depth accuracy crosses 0.9 in increasing
    order of depth, for the depths >= 1 that are learned (depth 0, the token itself, is
    learned at once and proves nothing).

    Protocol (``ORDER_PROTOCOL``): testable where D >= 3 (an order beyond one pair). Refuted
    when a seed learns a deeper depth at an earlier evaluation than a shallower one (a depth
    never learned counts as later than every learned one); confirmed when every seed learns
    every depth 1..D, each at a later evaluation than the depth before; two depths crossing
    at the same evaluation are a tie the grid cannot order, and depths not all learned leave
    the order incomplete: inconclusive (budget reached).
    The rule's history: docs/methodology.md.
    """

    id = "musat.depths_emerge_in_order"
    not_run_note = (f"{CELL_NOT_RUN}; quick's D = 2 could not test the claim anyway (it orders "
                    f"one pair of depths, which a random order passes half the time)")
    kind = ClaimKind.PAPER
    protocol = ORDER_PROTOCOL
    code_version = 2
    statement = ("Under the implicit curriculum, per-depth accuracy crosses its threshold in "
                 "increasing order of depth.")
    cells = (("deep", True),)

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        D = params["deep"][0]
        tie = params["eval_every"]
        runs = [r for r in self.results_for(params, results)["deep"] if not r.diverged]
        rows = []
        for r in runs:
            steps = [r.first_step_reaching({depth_metric(k): LEARNED}) for k in range(D + 1)]
            # depth 0 is the token itself (learned at once): only depths >= 1 test an order;
            # a depth never learned crosses "after the budget", later than any that is
            at = [float("inf") if s is None else s for s in steps]
            pairs = [(a, b) for a in range(1, D + 1) for b in range(a + 1, D + 1)
                     if np.isfinite(at[a]) or np.isfinite(at[b])]
            rows.append({"seed": r.spec.seed, "crossing_steps": steps,
                         "learned_depths": sum(s is not None for s in steps[1:]),
                         "inversions": [(a, b) for a, b in pairs if at[b] < at[a]],
                         "ties": [(a, b) for a, b in pairs if at[b] == at[a]]})
        why = "; ".join(f"seed {row['seed']}: depth crossings {row['crossing_steps']}"
                        for row in rows)
        reason = None
        if any(row["inversions"] for row in rows):
            verdict = Verdict.REFUTED
            why += " -- a deeper depth is learned before a shallower one"
        elif D < 3:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            why = (f"not testable here: D = {D} orders at most one pair of depths >= 1, which a "
                   f"random order passes half the time; D >= 3 (the full profile) orders "
                   f"three or more. Measured anyway: {why}")
        elif not rows or any(row["learned_depths"] < D for row in rows):
            verdict, reason = Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED
            why += (f" -- not every depth 1..{D} is learned in every seed within the budget, "
                    f"so the order is incomplete (a longer budget would complete it)")
        elif any(row["ties"] for row in rows):
            verdict, reason = Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED
            why += (f" -- two depths cross at the same evaluation, which this grid ({tie} "
                    f"steps) cannot order (a finer evaluation near the crossings would)")
        else:
            verdict = Verdict.CONFIRMED
        return Assessment(
            verdict=verdict, theory="depth 0, then 1, ..., then D", reason=reason,
            empirical=Measurement(sum(not row["inversions"] for row in rows) / max(len(rows), 1),
                                  quantity="fraction of seeds with depths in order"),
            statistic=(f"first step with per-depth accuracy >= {LEARNED}, "
                       f"{self.describe(params, 'deep', True)}. {RECONSTRUCTION}"),
            tolerance=Tolerance("crossings are only seen at evaluation steps",
                                {"resolution": f"{tie} steps (one evaluation interval)"}),
            explanation=why, n_seeds=len(rows), details={"seeds": rows})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        """Each assessed seed's per-depth accuracy around its crossings (the runs that did not
        diverge, in the order of ``details["seeds"]``)."""
        runs = [r for r in self.results_for(params, results)["deep"] if not r.diverged]
        rows = assessment.details.get("seeds", [])
        if not runs or len(runs) != len(rows):
            return {}
        return {"crossings": crossings_figure(runs, rows)}
