"""``snell.kappa_predicts_learning_speed`` (derived prediction, §4.5; the paper
does not test it): across a sweep of V at fixed L, copying is learned faster where the stage-1
signal kappa(V, L) is larger.

kappa is a function of V, so "beyond what V alone explains" is testable only against a class
of V effects; ours is every monotone one ("larger V is easier", or harder, with any shape,
floors included). kappa rises from 0 at V = L to its peak at V* = L + sqrt(L(L-1)) and falls
after: on the rising branch (L < V <= the sweep's kappa peak) kappa says larger V is faster,
which no "larger V is harder" effect gives; on the falling branch (V >= the peak) it says
slower, which no "larger V is easier" effect gives. So the test is one Spearman correlation of
V and speed per branch, over the subset runs, each one-sided in kappa's direction at 0.025
(confirming needs both: an intersection-union test at level 0.025; refuting takes either, at
most 0.05).

Speed of a run is the area under its token-accuracy curve, ``(1/T) int_0^T acc(t) dt`` by the
trapezoid rule over an evaluation grid of 10 steps (5 at full): continuous, without a floor at
the first evaluation, and defined for a run that never learns (its accuracy still counts).
Steps to success on the same grid are reported beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import (
    COPYING_PARAMS,
    DECISION_SEEDS,
    LENGTH_SPACE,
    PAPER_COPYING,
    CopyingParams,
    copy_spec,
    copy_task,
    scale_text,
    success_steps,
)
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.quick_budget import not_run_at_quick
from attnverify.compare.report.plotting import PALETTE, new_figure
from attnverify.compare.space import Dimension
from attnverify.compare.stats import rank_trend_test
from attnverify.empirics import RunResult, RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

VOCAB_OVER_L = (1.0, 1.1, 1.3, 2.0, 4.0, 8.0)
"""The V sweep in units of L: V = L (permutations, kappa = 0), three sizes below or near
V* ~ 2L and two above it whose kappa matches a smaller one (L = 40: kappa(52) ~ kappa(160),
kappa(44) ~ kappa(320))."""
ALPHA_BRANCH = 0.025
"""Per-branch one-sided level (both branches to confirm: level 0.025; either to refute: at
most 0.05)."""
PERMUTATIONS = 9999
"""Resamples of the permutation test (exact when there are fewer distinct pairings)."""
EVAL_EVERY = {"smoke": 10, "quick": 10, "full": 5}
"""The evaluation grid, finer than the other copying claims' (25 steps at quick, 10 at full),
so that the speed of a fast run is resolved."""

KAPPA_SPEED = Protocol(
    endpoint="on each side of the kappa peak, the rank correlation of V and learning speed "
             "(the area under the run's token-accuracy curve) in kappa's direction",
    unit="one subset run per seed and V: its area under the token-accuracy curve, in [0, 1]",
    h0="on at least one branch speed does not move with kappa (a monotone effect of V "
       "explains the speeds)",
    h1="speed rises with V below the peak and falls above it",
    test="one-sided Spearman permutation test per branch at 0.025 (9999 resampled pairings, "
         "generator seed 0; both must hold: intersection-union)",
    confirm="both branches significant in kappa's direction",
    refute="either branch significant against kappa at 0.025",
    alpha=0.025, beta=None,
    error_rates="refuting needs speed significantly against kappa on a branch; no smallest "
                "effect is declared, so 'no effect' is never refuted",
    readout="(1/T) times the trapezoid integral of teacher-forced token accuracy over the "
            "evaluation grid (every 10 steps at smoke and quick, every 5 at full) from step 0 "
            "to the budget T; a diverged run's evaluations after divergence count as 0",
    frozen="2026-11-25",
    precondition="the subset vocabularies straddle the kappa peak (two on each side), and "
                 "each branch can reach p < 0.025 with its seeds",
    secondary=("steps to success (SUCCESS) per run and their median per V",
               "the permutation runs (V = L), shown only"),
    seeds=(SeedBlock(SeedUse.DECISION, DECISION_SEEDS, "seeds per V as the profile's 'seeds'"),
           SeedBlock(SeedUse.DEVELOPMENT, 0, "1 / steps to success on a 25-step grid, the "
                                             "rule used before")),
    weaknesses=("the area rewards a higher final accuracy as well as an earlier rise: a V "
                "whose runs plateau lower reads as slower",
                "3 seeds per V at quick", "kappa is the subset distribution's; the generator "
                "changes with V too, which the branch design controls only for monotone "
                "effects of V"))


def branch_names(names: Sequence[str]) -> str:
    """'rising branch', or 'rising and falling branches'."""
    return " and ".join(names) + (" branches" if len(names) > 1 else " branch")


def vocab_sweep(length: int, ratios: Sequence[float] = VOCAB_OVER_L) -> tuple[int, ...]:
    """Vocabulary sizes round(r L) for the ratios r, distinct and increasing (the first is L)."""
    return tuple(sorted({max(length, round(r * length)) for r in ratios}))


@dataclass(frozen=True)
class KappaSpeedParams(CopyingParams):
    """The copying configuration, its runs at each vocabulary size of ``vocab`` (V = L:
    permutations, shown only), ``seeds`` each."""

    vocab: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(set(self.vocab)) < len(self.vocab) or not all(v >= self.L for v in self.vocab):
            raise ValueError(f"vocab must be distinct vocabulary sizes V >= L = {self.L}; got "
                             f"{self.vocab!r}")


@dataclass(frozen=True)
class KappaSpeedParamsWithTrain(KappaSpeedParams):
    """:class:`KappaSpeedParams` at a profile whose budget leaves the runs out (quick):
    ``train`` false trains nothing (compare.quick_budget), ``--param train=true`` trains them.
    A class of its own since the other profiles have no ``train`` parameter."""

    train: bool


def learning_curve_area(result: RunResult, metric: str = "acc") -> float:
    """(1/T) int_0^T metric(t) dt by the trapezoid rule over the run's evaluations, T the
    run's step budget: 1 for a run right from step 0, 0 for one that never moves. A run whose
    evaluations end early (it diverged, and training stops evaluating it) scores 0 from its last
    evaluation on, as does a NaN value."""
    budget = float(result.spec.steps)
    steps = result.eval_steps.astype(float)
    values = np.nan_to_num(result.metric(metric).astype(float), nan=0.0)
    if budget <= 0 or steps.size == 0:
        return 0.0
    if steps[-1] < budget:
        steps, values = np.append(steps, [steps[-1], budget]), np.append(values, [0.0, 0.0])
    return float(np.trapezoid(values, steps) / budget)


class KappaPredictsLearningSpeed(Claim):
    """``snell.kappa_predicts_learning_speed`` (see the module docstring).

    The branch test assumes no shape of the V effect, as a partial rank correlation of kappa
    and speed given V would (linear in ranks); decided on fresh seeds (its protocol's
    history: docs/methodology.md).
    """

    id = "snell.kappa_predicts_learning_speed"
    kind = ClaimKind.DERIVED
    code_version = 2
    protocol = KAPPA_SPEED
    paper = "snell"
    statement = ("Across vocabulary sizes V at fixed L, learning speed increases with the "
                 "stage-1 signal kappa(V, L), beyond what V alone explains (a derived "
                 "prediction the paper does not test).")
    paper_scale = PAPER_COPYING
    not_run_note = not_run_at_quick("its sweep of subset sizes,", 18, 5.7)
    space: ClassVar[dict[str, Dimension]] = LENGTH_SPACE
    defaults: ClassVar[dict[str, KappaSpeedParams]] = {
        # smoke: wiring only, the fewest subset sizes whose kappa order is not V's
        "smoke": KappaSpeedParams(**replace(COPYING_PARAMS["smoke"],
                                            eval_every=EVAL_EVERY["smoke"], seeds=2).as_dict(),
                                  vocab=vocab_sweep(16, (1, 1.1, 2, 8))),
        # quick: trained only with --param train=true (compare.quick_budget)
        "quick": KappaSpeedParamsWithTrain(
            **replace(COPYING_PARAMS["quick"], eval_every=EVAL_EVERY["quick"],
                      seeds=3).as_dict(), vocab=vocab_sweep(20), train=False),
        "full": KappaSpeedParams(**replace(COPYING_PARAMS["full"],
                                           eval_every=EVAL_EVERY["full"], seeds=10).as_dict(),
                                 vocab=vocab_sweep(40)),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        # the sweep follows L, so that it straddles V* = L + sqrt(L(L-1)) at every length
        return {**point, "vocab": vocab_sweep(point["L"])}

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """One group per vocabulary size, "V<size>", in the order of ``vocab``: ``seeds`` runs
        each (permutations where V = L)."""
        return {f"V{v}": [copy_spec(params, "permutation" if v == params["L"] else "subset", v,
                                    DECISION_SEEDS + s) for s in range(params["seeds"])]
                for v in params["vocab"]}

    @staticmethod
    def branch_trend(vocab: Sequence[float], speed: Sequence[float] | np.ndarray,
                     rising: bool) -> tuple[float, float, float]:
        """Spearman rho of V and speed on one branch, with the one-sided permutation p-values
        in kappa's direction (speed up with V on the rising branch, down on the falling one)
        and against it; (nan, 1, 1) when V or speed is constant (no ranking). The permutation
        test keeps its level with V tied in blocks (one block per vocabulary size), where the
        t approximation does not."""
        trend = rank_trend_test(vocab, speed, n_resamples=PERMUTATIONS)
        up, down = trend.p_greater, trend.p_less
        return (trend.rho, up, down) if rising else (trend.rho, down, up)

    def smallest_p(self, vocab: Sequence[float]) -> float:
        """The smallest one-sided p-value a branch with these sizes can reach (speeds in the
        order of V, ties within a size broken): above the level, the branch cannot decide."""
        order = np.argsort(np.asarray(vocab, float), kind="stable")
        ideal = np.empty(len(vocab))
        ideal[order] = np.arange(len(vocab), dtype=float)
        return self.branch_trend(vocab, ideal, rising=True)[1]

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        length = params["L"]
        kappa = {v: theory.snell.kappa(v, length).value for v in params["vocab"]}
        rows: list[dict[str, Any]] = [
            {"V": (V := copy_task(r.spec).vocab_size), "seed": r.spec.seed, "kappa": kappa[V],
             "speed": learning_curve_area(r), "steps_to_success": step}
            for r, step in zip(results, success_steps(list(results)), strict=True)]
        subset = [row for row in rows if row["V"] > length]
        sizes = sorted({row["V"] for row in subset})
        peak = max(sizes, key=kappa.__getitem__) if sizes else 0
        v_star = theory.snell.kappa_peak(length).value
        branches: dict[str, dict[str, Any]] = {}
        for name, rising, keep in (("rising", True, lambda v: v <= peak),
                                   ("falling", False, lambda v: v >= peak)):
            sample = [row for row in subset if keep(row["V"])]
            rho, p_with, p_against = self.branch_trend(
                [row["V"] for row in sample], [row["speed"] for row in sample], rising)
            branches[name] = {"V": sorted({row["V"] for row in sample}), "rho": rho,
                              "p_kappa_direction": p_with, "p_against": p_against}
        rise, fall = branches["rising"], branches["falling"]

        def text(name: str, b: dict[str, Any]) -> str:
            return (f"{name} branch V in {b['V']}: Spearman rho(V, speed) = {b['rho']:.2f}, "
                    f"one-sided p = {b['p_kappa_direction']:.3g} in kappa's direction, "
                    f"{b['p_against']:.3g} against")

        summary = f"{text('rising', rise)}; {text('falling', fall)}"
        reason = None
        reachable = {name: self.smallest_p([row["V"] for row in subset if keep(row["V"])])
                     for name, keep in (("rising", lambda v: v <= peak),
                                        ("falling", lambda v: v >= peak))}
        if len(rise["V"]) < 2 or len(fall["V"]) < 2:
            verdict, reason, why = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE, (
                f"the subset vocabularies {sizes} do not straddle the kappa peak V* = "
                f"{v_star:.1f} (at least two on each side, the peak shared): no branch to "
                f"test kappa against a monotone effect of V")
        elif max(reachable.values()) >= ALPHA_BRANCH:
            verdict, reason, why = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE, (
                f"{summary}. With {params['seeds']} seeds per size the smallest reachable "
                f"p-value is {max(reachable.values()):.3g} (>= {ALPHA_BRANCH}) on a branch: "
                f"it cannot decide at any outcome; more seeds ('--param seeds=N') would make "
                f"it testable")
        elif min(b["p_against"] for b in branches.values()) < ALPHA_BRANCH:
            against = [n for n, b in branches.items() if b["p_against"] < ALPHA_BRANCH]
            verdict, why = Verdict.REFUTED, (
                f"{summary}. On the {branch_names(against)} speed goes against kappa "
                f"significantly (p < {ALPHA_BRANCH})")
        elif max(b["p_kappa_direction"] for b in branches.values()) < ALPHA_BRANCH:
            verdict, why = Verdict.CONFIRMED, (
                f"{summary}. Speed rises with kappa below its peak and falls with it above "
                f"(both p < {ALPHA_BRANCH}): no monotone effect of V gives that")
        else:
            weak = [n for n, b in branches.items() if b["p_kappa_direction"] >= ALPHA_BRANCH]
            verdict, why = Verdict.INCONCLUSIVE, (
                f"{summary}. Not significant at {ALPHA_BRANCH} on the {branch_names(weak)}, "
                f"so a monotone effect of V explains the speeds as well as kappa does")
        by_v = ", ".join(
            f"{v} ({kappa[v]:.4f}): area {np.mean([r['speed'] for r in rows if r['V'] == v]):.3f}"
            + self._median_text([r["steps_to_success"] for r in rows if r["V"] == v])
            for v in sorted({row["V"] for row in rows}))
        why += f". Mean speed by V (kappa): {by_v}" + (
            f"; V = L = {length} (permutations) is shown, not decided on." if length in kappa
            and any(row["V"] == length for row in rows) else ".")
        return Assessment(
            verdict=verdict, reason=reason,
            theory="speed peaks with kappa: up on the rising branch, down on the falling one",
            empirical=Measurement(rise["rho"] if np.isfinite(rise["rho"]) else None,
                                  p_value=rise["p_kappa_direction"],
                                  quantity="Spearman rho(V, speed) on the rising branch",
                                  extras={"branches": branches}),
            statistic=f"Spearman rho of V and learning speed (area under the token-accuracy "
                      f"curve, evaluated every {params['eval_every']} steps) on each side of "
                      f"the kappa(V, L={length}) peak, subset vocabularies {sizes} x "
                      f"{params['seeds']} seeds ({scale_text(params)})",
            tolerance=Tolerance("two one-sided tests at 0.025: both to confirm "
                                "(intersection-union, level 0.025), either to refute (<= 0.05)",
                                {"alpha_per_test": ALPHA_BRANCH}),
            explanation=why, n_seeds=len(subset),
            details={"runs": rows, "branches": branches},
        )

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        return {"kappa_speed": kappa_speed_figure(assessment.details["runs"], params["L"],
                                                  params["vocab"])}

    @staticmethod
    def _median_text(steps: list[int | None]) -> str:
        finite = [np.inf if s is None else s for s in steps]
        median = float(np.median(finite)) if finite else float("inf")
        return (f", median {median:.0f} steps to success" if np.isfinite(median)
                else ", most seeds not learned")


def kappa_speed_figure(rows: Sequence[dict[str, Any]], length: int,
                       vocab: Sequence[int]) -> Figure:
    """Left: kappa(V, L) from theory with its peak; right: each run's learning speed against
    V (``rows``: the claim's ``details["runs"]``; permutations in red, shown only)."""
    fig, (ax_k, ax_s) = new_figure(ncols=2)
    grid = np.arange(length, max(vocab) + 1)
    ax_k.plot(grid, [theory.snell.kappa(int(v), length).value for v in grid],
              color=PALETTE["theory"], label=r"$\kappa(V, L)$ theory")
    ax_k.axvline(theory.snell.kappa_peak(length).value, color=PALETTE["grey"], ls=":",
                 label="V*")
    ax_k.set_xlabel(f"vocabulary size V (L = {length})")
    ax_k.set_ylabel(r"$\kappa$")
    ax_k.legend(fontsize=7)
    for row in rows:
        colour = PALETTE["red"] if row["V"] == length else PALETTE["blue"]
        ax_s.plot(row["V"], row["speed"], "o", color=colour, alpha=0.7)
    ax_s.set_xscale("log")
    ax_s.set_xlabel("vocabulary size V (red: permutations, shown only)")
    ax_s.set_ylabel("area under the token-accuracy curve")
    fig.suptitle("Stage-1 signal and learning speed")
    return fig
