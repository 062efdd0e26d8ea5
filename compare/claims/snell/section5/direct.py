"""The ``direct`` protocol of ``snell.multihead_rescues_permutations`` (smoke, quick): the GRU
model of §1.2 with one head against ``heads`` heads, ``seeds`` seeds each, everything else
equal.

``calibration_seeds`` single-head runs (group ``calibration``, seeds from
``PRECONDITION_SEEDS``) come first: where a single head fails in less than a share
``MIN_RESCUE`` of them there is nothing for more heads to rescue, the claim is not testable
there and the decision runs (groups ``one_head`` and ``multi_head``, fresh seeds from
``DECISION_SEEDS``) are not trained. Success: token accuracy >= 0.95 at an evaluation
(``SUCCESS_ACC_ONLY``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attnverify.compare.claim import Assessment, Verdict
from attnverify.compare.claims.snell.common import scale_text
from attnverify.compare.claims.snell.figures import curves_figure
from attnverify.compare.claims.snell.section5.decision import (
    MIN_RESCUE,
    SuccessCount,
    count_assessment,
    precondition,
)
from attnverify.compare.claims.snell.section5.stages import multihead_spec
from attnverify.compare.claims.snell.section5.success import (
    acc_success_steps,
    direct_success_text,
)
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DECISION_SEEDS, PRECONDITION_SEEDS = 400, 500
"""The direct protocol's decision runs and the single-head runs that measure its
precondition: blocks of their own, since ``CALIBRATION_SEEDS`` 200 to 207 chose the quick
length (measuring the precondition there would pass it by construction), and seeds 100 to
107 and 300 to 307 ran a first version of this protocol (8 runs per arm) before the quick
budget was cut to 6."""

DIRECT_SUCCESS = SuccessCount(steps=acc_success_steps, text=direct_success_text,
                              checks_single_heads=False)
"""The direct protocol's success (its precondition is checked on the calibration runs)."""


def direct_specs(params: dict[str, Any]) -> dict[str, list[RunSpec]]:
    """The calibration runs; the decision runs follow."""
    return {"calibration": [multihead_spec(params, PRECONDITION_SEEDS + i, 1)
                            for i in range(params["calibration_seeds"])]}


def direct_followup(params: dict[str, Any], results: GroupedResults) -> dict[str, list[RunSpec]]:
    """The decision runs, once the calibration runs meet the precondition: one head, then
    ``heads`` heads, on the same seeds."""
    if "one_head" in results:
        return {}
    if not precondition(acc_success_steps(results["calibration"])).testable:
        return {}
    seeds = range(DECISION_SEEDS, DECISION_SEEDS + params["seeds"])
    return {group: [multihead_spec(params, s, heads) for s in seeds]
            for group, heads in (("one_head", 1), ("multi_head", params["heads"]))}


def direct_seed_plan(params: dict[str, Any]) -> str:
    return (f"{params['calibration_seeds']} precondition runs, then {params['seeds']} "
            f"decision runs per head count only where a single head fails in at least a "
            f"share {MIN_RESCUE} of them")


def assess_direct(params: dict[str, Any], results: GroupedResults) -> Assessment:
    n, heads, c = params["seeds"], params["heads"], params["calibration_seeds"]
    testable = precondition(acc_success_steps(results["calibration"]))
    if not testable.testable:
        return Assessment(
            verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE,
            theory=f"{heads} heads better",
            empirical=Measurement(None, extras={"single_head_failures": testable.failures}),
            statistic=f"single-head failures on {c} calibration seeds "
                      f"({scale_text(params)})",
            tolerance=Tolerance("the testability precondition of the protocol",
                                {"min_failure_share": MIN_RESCUE}),
            explanation=testable.text + ".", n_seeds=c,
            details={"calibration_failures": testable.failures})
    single, multi = _decision_runs(results)
    return count_assessment(params, DIRECT_SUCCESS, single, multi, f"1 head ({n} seeds)",
                            f"{heads} heads ({n} seeds)", details={},
                            note=f" Precondition met: {testable.text}.")


def direct_figures(params: dict[str, Any], results: GroupedResults) -> dict[str, Figure]:
    """1 head (the calibration runs where the decision runs are missing) against the
    multi-head runs."""
    single, multi = _decision_runs(results)
    return {"multihead_curves": curves_figure(
        {"1 head": single or results["calibration"], f"{params['heads']} heads": multi},
        ["acc", "attn_acc"],
        f"Permutation copying, V=L={params['L']}: 1 vs {params['heads']} heads")}


def _decision_runs(results: GroupedResults) -> tuple[list[RunResult], list[RunResult]]:
    """The one-head and multi-head decision runs; none before they are trained."""
    if "one_head" not in results:
        return [], []
    return results["one_head"], results["multi_head"]
