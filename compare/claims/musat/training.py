"""Claims on trained transformers (musat2024.md §4-§5 and §9.3): depth below the bound fails,
enough depth with the implicit curriculum learns, query-only supervision does not, depths and
heads emerge in order.

Configurations are CPU-sized at ``quick`` and keep the spec's pitfalls in mind (§9.2): K = 4
chains (chance 1/4 on the query, no single-chain shortcut); a separate query token, so the
learning runs use at least the refined bound + 1 layers (pitfall b); the same step budget for
IC and query-only (pitfall c). Runs are shared between the claims through the cache.

The learning cell at ``quick`` is D = 2 with 4 layers (refined bound 2, so + 2), the smallest
chain with two depths >= 1 to order. Measured on this CPU before choosing it (IC, K = 4, no
distractors): with 3 layers (refined + 1, d_model 64, lr 1e-3, batch 128) 1 of 3 seeds learned
the query in 8000 steps; with 4 layers (d_model 32, lr 3e-3, batch 64) 3 of 4 seeds did within
3000 steps. Every seed that missed sat on the same plateau: every statement token right, the
query at chance (see ``RetrievalTransformer.depth_accuracy``). ``full`` adds a grid of
(D, layers) cells, IC and query-only, for the heat map (PF1).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.musat.bounds import FROZEN, RECONSTRUCTION
from attnverify.compare.plotting import PALETTE, new_figure, runs_with_band
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.space import Dimension
from attnverify.compare.stats import mean_ci
from attnverify.empirics import Adam, RunResult, RunSpec
from attnverify.empirics.retrieval import RetrievalTask
from attnverify.empirics.retrieval_transformer import RetrievalTransformerConfig

PAPER_RETRIEVAL = ("64 transformers per formulation, 24k steps, batch 128, 2^18-2^20 examples; "
                   "architecture unknown (musat2024.md §4)")

NO_GRID: dict[str, Any] = {"D": (), "layers": (), "distractors": 0, "seeds": 0}
RETRIEVAL: dict[str, dict[str, Any]] = {
    # shallow: (D, layers, distractor statements) below min_layers(D), with distractors so
    # that 4 chains plus noise statements leave no fixed slot to read; deep: (D, layers) with
    # at least the refined bound + 1 layers; grid: more (D, layers) cells, trained with IC and
    # query-only for the heat map only (every D with every layer count, ``seeds`` each)
    "smoke": {"shallow": (2, 1, 4), "deep": (1, 3), "K": 4, "vocab": 64, "d_model": 32,
              "heads": 4, "steps": 300, "lr": 3e-3, "batch_size": 64, "eval_every": 50,
              "eval_size": 256, "seeds": 2, "grid": NO_GRID},
    "quick": {"shallow": (2, 1, 4), "deep": (2, 4), "K": 4, "vocab": 64, "d_model": 32,
              "heads": 4, "steps": 4000, "lr": 3e-3, "batch_size": 64, "eval_every": 100,
              "eval_size": 512, "seeds": 3, "grid": NO_GRID},
    "full": {"shallow": (4, 1, 8), "deep": (3, 4), "K": 4, "vocab": 64, "d_model": 64,
             "heads": 4, "steps": 24_000, "lr": 1e-3, "batch_size": 128, "eval_every": 500,
             "eval_size": 1024, "seeds": 5,
             "grid": {"D": (1, 2, 3, 4), "layers": (1, 2, 3, 4), "distractors": 4,
                      "seeds": 2}},
}
LEARNED = 0.9
"""A query (or a depth) counts as learned at accuracy >= 0.9 (musat2024.md §9.2-§9.3)."""
CHANCE_MARGIN = 0.1
"""'Near chance': at most 1/K + 0.1 (the spec's starting value of delta, §9.3)."""
HEAD_THRESHOLD = 0.5
"""A head has emerged when its best structural score is >= 0.5 for 3 evaluations in a row."""
SEEDS = (SeedBlock(SeedUse.DECISION, 0,
                   note="the seeds the rule was developed on, not a fresh block"),)
"""Every retrieval claim trains seeds 0, 1, ... (``_RetrievalClaim.specs``)."""
FINAL = ("the query accuracy of the last evaluation (step 300, 4000, 24000 by profile) on "
         "fresh examples (256, 512, 1024)")
DEV_SEEDS = ("decision seeds are the development seeds: the quick cell and its budget were "
             "chosen after runs of these seeds")


def _reported(ci: tuple[float, float], low: float, high: float) -> list[float]:
    """A t-interval as reported: clipped to the range the quantity can take (the decision uses
    the unclipped one)."""
    return [float(np.clip(ci[0], low, high)), float(np.clip(ci[1], low, high))]


def _diverged_note(n: int) -> str:
    return f"; {n} diverged run(s) left out" if n else ""


Cell = str | tuple[int, ...]
"""A trained configuration: a name in the parameters ("shallow", "deep") or (D, layers,
distractors) itself (a grid cell)."""


def cell_shape(params: dict[str, Any], cell: Cell) -> tuple[int, int, int]:
    """(D, layers, distractor statements) of a cell."""
    return (*(params[cell] if isinstance(cell, str) else cell), 0)[:3]


def grid_cells(params: dict[str, Any]) -> list[tuple[int, int, int]]:
    """The heat map's extra cells: every D of the grid with every layer count."""
    grid = params.get("grid", NO_GRID)
    return [(D, layers, grid["distractors"]) for D in grid["D"] for layers in grid["layers"]]


def retrieval_spec(params: dict[str, Any], cell: Cell, ic: bool, seed: int) -> RunSpec:
    D, layers, distractors = cell_shape(params, cell)
    return RunSpec(task=RetrievalTask(D=D, K=params["K"], vocab=params["vocab"], ic=ic,
                                      distractors=distractors),
                   model=RetrievalTransformerConfig(layers=layers, heads=params["heads"],
                                                    d_model=params["d_model"]),
                   optimizer=Adam(lr=params["lr"]), steps=params["steps"],
                   batch_size=params["batch_size"], eval_every=params["eval_every"],
                   eval_size=params["eval_size"], seed=seed)


def final_query(result: RunResult) -> float:
    """Final query accuracy (NaN for a diverged run: each claim says whether a crash counts as
    a failed seed, where the claim is that the query is learned, or is left out, where a crash
    would otherwise count as evidence that it is not)."""
    return float("nan") if result.diverged else float(result.metric("query_acc")[-1])


def finished(accs: list[float]) -> tuple[list[float], int]:
    """The accuracies of the runs that did not diverge, and how many diverged."""
    kept = [a for a in accs if np.isfinite(a)]
    return kept, len(accs) - len(kept)


def crossing_step(result: RunResult, name: str, threshold: float, hold: int) -> int | None:
    """First evaluated step from which ``name`` stays >= threshold for ``hold`` evaluations
    (with ``hold = 1`` this is ``RunResult.first_step_reaching``)."""
    if result.diverged:
        return None
    above = result.metric(name) >= threshold
    for i in range(len(above) - hold + 1):
        if above[i:i + hold].all():
            return int(result.eval_steps[i])
    return None


class _RetrievalClaim(Claim):
    paper = "musat"
    paper_scale = PAPER_RETRIEVAL
    full_is_paper_scale = False
    defaults: ClassVar[dict[str, dict[str, Any]]] = RETRIEVAL
    cells: ClassVar[tuple[tuple[str, bool], ...]] = ()
    """(cell, ic) groups this claim reads, each over every seed, in this order."""
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
        return [retrieval_spec(params, cell, ic, seed) for cell, ic, n in self.plan(params)
                for seed in range(n)]

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


SHALLOW_PROTOCOL = Protocol(
    endpoint=("final query accuracy with fewer layers than min_layers(D), trained with the "
              "implicit curriculum (the 'shallow' cell: D = 2, 1 layer, 4 distractor statements "
              "at quick; D = 4, 1 layer, 8 at full)"),
    unit="per-seed final query accuracy (a diverged run is left out)",
    h0="the mean final query accuracy is above 1/K + 0.1 (more than near chance)",
    h1="the mean final query accuracy is at most 1/K + 0.1 (0.35 at K = 4): near chance or below",
    test="Student-t 95% two-sided interval of the mean final query accuracy over seeds",
    confirm="the interval's upper end <= 1/K + 0.1 (0.35 at K = 4, every profile)",
    refute="the interval's lower end > 1/K + 0.1",
    alpha=0.025, beta=0.025, readout=FINAL, frozen=FROZEN,
    secondary=("final query accuracy of the deep cell and of the query-only runs (heat map only)",
               "for one layer, the value-slot level 1/(K D + distractors) (derived here; "
               "explanation only)", "diverged runs"),
    seeds=SEEDS,
    weaknesses=(
        "only one-layer models are tested (D = 2 at quick, D = 4 at full), never "
        "t = min_layers(D) - 1 >= 2 (e.g. D = 5 with 2 layers)",
        "t-interval over 3 seeds at quick (2 at smoke, 5 at full): 2 degrees of freedom, on "
        "accuracies bounded in [0, 1]",
        "'near chance' is only an upper limit: an accuracy far below 1/K (one layer sits near "
        "1/(K D + distractors)) also confirms",
        "delta = 0.1 is the spec's starting value, marked 'to be calibrated'; it was not "
        "calibrated",
        "a short step budget (quick: 4000 steps at batch 64; the paper: 24k at batch 128) "
        "favours staying near chance",
        "no precondition is checked: nothing shows that the same budget trains a deep enough "
        "model (the deep runs are only drawn), nor that a --param cell is below the bound",
        "decision seeds are the development seeds (the one-layer probe of the docstring used "
        "runs of this cell)"))


class ShallowModelsFail(_RetrievalClaim):
    """``musat.shallow_models_fail``: with fewer layers than min_layers(D) the query stays near
    chance (at most 1/K + 0.1), even with the implicit curriculum. Per-seed final query
    accuracies; 95% Student-t interval of their mean: confirmed when its upper end is at most
    1/K + 0.1, refuted when its lower end is above, inconclusive otherwise.

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
    kind = ClaimKind.PAPER
    protocol = SHALLOW_PROTOCOL
    code_version = 1
    statement = ("Trained models with fewer layers than the bound stay near chance on the query "
                 "(many chains, so slot-reading shortcuts are closed).")
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
        return {"shallow": (D, theory.musat.min_layers_value(D) - 1, point["distractors"])}

    def plan(self, params: dict[str, Any]) -> list[tuple[Cell, bool, int]]:
        """The four named groups, then the grid's cells (IC and query-only) that are not one
        of them."""
        named = super().plan(params)
        shapes = {(cell_shape(params, cell), ic) for cell, ic, _ in named}
        seeds = params.get("grid", NO_GRID)["seeds"]
        return named + [(cell, ic, seeds) for cell in grid_cells(params) for ic in (True, False)
                        if (cell, ic) not in shapes]

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        accs, diverged = finished([final_query(r) for r in self.groups(params, results)[0]])
        limit = 1 / params["K"] + CHANCE_MARGIN
        D, layers = params["shallow"][:2]
        bound = theory.musat.min_layers_value(D)
        lo, hi = mean_ci(accs) if len(accs) >= 2 else (float("nan"), float("nan"))
        verdict = (Verdict.INCONCLUSIVE if len(accs) < 2 else
                   Verdict.CONFIRMED if hi <= limit else Verdict.REFUTED if lo > limit
                   else Verdict.INCONCLUSIVE)
        return Assessment(
            verdict=verdict, reason=Reason.NOT_TESTABLE if len(accs) < 2 else None,
            theory=f"<= {limit:.2f} (bound: {bound} layers for D = {D})",
            empirical={"value": float(np.mean(accs)), "ci": _reported((lo, hi), 0, 1),
                       "confidence": 0.95,
                       "at": self.describe(params, "shallow", True)},
            statistic=f"final query accuracy over {len(accs)} seeds. {RECONSTRUCTION}",
            tolerance={"near_chance": limit, "why": "chance 1/K plus the spec's delta = 0.1"},
            explanation=(f"{layers} layer(s) < min_layers({D}) = {bound}: query accuracy "
                         f"{np.mean(accs):.3f} (95% CI {lo:.3f} to {hi:.3f}) against chance "
                         f"{1 / params['K']:.2f}" + _value_slot_note(params)
                         + _diverged_note(diverged)),
            n_seeds=len(accs), details={"query_acc": accs, "diverged": diverged},
            figures={"depth_heatmap": depth_heatmap(params, self.plan(params),
                                                    self.groups(params, results))})


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


SUFFICIENT_PROTOCOL = Protocol(
    endpoint=("final query accuracy under the implicit curriculum with at least the refined "
              "bound + 1 layers (the 'deep' cell: D = 2 with 4 layers at quick, refined + 2; "
              "D = 3 with 4 layers at full, refined + 1)"),
    unit="per-seed final query accuracy (a diverged run counts as a failed seed: 0)",
    h0="the mean final query accuracy is below 0.9 (not learned)",
    h1="the mean final query accuracy is >= 0.9 (learned)",
    test=("Student-t 95% two-sided interval of the mean final query accuracy over seeds, with "
          "the point mean"),
    confirm="the point mean >= 0.9 and the interval's lower end > 1/K + 0.1 (0.35 at K = 4)",
    refute="the interval's upper end < 0.9",
    alpha=None, beta=0.025, readout=FINAL, frozen=FROZEN,
    error_rates=("alpha None: confirmation rests on the point mean >= 0.9, so a true mean just "
                 "below 0.9 confirms about half the time; its interval condition bounds at "
                 "0.025 only the rate of confirming a mean at or below 1/K + 0.1. beta 0.025: "
                 "the one-sided rate of the upper end falling below 0.9 when the mean is >= 0.9"),
    secondary=("seeds at >= 0.9 (count)", "depth-D statement accuracy of the seeds below 0.9 "
               "(the query plateau)", "diverged runs"),
    seeds=SEEDS,
    weaknesses=(
        "confirms on a point estimate (mean >= 0.9) but refutes only on a whole interval "
        "(upper end < 0.9)",
        "t-interval over per-seed accuracies that cluster near 1 or at the chance plateau "
        "(learned or stuck), far from normal; 2 degrees of freedom at quick",
        "with the same accuracy in every seed (e.g. all 1.0) the interval collapses to a point",
        "decision seeds are the development seeds: the quick cell (refined + 2 layers) was "
        "chosen after 3 of 4 development seeds learned there, where at refined + 1 (other "
        "settings) 1 of 3 did",
        "one cell per profile: 'enough layers' is tested at a single D",
        "a refutation means only 'not learned in this budget' (quick: 4000 steps at batch 64; "
        "the paper: 24k at batch 128)",
        "no precondition is checked: that the cell has at least the refined bound + 1 layers "
        "is set by the profiles and falsify points, not checked for a --param cell"))


class SufficientDepthLearns(_RetrievalClaim):
    """``musat.sufficient_depth_learns``: with at least the refined bound + 1 layers (a separate
    query token needs the refined bound, and the bound is only necessary: pitfalls b, c of
    §9.2; the profile states the cell) and IC, the query is learned (accuracy >= 0.9).
    Per-seed final accuracies (a diverged seed is a failed seed: accuracy 0), 95% t-interval:
    confirmed when the mean is >= 0.9 and the lower end above chance + 0.1; refuted when the
    upper end is below 0.9; inconclusive otherwise. The explanation also counts the seeds that
    learned and gives the others' statement accuracy at depth D (the query plateau)."""

    id = "musat.sufficient_depth_learns"
    kind = ClaimKind.PAPER
    protocol = SUFFICIENT_PROTOCOL
    code_version = 1
    statement = ("With enough layers (at least the refined bound + 1, for the separate query "
                 "token) and the implicit curriculum, the query is learned.")
    cells = (("deep", True),)

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        # a diverged seed did not learn the query: it counts as a failed seed (accuracy 0)
        accs = [0.0 if r.diverged else final_query(r) for r in results]
        diverged = sum(r.diverged for r in results)
        lo, hi = mean_ci(accs) if len(accs) >= 2 else (float("nan"), float("nan"))
        mean = float(np.mean(accs)) if accs else float("nan")
        floor = 1 / params["K"] + CHANCE_MARGIN
        verdict = (Verdict.INCONCLUSIVE if len(accs) < 2 else
                   Verdict.CONFIRMED if mean >= LEARNED and lo > floor else
                   Verdict.REFUTED if hi < LEARNED else Verdict.INCONCLUSIVE)
        D, layers = params["deep"][:2]
        refined = theory.musat.min_layers_refined_value(D)
        learned = sum(a >= LEARNED for a in accs)
        why = (f"{layers} layers for D = {D} (paper bound {theory.musat.min_layers_value(D)}, "
               f"refined {refined}, so refined {layers - refined:+d}): query accuracy "
               f"{mean:.3f} (95% CI {lo:.3f} to {hi:.3f}) after {params['steps']} steps; "
               f"{learned} of {len(accs)} seeds at >= {LEARNED}")
        if learned < len(accs):
            plateau = [round(float(r.metrics[f"acc_depth{D}"][-1]), 2) for r in results
                       if f"acc_depth{D}" in r.metrics and final_query(r) < LEARNED]
            why += (f" (the others' depth-{D} statement accuracy at the end: {plateau}; a seed "
                    "with every statement right and the query at chance has learned the chain "
                    "but not the separate query token's extra read)")
        if verdict is Verdict.REFUTED:
            why += "; not learned within this step budget (the paper trains 24k steps at batch 128)"
        if diverged:
            why += f"; {diverged} diverged run(s) counted as failed seeds (accuracy 0)"
        return Assessment(
            verdict=verdict, reason=Reason.NOT_TESTABLE if len(accs) < 2 else None,
            theory=f">= {LEARNED}",
            empirical={"value": mean, "ci": _reported((lo, hi), 0, 1), "confidence": 0.95,
                       "at": self.describe(params, "deep", True)},
            statistic=f"final query accuracy over {len(accs)} seeds. {RECONSTRUCTION}",
            tolerance={"learned": LEARNED, "why": "the spec's success threshold (> 90%)"},
            explanation=why, n_seeds=len(accs), details={"query_acc": accs, "diverged": diverged},
            figures={"emergence": emergence_figure(results[0])} if results else {})


IC_PROTOCOL = Protocol(
    endpoint=("IC minus query-only final query accuracy, paired by seed, at the same cell, size "
              "and step budget (the 'deep' cell)"),
    unit=("per-seed paired difference of final query accuracies (a diverged IC run counts as "
          "0; a diverged query-only run drops its pair)"),
    h0="IC is no better than query-only at this cell (mean paired difference <= 0)",
    h1=("IC learns (mean >= 0.9) where query-only does not (mean < 0.9), with a mean paired "
        "difference > 0 (no minimum size beyond that)"),
    test=("Student-t 95% two-sided interval of the mean paired difference, with each arm's "
          "point mean against 0.9"),
    confirm="IC mean >= 0.9, query-only mean < 0.9 and the interval's lower end > 0",
    refute=("query-only mean >= 0.9 (a point estimate), or the interval's upper end < 0 (IC "
            "significantly worse)"),
    alpha=0.025, beta=None, readout=FINAL, frozen=FROZEN,
    error_rates=("alpha 0.025 bounds confirming when the mean paired difference is <= 0; the "
                 "0.9 conditions on each arm are point estimates without an error rate. beta "
                 "None: the refutation by query-only's mean >= 0.9 is a point estimate (the "
                 "other, upper end < 0, has 0.025 against a positive difference)"),
    precondition=("IC learns at the cell: IC mean >= 0.9 (a point estimate), over at least 2 "
                  "pairs; checked only when neither refutation rule fires"),
    secondary=("each arm's mean final query accuracy", "diverged runs per arm",
               "query accuracy curves of both arms (figure)"),
    seeds=SEEDS,
    weaknesses=(
        "'query-only fails' is read as its mean below 0.9, not near chance (the spec's idea: at "
        "most 1/K + 0.1): a query-only mean of 0.85 counts as failing",
        "the 0.9 conditions on both arms are point estimates; only the paired difference has an "
        "interval",
        "refutes on a point estimate (query-only mean >= 0.9) but confirms only with an interval",
        "the precondition is not checked before refuting: where IC does not learn, query-only "
        ">= 0.9 or IC significantly worse still refutes 'fails where IC succeeds'",
        "t-interval over paired differences of accuracies that cluster near 1 or near chance; "
        "2 degrees of freedom at quick",
        "one cell and one budget (quick: 4000 steps at batch 64; the paper: 24k at batch 128): "
        "a short budget favours query-only failing",
        DEV_SEEDS))


class ImplicitCurriculumNeeded(_RetrievalClaim):
    """``musat.implicit_curriculum_needed``: at the same size and steps, query-only supervision
    fails where IC succeeds. Paired per seed (same seed: same initialisation and data): the IC
    minus query-only final accuracy, 95% t-interval. Confirmed when IC learns (mean >= 0.9) and
    query-only does not (its mean below 0.9) with the paired difference's interval above 0;
    refuted when query-only learns too (mean >= 0.9 at the same budget) or IC is significantly
    worse (interval below 0); inconclusive otherwise."""

    id = "musat.implicit_curriculum_needed"
    kind = ClaimKind.PAPER
    protocol = IC_PROTOCOL
    code_version = 1
    statement = ("At the same size and steps, query-only supervision fails where the implicit "
                 "curriculum succeeds.")
    cells = (("deep", True), ("deep", False))

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        ic_runs, q_runs = self.groups(params, results)
        # a diverged IC seed did not learn: a failed seed (accuracy 0); a diverged query-only
        # seed drops its pair (a crash is no evidence that query-only supervision fails)
        ic_all = [0.0 if r.diverged else final_query(r) for r in ic_runs]
        q_all = [final_query(r) for r in q_runs]
        pairs = [(a, b) for a, b in zip(ic_all, q_all, strict=True) if np.isfinite(b)]
        ic = [a for a, _ in pairs]
        query_only = [b for _, b in pairs]
        diff = np.subtract(ic, query_only)
        lo, hi = mean_ci(diff) if len(diff) >= 2 else (float("nan"), float("nan"))
        ic_mean = float(np.mean(ic)) if ic else float("nan")
        q_mean = float(np.mean(query_only)) if ic else float("nan")
        reason = None
        if len(diff) < 2:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
        elif ic_mean >= LEARNED and q_mean < LEARNED and lo > 0:
            verdict = Verdict.CONFIRMED
        elif q_mean >= LEARNED or hi < 0:
            verdict = Verdict.REFUTED
        else:
            verdict = Verdict.INCONCLUSIVE
        why = (f"IC {ic_mean:.3f} vs query-only {q_mean:.3f} (paired difference "
               f"{diff.mean():+.3f}, 95% CI {lo:+.3f} to {hi:+.3f}) at "
               f"{self.describe(params, 'deep', True)}")
        if verdict is Verdict.INCONCLUSIVE and ic_mean < LEARNED:
            reason = Reason.NOT_TESTABLE
            why += "; IC itself has not reached 0.9 within the budget, so 'fails where IC "\
                   "succeeds' cannot be decided"
        if n_ic := sum(r.diverged for r in ic_runs):
            why += f"; {n_ic} diverged IC run(s) counted as failed seeds (accuracy 0)"
        if n_q := sum(r.diverged for r in q_runs):
            why += f"; {n_q} diverged query-only run(s) dropped their pair"
        return Assessment(
            verdict=verdict, reason=reason, theory="IC learns, query-only does not",
            empirical={"value": float(diff.mean()), "ci": _reported((lo, hi), -1, 1),
                       "confidence": 0.95,
                       "at": "IC minus query-only final query accuracy (paired seeds)"},
            statistic=f"paired final query accuracies over {len(diff)} seeds. {RECONSTRUCTION}",
            tolerance={"learned": LEARNED, "why": "the spec's success threshold; pairing by "
                                                  "seed removes initialisation noise"},
            explanation=why, n_seeds=len(diff),
            details={"ic": ic, "query_only": query_only},
            figures={"ic_vs_query": ic_figure(self.groups(params, results))})


ORDER_PROTOCOL = Protocol(
    endpoint=("the order in which the per-depth accuracies of depths >= 1 first reach 0.9 under "
              "the implicit curriculum (the 'deep' cell: D = 2 at quick, D = 3 at full)"),
    unit="per-seed indicator: no inversion among the learned depths >= 1 (diverged runs left out)",
    h0="some deeper depth is learned before a shallower one (no consistent increasing order)",
    h1=("in every seed, no learned depth >= 1 first reaches 0.9 more than one evaluation "
        "interval before a shallower learned depth"),
    test="per-seed check of the first crossing steps for inversions; no statistical test",
    confirm="no inversion in any seed, and at least two depths >= 1 reach 0.9 in every seed",
    refute=("a seed in which a deeper depth first reaches 0.9 more than one evaluation interval "
            "(100 steps at quick, 500 at full) before a shallower one"),
    alpha=None, beta=None, frozen=FROZEN,
    error_rates=("a deterministic rule on 2 to 5 seeds, without an error rate: at quick (D = 2) "
                 "each seed orders the single pair of depths 1 and 2, which a random order "
                 "passes with probability at least 1/2 (ties within one interval pass), so all 3 "
                 "seeds pass by chance with probability at least 1/8; one inversion refutes"),
    readout=("the first evaluation at which acc_depth{k} >= 0.9 (a single evaluation, no hold), "
             "k = 1..D"),
    precondition=("at least two depths >= 1 reach 0.9 in every seed that did not diverge (never "
                  "at D = 1); checked after the refutation rule"),
    secondary=("depth 0's crossing step (the token itself, learned at once)",
               "fraction of seeds in order"),
    seeds=SEEDS,
    weaknesses=(
        "no statistical test: every seed ordered confirms, one inversion in one seed refutes",
        "at quick each seed orders a single pair of depths (1 and 2)",
        "a crossing is one evaluation at >= 0.9 (no hold), so a transient spike counts",
        "a shallower depth that never reaches 0.9 while a deeper one does is no inversion",
        "0.9 is the spec's example threshold, marked 'to be calibrated'; it was not calibrated",
        "diverged runs are left out", DEV_SEEDS))


class DepthsEmergeInOrder(_RetrievalClaim):
    """``musat.depths_emerge_in_order``: under IC, per-depth accuracy crosses 0.9 in increasing
    order of depth (ties within one evaluation interval allowed), for the depths >= 1 that are
    learned (depth 0, the token itself, is learned at once and proves nothing). Confirmed when
    every seed is ordered and at least two depths >= 1 are learned in each; refuted when a seed
    learns a deeper depth more than one interval before a shallower one; inconclusive when a
    seed has fewer than two learned depths >= 1 (the case for D = 1)."""

    id = "musat.depths_emerge_in_order"
    kind = ClaimKind.PAPER
    protocol = ORDER_PROTOCOL
    code_version = 1
    statement = ("Under the implicit curriculum, per-depth accuracy crosses its threshold in "
                 "increasing order of depth.")
    cells = (("deep", True),)

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        D = params["deep"][0]
        results = [r for r in results if not r.diverged]
        rows = []
        for r in results:
            steps = [r.first_step_reaching({f"acc_depth{k}": LEARNED}) for k in range(D + 1)]
            # depth 0 is the token itself (learned at once): only depths >= 1 test an order
            learned = [(k, s) for k, s in enumerate(steps) if s is not None and k >= 1]
            inversions = [(a, b) for (a, sa) in learned for (b, sb) in learned
                          if a < b and sb < sa - params["eval_every"]]
            rows.append({"seed": r.spec.seed, "crossing_steps": steps,
                         "learned_depths": len(learned), "inversions": inversions})
        ordered = all(not row["inversions"] for row in rows)
        enough = bool(rows) and all(row["learned_depths"] >= 2 for row in rows)
        verdict = (Verdict.REFUTED if not ordered else
                   Verdict.CONFIRMED if enough else Verdict.INCONCLUSIVE)
        why = "; ".join(f"seed {row['seed']}: depth crossings {row['crossing_steps']}"
                        for row in rows)
        if verdict is Verdict.INCONCLUSIVE:
            why += (" -- fewer than two depths >= 1 learned in some seed: no order to test "
                    "(depth 0 is the token itself and says nothing about an order)")
        return Assessment(
            verdict=verdict, theory="depth 0, then 1, ..., then D",
            reason=Reason.NOT_TESTABLE if verdict is Verdict.INCONCLUSIVE else None,
            empirical={"value": sum(not row["inversions"] for row in rows) / max(len(rows), 1),
                       "at": "fraction of seeds with depths in order"},
            statistic=(f"first step with per-depth accuracy >= {LEARNED}, "
                       f"{self.describe(params, 'deep', True)}. {RECONSTRUCTION}"),
            tolerance={"tie": f"{params['eval_every']} steps (one evaluation interval)",
                       "why": "crossings are only seen at evaluation steps"},
            explanation=why, n_seeds=len(rows), details={"seeds": rows})


HEADS_PROTOCOL = Protocol(
    endpoint=("the order and spacing of the first emergence of (layer, role) head events under "
              "the implicit curriculum across seeds, and the effect of zero-ablating an emerged "
              "head (the 'deep' cell)"),
    unit=("per-seed event steps: a head emerges when its best structural score (6 roles) stays "
          ">= 0.5 for 3 evaluations, one event per (layer, role); per-seed largest per-depth "
          "accuracy drop under single-head zero-ablation at the end"),
    h0="roles emerge in no consistent order across seeds, or together, or emerged heads do "
       "not matter",
    h1=("in every seed roles emerge at distinct evaluations, no two seeds order two shared roles "
        "oppositely by more than one evaluation interval, and an emerged head's ablation drops "
        "a depth's accuracy by >= 0.3"),
    test="deterministic checks on the emergence steps and ablation drops; no statistical test",
    confirm=("every seed has an emerged role; no order contradiction between any two seeds; some "
             "pair of seeds shares two (layer, role) events; every seed's events are at distinct "
             "evaluations; every seed's largest single-head ablation drop is >= 0.3"),
    refute=("two seeds order two shared (layer, role) events oppositely, each by more than one "
            "evaluation interval (100 steps at quick, 500 at full)"),
    alpha=None, beta=None, frozen=FROZEN,
    error_rates=("deterministic checks on 2 to 5 seeds without an error rate; the thresholds "
                 "(score 0.5, 3 evaluations, drop 0.3) are the project's, not calibrated"),
    readout=("structural head scores at every evaluation (emergence: first of 3 evaluations in a "
             "row at >= 0.5); zero-ablation per-depth accuracy at the final step"),
    precondition=("a head emerges in every seed that did not diverge (checked first), and two "
                  "seeds share two (layer, role) events to order (checked after the refutation "
                  "rule)"),
    secondary=("each seed's best structural score", "mean over seeds of the largest ablation "
               "drop", "attention maps of the first seed"),
    seeds=SEEDS,
    weaknesses=(
        "no statistical test: one opposite order between two seeds refutes; one pair of seeds "
        "sharing two roles can carry a confirmation",
        "the ablation check needs one emerged head per seed to drop a depth by >= 0.3, not "
        "every emerged head, so it does not show that each head serves its depths",
        "a failed ablation check is put down to redundant heads without a joint ablation of a "
        "layer's copies to show it",
        "emergence is read on the evaluation grid (every 100 steps at quick): events one "
        "evaluation apart count as 'one at a time'",
        "a head counts once, at its earliest role; later role changes are not events",
        "the paper judged emergence by inspection; the scores, roles and thresholds are this "
        "project's reconstruction [R]",
        "diverged runs are left out",
        "decision seeds are the development seeds: the role set was fitted to their runs (the "
        "directional partner roles after quick seed 0)"))


class HeadsEmergeInSequence(_RetrievalClaim):
    """``musat.heads_emerge_in_sequence``: heads emerge one at a time in a consistent order,
    and ablating an emerged head removes the depths it serves.

    Emergence [R, §5]: a head's best structural score (attention mass on the statement partner
    (from both tokens, or from one of them only), the same symbol or a neighbouring
    statement of the chain, over the positions that have one) reaches 0.5 and stays for 3
    evaluations. Heads within a layer are interchangeable and often learn one role redundantly,
    so events are (layer, role) at their first emergence. Consistent order: no two roles emerge
    in opposite orders (by more than one evaluation interval) in two seeds. One at a time: the
    roles of a seed emerge at different evaluations. Ablation: zeroing each emerged head at the
    end, the largest per-depth accuracy drop is >= 0.3 in every seed. Confirmed when all hold
    and two seeds share two roles to order; refuted on an order contradiction; inconclusive
    otherwise (no emergence, too few roles, or redundancy hiding each head's effect).
    """

    id = "musat.heads_emerge_in_sequence"
    kind = ClaimKind.PAPER
    protocol = HEADS_PROTOCOL
    code_version = 1
    statement = ("Heads emerge one at a time in a consistent order across seeds, and ablating "
                 "an emerged head removes the depths it serves.")
    cells = (("deep", True),)
    ROLES = ("partner", "partner_from_first", "partner_from_second", "same_symbol",
             "chain_next", "chain_prev")
    """Retrieval roles; attending to itself (the ``_self`` score) is not one. The directional
    partner roles catch heads like those of layer 1 at quick, seed 0 (each first token reads
    its statement's second token, each second token the next statement of the chain): they
    score 1 as ``partner_from_first`` but about 0.5 as ``partner``, at the edge of the
    threshold."""

    def emerged(self, result: RunResult) -> list[tuple[int, int, int, str]]:
        """(step, layer, head, role) of every emerged head, in order."""
        heads = sorted({tuple(int(x) for x in name[4:].split("_")[0].split("."))
                        for name in result.metrics
                        if name.startswith("head") and name.endswith("_partner")})
        out = []
        for layer, head in heads:
            best = None
            for role in self.ROLES:
                step = crossing_step(result, f"head{layer}.{head}_{role}", HEAD_THRESHOLD, 3)
                if step is not None and (best is None or step < best[0]):
                    best = (step, role)
            if best is not None:
                out.append((best[0], layer, head, best[1]))
        return sorted(out)

    @staticmethod
    def first_by_role(events: list[tuple[int, int, int, str]]) -> dict[tuple[int, str], int]:
        """First emergence step of each (layer, role): redundant copies of one role in one
        layer are one event (heads within a layer are interchangeable)."""
        first: dict[tuple[int, str], int] = {}
        for step, layer, _, role in events:
            first.setdefault((layer, role), step)
        return first

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        results = [r for r in results if not r.diverged]
        tie = params["eval_every"]
        rows = []
        for r in results:
            events = self.emerged(r)
            first = self.first_by_role(events)
            steps = sorted(first.values())
            scores = [float(v.max()) for k, v in r.metrics.items()
                      if k.startswith("head") and not k.endswith("_self")]
            drops = {}
            if r.final and events:
                base = r.final["depth_acc"]
                for _, layer, head, _ in events:
                    drops[f"{layer}.{head}"] = float(np.max(base - r.final["ablation_zero"]
                                                            [layer, head]))
            rows.append({"seed": r.spec.seed, "best_head_score": max(scores, default=0.0),
                         "first_by_role": {f"L{k[0]} {k[1]}": v for k, v in first.items()},
                         "one_at_a_time": all(b - a >= tie for a, b in
                                              itertools.pairwise(steps)),
                         "max_ablation_drop": max(drops.values(), default=0.0),
                         "ablation_drops": drops, "_first": first})
        contradictions = []
        for a, b in itertools.combinations(rows, 2):
            shared = sorted(set(a["_first"]) & set(b["_first"]))
            for x, y in itertools.combinations(shared, 2):
                da = a["_first"][x] - a["_first"][y]
                db = b["_first"][x] - b["_first"][y]
                if (da > tie and db < -tie) or (da < -tie and db > tie):
                    contradictions.append((a["seed"], b["seed"], x, y))
        comparable = any(len(set(a["_first"]) & set(b["_first"])) >= 2
                         for a, b in itertools.combinations(rows, 2))
        not_single = [str(row["seed"]) for row in rows if not row["one_at_a_time"]]
        not_causal = [str(row["seed"]) for row in rows if row["max_ablation_drop"] < 0.3]
        single, causal = not not_single, not not_causal
        reason = None
        if not rows or any(not row["_first"] for row in rows):
            verdict, reason = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE
            why = ("no head emerged in some seed: best structural scores "
                   f"{[round(row['best_head_score'], 2) for row in rows]} (threshold "
                   f"{HEAD_THRESHOLD})")
        elif contradictions:
            verdict = Verdict.REFUTED
            why = (f"the order differs between seeds: {contradictions[:3]} (seed, seed, role, "
                   "role) emerge in opposite orders")
        elif comparable and single and causal:
            verdict = Verdict.CONFIRMED
            why = "roles emerge one at a time, in the same order in every seed, and matter"
        else:
            # nothing to order is not testable; an order without contradiction beside a failed
            # one-at-a-time or ablation check is evidence both ways
            verdict = Verdict.INCONCLUSIVE
            reason = Reason.CONFLICTING if comparable else Reason.NOT_TESTABLE
            why = ("no contradiction between seeds, but " + ", ".join(
                text for ok, text in (
                    (comparable, "no two seeds share two roles to order"),
                    (single, f"in seed(s) {', '.join(not_single)} some roles emerge at the "
                             f"same evaluation"),
                    (causal, f"in seed(s) {', '.join(not_causal)} no single-head ablation "
                             f"drops a depth by >= 0.3 (redundant heads)")) if not ok))
        why += "; " + "; ".join(f"seed {row['seed']}: {row['first_by_role']}" for row in rows)
        for row in rows:
            del row["_first"]
        return Assessment(
            verdict=verdict, reason=reason, theory="one role at a time, fixed order",
            empirical={"value": float(np.mean([row["max_ablation_drop"] for row in rows]))
                       if rows else float("nan"),
                       "at": "largest per-depth accuracy drop when zeroing an emerged head"},
            statistic=(f"structural head scores at every evaluation and zero-ablation at the end, "
                       f"{self.describe(params, 'deep', True)}. {RECONSTRUCTION}"),
            tolerance={"emerged": f"score >= {HEAD_THRESHOLD} for 3 evaluations",
                       "order": f"opposite orders more than {tie} steps apart",
                       "ablation": ">= 0.3 accuracy drop",
                       "why": "the spec's protocol (§5, [R]); thresholds are ours"},
            explanation=why, n_seeds=len(rows), details={"seeds": rows},
            figures={"attention_maps": attention_figure(results[0])} if results else {})


def depth_heatmap(params: dict[str, Any], plan: Sequence[tuple[Cell, bool, int]],
                  groups: Sequence[Sequence[RunResult]]):
    """Final query accuracy over (D, layers), one panel for the implicit curriculum and one for
    query-only supervision, for every trained cell (mean over its seeds; a cell trained twice,
    e.g. with and without distractors, shows its first group), with the bound min_layers(D)
    as a line (the frontier max_depth(t) read sideways; the paper's Figure 4 in spirit): the
    shaded cells under it have fewer layers than the bound."""
    panels = [ic for ic in (True, False) if any(flag == ic for _, flag, _ in plan)]
    shapes = [cell_shape(params, cell) for cell, _, _ in plan]
    max_D = max([5, *(D for D, _, _ in shapes)])
    max_layers = max([4, *(layers for _, layers, _ in shapes)])
    fig, axes = new_figure(ncols=len(panels), width=4.0)
    depths = np.arange(1, max_D + 1)
    tops = [theory.musat.min_layers_value(int(D)) - 0.5 for D in depths]
    for ax, ic in zip(axes, panels, strict=True):
        drawn = set()
        for (D, layers, _), (_, flag, _), runs in zip(shapes, plan, groups, strict=True):
            if flag != ic or (D, layers) in drawn:
                continue
            drawn.add((D, layers))
            kept = finished([final_query(r) for r in runs])[0]
            acc = float(np.mean(kept)) if kept else float("nan")
            ax.scatter([D], [layers], s=500, c=[acc], cmap="cividis", vmin=0, vmax=1,
                       marker="s", edgecolors="black")
            ax.annotate(f"{acc:.2f}", (D, layers), ha="center", va="center", fontsize=7,
                        color="white" if acc < 0.6 else "black")
        ax.bar(depths, tops, width=1.0, color=PALETTE["grey"], alpha=0.25, linewidth=0,
               label="fewer layers than the bound (3^t < 2D)")
        # the bound as a line: the top edge of the shaded cells, min_layers(D) - 1/2
        ax.step(np.arange(0.5, max_D + 1.0), [*tops, tops[-1]], where="post",
                color=PALETTE["theory"], label="bound: min_layers(D), smallest t with 3^t >= 2D")
        ax.set_xlabel("chain length D (hops)")
        ax.set_ylabel("layers t")
        ax.set_xlim(0.5, max_D + 0.5)
        ax.set_ylim(0, max_layers + 1.8)  # the top rows hold the legend, clear of the cells
        ax.set_title(f"{'implicit curriculum' if ic else 'query-only'}: query accuracy",
                     fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    seeds = sorted({n for _, _, n in plan})
    fig.suptitle(f"mean final query accuracy over {' or '.join(map(str, seeds))} seeds per cell "
                 f"(K = {params['K']}, chance {1 / params['K']:.2f})", fontsize=9)
    return fig


def emergence_figure(result: RunResult):
    """Per-depth accuracy over training with head emergence steps marked."""
    fig, (ax,) = new_figure(width=5.0)
    colours = [PALETTE[c] for c in ("blue", "orange", "green", "red", "purple")]
    depths = sorted(int(k[9:]) for k in result.metrics if k.startswith("acc_depth"))
    for colour, k in zip(colours, depths, strict=False):
        ax.plot(result.eval_steps, result.metric(f"acc_depth{k}"), color=colour,
                label=f"depth {k}")
    ax.plot(result.eval_steps, result.metric("query_acc"), color=PALETTE["theory"],
            linestyle="--", label="query")
    for step, layer, head, role in HeadsEmergeInSequence().emerged(result):
        ax.axvline(step, color=PALETTE["grey"], linewidth=0.8, linestyle=":")
        ax.annotate(f"L{layer}H{head} {role}", (step, 0.02), rotation=90, fontsize=6,
                    color=PALETTE["grey"])
    ax.set_xlabel("training step")
    ax.set_ylabel("accuracy")
    ax.set_title(f"per-depth accuracy, seed {result.spec.seed} (dotted: head emergence)")
    ax.legend(fontsize=7)
    return fig


def ic_figure(groups: list[list[RunResult]]):
    """Query accuracy over training, IC against query-only: every seed (thin) under the mean
    over seeds with its 95% band (thick); diverged runs are drawn but left out of the mean."""
    fig, (ax,) = new_figure()
    for runs, colour, label in zip(groups, (PALETTE["blue"], PALETTE["red"]),
                                   ("IC", "query-only"), strict=True):
        runs_with_band(ax, runs, "query_acc", colour, f"{label} (mean, 95% CI; thin: seeds)")
    ax.axhline(LEARNED, color=PALETTE["grey"], linestyle=":", label="learned (0.9)")
    ax.set_xlabel("training step")
    ax.set_ylabel("query accuracy (answer token)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("implicit curriculum vs query-only")
    ax.legend(fontsize=7)
    return fig


def attention_figure(result: RunResult):
    """Every head's attention map on one evaluation instance at the end of training; an emerged
    head (``HeadsEmergeInSequence.emerged``) is framed and titled with its role and emergence
    step, the others are titled "not emerged"."""
    maps = result.final.get("attention_example")
    if maps is None:
        fig, (ax,) = new_figure()
        ax.text(0.5, 0.5, "no attention recorded", ha="center")
        return fig
    roles = {(layer, head): (role, step)
             for step, layer, head, role in HeadsEmergeInSequence().emerged(result)}
    layers, heads = maps.shape[:2]
    fig, axes = new_figure(ncols=heads, nrows=layers, width=2.0, height=2.0)
    for i, ax in enumerate(axes):
        layer, head = divmod(i, heads)
        ax.imshow(maps[layer, head], cmap="Greys", vmin=0, vmax=1)
        if (layer, head) in roles:
            role, step = roles[layer, head]
            title = f"L{layer} H{head}: {role} (step {step})"
            for spine in ax.spines.values():
                spine.set(visible=True, color=PALETTE["red"], linewidth=2)
        else:
            title = f"L{layer} H{head}: not emerged"
        ax.set_title(title, fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    fig.suptitle(f"attention at the end of training, seed {result.spec.seed} (rows: query "
                 "positions, columns: key positions; framed: emerged heads)", fontsize=9)
    return fig
