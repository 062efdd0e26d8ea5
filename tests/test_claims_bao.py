"""The Bao claims decide correctly on constructed inputs (they can fail) and run end to end at
the smoke profile."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify import theory
from attnverify.compare import Verdict, evaluate, select
from attnverify.compare.claims.bao import (
    AntrpVariantDisagrees,
    LocaterEffect,
    ScoreMoments,
    TrainedSpectrumPredictsLocalization,
)
from attnverify.compare.claims.bao.training import lm_specs
from attnverify.empirics import LocalExecutor, RunResult

MC_CLAIMS = [c for c in select("bao") if not c.specs(c.params("smoke"))]


@pytest.mark.parametrize("claim", MC_CLAIMS, ids=lambda c: c.id)
def test_monte_carlo_claims_confirm_at_smoke(claim):
    a = claim.assess(claim.params("smoke"), [])
    assert a.verdict is Verdict.CONFIRMED, a.explanation
    assert "random walk" in a.statistic or claim.id == "bao.rank_collapse_at_uniform"


def test_score_moments_refutes_a_wrong_variance(monkeypatch):
    claim = ScoreMoments()
    original = theory.bao.score_moments_of_matrix

    def inflated(W, T, c=None, sx2=1.0):
        mom = original(W, T, c, sx2)
        return type(mom)(mu=mom.mu, v=1.3 * mom.v)

    monkeypatch.setattr(theory.bao, "score_moments_of_matrix", inflated)
    assert claim.assess(claim.params("smoke"), []).verdict is Verdict.REFUTED


def test_antrp_claim_refutes_when_the_variant_is_the_derivation(monkeypatch):
    """If ANTRP's formula were the derived one, the discrepancy claim must not confirm."""
    claim = AntrpVariantDisagrees()

    def as_derived(tr_w, frob2, d, T):
        return theory.bao.moments_from_traces(tr_w, frob2, frob2, T=T, c=1 / np.sqrt(d))

    monkeypatch.setattr(theory.bao, "antrp_moments_from_traces", as_derived)
    assert claim.assess(claim.params("smoke"), []).verdict is Verdict.REFUTED


def fake_lm_results(params, var, ent, loss):
    """Runs with given final metrics per (coefficient index, seed)."""
    out = []
    for i, spec in enumerate(lm_specs(params)):
        lam_i, seed = divmod(i, params["seeds"])
        metrics = {k: np.array([1.0, v[lam_i][seed]]) for k, v in
                   (("eig_var", var), ("attn_entropy_norm", ent), ("loss", loss))}
        out.append(RunResult(spec=spec, status="ok", eval_steps=np.array([0, spec.steps]),
                             metrics=metrics, train_loss=np.zeros(1)))
    return out


@pytest.mark.parametrize(("loss_shift", "ent_shift", "expected"), [
    (0.0, 0.1, Verdict.CONFIRMED),
    (0.2, 0.1, Verdict.REFUTED),      # loss clearly worse than the 2% margin
    (0.0, -0.1, Verdict.REFUTED),     # entropy falls
    (0.0, 0.0, Verdict.INCONCLUSIVE),  # no entropy change
])
def test_locater_decision_rule(loss_shift, ent_shift, expected):
    params = LocaterEffect().params("smoke")
    rng = np.random.default_rng(0)
    n = params["seeds"]
    noise = lambda: rng.normal(0, 0.001, n)  # noqa: E731
    var = [1.0 + noise(), 0.1 + noise()]
    ent = [0.5 + noise(), 0.5 + ent_shift + noise()]
    loss = [1.0 + noise(), 1.0 + loss_shift + noise()]
    a = LocaterEffect().assess(params, fake_lm_results(params, var, ent, loss))
    assert a.verdict is expected, a.explanation


def test_spectrum_claim_follows_the_sign():
    params = {**TrainedSpectrumPredictsLocalization().params("smoke"), "seeds": 4}
    var = [np.array([1.0, 1.1, 1.2, 1.3]), np.array([0.1, 0.2, 0.3, 0.4])]
    claim = TrainedSpectrumPredictsLocalization()
    neg = claim.assess(params, fake_lm_results(params, var, [1 - v for v in var], var))
    pos = claim.assess(params, fake_lm_results(params, var, [v for v in var], var))
    assert neg.verdict is Verdict.CONFIRMED and pos.verdict is Verdict.REFUTED


def test_training_claims_end_to_end_at_smoke(store):
    executor = LocalExecutor(store, workers=1, progress=False)
    for claim_id in ("bao.locater_effect", "bao.trained_spectrum_predicts_localization"):
        outcome = evaluate(select(claim_id=claim_id)[0], "smoke", executor)
        a = outcome.assessment
        assert a.verdict in set(Verdict) and a.figures and a.n_seeds == 3
        assert len(outcome.run_keys) == 6
    assert len(executor.computed) == 6  # the second claim read the first claim's runs


def test_a_run_diverging_with_locater_only_is_a_failed_seed():
    params = LocaterEffect().params("smoke")
    rng = np.random.default_rng(0)
    n = params["seeds"]
    noise = lambda: rng.normal(0, 0.001, n)  # noqa: E731
    var, ent, loss = [1.0 + noise(), 0.1 + noise()], [0.5 + noise(), 0.6 + noise()], [
        1.0 + noise(), 1.0 + noise()]
    results = fake_lm_results(params, var, ent, loss)
    assert LocaterEffect().assess(params, results).verdict is Verdict.CONFIRMED
    results[n].status = "diverged"  # the first LocAteR seed; its baseline twin is fine
    a = LocaterEffect().assess(params, results)
    assert a.verdict is Verdict.REFUTED and "diverged with LocAteR only" in a.explanation
