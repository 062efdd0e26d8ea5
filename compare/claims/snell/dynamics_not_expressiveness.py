"""``snell.dynamics_not_expressiveness``: the single-head model can express the permutation
solution, yet from its standard start it often fails to find it: the failure is in the
dynamics (Snell et al. 2021, abstract and §1; the argument behind the multi-head result).

Two parts, on permutations of L tokens. Expressiveness is existential: the same model, trained
first on subsets of the same tokens (a warm start; stage 1 can learn KTIW there, kappa > 0),
copies permutations with aligned attention, so a solution exists in the model class and some
path reaches it. "Often fails" is a rate: from the standard initialisation the model fails
within the budget in at least 30% of seeds, against "failures are rare" (at most 10%), by an
exact binomial test. The standard arm uses a fresh block of seeds; the warm arm starts from
the block's first seeds (each warm run is the standard run of its seed after a warm-up).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from scipy import stats

from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.snell.common import (
    COPYING_PARAMS,
    PAPER_COPYING,
    CopyingParams,
    copy_spec,
    scale_text,
    success_steps,
)
from attnverify.compare.claims.snell.figures import curves_figure
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason, SeedBlock, SeedUse
from attnverify.compare.quick_budget import not_run_at_quick
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FROZEN = "2026-11-26"
SEEDS = 600
"""The decision block's first seed: fresh, no run of these seeds existed when the rule was
fixed (a first form decided on other claims' runs; docs/methodology.md)."""
RARE, OFTEN = 0.1, 0.3
"""H0: the standard start fails in at most 10% of seeds; H1: in at least 30% ('often')."""
ALPHA, BETA = 0.025, 0.10


@dataclass(frozen=True)
class DynamicsParams(CopyingParams):
    """The copying configuration on permutations of ``L`` tokens, ``seeds`` standard starts;
    the first ``warm_seeds`` of them also from a warm start, ``warm_steps`` steps on subsets
    of ``warm_L`` of the same ``L`` tokens first. The model's recurrent ``cell`` ("lstm",
    "gru") and whether it shares its embeddings (``shared_embedding``)."""

    warm_seeds: int
    cell: str
    shared_embedding: bool
    warm_L: int
    warm_steps: int


@dataclass(frozen=True)
class DynamicsParamsWithTrain(DynamicsParams):
    """:class:`DynamicsParams` at a profile whose budget leaves the runs out (quick):
    ``train`` false trains nothing (compare.quick_budget), ``--param train=true`` trains them.
    A class of its own since the other profiles have no ``train`` parameter."""

    train: bool


def p_no_failure(n: int) -> float:
    """The refutation's p-value of the most extreme outcome, no failure in n seeds, against a
    failure rate of at least ``OFTEN``."""
    return (1 - OFTEN) ** n


def can_refute(n: int) -> bool:
    """Whether n standard seeds can refute at all."""
    return p_no_failure(n) < BETA


def min_refuting_seeds() -> int:
    """The fewest standard seeds that can refute (7 at the rates above)."""
    n = 1
    while not can_refute(n):
        n += 1
    return n


PROTOCOL = Protocol(
    endpoint=("the failure rate of the standard start on permutations (no success: token acc "
              ">= 0.95 with aligned attention at some evaluation within the budget), with the "
              "existence of a warm-started solution (the same model trained first on subsets "
              "of the same tokens, then on permutations, succeeds in some seed)"),
    unit="per-seed failure indicator of the standard start; per-seed success of the warm start",
    h0=(f"the standard start fails in at most {RARE:.0%} of seeds, or no warm start solves "
        f"permutations"),
    h1=(f"the standard start fails in at least {OFTEN:.0%} of seeds, and a warm start solves "
        f"permutations"),
    test=(f"exact binomial test of the standard start's failures (H0 rate <= {RARE}); the "
          f"existence part is a count (one warm seed that succeeds shows it)"),
    confirm=f"p (failure rate <= {RARE}) < {ALPHA} and at least one warm seed succeeds",
    refute=f"p (failure rate >= {OFTEN}) < {BETA} (the standard start rarely fails)",
    alpha=ALPHA, beta=BETA,
    readout="success at any evaluation within the budget (the copying claims' criterion)",
    frozen=FROZEN,
    precondition=(f"the standard arm can refute: with n seeds, (1 - {OFTEN})^n < {BETA} (n >= "
                  f"{min_refuting_seeds()}; with fewer, no outcome refutes and the design could "
                  f"only confirm)"),
    secondary=("the warm start's accuracy on permutations at its first evaluation (before "
               "any permutation step)", "the warm-up's own final token accuracy on subsets",
               "the warm start's success count"),
    seeds=(SeedBlock(SeedUse.DECISION, SEEDS,
                     note="the standard arm; the warm arm uses the block's first seeds too"),),
    weaknesses=("expressiveness is shown by construction of a path (subsets first), not by a "
                "test: a model trained on subsets already copies permutations before any "
                "permutation step, so the warm arm shows that a solution exists, nothing more",
                "'often fails' within the budget: a longer budget may let more seeds learn "
                "(the paper's permutation failures are finite-horizon too)",
                "the failure-rate part repeats the content of snell.permutation_is_hard in "
                "absolute form (no subset comparison)",
                "no warm seed succeeding leaves the claim inconclusive, not refuted: one path "
                "failing does not show that no path exists",
                "quick uses the single-head GRU of the multi-head protocol at L = 40 (where one "
                "head fails often at quick's width); full uses the paper's LSTM at L = 40"))


class DynamicsNotExpressiveness(Claim):
    """``snell.dynamics_not_expressiveness`` (module docstring)."""

    id = "snell.dynamics_not_expressiveness"
    kind = ClaimKind.PAPER
    code_version = 2
    protocol = PROTOCOL
    paper = "snell"
    statement = ("The single-head model can express the permutation solution (a warm start "
                 "from subsets learns it) while from its standard start it often fails: the "
                 "failure is in the dynamics.")
    paper_scale = PAPER_COPYING
    not_run_note = not_run_at_quick("its GRU runs at L = 40 from both starts,", 8, 5.9)
    space: ClassVar[dict[str, Dimension]] = {
        # up to 15: shorter than every profile's L (16 at smoke)
        "warm_L": Dimension("length of the warm-up's subsets (of V = L tokens)", low=4,
                            high=15)}
    defaults: ClassVar[dict[str, DynamicsParams]] = {
        "smoke": DynamicsParams(**replace(COPYING_PARAMS["smoke"], seeds=3).as_dict(),
                                warm_seeds=1, cell="lstm", shared_embedding=True, warm_L=12,
                                warm_steps=200),
        # quick: the single-head GRU of snell.multihead_rescues_permutations at L = 40 (one
        # head failed there in 5 of 8 calibration seeds), on fresh seeds; trained only with
        # --param train=true (compare.quick_budget), and then not testable: 6 seeds cannot
        # refute (the precondition; --param seeds=7 can)
        "quick": DynamicsParamsWithTrain(
            **replace(COPYING_PARAMS["quick"], L=40, seeds=6).as_dict(), warm_seeds=2,
            cell="gru", shared_embedding=False, warm_L=30, warm_steps=200, train=False),
        "full": DynamicsParams(**replace(COPYING_PARAMS["full"], seeds=20).as_dict(),
                               warm_seeds=3, cell="lstm", shared_embedding=True, warm_L=30,
                               warm_steps=200),
    }

    def check_params(self, params: dict[str, Any]) -> None:
        super().check_params(params)
        if not (isinstance(params["warm_seeds"], int) and 1 <= params["warm_seeds"]
                <= params["seeds"]):
            raise ValueError(f"warm_seeds must be an integer from 1 to seeds = "
                             f"{params['seeds']}; got {params['warm_seeds']!r}")
        if not 1 <= params["warm_L"] < params["L"]:
            raise ValueError(f"warm_L must be an integer from 1 to L - 1 = {params['L'] - 1} "
                             f"(subsets of the permutations' tokens); got {params['warm_L']!r}")

    def _model(self, params: dict[str, Any]) -> dict[str, Any]:
        """The model's options away from the defaults (so that shared runs keep their keys)."""
        model: dict[str, Any] = {}
        if params["cell"] != "lstm":
            model["cell"] = params["cell"]
        if not params["shared_embedding"]:
            model["shared_embedding"] = False
        return model

    def specs(self, params: dict[str, Any]) -> dict[str, list[RunSpec]]:
        """The standard start's seeds, then the warm start's, on permutations of L tokens."""
        model = self._model(params)
        standard = [copy_spec(params, "permutation", params["L"], SEEDS + i, **model)
                    for i in range(params["seeds"])]
        warm_params = params | {"L": params["warm_L"], "steps": params["warm_steps"]}
        warm = [replace(spec, warm_start=copy_spec(warm_params, "subset", params["L"],
                                                   spec.seed, **model))
                for spec in standard[:params["warm_seeds"]]]
        return {"standard": standard, "warm": warm}

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        results = self.results_for(params, results)
        n = params["seeds"]
        standard, warm = results["standard"], results["warm"]
        failures = sum(s is None for s in success_steps(standard))
        k_warm = sum(s is not None for s in success_steps(warm))
        p_often = stats.binomtest(failures, n, RARE, alternative="greater").pvalue
        p_rare = stats.binomtest(failures, n, OFTEN, alternative="less").pvalue
        counts = (f"the standard start fails in {failures} of {n} seeds (p = {p_often:.3g} "
                  f"against a rate <= {RARE}; p = {p_rare:.3g} against >= {OFTEN}); the warm "
                  f"start succeeds in {k_warm} of {len(warm)}")
        if not can_refute(n):
            verdict, reason, text = (
                Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE,
                f"{n} standard seeds cannot refute (even no failure has p = "
                f"{p_no_failure(n):.3g} >= {BETA} against a rate >= {OFTEN}), so the design "
                f"could only confirm; at least {min_refuting_seeds()} are needed ({counts})")
        elif p_rare < BETA:
            verdict, reason, text = (Verdict.REFUTED, Reason.DECIDED,
                                     f"the standard start rarely fails: {counts}")
        elif p_often < ALPHA and k_warm:
            verdict, reason, text = (Verdict.CONFIRMED, Reason.DECIDED,
                                     f"a solution exists and the standard start often misses "
                                     f"it: {counts}")
        elif p_often < ALPHA:
            verdict, reason, text = (Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED,
                                     f"the standard start often fails but no warm start shows "
                                     f"a solution: {counts}")
        else:
            verdict, reason, text = (Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED,
                                     f"undecided at {n} seeds: {counts}")
        at_start = [float(r.metric("acc")[0]) for r in warm if not r.diverged]
        warmup_acc = [float(r.final["warm_start_acc"][0]) for r in warm
                      if "warm_start_acc" in r.final]
        return Assessment(
            verdict=verdict, reason=reason, p_value=float(p_often),
            theory=f"failure rate >= {OFTEN}, a solution exists",
            empirical=Measurement(failures / n, ci=binomial_ci(failures, n), confidence=0.95,
                                  quantity="failure rate of the standard start",
                                  extras={"warm_successes": k_warm, "warm_seeds": len(warm),
                                          "warm_acc_at_step0": (sum(at_start) / len(at_start)
                                                                if at_start else None),
                                          "warmup_final_acc": (sum(warmup_acc) / len(warmup_acc)
                                                               if warmup_acc else None)}),
            statistic=(f"permutations, {params['cell'].upper()} ({scale_text(params)}); warm "
                       f"start: {params['warm_steps']} steps on subsets of {params['warm_L']} "
                       f"of {params['L']} tokens first, then the same budget"),
            tolerance=Tolerance("the failure rates of H0 and H1, fixed before any decision run",
                                {"rare_failure": RARE, "often_failure": OFTEN, "alpha": ALPHA,
                                 "beta": BETA}),
            explanation=text[:1].upper() + text[1:], n_seeds=n + len(warm),
            details={"standard_failures": failures, "warm_successes": k_warm})

    def figures(self, params: dict[str, Any], results: GroupedResults,
                assessment: Assessment) -> dict[str, Figure]:
        results = self.results_for(params, results)
        return {"curves": curves_figure(
            {"standard start": results["standard"],
             "warm start (subsets first)": results["warm"]},
            ("acc", "attn_acc_best_offset"), "permutations: standard against warm start")}
