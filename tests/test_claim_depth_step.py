"""``musat.depth_grows_logarithmically`` on constructed results: both cells must decide (learned
at the bound, near chance one hop past it); either failing refutes; a control that learns
nothing, a cell off the bound's step and quick are not testable; the figure draws both bounds."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify import theory
from attnverify.compare import Verdict
from attnverify.compare.claims.musat import DepthGrowsLogarithmically
from attnverify.compare.claims.musat.depth_step import largest_solved
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult


def fake(spec, final: float) -> RunResult:
    diverged = not np.isfinite(final)
    return RunResult(spec=spec, status="diverged" if diverged else "ok",
                     eval_steps=np.asarray([0, 100, 200]),
                     metrics={"query_acc": np.asarray([0.0, 0.1, final if not diverged
                                                       else np.nan])},
                     train_loss=np.zeros(1))


def assess(at_bound, past_bound, control, **changes):
    claim = DepthGrowsLogarithmically()
    params = {**claim.params("full"), **changes}
    specs = claim.specs(params)
    accs = [*at_bound, *past_bound, *control]
    assert len(specs) == len(accs)
    return claim.assess(params, [fake(s, a) for s, a in zip(specs, accs, strict=True)])


LEARNS, CHANCE = 0.99, 0.26


@pytest.mark.parametrize(("at_bound", "past_bound", "control", "verdict", "reason", "words"), [
    ([LEARNS] * 6, [CHANCE] * 6, [LEARNS] * 3, Verdict.CONFIRMED, Reason.DECIDED,
     "Intersection-union p = 0.0156"),
    # 5 of 6 is neither: the exact test needs 6 of 6 (p = 0.11 at 5), and 5 of 6 does not
    # reject p >= 0.9
    ([LEARNS] * 5 + [0.3], [CHANCE] * 6, [LEARNS] * 3, Verdict.INCONCLUSIVE,
     Reason.BUDGET_REACHED, "look 1 of 1 at 6 seeds: 5"),
    # models at the bound do not learn while one layer more does: refuted at this budget
    ([0.3] * 6, [CHANCE] * 6, [LEARNS] * 3, Verdict.REFUTED, Reason.DECIDED,
     "models at the bound do not learn"),
    # one hop past the bound, models learn: the bound does not hold for trained models
    ([LEARNS] * 6, [LEARNS] * 3 + [CHANCE] * 3, [LEARNS] * 3, Verdict.REFUTED,
     Reason.DECIDED, "models past the bound learn"),
    # the control learns in 1 of 3: the budget learns nothing at D = 2
    ([0.3] * 6, [CHANCE] * 6, [LEARNS] + [0.3] * 2, Verdict.INCONCLUSIVE,
     Reason.NOT_TESTABLE, "the control learned in 1 of 3"),
    # a diverged seed at the bound did not learn; past the bound it makes the cell untestable
    ([LEARNS] * 5 + [np.nan], [CHANCE] * 6, [LEARNS] * 3, Verdict.INCONCLUSIVE,
     Reason.BUDGET_REACHED, "5 of 6 seeds learned"),
    ([LEARNS] * 6, [CHANCE] * 5 + [np.nan], [LEARNS] * 3, Verdict.INCONCLUSIVE,
     Reason.NOT_TESTABLE, "diverged"),
])
def test_rule(at_bound, past_bound, control, verdict, reason, words):
    a = assess(at_bound, past_bound, control)
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation
    assert words in a.explanation


def test_a_cell_off_the_step_of_the_bound_is_not_testable():
    # D = 3 with 2 layers is past the step already (refined(3) = 3)
    a = assess([LEARNS] * 6, [CHANCE] * 6, [LEARNS] * 3, step=(3, 2, 0))
    assert a.reason is Reason.NOT_TESTABLE and "not a step of the refined bound" in a.explanation
    # one layer: fails under any mechanism
    a = assess([LEARNS] * 6, [CHANCE] * 6, [LEARNS] * 3, step=(1, 1, 0))
    assert a.reason is Reason.NOT_TESTABLE and "one layer" in a.explanation


def test_quick_trains_nothing_and_says_why():
    claim = DepthGrowsLogarithmically()
    params = claim.params("quick")
    assert claim.specs(params) == []
    a = claim.assess(params, [])
    assert a.reason is Reason.NOT_TESTABLE and "calibration seeds 900 to 902" in a.explanation
    assert claim.figures(params, [], a) == {}


@pytest.mark.parametrize("t", [2, 3, 4, 5])
def test_largest_solved_is_where_the_refined_bound_steps(t):
    D = largest_solved(t)
    refined = theory.musat.min_layers_refined_value
    assert (refined(D), refined(D + 1)) == (t, t + 1)


@pytest.mark.parametrize("t", [2, 3])  # the falsify space
def test_the_step_cells_of_a_point(t):
    D = largest_solved(t)
    claim = DepthGrowsLogarithmically()
    assert claim.space["t"].low <= t <= claim.space["t"].high
    params = {**claim.params("smoke"), **claim.point_params({"t": t})}
    shapes = [(s.task.D, s.model.layers) for s in claim.specs(params)]
    assert sorted(set(shapes)) == sorted({(D, t), (D + 1, t), (D, t + 1)})


def test_the_figure_draws_the_cells_and_both_bounds():
    claim = DepthGrowsLogarithmically()
    params = claim.params("full")
    specs = claim.specs(params)
    accs = [LEARNS] * 6 + [CHANCE] * 6 + [LEARNS] * 3
    results = [fake(s, a) for s, a in zip(specs, accs, strict=True)]
    a = claim.assess(params, results)
    fig = claim.figures(params, results, a)["depth_step"]
    labels = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert any("refined bound" in label for label in labels)
    texts = {t.get_text() for ax in fig.axes for t in ax.texts}
    assert {f"{LEARNS:.2f}", f"{CHANCE:.2f}"} <= texts
