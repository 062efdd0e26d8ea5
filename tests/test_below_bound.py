"""The per-seed rule below the depth bound (compare/claims/musat/below_bound.py): a seed
supports only where it learned the statement depths its layers allow; the error rates the
module docstring derives hold by simulation whatever share of seeds stays untrained, and the
rule it replaced (a cell-level gate, every seed near chance counted) does not keep them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from attnverify.compare.claims.musat.below_bound import (
    Outcome,
    decide_below_bound,
    decision_text,
    outcome_counts,
    pending,
)
from attnverify.compare.claims.musat.protocols import SHALLOW_DESIGN
from attnverify.compare.sequential import SequentialDesign, Stop

FULL = SequentialDesign((8, 12), **SHALLOW_DESIGN)
"""The shallow cell's design at full."""
TRIALS = 4000
S, C, U = Outcome.SUPPORTS, Outcome.CONTRADICTS, Outcome.UNTRAINED


def draw(rng: np.random.Generator, untrained: float, near: float, n: int) -> list[Outcome]:
    """``n`` seeds: untrained with probability ``untrained``, else near chance with
    probability ``near``."""
    u, q = rng.random(n), rng.random(n)
    return [U if a < untrained else (S if b < near else C) for a, b in zip(u, q, strict=True)]


def rates(untrained: float, near: float, seed: int = 0) -> tuple[float, float]:
    """Simulated (confirmed, refuted) of the rule on the full design."""
    rng = np.random.default_rng(seed)
    confirmed = refuted = 0
    for _ in range(TRIALS):
        d = decide_below_bound(FULL, draw(rng, untrained, near, FULL.n_max))
        confirmed += d.confirmed
        refuted += d.refuted
    return confirmed / TRIALS, refuted / TRIALS


def refutation_bound(design: SequentialDesign, p1: float) -> float:
    """The module docstring's bound on refuting under H1: the sum over looks of
    P(Bin(n_k, p1) <= futility_k)."""
    _, futility = design.boundaries()
    return float(sum(stats.binom.cdf(f, n, p1) for n, f in zip(design.looks, futility,
                                                                 strict=True)))


def slack(rate: float) -> float:
    return 3 * np.sqrt(max(rate, 1e-3) * (1 - rate) / TRIALS)


@pytest.mark.parametrize("untrained", [0.0, 0.3, 0.5, 0.8])
def test_confirming_keeps_alpha_whatever_share_stays_untrained(untrained):
    confirmed, _ = rates(untrained, SHALLOW_DESIGN["p0"])
    assert confirmed <= SHALLOW_DESIGN["alpha"] + slack(SHALLOW_DESIGN["alpha"])


@pytest.mark.parametrize("untrained", [0.0, 0.3, 0.6, 0.9])
def test_refuting_under_h1_stays_within_its_bound(untrained):
    bound = refutation_bound(FULL, SHALLOW_DESIGN["p1"])
    assert bound <= SHALLOW_DESIGN["beta"]
    assert bound == pytest.approx(0.025, abs=0.001)  # the figure the protocols state
    _, refuted = rates(untrained, SHALLOW_DESIGN["p1"], seed=1)
    assert refuted <= bound + slack(bound)


def test_untrained_seeds_cost_power():
    confirmed_all_trained, _ = rates(0.0, 0.95, seed=2)
    confirmed_some_untrained, _ = rates(0.3, 0.95, seed=2)
    assert confirmed_all_trained > 0.95 and confirmed_some_untrained < 0.5


def test_the_replaced_rule_confirmed_far_above_alpha():
    """The rule of 2026-11-27: testable where half of the seeds learned the allowed depths,
    then every seed near chance counted, trained or not. With half the seeds untrained and the
    trained ones at H0, it confirmed far more often than 0.025; the new rule does not."""
    rng = np.random.default_rng(3)
    old = 0
    for _ in range(TRIALS):
        seeds = draw(rng, 0.5, SHALLOW_DESIGN["p0"], FULL.n_max)
        look = FULL.decide([o is not C for o in seeds])  # untrained seeds are near chance
        trained = sum(o is not U for o in seeds[:look.seeds])
        old += look.stop is Stop.EFFICACY and 2 * trained >= look.seeds
    assert old / TRIALS > 0.1
    assert rates(0.5, SHALLOW_DESIGN["p0"], seed=3)[0] <= 0.025 + slack(0.025)


@pytest.mark.parametrize(("outcomes", "stop", "refuted", "untrained_stop", "lenient"), [
    ([S] * 8, Stop.EFFICACY, False, False, 8),
    ([S] * 7 + [U], Stop.CONTINUE, False, False, 8),
    ([S] * 4 + [U] * 4, Stop.FUTILITY, False, True, 8),
    ([S] * 5 + [C] * 3, Stop.FUTILITY, True, False, 5),
    ([U] * 5 + [C] * 3, Stop.FUTILITY, True, False, 5),
    ([U] * 6 + [C] * 2, Stop.FUTILITY, False, True, 6),
    ([S] * 6 + [U] * 2 + [S] * 2 + [C] * 2, Stop.FUTILITY, False, True, 10),
    ([S] * 6 + [C] * 2 + [S] * 2 + [C] * 2, Stop.FUTILITY, True, False, 8),
])
def test_decisions_on_constructed_outcomes(outcomes, stop, refuted, untrained_stop, lenient):
    d = decide_below_bound(FULL, outcomes)
    assert (d.look.stop, d.refuted, d.untrained_stop, d.lenient_count) == (
        stop, refuted, untrained_stop, lenient)
    text = decision_text(FULL, d)
    if stop is Stop.FUTILITY:
        assert ("contradicting seeds alone refute" in text) == refuted
        assert ("the untrained seeds, not the contradicting ones" in text) == untrained_stop


def test_the_next_look_follows_the_supporting_seeds():
    assert list(pending(FULL, [])) == list(range(8))
    assert list(pending(FULL, [S] * 7 + [U])) == list(range(8, 12))
    assert list(pending(FULL, [S] * 4 + [U] * 4)) == []


def test_outcome_counts_names_all_three():
    assert outcome_counts([S, S, C, U, U, U]) == (
        "2 learned the allowed statement depths and stayed near chance, 1 learned them and "
        "rose above chance, 3 did not learn them (evidence neither way)")
