"""``snell.dynamics_not_expressiveness`` decides correctly on constructed success counts (it
can fail), is not testable where the standard start rarely fails, and builds its warm arm on
the standard arm's seeds."""

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


@pytest.mark.parametrize(("standard", "warm", "verdict", "reason"), [
    (13, 20, Verdict.CONFIRMED, Reason.DECIDED),
    (10, 11, Verdict.REFUTED, Reason.DECIDED),
    (19, 20, Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
    (12, 16, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
])
def test_dynamics_rule(standard, warm, verdict, reason):
    claim = DynamicsNotExpressiveness()
    params = claim.params("full")
    specs = claim.specs(params)
    n = params["seeds"]
    results = ([_run(s, i < standard) for i, s in enumerate(specs[:n])]
               + [_run(s, i < warm) for i, s in enumerate(specs[n:])])
    a = claim.assess(params, results)
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation
    assert a.empirical.extras["warmup_final_acc"] == pytest.approx(0.99)


def test_the_warm_arm_shares_seeds_and_the_standard_arm_is_the_permutation_runs():
    from attnverify.compare.claims.snell import PermutationIsHard

    claim = DynamicsNotExpressiveness()
    params = claim.params("full")
    specs = claim.specs(params)
    n = params["seeds"]
    assert [s.seed for s in specs[:n]] == [s.seed for s in specs[n:]]
    assert all(s.warm_start.task.distribution == "subset"
               and s.warm_start.task.vocab_size == s.task.vocab_size == s.task.length
               and s.warm_start.seed == s.seed for s in specs[n:])
    shared = {s.key() for s in PermutationIsHard().specs(params)}
    assert {s.key() for s in specs[:n]} <= shared  # trained once for both claims


def test_at_quick_the_standard_arm_is_the_multihead_claims_single_head_runs():
    from attnverify.compare.claims.snell import MultiheadRescuesPermutations
    from attnverify.compare.claims.snell.multihead_decision import DECISION_SEEDS

    multihead = MultiheadRescuesPermutations()
    mparams = multihead.params("quick")
    single = {multihead._spec(mparams, DECISION_SEEDS + i, 1).key()
              for i in range(mparams["seeds"])}
    claim = DynamicsNotExpressiveness()
    params = claim.params("quick")
    assert {s.key() for s in claim.specs(params)[:params["seeds"]]} == single


def test_a_warm_up_as_long_as_the_permutations_is_refused():
    claim = DynamicsNotExpressiveness()
    with pytest.raises(ValueError, match="warm_L"):
        claim.check_params(claim.params("quick") | {"warm_L": 40})
