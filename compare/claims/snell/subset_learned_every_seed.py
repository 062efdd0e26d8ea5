"""``snell.subset_learned_every_seed`` (Snell et al. 2021, the easy half of the copying
experiment): the subset distribution (L distinct of V > L) is learned by every seed (the authors'
blog post: "successfully learns this copying function every time"), decided with sequential seeds
(:mod:`attnverify.compare.sequential`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from scipy import stats

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import (
    COPYING_PARAMS,
    DECISION_SEEDS,
    LENGTH_SPACE,
    PAPER_COPYING,
    CopyingModel,
    copy_spec,
    scale_text,
    success_steps,
)
from attnverify.compare.claims.snell.copying_runs import SUCCESS_TEXT
from attnverify.compare.claims.snell.figures import curves_figure
from attnverify.compare.decision import design_verdicts, sequential_verdict
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.sequential import SequentialDesign, Stop
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RATES = {"p0": 0.75, "p1": 0.95, "alpha": 0.025, "beta": 0.10}
"""H0: a seed learns with probability <= 0.75 (one seed in four fails: "every time" is plainly
false); H1: >= 0.95, the smallest rate that still reads as "every time" at a few dozen seeds."""
LOOKS = {"smoke": (2, 4), "quick": (8, 16, 24, 32), "full": (8, 16, 24, 32)}
"""Cumulative seed counts of the looks per profile (smoke: wiring only; its looks cannot
decide)."""


@dataclass(frozen=True)
class SubsetParams(CopyingModel):
    """The copying configuration of the subset runs (L of ``subset_V``), its seeds in
    sequential ``looks`` (cumulative counts)."""

    looks: tuple[int, ...]


def look_group(design: SequentialDesign, indices: range) -> str:
    """The group of the seeds of one look of ``design`` (their indices): "look_<k>"."""
    return f"look_{design.looks.index(indices.stop) + 1}"

PROTOCOL = Protocol(
    endpoint="the per-seed probability that a subset run learns to copy (SUCCESS) within the "
             "step budget",
    unit="one run per seed: success indicator",
    h0="p <= 0.75", h1="p >= 0.95",
    test="group-sequential exact binomial design, looks at 8, 16, 24, 32 seeds, "
         "O'Brien-Fleming-type alpha and beta spending, binding futility "
         "(attnverify.compare.sequential)",
    confirm="successes at a look reach its efficacy boundary",
    refute="successes at a look fall to its futility boundary (p >= 0.95 rejected)",
    alpha=0.025, beta=0.10,
    readout="whether any evaluation meets SUCCESS (token accuracy >= 0.95 and aligned "
            "attention >= 0.9)",
    frozen="2026-11-25",
    secondary=("the median step of success over the seeds that learn",),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS, "seeds in look order; the first "
                     "runs are shared with snell.permutation_is_hard"),
           SeedBlock(SeedUse.DEVELOPMENT, 0, "the 12 (quick) and 20 (full) seeds of the "
                     "Clopper-Pearson rule used before")),
    weaknesses=("'every time' is read as p >= 0.95; a rate between 0.75 and 0.95 can end "
                "either way or at the budget (the design's operating characteristics are in "
                "docs/methodology.md)",))


def lower_bound(k: int, n: int) -> float:
    """The exact (Clopper-Pearson) one-sided 95% lower bound on a rate of k in n."""
    return 0.0 if k == 0 else float(stats.beta.ppf(0.05, k, n - k + 1))


class SubsetLearnedEverySeed(Claim):
    """``snell.subset_learned_every_seed``: every seed learns the subset distribution.

    Success of a seed: ``SUCCESS`` (token acc >= 0.95 and aligned attention >= 0.9 at one
    evaluation). "Every time" is read as a per-seed success probability; the protocol
    (:data:`PROTOCOL`) tests H0 p <= 0.75 against H1 p >= 0.95 with sequential seeds: after
    each look it confirms (efficacy boundary), refutes (futility boundary) or trains the next
    block (``followup``); after the last look a count between the boundaries is ``budget
    reached``.

    Decided on the fresh seeds from ``DECISION_SEEDS`` (its protocol's history:
    docs/methodology.md).
    """

    id = "snell.subset_learned_every_seed"
    kind = ClaimKind.PAPER
    code_version = 2
    protocol = PROTOCOL
    paper = "snell"
    statement = ("The easy copying distribution (L distinct tokens of V > L, random order) is "
                 "learned by every seed within the step budget.")
    paper_scale = PAPER_COPYING
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, SubsetParams]] = {
        profile: SubsetParams(**{k: v for k, v in cfg.as_dict().items() if k != "seeds"},
                              looks=LOOKS[profile])
        for profile, cfg in COPYING_PARAMS.items()}

    @staticmethod
    def design(params: dict[str, Any]) -> SequentialDesign:
        return SequentialDesign(tuple(params["looks"]), **RATES)

    def check_params(self, params: dict[str, Any]) -> None:
        super().check_params(params)
        self.design(params)  # a ValueError names bad looks

    def runs(self, params: dict[str, Any], indices: range) -> list[RunSpec]:
        """The subset runs of the seeds ``indices`` (from ``DECISION_SEEDS``)."""
        return [copy_spec(params, "subset", params["subset_V"], DECISION_SEEDS + i)
                for i in indices]

    def _look(self, params: dict[str, Any], indices: range) -> dict[str, list[RunSpec]]:
        """The runs of one look's block of seeds ``indices``, as the look's group; none for
        no seeds."""
        if not indices:
            return {}
        return {look_group(self.design(params), indices): self.runs(params, indices)}

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """The first look's seeds (group "look_1")."""
        return self._look(params, range(params["looks"][0]))

    def staged(self, params: dict[str, Any]) -> bool:
        return True

    def followup(self, params: dict[str, Any], results: GroupedResults
                 ) -> dict[str, list[RunSpec]]:
        """The next look's seeds ("look_<k>") while the design continues."""
        outcomes = [s is not None for s in success_steps(list(results))]
        return self._look(params, self.design(params).pending(outcomes))

    def seed_plan(self, params: dict[str, Any]) -> str:
        return self.design(params).seed_text()

    def stage_note(self, params: dict[str, Any], results: Sequence[RunResult]) -> str:
        k = sum(s is not None for s in success_steps(list(results)))
        return f"{k}/{len(results)} seeds learned so far"

    def reachable_verdicts(self, params: dict[str, Any]) -> frozenset[Verdict]:
        """The design's: its verdict is the sequential stop (:func:`design_verdicts`)."""
        return design_verdicts(self.design(params))

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        design = self.design(params)
        steps = success_steps(list(results))
        result = design.decide([s is not None for s in steps])
        efficacy, futility = design.boundaries()
        n, k = result.seeds, result.successes
        if result.look == 0:
            return Assessment(
                verdict=Verdict.INCONCLUSIVE, reason=Reason.INTERIM, theory=1.0,
                empirical=Measurement(None), statistic="no look completed",
                tolerance=Tolerance(thresholds={"design": design.describe()}),
                explanation=f"fewer runs ({len(results)}) than the first look needs.")
        verdict, reason = sequential_verdict(result.stop)
        bounds = (f"confirm at >= {efficacy[result.look - 1]}, refute at <= "
                  f"{futility[result.look - 1]}")
        why = {Stop.EFFICACY: "at or above the efficacy boundary: p <= 0.75 rejected",
               Stop.FUTILITY: "at or below the futility boundary: p >= 0.95 rejected",
               Stop.BUDGET: "between the boundaries at the last look: the seeds ran out",
               Stop.CONTINUE: "between the boundaries, and the next look's runs are missing"}
        learned = [s for s in steps[:n] if s is not None]
        lo, hi = binomial_ci(k, n)
        return Assessment(
            verdict=verdict, reason=reason, theory=1.0,
            p_value=design.p_value(result) if result.stop is not Stop.CONTINUE else None,
            empirical=Measurement(k / n, ci=[lo, hi], confidence=0.95,
                                  quantity="fraction of seeds that learn",
                                  extras={"stopped_at": f"look {result.look} of "
                                                        f"{len(design.looks)} ({n} seeds)",
                                          "median_steps_to_success": float(np.median(learned))
                                          if learned else None}),
            statistic=f"seeds reaching {SUCCESS_TEXT} (subset V={params['subset_V']}, "
                      f"{scale_text(params | {'seeds': n})}), sequential looks "
                      f"{', '.join(map(str, design.looks))}",
            tolerance=Tolerance("'every time' as p >= 0.95 against p <= 0.75; exact "
                                "group-sequential design with O'Brien-Fleming-type spending",
                                {"p0": RATES["p0"], "p1": RATES["p1"], "alpha": RATES["alpha"],
                                 "beta": RATES["beta"]}),
            explanation=(f"stopped at look {result.look} of {len(design.looks)}: {k}/{n} seeds "
                         f"learned ({bounds}), {why[result.stop]}. Clopper-Pearson 95% CI "
                         f"{lo:.2f}-{hi:.2f} (descriptive; the design decides). 'Every seed' "
                         f"is read as a rate of {RATES['p1']} or more (H1); the exact one-sided "
                         f"95% lower bound on the rate is {lower_bound(k, n):.2f}"
                         + (f": a confirmation shows a rate above {RATES['p0']}, not that "
                            f"every seed learns." if verdict is Verdict.CONFIRMED else ".")),
            n_seeds=n, details={"steps_to_success": steps, "successes": k,
                                "look": result.look, "stop": str(result.stop),
                                "boundaries": {"efficacy": efficacy, "futility": futility}},
        )

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        """The seeds the design read (its looks up to the one it stopped at), where a look was
        completed."""
        results = self.results_for(params, results)
        looks = assessment.details.get("look", 0)
        if not looks:
            return {}
        read = [r for k in range(1, looks + 1) for r in results[f"look_{k}"]]
        n = len(read)
        return {"subset_curves": curves_figure(
            {f"subset {params['L']} of {params['subset_V']}": read},
            ["acc", "attn_acc"], f"Subset copying, {n} seeds")}
