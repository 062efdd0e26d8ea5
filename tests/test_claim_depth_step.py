"""``musat.depth_step_at_refined_bound`` on constructed results: both step cells must decide
(learned at the bound, near chance one hop past it) in their group-sequential designs; either
failing refutes; the controls train first and the step cells only where both learn; the second
look is trained only for a cell whose design continues and only while neither design has
refuted; controls that learn too little, a cell off the bound's step and quick are not
testable; the figure draws both bounds."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify import theory
from attnverify.compare import Verdict
from attnverify.compare.claim import ClaimKind
from attnverify.compare.claims.musat import DepthStepAtRefinedBound
from attnverify.compare.claims.musat.depth_step_at_refined_bound import largest_solved
from attnverify.compare.groups import flatten
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult
from attnverify.empirics.probes.retrieval_metrics import depth_metric

LEARNS, CHANCE = 0.99, 0.26


def fake(spec, final: float, statements: float = 1.0) -> RunResult:
    """A run with final query accuracy ``final`` (NaN: diverged) and every statement depth at
    ``statements``."""
    diverged = not np.isfinite(final)
    metrics = {"query_acc": np.asarray([0.0, 0.1, np.nan if diverged else final])}
    metrics |= {depth_metric(k): np.asarray([0.0, 0.5, statements])
                for k in range(spec.task.D + 1)}
    return RunResult(spec=spec, status="diverged" if diverged else "ok",
                     eval_steps=np.asarray([0, 100, 200]), metrics=metrics,
                     train_loss=np.zeros(1))


def staged(at_bound, past_bound, controls=([LEARNS] * 3, [LEARNS] * 3), untrained=(),
           followups=None, **changes):
    """Run the claim's stages on the given final accuracies (by cell, in seed order): the
    first look, then whatever its followup asks for (at most ``followups`` stages where given:
    a report that stopped training early); the past-bound seeds at the indices
    ``untrained`` learn no statement depth (0.5 at each). Returns the assessment and how many
    runs each step cell trained."""
    claim = DepthStepAtRefinedBound()
    params = {**claim.params("full"), **changes}
    accs = {cell[:2]: list(values) for cell, values in zip(
        claim.step_cells(params), (at_bound, past_bound, *controls), strict=True)}
    trained = {key: 0 for key in accs}

    def run(specs):
        out = []
        for s in specs:
            key = (s.task.D, s.model.layers)
            i = trained[key]
            past = key == tuple(claim.step_cells(params)[1][:2])
            out.append(fake(s, accs[key][i], 0.5 if past and i in untrained else 1.0))
            trained[key] += 1
        return out

    results = run(claim.checked_specs(params))
    stages = 0
    while (followups is None or stages < followups) and (
            more := flatten(claim.followup(params, results))):
        results += run(more)
        stages += 1
    counts = [trained[cell[:2]] for cell in claim.step_cells(params)[:2]]
    return claim.assess(params, results), counts


@pytest.mark.parametrize(("at_bound", "past_bound", "verdict", "reason", "trained", "words"), [
    ([LEARNS] * 12, [CHANCE] * 12, Verdict.CONFIRMED, Reason.DECIDED, [12, 12],
     "Intersection-union p = 0.000244"),
    # 9 of 12 learned is neither: confirm needs 10, refute at 8 or fewer
    ([LEARNS] * 9 + [0.3] * 3, [CHANCE] * 12, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED,
     [12, 12], "look 2 of 2 at 12 seeds: 9"),
    # models at the bound do not learn: futility at the first look refutes, so neither cell
    # trains a second block
    ([0.3] * 12, [CHANCE] * 12, Verdict.REFUTED, Reason.DECIDED, [6, 6],
     "refute the prediction about training, not the bound"),
    # one hop past the bound, models score above chance: the bound fails in training
    ([LEARNS] * 12, [LEARNS, CHANCE] * 6, Verdict.REFUTED, Reason.DECIDED, [6, 6],
     "models past the bound score above 0.276"),
    # 0.30 of 1024 examples is above 1/K = 0.25 (one-sided binomial p < 0.025), though
    # within 1/K + 0.1; 0.275 is not
    ([LEARNS] * 12, [0.30, CHANCE] * 6, Verdict.REFUTED, Reason.DECIDED, [6, 6],
     "models past the bound score above 0.276"),
    ([LEARNS] * 12, [0.275] * 12, Verdict.CONFIRMED, Reason.DECIDED, [12, 12],
     "12 of 12 stayed near chance"),
    # futility on one side at the second look: the other's last block was already trained
    ([LEARNS] * 5 + [0.3] + [LEARNS] * 2 + [0.3] * 4, [CHANCE] * 12, Verdict.REFUTED,
     Reason.DECIDED, [12, 12], "models at the bound do not learn"),
    # a diverged seed at the bound did not learn
    ([LEARNS] * 9 + [np.nan] * 3, [CHANCE] * 12, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED,
     [12, 12], "9 of 12 seeds learned"),
])
def test_rule(at_bound, past_bound, verdict, reason, trained, words):
    a, counts = staged(at_bound, past_bound)
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation
    assert counts == trained and words in a.explanation


def test_a_first_look_between_the_boundaries_is_an_interim_look():
    """6 of 6 learn at the bound and 6 of 6 stay near chance past it: neither design stops at
    its first look, so with the second block not trained the verdict waits for it (interim
    look, no p-value), not "budget reached"."""
    a, counts = staged([LEARNS] * 12, [CHANCE] * 12, followups=1)  # controls, first look
    assert (a.verdict, a.reason, counts) == (Verdict.INCONCLUSIVE, Reason.INTERIM, [6, 6])
    assert a.p_value is None


def test_past_the_bound_a_seed_counts_only_where_it_learned_its_allowed_depths():
    """Past the bound, a seed that learned no statement depth is near chance whatever the
    bound: it counts as no support, and a futility stop it alone causes is not a refutation
    (compare.claims.musat.below_bound)."""
    # 4 of the first 6 untrained: 2 support (futility at 3), 6 do not contradict
    a, counts = staged([LEARNS] * 12, [CHANCE] * 12, untrained=(0, 1, 2, 3))
    assert (a.verdict, a.reason, counts) == (Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE, [6, 6])
    assert "4 did not learn the allowed depths and stayed near chance" in a.explanation
    assert "Not testable at this budget" in a.explanation and a.p_value is None
    # 3 untrained, 3 trained and above chance: the contradicting seeds alone refute (3 <= 3)
    a, counts = staged([LEARNS] * 12, [CHANCE] * 3 + [LEARNS] * 3 + [CHANCE] * 6,
                       untrained=(0, 1, 2))
    assert (a.verdict, a.reason, counts) == (Verdict.REFUTED, Reason.DECIDED, [6, 6])
    assert "models past the bound score above 0.276" in a.explanation
    # one untrained seed in each block: 5 of 6 continue, 10 of 12 support and confirm
    a, counts = staged([LEARNS] * 12, [CHANCE] * 12, untrained=(0, 6))
    assert (a.verdict, a.reason, counts) == (Verdict.CONFIRMED, Reason.DECIDED, [12, 12])


@pytest.mark.parametrize("controls", [
    ([LEARNS] + [0.3] * 2, [LEARNS] * 3),      # the at-bound side's control: 1 of 3
    ([LEARNS] * 3, [LEARNS] + [np.nan] * 2),   # the past-bound side's: diverged runs fail
])
def test_controls_that_learn_too_little_make_it_not_testable(controls):
    a, counts = staged([0.3] * 12, [CHANCE] * 12, controls=controls)
    assert a.reason is Reason.NOT_TESTABLE and "a control learned in fewer than half" \
        in a.explanation
    assert counts == [0, 0] and "the step cells were not trained" in a.explanation


def test_no_step_cell_shares_a_seed_with_a_control():
    """A control and a step cell at one D with one seed would share their data and first
    layers; the gate picks controls that learn, which would favour the at-bound cell."""
    claim = DepthStepAtRefinedBound()
    params = claim.params("full")
    controls = claim.checked_specs(params)
    results = [fake(s, LEARNS) for s in controls]
    step = flatten(claim.followup(params, results))
    assert {s.seed for s in controls} == {200, 201, 202}
    assert sorted({s.seed for s in step}) == list(range(203, 209))
    assert len(step) == 12


def test_a_diverged_run_past_the_bound_makes_it_not_testable():
    a, _ = staged([LEARNS] * 12, [CHANCE] * 11 + [np.nan])
    assert a.reason is Reason.NOT_TESTABLE and "diverged" in a.explanation
    # diverged in the first block: no second block trains
    a, counts = staged([LEARNS] * 12, [np.nan] + [CHANCE] * 11)
    assert a.reason is Reason.NOT_TESTABLE and counts == [6, 6]


def test_a_cell_off_the_step_of_the_bound_is_not_testable():
    claim = DepthStepAtRefinedBound()
    for step, words in (((3, 2, 4), "not a step of the refined bound"), ((1, 1, 4), "one layer")):
        params = {**claim.params("full"), "step": step}
        a = claim.assess(params, [])
        assert a.reason is Reason.NOT_TESTABLE and words in a.explanation


def test_quick_trains_nothing_and_says_why():
    claim = DepthStepAtRefinedBound()
    params = claim.params("quick")
    assert claim.checked_specs(params) == [] and not flatten(claim.followup(params, []))
    a = claim.assess(params, [])
    assert a.reason is Reason.NOT_TESTABLE and "calibration seeds 900 to 902" in a.explanation
    assert claim.figures(params, [], a) == {}


def test_it_is_an_exploratory_observation_of_the_refined_bound():
    """A lower bound does not predict learnability at the bound, so the step decides nothing
    about the paper: an observation, outside the paper claims and the derived predictions."""
    claim = DepthStepAtRefinedBound()
    assert claim.kind is ClaimKind.OBSERVATION and "refined bound" in claim.statement


@pytest.mark.parametrize("t", [2, 3, 4, 5])
def test_largest_solved_is_where_the_refined_bound_steps(t):
    D = largest_solved(t)
    refined = theory.musat.min_layers_refined_value
    assert (refined(D), refined(D + 1)) == (t, t + 1)


@pytest.mark.parametrize("t", [2, 3])  # the falsify space
def test_the_cells_of_a_point(t):
    D = largest_solved(t)
    claim = DepthStepAtRefinedBound()
    assert claim.space["t"].low <= t <= claim.space["t"].high
    params = {**claim.params("smoke"), **claim.point_params({"t": t})}
    claim.check_params(params)
    assert [cell[:2] for cell in claim.step_cells(params)] == [(D, t), (D + 1, t), (D, t + 1),
                                                          (D + 1, t + 2)]
    # the first stage is the two controls
    shapes = [(s.task.D, s.model.layers) for s in claim.checked_specs(params)]
    assert sorted(set(shapes)) == [(D, t + 1), (D + 1, t + 2)]


def test_the_figure_draws_the_cells_and_both_bounds():
    claim = DepthStepAtRefinedBound()
    params = claim.params("full")
    results = [fake(s, LEARNS) for s in claim.checked_specs(params)]  # the controls learn
    results += [fake(s, LEARNS if s.task.D == 2 else CHANCE)
                for s in flatten(claim.followup(params, results))]
    a = claim.assess(params, results)
    fig = claim.figures(params, results, a)["depth_step"]
    labels = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert any("refined bound" in label for label in labels)
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    # each cell: its mean and how many of its seeds learned (step cells 6, controls 3)
    assert {f"{LEARNS:.2f}\n6/6", f"{CHANCE:.2f}\n0/6", f"{LEARNS:.2f}\n3/3"} <= texts
