"""How ``snell.multihead_rescues_permutations`` decides: its protocol,
its testability precondition and its decision on success counts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from attnverify.compare.claims.snell.common import CALIBRATION_SEEDS
from attnverify.compare.decision import Decision, OneSided, decide, rate_gain
from attnverify.compare.protocol import Protocol, SeedBlock, SeedUse
from attnverify.compare.stats import GroupComparison, compare_groups, rate_difference_test

if TYPE_CHECKING:
    from attnverify.compare.claim import Assessment
    from attnverify.empirics import RunResult

DECISION_SEEDS, PRECONDITION_SEEDS = 400, 500
"""The direct protocol's decision runs and the single-head runs that measure its
precondition: blocks of their own, since ``CALIBRATION_SEEDS`` 200 to 207 chose the quick
length (measuring the precondition there would pass it by construction), and seeds 100 to
107 and 300 to 307 ran a first version of this protocol (8 runs per arm) before the quick
budget was cut to 6."""
ALPHA, BETA = 0.025, 0.10
"""One-sided error rates: "confirmed" when the heads do not help, "refuted" when they help by
:data:`MIN_RESCUE`."""
MIN_RESCUE = 0.3
"""The smallest gain in success rate that matters: the paper's single head "frequently
fails" where 8 heads learn, a gain of a third of the runs or more; a smaller one would not
be the rescue the paper reports."""

PROTOCOL = Protocol(
    endpoint="the probability that a run learns the permutation task (success) with "
             "8 heads against 1 head: 'learns more often'",
    unit="one run per seed and head count: success indicator (token accuracy >= 0.95 at an "
         "evaluation; at full, > 0.95 by the official loop's last evaluation)",
    h0="8 heads succeed no more often than 1 head (p8 - p1 <= 0)",
    h1=f"8 heads succeed more often by at least {MIN_RESCUE} (p8 - p1 >= {MIN_RESCUE})",
    test="exact unconditional test of the difference of two rates (Suissa-Shuster, the "
         "difference of proportions as statistic, supremum over the nuisance rate)",
    confirm=f"p (p8 - p1 <= 0) < {ALPHA}, unless a secondary test is significant the other "
            f"way (then inconclusive: conflicting evidence)",
    refute=f"p (p8 - p1 >= {MIN_RESCUE}) < {BETA}: a gain as large as the smallest that "
           f"matters is rejected (unless a test is significant toward H1 at {ALPHA}: then "
           f"inconclusive, conflicting evidence)",
    alpha=ALPHA, beta=BETA,
    readout="whether any evaluation meets the success criterion (direct protocol); the "
            "official evaluations before the last step (section5 protocol)",
    frozen="2026-11-25",
    precondition=f"the single head fails often enough that a rescue of the smallest size that "
                 f"matters is possible: at least a share {MIN_RESCUE} of the single-head runs "
                 f"fail (direct protocol: the precondition runs; section5: the single random "
                 f"heads' runs)",
    secondary=("log-rank on steps to success, censored at the budget (1 head slower)",
               "Fisher's exact test on the counts",
               "section5: 7 bad + 1 good against 8 bad bundles"),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS, "direct protocol: 'seeds' runs per "
                     "head count; section5: the archived bundles of the official protocol"),
           SeedBlock(SeedUse.CALIBRATION, PRECONDITION_SEEDS, "direct protocol: single-head "
                     "runs measuring the precondition"),
           SeedBlock(SeedUse.CALIBRATION, CALIBRATION_SEEDS, "single-head runs that chose the "
                     "quick profile's L = 40 (a single head failed in 5 of 8 there, 2 of 8 at "
                     "L = 30); they decide nothing"),
           SeedBlock(SeedUse.DEVELOPMENT, 0, "the 8 seeds per head count of the rule used "
                     "before, at L = 20; and seeds 100 to 107 and 300 to 307, a first run of "
                     "this protocol with 8 runs per arm")),
    weaknesses=("at full (section5) the decision reads the archived runs the rule was "
                "developed on (seeds of the official protocol), the single-head runs that "
                "measure the precondition are also group A of the test, and group A's size "
                "depends on when enough good and bad heads turned up (an outcome-dependent "
                "sample size the exact test does not model)",
                "section5's random bundles share heads (8 of 30), so they are not "
                "independent draws; the test treats them as such",
                "at quick, 6 runs per head count: a rescue from 0.4 to 0.95 is confirmed "
                "about half the time (docs/methodology.md)"))


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


class CountDecision:
    """What both multi-head protocols (``multihead_direct``, ``multihead_section5``) need of
    the claim they are mixed into: its decision on the success counts, which they share."""

    def _decide(self, params: dict[str, Any], single: list[RunResult], multi: list[RunResult],
                name_a: str, name_b: str, details: dict[str, Any],
                note: str = "") -> Assessment:
        """The claim's decision on the success counts of ``single`` against ``multi``."""
        raise NotImplementedError
