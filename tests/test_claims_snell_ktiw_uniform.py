"""The three claims on the KTIW probe under frozen uniform attention
(compare/claims/snell/ktiw_uniform_runs.py) on constructed results: each verdict is reached
where its design says, the testability precondition and diverged runs are handled, and the
rate tests agree with scipy's exact binomial test."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy import stats

from attnverify.compare import Verdict
from attnverify.compare.claims.snell import (
    KtiwHarderOnPermutations,
    KtiwLearnedUnderUniformAttention,
    PermutationKtiwAtChance,
)
from attnverify.compare.claims.snell.ktiw_uniform_runs import (
    constructed_probe_run,
    ktiw_specs,
    probe_levels,
)
from attnverify.compare.decision import rate_above, rate_above_verdicts
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult


def assess(claim, params, subset, permutation, status=None):
    """``claim`` on runs whose final probes are ``subset`` and ``permutation`` (per seed)."""
    specs = claim.specs(params)
    runs = [constructed_probe_run(spec, final) for group, finals in
            (("subset", subset), ("permutation", permutation))
            for spec, final in zip(specs[group], finals, strict=True)]
    for i, s in (status or {}).items():
        runs[i] = dataclasses.replace(runs[i], status=s)
    return claim.assess(params, claim.results_for(params, runs))


@pytest.mark.parametrize(("k", "n"), [(0, 1), (3, 10), (9, 10), (12, 12), (15, 20)])
def test_rate_above_is_the_exact_binomial_test(k, n):
    test, refutation = rate_above(k, n, 0.5, 0.75, "t")
    assert test.p_h1 == pytest.approx(stats.binomtest(k, n, 0.5, "greater").pvalue)
    assert test.p_opposite == pytest.approx(stats.binomtest(k, n, 0.5, "less").pvalue)
    assert refutation == pytest.approx(stats.binomtest(k, n, 0.75, "less").pvalue)


def test_rate_above_verdicts_follow_the_extreme_counts():
    assert rate_above_verdicts(5, 0.5, 0.75, 0.025, 0.10) == {Verdict.INCONCLUSIVE,
                                                              Verdict.REFUTED}
    assert Verdict.CONFIRMED in rate_above_verdicts(6, 0.5, 0.75, 0.025, 0.10)  # 1/64
    with pytest.raises(ValueError, match="h0 < h1"):
        rate_above(1, 2, 0.75, 0.5, "t")
    with pytest.raises(ValueError, match=r"\[0, n\]"):
        rate_above(3, 2, 0.5, 0.75, "t")


def test_the_levels_are_multiples_of_chance_and_stay_ordered():
    assert probe_levels(40) == probe_levels(40)
    levels = probe_levels(40)
    assert (levels.learned, levels.at_chance) == (5 / 41, 2 / 41)
    assert probe_levels(4).learned == 0.6  # 5/S out of reach at S = 5: half-way to 1
    for length in range(3, 60):
        lv = probe_levels(length)
        assert lv.chance < lv.at_chance < lv.learned < 1


def test_the_runs_share_no_seed_and_no_run_with_older_blocks():
    params = KtiwLearnedUnderUniformAttention().params("full")
    specs = ktiw_specs(params)
    seeds = [s.seed for group in specs.values() for s in group]
    assert len(set(seeds)) == len(seeds) == 40 and min(seeds) >= 1100
    assert all(s.model.attention == "uniform" for group in specs.values() for s in group)


def test_learned_on_subsets_rule():
    claim = KtiwLearnedUnderUniformAttention()
    params = claim.params("quick")  # 12 seeds: confirmed at >= 10, refuted at <= 6
    lv, n = probe_levels(params["L"]), params["seeds"]
    perm = [0.0] * n  # not read

    def verdict(learned):
        return assess(claim, params, [0.9] * learned + [lv.chance] * (n - learned), perm)

    a = verdict(10)
    assert a.verdict is Verdict.CONFIRMED and a.p_value < 0.025 and "10 of 12" in a.explanation
    assert verdict(8).verdict is Verdict.INCONCLUSIVE
    a = verdict(6)
    assert a.verdict is Verdict.REFUTED and a.refuting_p < 0.10
    # a probe exactly at the threshold has not learned
    assert assess(claim, params, [lv.learned] * n, perm).verdict is Verdict.REFUTED
    # a diverged subset seed has not learned: 10 learned, 2 of them diverged -> 8 of 12
    learned = [0.9] * 10 + [lv.chance] * 2
    a = assess(claim, params, learned, perm, status={0: "diverged", 1: "diverged"})
    assert a.verdict is Verdict.INCONCLUSIVE and "2 diverged" in a.explanation
    # the negative control refutes
    control = claim.results_for(params, claim.negative_control(params))
    assert claim.assess(params, control).verdict is Verdict.REFUTED


def _starting_at(claim, params, start):
    """Results where the first subset run's probe is ``start`` at step 0."""
    runs = [constructed_probe_run(s, 0.9) for g in claim.specs(params).values() for s in g]
    runs[0].metrics["ktiw_acc"][0] = start
    return claim.results_for(params, runs)


@pytest.mark.parametrize("claim", [KtiwLearnedUnderUniformAttention(),
                                   KtiwHarderOnPermutations()])
def test_a_probe_learned_at_step_0_is_not_testable(claim):
    params = claim.params("quick")
    lv = probe_levels(params["L"])
    a = claim.assess(params, _starting_at(claim, params, lv.learned + 0.01))
    assert a.reason is Reason.NOT_TESTABLE and "step 0" in a.explanation
    assert a.refuting_p is None
    # a noisy start between twice chance and the learned level is no reason to stop
    a = claim.assess(params, _starting_at(claim, params, lv.at_chance + 0.01))
    assert a.reason is not Reason.NOT_TESTABLE


def test_harder_on_permutations_rule():
    claim = KtiwHarderOnPermutations()
    params = claim.params("quick")
    lv, n = probe_levels(params["L"]), params["seeds"]
    learned, not_learned = [0.9] * n, [lv.chance] * n
    a = assess(claim, params, learned, not_learned)
    assert a.verdict is Verdict.CONFIRMED and a.empirical.value == 1.0
    # equal rates refute a gain of 0.3 at 12 seeds each (the profile's seeds: see the design)
    a = assess(claim, params, learned, learned)
    assert a.verdict is Verdict.REFUTED and a.refuting_p < 0.10 and "+0.00" in a.explanation
    # a gain of 0.25 is neither: 12 of 12 against 9 of 12
    a = assess(claim, params, learned, [0.9] * 9 + [lv.chance] * 3)
    assert a.verdict is Verdict.INCONCLUSIVE
    # permutation probes far above chance but below 5/S are not learned
    mid = (lv.at_chance + lv.learned) / 2
    assert assess(claim, params, learned, [mid] * n).verdict is Verdict.CONFIRMED
    # a diverged permutation run is left out (11 of 11 left), a diverged subset run failed
    a = assess(claim, params, learned, learned, status={n: "diverged"})
    assert "1 diverged permutation run" in a.explanation and a.n_seeds == 2 * n - 1
    every = {i: "diverged" for i in range(n, 2 * n)}
    a = assess(claim, params, learned, learned, status=every)
    assert a.reason is Reason.NOT_TESTABLE and "every permutation run diverged" in a.explanation
    control = claim.results_for(params, claim.negative_control(params))
    assert claim.assess(params, control).verdict is not Verdict.CONFIRMED


def test_permutation_at_chance_rule():
    claim = PermutationKtiwAtChance()
    params = claim.params("quick")
    lv, n = probe_levels(params["L"]), params["seeds"]
    subset = [0.9] * n  # not read
    a = assess(claim, params, subset, [lv.chance] * n)
    assert a.verdict is Verdict.CONFIRMED and "log(L!)/L" not in a.explanation
    a = assess(claim, params, subset, [0.6] * n)
    assert a.verdict is Verdict.REFUTED and "log(L!)/L" in a.explanation
    # the constructed runs end at per-word loss 1 < log(L!)/L at L = 20: the order explains
    assert "assumption (a)" in a.explanation and "fails" in a.explanation
    # a probe at exactly twice chance is not at chance
    assert assess(claim, params, subset, [lv.at_chance] * n).verdict is Verdict.REFUTED
    a = assess(claim, params, subset, [lv.chance] * n,
               status={i: "diverged" for i in range(n, 2 * n)})
    assert a.reason is Reason.NOT_TESTABLE and a.n_seeds == 0


def test_the_split_claims_read_one_quantity_each():
    """Each claim reads only its own distribution (the rate claims) or both (the contrast):
    changing the other distribution's runs changes nothing."""
    learned_claim, chance_claim = KtiwLearnedUnderUniformAttention(), PermutationKtiwAtChance()
    params = learned_claim.params("quick")
    n = params["seeds"]
    base = assess(learned_claim, params, [0.9] * n, [0.0] * n)
    other = assess(learned_claim, params, [0.9] * n, [1.0] * n)
    assert base.verdict is other.verdict and base.p_value == other.p_value
    base = assess(chance_claim, params, [0.9] * n, [0.0] * n)
    other = assess(chance_claim, params, [0.0] * n, [0.0] * n)
    assert base.verdict is other.verdict and base.p_value == other.p_value


def test_a_constructed_run_starts_at_zero_and_ends_at_its_final():
    params = KtiwLearnedUnderUniformAttention().params("smoke")
    spec = ktiw_specs(params)["subset"][0]
    run: RunResult = constructed_probe_run(spec, 0.4)
    assert run.metric("ktiw_acc")[0] == 0.0 and run.metric("ktiw_acc")[-1] == 0.4
    assert run.eval_steps[-1] == spec.steps and np.all(np.diff(run.eval_steps) > 0)
