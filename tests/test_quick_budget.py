"""The quick budget (compare.quick_budget): the claims it leaves out train nothing at quick and
say why, come back with ``train=true``, are searched by falsify, and the first stage stays
within its guard."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from attnverify.compare import select
from attnverify.compare.claim import Assessment, Claim, Verdict
from attnverify.compare.evaluation.cross_profile import StoredRunsOnly
from attnverify.compare.evaluation.falsify import falsify
from attnverify.compare.evaluation.plan import estimate, plan
from attnverify.compare.evaluation.verify import evaluate
from attnverify.compare.groups import flatten
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.quick_budget import FIRST_STAGE_LIMIT_MIN
from attnverify.compare.registry import select_many
from attnverify.compare.space import Dimension

LEFT_OUT = ("snell.kappa_predicts_learning_speed", "snell.multihead_rescues_permutations",
            "snell.dynamics_not_expressiveness", "musat.shallow_models_fail",
            "musat.sufficient_depth_learns", "musat.implicit_curriculum_needed",
            "musat.depths_emerge_in_order", "musat.heads_emerge_in_sequence",
            "snell.uniform_probe_agrees_with_attention")


def test_the_claims_left_out_are_those_named():
    out = [c.id for c in select_many() if c.not_run(c.params("quick")) is not None]
    assert sorted(out) == sorted(LEFT_OUT)
    for profile in ("smoke", "full"):
        assert not [c.id for c in select_many() if c.not_run(c.params(profile)) is not None]


@pytest.mark.parametrize("claim_id", LEFT_OUT)
def test_a_claim_left_out_trains_nothing_and_says_why(claim_id, store):
    claim = select(claim_id=claim_id)[0]
    params = claim.params("quick")
    # an executor that raises if asked to train: nothing may be asked of it
    outcome = evaluate(claim, "quick", StoredRunsOnly(store, progress=False))
    a = outcome.assessment
    assert a.verdict is Verdict.INCONCLUSIVE and a.reason is Reason.NOT_TESTABLE
    assert a.explanation == claim.not_run(params)
    assert a.explanation.startswith(claim.not_run_note) and "full profile decides" in a.explanation
    assert f"--claim {claim_id} --param train=true" in a.explanation
    assert "untrained" not in a.details and outcome.run_keys == []
    [p] = plan([claim], "quick", store)
    assert p.runs == 0 and not p.missing and "--param train=true" in p.seed_plan
    # train=true puts the runs back, unchanged
    back = params | {"train": True}
    assert claim.not_run(back) is None
    assert [s.key() for s in claim.checked_specs(back)] == [s.key() for s in
                                                            flatten(claim.specs(params))]


def test_train_is_a_bool():
    claim = select(claim_id="snell.kappa_predicts_learning_speed")[0]
    for bad in (0, "no", None):
        with pytest.raises(ValueError, match="train must be true or false"):
            claim.checked_specs(claim.params("quick") | {"train": bad})


def test_a_claim_without_runs_keeps_its_own_reason():
    claim = select(claim_id="musat.target_appears_at_bound")[0]
    params = claim.params("quick")
    assert params["train"] is False and not flatten(claim.specs(params))
    assert claim.not_run(params) is None


class Gated(Claim):
    """A claim left out at quick unless ``train`` is true, with a space to search."""

    id = "test.gated"
    code_version = 1
    paper = "snell"
    statement = "x stays below 7"
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"x": 1}, "full": {"x": 1}, "quick": {"x": 1, "train": False}}
    space: ClassVar[dict[str, Dimension]] = {"x": Dimension("a size", low=1, high=40)}

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def specs(self, params: dict[str, Any]) -> list:
        return [object()]  # non-empty, so that not_run applies; never trained here

    def checked_specs(self, params: dict[str, Any]) -> list:
        return []

    def assess(self, params: dict[str, Any], results) -> Assessment:
        self.calls.append(params)
        return Assessment(verdict=Verdict.REFUTED if params["x"] >= 7 else Verdict.CONFIRMED,
                          theory="< 7", empirical=Measurement(params["x"]), statistic="x",
                          tolerance=Tolerance(), explanation=f"x = {params['x']}")


def test_falsify_trains_what_it_searches(store):
    claim = Gated()
    result = falsify(claim, "quick", StoredRunsOnly(store, progress=False), budget=4)
    assert claim.calls and all(p["train"] is True for p in claim.calls)
    assert all(e.params["train"] is True for e in result.evaluated)


def test_the_first_stage_stays_within_its_guard(store):
    specs = {s.key(): s for p in plan(select_many(), "quick", store) for s in p.missing}
    est = estimate(list(specs.values()), {})
    assert est.unknown == 0
    assert est.seconds / 60 <= FIRST_STAGE_LIMIT_MIN, (
        f"quick's first stage costs {est.seconds / 60:.1f} min of one core by the reference "
        f"speeds, over {FIRST_STAGE_LIMIT_MIN}: leave a claim out at quick "
        f"(compare.quick_budget) or make its quick cell cheaper")
