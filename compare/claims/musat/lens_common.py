"""What the two lens claims share (``musat.target_appears_at_bound``,
``musat.heads_compose_subchains``): their base, which reads the lens recorded at the end of the
control cell's runs, the runs it reads, and the binomial tests of a lens accuracy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from scipy import stats

from attnverify.compare.claim import Assessment
from attnverify.compare.claims.musat.common import LEARNED
from attnverify.compare.claims.musat.figures import lens_figure
from attnverify.compare.claims.musat.retrieval_claim import RetrievalClaim
from attnverify.compare.claims.musat.runs import Cell, final_query
from attnverify.compare.groups import GroupedResults
from attnverify.empirics import RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class ControlCellLensClaim(RetrievalClaim):
    """A claim read off the lens of the full profile's control cell (``musat.shallow_models_fail``'s
    control, D = 5 with 4 layers; the group "control"): not testable at a profile without one.
    Subclasses set ``untestable_theory``, what the claim expects, for their not-testable
    assessments."""

    cells = (("control", True),)
    untestable_statistic = "linear lens"

    def plan(self, params: dict[str, Any]) -> list[tuple[Cell, bool, int]]:
        """The control cell's seeds; none where the profile has no control."""
        return [("control", True, params["seeds"] if params.get("control") else 0)]

    def control_runs(self, params: dict[str, Any], results: GroupedResults) -> list[RunResult]:
        """The control cell's runs, in seed order."""
        return self.results_for(params, results)["control"]

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        learned = learned_with_lens(self.control_runs(params, results))
        return {"lens": lens_figure(params, learned[0])} if learned else {}


def learned_with_lens(results: Sequence[RunResult]) -> list[RunResult]:
    """The runs that learned the query (final accuracy >= 0.9) and recorded the lens."""
    return [r for r in results if not r.diverged and "lens_query" in r.final
            and final_query(r) >= LEARNED]


def binomial_sides(acc: float, n: int, limit: float) -> tuple[float, float]:
    """One-sided exact binomial p-values of accuracy ``acc`` on ``n`` examples: below
    ``limit``, and above it."""
    k = round(acc * n)
    return (stats.binomtest(k, n, limit, alternative="less").pvalue,
            stats.binomtest(k, n, limit, alternative="greater").pvalue)
