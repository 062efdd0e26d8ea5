"""``snell.uniform_probe_agrees_with_attention``: the agreement metric A of spec §3.2 on
hand-made cases (spec test T12), its shuffled baseline at k / S, the rule on constructed
excesses (it can fail), the claim on constructed run pairs, and the recorded probe on a real
(tiny) run, whose spec keeps its earlier key while the probe is not recorded."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.compare import Verdict
from attnverify.compare.claims.snell import UniformProbeAgreesWithAttention
from attnverify.compare.claims.snell.uniform_probe_agrees_with_attention import (
    agreement,
    decide_agreement,
    shuffled_agreement,
    top_k,
)
from attnverify.compare.protocol import Reason
from attnverify.empirics import CopyTask, RunResult, RunSpec, Seq2SeqConfig, train


def test_top_k_is_the_official_five_percent():
    assert [top_k(s) for s in (5, 20, 21, 41, 100)] == [1, 1, 2, 3, 5]


def test_agreement_on_hand_made_cases():
    scores = np.array([[[0.1, 0.9, 0.3], [0.5, 0.5, 0.2]]])  # (B=1, L=2, S=3), k = 1
    assert agreement(np.array([[1, 0]]), scores) == 1.0  # argmax hit; a tie counts as a match
    assert agreement(np.array([[2, 2]]), scores) == 0.0
    assert agreement(np.array([[1, 2]]), scores) == 0.5


def test_agreement_is_asymmetric():
    u = np.array([[[0.0, 1.0, 0.9]]])
    v = np.array([[[0.0, 0.9, 1.0]]])
    assert agreement(u.argmax(-1), v) == 0.0 and agreement(v.argmax(-1), v) == 1.0


def test_the_shuffled_baseline_is_k_over_s():
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(200, 40, 41))
    argmax = scores.argmax(-1)  # perfect agreement before the shuffle
    assert agreement(argmax, scores) == 1.0
    assert shuffled_agreement(argmax, scores, seed=1) == pytest.approx(3 / 41, abs=0.01)


@pytest.mark.parametrize(("excess", "verdict", "reason"), [
    ([0.7, 0.8, 0.75, 0.72], Verdict.CONFIRMED, Reason.DECIDED),
    ([0.01, -0.02, 0.03, 0.0], Verdict.REFUTED, Reason.DECIDED),
    ([0.10, 0.12, 0.11, 0.09, 0.1, 0.11], Verdict.INCONCLUSIVE, Reason.CONFLICTING),
    ([0.6, -0.2, 0.5], Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    ([0.8, 0.9], Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
    ([0.5, 0.5, 0.5], Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),  # no spread: no t-test
])
def test_agreement_rule(excess, verdict, reason):
    got, why, text, p = decide_agreement(excess)
    assert (got, why) == (verdict, reason), text
    assert 0 <= p <= 1


def _pair(spec_normal, spec_uniform, learned, agree):
    """A normal and a uniform run on L = 4 (S = 5, k = 1); the uniform probe ranks the normal
    argmax first on every step when ``agree``, last otherwise."""
    argmax = np.tile(np.arange(4), (6, 1))
    probe = np.full((6, 4, 5), -1.0)
    np.put_along_axis(probe, argmax[..., None], 0.0 if agree else -2.0, axis=-1)
    steps = np.array([0, 10])

    def run(spec, acc, final):
        return RunResult(spec=spec, status="ok", eval_steps=steps,
                         metrics={"acc": np.array([0.1, acc]),
                                  "attn_acc": np.array([0.2, 1.0 if learned else 0.2]),
                                  "attn_acc_best_offset": np.array([0.2, 1.0 if learned else 0.2]),
                                  "ktiw_acc": np.array([0.2, 0.9])},
                         train_loss=np.zeros(10), final=final)

    final = {"attn_argmax": argmax.astype(np.int16), "ktiw_probe": probe}
    return [run(spec_normal, 1.0 if learned else 0.3, final),
            run(spec_uniform, 0.5, final)]


@pytest.mark.parametrize(("agree", "verdict"), [(True, Verdict.CONFIRMED),
                                                 (False, Verdict.REFUTED)])
def test_the_claim_reads_its_run_pairs(agree, verdict):
    claim = UniformProbeAgreesWithAttention()
    params = claim.params("smoke") | {"seeds": 4}
    pairs = claim.specs(params)
    assert len(pairs) == 8 and list(pairs)[:2] == ["subset_300", "subset_301"]
    assert all(normal.seed == uniform.seed for normal, uniform in pairs.values())
    normal, uniform = pairs["subset_300"]
    assert uniform.model.attention == "uniform" and normal.model.record_probe
    results = []
    for i, (normal, uniform) in enumerate(pairs.values()):
        subset = normal.task.distribution == "subset"
        results += _pair(normal, uniform, learned=subset or i % 2 == 0, agree=agree)
    a = claim.assess(params, claim.results_for(params, results))
    assert a.verdict is verdict, a.explanation
    assert "permutations" in a.explanation and a.details["xi"]["subset"]["xi_star"] == 1.0


def test_too_few_learned_pairs_are_not_testable():
    claim = UniformProbeAgreesWithAttention()
    params = claim.params("smoke") | {"seeds": 4}
    results = []
    for i, (normal, uniform) in enumerate(claim.specs(params).values()):
        results += _pair(normal, uniform, learned=i < 2, agree=True)
    assert claim.assess(params, claim.results_for(params, results)).reason is Reason.NOT_TESTABLE


def test_a_real_run_records_the_probe_and_an_unrecorded_spec_keeps_its_key():
    spec = RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8,
                                                                        record_probe=True),
                   steps=3, eval_every=3, eval_size=5, seed=0)
    result = train(spec)
    assert result.final["attn_argmax"].shape == (5, 4)
    assert result.final["ktiw_probe"].shape == (5, 4, 5)
    assert (result.final["ktiw_probe"] <= 0).all()  # log-probabilities
    plain = Seq2SeqConfig(hidden=8)
    assert "record_probe" not in plain.to_dict()
    assert train(RunSpec(task=spec.task, model=plain, steps=3, eval_every=3, eval_size=5,
                         seed=0)).final == {}
