"""A claim's verdict at another profile from stored runs only (compare/evaluation/cross_profile.py),
and how the report shows it beside the verdict."""

from __future__ import annotations

from dataclasses import replace

import pytest

from attnverify.compare import evaluate, select
from attnverify.compare.evaluation.cross_profile import StoredRunsOnly, stored_outcomes
from attnverify.compare.protocol import Reason
from attnverify.compare.report.document import Report
from attnverify.empirics import LocalExecutor, RunStore


@pytest.fixture
def smoke_store(tmp_path):
    store = RunStore(tmp_path / "cache")
    executor = LocalExecutor(store, workers=1, progress=False)
    outcome = evaluate(select(claim_id="snell.uniform_attention_at_init")[0], "smoke", executor)
    return store, outcome


def test_only_claims_with_every_run_stored_are_evaluated_and_nothing_trains(smoke_store):
    store, _ = smoke_store
    before = set(store.keys())
    claims = select(claim_id="snell.uniform_attention_at_init") + select(
        claim_id="snell.permutation_is_hard") + select(claim_id="snell.kappa_closed_form")
    outcomes = stored_outcomes(claims, "smoke", store)
    # the uniform-attention runs are stored; the copying runs are not; kappa trains nothing
    assert list(outcomes) == ["snell.uniform_attention_at_init"]
    assert set(store.keys()) == before
    assert stored_outcomes(claims, "full", store) == {}


def test_the_stored_only_executor_refuses_to_train(tmp_path):
    claim = select(claim_id="snell.uniform_attention_at_init")[0]
    spec = claim.checked_specs(claim.params("smoke"))[0]
    with pytest.raises(RuntimeError, match="missing from the store"):
        StoredRunsOnly(RunStore(tmp_path), progress=False).run([spec])


def test_the_report_shows_the_reference_verdict_and_flags_a_flip(smoke_store, tmp_path):
    store, outcome = smoke_store
    reference = stored_outcomes([outcome.claim], "smoke", store)
    report = Report(profile="quick", versions={}, machine={}, outcomes=[outcome],
                    reference=reference)
    record = report.claim_records({})[0]
    assert record["at_full"]["verdict"] == str(outcome.assessment.verdict)
    assert record["at_full"]["flip"] is False
    flipped = reference[outcome.claim.id]
    flipped.assessment.verdict = type(flipped.assessment.verdict)("inconclusive")
    if outcome.assessment.verdict.value != "inconclusive":
        record = report.claim_records({})[0]
        assert record["at_full"]["flip"] is True
        md = report.markdown([record])
        assert "≠" in md and "At full, from stored runs" in md


def test_a_claim_that_ran_nothing_here_is_not_flagged(smoke_store):
    store, outcome = smoke_store
    reference = stored_outcomes([outcome.claim], "smoke", store)
    ref = reference[outcome.claim.id]
    ref.assessment.verdict = type(ref.assessment.verdict)("refuted")
    # the same claim as a profile that left its runs out shows it: no runs, inconclusive
    skipped = replace(outcome, run_keys=[], assessment=replace(
        outcome.assessment, verdict=type(ref.assessment.verdict)("inconclusive"),
        reason=Reason.NOT_TESTABLE))
    report = Report(profile="quick", versions={}, machine={}, outcomes=[skipped],
                    reference=reference)
    record = report.claim_records({})[0]
    assert record["at_full"]["verdict"] == "refuted" and record["at_full"]["flip"] is False
    assert "≠" not in report.markdown([record])
    ran = Report(profile="quick", versions={}, machine={}, outcomes=[replace(
        skipped, run_keys=outcome.run_keys)], reference=reference)
    assert ran.claim_records({})[0]["at_full"]["flip"] is True
