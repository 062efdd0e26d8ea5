"""The per-seed rule below the depth bound (compare/claims/musat/below_bound.py): a seed
supports only where it learned the statement depths its layers allow; the error rates the
module docstring derives hold exactly (every count of each look enumerated) whatever share of
seeds stays untrained, and the rule it replaced (a cell-level gate, every seed near chance
counted) does not keep them."""

from __future__ import annotations

import pytest
from scipy import stats

from attnverify.compare.claims.musat.below_bound import (
    Outcome,
    decide_below_bound,
    decision_text,
    outcome_counts,
    pending,
)
from attnverify.compare.claims.musat.common import SHALLOW_DESIGN
from attnverify.compare.sequential import SequentialDesign, Stop

FULL = SequentialDesign((8, 12), **SHALLOW_DESIGN)
"""The shallow cell's design at full."""
STEP = SequentialDesign((6, 12), **SHALLOW_DESIGN)
"""The depth step's past-bound design at full."""
S, C, U = Outcome.SUPPORTS, Outcome.CONTRADICTS, Outcome.UNTRAINED


def blocks(n: int, probs: dict[Outcome, float]):
    """Every (supports, contradicts, untrained) count of ``n`` seeds with its multinomial
    probability."""
    for s in range(n + 1):
        for c in range(n + 1 - s):
            u = n - s - c
            p = stats.multinomial.pmf([s, c, u], n, [probs[S], probs[C], probs[U]])
            yield [S] * s + [C] * c + [U] * u, float(p)


def paths(design: SequentialDesign, probs: dict[Outcome, float], look_of):
    """Every seed sequence at which a rule stops or runs out of looks, with its probability:
    each look's block enumerated by counts, the paths that ``look_of`` continues extended by
    the next block (binding: a stopped path trains no more seeds)."""
    going = [([], 1.0)]
    previous = 0
    for n in design.looks:
        extended = [(head + block, p_head * p_block) for head, p_head in going
                    for block, p_block in blocks(n - previous, probs)]
        going, previous = [], n
        for seeds, p in extended:
            if look_of(seeds).stop is Stop.CONTINUE:
                going.append((seeds, p))
            else:
                yield seeds, p


def exact_rates(design: SequentialDesign, trained: float, near_trained: float,
                near_untrained: float = 1.0) -> tuple[float, float]:
    """Exact (confirmed, refuted) of the rule, by enumerating every count of each look's
    block (the decision reads counts only) through ``decide_below_bound`` itself: a seed is
    trained with probability ``trained``, near chance with ``near_trained`` if trained and
    ``near_untrained`` if not (an untrained seed above chance contradicts)."""
    probs = {S: trained * near_trained,
             C: trained * (1 - near_trained) + (1 - trained) * (1 - near_untrained),
             U: (1 - trained) * near_untrained}
    confirmed = refuted = 0.0
    for seeds, p in paths(design, probs, lambda seeds: decide_below_bound(design, seeds).look):
        d = decide_below_bound(design, seeds)
        confirmed += p * d.confirmed
        refuted += p * d.refuted
    return confirmed, refuted


def refutation_bound(design: SequentialDesign, p1: float) -> float:
    """The module docstring's bound on refuting under H1: the sum over looks of
    P(Bin(n_k, p1) <= futility_k)."""
    _, futility = design.boundaries()
    return float(sum(stats.binom.cdf(f, n, p1) for n, f in zip(design.looks, futility,
                                                                 strict=True)))


@pytest.mark.parametrize("design", [FULL, STEP], ids=["shallow", "step"])
@pytest.mark.parametrize("trained", [1.0, 0.8, 0.5, 0.2])
def test_confirming_keeps_alpha_whatever_share_stays_untrained(design, trained):
    """H0: near chance in half of the trained seeds (untrained ones near chance: the most
    favourable to a confirmation)."""
    confirmed, _ = exact_rates(design, trained, SHALLOW_DESIGN["p0"])
    assert confirmed <= SHALLOW_DESIGN["alpha"]
    if trained == 1.0:  # every seed trained: the design's own rate
        assert confirmed == pytest.approx(design.operating_characteristics(0.5).confirmed)


@pytest.mark.parametrize("design", [FULL, STEP], ids=["shallow", "step"])
@pytest.mark.parametrize(("trained", "near_trained", "near_untrained"), [
    (1.0, 0.95, 1.0), (0.7, 0.95, 1.0), (0.7, 1.0, 5 / 6), (0.3, 0.95, 0.95),
    (0.0, 1.0, 0.95)])
def test_refuting_under_h1_stays_within_its_bound(design, trained, near_trained,
                                                 near_untrained):
    """H1: near chance in 95% of the seeds or more, however the 5% split between trained
    and untrained seeds."""
    near = trained * near_trained + (1 - trained) * near_untrained
    assert near >= 0.95 - 1e-12
    bound = refutation_bound(design, SHALLOW_DESIGN["p1"])
    assert bound <= SHALLOW_DESIGN["beta"]
    _, refuted = exact_rates(design, trained, near_trained, near_untrained)
    assert refuted <= bound


def test_the_stated_figures():
    assert refutation_bound(FULL, 0.95) == pytest.approx(0.025, abs=0.001)
    power = [exact_rates(FULL, trained, 0.95)[0] for trained in (1.0, 0.95, 0.8)]
    assert [round(p, 2) for p in power] == [0.98, 0.90, 0.43]  # the protocol's weaknesses


def test_the_replaced_rule_confirmed_far_above_alpha():
    """The rule of 2026-11-27: testable where half of the seeds learned the allowed depths,
    then every seed near chance counted, trained or not. With half the seeds untrained and
    the trained ones at H0, it confirmed about 14% of the time; the new rule almost never does."""
    probs = {S: 0.25, C: 0.25, U: 0.5}

    def old_look(seeds):  # untrained seeds count as near chance
        return FULL.decide([o is not C for o in seeds])

    old = 0.0
    for seeds, p in paths(FULL, probs, old_look):
        look = old_look(seeds)
        trained = sum(o is not U for o in seeds[:look.seeds])
        old += p * (look.stop is Stop.EFFICACY and 2 * trained >= look.seeds)
    assert old == pytest.approx(0.143, abs=0.001)
    assert exact_rates(FULL, 0.5, SHALLOW_DESIGN["p0"])[0] < 1e-4


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
        "2 learned the allowed statement depths and stayed near chance, 1 rose above chance, "
        "3 did not learn the allowed depths and stayed near chance (evidence neither way)")
