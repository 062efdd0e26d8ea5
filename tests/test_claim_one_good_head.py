"""snell.one_good_head_rescues: the pools it classifies (the §5 candidates, shared with the
multi-head claim), the draws of its bundles and its decision on constructed results."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.compare import Verdict, evaluate
from attnverify.compare.claims.snell import MultiheadRescuesPermutations, OneGoodHeadRescues
from attnverify.compare.claims.snell.section5.one_good_head_rescues import (
    BUNDLE_DATA_SEED,
    STAGES,
    draws,
)
from attnverify.compare.claims.snell.section5.stages import CANDIDATE_SEEDS, candidate_states
from attnverify.compare.evaluation.verify import checked_point
from attnverify.compare.groups import flatten
from attnverify.compare.protocol import Reason
from attnverify.empirics import LocalExecutor, RunResult, RunSpec

CLAIM = OneGoodHeadRescues()
PARAMS = {**CLAIM.params("smoke"), "classify_seeds": 2, "needed": 2, "needed_bad": 4,
          "stage_candidates": 3, "max_candidates": 12, "draws": 12}
HISTORY = {"good": [0.1, 0.99], "bad": [0.1, 0.2], None: [0.1, 0.7]}
"""Accuracy histories whose §5 label is each label (evaluations at steps 0 and 10)."""


def fake(spec: RunSpec, acc: list[float]) -> RunResult:
    metrics = {"acc": np.asarray(acc, float)}
    if spec.model.heads > 1:
        metrics |= {f"attn_acc_head{k}": np.linspace(0, 0.5, len(acc))
                    for k in range(spec.model.heads)}
    return RunResult(spec=spec, status="ok", eval_steps=np.arange(len(acc)) * 10,
                     metrics=metrics, train_loss=np.zeros(1))


def classify(params, label_of):
    """Drive the classification stages with candidate i labelled ``label_of(i)`` on every seed;
    the single-head results and the bundle specs the last stage asks for."""
    stage, results = CLAIM.checked_specs(params), []
    while stage and all(s.model.heads == 1 for s in stage):
        results += [fake(s, HISTORY[label_of(s.model.head_seeds[0] - CANDIDATE_SEEDS)])
                    for s in stage]
        stage = flatten(CLAIM.followup(params, results))
    return results, stage


def every_third_bad(i: int) -> str:
    return "bad" if i % 3 else "good"


def with_bundles(results, bundles, learns):
    """The single-head results plus every bundle, learning when ``learns(head_seeds)``."""
    return results + [fake(s, [0.1, 0.99] if learns(s.model.head_seeds) else [0.1, 0.3])
                      for s in bundles]


def has_good(good):
    return lambda heads: bool(set(heads) & good)


def test_full_classifies_the_candidates_of_the_multihead_claim():
    multi = MultiheadRescuesPermutations()
    ours = CLAIM.checked_specs(CLAIM.params("full"))
    theirs = multi.checked_specs(multi.params("full"))
    assert [s.key() for s in ours] == [s.key() for s in theirs]
    assert STAGES.needed(CLAIM.params("full")) == {"good": 20, "bad": 12}
    assert "until 12 bad and 20 good heads are known (at most 400" in CLAIM.seed_plan(
        CLAIM.params("full"))
    assert CLAIM.seed_plan(CLAIM.params("quick")) == ""


def test_quick_trains_nothing_and_says_why():
    params = CLAIM.params("quick")
    assert CLAIM.checked_specs(params) == [] and not CLAIM.staged(params)
    a = CLAIM.assess(params, [])
    assert a.verdict is Verdict.INCONCLUSIVE and a.reason is Reason.NOT_TESTABLE
    assert "full decides" in a.explanation
    with pytest.raises(ValueError, match=r"train=true needs .*needed_bad.*--profile full"):
        CLAIM.check_params(params | {"train": True})


def test_the_pools_fill_and_the_draws_come_from_them():
    results, bundles = classify(PARAMS, every_third_bad)
    good, bad = STAGES.kept(PARAMS, candidate_states(PARAMS, results))
    assert len(good) == 2 and len(bad) == 4
    drawn = draws(PARAMS, good, bad)
    assert all(len(s) == 2 and set(s) <= set(bad) for s in drawn["bad"])
    assert all(len(set(s) & set(good)) == 1 and len(set(s) & set(bad)) == 1
               for s in drawn["bad + 1 good"])
    assert len(set(drawn["bad"])) > 1  # more bad heads than a bundle: several sets
    # one run per distinct set, data seed 0 on the base
    sets = {s for kind in drawn.values() for s in kind}
    assert sorted(s.model.head_seeds for s in bundles) == sorted(sets)
    # data seed 3, which labelled no head
    assert all(s.seed == BUNDLE_DATA_SEED == 3 and s.model.base_seed == PARAMS["base_seed"]
               for s in bundles)
    assert BUNDLE_DATA_SEED not in {r.spec.seed for r in results}
    assert draws(PARAMS, good, bad) == drawn  # fixed streams
    assert not CLAIM.followup(PARAMS, with_bundles(results, bundles, lambda h: True))
    last = CLAIM.results_for(PARAMS, with_bundles(results, bundles, lambda h: True)).groups()[-1]
    assert last.startswith("bundles_")  # the last stage's group


def test_a_good_head_that_rescues_confirms_and_duplicates_count():
    results, bundles = classify(PARAMS, every_third_bad)
    good, _ = STAGES.kept(PARAMS, candidate_states(PARAMS, results))
    a = CLAIM.assess(PARAMS, with_bundles(results, bundles, has_good(set(good))))
    assert a.verdict is Verdict.CONFIRMED, a.explanation
    assert tuple(a.details["test"]["n"]) == (12, 12)  # every draw, though sets repeat
    assert a.details["distinct_sets"]["bad"] < 12
    assert a.empirical.value == 1.0
    runs = with_bundles(results, bundles, has_good(set(good)))
    assert set(CLAIM.figures(PARAMS, runs, a)) == {"rescue", "rescue_curves"}


def test_no_rescue_refutes_and_says_which_side_failed():
    results, bundles = classify(PARAMS, every_third_bad)
    a = CLAIM.assess(PARAMS, with_bundles(results, bundles, lambda h: False))
    assert a.verdict is Verdict.REFUTED, a.explanation  # 0 of 12 either way: no gain of 0.3
    assert "The bundles with a good head fail too" in a.explanation
    a = CLAIM.assess(PARAMS, with_bundles(results, bundles, lambda h: True))
    assert a.verdict is Verdict.REFUTED  # the all-bad bundles learn too: nothing to rescue
    assert "The 2 bad bundles learn too" in a.explanation


def test_one_bad_head_that_learns_in_company_shows_in_the_shares():
    results, bundles = classify(PARAMS, every_third_bad)
    good, bad = STAGES.kept(PARAMS, candidate_states(PARAMS, results))
    carrier = bad[0]
    a = CLAIM.assess(PARAMS, with_bundles(results, bundles,
                                          lambda h: carrier in h or bool(set(h) & set(good))))
    shares = a.details["bad_head_shares"]
    learned, drawn = shares[str(carrier)]
    assert learned == drawn > 0  # every all-bad draw with it learned
    assert all(v[0] <= v[1] for v in shares.values())
    assert f"{carrier - CANDIDATE_SEEDS}: {learned}/{drawn}" in a.explanation


def test_a_short_pool_is_not_testable_and_says_how_rare_bad_heads_are():
    results, bundles = classify(PARAMS, lambda i: "bad" if i in (0, 5, 9) else "good")
    assert bundles == []  # 3 bad heads in 12 candidates: no draws
    a = CLAIM.assess(PARAMS, results)
    assert a.reason is Reason.NOT_TESTABLE
    assert "found 3 bad heads and 2 good ones within 12 candidates (the precondition needs 4 " \
        "and 2)" in a.explanation
    assert "Bad heads (every seed bad) are rare on this base: 3 of 12" in a.explanation


def test_missing_bundles_are_not_testable():
    results, bundles = classify(PARAMS, every_third_bad)
    a = CLAIM.assess(PARAMS, with_bundles(results, bundles[:1], lambda h: True))
    assert a.reason is Reason.NOT_TESTABLE and "missing" in a.explanation


@pytest.mark.parametrize(("name", "value"), [("needed_bad", 3), ("draws", 0), ("heads", 1),
                                             ("classify_seeds", 4)])
def test_parameters_that_cannot_test_it_are_refused(name, value):
    with pytest.raises(ValueError, match=name):
        CLAIM.check_params(PARAMS | {name: value})
    with pytest.raises(ValueError, match=f"^{name} must be"):  # verify --param, up front
        checked_point(CLAIM, "smoke", {name: value})


def test_the_profiles_own_values_are_accepted_and_quick_cannot_train():
    for profile in ("smoke", "quick", "full"):
        checked_point(CLAIM, profile, CLAIM.params(profile))
    with pytest.raises(ValueError, match=r"train=true needs .*needed_bad.*--profile full"):
        checked_point(CLAIM, "quick", {"train": True})


def test_the_claim_runs_end_to_end_at_smoke(store):
    executor = LocalExecutor(store, workers=1, progress=False)
    outcome = evaluate(CLAIM, "smoke", executor)
    a = outcome.assessment
    assert a.details["heads"]["candidates"] >= 4
    if a.reason is not Reason.NOT_TESTABLE:
        assert sum(a.details["test"]["n"]) == 2 * CLAIM.params("smoke")["draws"]
        assert set(outcome.figures()) == {"rescue", "rescue_curves"}
    again = LocalExecutor(store, workers=1, progress=False)
    assert evaluate(CLAIM, "smoke", again).run_keys == outcome.run_keys
    assert again.computed == set()
