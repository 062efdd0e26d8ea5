"""Decision rules of the Snell claims on constructed results: each claim can come out
confirmed, refuted or inconclusive, and says why."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from attnverify.compare import Verdict
from attnverify.compare.claims.snell import (
    KtiwPrecedesAttention,
    PermutationIsHard,
    PermutationSaddle,
    Stage1BowOptimum,
)
from attnverify.compare.claims.snell.common import every_seed_verdict
from attnverify.compare.decision import count_test, decide, time_test
from attnverify.compare.protocol import Reason
from attnverify.compare.stats import compare_groups
from attnverify.empirics import RunResult


def fake(spec, **metrics) -> RunResult:
    length = len(next(iter(metrics.values())))
    return RunResult(spec=spec, status="ok", eval_steps=np.arange(length) * 10,
                     metrics={k: np.asarray(v, float) for k, v in metrics.items()},
                     train_loss=np.zeros(1))


@pytest.mark.parametrize(("k", "n", "verdict"), [
    (12, 12, Verdict.CONFIRMED), (11, 12, Verdict.INCONCLUSIVE), (10, 12, Verdict.INCONCLUSIVE),
    (3, 3, Verdict.INCONCLUSIVE), (5, 12, Verdict.REFUTED), (0, 0, Verdict.INCONCLUSIVE),
])
def test_every_seed_rule(k, n, verdict):
    assert every_seed_verdict(k, n)[0] is verdict


def test_group_comparison_directions():
    """compare_groups: Fisher on counts and log-rank on censored times, each one-sided both
    ways; a group that never learns is worse on both."""
    worse = compare_groups([None] * 8, [50] * 8, budget=100)
    assert worse.fisher_p_a_worse < 0.025 and worse.logrank_p_a_slower < 0.025
    assert worse.median_steps == (None, 50.0)
    better = compare_groups([50] * 8, [None] * 8, budget=100)
    assert better.fisher_p_a_better < 0.025 and better.logrank_p_a_faster < 0.025
    slower = compare_groups([90, 95, 80, 85, 90, 99, 88, 92], [10, 20, 15, 12, 18, 11, 14, 16],
                            budget=100)
    assert slower.fisher_p_a_worse == 1.0 and slower.logrank_p_a_slower < 0.025
    nothing = compare_groups([None] * 4, [None] * 4, budget=100)
    assert nothing.logrank_p_a_slower == 1.0 == nothing.logrank_p_a_faster


def test_restricted_mean_is_the_area_under_the_kaplan_meier_curve():
    """The restricted mean step of success is the integral of scipy's Kaplan-Meier "not yet
    succeeded" curve from 0 to the budget (runs that never succeed censored there)."""
    rng = np.random.default_rng(3)
    budget = 200
    for _ in range(20):
        steps = [None if rng.random() < 0.3 else int(rng.integers(1, budget + 1))
                 for _ in range(int(rng.integers(1, 12)))]
        got = compare_groups(steps, [50], budget).restricted_mean_steps[0]
        if all(s is None for s in steps):
            assert got == budget
            continue
        times = np.array([budget if s is None else s for s in steps], dtype=float)
        data = stats.CensoredData.right_censored(times, np.array([s is None for s in steps]))
        grid = np.arange(budget)  # the survival is a step function of integer steps
        area = float(stats.ecdf(data).sf.evaluate(grid).sum())
        assert got == pytest.approx(area, abs=1e-9)
    assert compare_groups([None, 100], [None], 100).restricted_mean_steps == (100.0, 100.0)


def test_opposite_tests_give_conflicting_evidence():
    """A fails more often (Fisher) yet its successes come first (log-rank): two tests at the
    protocol's level point opposite ways, so the verdict is inconclusive, whichever decides."""
    mixed = compare_groups([10] * 30 + [None] * 10, [65] * 40, budget=100)
    assert mixed.fisher_p_a_worse < 0.025 and mixed.logrank_p_a_faster < 0.025
    for primary, secondary in ((count_test(mixed), time_test(mixed)),
                               (time_test(mixed), count_test(mixed))):
        d = decide(primary, 0.025, [secondary])
        assert d.verdict is Verdict.INCONCLUSIVE and d.reason is Reason.CONFLICTING
    one_way = compare_groups([None] * 8, [50] * 8, budget=100)
    d = decide(time_test(one_way), 0.025, [count_test(one_way)])
    assert d.verdict is Verdict.CONFIRMED and d.reason is Reason.DECIDED


def test_permutation_is_hard_reads_both_groups():
    claim = PermutationIsHard()
    params = {**claim.params("smoke"), "seeds": 6}
    specs = claim.checked_specs(params)
    fail = {"acc": [0.1, 0.5], "attn_acc": [0.1, 0.2], "attn_acc_best_offset": [0.1, 0.2],
            "ktiw_acc": [0.1, 0.1]}
    learn = {"acc": [0.1, 0.99], "attn_acc": [0.1, 0.95], "attn_acc_best_offset": [0.1, 0.95],
             "ktiw_acc": [0.1, 1.0]}
    results = [fake(s, **(fail if s.task.distribution == "permutation" else learn))
               for s in specs]
    a = claim.assess(params, claim.results_for(params, results))
    assert a.verdict is Verdict.CONFIRMED
    # the headline summarises the deciding endpoint: never-learned permutations sit at the
    # budget, the subset runs at their first successful evaluation
    assert a.empirical.value == pytest.approx(params["steps"] - results[-1].eval_steps[-1])
    swapped = [fake(s, **(learn if s.task.distribution == "permutation" else fail))
               for s in specs]
    assert claim.assess(params, claim.results_for(params, swapped)).verdict is Verdict.REFUTED
    assert all(s.seed >= 100 for s in specs)  # the fresh decision block
    # everything learns at the same step: no difference, below the smallest that matters (a
    # tenth of the budget), so the refutation test refutes; the report names both numbers
    same = [fake(s, **learn) for s in specs]
    a = claim.assess(params, claim.results_for(params, same))
    assert a.verdict is Verdict.REFUTED and a.refuting_p < 0.10
    assert f"smallest difference that matters is {params['steps'] // 10} steps" in a.explanation
    # half the permutation runs fail: slower by half the budget, but at 2 seeds each neither
    # test decides
    two = {**params, "seeds": 2}
    specs = claim.checked_specs(two)
    mixed = [fake(s, **(fail if s.task.distribution == "permutation" and s.seed % 2 else learn))
             for s in specs]
    a = claim.assess(two, claim.results_for(two, mixed))
    assert a.verdict is Verdict.INCONCLUSIVE and "decides neither way" in a.explanation


def test_ktiw_precedes_attention_rule():
    claim = KtiwPrecedesAttention()
    params = claim.params("quick")
    specs = claim.checked_specs(params)
    before = {"ktiw_acc": [0.0, 0.6, 0.9, 1.0, 1.0, 1.0], "attn_acc": [0, 0.1, 0.3, 0.8, 1, 1]}
    # attention at step 10, KTIW only at step 50: later (no slack beyond a tie)
    after = {"ktiw_acc": [0.0, 0.0, 0.0, 0.0, 0.0, 0.6], "attn_acc": [0, 0.6, 0.9, 1, 1, 1]}
    never = {"ktiw_acc": [0.0, 0.6, 0.9, 1.0, 1.0, 1.0], "attn_acc": [0.0] * 6}
    a = claim.assess(params, [fake(s, **before) for s in specs])
    assert a.verdict is Verdict.CONFIRMED
    assert claim.assess(params, [fake(s, **after) for s in specs]).verdict is Verdict.REFUTED
    tie = {"ktiw_acc": [0.0, 0.6, 1, 1, 1, 1], "attn_acc": [0.0, 0.6, 1, 1, 1, 1]}
    tied = claim.assess(params, [fake(s, **tie) for s in specs])
    assert tied.verdict is Verdict.CONFIRMED and tied.details["ties"] == len(specs)
    lag = {"ktiw_acc": [0.0, 0.0, 0.6, 1, 1, 1], "attn_acc": [0.0, 0.6, 1, 1, 1, 1]}
    assert claim.assess(params, [fake(s, **lag) for s in specs]).verdict is Verdict.REFUTED
    # the sensitivity to the crossing threshold is reported: at 0.3 and 0.5 the probe (0.6 at
    # step 10) is ahead of attention (0.3 at step 20), at 0.7 both first pass at step 30
    assert a.details["threshold_sensitivity"] == {"0.3": (len(specs), len(specs)),
                                                  "0.5": (len(specs), len(specs)),
                                                  "0.7": (len(specs), len(specs))}
    assert "with both curves read at 0.3:" in a.explanation
    late = claim.assess(params, [fake(s, **after) for s in specs])
    assert late.details["threshold_sensitivity"]["0.3"] == (0, len(specs))
    # seeds whose attention is never learned do not count either way
    none = claim.assess(params, [fake(s, **never) for s in specs])
    assert none.verdict is Verdict.INCONCLUSIVE and none.reason is Reason.NOT_TESTABLE


def test_bag_of_words_optimum_rules():
    bow = Stage1BowOptimum()
    params = bow.params("quick")
    length, n = params["L"], params["seeds"]
    floor, top = math.lgamma(length + 1) / length, math.log(length)
    specs = bow.checked_specs(params)  # subset, permutation, then the bag-of-words runs

    def assess(claim, runs):  # the results as verify passes them: by group name
        return claim.assess(params, claim.results_for(params, runs))

    def results(subset_loss, perm_loss, subset_ktiw=0.7, perm_ktiw=0.04, bow_loss=None):
        out = []
        for i, s in enumerate(specs):
            if i >= 2 * n:  # the bag-of-words model runs
                opt = math.log(length)  # log V = log L for V = L; log L for the subset
                out.append(fake(s, loss=[5.0, opt if bow_loss is None else bow_loss]))
                continue
            subset = i < n
            jitter = 0.01 * (i % n)
            out.append(fake(s, loss_words=[4.0, (subset_loss if subset else perm_loss) + jitter],
                            acc=[0.0, 0.5],
                            ktiw_acc=[0.0, (subset_ktiw if subset else perm_ktiw) + jitter / 10]))
        return out

    mid = (floor + top) / 2
    assert assess(bow, results(mid, mid)).verdict is Verdict.CONFIRMED
    assert assess(bow, results(mid, floor - 0.5)).verdict is Verdict.REFUTED
    assert assess(bow, results(mid, mid, bow_loss=top + 1)).verdict is \
        Verdict.INCONCLUSIVE
    # diverged runs are failed seeds: no confirmation of the loss band with one among them
    crashed = results(mid, mid)
    crashed[0].status = "diverged"
    a = assess(bow, crashed)
    assert a.verdict is Verdict.INCONCLUSIVE and "failed seeds" in a.explanation
    # every permutation run diverged: a verdict that says so, not a crash
    crashed = results(mid, mid)
    for r in crashed[n: 2 * n]:
        r.status = "diverged"
    a = assess(bow, crashed)
    assert a.verdict is Verdict.INCONCLUSIVE and "every run diverged" in a.explanation


def test_saddle_claim_refutes_a_departure():
    claim = PermutationSaddle()
    params = claim.params("smoke")
    specs = claim.checked_specs(params)
    log_v = math.log(params["L"])
    exact = {"loss": [log_v, log_v], "ktiw_row_spread": [0.0, 0.0],
             "attention_abs_max": [0.0, 0.0], "gold_attention": [0.1, 0.1]}
    escaped = {**exact, "loss": [2.5, 0.5], "gold_attention": [0.1, 0.9]}
    results = [fake(s, **(exact if s.task.distribution == "permutation" else escaped))
               for s in specs]
    assert claim.assess(params, claim.results_for(params, results)).verdict is Verdict.CONFIRMED
    moved = {**exact, "loss": [log_v, log_v - 1e-6]}
    results = [fake(s, **(moved if s.task.distribution == "permutation" else escaped))
               for s in specs]
    assert claim.assess(params, claim.results_for(params, results)).verdict is Verdict.REFUTED
    # the saddle holds but the subset runs stay put: inconclusive, and the report says why
    results = [fake(s, **exact) for s in specs]
    a = claim.assess(params, claim.results_for(params, results))
    assert a.verdict is Verdict.INCONCLUSIVE and "kappa(V, L) = 0.0303" in a.explanation
    assert a.reason is Reason.BUDGET_REACHED


def test_saddle_budget_scales_with_length_over_kappa():
    """The escape budget is fixed by kappa before any run: L / (lr kappa) steps, so the full
    profile (kappa 4x smaller than quick's, L 4x longer) gets about 17x quick's budget."""
    from attnverify.compare.claims.snell.free_toy import escape_budget

    claim = PermutationSaddle()
    budgets = {p: claim.budget(claim.params(p)) for p in ("smoke", "quick", "full")}
    assert budgets == {"smoke": 264, "quick": 420, "full": 7080}
    assert {s.steps for s in claim.checked_specs(claim.params("full"))} == {7080}
    assert escape_budget(10, 15, lr=0.5) == 2 * escape_budget(10, 15, lr=1.0)
    assert escape_budget(10, 15, lr=1.0, factor=2.0) == 840
    assert min(s.seed for s in claim.checked_specs(claim.params("quick"))) == 100


def test_kappa_speed_says_when_its_seeds_cannot_reach_the_level():
    """At smoke (2 seeds per size) no outcome reaches p < 0.025 on a branch: not testable, even
    for speeds that follow kappa perfectly."""
    from attnverify.compare.claims.snell import KappaPredictsLearningSpeed
    from attnverify.theory.snell import kappa

    claim = KappaPredictsLearningSpeed()
    params = claim.params("smoke")
    results = []
    for spec in claim.checked_specs(params):
        step = int(2000 * (0.04 - kappa(spec.task.vocab_size, params["L"]).value))
        learned = (np.arange(40) * 10 >= step).astype(float)
        results.append(fake(spec, acc=learned, attn_acc_best_offset=learned))
    a = claim.assess(params, claim.results_for(params, results))
    assert a.verdict is Verdict.INCONCLUSIVE and a.reason is Reason.NOT_TESTABLE, a.explanation
    assert "smallest reachable" in a.explanation


def kappa_sweep_results(steps_of):
    """Fake runs of the quick V sweep (L = 20, V* = 39.5) learning at ``steps_of(V, seed)``
    (None: never), on an evaluation grid of 10 steps."""
    from attnverify.compare.claims.snell import KappaPredictsLearningSpeed

    claim = KappaPredictsLearningSpeed()
    params = claim.params("quick")
    results = []
    for spec in claim.checked_specs(params):
        step = steps_of(spec.task.vocab_size, spec.seed - 100)
        learned = np.zeros(40) if step is None else (np.arange(40) * 10 >= step).astype(float)
        results.append(fake(spec, acc=learned, attn_acc_best_offset=learned))
    return claim, params, results


def test_kappa_speed_is_confirmed_only_by_a_peak_no_monotone_v_effect_gives():
    from attnverify.theory.snell import kappa

    def follows_kappa(v, seed):  # faster where kappa is larger, a little seed noise
        return int(round(20000 * (0.02 - kappa(v, 20).value), -1)) + 10 * seed

    claim, params, results = kappa_sweep_results(follows_kappa)
    a = claim.assess(params, claim.results_for(params, results))
    assert a.verdict is Verdict.CONFIRMED, a.explanation
    # slower with V, with a floor below V* and permutations failing: the reviewer's
    # counterexample to a partial correlation given V; no kappa in it, so no confirmation
    claim, params, results = kappa_sweep_results(
        lambda v, seed: None if v == 20 else max(100, 3 * v) + 10 * seed)
    a = claim.assess(params, claim.results_for(params, results))
    assert a.verdict is Verdict.INCONCLUSIVE, a.explanation
    assert "on the rising branch" in a.explanation
    # the same with an exact floor: every seed up to V* at the same step ties the ranks
    claim, params, results = kappa_sweep_results(
        lambda v, seed: None if v == 20 else 100 if v <= 40 else 3 * v + 10 * seed)
    a = claim.assess(params, claim.results_for(params, results))
    assert a.verdict is Verdict.INCONCLUSIVE and "on the rising branch" in a.explanation
    # faster with V everywhere: against kappa above its peak
    claim, params, results = kappa_sweep_results(lambda v, seed: 400 - v + 10 * seed)
    a = claim.assess(params, claim.results_for(params, results))
    assert a.verdict is Verdict.REFUTED and "On the falling branch" in a.explanation
    # a sweep on one side of the peak cannot separate kappa from V
    claim, params, results = kappa_sweep_results(follows_kappa)
    params = {**params, "vocab": (20, 80, 160)}
    results = [r for r in results if r.spec.task.vocab_size in params["vocab"]]
    a = claim.assess(params, claim.results_for(params, results))
    assert a.verdict is Verdict.INCONCLUSIVE and "do not straddle" in a.explanation


def test_learning_curve_area_is_continuous_where_steps_to_success_tie():
    """Two runs that reach success at the same evaluation but rise at different speeds get
    different areas; a run that never succeeds still gets the area its accuracy earned."""
    from attnverify.compare.claims.snell import KappaPredictsLearningSpeed
    from attnverify.compare.claims.snell.kappa_predicts_learning_speed import learning_curve_area

    claim = KappaPredictsLearningSpeed()
    spec = claim.checked_specs(claim.params("quick"))[0]
    fast = fake(spec, acc=[0.0, 0.9, 0.96, 0.99], attn_acc_best_offset=[0, 1, 1, 1])
    slow = fake(spec, acc=[0.0, 0.2, 0.96, 0.99], attn_acc_best_offset=[0, 1, 1, 1])
    never = fake(spec, acc=[0.0, 0.2, 0.4, 0.6], attn_acc_best_offset=[0, 0, 0, 0])
    flat = fake(spec, acc=[0.0, 0.0, 0.0, 0.0], attn_acc_best_offset=[0, 0, 0, 0])
    assert fast.first_step_reaching({"acc": 0.95}) == slow.first_step_reaching({"acc": 0.95})
    assert learning_curve_area(fast) > learning_curve_area(slow) > learning_curve_area(never)
    assert learning_curve_area(flat) == 0.0
    nan = fake(spec, acc=[0.0, 1.0, np.nan, np.nan], attn_acc_best_offset=[0, 1, 1, 1])
    budget = spec.steps  # 500: the evaluations above end at step 30, the rest counts 0
    assert learning_curve_area(nan) == pytest.approx((5 + 5 + 0) / budget)
    assert learning_curve_area(never) == pytest.approx((1 + 3 + 5) / budget)
    # a run that diverged after step 10 (training stopped evaluating it) scores 0 after it
    short = RunResult(spec=spec, status="diverged", eval_steps=np.array([0, 10]),
                      metrics={"acc": np.array([1.0, 1.0])}, train_loss=np.zeros(1))
    assert learning_curve_area(short) == pytest.approx(10 / budget)


def test_kappa_speed_grid_is_finer_and_its_seeds_fresh():
    from attnverify.compare.claims.snell import KappaPredictsLearningSpeed

    claim = KappaPredictsLearningSpeed()
    for profile, every in (("quick", 10), ("full", 5)):
        specs = claim.checked_specs(claim.params(profile))
        assert {s.eval_every for s in specs} == {every}
        assert min(s.seed for s in specs) == 100


def test_the_kappa_sweep_follows_l_in_the_parameter_space():
    from attnverify.compare.claims.snell import KappaPredictsLearningSpeed
    from attnverify.theory.snell import kappa

    claim = KappaPredictsLearningSpeed()
    for length in range(4, 41):
        vocab = claim.point_params({"L": length})["vocab"]
        assert vocab[0] == length and list(vocab) == sorted(set(vocab))
        subset = vocab[1:]
        peak = max(subset, key=lambda v: kappa(v, length).value)
        # both branches have two sizes (the peak shared): the claim can decide at every L
        assert sum(v <= peak for v in subset) >= 2 and sum(v >= peak for v in subset) >= 2


def test_multihead_rule_uses_accuracy_only():
    """8 heads learn the task with no single well-aligned head and 1 head never learns:
    confirmed on success counts, once the calibration runs show the single head failing."""
    from attnverify.compare.claims.snell import MultiheadRescuesPermutations

    claim = MultiheadRescuesPermutations()
    params = {**claim.params("smoke"), "seeds": 6}
    fail = {"acc": [0.1, 0.5], "attn_acc": [0.0, 0.0]}
    learn = {"acc": [0.1, 0.99], "attn_acc": [0.0, 0.3]}
    calibration = [fake(s, **fail) for s in claim.checked_specs(params)]
    groups = claim.followup(params, calibration)
    assert list(groups) == ["one_head", "multi_head"]  # the decision runs, by head count
    decision = [s for group in groups.values() for s in group]
    assert {s.seed for s in decision} == set(range(400, 406))
    assert not claim.followup(params, calibration + [fake(s, **fail) for s in decision])
    results = calibration + [fake(s, **(fail if s.model.heads == 1 else learn))
                             for s in decision]
    a = claim.assess(params, results)
    assert a.verdict is Verdict.CONFIRMED and a.p_value < 0.025


def test_multihead_is_not_testable_where_one_head_learns():
    """The precondition: a single head that learns in every calibration run leaves nothing to
    rescue; no decision run is trained and the verdict says why."""
    from attnverify.compare.claims.snell import MultiheadRescuesPermutations

    claim = MultiheadRescuesPermutations()
    params = claim.params("smoke")
    learn = {"acc": [0.1, 0.99], "attn_acc": [0.0, 0.3]}
    calibration = [fake(s, **learn) for s in claim.checked_specs(params)]
    assert not claim.followup(params, calibration)
    a = claim.assess(params, calibration)
    assert a.verdict is Verdict.INCONCLUSIVE and a.reason is Reason.NOT_TESTABLE
    assert "nothing for more heads to rescue" in a.explanation or "rescue" in a.explanation


def test_multihead_refutes_only_the_smallest_rescue():
    """Equal success counts at 12 seeds per arm reject a gain of 0.3 at beta = 0.10; the
    speed alone never decides."""
    from attnverify.compare.claims.snell.section5.decision import rescue_decision

    d, _ = rescue_decision([50] * 6 + [None] * 6, [400] * 6 + [None] * 6, budget=500)
    assert d.verdict is Verdict.REFUTED and d.reason is Reason.DECIDED
    d, _ = rescue_decision([50] * 4, [400] * 4, budget=500)  # faster, not more often
    assert d.verdict is Verdict.INCONCLUSIVE


def symmetry_results(perm_step, subset_step):
    """Fake runs of snell.init_scale_breaks_symmetry at quick: gold attention reaches 0.5 at
    ``perm_step(sigma, seed)`` / ``subset_step(sigma, seed)`` (None: never) on a grid of 20."""
    from attnverify.compare.claims.snell.init_scale_breaks_symmetry import InitScaleBreaksSymmetry

    claim = InitScaleBreaksSymmetry()
    params = claim.params("quick")
    results = []
    for spec in claim.checked_specs(params):
        step_of = perm_step if spec.task.distribution == "permutation" else subset_step
        step = step_of(spec.model.init_std_ktiw, spec.seed - 100)
        gold = np.zeros(64) if step is None else (np.arange(64) * 20 >= step).astype(float)
        results.append(RunResult(spec=spec, status="ok", eval_steps=np.arange(64) * 20,
                                 metrics={"gold_attention": gold, "acc": gold},
                                 train_loss=np.zeros(1)))
    return claim, params, results


@pytest.mark.parametrize(("perm", "subset", "verdict", "reason"), [
    (lambda s, i: int(400 - 100 * np.log10(s)) + 20 * i, lambda s, i: 260, Verdict.CONFIRMED,
     Reason.DECIDED),
    (lambda s, i: int(400 + 100 * np.log10(s)) + 20 * i, lambda s, i: 260, Verdict.REFUTED,
     Reason.DECIDED),                                        # permutations slower with sigma
    (lambda s, i: int(400 - 100 * np.log10(s)) + 20 * i,
     lambda s, i: int(260 * (1 + 10 * s)), Verdict.REFUTED, Reason.DECIDED),  # subsets move 100%
    (lambda s, i: None, lambda s, i: 260, Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
    (lambda s, i: 500 + 20 * i, lambda s, i: 260, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
])
def test_init_scale_rule(perm, subset, verdict, reason):
    claim, params, results = symmetry_results(perm, subset)
    a = claim.assess(params, claim.results_for(params, results))
    assert (a.verdict, a.reason or Reason.DECIDED) == (verdict, reason), a.explanation


def _flip(run: RunResult) -> None:
    """The run copies with attention away from the gold position (the sign-flipped solution)."""
    run.metrics["gold_attention"] = np.zeros_like(run.metrics["gold_attention"])
    run.metrics["acc"] = np.ones_like(run.metrics["acc"])


@pytest.mark.parametrize(("flipped", "reason"), [(5, Reason.DECIDED), (6, Reason.NOT_TESTABLE)])
def test_init_scale_is_not_testable_where_half_the_permutation_runs_flip(flipped, reason):
    """A flipped run is censored as if the symmetry had not broken: with half of the 12
    permutation runs flipped the trend is not evidence (even a clean fall in the others)."""
    claim, params, results = symmetry_results(lambda s, i: int(400 - 100 * np.log10(s)) + 20 * i,
                                              lambda s, i: 260)
    perm = [r for r in results if r.spec.task.distribution == "permutation"]
    for run in perm[:flipped]:
        _flip(run)
    a = claim.assess(params, claim.results_for(params, results))
    assert (a.reason or Reason.DECIDED) is reason, a.explanation
    if reason is Reason.NOT_TESTABLE:
        assert f"{flipped} of 12 permutation runs end in the sign-flipped" in a.explanation


def test_init_scale_is_not_testable_where_fewer_than_half_learn():
    claim, params, results = symmetry_results(
        lambda s, i: None if s <= 0.03 else int(400 - 100 * np.log10(s)) + 20 * i,
        lambda s, i: 260)
    a = claim.assess(params, claim.results_for(params, results))
    assert a.reason is Reason.NOT_TESTABLE and "only 3 of 12" in a.explanation


def test_the_permutation_negative_control_is_decided_by_the_test_itself():
    """The contract's negative control has the subset's spread of times in both groups: the
    log-rank test computes a statistic on it (p = 0.5, not the p = 1 of an all-tied sample)
    and the rule does not confirm."""
    claim = PermutationIsHard()
    for profile in ("smoke", "quick", "full"):
        params = claim.params(profile)
        a = claim.assess(params, claim.results_for(params, claim.negative_control(params)))
        assert a.verdict is not Verdict.CONFIRMED and a.p_value == pytest.approx(0.5)
