"""From test results to a verdict with its reason (docs/methodology.md, "Protocols").

The primary test decides; secondary tests never decide, but two tests significant in opposite
directions give ``inconclusive`` with the reason ``conflicting evidence`` instead of whichever
was checked first. The secondary tests given to :func:`decide` are other tests of the same
hypothesis (Fisher beside the log-rank test on "A is worse"); a statistic of another endpoint
is reported by the claim and not given here. ``confirmed`` needs the primary test toward H1
below ``alpha``; ``refuted`` needs the refutation test (of the smallest effect that matters,
at ``beta``) or, where a protocol has none, the primary test significant the other way at
``alpha``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import stats

from attnverify.compare.claim import Assessment, Verdict
from attnverify.compare.protocol import Reason
from attnverify.compare.sequential import SequentialDesign, Stop
from attnverify.compare.stats import GroupComparison, rate_difference_test


@dataclass(frozen=True)
class OneSided:
    """A test's one-sided p-values: toward the claim's H1 and the opposite way."""

    name: str
    p_h1: float
    p_opposite: float


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: Reason
    text: str
    p_value: float
    """The primary test's one-sided p-value toward H1."""
    refuting_p: float | None = None
    """For a refutation, the one-sided p-value of the test that refuted: the refutation test
    (the effect smaller than the smallest that matters), or the primary test the other way."""

    def __post_init__(self) -> None:  # a sentence of its own in an explanation
        object.__setattr__(self, "text", self.text[:1].upper() + self.text[1:])


def decide(primary: OneSided, alpha: float, secondary: Sequence[OneSided] = (),
           refutation: float | None = None, beta: float | None = None,
           effect: str = "the effect") -> Decision:
    """The verdict of a protocol (module docstring). ``refutation`` is the p-value of the
    test that the effect is smaller than the smallest that matters (compared with ``beta``);
    None: refuting needs the primary test significant in the opposite direction."""
    if (refutation is None) != (beta is None):
        raise ValueError("give both refutation and beta, or neither")
    tests = [primary, *secondary]
    shown = "; ".join(f"{t.name}: p = {t.p_h1:.3g} toward H1, {t.p_opposite:.3g} the other way"
                      for t in tests)
    for_h1 = primary.p_h1 < alpha
    refuted = (refutation < beta if refutation is not None and beta is not None
               else primary.p_opposite < alpha)
    refute_text = (f"the refutation test (smaller than the smallest effect that matters) "
                   f"p = {refutation:.3g} < beta = {beta}" if refutation is not None
                   else f"{primary.name} is significant the other way (p = "
                        f"{primary.p_opposite:.3g} < {alpha})")
    against = [t.name for t in tests if t.p_opposite < alpha]
    toward = [t.name for t in tests if t.p_h1 < alpha]
    if for_h1 and refuted:
        return Decision(Verdict.INCONCLUSIVE, Reason.CONFLICTING,
                        f"{effect} is significant ({primary.name} p = {primary.p_h1:.3g} < "
                        f"{alpha}) but {refute_text}: an effect smaller than the smallest "
                        f"that matters. {shown}.", primary.p_h1)
    if for_h1 and against:
        return Decision(Verdict.INCONCLUSIVE, Reason.CONFLICTING,
                        f"{primary.name} supports {effect} (p = {primary.p_h1:.3g} < {alpha}) "
                        f"but {', '.join(against)} is significant the other way. {shown}.",
                        primary.p_h1)
    if refuted and toward:
        return Decision(Verdict.INCONCLUSIVE, Reason.CONFLICTING,
                        f"{refute_text}, but {', '.join(toward)} is significant toward "
                        f"{effect}. {shown}.", primary.p_h1)
    if for_h1:
        return Decision(Verdict.CONFIRMED, Reason.DECIDED,
                        f"{primary.name} supports {effect} (p = {primary.p_h1:.3g} < {alpha}). "
                        f"{shown}.", primary.p_h1)
    if refuted:
        return Decision(Verdict.REFUTED, Reason.DECIDED, f"{refute_text}. {shown}.",
                        primary.p_h1, refutation if refutation is not None
                        else primary.p_opposite)
    return Decision(Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED,
                    f"the primary test ({primary.name}) decides neither way at these seeds. "
                    f"{shown}.", primary.p_h1)


def time_test(cmp: GroupComparison, subject: str = "A") -> OneSided:
    """The log-rank test of :func:`~attnverify.compare.stats.compare_groups` as a test of
    "``subject`` learns later or never" (H1 direction: slower)."""
    return OneSided(f"log-rank on steps to success ({subject} slower)", cmp.logrank_p_a_slower,
                    cmp.logrank_p_a_faster)


def count_test(cmp: GroupComparison, subject: str = "A") -> OneSided:
    """Fisher's exact test of :func:`~attnverify.compare.stats.compare_groups` as a test of
    "``subject`` succeeds less often" (H1 direction: fewer successes)."""
    return OneSided(f"Fisher exact on success counts ({subject} less often)",
                    cmp.fisher_p_a_worse, cmp.fisher_p_a_better)


def sequential_verdict(stop: Stop) -> tuple[Verdict, Reason]:
    """The verdict and reason of a sequential design's stop (:mod:`compare.sequential`):
    efficacy confirms, futility refutes, the last look between the boundaries is
    inconclusive for want of seeds, and an earlier look between them whose next block is
    missing is an interim look (inconclusive until that block trains)."""
    return {Stop.EFFICACY: (Verdict.CONFIRMED, Reason.DECIDED),
            Stop.FUTILITY: (Verdict.REFUTED, Reason.DECIDED),
            Stop.CONTINUE: (Verdict.INCONCLUSIVE, Reason.INTERIM)}.get(
        stop, (Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED))


def rate_gain(k_a: int, n_a: int, k_b: int, n_b: int, min_gain: float,
              name: str) -> tuple[OneSided, float]:
    """B succeeding more often than A as a primary test (the exact unconditional test of
    :func:`~attnverify.compare.stats.rate_difference_test`, both ways) and the p-value that
    refutes a gain of ``min_gain`` or more (for :func:`decide`'s ``refutation``)."""
    test = OneSided(name, rate_difference_test(k_a, n_a, k_b, n_b, 0.0, "greater"),
                    rate_difference_test(k_a, n_a, k_b, n_b, 0.0, "less"))
    return test, rate_difference_test(k_a, n_a, k_b, n_b, min_gain, "less")


def rate_above(k: int, n: int, h0: float, h1: float, name: str) -> tuple[OneSided, float]:
    """A success rate above ``h0`` as a primary test (exact binomial, both ways: P(X >= k) and
    P(X <= k) at rate ``h0``) and the p-value that refutes a rate of ``h1`` or more (P(X <= k)
    at rate ``h1``, for :func:`decide`'s ``refutation``), for ``k`` successes in ``n`` units."""
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"successes must be in [0, n] with n >= 1; got {k} of {n}")
    if not 0 < h0 < h1 < 1:
        raise ValueError(f"need 0 < h0 < h1 < 1; got h0 = {h0}, h1 = {h1}")
    test = OneSided(name, float(stats.binom.sf(k - 1, n, h0)), float(stats.binom.cdf(k, n, h0)))
    return test, float(stats.binom.cdf(k, n, h1))


def rate_above_verdicts(n: int, h0: float, h1: float, alpha: float,
                        beta: float) -> frozenset[Verdict]:
    """The verdicts :func:`rate_above` under :func:`decide` can reach with ``n`` units:
    "confirmed" where n of n is significant at ``alpha``, "refuted" where 0 of n rejects
    ``h1`` at ``beta``; "inconclusive" always (the counts between)."""
    reachable = {Verdict.INCONCLUSIVE}
    if stats.binom.sf(n - 1, n, h0) < alpha:
        reachable.add(Verdict.CONFIRMED)
    if stats.binom.cdf(0, n, h1) < beta:
        reachable.add(Verdict.REFUTED)
    return frozenset(reachable)


def design_verdicts(design: SequentialDesign) -> frozenset[Verdict]:
    """The verdicts a sequential design can reach at its maximum seeds (the claim's
    ``reachable_verdicts`` where its verdict is the design's stop): "confirmed" where some
    look's efficacy boundary is at most its seed count, "refuted" where some look's futility
    boundary is a count that can occur (>= 0); "inconclusive" always (a missing block)."""
    efficacy, futility = design.boundaries()
    reachable = {Verdict.INCONCLUSIVE}
    if any(e <= n for e, n in zip(efficacy, design.looks, strict=True)):
        reachable.add(Verdict.CONFIRMED)
    if any(f >= 0 for f in futility):
        reachable.add(Verdict.REFUTED)
    return frozenset(reachable)


def one_sided_design(assessment: Assessment,
                     reachable: frozenset[Verdict] | None) -> Assessment:
    """``assessment`` unless its design cannot reach both "confirmed" and "refuted" at these
    parameters: then nothing it reads is evidence (a "confirmed" where "refuted" is out of
    reach, or the reverse, and equally a "budget reached" that more seeds of the same design
    could not turn into both), so the verdict is "not testable here", with the rule's own
    reading kept in the explanation and in ``details["one_sided"]`` (methodology,
    "Testability"). ``reachable``: the claim's
    :meth:`~attnverify.compare.claim.Claim.reachable_verdicts`; None (not declared): as is."""
    decisive = {Verdict.CONFIRMED, Verdict.REFUTED}
    if reachable is None or decisive <= reachable or assessment.reason is Reason.NOT_TESTABLE:
        return assessment
    never = " or ".join(sorted(str(v) for v in decisive - reachable))
    return dataclasses.replace(
        assessment, verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE, p_value=None,
        explanation=(f"Not testable here: at these parameters the design can never be {never}, "
                     f"so its reading ({assessment.verdict}) is no evidence (a design with more "
                     f"seeds can reach both). The rule read: {assessment.explanation}"),
        details={**assessment.details,
                 "one_sided": {"verdict": str(assessment.verdict),
                               "reason": None if assessment.reason is None
                               else str(assessment.reason),
                               "p_value": assessment.p_value}})
