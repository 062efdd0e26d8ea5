"""The per-seed evidence of a cell below the depth bound (Mușat 2024, Theorem 1 in training;
``musat.shallow_models_fail`` and the past-bound cell of ``musat.depth_step_at_refined_bound``)
and its sequential decision (with, for the depth step, the verdict of its two cells).

Below the bound the query stays near chance, and that says something about depth only where
the model learned what its layers allow (the statement depths both bounds let it bring home,
``runs.allowed_depths``): a model that learned nothing at the budget stays near chance whatever
the bound. So each seed has one of three outcomes: it **supports** (learned the allowed depths,
query near chance), **contradicts** (query above chance, whatever it learned: the bound allows
no model that) or is **untrained** (did not learn the allowed depths, query near chance:
evidence neither way).

The decision (rule of 2026-11-28, docs/methodology.md): the group-sequential exact binomial
design runs on the supporting seeds, an untrained seed counting as no support; it confirms at
its efficacy boundary. At its futility boundary it refutes only where the seeds that do not
contradict are also at or below that boundary (untrained ones counted as support); otherwise
the untrained seeds stopped it and the cell is not testable at this budget. Error rates (derived
here): with q the rate of near chance among trained seeds, H0 q <= 0.5 gives a per-seed support
rate <= 0.5, so a confirmation keeps the design's alpha, whatever share stays untrained; H1,
near chance in 95% of the seeds or more (trained or not), gives a per-seed rate of not
contradicting >= 0.95, so a refutation has probability at most the sum over looks of
P(Bin(n_k, 0.95) <= futility_k) (0.025 at full's looks of 8 and 12). Untrained seeds cost
power, never error rate. A verdict left 'not testable at this budget' is final for these
seeds: a longer budget is a new test, on fresh seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from attnverify.compare.claim import Verdict
from attnverify.compare.claims.musat.runs import (
    allowed_depths,
    final_query,
    learned_depths,
    near_chance,
)
from attnverify.compare.protocol import Reason
from attnverify.compare.sequential import LookResult, SequentialDesign, Stop
from attnverify.empirics import RunResult


class Outcome(StrEnum):
    """One seed below the bound (module docstring)."""

    SUPPORTS = "learned the allowed depths, query near chance"
    CONTRADICTS = "query above chance"
    UNTRAINED = "did not learn the allowed depths, query near chance"


def outcome(run: RunResult, D: int, layers: int, K: int, eval_size: int) -> Outcome:
    """The outcome of one finished (not diverged) run of the cell (D, ``layers``)."""
    if not near_chance(final_query(run), K, eval_size):
        return Outcome.CONTRADICTS
    if learned_depths(run, allowed_depths(layers, D)):
        return Outcome.SUPPORTS
    return Outcome.UNTRAINED


def finished_outcomes(runs: Sequence[RunResult], D: int, layers: int, K: int,
                      eval_size: int) -> list[Outcome]:
    """The outcome of each run of ``runs`` that finished (did not diverge), in their order."""
    return [outcome(r, D, layers, K, eval_size) for r in runs if not r.diverged]


@dataclass(frozen=True)
class BelowBoundDecision:
    """The design's look on the supporting seeds and what it means for the claim."""

    look: LookResult
    """The design walked over 'supports' (untrained counts as no support)."""
    refuted: bool
    """A futility stop that the contradicting seeds carry on their own."""
    lenient_count: int
    """At the stopping look: the seeds that do not contradict (untrained counted as support)."""

    @property
    def untrained_stop(self) -> bool:
        """Futility reached only through untrained seeds: the cell is not testable here."""
        return self.look.stop is Stop.FUTILITY and not self.refuted

    @property
    def confirmed(self) -> bool:
        return self.look.stop is Stop.EFFICACY


def decide_below_bound(design: SequentialDesign,
                       outcomes: Sequence[Outcome]) -> BelowBoundDecision:
    """The rule of the module docstring, over ``outcomes`` in seed order."""
    look = design.decide([o is Outcome.SUPPORTS for o in outcomes])
    lenient = sum(o is not Outcome.CONTRADICTS for o in outcomes[:look.seeds])
    refuted = (look.stop is Stop.FUTILITY
               and lenient <= design.boundaries()[1][look.look - 1])
    return BelowBoundDecision(look, refuted, lenient)


def pending(design: SequentialDesign, outcomes: Sequence[Outcome]) -> range:
    """The seed indices still to train: the next look's block while the design on the
    supporting seeds continues."""
    return design.pending([o is Outcome.SUPPORTS for o in outcomes])


def outcome_counts(outcomes: Sequence[Outcome]) -> str:
    """'S support, C contradict, U untrained', for explanations."""
    n = {o: sum(x is o for x in outcomes) for o in Outcome}
    return (f"{n[Outcome.SUPPORTS]} learned the allowed statement depths and stayed near "
            f"chance, {n[Outcome.CONTRADICTS]} rose above chance, {n[Outcome.UNTRAINED]} did "
            f"not learn the allowed depths and stayed near chance (evidence neither way)")


def decision_text(design: SequentialDesign, decision: BelowBoundDecision) -> str:
    """The look against its boundaries, and why a futility stop did or did not refute."""
    text = design.look_text(decision.look)
    if decision.look.stop is Stop.FUTILITY:
        futility = design.boundaries()[1][decision.look.look - 1]
        text += (f"; {decision.lenient_count} of {decision.look.seeds} seeds do not contradict "
                 f"(refute only at <= {futility}: "
                 + ("the contradicting seeds alone refute)" if decision.refuted else
                    "the untrained seeds, not the contradicting ones, stopped the design)"))
    return text


def step_verdict(learn: LookResult, fail: BelowBoundDecision) -> tuple[Verdict, Reason]:
    """The verdict of a step of the bound (``musat.depth_step_at_refined_bound``): its cell
    at the bound must learn (``learn``, a look of its design), its cell past the bound is
    decided by :func:`decide_below_bound` (``fail``). Intersection-union: both at efficacy
    confirm, either refuting refutes (past the bound: a futility stop the contradicting seeds
    carry); a futility stop past the bound that only untrained seeds cause leaves the claim
    not testable at this budget; else an interim look while either side's next block is
    missing, or the seeds ran out before both decided."""
    if learn.stop is Stop.EFFICACY and fail.confirmed:
        return Verdict.CONFIRMED, Reason.DECIDED
    if learn.stop is Stop.FUTILITY or fail.refuted:
        return Verdict.REFUTED, Reason.DECIDED
    if fail.untrained_stop:
        return Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
    if Stop.CONTINUE in (learn.stop, fail.look.stop):
        return Verdict.INCONCLUSIVE, Reason.INTERIM
    return Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED
