"""``musat.shallow_models_fail``: trained models with fewer layers than the depth bound stay
near chance on the query (Mușat 2024, Theorem 1 in training; the formulation is reconstructed
[R]). Its control trains first: the shallow cell, in looks, only where the control learns."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.below_bound import (
    Outcome,
    decide_below_bound,
    decision_text,
    finished_outcomes,
    outcome_counts,
    pending,
)
from attnverify.compare.claims.musat.common import (
    BUDGET,
    DECISION_SEEDS,
    FINAL,
    LEARNED,
    NEAR_CHANCE_ALPHA,
    RECONSTRUCTION,
    SEEDS,
    SHALLOW_DESIGN,
)
from attnverify.compare.claims.musat.figures import depth_heatmap
from attnverify.compare.claims.musat.retrieval_claim import (
    CELL_NOT_RUN,
    RetrievalClaim,
    cell_runs,
    group_name,
    look_group,
)
from attnverify.compare.claims.musat.runs import (
    NO_GRID,
    Cell,
    RetrievalCell,
    allowed_depths,
    cell_shape,
    chance_limit,
    final_query,
    finished,
    grid_cells,
    learned,
    learns_in_half,
    near_chance,
    retrieval_spec,
)
from attnverify.compare.decision import sequential_verdict
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.sequential import SequentialDesign, Stop
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SHALLOW_PROTOCOL = Protocol(
    endpoint=("whether a model with min_layers(D) - 1 >= 2 layers, trained with the implicit "
              "curriculum, learns the statement depths its layers allow under both bounds "
              "(depths 1 and 2 for 2 layers, final accuracy >= 0.9 at each) and yet stays "
              "near chance on the query (final accuracy not above 1/K at one-sided exact "
              "binomial p < 0.025 over the evaluation examples), per seed"),
    unit=("per-seed outcome: supports (learned the allowed depths, near chance), contradicts "
          "(above chance, whatever it learned) or untrained (did not learn the allowed "
          "depths, near chance: evidence neither way); the shallow cell's seeds must all "
          "finish: a diverged run makes the claim not testable"),
    h0=("among seeds that learn the allowed depths, the shallow model stays near chance in at "
        "most half"),
    h1="it stays near chance in 95% of the seeds or more (trained or not)",
    test=("group-sequential exact binomial design, O'Brien-Fleming-type spending, binding "
          "futility; looks at 8 and 12 seeds (full), trained only after the control has "
          "learned in half of its seeds"),
    confirm=("the supporting seeds reach a look's efficacy boundary (8 of 8, or 10 of 12, at "
             "full); an untrained seed counts as no support"),
    refute=("the supporting seeds fall to a look's futility boundary (5 or fewer of 8, or 9 "
            "or fewer of 12) and so do the seeds that do not contradict (untrained ones "
            "counted as support); a futility stop that only the untrained seeds cause is "
            "'not testable at this budget'"),
    alpha=0.025, beta=0.10, readout=FINAL, frozen="2026-11-28",
    error_rates=("confirmed at most 0.025 under H0 (a per-seed support rate is at most the "
                 "near-chance rate among trained seeds); refuted under H1 at most the sum over "
                 "looks of P(Bin(n_k, 0.95) <= futility_k), 0.025 at full; untrained seeds "
                 "cost power, never error rate (derived here; compare.claims.musat."
                 "below_bound)"),
    precondition=("the shallow cell has at least 2 layers (one layer cannot find the roots "
                  "under any mechanism, so its failure says nothing about depth), fewer than "
                  "min_layers(D), and a control with the refined bound + 1 layers at the same "
                  "D, distractors and budget learns (final query >= 0.9) in at least half of "
                  "its seeds (whether the shallow seeds learned the statements their layers "
                  "allow is part of each seed's outcome, not a gate)"),
    secondary=("the mean final query accuracy of the shallow and control cells",
               "the deep and query-only cells (heat map only)",
               "for one layer, the value-slot level 1/(K D + distractors) (derived here)"),
    seeds=SEEDS,
    weaknesses=("'near chance' is an upper limit: an accuracy far below 1/K also counts",
                "a seed exactly at 1/K counts as near chance with probability 0.975, so H1's "
                "95% is reachable; one at 1/K + 0.03 (1024 examples) already counts as above",
                "the control gate is a point estimate: 3 of 5 control seeds pass it, and 5 "
                "seeds cannot show the control learns in half of all seeds (the 95% lower "
                "bound at 5 of 5 is 0.48), so where the budget rather than the depth makes "
                "the shallow cell fail, the gate passes 32% of the time at a control rate of "
                "0.4 and the confirmation then says 'fails at this budget'", BUDGET,
                "at quick the shallow cell is one layer at D = 2: not testable there",
                "one cell (D = 5, 2 layers, 8 distractors at full): a confirmation says that "
                "these models stay near chance, not where the bound steps",
                "the shallow cell shares its first seeds (data stream, first layers' "
                "initialisation) with its control, and the gate selects budgets where the "
                "control learns: this makes the shallow seeds likelier to learn, both to "
                "learn the allowed depths (more seeds can support) and the query (against a "
                "confirmation)",
                "untrained seeds count as no support: at a 95% near-chance rate among "
                "trained seeds the power is 0.98 with every seed trained, 0.90 with 5% "
                "untrained, 0.43 with 20% (exact, compare.sequential); where many shallow "
                "seeds learn nothing at this budget, the claim can neither confirm nor "
                "refute"))


class ShallowModelsFail(RetrievalClaim):
    """``musat.shallow_models_fail``: with fewer layers than min_layers(D) the query stays near
    chance (not above 1/K at one-sided exact binomial p < 0.025 over the evaluation examples:
    ``runs.near_chance``), even with the implicit curriculum.

    Protocol (``SHALLOW_PROTOCOL``): per seed, whether the shallow model learns the statement
    depths its layers allow under both bounds (1 and 2 for 2 layers: ``runs.allowed_depths``)
    and yet stays near chance on the query: a seed supports, contradicts (query above chance)
    or is untrained (did not learn them, query near chance: a model that learns nothing stays
    near chance whatever the bound). A group-sequential exact binomial design on the
    supporting seeds (H0: near chance in at most half of the trained seeds; H1: near chance in
    95% of the seeds) confirms; its futility stop refutes only where the contradicting seeds
    alone reach it (:mod:`.below_bound`). Testable only where the shallow cell has at least 2
    layers (one layer fails for a reason that has nothing to do with depth: see below) and a
    control with the refined bound + 1 layers, at the same D, distractors and budget, learns
    in at least half of its seeds (else failing says nothing about depth). At quick the
    shallow cell is one layer at D = 2 and the claim is not testable there; full trains D = 5
    with 2 layers (D = 5 needs 3) and its 4-layer control.

    In stages: where there is a control, it trains first (with the other cells), and the
    shallow cell only once the control has learned in half of its seeds, in the looks of
    ``shallow_looks`` (8, then 12 seeds at full) while the design continues. A control that
    fails leaves the claim not testable without training the shallow cell, whose runs would
    decide nothing.

    The rule's history: docs/methodology.md.

    Why one layer scores below 1/K (derived here, not in the paper; the verdict does not use
    it): 1/K is the accuracy of a model that knows the K roots but not which chain is asked.
    Telling a root (a symbol never on a statement's left) from an intermediate symbol depends on
    what other positions hold, so a key's weight would have to depend on its context, which
    needs an earlier layer; what one layer can weigh is the key's own token and position, and
    position parity marks the value slot. A model
    that picks uniformly among the K D + distractors distinct symbols written in value slots
    scores 1 / (K D + distractors). Measured (quick shallow cell D = 2, K = 4, 4
    distractors, 4000 steps, 2 seeds each with IC and query-only, 4096 fresh examples): 98% of
    the query predictions are value-slot symbols, 65% of them roots (8 of the 12 value-slot
    symbols are roots or distractor values: 0.67 if uniform), accuracy 0.080-0.086 against
    1/12 = 0.083."""

    id = "musat.shallow_models_fail"
    not_run_note = (f"{CELL_NOT_RUN}; quick's shallow cell, one layer at D = 2, could not test "
                    f"the claim anyway (one layer fails there under any mechanism)")
    kind = ClaimKind.PAPER
    protocol = SHALLOW_PROTOCOL
    code_version = 6
    statement = ("Trained models with fewer layers than the bound stay near chance on the query, "
                 "also where they learn the statements their layers can resolve (many chains, "
                 "so slot-reading shortcuts are closed).")
    # the deep cells and the query-only ones only for the heat map (the deep query-only runs
    # are shared with musat.implicit_curriculum_needed)
    cells = (("shallow", True), ("deep", True), ("shallow", False), ("deep", False))
    space: ClassVar[dict[str, Dimension]] = {
        # shortest chain first; one layer fewer than the bound, with distractor statements
        "D": Dimension("chain length D (hops), with min_layers(D) - 1 layers", low=2, high=5),
        "distractors": Dimension("distractor statements", values=(4, 0, 2, 8)),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        D = point["D"]
        return {"shallow": RetrievalCell(D, theory.musat.min_layers_value(D) - 1,
                                         point["distractors"]),
                "control": RetrievalCell(D, theory.musat.min_layers_refined_value(D) + 1,
                                         point["distractors"])}

    def plan(self, params: dict[str, Any]) -> list[tuple[Cell, bool, int]]:
        """The four named groups (the shallow IC one with the first of ``shallow_looks``, the
        query-only one with ``shallow_query_only_seeds``), the control where there is one,
        then the grid's cells (IC and query-only) that are not one of them."""
        looks = shallow_looks(params)
        shallow = {True: looks[0] if looks else 0, False: params["shallow_query_only_seeds"]}
        named = [(cell, ic, shallow[ic] if cell == "shallow" else params["seeds"])
                 for cell, ic in self.cells]
        if params.get("control"):
            named.append(("control", True, params["seeds"]))
        shapes = {(cell_shape(params, cell), ic) for cell, ic, _ in named}
        seeds = params.get("grid", NO_GRID)["seeds"]
        return named + [(cell, ic, seeds) for cell in grid_cells(params) for ic in (True, False)
                        if (cell, ic) not in shapes]

    @staticmethod
    def design(params: dict[str, Any]) -> SequentialDesign | None:
        looks = shallow_looks(params)
        return SequentialDesign(looks, **SHALLOW_DESIGN) if looks else None

    def check_params(self, params: dict[str, Any]) -> None:
        """Also: a control has the shallow cell's D and distractors and at least the refined
        bound + 1 layers (else its learning licenses nothing about the shallow cell)."""
        super().check_params(params)
        self.design(params)
        control = params.get("control")
        if control:
            D, _, distractors = cell_shape(params, "shallow")
            needed = theory.musat.min_layers_refined_value(D) + 1
            if (control[0], control[2]) != (D, distractors) or control[1] < needed:
                raise ValueError(f"control must be (D, layers, distractors) with the shallow "
                                 f"cell's D = {D} and {distractors} distractors and at least "
                                 f"{needed} layers (the refined bound + 1); got {control!r}")

    @staticmethod
    def waits_for_control(params: dict[str, Any]) -> bool:
        """Whether the shallow IC cell trains only after its control (a later stage)."""
        return bool(params.get("control")) and bool(shallow_looks(params))

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """The first stage: every group of :meth:`plan` (named by ``group_name``: "shallow",
        "deep", "shallow_query_only", "deep_query_only", "control", then the grid's) but the
        shallow IC cell where it waits for its control (then its looks follow)."""
        groups = super().specs(params)
        if self.waits_for_control(params):
            del groups["shallow"]
        return groups

    def staged(self, params: dict[str, Any]) -> bool:
        return self.waits_for_control(params)

    def seed_plan(self, params: dict[str, Any]) -> str:
        design = self.design(params)
        if not self.staged(params) or design is None:
            return ""
        return ("the shallow cell after its control learns in half of its seeds: "
                + design.seed_text())

    def followup(self, params: dict[str, Any], results: GroupedResults
                 ) -> dict[str, list[RunSpec]]:
        """The shallow cell's next look (:func:`look_group`), once the control has
        learned in half of its seeds (none where it has not: the claim is then not testable),
        while the design continues and no shallow seed has diverged (that also makes it not
        testable)."""
        design = self.design(params)
        if not self.waits_for_control(params) or design is None:
            return {}
        results = self.results_for(params, results)
        shallow = cell_runs(results, "shallow")
        if self._untestable(params, results) or any(r.diverged for r in shallow):
            return {}  # the layers or the control leave it not testable: nothing to decide
        todo = pending(design, self.outcomes(params, shallow))
        if not todo:
            return {}
        return {look_group("shallow", design, todo):
                [retrieval_spec(params, "shallow", True, DECISION_SEEDS + i) for i in todo]}

    @staticmethod
    def outcomes(params: dict[str, Any], runs: Sequence[RunResult]) -> list[Outcome]:
        """Each finished shallow seed's outcome (:mod:`.below_bound`), in seed order."""
        D, layers = params["shallow"][:2]
        return finished_outcomes(runs, D, layers, params["K"], params["eval_size"])

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        results = self.results_for(params, results)
        shallow = cell_runs(results, "shallow")
        accs, diverged = finished([final_query(r) for r in shallow])
        limit = chance_limit(params["K"], params["eval_size"])
        D, layers = params["shallow"][:2]
        bound = theory.musat.min_layers_value(D)
        near = [near_chance(a, params["K"], params["eval_size"]) for a in accs]
        outcomes = self.outcomes(params, shallow)
        supports = sum(o is Outcome.SUPPORTS for o in outcomes)
        design = self.design(params)
        looks = design.looks if design else ()
        decision = (decide_below_bound(design, outcomes)
                    if design and not diverged and len(outcomes) in looks else None)
        lo, hi = (binomial_ci(supports, len(outcomes)) if outcomes
                  else (float("nan"), float("nan")))
        why = (f"{layers} layer(s) < min_layers({D}) = {bound}: {sum(near)} of {len(near)} "
               f"seeds near chance (final query <= {limit:.3f}: not above 1/K at one-sided "
               f"binomial p < {NEAR_CHANCE_ALPHA} over {params['eval_size']} examples), mean "
               f"accuracy "
               f"{np.mean(accs) if accs else float('nan'):.3f}" + _value_slot_note(params)
               + (f"; {diverged} diverged" if diverged else ""))
        if layers >= 2 and outcomes:
            why += (f"; of the {len(outcomes)} finished seeds {outcome_counts(outcomes)} "
                    f"({depth_text(params)})")
        untestable = self._untestable(params, results)
        if untestable:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            measured = why
            why = f"not testable here: {untestable}."
            if accs:
                why += f" Measured anyway: {measured}"
            elif not shallow_looks(params):
                why += " The shallow cell is not trained at this profile."
        elif diverged:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            why += (f"; not testable: {diverged} shallow seed(s) diverged, and every seed of a "
                    f"look must finish (a crash is evidence neither way)")
        elif design is None or decision is None:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            why += (f"; {len(outcomes)} finished seeds, not a look of {list(looks)}: every seed "
                    f"of a look must finish")
        elif decision.untrained_stop:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            why += (f"; {decision_text(design, decision)}. Not testable at this budget: a "
                    f"model that learns nothing stays near chance whatever the bound, and too "
                    f"few seeds learned the statements their layers allow for the rest to "
                    f"decide (a longer budget, as a new test on fresh seeds, could)")
        else:
            verdict, reason = sequential_verdict(decision.look.stop)
            why += f"; {decision_text(design, decision)}"
            if verdict is Verdict.CONFIRMED:
                why += (f". What this shows: at D = {D}, {layers} layers stay near chance on the "
                        f"query where they learn the shallower statements and where the control "
                        f"learns the query at this budget; one cell, so not where the bound "
                        f"steps (musat.depth_step_at_refined_bound tests a step)")
        return Assessment(
            verdict=verdict, reason=reason,
            p_value=design.p_value(decision.look) if design and decision and not untestable
            and not decision.untrained_stop and decision.look.stop is not Stop.CONTINUE
            else None,
            theory=f"<= {limit:.3f} (bound: {bound} layers for D = {D})",
            empirical=Measurement(supports / len(outcomes) if outcomes else None, ci=[lo, hi],
                                  confidence=0.95,
                                  quantity=("fraction of seeds that learned the allowed "
                                            "depths and stayed near chance (descriptive "
                                            "interval)"),
                                  at=self.describe(params, "shallow", True)),
            statistic=(f"seeds that learned the statement depths their layers allow and stay "
                       f"near chance on the query, over {len(outcomes)} seeds. {RECONSTRUCTION}"),
            tolerance=Tolerance("not above chance 1/K (one-sided exact binomial per seed), "
                                "after learning the allowed statement depths (>= 0.9 each); "
                                "exact group-sequential binomial design on the supporting "
                                "seeds",
                                {"near_chance": limit, **SHALLOW_DESIGN}),
            explanation=why, n_seeds=len(accs),
            details={"query_acc": accs, "diverged": diverged,
                     "outcomes": [o.name.lower() for o in outcomes]})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        results, plan = self.results_for(params, results), self.plan(params)
        return {"depth_heatmap": depth_heatmap(params, plan, [
            cell_runs(results, group_name(cell, ic)) for cell, ic, _ in plan])}

    def _untestable(self, params: dict[str, Any], results: GroupedResults) -> str:
        """Why the configuration cannot test the claim (the protocol's precondition), or ''."""
        D, layers = params["shallow"][:2]
        if layers < 2:
            return (f"one layer at D = {D} fails under any mechanism (it cannot tell a root "
                    f"from an intermediate symbol, see the docstring), so its failure says "
                    f"nothing about depth; the claim needs min_layers(D) - 1 >= 2 layers "
                    f"(D >= 5 with 2 layers, as the full profile trains)")
        if layers >= theory.musat.min_layers_value(D):
            return f"{layers} layers are not below min_layers({D})"
        if not params.get("control"):
            return "no control with enough layers at the same D shows this budget can learn"
        control = results["control"]
        if not learns_in_half(control):
            skipped = "" if cell_runs(results, "shallow") else "; the shallow cell was not trained"
            return (f"the control ({self.describe(params, 'control', True)}) learned in "
                    f"{sum(map(learned, control))} of {len(control)} seeds: the budget, not the "
                    f"depth, may be what fails (a longer budget would make it testable"
                    f"{skipped})")
        return ""


def depth_text(params: dict[str, Any]) -> str:
    """The allowed statement depths of the shallow cell, as words."""
    D, layers = params["shallow"][:2]
    depths = allowed_depths(layers, D)
    span = f"{depths[0]} to {depths[-1]}" if len(depths) > 1 else f"{depths[0]}"
    return f"depths {span}, final accuracy >= {LEARNED} at each; both bounds allow them"


def shallow_looks(params: dict[str, Any]) -> tuple[int, ...]:
    """The shallow IC cell's looks; none (``None``) where it is not trained."""
    return tuple(params["shallow_looks"] or ())


def _value_slot_note(params: dict[str, Any]) -> str:
    """For one layer: the accuracy of picking uniformly among the value-slot symbols, the
    level below 1/K that one layer sits at (derived; see :class:`ShallowModelsFail`)."""
    D, layers, distractors = params["shallow"]
    if layers != 1:
        return ""
    slots = params["K"] * D + distractors
    return (f". One layer can find the symbols written in a statement's value slot but cannot "
            f"tell the roots among them, so it sits near 1/(K D + distractors) = 1/{slots} = "
            f"{1 / slots:.3f}, below 1/K (derived here, not in the paper; a probe of the "
            f"quick cell, D = 2 with 4 distractors, found 98% of the query predictions in "
            f"value slots)")
