"""``snell.dynamics_not_expressiveness`` decides correctly on constructed outcomes (it can
fail), and builds its warm arm on the standard arm's first seeds, fresh ones."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.compare import Verdict
from attnverify.compare.claims.snell import DynamicsNotExpressiveness
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult


def _run(spec, success):
    acc = np.array([0.1, 1.0 if success else 0.3])
    return RunResult(spec=spec, status="ok", eval_steps=np.array([0, 10]),
                     metrics={"acc": acc, "attn_acc_best_offset": acc},
                     train_loss=np.zeros(10),
                     final={"warm_start_acc": np.array([0.99])} if spec.warm_start else {})


@pytest.mark.parametrize(("failures", "warm", "verdict", "reason"), [
    (7, 3, Verdict.CONFIRMED, Reason.DECIDED),  # 7 of 20 fail: p = 0.0024 against <= 0.1
    (7, 0, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),  # no solution shown
    (1, 3, Verdict.REFUTED, Reason.DECIDED),  # failures are rare
    (4, 3, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
])
def test_dynamics_rule(failures, warm, verdict, reason):
    claim = DynamicsNotExpressiveness()
    params = claim.params("full")
    specs = claim.specs(params)
    results = ([_run(s, i >= failures) for i, s in enumerate(specs["standard"])]
               + [_run(s, i < warm) for i, s in enumerate(specs["warm"])])
    a = claim.assess(params, claim.results_for(params, results))
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation
    assert a.empirical.value == failures / params["seeds"]
    assert a.empirical.extras["warmup_final_acc"] == pytest.approx(0.99)


def test_the_warm_arm_reuses_the_first_seeds_and_no_other_claims_runs():
    from attnverify.compare.claims import BUILTIN

    claim = DynamicsNotExpressiveness()
    params = claim.params("full")
    standard, warm = claim.specs(params)["standard"], claim.specs(params)["warm"]
    assert [s.seed for s in warm] == [s.seed for s in standard[:params["warm_seeds"]]]
    assert all(s.warm_start.task.distribution == "subset"
               and s.warm_start.task.vocab_size == s.task.vocab_size == s.task.length
               and s.warm_start.seed == s.seed for s in warm)
    ours = {s.key() for s in claim.checked_specs(params)}
    for other in BUILTIN:
        if other is not DynamicsNotExpressiveness:
            theirs = {s.key() for s in other().checked_specs(other().params("full"))}
            assert not ours & theirs, other.id  # fresh seeds: decided by no other claim


@pytest.mark.parametrize(("change", "match"), [({"warm_L": 40}, "warm_L"),
                                                ({"warm_seeds": 7}, "warm_seeds")])
def test_impossible_parameters_are_refused(change, match):
    claim = DynamicsNotExpressiveness()
    with pytest.raises(ValueError, match=match):
        claim.check_params(claim.params("quick") | change)


@pytest.mark.parametrize(("seeds", "failures"), [(6, 0), (6, 3), (6, 6), (3, 3)])
def test_too_few_standard_seeds_to_refute_is_not_testable(seeds, failures):
    """With 6 or fewer seeds even no failure cannot refute (0.7^6 = 0.118 >= beta), so a
    confirmation there would come from a design that can only confirm."""
    claim = DynamicsNotExpressiveness()
    params = claim.params("full") | {"seeds": seeds, "warm_seeds": 1}
    specs = claim.specs(params)
    results = ([_run(s, i >= failures) for i, s in enumerate(specs["standard"])]
               + [_run(s, True) for s in specs["warm"]])
    a = claim.assess(params, claim.results_for(params, results))
    assert (a.verdict, a.reason) == (Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE), a.explanation
    assert "at least 7" in a.explanation


def test_seven_seeds_can_refute():
    claim = DynamicsNotExpressiveness()
    params = claim.params("full") | {"seeds": 7, "warm_seeds": 1}
    results = [_run(s, True) for s in claim.checked_specs(params)]  # no failure: p = 0.082
    a = claim.assess(params, claim.results_for(params, results))
    assert (a.verdict, a.reason) == (Verdict.REFUTED, Reason.DECIDED), a.explanation
