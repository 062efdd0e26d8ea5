"""``musat.depth_step_at_refined_bound``: one step of the depth bound in trained models (spec
§2.1-2.3). Derived here: the step is that of the refined bound, not of the paper's theorem.

With t layers, the bound allows chains up to some D_t; one hop more needs t + 1 layers. So at
(D_t, t) trained models should learn, and at (D_t + 1, t) they should stay near chance. The
bound used is the one that holds for this project's formulation, whose query is a separate
token: the refined variant 3^t >= 4D + 1 (derived here from the paper's information-flow game;
the written-down construction meets it exactly,
docs/derivations.md#information-flow-game-and-refined-bound). Its first step with t >= 2 is
D = 2 -> 3 at t = 2; the paper's own bound allows 2 layers up to D = 4, so no outcome here can
contradict Theorem 1: the claim tests this project's derivation, and whether trained models
reach it. One step is not the growth: the log_3 growth (against, say, one more layer per hop)
shows only over several steps, and the next one (t = 3: D = 6 -> 7) is not trained. What the
at-bound side adds: one link per layer needs D + 1 = 3 layers at D = 2, so a model that learns
with 2 has composed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from attnverify import theory
from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.below_bound import (
    Outcome,
    decide_below_bound,
    decision_text,
    finished_outcomes,
    outcome_counts,
    pending,
    step_verdict,
)
from attnverify.compare.claims.musat.common import (
    BUDGET,
    DECISION_SEEDS,
    FINAL,
    LEARNED,
    RECONSTRUCTION,
    SEEDS,
    SHALLOW_DESIGN,
    SUFFICIENT_DESIGN,
)
from attnverify.compare.claims.musat.figures import cells_heatmap
from attnverify.compare.claims.musat.retrieval_claim import (
    RetrievalClaim,
    cell_runs,
    diverged_note,
    look_group,
)
from attnverify.compare.claims.musat.runs import (
    RETRIEVAL,
    RetrievalCell,
    RetrievalParams,
    RetrievalParamsWithTrain,
    allowed_depths,
    chance_limit,
    final_query,
    finished,
    learned,
    learns_in_half,
    near_chance,
    retrieval_spec,
)
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse, check_disjoint
from attnverify.compare.sequential import SequentialDesign, Stop
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

CELLS = ("at_bound", "past_bound", "control_at_bound", "control_past_bound")
"""The groups of the claim's cells (:meth:`DepthStepAtRefinedBound.step_cells`)."""
QUICK_NOT_TRAINED = (
    "quick trains nothing: at its budget (d_model 32, 4000 steps) learning at or one layer above "
    "the refined bound is unreliable, so the controls would fail the precondition (development "
    "runs at the refined bound + 1 learned in 1 of 3 seeds in 8000 steps, which is why quick's "
    "learning cell has the refined bound + 2 layers; calibration seeds 900 to 902 at the bound, "
    "D = 2 with 2 layers and 4 distractors, ended at query accuracy 0.13, 0.07 and 0.06, chance "
    "0.25); full decides")
CALIBRATION_SEEDS = 900
"""The at-bound cell at the quick budget (seeds 900 to 902: QUICK_NOT_TRAINED)."""


@dataclass(frozen=True)
class StepParams(RetrievalParams):
    """The retrieval runs (:class:`RetrievalParams`) with the depth step's own: ``step``, the
    cell (D_t, t, distractors) at the largest D that t layers solve under the refined bound
    (None: nothing trains); its controls (D_t, t + 1) and (D_t + 1, t + 2) train first,
    ``control_seeds`` each; the step cells (D_t, t) and (D_t + 1, t) then train in looks of
    ``step_looks`` seeds where both controls learned in half of their seeds."""

    step: RetrievalCell | None
    step_looks: tuple[int, ...]
    control_seeds: int


@dataclass(frozen=True)
class StepParamsWithTrain(StepParams, RetrievalParamsWithTrain):
    """:class:`StepParams` at quick, whose ``train`` switch leaves the cells out."""


STEP_PARAMS = {  # 4 distractors, as in quick's shallow cell (no fixed slot to read)
    "smoke": StepParams(**RETRIEVAL["smoke"], step=RetrievalCell(2, 2, 4), step_looks=(2,),
                        control_seeds=2),
    "quick": StepParamsWithTrain(**RETRIEVAL["quick"], step=None, step_looks=(6, 12),
                                 control_seeds=0),  # quick trains nothing
    "full": StepParams(**RETRIEVAL["full"], step=RetrievalCell(2, 2, 4), step_looks=(6, 12),
                       control_seeds=3),
}
STEP_PROTOCOL = Protocol(
    endpoint=("per seed: at a step of the refined bound, whether t layers learn the query "
              "(final accuracy >= 0.9) at the largest D they solve, D_t, and whether they stay "
              "near chance (not above 1/K at one-sided exact binomial p < 0.025 over the "
              "evaluation examples) one hop further, at D_t + 1, where they learn the "
              "statement depths t layers allow (>= 0.9 at each)"),
    unit=("per seed at the bound: learned or not (a diverged run did not learn); per seed past "
          "it: supports (learned the allowed depths, near chance), contradicts (above chance, "
          "whatever it learned) or untrained (did not learn the allowed depths, near chance: "
          "evidence neither way; compare.claims.musat.below_bound); a diverged run past the "
          "bound makes the claim not testable"),
    h0=("at the bound, models learn in at most half of the seeds, or one hop past it, among "
        "seeds that learn the allowed depths, they stay near chance in at most half"),
    h1=("at the bound they learn in 90% of the seeds or more, and one hop past it they stay "
        "near chance in 95% of the seeds or more"),
    test=("two group-sequential exact binomial designs (those of musat.sufficient_depth_learns "
          "and musat.shallow_models_fail), looks at 6 and 12 seeds per step cell at full, "
          "O'Brien-Fleming-type spending, binding futility; an intersection-union test: the "
          "larger of the two stage-wise p-values; the step cells' seeds follow the "
          "controls' (at full 203 on), so no step cell shares a seed with a control"),
    confirm=("both counts reach their efficacy boundary (at full: not at 6 seeds; 10 of 12 "
             "each)"),
    refute=("either count falls to its futility boundary (at most 3 of 6 or 8 of 12 learned; "
            "at most 3 of 6 or 9 of 12 supporting past the bound, where the seeds that do not "
            "contradict must fall to it too: a futility stop past the bound that only "
            "untrained seeds cause is 'not testable at this budget')"),
    alpha=0.025, beta=0.10, readout=FINAL, frozen="2026-11-28",
    error_rates=("confirmed at most 0.025 under H0 (intersection-union; past the bound a "
                 "seed's support rate is at most the near-chance rate among trained seeds); "
                 "at full, with both rates at H1 (0.9 and 0.95) and every seed past the bound "
                 "trained, confirmed 0.87 and refuted 0.05 (exact, compare.sequential); either "
                 "side refutes, so the refutation rate under H1 is at most the sum of the two "
                 "sides' (untrained seeds past the bound cost power, never error rate)"),
    precondition=("the step cells sit at a step of the refined bound (refined(D_t) = t < "
                  "refined(D_t + 1)) with t >= 2 (one layer fails for reasons that have "
                  "nothing to do with depth); each has a control with the refined bound + 1 "
                  "layers at its D that learns in at least half of its seeds (a diverged "
                  "control run did not learn; the controls train first, the step cells only "
                  "where both pass); every seed one hop past the bound finished"),
    secondary=("the mean final query accuracy of each cell",
               "the heat map of the four cells with both bounds"),
    seeds=(*SEEDS, SeedBlock(SeedUse.CALIBRATION, CALIBRATION_SEEDS,
                             note="the at-bound cell at the quick budget (3 seeds)")),
    weaknesses=("one step of the bound (t = 2, D = 2 -> 3): the log_3 growth over D is not "
                "measured (the next step, D = 6 -> 7 with 3 layers, is not trained)",
                "the bound is the refined variant for a separate query token, derived here; "
                "the paper's bound allows 2 layers up to D = 4, so no outcome contradicts "
                "Theorem 1",
                "'at the bound' asks the optimizer for the tightest circuit: a refutation can "
                "be the budget's, which the controls only partly rule out", BUDGET,
                QUICK_NOT_TRAINED))


class DepthStepAtRefinedBound(RetrievalClaim):
    """``musat.depth_step_at_refined_bound``: trained models learn with t layers exactly up to
    the D the refined bound allows and stay near chance one hop further (module docstring).

    Protocol (``STEP_PROTOCOL``): per step cell a group-sequential exact binomial design
    (learned at the bound: H0 p <= 0.5, H1 p >= 0.9; near chance past it, ``runs.near_chance``:
    H0 p <= 0.5, H1 p >= 0.95, where a seed counts only if it learned the statement depths its
    layers allow, :mod:`.below_bound`, since a model that learns nothing stays near chance
    whatever the bound); both must confirm, either refuting refutes. The controls train first,
    and the step cells only where both learn in half of their seeds (else not testable; quick
    trains nothing), on seeds after the controls' (with one seed, a control and a step cell at
    one D would share their data and first layers, and the gate, which picks controls that
    learn, would favour 'learned' at the bound); a cell's next block trains only while its
    design continues and neither design has refuted. The rule's history: docs/methodology.md.
    """

    id = "musat.depth_step_at_refined_bound"
    kind = ClaimKind.OBSERVATION
    protocol = STEP_PROTOCOL
    code_version = 5
    statement = ("At a step of the refined bound (3^t >= 4D + 1 for a separate query token, "
                 "derived here), trained models with t layers learn the query at the largest D "
                 "they can solve and stay near chance one hop further, also where they learn "
                 "the statements t layers can resolve: one step of the logarithmic growth, in "
                 "training.")
    untestable_theory = "learned at the bound, near chance one hop past it"
    defaults: ClassVar[Mapping[str, StepParams]] = STEP_PARAMS
    space: ClassVar[dict[str, Dimension]] = {
        # the first step of the refined bound with t >= 2 first (D 2 -> 3), then t = 3 (6 -> 7)
        "t": Dimension("layers t at a step of the refined bound (D_t = the largest D they "
                       "solve)", low=2, high=3),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        t = point["t"]
        return {"step": RetrievalCell(largest_solved(t), t, 4), "step_looks": (6, 12),
                "control_seeds": 3}

    def check_params(self, params: dict[str, Any]) -> None:
        super().check_params(params)
        step = params["step"]
        if step is not None and not (len(step) == 3 and all(isinstance(x, int) for x in step)
                                     and step[0] >= 1 and step[1] >= 1 and step[2] >= 0):
            raise ValueError(f"step must be None or (D, t, distractors) with D, t >= 1; got "
                             f"{step!r}")
        self.designs(params)
        if step is not None:
            check_disjoint(decision=range(DECISION_SEEDS, step_seed(params)
                                          + params["step_looks"][-1]),
                           calibration=range(CALIBRATION_SEEDS, CALIBRATION_SEEDS + 3))

    @staticmethod
    def designs(params: dict[str, Any]) -> tuple[SequentialDesign, SequentialDesign]:
        """The designs of the at-bound cell (learned) and the past-bound one (near chance)."""
        looks = tuple(params["step_looks"])
        return SequentialDesign(looks, **SUFFICIENT_DESIGN), SequentialDesign(looks,
                                                                            **SHALLOW_DESIGN)

    @staticmethod
    def step_cells(params: dict[str, Any]) -> list[tuple[int, int, int]]:
        """The at-bound and past-bound cells, then their controls (:data:`CELLS`)."""
        D, t, distractors = params["step"]
        return [(D, t, distractors), (D + 1, t, distractors), (D, t + 1, distractors),
                (D + 1, t + 2, distractors)]

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """The first stage: the two controls only (the step cells: :meth:`followup`)."""
        if params["step"] is None:
            return {}
        return {name: [retrieval_spec(params, cell, True, DECISION_SEEDS + i)
                       for i in range(params["control_seeds"])]
                for name, cell in zip(CELLS[2:], self.step_cells(params)[2:], strict=True)}

    def staged(self, params: dict[str, Any]) -> bool:
        return params["step"] is not None

    def seed_plan(self, params: dict[str, Any]) -> str:
        return ("per step cell, after both controls learn in half of their seeds: "
                + self.designs(params)[0].seed_text()) if self.staged(params) else ""

    def followup(self, params: dict[str, Any], results: GroupedResults
                 ) -> dict[str, list[RunSpec]]:
        """The step cells' next looks: none until both controls have learned in half of their
        seeds (the claim is otherwise not testable, and the step cells would decide nothing),
        and none once either design has stopped for futility (that refutes the claim, or past
        the bound, where only untrained seeds caused it, leaves it not testable: no outcome of
        the other cell can then confirm) or a seed past the bound has diverged (not
        testable)."""
        if params["step"] is None or _step_untestable(*params["step"][:2]):
            return {}
        at_bound, past_bound, *controls = self.by_cell(params, results)
        if not all(map(learns_in_half, controls)) or any(r.diverged for r in past_bound):
            return {}
        learn_design, fail_design = self.designs(params)
        hits = [learned(r) for r in at_bound]
        outcomes = self.past_outcomes(params, past_bound)
        if Stop.FUTILITY in (learn_design.decide(hits).stop,
                             decide_below_bound(fail_design, outcomes).look.stop):
            return {}
        first, cells = step_seed(params), self.step_cells(params)
        return {look_group(name, learn_design, seeds):
                [retrieval_spec(params, cell, True, first + i) for i in seeds]
                for name, cell, seeds in ((CELLS[0], cells[0], learn_design.pending(hits)),
                                          (CELLS[1], cells[1], pending(fail_design, outcomes)))
                if seeds}

    @staticmethod
    def past_outcomes(params: dict[str, Any], runs: Sequence[RunResult]) -> list[Outcome]:
        """Each finished past-bound seed's outcome (:mod:`.below_bound`): t layers at
        D_t + 1 must learn the statement depths t layers allow to say anything about depth."""
        D, t, _ = params["step"]
        return finished_outcomes(runs, D + 1, t, params["K"], params["eval_size"])

    def by_cell(self, params: dict[str, Any],
                results: GroupedResults) -> list[list[RunResult]]:
        """The runs of each cell (:meth:`step_cells`, :data:`CELLS`) in seed order."""
        results = self.results_for(params, results)
        return [cell_runs(results, name) for name in CELLS]

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        if params["step"] is None:
            return self._not_testable(QUICK_NOT_TRAINED)
        D, t, _ = params["step"]
        if untestable := _step_untestable(D, t):
            return self._not_testable(untestable)
        at_bound, past_bound, *controls = self.by_cell(params, results)
        limit = chance_limit(params["K"], params["eval_size"])
        hits = [learned(r) for r in at_bound]
        past_accs, past_diverged = finished([final_query(r) for r in past_bound])
        near = [near_chance(a, params["K"], params["eval_size"]) for a in past_accs]
        outcomes = self.past_outcomes(params, past_bound)
        control_learned = [sum(learned(r) for r in runs) for runs in controls]
        why = (f"refined bound: {t} layers solve D <= {D}, D = {D + 1} needs {t + 1}. At "
               f"D = {D} with {t} layers {sum(hits)} of {len(hits)} seeds learned the "
               f"query (final accuracy {_accs([final_query(r) for r in at_bound])}); at "
               f"D = {D + 1} with {t} layers {sum(near)} of {len(near)} stayed near chance "
               f"(<= {limit:.3f}, not above 1/K; {_accs(past_accs)})"
               f"{diverged_note(past_diverged)}"
               + (f"; of these seeds {outcome_counts(outcomes)} (depths "
                  f"{', '.join(map(str, allowed_depths(t, D + 1)))})" if outcomes else "")
               + f"; controls: "
               f"D = {D} with {t + 1} layers {control_learned[0]} of {len(controls[0])} "
               f"learned, D = {D + 1} with {t + 2} layers {control_learned[1]} of "
               f"{len(controls[1])}")
        n_seeds = len(results)
        if not all(map(learns_in_half, controls)):  # the precondition
            return self._not_testable(
                f"a control learned in fewer than half of its seeds: the budget learns too "
                f"little there for a cell with fewer layers to say anything about depth (a "
                f"longer budget would make it testable; the step cells were not trained). "
                f"{why}", n_seeds)
        if past_diverged:
            return self._not_testable(f"{past_diverged} seed(s) one hop past the bound "
                                      f"diverged. {why}", n_seeds)
        learn_design, fail_design = self.designs(params)
        learn, fail = learn_design.decide(hits), decide_below_bound(fail_design, outcomes)
        why += (f". At the bound: {learn_design.look_text(learn)}; past it: "
                f"{decision_text(fail_design, fail)}")
        verdict, reason = step_verdict(learn, fail)
        p_value = None
        if Stop.CONTINUE not in (learn.stop, fail.look.stop) \
                and reason is not Reason.NOT_TESTABLE:
            p_value = max(learn_design.p_value(learn), fail_design.p_value(fail.look))
            why += f". Intersection-union p = {p_value:.3g}"
        if reason is Reason.NOT_TESTABLE:
            why += (". Not testable at this budget: past the bound too few seeds learned the "
                    "statement depths their layers allow for the rest to decide (a model that "
                    "learns nothing stays near chance whatever the bound; a longer budget, as a "
                    "new test on fresh seeds, could decide)")
        if verdict is Verdict.REFUTED:
            sides = [name for name, r in (
                ("models at the bound do not learn", learn),
                (f"models past the bound score above {limit:.3f}", fail.look))
                if r.stop is Stop.FUTILITY and (r is learn or fail.refuted)]
            why += ". Refuted: " + " and ".join(sides) + " (at this budget)"
            if learn.stop is Stop.FUTILITY:
                why += (f". Models that do not reach the bound's tightest circuit in this budget "
                        f"refute the prediction about training, not the bound: the bound is a "
                        f"lower bound on the layers, and the paper's (3^t >= 2D) allows {t} "
                        f"layers up to D = {3 ** t // 2}")
        return Assessment(
            verdict=verdict, reason=reason, p_value=p_value,
            theory=(f"learned at D = {D} with {t} layers; <= {limit:.3f} at D = {D + 1} "
                    f"(refined bound)"),
            empirical=Measurement(min(sum(hits) / len(hits),
                                      sum(o is Outcome.SUPPORTS for o in outcomes)
                                      / len(outcomes)) if hits and outcomes else None,
                                  quantity=("the smaller of the two seed fractions (learned "
                                            "at the bound; past it, learned the allowed "
                                            "depths and near chance)"),
                                  at=self.describe(params, self.step_cells(params)[0], True)),
            statistic=f"seeds learned at the bound and near chance past it. {RECONSTRUCTION}",
            tolerance=Tolerance("learned: query >= 0.9; near chance: not above 1/K (one-sided "
                                "exact binomial per seed); exact "
                                "group-sequential binomial designs, intersection-union",
                                {"learned": LEARNED, "near_chance": limit,
                                 "learn_design": SUFFICIENT_DESIGN,
                                 "fail_design": SHALLOW_DESIGN}),
            explanation=why, n_seeds=n_seeds,
            details={"at_bound": [final_query(r) for r in at_bound], "past_bound": past_accs,
                     "past_bound_outcomes": [o.name.lower() for o in outcomes],
                     "controls": [[final_query(r) for r in runs] for runs in controls]})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        if params["step"] is None or not results:
            return {}
        groups = self.by_cell(params, results)
        return {"depth_step": cells_heatmap(params, self.step_cells(params), groups)}


def step_seed(params: dict[str, Any]) -> int:
    """The step cells' first seed: after the controls' (``DECISION_SEEDS`` on), since a control
    and a step cell at one D with one seed share the data stream and the first layers'
    initialisation, and the gate picks controls that learn."""
    return DECISION_SEEDS + params["control_seeds"]


def largest_solved(t: int) -> int:
    """D_t: the largest chain that ``t`` layers solve under the refined bound (3^t >= 4D + 1),
    0 when none does."""
    return (3 ** t - 1) // 4


def _step_untestable(D: int, t: int) -> str:
    refined = theory.musat.min_layers_refined_value
    if t < 2:
        return "one layer fails for reasons that have nothing to do with depth (t >= 2 needed)"
    if refined(D) != t or refined(D + 1) != t + 1:
        return (f"D = {D} with {t} layers is not a step of the refined bound (refined({D}) = "
                f"{refined(D)}, refined({D + 1}) = {refined(D + 1)}); the step at {t} layers "
                f"is D = {largest_solved(t)} -> {largest_solved(t) + 1}")
    return ""


def _accs(values: Sequence[float]) -> str:
    return ", ".join(f"{a:.2f}" for a in values) or "none"
