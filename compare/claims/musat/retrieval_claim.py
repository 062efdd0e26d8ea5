"""The base of the Mușat training claims: the runs a claim reads, in named groups of cells
(one group per cell and curriculum), and the helpers their decisions share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, Verdict
from attnverify.compare.claims.musat.common import DECISION_SEEDS, RECONSTRUCTION
from attnverify.compare.claims.musat.runs import (
    PAPER_RETRIEVAL,
    RETRIEVAL_PARAMS,
    Cell,
    LearningCell,
    RetrievalParams,
    cell_shape,
    retrieval_spec,
)
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.quick_budget import not_run_at_quick
from attnverify.compare.sequential import SequentialDesign
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult, RunSpec

CELL_NOT_RUN = not_run_at_quick(
    "the Mușat training claims' quick cell, D = 2 with 4 layers with and without the "
    "curriculum, 3 seeds each,", 6, 15.3)
"""Why the Mușat training claims train nothing at quick (compare.quick_budget)."""


def diverged_note(n: int) -> str:
    return f"; {n} diverged run(s) left out" if n else ""


def group_name(cell: Cell, ic: bool) -> str:
    """The name of a cell's group of runs: the cell's parameter name ("deep", "control") or,
    for a grid cell, its shape ("D2_layers3_distractors4"); "_query_only" without the
    curriculum."""
    name = cell if isinstance(cell, str) else "D{}_layers{}_distractors{}".format(*cell)
    return name if ic else f"{name}_query_only"


def look_group(name: str, design: SequentialDesign, seeds: range) -> str:
    """The group of a sequential cell's ``seeds``, the block of one look of ``design``: the
    cell's name for the first look, "<name>_look_<k>" for look k after it."""
    look = design.looks.index(seeds.stop) + 1
    return name if look == 1 else f"{name}_look_{look}"


def cell_runs(results: GroupedResults, name: str) -> list[RunResult]:
    """The runs of the cell whose group is ``name``, over all its looks so far (the group
    itself and its "<name>_look_<k>" groups, :func:`look_group`), in seed order."""
    return [r for group in results.groups() if group == name
            or group.startswith(f"{name}_look_") for r in results[group]]


class RetrievalClaim(Claim):
    paper = "musat"
    paper_scale = PAPER_RETRIEVAL
    full_is_paper_scale = False
    defaults: ClassVar[Mapping[str, RetrievalParams]] = RETRIEVAL_PARAMS
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
        return {"deep": LearningCell(D, theory.musat.min_layers_refined_value(D) + 1)}

    def plan(self, params: dict[str, Any]) -> list[tuple[Cell, bool, int]]:
        """(cell, ic, number of seeds) of every group of runs this claim reads, in order."""
        return [(cell, ic, params["seeds"]) for cell, ic in self.cells]

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """One group per entry of :meth:`plan` (:func:`group_name`), seeds from
        ``DECISION_SEEDS``."""
        groups: dict[str, list[RunSpec]] = {}
        for cell, ic, n in self.plan(params):
            name = group_name(cell, ic)
            if name in groups:
                raise AssertionError(f"{self.id}: two groups of runs named {name!r}")
            groups[name] = [retrieval_spec(params, cell, ic, DECISION_SEEDS + i)
                            for i in range(n)]
        return groups

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
