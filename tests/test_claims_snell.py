"""The Snell claims decide correctly on constructed inputs (they can fail) and run end to end at
the smoke profile."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify import theory
from attnverify.compare import Verdict, evaluate, select
from attnverify.compare.claims.snell import (
    KappaClosedForm,
    SubsetLearnedEverySeed,
    UniformAttentionAtInit,
)
from attnverify.compare.claims.snell.common import SUCCESS
from attnverify.compare.protocol import Reason
from attnverify.empirics import LocalExecutor, RunResult


def fake_run(spec, acc, attn_acc, status="ok") -> RunResult:
    steps = np.arange(len(acc)) * 10
    attn = np.asarray(attn_acc, float)
    return RunResult(spec=spec, status=status, eval_steps=steps,
                     metrics={"acc": np.asarray(acc, float), "attn_acc": attn,
                              "attn_acc_best_offset": attn}, train_loss=np.zeros(1))


def test_kappa_claim_refutes_a_wrong_formula(monkeypatch):
    claim = KappaClosedForm()
    params = claim.params("smoke")
    assert claim.assess(params, []).verdict is Verdict.CONFIRMED
    original = theory.snell.kappa

    def off_by_one(V, L, distribution="subset"):
        p = original(V, L, distribution)
        return type(p)(**{**p.__dict__, "value": (V - L + 1) / (V * (V - 1))})

    monkeypatch.setattr(theory.snell, "kappa", off_by_one)
    assessment = claim.assess(params, [])
    assert assessment.verdict is Verdict.REFUTED
    assert "Disagreement" in assessment.explanation


@pytest.mark.parametrize(("failures", "n", "verdict", "look"), [
    # quick's looks 8, 16, 24, 32 (confirm at >= 9, 17, 23, 30; refute at <= 4, 12, 20, 28)
    ((), 24, Verdict.CONFIRMED, 3),          # every seed: p <= 0.75 rejected at 24 seeds
    ((0, 9), 24, Verdict.INCONCLUSIVE, 3),   # two failures: the next look is missing
    ((0, 9, 17, 25), 32, Verdict.REFUTED, 4),  # 28 of 32: at the last futility boundary
    (tuple(range(4)), 8, Verdict.REFUTED, 1),  # 4 of 8: p >= 0.95 rejected at once
    ((), 40, Verdict.CONFIRMED, 3),          # runs after the stopping look change nothing
])
def test_subset_claim_sequential_rule(failures, n, verdict, look):
    claim = SubsetLearnedEverySeed()
    params = claim.params("quick")
    specs = claim.runs(params, range(n))  # the looks' seeds, and after the last
    learned, failed = ([0.1, 0.97], [0.1, 0.99]), ([0.1, 0.5], [0.1, 0.4])
    results = [fake_run(s, *(failed if i in failures else learned)) for i, s in enumerate(specs)]
    a = claim.assess(params, results)
    assert a.verdict is verdict and a.details["look"] == look
    assert (a.reason is Reason.DECIDED) == (verdict is not Verdict.INCONCLUSIVE)
    assert "one-sided 95% lower bound on the rate is" in a.explanation
    if verdict is Verdict.CONFIRMED:  # the bound against H1's 0.95: 24 of 24 give 0.88
        assert "not that every seed learns" in a.explanation


def test_subset_claim_trains_the_next_look_only_while_undecided():
    claim = SubsetLearnedEverySeed()
    params = claim.params("quick")
    first = claim.specs(params)
    assert list(first) == ["look_1"] and [s.seed for s in first["look_1"]] == list(range(100, 108))
    learned = ([0.1, 0.97], [0.1, 0.99])
    runs = [fake_run(s, *learned) for s in first["look_1"]]
    more = claim.followup(params, runs)
    assert list(more) == ["look_2"] and [s.seed for s in more["look_2"]] == list(range(108, 116))
    runs += [fake_run(s, *learned) for s in more["look_2"]]
    runs += [fake_run(s, *learned) for s in claim.followup(params, runs)["look_3"]]
    assert len(runs) == 24 and not claim.followup(params, runs)  # confirmed at look 3


def test_success_requires_aligned_attention_and_counts_divergence_as_failure():
    claim = SubsetLearnedEverySeed()
    spec = claim.checked_specs(claim.params("smoke"))[0]
    assert fake_run(spec, [0.1, 0.99], [0.1, 0.95]).first_step_reaching(SUCCESS) == 10
    assert fake_run(spec, [0.1, 0.99], [0.1, 0.2]).first_step_reaching(SUCCESS) is None
    assert fake_run(spec, [0.1, 0.99], [0.1, 0.95], "diverged").first_step_reaching(
        SUCCESS) is None


def test_uniform_claim_refutes_peaked_attention():
    claim = UniformAttentionAtInit()
    params = claim.params("smoke")
    specs = claim.checked_specs(params)
    n_src = specs[0].task.length + 1
    peaked = np.full((4, 1, n_src, n_src), 0.02 / (n_src - 1))
    idx = np.arange(n_src)
    peaked[:, 0, idx, idx] = 0.98
    results = [RunResult(spec=s, status="ok", eval_steps=np.array([0]), metrics={},
                         train_loss=np.zeros(0), attention={0: peaked}) for s in specs]
    assessment = claim.assess(params, claim.results_for(params, results))
    assert assessment.verdict is Verdict.REFUTED


@pytest.mark.slow
def test_quick_profile_verdicts(store):
    """At the quick profile the spine claims are decisive (about a minute on 2 cores)."""
    executor = LocalExecutor(store, workers=2, progress=False)
    for claim_id in ("snell.kappa_closed_form", "snell.uniform_attention_at_init",
                     "snell.subset_learned_every_seed"):
        outcome = evaluate(select(claim_id=claim_id)[0], "quick", executor)
        assert outcome.assessment.verdict is Verdict.CONFIRMED, claim_id
