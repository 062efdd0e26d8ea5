"""The dry-run estimate (compare.evaluation.plan): the measured rate of the nearest stored cost,
flagged when it is extrapolated, and no estimate without a measurement."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from attnverify.compare.evaluation.plan import EXTRAPOLATION, Estimate, duration, estimate


def spec(kind: str, cost: float, seconds_per_cost: float | None = None,
         stop_when: tuple | None = None, key: str = ""):
    return SimpleNamespace(model=SimpleNamespace(kind=kind, seconds_per_cost=seconds_per_cost),
                           cost_estimate=lambda: cost, stop_when=stop_when,
                           time_estimate=lambda: cost * (seconds_per_cost or 1.0),
                           key=lambda: key or f"{kind}-{cost}-{stop_when}")


RATES = {"seq": {1e6: 3e-6, 1e8: 1e-6}}


def test_the_nearest_stored_cost_gives_the_rate():
    est = estimate([spec("seq", 2e6), spec("seq", 5e7)], RATES)
    assert est.seconds == pytest.approx(2e6 * 3e-6 + 5e7 * 1e-6)
    assert est.unknown == 0 and est.extrapolated == pytest.approx(2.0)
    assert est.text() == "56 s"


def test_far_from_every_measurement_is_flagged_and_unmeasured_families_are_counted():
    est = estimate([spec("seq", 1e10), spec("lm", 1.0)], RATES)
    assert est.seconds == pytest.approx(1e10 * 1e-6) and est.unknown == 1
    assert est.extrapolated == pytest.approx(100) and est.extrapolated > EXTRAPOLATION
    assert est.text() == "<= 2.8 h (from runs 100x cheaper) + 1 runs without estimate"


def test_durations_read_naturally():
    assert [duration(s) for s in (42, 720, 12_240)] == ["42 s", "12 min", "3.4 h"]
    assert Estimate().text() == "0 s"


def test_runs_with_a_stop_rule_are_counted_whole_and_the_table_says_so():
    """A run that ends once it has learned is timed as if it trained every step, and the
    dry run says that its time is an upper bound; without such runs it says nothing."""
    from attnverify.compare.evaluation.plan import ClaimPlan, plan_table

    whole, stopping = spec("seq", 2e6), spec("seq", 2e6, stop_when=("acc", 0.95))
    est = estimate([whole, stopping], RATES)
    assert est.stopping == 1 and est.seconds == pytest.approx(2 * 2e6 * 3e-6)
    table = plan_table([ClaimPlan("c", 2, 0, missing=[whole, stopping])], RATES, workers=1)
    assert "1 of them end once their stop rule is met" in table and "upper bound" in table
    assert "stop rule" not in plan_table([ClaimPlan("c", 1, 0, missing=[whole])], RATES, 1)


def test_runs_that_may_stop_early_are_not_measured(store):
    """A run with ``stop_when`` may train fewer steps than its cost counts: its speed would
    read too high, so only whole runs give rates."""
    import dataclasses

    import numpy as np

    from attnverify.compare.evaluation.plan import measured_rates
    from attnverify.empirics import CopyTask, RunResult, RunSpec, Seq2SeqConfig

    whole = RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8), steps=10)
    stopping = dataclasses.replace(whole, stop_when=("acc", 0.5))
    for s, seconds in ((whole, 10.0), (stopping, 1.0)):
        store.put(RunResult(spec=s, status="ok", eval_steps=np.array([0, 10]),
                            wall_time_s=seconds, metrics={"acc": np.array([0.1, 0.6])},
                            train_loss=np.zeros(10)))
    rates = measured_rates(store)
    assert rates == {"snell_seq2seq": {whole.cost_estimate(): 10.0 / whole.cost_estimate()}}


def test_a_family_with_no_stored_run_is_timed_from_its_reference_speed():
    est = estimate([spec("seq", 1e6), spec("lm", 1000.0, seconds_per_cost=2e-3)], RATES)
    assert est.seconds == pytest.approx(1e6 * 3e-6 + 1000.0 * 2e-3)
    assert est.unknown == 0 and est.reference == 1
    assert est.text() == "5 s (1 runs timed from reference speeds)"


def test_every_built_in_model_family_has_a_reference_speed():
    """So that verify's cost guard can time a cold cache (compare.cli.cost_guard), and the
    executor order runs of different families by time."""
    from attnverify.compare.evaluation.verify import plan_params
    from attnverify.compare.registry import select

    untimed = {s.model.kind for claim in select() for profile in ("smoke", "quick", "full")
               for s in claim.checked_specs(plan_params(claim, profile, {}, None))
               if s.model.seconds_per_cost is None}
    assert not untimed


def test_time_estimates_compare_runs_of_different_families():
    """A quick retrieval run took 106 s and a quick copying run about 10 s on one core (a cold quick
    report, 2026-11-26); their costs in family units say the opposite by orders of magnitude,
    which ordered the retrieval runs last and put the progress bar at 99% with a quarter of
    the time left."""
    from attnverify.compare.evaluation.verify import plan_params
    from attnverify.compare.registry import select

    def first(claim_id: str):
        [claim] = select(claim_id=claim_id)
        return claim.checked_specs(plan_params(claim, "quick", {}, None))[0]

    retrieval, copying = first("musat.sufficient_depth_learns"), first("snell.permutation_is_hard")
    assert retrieval.cost_estimate() < copying.cost_estimate() / 100
    assert 30 < retrieval.time_estimate() < 300 and 3 < copying.time_estimate() < 40


def test_first_stages_count_the_distinct_runs_and_those_not_stored(store):
    """What the dry run says of the papers' scale: every claim's first stage at full, runs that
    claims share counted once, those in the store left out of the time; claims that train
    nothing there add none."""
    import numpy as np

    from attnverify.compare import select
    from attnverify.compare.evaluation.plan import FirstStages, first_stages, other_profile_line
    from attnverify.empirics import RunResult

    shared = select(claim_id="snell.ktiw_precedes_attention") + select(
        claim_id="snell.permutation_is_hard")
    own = [s.key() for s in shared[0].checked_specs(shared[0].params("full"))]
    stages = first_stages(shared, "full", store)
    assert stages.runs == len(own) == len(stages.missing) and not stages.staged
    assert {s.key() for s in stages.missing} == set(own)
    stored = stages.missing[0]
    steps = np.array(stored.eval_steps())
    store.put(RunResult(spec=stored, status="ok", eval_steps=steps, wall_time_s=1.0,
                        metrics={"acc": np.zeros(len(steps))}, train_loss=np.zeros(stored.steps)))
    stages = first_stages(shared, "full", store)
    runs, missing = stages.runs, stages.missing
    assert runs == len(own) and len(missing) == runs - 1 and stored not in missing
    rates = {stored.model.kind: {stored.cost_estimate(): 2.0 / stored.cost_estimate()}}
    line = other_profile_line("full", stages, rates, workers=2)
    assert line == (f"At full (its defaults): {runs} first-stage runs, 1 cached, {runs - 1} to "
                    f"train: CPU time {duration(2.0 * (runs - 1))}, about "
                    f"{duration(runs - 1.0)} on 2 worker(s)")
    # half of every missing run trained already (checkpoints): half the time
    half = other_profile_line("full", stages, rates, 2, done={s.key(): 0.5 for s in missing})
    assert f"CPU time {duration(runs - 1.0)}," in half
    assert "--param not applied" in other_profile_line("full", stages, rates, 2,
                                                       params_given=True)
    staged = other_profile_line("full", FirstStages(3, [], staged=True), rates, 2)
    assert "nothing to train; claims in stages add runs after these, not counted" in staged
    derivation = select(claim_id="snell.kappa_closed_form")
    assert first_stages(derivation, "full", store) == FirstStages(0, [], False)
    assert first_stages(select(claim_id="snell.multihead_rescues_permutations"), "full",
                        store).staged
