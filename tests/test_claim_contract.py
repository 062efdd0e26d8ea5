"""Every built-in claim through the claim contract (:mod:`attnverify.compare.testing.contract`),
one case per (claim, item); the items a claim fails today are strict expected failures with
their reason, so the list shrinks as claims are mended and cannot go stale. The contract's own
negative controls: claims built to break an item must fail it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims import BUILTIN
from attnverify.compare.decision import one_sided_design
from attnverify.compare.measurement import Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.testing.contract import (
    CHECKS,
    ContractError,
    check_claim,
    check_grouping_stable,
    check_negative_control,
    check_reachable_verdicts,
    parametrize_with_claim_checks,
)
from attnverify.empirics import RunResult

CLAIMS = [cls() for cls in BUILTIN]

CONTROLLED = {"snell.permutation_is_hard", "snell.ktiw_learned_under_uniform_attention",
              "snell.ktiw_harder_on_permutations", "snell.permutation_ktiw_at_chance"}
"""The claims that supply a negative control today."""
REACHABLE = CONTROLLED | {"snell.subset_learned_every_seed", "musat.sufficient_depth_learns"}
"""The claims that declare the verdicts their design can reach today."""
SPACE_REFUSED = {"musat.llms_solve_by_prompting":
                 "the top of its search space (deepest 16, 10 chains) exceeds the depth 10 "
                 "chains allow at quick and full (at most 8)"}


def _expected(claim: Claim) -> dict[str, str]:
    out: dict[str, str] = {}  # every claim has typed profiles and (where it trains) named groups
    if claim.id not in CONTROLLED:
        out["negative_control"] = "no constructed results on which it is false yet"
        out["grouping_stable"] = "no constructed results to reorder yet"
    if claim.id not in REACHABLE:
        out["reachable_verdicts"] = "its reachable verdicts are not declared yet"
    if claim.id in SPACE_REFUSED:
        out["space"] = SPACE_REFUSED[claim.id]
    return out


EXPECTED = {claim.id: _expected(claim) for claim in CLAIMS}


@parametrize_with_claim_checks(CLAIMS, EXPECTED)
def test_builtin_claims_keep_the_contract(claim, check):
    check(claim)


def test_check_claim_reports_what_is_not_expected():
    claim = next(c for c in CLAIMS if c.id == "snell.ktiw_precedes_attention")
    check_claim(claim, EXPECTED[claim.id])
    with pytest.raises(AssertionError, match="negative_control"):
        check_claim(claim, {k: v for k, v in EXPECTED[claim.id].items()
                            if k != "negative_control"})
    with pytest.raises(AssertionError, match="take it off the list"):
        check_claim(claim, EXPECTED[claim.id] | {"declarations": "listed by mistake"})
    with pytest.raises(ValueError, match="unknown contract items"):
        check_claim(claim, {"no_such_item": "x"})


PROTOCOL = Protocol(endpoint="a rate", unit="a per-seed indicator", h0="rate <= 0.5",
                    h1="rate >= 0.9", test="exact binomial", confirm="p < alpha",
                    refute="p' < beta", alpha=0.025, beta=0.05, readout="final",
                    frozen="2026-12-02")


class RubberStamp(Claim):
    """A rule that confirms whatever it is given (what the negative control must catch)."""

    id = "contract.rubber_stamp"
    paper = "contract"
    statement = "anything"
    kind = ClaimKind.PAPER
    code_version = 1
    protocol = PROTOCOL
    defaults: ClassVar[dict[str, dict[str, Any]]] = {p: {} for p in ("smoke", "quick", "full")}

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        return Assessment(verdict=Verdict.CONFIRMED, theory=None, empirical=None,
                          statistic="nothing", tolerance=Tolerance("none", {}),
                          explanation="always")

    def negative_control(self, params: dict[str, Any]) -> list[RunResult]:
        return []

    def reachable_verdicts(self, params: dict[str, Any]) -> frozenset[Verdict]:
        return frozenset({Verdict.CONFIRMED, Verdict.INCONCLUSIVE})


class Silent(RubberStamp):
    """A claim that declares neither a negative control nor its reachable verdicts."""

    negative_control = Claim.negative_control
    reachable_verdicts = Claim.reachable_verdicts


def test_a_rule_that_confirms_on_false_data_fails_the_negative_control():
    with pytest.raises(ContractError, match="confirms at smoke on results on which the claim "
                                            "is false"):
        check_negative_control(RubberStamp())


class Undecidable(RubberStamp):
    def reachable_verdicts(self, params: dict[str, Any]) -> frozenset[Verdict]:
        return frozenset({Verdict.INCONCLUSIVE})


def test_a_design_that_can_never_decide_fails_the_reachable_verdicts():
    check_reachable_verdicts(RubberStamp())  # one-sided: verify reports it not testable
    with pytest.raises(ContractError, match="reach neither 'confirmed' nor 'refuted'"):
        check_reachable_verdicts(Undecidable())


def test_a_design_that_can_only_confirm_is_not_testable_when_it_confirms():
    claim = RubberStamp()
    params = claim.params("smoke")
    confirmed = claim.assess(params, claim.results_for(params, []))
    reported = one_sided_design(confirmed, claim.reachable_verdicts(params))
    assert confirmed.verdict is Verdict.CONFIRMED
    assert (reported.verdict, reported.reason) == (Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE)
    assert reported.p_value is None and reported.details["one_sided"]["verdict"] == "confirmed"
    assert "can never be refuted" in reported.explanation
    both = frozenset({Verdict.CONFIRMED, Verdict.REFUTED})
    assert one_sided_design(confirmed, both) is confirmed  # a design that can go either way
    assert one_sided_design(confirmed, None) is confirmed  # not declared: as assessed
    budget = dataclasses.replace(confirmed, verdict=Verdict.INCONCLUSIVE,
                                 reason=Reason.BUDGET_REACHED)
    reported = one_sided_design(budget, claim.reachable_verdicts(params))
    assert reported.reason is Reason.NOT_TESTABLE  # more seeds of this design cannot decide
    assert reported.details["one_sided"]["reason"] == "budget reached"


def test_a_claim_passes_nothing_by_default():
    for check in (check_negative_control, check_grouping_stable, check_reachable_verdicts):
        with pytest.raises(ContractError, match=r"declared|no constructed results"):
            check(Silent())


def test_every_item_is_run():
    assert list(CHECKS) == ["declarations", "profiles", "typed_params", "space",
                            "deterministic_specs", "unique_run_keys", "grouped_specs",
                            "negative_control", "grouping_stable", "reachable_verdicts"]


class ReadsByPosition(RubberStamp):
    """Named groups, but a rule that reads the first run as the treated arm: it would read
    the wrong runs if the groups were ordered otherwise."""

    def specs(self, params: dict[str, Any]) -> dict[str, list[Any]]:
        return {"control": [object()], "treated": [object(), object()]}

    def negative_control(self, params: dict[str, Any]) -> list[Any]:
        return [0.0, 1.0, 1.0]  # stands in for the runs: only their order matters here

    def assess(self, params: dict[str, Any], results: Sequence[Any]) -> Assessment:
        treated = results[0]
        verdict = Verdict.CONFIRMED if treated > 0.5 else Verdict.INCONCLUSIVE
        return Assessment(verdict=verdict, theory=None, empirical=None, statistic="first",
                          tolerance=Tolerance("none", {}), explanation=f"first run {treated}")


class ReadsByName(ReadsByPosition):
    def assess(self, params: dict[str, Any], results: Sequence[Any]) -> Assessment:
        treated = sum(results["treated"]) / len(results["treated"])  # type: ignore[call-overload]
        verdict = Verdict.CONFIRMED if treated > 0.5 else Verdict.INCONCLUSIVE
        return Assessment(verdict=verdict, theory=None, empirical=None, statistic="mean",
                          tolerance=Tolerance("none", {}), explanation=f"treated {treated}")


def test_a_rule_that_reads_runs_by_position_fails_grouping_stable():
    with pytest.raises(ContractError, match=r"reads its runs by position \(results\[0\]\)"):
        check_grouping_stable(ReadsByPosition())
    check_grouping_stable(ReadsByName())


def test_verify_reports_a_one_sided_design_not_testable(tmp_path):
    """The rule runs in verify itself: a claim whose design can only confirm is reported
    "not testable here", with what its rule read."""
    from attnverify.compare import evaluate
    from attnverify.empirics import LocalExecutor, RunStore

    outcome = evaluate(RubberStamp(), "smoke", LocalExecutor(RunStore(tmp_path), workers=1,
                                                            progress=False))
    a = outcome.assessment
    assert (a.verdict, a.reason) == (Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE)
    assert a.explanation.endswith("The rule read: always")
