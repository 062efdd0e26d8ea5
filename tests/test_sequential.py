"""The group-sequential design (compare/sequential.py): exact operating characteristics
against simulation, the error rates it promises, and a broken boundary that the checks catch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from attnverify.compare.sequential import (
    SequentialDesign,
    Stop,
    _characteristics,
    obf_spending,
)

DESIGNS = [
    SequentialDesign((8, 16, 24, 32), 0.75, 0.95, 0.025, 0.10),
    SequentialDesign((4, 8, 16, 32), 0.5, 0.9, 0.025, 0.10),
    SequentialDesign((6, 12, 18), 0.3, 0.8, 0.05, 0.20),
]
TRIALS = 10_000


def simulate(looks, efficacy, futility, p: float, rng: np.random.Generator) -> dict[str, float]:
    """The design run on ``TRIALS`` simulated sequences of per-seed outcomes (independent of
    the exact recursion: plain Bernoulli draws walked look by look)."""
    outcomes = rng.random((TRIALS, looks[-1])) < p
    counts = {Stop.EFFICACY: 0, Stop.FUTILITY: 0, Stop.BUDGET: 0}
    seeds = 0
    for row in outcomes:
        for k, n in enumerate(looks):
            s = int(row[:n].sum())
            if s >= efficacy[k]:
                counts[Stop.EFFICACY] += 1
                break
            if s <= futility[k]:
                counts[Stop.FUTILITY] += 1
                break
        else:
            counts[Stop.BUDGET] += 1
        seeds += n
    return {"confirmed": counts[Stop.EFFICACY] / TRIALS,
            "refuted": counts[Stop.FUTILITY] / TRIALS, "seeds": seeds / TRIALS}


def within_rate(simulated: float, rate: float) -> bool:
    """The simulated rate stays within ``rate`` plus three Monte Carlo standard errors."""
    return simulated <= rate + 3 * np.sqrt(rate * (1 - rate) / TRIALS)


@pytest.mark.parametrize("design", DESIGNS, ids=lambda d: f"{d.looks}-{d.p0}-{d.p1}")
def test_error_rates_by_simulation(design: SequentialDesign) -> None:
    rng = np.random.default_rng(0)
    efficacy, futility = design.boundaries()
    under_h0 = simulate(design.looks, efficacy, futility, design.p0, rng)
    under_h1 = simulate(design.looks, efficacy, futility, design.p1, rng)
    assert within_rate(under_h0["confirmed"], design.alpha)
    assert within_rate(under_h1["refuted"], design.beta)
    exact0 = design.operating_characteristics(design.p0)
    exact1 = design.operating_characteristics(design.p1)
    assert exact0.confirmed <= design.alpha + 1e-12
    assert exact1.refuted <= design.beta + 1e-12
    for sim, exact in ((under_h0, exact0), (under_h1, exact1)):
        for name in ("confirmed", "refuted"):
            value = getattr(exact, name)
            assert abs(sim[name] - value) <= 4 * np.sqrt(value * (1 - value) / TRIALS) + 1e-9
        assert abs(sim["seeds"] - exact.expected_seeds) < 0.05 * design.n_max


def test_a_broken_boundary_is_caught() -> None:
    """Negative control: one success fewer to confirm at every look breaks the type I error,
    and the same simulation check that passes the real design fails it."""
    design = DESIGNS[0]
    efficacy, futility = design.boundaries()
    broken = tuple(e - 1 for e in efficacy)
    sim = simulate(design.looks, broken, futility, design.p0, np.random.default_rng(1))
    assert not within_rate(sim["confirmed"], design.alpha)
    assert _characteristics(design.looks, broken, futility, design.p0).confirmed > design.alpha


def test_one_look_is_the_exact_binomial_test() -> None:
    """A single look spends all of alpha: its efficacy boundary is the exact one-sided
    binomial test's critical count, its futility boundary that of the test of p >= p1."""
    design = SequentialDesign((20,), 0.6, 0.9, 0.025, 0.10)
    (e,), (f,) = design.boundaries()
    assert e == min(s for s in range(21)
                    if stats.binomtest(s, 20, 0.6, alternative="greater").pvalue <= 0.025)
    assert f == max(s for s in range(21)
                    if stats.binomtest(s, 20, 0.9, alternative="less").pvalue <= 0.10)


def test_spending_ends_at_the_rate_and_grows() -> None:
    fractions = np.linspace(0.05, 1, 20)
    spent = [obf_spending(t, 0.025) for t in fractions]
    assert np.all(np.diff(spent) > 0)
    assert spent[-1] == pytest.approx(0.025)
    assert obf_spending(0.0, 0.025) == 0.0


@given(st.lists(st.booleans(), min_size=0, max_size=40))
def test_decide_stops_at_the_first_boundary(outcomes: list[bool]) -> None:
    design = DESIGNS[0]
    efficacy, futility = design.boundaries()
    result = design.decide(outcomes)
    for k, n in enumerate(design.looks[:max(result.look - 1, 0)]):  # looks before the stop
        s = sum(outcomes[:n])
        assert futility[k] < s < efficacy[k]
    if result.stop is Stop.EFFICACY:
        assert result.successes >= efficacy[result.look - 1]
    if result.stop is Stop.FUTILITY:
        assert result.successes <= futility[result.look - 1]
    if result.stop is Stop.CONTINUE:
        nxt = design.looks[result.look] if result.look < len(design.looks) else None
        assert nxt is not None and len(outcomes) < nxt
    # outcomes after the stopping look change nothing
    if result.stop in (Stop.EFFICACY, Stop.FUTILITY):
        assert design.decide([*outcomes[:result.seeds], True, False]) == result


def test_designs_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="looks"):
        SequentialDesign((8, 8), 0.5, 0.9, 0.025, 0.1)
    with pytest.raises(ValueError, match="p0"):
        SequentialDesign((8,), 0.9, 0.5, 0.025, 0.1)
    with pytest.raises(ValueError, match="alpha"):
        SequentialDesign((8,), 0.5, 0.9, 0.5, 0.1)


@pytest.mark.parametrize("design", DESIGNS[:2], ids=lambda d: f"{d.looks}-{d.p0}-{d.p1}")
def test_p_value_agrees_with_the_boundaries(design: SequentialDesign) -> None:
    """A stop for efficacy has a stage-wise p-value <= alpha; the p-value under H0 is
    (super-)uniform: P(p <= alpha) is the design's type I error, by simulation."""
    rng = np.random.default_rng(2)
    small = 0
    for _ in range(2000):
        outcomes = list(rng.random(design.n_max) < design.p0)
        result = design.decide(outcomes)
        p = design.p_value(result)
        if result.stop is Stop.EFFICACY:
            assert p <= design.alpha + 1e-12
        small += p <= design.alpha
    assert small / 2000 <= design.alpha + 3 * np.sqrt(design.alpha / 2000)


def test_the_methodology_shows_the_designs_as_computed():
    """docs/methodology.md's operating characteristics are the code's, to the digit."""
    from pathlib import Path

    from attnverify.compare.claims.snell.section5.decision import operating_characteristics
    from attnverify.compare.claims.snell.subset_learned_every_seed import SubsetLearnedEverySeed

    doc = (Path(__file__).parents[1] / "docs" / "methodology.md").read_text()
    claim = SubsetLearnedEverySeed()
    design = claim.design(claim.params("quick"))
    assert design.describe() in doc
    assert design.oc_table((0.5, 0.75, 0.85, 0.9, 0.95, 1.0)) in doc
    for single, multi in ((0.4, 0.4), (0.4, 0.7), (0.4, 0.95)):
        confirm, refute = operating_characteristics(6, single, multi)
        assert f"| {single} | {multi} | {confirm:.3f} | {refute:.3f} |" in doc


def test_the_methodology_shows_the_musat_design_as_computed():
    from pathlib import Path

    from attnverify.compare.claims.musat import SufficientDepthLearns

    doc = (Path(__file__).parents[1] / "docs" / "methodology.md").read_text()
    claim = SufficientDepthLearns()
    full = claim.design(claim.params("full"))
    assert full.describe() in doc and full.oc_table((0.5, 0.67, 0.8, 0.9, 1.0)) in doc
    assert claim.design(claim.params("quick")).describe() in doc
