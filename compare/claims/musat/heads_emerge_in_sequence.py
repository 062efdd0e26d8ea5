"""``musat.heads_emerge_in_sequence``: under the implicit curriculum, heads emerge one at a
time in a consistent order (Mușat 2024; the measurement is reconstructed [R]: :mod:`.heads`)."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.common import FROZEN, RECONSTRUCTION, SEEDS
from attnverify.compare.claims.musat.figures import attention_figure
from attnverify.compare.claims.musat.heads import HEAD_THRESHOLD, emerged, first_by_role
from attnverify.compare.claims.musat.retrieval_claim import RetrievalClaim
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.empirics.probes.retrieval_metrics import head_metrics

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HEADS_PROTOCOL = Protocol(
    endpoint=("the order of the first emergence of (layer, role) head events under the "
              "implicit curriculum, across seeds (the 'deep' cell)"),
    unit=("per-seed event steps: a head emerges when its best structural score (6 roles, "
          "frozen before the decision seeds) stays >= 0.5 for 3 evaluations; one event per "
          "(layer, role)"),
    h0="roles emerge in no consistent order across seeds, or together",
    h1=("in every seed roles emerge at distinct evaluations, and no two seeds order two "
        "shared roles oppositely by more than one evaluation interval"),
    test="deterministic checks on the emergence steps; no statistical test",
    confirm=("every seed has an emerged role; every pair of seeds shares two (layer, role) "
             "events; no order contradiction; every seed's events at distinct evaluations"),
    refute=("two seeds order two shared (layer, role) events oppositely, each by more than one "
            "evaluation interval"),
    alpha=None, beta=None, frozen=FROZEN,
    error_rates=("deterministic checks on 3 to 15 seeds without an error rate; the thresholds "
                 "(score 0.5, 3 evaluations) are the project's, not calibrated"),
    readout="structural head scores at every evaluation",
    precondition=("a head emerges in every seed that did not diverge, and every pair of seeds "
                  "shares two (layer, role) events to order"),
    secondary=("single-head zero-ablation at the end: the largest per-depth accuracy drop "
               "(reported, not required)", "each seed's best structural score",
               "attention maps of the first seed"),
    seeds=SEEDS,
    weaknesses=("no statistical test and no error rate: a confirmation rests on the shared "
                "roles of each pair of seeds agreeing, which with two shared roles a random "
                "order does half the time per pair; one opposite order refutes",
                "events in the same evaluation make 'one at a time' undecidable there "
                "(inconclusive), not refuted",
                "the paper judged emergence by inspection; the scores, roles and thresholds "
                "are this project's reconstruction [R]"))


class HeadsEmergeInSequence(RetrievalClaim):
    """``musat.heads_emerge_in_sequence``: heads emerge one at a time in a consistent order.

    Emergence [R, §5]: a head's best structural score (attention mass on the statement partner
    (from both tokens, or from one of them only), the same symbol or a neighbouring
    statement of the chain, over the positions that have one) reaches 0.5 and stays for 3
    evaluations. Heads within a layer are interchangeable and often learn one role redundantly,
    so events are (layer, role) at their first emergence. Consistent order: no two roles emerge
    in opposite orders (by more than one evaluation interval) in two seeds. One at a time: the
    roles of a seed emerge at different evaluations. Confirmed when both hold and every pair
    of seeds shares two roles to order; refuted on an order contradiction; not testable without
    emergence or shared roles; roles in the same evaluation cannot be ordered by this grid
    (budget reached). Ablation (zeroing each emerged head at the end, the largest per-depth
    accuracy drop) is reported, not required.
    The roles (:mod:`.heads`) are frozen and decide on fresh seeds; the rule's history:
    docs/methodology.md.
    """

    id = "musat.heads_emerge_in_sequence"
    kind = ClaimKind.PAPER
    protocol = HEADS_PROTOCOL
    code_version = 2
    statement = "Heads emerge one at a time in a consistent order across seeds."
    cells = (("deep", True),)

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        runs = [r for r in self.results_for(params, results)["deep"] if not r.diverged]
        tie = params["eval_every"]
        rows: list[dict[str, Any]] = []
        for r in runs:
            events = emerged(r)
            first = first_by_role(events)
            steps = sorted(first.values())
            scores = [float(r.metric(m.name).max()) for m in head_metrics(r.metrics)
                      if m.role != "self"]
            drops = {}
            if r.final and events:
                base = r.final["depth_acc"]
                for _, layer, head, _ in events:
                    drops[f"{layer}.{head}"] = float(np.max(base - r.final["ablation_zero"]
                                                            [layer, head]))
            rows.append({"seed": r.spec.seed, "best_head_score": max(scores, default=0.0),
                         "first_by_role": {f"L{k[0]} {k[1]}": v for k, v in first.items()},
                         "one_at_a_time": all(b - a >= tie for a, b in
                                              itertools.pairwise(steps)),
                         "max_ablation_drop": max(drops.values(), default=0.0),
                         "ablation_drops": drops, "_first": first})
        contradictions = []
        for a, b in itertools.combinations(rows, 2):
            shared = sorted(set(a["_first"]) & set(b["_first"]))
            for x, y in itertools.combinations(shared, 2):
                da = a["_first"][x] - a["_first"][y]
                db = b["_first"][x] - b["_first"][y]
                if (da > tie and db < -tie) or (da < -tie and db > tie):
                    contradictions.append((a["seed"], b["seed"], x, y))
        comparable = len(rows) >= 2 and all(len(set(a["_first"]) & set(b["_first"])) >= 2
                                            for a, b in itertools.combinations(rows, 2))
        not_single = [str(row["seed"]) for row in rows if not row["one_at_a_time"]]
        weak = [str(row["seed"]) for row in rows if row["max_ablation_drop"] < 0.3]
        reason = None
        if not rows or any(not row["_first"] for row in rows):
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            why = ("no head emerged in some seed: best structural scores "
                   f"{[round(row['best_head_score'], 2) for row in rows]} (threshold "
                   f"{HEAD_THRESHOLD})")
        elif contradictions:
            verdict = Verdict.REFUTED
            why = (f"the order differs between seeds: {contradictions[:3]} (seed, seed, role, "
                   "role) emerge in opposite orders")
        elif not comparable:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            why = "some pair of seeds does not share two roles to order"
        elif not_single:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED
            why = (f"no contradiction between seeds, but in seed(s) {', '.join(not_single)} "
                   f"some roles emerge at the same evaluation, which this grid cannot order")
        else:
            verdict = Verdict.CONFIRMED
            why = "roles emerge one at a time, in the same order in every seed"
        why += (f"; ablation (reported, not decided on): largest single-head drop per seed "
                f"{[round(row['max_ablation_drop'], 2) for row in rows]}"
                + (f", below 0.3 in seed(s) {', '.join(weak)} (redundant heads?)" if weak
                   else ""))
        why += "; " + "; ".join(f"seed {row['seed']}: {row['first_by_role']}" for row in rows)
        for row in rows:
            del row["_first"]
        return Assessment(
            verdict=verdict, reason=reason, theory="one role at a time, fixed order",
            empirical=Measurement(
                float(np.mean([row["max_ablation_drop"] for row in rows])) if rows
                else float("nan"),
                quantity="largest per-depth accuracy drop when zeroing an emerged head"),
            statistic=(f"structural head scores at every evaluation and zero-ablation at the end, "
                       f"{self.describe(params, 'deep', True)}. {RECONSTRUCTION}"),
            tolerance=Tolerance("the spec's protocol (§5, [R]); thresholds are ours",
                                {"emerged": f"score >= {HEAD_THRESHOLD} for 3 evaluations",
                                 "order": f"opposite orders more than {tie} steps apart"}),
            explanation=why, n_seeds=len(rows), details={"seeds": rows})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        """The attention maps of the first seed that did not diverge, its emerged heads
        framed."""
        first = next((r for r in self.results_for(params, results)["deep"]
                      if not r.diverged), None)
        if first is None:
            return {}
        return {"attention_maps": attention_figure(first, emerged(first))}
