"""The ``direct`` protocol of ``snell.multihead_rescues_permutations``
(:mod:`~attnverify.compare.claims.snell.multihead`): the GRU model of §1.2 with one head
against ``heads`` heads, ``seeds`` seeds each, everything else equal.

``calibration_seeds`` single-head runs (seeds from ``PRECONDITION_SEEDS``) come first: where a
single head fails in less than a share ``MIN_RESCUE`` of them there is nothing for more heads
to rescue, the claim is not testable there and the decision runs (fresh seeds from
``DECISION_SEEDS``) are not trained. Success: token accuracy >= 0.95 at an evaluation
(``SUCCESS_ACC_ONLY``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from attnverify.compare.claim import Assessment, Verdict
from attnverify.compare.claims.snell.common import scale_text
from attnverify.compare.claims.snell.figures import curves_figure
from attnverify.compare.claims.snell.multihead_decision import (
    DECISION_SEEDS,
    MIN_RESCUE,
    PRECONDITION_SEEDS,
    CountDecision,
    precondition,
)
from attnverify.compare.claims.snell.multihead_section5 import multihead_spec
from attnverify.compare.claims.snell.multihead_success import acc_success_steps
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class DirectProtocol(CountDecision):
    """The runs and the assessment of the direct protocol (module docstring), mixed into the
    claim, which supplies the decision on the success counts (``_decide``)."""

    # -- runs --------------------------------------------------------------------------------
    @staticmethod
    def _direct_specs(params: dict[str, Any]) -> list[RunSpec]:
        """The calibration runs; the decision runs follow."""
        return [multihead_spec(params, PRECONDITION_SEEDS + i, 1)
                for i in range(params["calibration_seeds"])]

    @staticmethod
    def _direct_followup(params: dict[str, Any],
                         results: Sequence[RunResult]) -> list[RunSpec]:
        """The decision runs, once the calibration runs meet the precondition."""
        if len(results) > params["calibration_seeds"]:
            return []
        if not precondition(acc_success_steps(results)).testable:
            return []
        seeds = range(DECISION_SEEDS, DECISION_SEEDS + params["seeds"])
        return [multihead_spec(params, s, heads) for heads in (1, params["heads"])
                for s in seeds]

    @staticmethod
    def _direct_seed_plan(params: dict[str, Any]) -> str:
        return (f"{params['calibration_seeds']} precondition runs, then {params['seeds']} "
                f"decision runs per head count only where a single head fails in at least a "
                f"share {MIN_RESCUE} of them")

    # -- assessment --------------------------------------------------------------------------
    def _assess_direct(self, params: dict[str, Any],
                       results: Sequence[RunResult]) -> Assessment:
        n, heads, c = params["seeds"], params["heads"], params["calibration_seeds"]
        calibration = list(results[:c])
        testable = precondition(acc_success_steps(calibration))
        single, multi = list(results[c:c + n]), list(results[c + n:])
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
        return self._decide(params, single, multi, f"1 head ({n} seeds)",
                            f"{heads} heads ({n} seeds)", details={},
                            note=f" Precondition met: {testable.text}.")

    @staticmethod
    def _direct_figures(params: dict[str, Any],
                        results: Sequence[RunResult]) -> dict[str, Figure]:
        """1 head (the calibration runs where the decision runs are missing) against the
        multi-head runs."""
        n, heads, c = params["seeds"], params["heads"], params["calibration_seeds"]
        single = list(results[c:c + n]) or list(results[:c])
        return {"multihead_curves": curves_figure(
            {"1 head": single, f"{heads} heads": list(results[c + n:])}, ["acc", "attn_acc"],
            f"Permutation copying, V=L={params['L']}: 1 vs {heads} heads")}
