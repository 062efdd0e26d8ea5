"""Declared protocols, verdict reasons and the decision rule (compare/protocol.py,
compare/decision.py), and the statistics they rest on (compare/stats.py)."""

from __future__ import annotations

import dataclasses
import itertools
from datetime import date
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats

from attnverify.compare.claim import Assessment, Verdict
from attnverify.compare.decision import OneSided, decide, sequential_verdict
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.registry import CLAIMS, load_builtins
from attnverify.compare.sequential import Stop
from attnverify.compare.stats import (
    benjamini_hochberg,
    bonferroni_min,
    holm,
    rate_difference_test,
)

BASE = Protocol(endpoint="e", unit="u", h0="h0", h1="h1", test="t", confirm="c", refute="r",
                alpha=0.025, beta=0.1, readout="final", frozen="2026-11-25",
                seeds=(SeedBlock(SeedUse.DECISION, 100),))


def test_every_builtin_claim_declares_a_protocol_with_a_distinct_hash():
    load_builtins()
    digests = {claim.id: claim.protocol.digest() for claim in CLAIMS.values()}
    assert len(digests) == 43
    assert len(set(digests.values())) == len(digests)
    for claim in CLAIMS.values():
        p = claim.protocol
        # a real date, not before the first protocol and not in the future
        assert len(p.digest()) == 12
        assert date(2026, 11, 25) <= date.fromisoformat(p.frozen) <= date.today(), claim.id
        # seed blocks exactly for claims that train (some train at full only)
        trains = any(claim.checked_specs(claim.params(profile)) for profile in ("smoke", "full"))
        assert bool(p.seeds) == trains, claim.id


def test_the_hash_follows_every_field():
    for field in dataclasses.fields(Protocol):
        value = getattr(BASE, field.name)
        if isinstance(value, str):
            changed = dataclasses.replace(BASE, **{field.name: value + "!"})
            assert changed.digest() != BASE.digest(), field.name
    assert dataclasses.replace(BASE, alpha=0.05).digest() != BASE.digest()
    assert dataclasses.replace(BASE).digest() == BASE.digest()


def test_protocols_refuse_rates_without_reasons_and_two_decision_blocks():
    with pytest.raises(ValueError, match="must say why"):
        dataclasses.replace(BASE, beta=None)
    with pytest.raises(ValueError, match="alpha"):
        dataclasses.replace(BASE, alpha=0.6)
    with pytest.raises(ValueError, match="exactly one decision block"):
        dataclasses.replace(BASE, seeds=(SeedBlock(SeedUse.DECISION, 0),
                                         SeedBlock(SeedUse.DECISION, 100)))


def test_a_claim_without_a_protocol_is_refused():
    from attnverify.compare.claim import Claim, ClaimKind
    from attnverify.compare.registry import register

    class NoProtocol(Claim):
        id = "example.no_protocol"
        paper = "example"
        kind = ClaimKind.DERIVED
        code_version = 1
        statement = "s"
        defaults: ClassVar[dict] = {"smoke": {}, "quick": {}, "full": {}}

        def assess(self, params, results):  # pragma: no cover - never registered
            raise AssertionError

    with pytest.raises(TypeError, match="decision protocol"):
        register(NoProtocol)
    assert "example.no_protocol" not in CLAIMS


def assessment(verdict: Verdict, reason: Reason | None = None) -> Assessment:
    return Assessment(verdict=verdict, theory=0, empirical=Measurement(0), statistic="s",
                      tolerance=Tolerance(), explanation="e", reason=reason)


def test_verdicts_carry_their_reason():
    assert assessment(Verdict.CONFIRMED).reason is Reason.DECIDED
    assert assessment(Verdict.REFUTED).reason is Reason.DECIDED
    assert assessment(Verdict.INCONCLUSIVE).reason is Reason.BUDGET_REACHED
    assert assessment(Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE).reason is Reason.NOT_TESTABLE
    with pytest.raises(ValueError, match="was not decided"):
        assessment(Verdict.INCONCLUSIVE, Reason.DECIDED)
    with pytest.raises(ValueError, match="is decided"):
        assessment(Verdict.CONFIRMED, Reason.CONFLICTING)


@pytest.mark.parametrize(("stop", "verdict", "reason"), [
    (Stop.EFFICACY, Verdict.CONFIRMED, Reason.DECIDED),
    (Stop.FUTILITY, Verdict.REFUTED, Reason.DECIDED),
    (Stop.BUDGET, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    # between the boundaries before the last look: the next block is missing, not the budget
    (Stop.CONTINUE, Verdict.INCONCLUSIVE, Reason.INTERIM),
])
def test_sequential_verdict(stop, verdict, reason):
    assert sequential_verdict(stop) == (verdict, reason)


@pytest.mark.parametrize(("primary", "secondary", "refutation", "verdict", "reason"), [
    (OneSided("p", 0.01, 0.99), [], None, Verdict.CONFIRMED, Reason.DECIDED),
    (OneSided("p", 0.99, 0.01), [], None, Verdict.REFUTED, Reason.DECIDED),
    (OneSided("p", 0.3, 0.7), [], None, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    # a secondary test against the primary's confirmation: conflicting, not confirmed
    (OneSided("p", 0.01, 0.99), [OneSided("s", 0.99, 0.01)], None, Verdict.INCONCLUSIVE,
     Reason.CONFLICTING),
    # a secondary test alone never decides
    (OneSided("p", 0.3, 0.7), [OneSided("s", 0.001, 0.999)], None, Verdict.INCONCLUSIVE,
     Reason.BUDGET_REACHED),
    # the smallest effect refuted at beta
    (OneSided("p", 0.3, 0.7), [], 0.05, Verdict.REFUTED, Reason.DECIDED),
    (OneSided("p", 0.3, 0.7), [], 0.2, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    # an effect that is real but smaller than the smallest that matters
    (OneSided("p", 0.01, 0.99), [], 0.05, Verdict.INCONCLUSIVE, Reason.CONFLICTING),
])
def test_decide(primary, secondary, refutation, verdict, reason):
    d = decide(primary, 0.025, secondary, refutation, 0.1 if refutation is not None else None)
    assert (d.verdict, d.reason) == (verdict, reason)
    assert d.p_value == primary.p_h1


@pytest.mark.parametrize(("n_a", "n_b", "delta", "alternative"), [
    (8, 8, 0.0, "greater"), (10, 10, 0.3, "less"), (6, 12, 0.2, "less"), (12, 12, 0.0, "less"),
])
def test_rate_difference_test_holds_its_level_exactly(n_a, n_b, delta, alternative):
    """At every rate pair on the boundary of H (p_b - p_a = delta) the exact probability of
    p <= 0.05 stays within 0.05: the test is valid, computed by enumerating every outcome."""
    p_values = np.array([[rate_difference_test(a, n_a, b, n_b, delta, alternative)
                          for b in range(n_b + 1)] for a in range(n_a + 1)])
    reject = p_values <= 0.05
    for p_a in np.linspace(max(0, -delta), min(1, 1 - delta), 41):
        prob = np.outer(stats.binom.pmf(np.arange(n_a + 1), n_a, p_a),
                        stats.binom.pmf(np.arange(n_b + 1), n_b, p_a + delta))
        assert prob[reject].sum() <= 0.05 + 1e-9


def test_rate_difference_test_has_power_and_refuses_nonsense():
    assert rate_difference_test(2, 12, 12, 12, 0.0, "greater") < 0.001
    assert rate_difference_test(6, 12, 6, 12, 0.3, "less") < 0.1
    with pytest.raises(ValueError, match="alternative"):
        rate_difference_test(1, 2, 1, 2, 0.0, "two-sided")
    with pytest.raises(ValueError, match="successes"):
        rate_difference_test(3, 2, 1, 2, 0.0, "less")


def test_holm_and_benjamini_hochberg_match_their_definitions():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = list(rng.uniform(0, 0.2, size=rng.integers(1, 7)))
        m = len(p)
        order = np.argsort(p)
        # Holm: the step-down maximum of (m - j) p_(j)
        expected = np.empty(m)
        running = 0.0
        for j, i in enumerate(order):
            running = max(running, min(1.0, (m - j) * p[i]))
            expected[i] = running
        np.testing.assert_allclose(holm(p), expected)
        # BH by its rejection rule: reject at q the k smallest with p_(k) <= k q / m
        for q in (0.025, 0.05, 0.1):
            ranked = sorted(p)
            k = max((j + 1 for j in range(m) if ranked[j] <= (j + 1) * q / m), default=0)
            rejected = {i for i, x in enumerate(p) if x <= ranked[k - 1]} if k else set()
            assert {i for i, x in enumerate(benjamini_hochberg(p)) if x <= q} == rejected
    assert holm([]) == [] and benjamini_hochberg([]) == []


def test_bonferroni_min_is_holms_smallest_adjusted_p():
    """Over the p-values given, the smallest Holm-adjusted p-value is the Bonferroni one; a
    stated number of tests (some without a reading) counts instead; no tests read 1."""
    for p in itertools.product((0.001, 0.01, 0.2, 0.6), repeat=3):
        assert bonferroni_min(p) == pytest.approx(min(holm(list(p))))
    assert bonferroni_min([0.004], n_tests=3) == pytest.approx(0.012)
    assert bonferroni_min([]) == 1.0 and bonferroni_min(iter([0.9, 0.8])) == 1.0


def test_holm_is_never_below_the_raw_p():
    for p in itertools.product((0.001, 0.01, 0.2), repeat=3):
        assert all(h >= x for h, x in zip(holm(list(p)), p, strict=True))


def test_a_refutation_carries_the_p_of_the_test_that_refuted():
    """The report shows beside "refuted" the test that refuted, not the primary test's p
    toward H1 (which is large when a claim is refuted)."""
    from attnverify.compare.report.cells import p_text

    primary = OneSided("paired t", 0.74, 0.26)
    by_margin = decide(primary, 0.025, refutation=0.001, beta=0.10)
    assert (by_margin.verdict, by_margin.p_value, by_margin.refuting_p) == (
        Verdict.REFUTED, 0.74, 0.001)
    other_way = decide(OneSided("paired t", 0.999, 0.001), 0.025)
    assert (other_way.verdict, other_way.refuting_p) == (Verdict.REFUTED, 0.001)
    confirmed = decide(OneSided("paired t", 0.001, 0.999), 0.025)
    assert confirmed.refuting_p is None
    assert p_text({"verdict": "refuted", "p_value": 0.74, "refuting_p": 0.001}) == (
        "0.001 (the refuting test)")
    assert p_text({"verdict": "confirmed", "p_value": 0.001, "refuting_p": None}) == "0.001"
