"""The rule of snell.low_loss_without_aligned_attention on constructed results: one run that
copies at low loss with gold attention below 1/L confirms; low-loss runs that all attend to
the gold position leave it inconclusive; no low-loss run makes it not testable."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnverify.compare import Verdict
from attnverify.compare.claims.snell import LowLossWithoutAlignedAttention
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult

CLAIM = LowLossWithoutAlignedAttention()
PARAMS = CLAIM.params("quick")
LOG_V = math.log(PARAMS["L"])


def run(spec, loss: float, acc: float, gold: float) -> RunResult:
    """A run whose last evaluation has this loss, token accuracy and gold attention."""
    return RunResult(spec=spec, status="ok", eval_steps=np.array([0, 100]),
                     metrics={"loss": np.array([LOG_V, loss]), "acc": np.array([0.1, acc]),
                              "gold_attention": np.array([0.1, gold])},
                     train_loss=np.array([LOG_V, loss]))


ALIGNED = (0.001, 1.0, 0.98)
FLIPPED = (0.14, 1.0, 0.0001)
HIGH_LOSS_FLIPPED = (1.7, 1.0, 0.004)   # copies, attends away, but the loss is not low
NOT_LEARNED = (0.001, 0.5, 0.0001)      # low loss is not enough without copying


@pytest.mark.parametrize(("outcomes", "verdict", "reason"), [
    ([ALIGNED, FLIPPED, ALIGNED, ALIGNED, ALIGNED], Verdict.CONFIRMED, Reason.DECIDED),
    ([ALIGNED] * 5, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    ([HIGH_LOSS_FLIPPED] * 5, Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
    ([NOT_LEARNED] * 5, Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
    # low loss only where attention aligned, the runs that attend away still above the bound:
    # the regime the claim speaks of is not reached within the budget
    ([HIGH_LOSS_FLIPPED] * 4 + [ALIGNED], Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
])
def test_rule(outcomes, verdict, reason):
    results = [run(spec, *o) for spec, o in zip(CLAIM.checked_specs(PARAMS), outcomes, strict=True)]
    a = CLAIM.assess(PARAMS, CLAIM.results_for(PARAMS, results))
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation
    assert a.empirical.value == sum(o is FLIPPED for o in outcomes)


def test_no_counterexample_states_the_bound():
    results = [run(spec, *ALIGNED) for spec in CLAIM.checked_specs(PARAMS)]
    a = CLAIM.assess(PARAMS, CLAIM.results_for(PARAMS, results))
    assert "at most 0.45" in a.explanation  # 1 - 0.05 ** (1/5)


def test_runs_cut_off_by_the_budget_are_reported():
    outcomes = [HIGH_LOSS_FLIPPED] * 4 + [ALIGNED]
    results = [run(spec, *o) for spec, o in zip(CLAIM.checked_specs(PARAMS), outcomes, strict=True)]
    text = CLAIM.assess(PARAMS, CLAIM.results_for(PARAMS, results)).explanation
    assert "4 more copy away from the gold position" in text and "too short" in text
    assert "regime the claim speaks of was not reached" in text


def test_uniform_gold_attention_is_not_a_counterexample():
    exactly_uniform = (0.14, 1.0, 1 / PARAMS["L"])
    results = [run(spec, *exactly_uniform) for spec in CLAIM.checked_specs(PARAMS)]
    a = CLAIM.assess(PARAMS, CLAIM.results_for(PARAMS, results))
    assert a.verdict is Verdict.INCONCLUSIVE and a.empirical.value == 0


def test_diverged_runs_are_never_counterexamples():
    from dataclasses import replace

    results = [replace(run(spec, *FLIPPED), status="diverged")
               for spec in CLAIM.checked_specs(PARAMS)]
    a = CLAIM.assess(PARAMS, CLAIM.results_for(PARAMS, results))
    assert a.reason is Reason.NOT_TESTABLE and "5 diverged" in a.explanation


def test_seed_blocks_do_not_overlap():
    specs = CLAIM.checked_specs(PARAMS)
    assert [s.seed for s in specs] == list(range(610, 615))
    with pytest.raises(ValueError, match="run into"):
        CLAIM.check_params(PARAMS | {"seeds": 41})
