"""The §5 multi-head protocol of Snell et al. (``multihead.py`` of their code): heads on a
shared base initialisation, classified good/bad by single-head runs, then combined; the claim
runs in stages (``Claim.followup``)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnverify.compare import Verdict, evaluate
from attnverify.compare.claims.snell.section5.figures import head_curves
from attnverify.compare.claims.snell.section5.multihead_rescues_permutations import (
    ROUTES,
    STAGES,
    MultiheadRescuesPermutations,
    official_combos,
)
from attnverify.compare.claims.snell.section5.params import PROTOCOLS
from attnverify.compare.claims.snell.section5.stages import (
    CANDIDATE_SEEDS,
    RANDOM_SEEDS,
    candidate_spec,
    candidate_states,
)
from attnverify.compare.claims.snell.section5.success import (
    head_label,
    official_success_steps,
    run_label,
    section5_success_text,
)
from attnverify.compare.evaluation.verify import checked_point
from attnverify.compare.groups import flatten
from attnverify.compare.protocol import Reason
from attnverify.empirics import (
    CopyTask,
    LocalExecutor,
    RunResult,
    RunSpec,
    Seq2SeqConfig,
    build_model,
    train,
)

TINY = {"hidden": 8, "L": 5, "subset_V": 8, "batch_size": 16, "steps": 40, "eval_every": 10,
        "eval_size": 16, "seeds": 2, "heads": 3, "protocol": "section5", "base_seed": 0,
        "classify_seeds": 2, "needed": 1, "stage_candidates": 3, "max_candidates": 6,
        "random_heads": 4, "combos": 2, "calibration_seeds": 4}


def model(heads: int, head_seeds: tuple[int, ...], seed: int):
    config = Seq2SeqConfig(hidden=8, heads=heads, cell="gru", shared_embedding=False,
                           base_seed=3, head_seeds=head_seeds)
    return build_model(RunSpec(task=CopyTask("permutation", 10, 10), model=config, seed=seed))


@pytest.mark.parametrize(("values", "match"), [
    ({"protocol": "official"}, "^protocol must be one of direct, section5"),
    ({"heads": 1}, r"^heads must be an integer >= 2 \(more heads than one\)"),
])
def test_a_protocol_or_head_count_it_cannot_run_is_refused_up_front(values, match):
    claim = MultiheadRescuesPermutations()
    with pytest.raises(ValueError, match=match):
        checked_point(claim, "smoke", values)
    with pytest.raises(ValueError, match=match):
        claim.check_params(claim.params("smoke") | values)


def test_the_profiles_own_values_are_accepted_and_name_a_route():
    claim = MultiheadRescuesPermutations()
    assert tuple(ROUTES) == PROTOCOLS
    for profile in ("smoke", "quick", "full"):
        checked_point(claim, profile, claim.params(profile))
    assert claim.route(claim.params("full")) is ROUTES["section5"]


def test_a_head_is_the_same_alone_and_in_a_bundle_on_the_same_base():
    alone, bundle = model(1, (5,), seed=0), model(3, (7, 5, 9), seed=1)
    a, b = dict(alone.named_parameters()), dict(bundle.named_parameters())
    for name in a:
        if not name.startswith(("attn_lin", "project_enc")):
            assert torch.equal(a[name], b[name]), name  # the base ignores heads and run seed
    assert torch.equal(alone.attn_lin.weight, bundle.attn_lin.weight[8:16])
    assert torch.equal(alone.attn_lin.bias, bundle.attn_lin.bias[8:16])
    assert torch.equal(alone.project_enc_weight[0], bundle.project_enc_weight[1])
    assert not torch.equal(bundle.project_enc_weight[0], bundle.project_enc_weight[1])
    # the redrawn parameters follow PyTorch's default ranges
    bound = 1 / np.sqrt(8)
    assert bundle.project_enc_weight.abs().max() <= bound
    assert bundle.after_decoder.weight.abs().max() <= 1 / np.sqrt(16)


def test_head_seeds_must_match_the_heads():
    with pytest.raises(ValueError, match=r"model\.head_seeds must be empty or 2 integers"):
        Seq2SeqConfig(hidden=8, heads=2, head_seeds=(1,))
    with pytest.raises(ValueError, match=r"model\.base_seed"):
        Seq2SeqConfig(hidden=8, base_seed=-1)


def fake(spec: RunSpec, acc: list[float], status: str = "ok") -> RunResult:
    steps = np.arange(len(acc)) * 10
    metrics = {"acc": np.asarray(acc, float)}
    if spec.model.heads > 1:  # a bundle records each head's attention accuracy
        metrics |= {f"attn_acc_head{k}": np.linspace(0, k / spec.model.heads, len(acc))
                    for k in range(spec.model.heads)}
    return RunResult(spec=spec, status=status, eval_steps=steps, metrics=metrics,
                     train_loss=np.zeros(1))


def test_head_curves_follow_the_good_head_else_the_best_aligned():
    spec = RunSpec(task=CopyTask("permutation", 10, 10),
                   model=Seq2SeqConfig(hidden=8, heads=3, cell="gru", shared_embedding=False,
                                       base_seed=0, head_seeds=(4, 5, 6)))
    run = RunResult(spec=spec, status="ok", eval_steps=np.array([0, 10]),
                    metrics={"attn_acc_head0": np.array([0.0, 0.1]),
                             "attn_acc_head1": np.array([0.0, 0.9]),
                             "attn_acc_head2": np.array([0.1, 0.3])},
                    train_loss=np.zeros(1))
    good, others = head_curves(run, {6})  # the good head is head 2 (seed 6)
    np.testing.assert_allclose(good, [0.1, 0.3])
    np.testing.assert_allclose(others, [0.0, 0.5])  # heads 0 and 1
    best, mean = head_curves(run, set())  # no good head: the best aligned at the end
    np.testing.assert_allclose(best, [0.0, 0.9])
    np.testing.assert_allclose(mean, [1 / 30, 1.3 / 3])


def test_head_labels_follow_the_official_rule():
    spec = MultiheadRescuesPermutations().checked_specs(TINY)[0]
    good, bad, mid = [0.1, 0.97, 0.9], [0.1, 0.3, 0.5], [0.1, 0.7, 0.8]
    assert head_label([fake(spec, good), fake(spec, good)]) == "good"  # > 0.95 at some eval
    assert head_label([fake(spec, bad), fake(spec, bad)]) == "bad"  # last eval < 0.6
    assert head_label([fake(spec, good), fake(spec, bad)]) is None  # seeds disagree
    assert head_label([fake(spec, mid), fake(spec, mid)]) is None
    assert head_label([fake(spec, good), fake(spec, good, "diverged")]) is None


def test_labels_read_the_evaluations_of_the_official_loop():
    """can_learn sees the evaluations before the last step (0, 10, ..., 190 of 200): our extra
    evaluation at the last step neither makes a head good nor decides "bad"."""
    spec = MultiheadRescuesPermutations().checked_specs(TINY)[0]  # 40 steps: evaluations 0..40
    assert run_label(fake(spec, [0.1, 0.5, 0.7, 0.9, 0.99])) is None  # > 0.95 only at 40
    assert run_label(fake(spec, [0.1, 0.3, 0.4, 0.5, 0.7])) == "bad"  # 0.5 at step 30
    assert run_label(fake(spec, [0.1, 0.3, 0.4, 0.7, 0.5])) is None
    assert run_label(fake(spec, [0.1, 0.3, 0.4, 0.97, 0.9])) == "good"


def test_section5_success_is_above_095_by_the_official_last_evaluation():
    """§5 counts "acc > 0.95 by step 190" (of 200): strictly above, not at our extra
    evaluation after the last step, and a run that diverged later still succeeded (the
    official histories keep it)."""
    spec = MultiheadRescuesPermutations().checked_specs(TINY)[0]  # 40 steps: evaluations 0..40
    runs = [fake(spec, [0.1, 0.5, 0.95, 0.99, 0.99]), fake(spec, [0.1, 0.5, 0.9, 0.9, 0.99]),
            fake(spec, [0.1, 0.96, 0.99], "diverged"), fake(spec, [0.1, 0.5], "diverged")]
    assert official_success_steps(runs) == [30, None, 10, None]
    assert section5_success_text(TINY) == "token acc > 0.95 by step 30"
    # an evaluation off the grid (an attention snapshot at step 15) is not the official loop's
    snap = fake(dataclasses.replace(spec, attention_snapshots=(15,)), [0.1, 0.5, 0.99, 0.7])
    snap.eval_steps = np.array([0, 10, 15, 20])
    assert official_success_steps([snap]) == [None] and run_label(snap) is None


def test_the_section5_assessment_counts_success_as_the_official_outputs():
    """Bundles at exactly 0.95, or above it only at the extra last evaluation, have not
    succeeded; and where every single head learns, nothing is left to rescue: not testable."""
    claim = MultiheadRescuesPermutations()
    _stages, results, combos = drive(claim, SCRIPTED, SCRIPT)
    edge = [fake(s, [0.1, 0.95, 0.95, 0.95, 0.99]) for s in combos]  # steps 0..40
    singles = [fake(r.spec, [0.1, 0.5]) for r in results]
    a = claim.assess(SCRIPTED, singles + edge)
    assert a.details["test"]["successes"][1] == 0, a.explanation
    assert a.empirical.value == 0.0 and "by step 30" in a.statistic
    learned = [fake(r.spec, [0.1, 0.99]) for r in results]
    b = claim.assess(SCRIPTED, learned + edge)
    assert b.verdict is Verdict.INCONCLUSIVE and b.reason is Reason.NOT_TESTABLE


def test_a_classification_run_stops_once_it_is_good():
    """can_learn returns "good" at the first evaluation above 0.95 (the official loop trains no
    further): the stopped run is the whole run's prefix and keeps the label and success step."""
    params = {**TINY, "L": 3, "hidden": 32, "steps": 200, "eval_every": 20, "batch_size": 32}
    stopped = train(candidate_spec(params, 0, 0))
    whole = train(dataclasses.replace(stopped.spec, stop_when=None))
    n = len(stopped.eval_steps)
    assert stopped.eval_steps[-1] < params["steps"]  # it did stop early
    np.testing.assert_array_equal(stopped.metric("acc"), whole.metric("acc")[:n])
    assert stopped.metric("acc")[-1] > 0.95 >= stopped.metric("acc")[:-1].max()
    assert run_label(stopped) == run_label(whole) == "good"
    assert (stopped.first_step_reaching({"acc": 0.95})
            == whole.first_step_reaching({"acc": 0.95}))
    bundles = official_combos(params, [CANDIDATE_SEEDS],
                              [CANDIDATE_SEEDS + 1 + i for i in range(3)])
    assert bundles and all(b.stop_when is None for b in bundles)


HISTORY = {"good": [0.1, 0.99], "bad": [0.1, 0.2], None: [0.1, 0.7]}
"""Accuracy histories whose run_label is each label."""


def candidate(spec: RunSpec) -> tuple[int, int]:
    return spec.model.head_seeds[0] - CANDIDATE_SEEDS, spec.seed


def drive(claim, params, table):
    """Run the protocol's stages on fake runs labelled by ``table[(candidate, seed)]``; the
    stages of single-head runs (as (candidate, seed) lists) and all results."""
    stage, stages, results = claim.checked_specs(params), [], []
    while stage and all(s.model.heads == 1 for s in stage):
        stages.append([candidate(s) for s in stage])
        results += [fake(s, HISTORY[table[candidate(s)]]) for s in stage]
        stage = flatten(claim.followup(params, results))
    return stages, results, stage


SCRIPTED = {**TINY, "heads": 2, "needed": 2, "stage_candidates": 3, "max_candidates": 9,
            "combos": 6}
SCRIPT = {(0, 0): "bad", (0, 1): "bad", (1, 0): "good", (1, 1): "bad",
          (2, 0): "bad", (2, 1): "bad", (3, 0): "good", (3, 1): "good",
          (4, 0): "good", (4, 1): "good", (5, 0): "good"}
"""A label table whose stages are pinned by hand (below)."""


def test_stages_classify_lazily_then_combine():
    claim = MultiheadRescuesPermutations()
    assert claim.staged(TINY) and claim.staged(claim.params("full"))
    assert claim.staged(claim.params("quick"))  # direct: calibration, then the decision
    params, table = SCRIPTED, SCRIPT
    stages, results, combos = drive(claim, params, table)
    assert stages == [
        [(0, 0), (1, 0), (2, 0)],  # first seeds only
        # seed 1 of the candidates that can fill a list (good: 1; bad: 0, 2), and new
        # candidates: only one can still be good, two are needed
        [(1, 1), (0, 1), (2, 1), (3, 0), (4, 0), (5, 0)],
        # 1 was discarded (good, then bad); 3 and 4 are the first two that can be good; 5,
        # good on seed 0, is not needed
        [(3, 1), (4, 1)],
    ]
    assert combos and all(s.model.heads == 2 and s.seed == 0 for s in combos)
    kinds = {("random" if min(s.model.head_seeds) >= RANDOM_SEEDS else
              "good" if {CANDIDATE_SEEDS + 3, CANDIDATE_SEEDS + 4} & set(s.model.head_seeds)
              else "bad") for s in combos}
    assert kinds == {"random", "good", "bad"}
    assert all(set(s.model.head_seeds) <= {CANDIDATE_SEEDS + i for i in (0, 2, 3, 4)}
               for s in combos if min(s.model.head_seeds) < RANDOM_SEEDS)
    assert not claim.followup(params, results + [fake(s, [0.1, 0.5]) for s in combos])
    # each stage names its groups, numbered by stage and in training order: new candidates,
    # the next seeds of those that can still be good (or bad), then the combos
    grouped = claim.results_for(params, results + [fake(s, [0.1, 0.5]) for s in combos])
    assert grouped.groups() == ["candidates_1", "good_seeds_2", "bad_seeds_2", "candidates_2",
                                "good_seeds_3", "combos_4"]
    assert [candidate(r.spec) for r in grouped["bad_seeds_2"]] == [(0, 1), (2, 1)]
    # the assessment groups them and decides random bundles against single random heads
    # (data seed 0 of every candidate: 4 of 6 learn), every bundle learns -> confirmed
    a = claim.assess(params, results + [fake(s, [0.1, 0.99]) for s in combos])
    assert a.details["heads"] == {"candidates": 6, "good": 2, "bad": 2, "discarded": 1,
                                  "not_needed": 1, "single_head_runs": 11}
    random_sets = {s.model.head_seeds for s in combos if min(s.model.head_seeds) >= RANDOM_SEEDS}
    assert a.details["groups"]["random"] == len(random_sets) >= 4  # one run per set of heads
    assert a.details["test"]["n"][0] == 6
    assert a.details["rescue"] is not None
    assert "1 bad + 1 good 4/4 vs 2 bad 1/1" in a.explanation  # named after their heads
    # 2 bad heads for bundles of 2: every all-bad draw is one model, and the report says so
    assert "every 2 bad draw is the same set of heads, trained once" in a.explanation
    # without the all-bad bundles there is no rescue comparison, and the report says why
    partial = [fake(s, [0.1, 0.99]) for s in combos
               if min(s.model.head_seeds) >= RANDOM_SEEDS or CANDIDATE_SEEDS + 3 in
               s.model.head_seeds or CANDIDATE_SEEDS + 4 in s.model.head_seeds]
    a = claim.assess(params, results + partial)
    assert a.details["rescue"] is None and a.details["groups"]["bad"] == 0
    assert "it needs 2 bad heads (for the 2 bad bundles) and a good one" in a.explanation
    # singles that always learn leave nothing to rescue: not testable, whatever the bundles do
    singles = [fake(r.spec, [0.1, 0.99]) for r in results]
    a = claim.assess(params, singles + [fake(s, [0.1, 0.2]) for s in combos])
    assert a.reason is Reason.NOT_TESTABLE, a.explanation


def test_a_list_left_short_at_max_candidates_is_explained_by_the_rate_of_its_label():
    """The official loop draws heads until it has ``needed`` of each label; ours stops at
    ``max_candidates``. When a list stays short, the report gives the label's rate among the
    candidates (each candidate's membership was decided) and the draws the official loop would
    need; a list filled in time says nothing of the kind."""
    claim = MultiheadRescuesPermutations()
    params = {**SCRIPTED, "max_candidates": 6}
    table = {(i, s): ("bad" if i == 2 else "good") for i in range(6) for s in range(2)}
    _stages, results, combos = drive(claim, params, table)
    a = claim.assess(params, results + [fake(s, [0.1, 0.99]) for s in combos])
    assert a.details["heads"]["candidates"] == 6 and a.details["heads"]["bad"] == 1
    assert ("Bad heads (every seed bad) are rare on this base: 1 of 6 candidates (16.7%, 95% "
            "CI 0.4% to 64.1%); the official loop, which draws heads until it has 2, would "
            "need about 12 candidates at this rate. The protocol stops at 6 candidates"
            in a.explanation), a.explanation
    assert "good heads (every seed good) are rare" not in a.explanation
    # no bad head at all: the draws are bounded below by the rate's upper confidence bound
    table = {key: "good" for key in table}
    _stages, results, combos = drive(claim, params, table)
    a = claim.assess(params, results + [fake(s, [0.1, 0.99]) for s in combos])
    assert "0 of 6 candidates (0.0%, 95% CI 0.0% to 45.9%)" in a.explanation
    assert "would need more than 4 candidates (at the rate's upper bound)" in a.explanation
    # filled in time (the scripted table): no shortfall to explain
    _stages, results, combos = drive(claim, SCRIPTED, SCRIPT)
    a = claim.assess(SCRIPTED, results + [fake(s, [0.1, 0.99]) for s in combos])
    assert "rare on this base" not in a.explanation


def test_verify_logs_each_stage_with_where_the_protocol_stands(store, caplog):
    """A §5 run lasts hours: each new stage is logged with the candidates drawn and the heads
    kept so far (the stages of the scripted table above)."""
    from attnverify.compare.evaluation.verify import _run_stages
    from attnverify.empirics.execute.executor import Executor

    class Scripted(Executor):
        def _compute(self, missing, bar):
            return {s.key(): fake(s, HISTORY[SCRIPT[candidate(s)]] if s.model.heads == 1
                                  else [0.1, 0.5]) for s in missing}

    caplog.set_level("INFO", logger="attnverify.verify")
    claim = MultiheadRescuesPermutations()
    _run_stages([(claim, SCRIPTED)], Scripted(store, progress=False), "test")
    notes = [r.getMessage() for r in caplog.records if r.name == "attnverify.verify"]
    head = "snell.multihead_rescues_permutations: stage"
    assert notes[:2] == [
        f"{head} 2, 6 more runs (3 of at most 9 candidates drawn, 3 single-head runs; kept 0 "
        f"of 2 good and 0 of 2 bad)",
        f"{head} 3, 2 more runs (6 of at most 9 candidates drawn, 9 single-head runs; kept 0 "
        f"of 2 good and 2 of 2 bad)"]
    assert len(notes) == 3 and notes[2].startswith(f"{head} 4, ")  # the bundles
    assert notes[2].endswith("11 single-head runs; kept 2 of 2 good and 2 of 2 bad)")


def storable(run: RunResult) -> RunResult:
    """A fake run as the training loop would store it (empirics.result_schema): its
    histories on the spec's schedule, up to the evaluation where ``stop_when`` ends it or to
    the last (the last value held), and one training loss per step trained."""
    spec, n = run.spec, len(run.eval_steps)
    schedule = spec.eval_steps()
    stop = spec.stop_when
    stopped = stop is not None and run.metrics[stop[0]][-1] > stop[1]
    length = n if stopped else len(schedule)
    metrics = {k: np.concatenate([v, np.repeat(v[-1:], length - n)])
               for k, v in run.metrics.items()}
    steps = np.array(schedule[:length])
    return RunResult(spec=spec, status="ok", eval_steps=steps, metrics=metrics,
                     train_loss=np.zeros(int(steps[-1])))


def test_the_dry_run_replays_the_stages_the_store_decides(store):
    """``verify --dry-run`` of a claim in stages: the stages whose runs are all stored are
    replayed (their results decide the next), the first incomplete one is what is left to
    train; once every stage is stored, nothing is."""
    from attnverify.compare.evaluation.plan import plan

    claim = MultiheadRescuesPermutations()
    stages, results, combos = drive(claim, SCRIPTED, SCRIPT)
    for r in results[:9]:  # stages 1 and 2 of the scripted table
        store.put(storable(r))
    (p,) = plan([claim], "smoke", store, points={claim.id: SCRIPTED})
    assert (p.stage, p.runs, p.cached, p.staged) == (3, 11, 9, True)
    assert [candidate(s) for s in p.missing] == stages[2] == [(3, 1), (4, 1)]
    # the keys 'runs pack --paper' packs: the stored stages and the missing stage's runs
    assert set(p.keys) == {r.key for r in results[:9]} | {s.key() for s in p.missing}
    assert p.note == ("6 of at most 9 candidates drawn, 9 single-head runs; kept 0 of 2 good and 2 "
                      "of 2 bad")
    for r in results[9:] + [fake(s, [0.1, 0.5]) for s in combos]:
        store.put(storable(r))
    (p,) = plan([claim], "smoke", store, points={claim.id: SCRIPTED})
    assert (p.runs, p.cached, p.missing, p.staged) == (11 + len(combos), 11 + len(combos), [],
                                                       False)
    assert len(p.keys) == p.runs and all(store.has(k) for k in p.keys)


def official_loop(table, params):
    """The official sequential protocol (multihead.py ``init``): classify candidate after
    candidate with every seed, keep a head while its list is not full."""
    kept = {"good": [], "bad": []}
    for i in range(params["max_candidates"]):
        if min(len(v) for v in kept.values()) >= params["needed"]:
            break
        labels = {table[(i, s)] for s in range(params["classify_seeds"])}
        label = labels.pop() if len(labels) == 1 else None
        if label is not None and len(kept[label]) < params["needed"]:
            kept[label].append(CANDIDATE_SEEDS + i)
    return kept["good"], kept["bad"]


@settings(max_examples=150, deadline=None)
@given(seeds=st.integers(1, 3), needed=st.integers(1, 3), stage=st.integers(1, 4),
       max_candidates=st.integers(1, 10), data=st.data())
def test_the_lazy_protocol_keeps_the_heads_of_the_official_loop(seeds, needed, stage,
                                                                 max_candidates, data):
    claim = MultiheadRescuesPermutations()
    params = {**TINY, "classify_seeds": seeds, "needed": needed, "stage_candidates": stage,
              "max_candidates": max_candidates}
    labels = st.sampled_from(["good", "bad", None])
    table = {(i, s): data.draw(labels) for i in range(max_candidates) for s in range(seeds)}
    stages, results, _ = drive(claim, params, table)
    runs = [run for stage_runs in stages for run in stage_runs]
    assert len(runs) == len(set(runs))  # no run asked for twice
    assert all(seed == 0 or (i, seed - 1) in runs for i, seed in runs)  # seeds in order
    states = candidate_states(params, results)
    assert STAGES.kept(params, states) == official_loop(table, params)
    assert len(runs) <= seeds * max_candidates


def test_the_protocol_runs_end_to_end_in_stages(store):
    """Real training at a tiny scale: the claim's stages go through the executor and the store,
    and a second evaluation trains nothing."""
    claim = MultiheadRescuesPermutations()
    executor = LocalExecutor(store, workers=1, progress=False)
    outcome = evaluate(claim, "smoke", executor, TINY)
    details = outcome.assessment.details
    assert details["heads"]["candidates"] in (3, 6)  # one stage, or two when a kind lacked
    assert len(outcome.run_keys) == (details["heads"]["single_head_runs"]
                                     + sum(details["groups"].values()))
    assert details["groups"]["random"] >= 1  # 4 random heads always make bundles of 3
    assert list(details["test"]["n"]) == [details["heads"]["candidates"],
                                          details["groups"]["random"]]
    assert set(outcome.figures()) == {"section5", "section5_curves"}
    # a single-head run stops at its first evaluation above 0.95 (can_learn's "good"); bundles
    # train every step
    for run in (store.get(key) for key in outcome.run_keys):
        acc = run.metric("acc")
        if run.spec.model.heads == 1:
            assert run.spec.stop_when == ("acc", 0.95)
            assert np.all(acc[:-1] <= 0.95)
            assert acc[-1] > 0.95 or run.eval_steps[-1] == TINY["steps"]
        else:
            assert run.spec.stop_when is None and run.eval_steps[-1] == TINY["steps"]
    again = LocalExecutor(store, workers=1, progress=False)
    assert evaluate(claim, "smoke", again, TINY).run_keys == outcome.run_keys
    assert again.computed == set()
