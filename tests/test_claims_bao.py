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
from attnverify.compare.groups import flatten
from attnverify.compare.protocol import Reason
from attnverify.empirics import LocalExecutor, RunResult

MC_CLAIMS = [c for c in select("bao") if not c.checked_specs(c.params("smoke"))]


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


def fake_run(spec, loss, entropy, variance, status="ok", diversity=0.3, mean=0.1):
    metrics = {"loss": np.array([3.0, loss]), "attn_entropy_norm": np.array([0.5, entropy]),
               "eig_var": np.array([1.0, variance]), "eig_mean": np.array([0.0, mean]),
               "rank_res_ratio": np.array([0.5, diversity])}
    return RunResult(spec=spec, status=status, eval_steps=np.array([0, spec.steps]),
                     metrics=metrics, train_loss=np.zeros(1))


def locater_runs(params, arms, rng, noise=0.001, status=None):
    """Calibration and decision runs of ``bao.locater_effect``: ``arms`` maps (kind,
    coefficient) to (loss, entropy, eigen-variance); the stages as verify runs them."""
    claim = LocaterEffect()
    status = status or {}

    def run(spec):
        key = ("none", 0.0) if spec.model.locater == 0 else (spec.model.locater_kind,
                                                             spec.model.locater)
        loss, ent, var, *extra = arms.get(key, (3.0, 0.5, 1.0))
        diversity, mean = (*extra, 0.3, 0.1)[:2] if len(extra) < 2 else extra[:2]
        return fake_run(spec, loss + rng.normal(0, noise), ent + rng.normal(0, noise),
                        var * np.exp(rng.normal(0, noise)), status.get((key, spec.seed), "ok"),
                        diversity + rng.normal(0, noise), mean + rng.normal(0, noise))

    results = [run(s) for s in claim.checked_specs(params)]
    results += [run(s) for s in flatten(claim.followup(params, results))]
    return results


def test_locater_calibration_chooses_the_best_coefficient_and_a_matched_control():
    params = LocaterEffect().params("quick")
    arms = {("A", 0.01): (2.99, 0.5, 0.5), ("A", 0.1): (2.95, 0.55, 0.2),
            ("A", 1.0): (2.97, 0.6, 0.05), **{("F", mu): (3.0, 0.5, 1.0 / (1 + 30 * mu))
                                               for mu in (0.003, 0.01, 0.03, 0.1, 0.3, 1.0)}}
    results = locater_runs(params, arms, np.random.default_rng(0))
    decision = [r for r in results if r.spec.seed < 400]
    assert {(r.spec.model.locater_kind, r.spec.model.locater) for r in decision} == {
        ("A", 0.0), ("A", 0.1), ("F", 0.1)}  # lowest loss; 1 / (1 + 3) nearest 0.2
    assert sorted({r.spec.seed for r in decision}) == list(range(300, 308))
    assert LocaterEffect().followup(params, results) == []


@pytest.mark.parametrize(("arm", "verdict", "reason"), [
    ((2.95, 0.55, 0.2), Verdict.CONFIRMED, Reason.DECIDED),      # 0.05 nats better
    ((3.0, 0.5, 0.2), Verdict.REFUTED, Reason.DECIDED),          # no change: 0.01 rejected
    ((3.05, 0.5, 0.2), Verdict.REFUTED, Reason.DECIDED),         # worse
    ((2.95, 0.4, 0.2), Verdict.CONFIRMED, Reason.DECIDED),  # entropy falls: reported only
    ((2.995, 0.5, 0.2), Verdict.INCONCLUSIVE, Reason.CONFLICTING),  # better, by under 0.01
])
def test_locater_decision_rule(arm, verdict, reason):
    params = LocaterEffect().params("smoke")
    arms = {("A", 0.1): (3.1, 0.5, 0.5), ("A", 1.0): arm}
    a = LocaterEffect().assess(params, locater_runs(params, arms, np.random.default_rng(1)))
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation
    assert a.details["lambda_star"] == 1.0


def test_locater_needs_three_finished_pairs():
    params = LocaterEffect().params("smoke")
    arms = {("A", 1.0): (2.9, 0.6, 0.2)}
    status = {(("A", 1.0), 300): "diverged"}
    a = LocaterEffect().assess(params, locater_runs(params, arms, np.random.default_rng(2),
                                                    status=status))
    assert a.verdict is Verdict.INCONCLUSIVE and a.reason is Reason.NOT_TESTABLE


@pytest.mark.parametrize(("arm", "verdict", "reason"), [
    ((2.95, 0.5, 0.2, 0.35), Verdict.CONFIRMED, Reason.DECIDED),      # diversity rises
    ((2.95, 0.5, 0.2, 0.25), Verdict.REFUTED, Reason.DECIDED),        # falls: toward collapse
    ((2.95, 0.5, 0.2, 0.3), Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),  # no change
    ((2.95, 0.5, 1.0, 0.35), Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),  # variance unmoved
    ((2.95, 0.5, 3.0, 0.35), Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),  # variance up
    ((2.95, 0.5, 0.2, 0.25, 0.0), Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),  # mean 0
])
def test_token_diversity_rule_needs_the_variance_intervention(arm, verdict, reason):
    """bao.small_variance_prevents_rank_collapse_in_training decides on the paired diversity
    change only where LocAteR lowered the eigen-variance (its precondition)."""
    from attnverify.compare.claims.bao import SmallVarianceKeepsTokenDiversity

    claim = SmallVarianceKeepsTokenDiversity()
    params = claim.params("smoke")
    arms = {("A", 0.1): (3.1, 0.5, 0.5), ("A", 1.0): arm}
    a = claim.assess(params, locater_runs(params, arms, np.random.default_rng(3)))
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation
    assert claim.specs(params) == LocaterEffect().specs(params)  # the same runs, shared


def test_rank_collapse_refutes_a_zero_mean_localized_point():
    """Negative control: at eigen-mean 0 the 'localized' point is the zero-mean W of the same
    norm, so it cannot keep significantly more: refuted."""
    from attnverify.compare.claims.bao import RankCollapseAtUniform

    claim = RankCollapseAtUniform()
    params = {**claim.params("smoke"), "localized": (0.0, 0.01)}
    a = claim.assess(params, [])
    assert a.verdict is Verdict.REFUTED and "not significantly larger" in a.explanation


def test_spectrum_claim_follows_the_sign():
    params = {**TrainedSpectrumPredictsLocalization().params("smoke"), "seeds": 4}
    var = [np.array([1.0, 1.1, 1.2, 1.3]), np.array([0.1, 0.2, 0.3, 0.4])]
    claim = TrainedSpectrumPredictsLocalization()
    neg = claim.assess(params, fake_lm_results(params, var, [1 - v for v in var], var))
    pos = claim.assess(params, fake_lm_results(params, var, [v for v in var], var))
    assert neg.verdict is Verdict.CONFIRMED and pos.verdict is Verdict.REFUTED


def test_training_claims_end_to_end_at_smoke(store):
    executor = LocalExecutor(store, workers=1, progress=False)
    spectrum = evaluate(select(claim_id="bao.trained_spectrum_predicts_localization")[0],
                        "smoke", executor)
    assert set(spectrum.figures()) == {"spectrum_vs_entropy"} and len(spectrum.run_keys) == 6
    locater = evaluate(select(claim_id="bao.locater_effect")[0], "smoke", executor)
    # 2 calibration seeds x (none + 2 LocAteR + 2 control), then 3 decision seeds x 3 arms
    assert len(locater.run_keys) == 2 * 5 + 3 * 3
    assert set(locater.figures()) == {"locater_curves"}
    assert locater.assessment.verdict in set(Verdict)


@pytest.mark.parametrize(("slope", "verdict"), [
    (-1.0, Verdict.CONFIRMED),      # entropy falls with |m|
    (0.0, Verdict.INCONCLUSIVE),    # flat: nothing significant either way
    (1.0, Verdict.REFUTED),         # rises with |m|
])
def test_entropy_monotone_in_mean_rule(monkeypatch, slope, verdict):
    """The rule on constructed entropies: per walk, H = 4 + slope |m| + noise shared across the
    grid (common random numbers), so a slope of 0 moves nothing significantly."""
    from types import SimpleNamespace

    import attnverify.compare.claims.bao.entropy_grid as entropy_module
    from attnverify.compare.claims.bao import EntropyMonotoneInMean

    noise = np.random.default_rng(0).normal(0, 0.1, 500)

    def fake_scores(points, params):
        def entropy(mean):
            jitter = np.random.default_rng(int(abs(mean) * 1000)).normal(0, 1e-4, 500)
            return 4 + slope * abs(mean) + noise + jitter * (slope != 0)

        return [(None, SimpleNamespace(entropy=entropy(p.eig_mean))) for p in points]

    monkeypatch.setattr(entropy_module, "scores_at_many", fake_scores)
    monkeypatch.setattr(entropy_module.theory.bao, "annealed_entropy",
                        lambda d, T, m, s: SimpleNamespace(value=4.0))
    claim = EntropyMonotoneInMean()
    a = claim.assess(claim.params("smoke"), [])
    assert a.verdict is verdict, a.explanation
    if slope > 0:
        assert "rises significantly" in a.explanation


def test_points_that_share_walks_are_drawn_once_and_keep_their_order(monkeypatch, tmp_path):
    """``scores_at_many``: each point's sample is the one ``scores_at`` gives it alone, in the
    points' order, with the walks drawn once per (d, T, walk seed); with the cache on, a second
    call draws nothing, and a partly cached group draws once for what is missing."""
    import torch

    import attnverify.compare.claims.bao.common as common
    from attnverify.compare.claims.bao.common import ScorePoint, scores_at, scores_at_many
    from attnverify.compare.memo import rooted

    params = {"n_samples": 64, "seed": 0}
    points = [ScorePoint(8, 12, 0.1, 0.2), ScorePoint(16, 12, 0.1, 0.2),
              ScorePoint(8, 12, 0.0, 0.5), ScorePoint(8, 12, 0.1, 0.2, symmetric=False),
              ScorePoint(8, 12, 0.1, 0.2, offset=1), ScorePoint(8, 20, 0.3, 0.1)]
    draws = []
    real = common.sample_scores_many

    def counted(ws, T, n, seed):
        draws.append((ws[0].shape[0], T, seed, len(ws)))
        return real(ws, T, n, seed=seed)

    monkeypatch.setattr(common, "sample_scores_many", counted)
    together = scores_at_many(points, params)
    # (d, T, walk seed): (8, 12, seed) holds three points, the others one each
    assert sorted(draws) == sorted([(8, 12, 10_000, 3), (16, 12, 10_000, 1),
                                    (8, 12, 10_001, 1), (8, 20, 10_000, 1)])
    for p, (w, sample) in zip(points, together, strict=True):
        w_alone, alone = scores_at(p.d, p.T, p.eig_mean, p.eig_std, params, p.symmetric,
                                   p.offset)
        assert torch.equal(w, w_alone)
        for name, array in sample.arrays().items():
            np.testing.assert_array_equal(array, alone.arrays()[name], err_msg=name)
    draws.clear()
    with rooted(tmp_path):
        first = scores_at_many(points[:3], params)
        assert len(draws) == 2
        draws.clear()
        again = scores_at_many(points[:3], params)
        assert draws == []  # all cached
        scores_at_many(points[:4], params)  # one new point in a cached group: one draw
        assert len(draws) == 1
    for (_, a), (_, b) in zip(first, again, strict=True):
        np.testing.assert_array_equal(a.entropy, b.entropy)


def test_the_propagation_check_is_not_testable_where_it_cannot_reject_a_wrong_formula(
        monkeypatch):
    """The power check can fail: a 'wrong' formula equal to rho itself (the negative control)
    passes the comparison everywhere, so the check is not testable; the real ones are rejected
    at smoke."""
    from attnverify.compare.claims.bao import propagation_probability as module

    claim = module.PropagationProbability()
    params = claim.params("smoke")
    a = claim.assess(params, [])
    assert a.verdict is Verdict.CONFIRMED and all(a.details["power_check"].values())
    monkeypatch.setattr(module, "WRONG_FORMULAS",
                        {**module.WRONG_FORMULAS, "rho itself": (lambda m: m, lambda s: s)})
    a = claim.assess(params, [])
    assert a.verdict is Verdict.INCONCLUSIVE and a.reason is Reason.NOT_TESTABLE
    assert "does not reject rho itself" in a.explanation
