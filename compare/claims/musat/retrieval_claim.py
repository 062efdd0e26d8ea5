"""The base of the Mușat training claims: the runs a claim reads, in
groups of cells, and the helpers their decisions share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, Verdict
from attnverify.compare.claims.musat.bounds import RECONSTRUCTION
from attnverify.compare.claims.musat.protocols import DECISION_SEEDS
from attnverify.compare.claims.musat.runs import (
    PAPER_RETRIEVAL,
    RETRIEVAL,
    Cell,
    cell_shape,
    retrieval_spec,
)
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.quick_budget import not_run_at_quick
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult, RunSpec

CELL_NOT_RUN = not_run_at_quick(
    "the Mușat training claims' quick cell, D = 2 with 4 layers with and without the "
    "curriculum, 3 seeds each,", 6, 15.3)
"""Why the Mușat training claims train nothing at quick (compare.quick_budget)."""


def diverged_note(n: int) -> str:
    return f"; {n} diverged run(s) left out" if n else ""


class RetrievalClaim(Claim):
    paper = "musat"
    paper_scale = PAPER_RETRIEVAL
    full_is_paper_scale = False
    defaults: ClassVar[dict[str, dict[str, Any]]] = RETRIEVAL
    cells: ClassVar[tuple[tuple[str, bool], ...]] = ()
    """(cell, ic) groups this claim reads, each over every seed, in this order."""
    not_run_note = CELL_NOT_RUN
    untestable_theory: ClassVar[str] = ""
    """What the claim expects, for its not-testable assessments (:meth:`_not_testable`)."""
    untestable_statistic: ClassVar[str] = "seed counts"
    """What the claim measures, for its not-testable assessments."""
    space: ClassVar[dict[str, Dimension]] = {
        # shortest chain first: the shrunk counterexample is the smallest D at which a model
        # with the refined bound + 1 layers fails the claim
        "D": Dimension("chain length D (hops), with refined min_layers(D) + 1 layers", low=1,
                       high=4),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        D = point["D"]
        return {"deep": (D, theory.musat.min_layers_refined_value(D) + 1)}

    def plan(self, params: dict[str, Any]) -> list[tuple[Cell, bool, int]]:
        """(cell, ic, number of seeds) of every group of runs this claim reads, in order."""
        return [(cell, ic, params["seeds"]) for cell, ic in self.cells]

    def specs(self, params: dict[str, Any]) -> list[RunSpec]:
        return [retrieval_spec(params, cell, ic, DECISION_SEEDS + i)
                for cell, ic, n in self.plan(params) for i in range(n)]

    def groups(self, params: dict[str, Any], results: Sequence[RunResult]) -> list[list]:
        out, start = [], 0
        for _, _, n in self.plan(params):
            out.append(list(results[start:start + n]))
            start += n
        return out

    @staticmethod
    def describe(params: dict[str, Any], cell: Cell, ic: bool) -> str:
        D, layers, distractors = cell_shape(params, cell)
        return (f"D = {D}, {layers} layer(s), {'IC' if ic else 'query-only'}, K = {params['K']}, "
                f"{distractors} distractor statements, d_model {params['d_model']}, "
                f"{params['steps']} steps")

    def _not_testable(self, why: str, n_seeds: int = 0) -> Assessment:
        """The assessment of a configuration that fails the protocol's precondition."""
        return Assessment(
            verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE,
            theory=self.untestable_theory, empirical=Measurement(None),
            statistic=f"{self.untestable_statistic}. {RECONSTRUCTION}",
            tolerance=Tolerance("the protocol's precondition", {}),
            explanation=f"not testable here: {why}", n_seeds=n_seeds)
