"""``musat.target_appears_at_bound``: the test of Theorem 1 on trained models that a reviewer
asked for (spec §2.1, §7: "testing whether the target embedding truly appears in the residual
stream only when t >= log_3(2D)").

The residual stream of the query (the position that answers) is read after every layer with
the linear lens of :mod:`empirics.residual_lens` (an affine map to the final stream, fitted on
half of the evaluation examples, decoded by the model's own read-out on the other half). The
theorem is a lower bound: before layer min_layers(D) the answer cannot be in the stream, so the
lens must read it no better than a model that knows nothing of the query's chain. It says
nothing about *when* after the bound the answer appears; the first layer at which the lens
reads it (accuracy >= 0.9) is reported beside the paper's bound and the refined one (a separate
query token needs 3^t >= 4D + 1, docs/derivations.md#information-flow-game-and-refined-bound).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from attnverify import theory
from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.bounds import RECONSTRUCTION
from attnverify.compare.claims.musat.figures import lens_figure
from attnverify.compare.claims.musat.protocols import CHANCE_MARGIN, LEARNED, SEEDS
from attnverify.compare.claims.musat.retrieval_claim import RetrievalClaim
from attnverify.compare.claims.musat.runs import final_query
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.empirics import RunResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ALPHA = 0.025
LENS_PROTOCOL = Protocol(
    endpoint=("the lens accuracy of the query's answer after each layer l with "
              "1 <= l < min_layers(D), in every seed of the 'deep' cell that learned the query "
              "(final query accuracy >= 0.9)"),
    unit=("per (seed, layer): the lens's correct answers on the second half of the evaluation "
          "examples (binomial); seeds that did not learn the query are reported, not used"),
    h0="after some layer below the bound, the lens reads the answer above chance + 0.1",
    h1="after every layer below the bound, in every seed that learned, it reads at most that",
    test=("exact one-sided binomial test per (seed, layer) against 1/K + 0.1; an "
          "intersection-union test (the largest p-value) to confirm, the smallest p-value the "
          "other way with a Bonferroni correction over the (seed, layer) pairs to refute"),
    confirm="every (seed, layer) p-value (accuracy < 1/K + 0.1) < 0.025, with 2 or more seeds",
    refute=("some (seed, layer) reads the answer above 1/K + 0.1 at p < 0.025 / (number of "
            "pairs)"),
    alpha=ALPHA, beta=ALPHA,
    readout=("the lens accuracies recorded at the end of training (``final/lens_query``), on "
             "128, 256 or 512 held-out evaluation examples by profile"),
    frozen="2026-11-26",
    error_rates=("confirming: at most 0.025 when some learned seed's accuracy below the bound "
                 "is >= 1/K + 0.1 (intersection-union); refuting: at most 0.025 over all pairs "
                 "when every accuracy is <= 1/K + 0.1 (Bonferroni)"),
    precondition=("min_layers(D) >= 2 (a layer between the embedding and the bound: after the "
                  "embedding alone the query holds its own symbol only), and at least 2 seeds "
                  "learned the query (a model that does not answer says nothing about where "
                  "its answer appears)"),
    secondary=("the first layer at which the lens reads the query's answer (>= 0.9), per seed, "
               "beside the paper's and the refined bound",
               "the lens by depth on the statement tokens (the figure)"),
    seeds=SEEDS,
    weaknesses=("a linear lens: an answer encoded non-linearly, for a later MLP to decode, "
                "reads as absent, which favours confirming; the lens after the last layer is "
                "the model itself, and the statement tokens' depths show what it reads early",
                "chance + 0.1 is the margin of musat.shallow_models_fail, not calibrated for "
                "the lens",
                "the lens was built on development seed 0 of the quick cell (it read the "
                "query at 0.02 after layer 1 and 1.0 from layer 3, D = 2); the decision seeds "
                "are those of the deep cell"))


class TargetAppearsAtBound(RetrievalClaim):
    """``musat.target_appears_at_bound``: in a trained model, the answer appears in the
    query's residual stream only from layer min_layers(D) on (Theorem 1, under Assumption 1).

    Protocol (``LENS_PROTOCOL``): per seed that learned the query and per layer strictly
    between the embedding and the bound, an exact binomial test of the lens's accuracy against
    1/K + 0.1; every test significant below confirms (intersection-union), any test
    significant above after Bonferroni refutes. The deep cell's runs are shared with the other
    retrieval claims (the lens is recorded at the end of every run)."""

    id = "musat.target_appears_at_bound"
    kind = ClaimKind.PAPER
    protocol = LENS_PROTOCOL
    code_version = 1
    statement = ("In trained models the answer appears in the query's residual stream only "
                 "from the layer the bound predicts on: a linear lens reads it near chance "
                 "after every layer below min_layers(D) (Theorem 1; the test a reviewer asked "
                 "for).")
    cells = (("deep", True),)

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        D, layers = params["deep"][:2]
        bound = theory.musat.min_layers_value(D)
        refined = theory.musat.min_layers_refined_value(D)
        limit = 1 / params["K"] + CHANCE_MARGIN
        n_test = params["eval_size"] - params["eval_size"] // 2
        learned = learned_with_lens(results)
        below = list(range(1, min(bound, layers + 1)))
        cells = [(r.spec.seed, layer, float(r.final["lens_query"][layer]))
                 for r in learned for layer in below]
        tests = [(seed, layer, acc, *binomial_sides(acc, n_test, limit))
                 for seed, layer, acc in cells]
        first = {r.spec.seed: _first_reading(r.final["lens_query"]) for r in learned}
        why = (f"D = {D}: paper bound {bound} layers, refined (separate query) {refined}; "
               f"{len(learned)} of {len(results)} seeds learned the query; lens accuracy "
               f"below the bound: " + (", ".join(f"seed {s} layer {layer}: {a:.3f}"
                                                 for s, layer, a in cells) or "none")
               + f" (limit {limit:.2f}); first layer reading the answer (>= {LEARNED}): "
               + ", ".join(f"seed {s}: {'-' if f is None else f}" for s, f in first.items()))
        if bound < 2 or layers < 2:
            verdict, reason, p = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE, None
            why = (f"not testable here: min_layers({D}) = {bound} leaves no layer between the "
                   f"embedding and the bound. {why}")
        elif len(learned) < 2:
            verdict, reason, p = Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE, None
            why = (f"not testable here: {len(learned)} seed(s) learned the query (2 needed). "
                   f"{why}")
        else:
            p_confirm = max(t[3] for t in tests)
            p_refute = min(t[4] for t in tests) * len(tests)
            if p_refute < ALPHA:
                verdict, reason, p = Verdict.REFUTED, Reason.DECIDED, p_confirm
                why += (f". The lens reads the answer above the limit below the bound "
                        f"(Bonferroni p = {p_refute:.3g})")
            elif p_confirm < ALPHA:
                verdict, reason, p = Verdict.CONFIRMED, Reason.DECIDED, p_confirm
                why += (f". Every test below the limit: largest p = {p_confirm:.3g} < "
                        f"{ALPHA}")
            else:
                verdict, reason, p = Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED, p_confirm
                why += (f". Neither side decides: largest p below = {p_confirm:.3g}, "
                        f"Bonferroni p above = {min(p_refute, 1.0):.3g}")
        worst = max((a for _, _, a in cells), default=None)
        return Assessment(
            verdict=verdict, reason=reason, p_value=p,
            theory=f"lens accuracy <= {limit:.2f} after layers 1..{bound - 1} (bound {bound})",
            empirical=Measurement(worst, quantity="largest lens accuracy below the bound",
                                  at=self.describe(params, "deep", True),
                                  extras={"first_layer": {str(s): f for s, f in first.items()},
                                          "refined_bound": refined}),
            statistic=(f"linear lens on the query's residual stream, {n_test} held-out "
                       f"examples per seed. {RECONSTRUCTION}"),
            tolerance=Tolerance("chance 1/K plus the spec's delta = 0.1; exact binomial "
                                "tests, intersection-union / Bonferroni",
                                {"near_chance": limit, "alpha": ALPHA}),
            explanation=why, n_seeds=len(learned),
            details={"tests": [{"seed": s, "layer": layer, "accuracy": a, "p_below": pb,
                                "p_above": pa} for s, layer, a, pb, pa in tests]})

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        learned = learned_with_lens(results)
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


def _first_reading(accuracy: np.ndarray) -> int | None:
    """The first layer whose lens accuracy is >= the learning threshold, or None."""
    hits = np.flatnonzero(np.asarray(accuracy) >= LEARNED)
    return int(hits[0]) if hits.size else None
