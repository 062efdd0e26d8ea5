"""``musat.target_appears_at_bound``: Theorem 1 read on trained models through a linear lens, a
derived prediction (the lens, its cells and thresholds are this project's reconstruction), of
the test a reviewer of the paper asked for (spec §2.1, §7: "testing whether the target
embedding truly appears in the residual stream only when t >= log_3(2D)").

The residual stream of the query (the position that answers) is read after every layer with
the linear lens of :mod:`empirics.probes.residual_lens` (an affine map to the final stream, fitted
on half of the evaluation examples, decoded by the model's own read-out on the other half). The
theorem is a lower bound: before layer min_layers(D) the answer cannot be in the stream, so the
lens must read it no better than a model that knows nothing of the query's chain. It says
nothing about *when* after the bound the answer appears; the first layer at which the lens
reads it (accuracy >= 0.9) is reported beside the paper's bound and the refined one (a separate
query token needs 3^t >= 4D + 1, docs/derivations.md#information-flow-game-and-refined-bound).

Only layers from 2 on are tested: after one layer the query can have read only the positions
that hold its own symbol, whose streams still hold nothing but that symbol, so no mechanism can
put the answer there (D >= 2) and layer 1 would confirm by construction. The first D with a
layer 2 below the bound is D = 5 (min_layers = 3): the full profile's control cell (D = 5, 4
layers). A seed counts only where the lens can read, at the tested layer, the roots of some
statement tokens that fewer layers cannot resolve (:func:`reads_statements`, at >= 0.9): a lens
blind there would read the answer as absent whatever the stream holds. That check reads the
statement tokens' map; the tested reading is the query's own map, fitted on far fewer rows (one
per example), so the query's lens must also read the answer (>= 0.9) after some layer from the
bound on and before the last (where the lens is the model itself): fitted the same way one
layer later, it can read an answer that is there. A seed that fails either check is left out
of the confirmation and named (it can still refute: a reading above 1/K needs no
sensitivity); 2 seeds that pass are needed. And the lens must not read the answer above
1/K after layers 0 and 1, where nothing can hold it: a reading there is a leak, not evidence.
The checks' history: docs/methodology.md.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.common import LEARNED, RECONSTRUCTION, SEEDS
from attnverify.compare.claims.musat.lens_common import (
    ControlCellLensClaim,
    binomial_sides,
    learned_with_lens,
)
from attnverify.compare.claims.musat.reach import composed_reach
from attnverify.compare.claims.musat.runs import RetrievalCell, cell_shape
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.space import Dimension
from attnverify.compare.stats import bonferroni_min
from attnverify.empirics import RunResult

ALPHA = 0.025
FIRST_TESTED_LAYER = 2
"""Layer 1 cannot hold the answer under any mechanism (module docstring)."""
LENS_PROTOCOL = Protocol(
    endpoint=("the lens accuracy of the query's answer after each layer l with "
              "2 <= l < min_layers(D), in every seed of the 'control' cell that learned the "
              "query (final query accuracy >= 0.9)"),
    unit=("per (seed, layer): the lens's correct answers on the held-out half of the "
          "evaluation examples (binomial, one query per example)"),
    h0="after some tested layer, the lens reads the answer above 1/K",
    h1=("after every tested layer, in every learned seed whose lens can be shown to read, it "
        "reads it below 1/K"),
    test=("exact one-sided binomial test per (seed, layer) against 1/K (the accuracy of a "
          "model that knows the K roots but not which chain is asked); an intersection-union "
          "test (the largest p-value) to confirm, the smallest p-value the other way with a "
          "Bonferroni correction over the (seed, layer) pairs to refute"),
    confirm=("every (seed, layer) p-value (accuracy < 1/K) < 0.025 over the learned seeds "
             "whose lens can be shown to read (the sensitivity preconditions), with 2 or more "
             "such seeds; the others are left out and named, and a left-out seed that reads "
             "the answer at >= 1/K at a tested layer blocks the confirmation"),
    refute="some (seed, layer) reads the answer above 1/K at p < 0.025 / (number of pairs)",
    alpha=ALPHA, beta=ALPHA,
    readout=("the lens accuracies recorded at the end of training (``final/lens_query``, "
             "``lens_first``, ``lens_second``), on the 512 held-out evaluation examples at full"),
    frozen="2026-11-27",
    error_rates=("confirming: at most 0.025 when some readable learned seed's accuracy at a "
                 "tested layer is >= 1/K (intersection-union); a left-out seed is not tested, "
                 "but one read at >= 1/K blocks a confirmation; refuting: at most 0.025 over "
                 "all pairs of learned seeds when every accuracy is <= 1/K (Bonferroni). The "
                 "only randomness the tests see is the evaluation sample, the same sample that "
                 "selects the seeds: the rates are about these trained models, and the "
                 "fraction of seeds that learned is reported beside them"),
    precondition=("min_layers(D) >= 3 (a layer from 2 on below the bound: D >= 5), at least 2 "
                  "seeds that learned the query (a model that does not answer says nothing "
                  "about where its answer appears), and 2 of them in which the lens reads at "
                  ">= 0.9, after every tested layer l, the roots of some statement tokens that "
                  "no mechanism resolves with l - 1 layers (at l = 2: first tokens of depth "
                  ">= 2 or second tokens of depth >= 1), and the query's lens reads the answer "
                  "at >= 0.9 after some layer from the bound on before the last, else a lens "
                  "blind to what the layers composed would confirm; the lens reads the answer "
                  "after layers 0 and 1, where nothing can hold it, not above 1/K (Bonferroni "
                  "over those pairs at 0.025), else the pipeline leaks"),
    secondary=("the first layer at which the lens reads the query's answer (>= 0.9), per seed, "
               "beside the paper's and the refined bound",
               "the lens by depth on the statement tokens (the figure)"),
    seeds=SEEDS,
    weaknesses=("a linear lens (least squares onto the final stream shrinks toward the mean "
                "stream): an answer encoded non-linearly, or only partly, reads as absent, "
                "which favours confirming; the sensitivity preconditions guard against a lens "
                "blind at the tested layer and a query map that reads nothing, not against one "
                "blind to the answer at the tested layer alone",
                "the error rates are about these trained models: a single learned seed that "
                "reads the answer early refutes",
                "quick trains no cell with a layer from 2 on below the bound (D = 2 with 4 "
                "layers): not testable there",
                "the seeds are selected on the query accuracy of the same evaluation batch the "
                "lens is scored on",
                "the lens was built on development seed 0 of the quick cell (it read the "
                "query at 0.02 after layer 1 and 1.0 from layer 3, D = 2); the rule changed "
                "before any decision run (docs/methodology.md)"))


class TargetAppearsAtBound(ControlCellLensClaim):
    """``musat.target_appears_at_bound``: in a trained model, the answer appears in the
    query's residual stream only from layer min_layers(D) on (Theorem 1, under Assumption 1).

    Protocol (``LENS_PROTOCOL``): per seed that learned the query and per layer from 2 up to
    the bound (exclusive), an exact binomial test of the lens's accuracy against 1/K; every
    test significant below confirms (intersection-union), any test significant above after
    Bonferroni refutes. It reads the control cell of ``musat.shallow_models_fail`` (D = 5 with
    4 layers at full), whose runs record the lens at their end like every retrieval run."""

    id = "musat.target_appears_at_bound"
    kind = ClaimKind.DERIVED
    protocol = LENS_PROTOCOL
    code_version = 4
    statement = ("In trained models the answer appears in the query's residual stream only "
                 "from the layer the bound predicts on: a linear lens reads it below 1/K after "
                 "every layer from 2 up to min_layers(D) (Theorem 1 through a linear lens, as a "
                 "reviewer of the paper asked; after one layer no mechanism can hold it).")
    untestable_theory = "the answer absent from the query's stream below the bound"
    space: ClassVar[dict[str, Dimension]] = {
        # the first D with a layer 2 below the bound first; the refined bound + 1 layers; D
        # up to 11, the most 4 chains and 8 distractor statements fit in 64 symbols
        "D": Dimension("chain length D (hops), with refined min_layers(D) + 1 layers and 8 "
                       "distractors", low=5, high=11),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        D = point["D"]
        return {"control": RetrievalCell(D, theory.musat.min_layers_refined_value(D) + 1, 8)}

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        if not params.get("control"):
            return self._not_testable(
                f"no cell here with a layer from {FIRST_TESTED_LAYER} on below the bound (the "
                f"learning cell is D = {params['deep'][0]}, where min_layers = "
                f"{theory.musat.min_layers_value(params['deep'][0])}; after one layer no "
                "mechanism can hold the answer); full trains D = 5 with 4 layers")
        runs = self.control_runs(params, results)
        D, layers, _ = cell_shape(params, "control")
        bound = theory.musat.min_layers_value(D)
        refined = theory.musat.min_layers_refined_value(D)
        limit = 1 / params["K"]
        n_test = params["eval_size"] - params["eval_size"] // 2
        learned = learned_with_lens(runs)
        tested = list(range(FIRST_TESTED_LAYER, min(bound, layers + 1)))
        early = [binomial_sides(acc, n_test, limit)[1] for r in learned
                 for layer in range(FIRST_TESTED_LAYER)
                 if np.isfinite(acc := float(r.final["lens_query"][layer]))]
        # every (seed, layer) pair counts in the factor, a pair without a reading too
        p_leak = bonferroni_min(early, len(learned) * FIRST_TESTED_LAYER)
        cells = [(r.spec.seed, layer, float(r.final["lens_query"][layer]))
                 for r in learned for layer in tested]
        tests = [(seed, layer, acc, *binomial_sides(acc, n_test, limit))
                 for seed, layer, acc in cells if np.isfinite(acc)]
        p_refute = bonferroni_min((t[4] for t in tests), len(cells))
        # the seeds whose lens can be shown to read (the sensitivity preconditions)
        kept = {r.spec.seed for r in learned if reads_query(r, bound, layers)
                and all(reads_statements(r, layer) for layer in tested)}
        blind = sorted({r.spec.seed for r in learned} - kept)
        confirm_tests = [t for t in tests if t[0] in kept]
        first = {r.spec.seed: _first_reading(r.final["lens_query"]) for r in learned}
        why = (f"D = {D}: paper bound {bound} layers, refined (separate query) {refined}; "
               f"{len(learned)} of {len(runs)} seeds learned the query; lens accuracy of "
               f"the answer at the tested layers: " + (", ".join(
                   f"seed {s} layer {layer}: {a:.3f}" for s, layer, a in cells) or "none")
               + f" (limit 1/K = {limit:.2f}); first layer reading the answer (>= {LEARNED}): "
               + (", ".join(f"seed {s}: {'-' if f is None else f}" for s, f in first.items())
                  or "none"))
        if blind:
            why += (f". Left out of the confirmation, their lens not shown to read: seed(s) "
                    f"{blind} (at a tested layer no statement token that fewer layers cannot "
                    f"resolve reads at >= {LEARNED}, or the query's lens reads the answer at "
                    f">= {LEARNED} after no layer from the bound ({bound}) on before the last)")
        if not tested:
            return self._not_testable(f"min_layers({D}) = {bound} leaves no layer from "
                                 f"{FIRST_TESTED_LAYER} on below the bound. {why}")
        if p_leak < ALPHA:
            return self._not_testable(
                f"the lens reads the answer above 1/K after layer 0 or 1, where nothing can "
                f"hold it (Bonferroni p = {p_leak:.3g}): the pipeline leaks. {why}",
                len(learned))
        if len(learned) >= 1 and p_refute < ALPHA:
            verdict, reason, p = Verdict.REFUTED, Reason.DECIDED, p_refute
            why += (f". The lens reads the answer above 1/K below the bound in these trained "
                    f"models (Bonferroni p = {p_refute:.3g})")
        elif len(learned) < 2:
            return self._not_testable(f"{len(learned)} seed(s) learned the query (2 needed). {why}")
        elif high := sorted({seed for seed, _, acc in cells
                             if seed not in kept and acc >= limit}):
            verdict, reason, p = Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED, None
            why += (f". Left-out seed(s) {high} read the answer at >= 1/K at a tested layer "
                    f"(not significantly enough to refute): no confirmation")
        elif len(kept) < 2 or len(confirm_tests) < len(kept) * len(tested):
            return self._not_testable(
                f"{len(kept)} learned seed(s) whose lens can be shown to read, with a "
                f"reading at every tested layer (2 needed): reading the answer as absent "
                f"elsewhere says nothing. {why}", len(learned))
        else:
            p = max(t[3] for t in confirm_tests)
            if p < ALPHA:
                verdict, reason = Verdict.CONFIRMED, Reason.DECIDED
                why += (f". Every test below the limit in these {len(kept)} trained models: "
                        f"largest p = {p:.3g} < {ALPHA}")
            else:
                verdict, reason = Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED
                why += (f". Neither side decides: largest p below = {p:.3g}, "
                        f"Bonferroni p above = {p_refute:.3g}")
        worst = max((a for _, _, a in cells), default=None)
        return Assessment(
            verdict=verdict, reason=reason, p_value=p,
            theory=(f"lens accuracy < {limit:.2f} after layers {FIRST_TESTED_LAYER}.."
                    f"{bound - 1} (bound {bound})"),
            empirical=Measurement(worst, quantity="largest lens accuracy below the bound",
                                  at=self.describe(params, "control", True),
                                  extras={"first_layer": {str(s): f for s, f in first.items()},
                                          "refined_bound": refined,
                                          "learned_fraction": len(learned) / len(runs)
                                          if runs else None}),
            statistic=(f"linear lens on the query's residual stream, {n_test} held-out "
                       f"examples per seed. {RECONSTRUCTION}"),
            tolerance=Tolerance("1/K, a model that knows the roots but not which chain is "
                                "asked; exact binomial tests, intersection-union / Bonferroni",
                                {"limit": limit, "alpha": ALPHA}),
            explanation=why, n_seeds=len(learned),
            details={"tests": [{"seed": s, "layer": layer, "accuracy": a, "p_below": pb,
                                "p_above": pa} for s, layer, a, pb, pa in tests],
                     "left_out": blind})

def reads_statements(result: RunResult, layer: int) -> bool:
    """Whether the lens reads, after ``layer``, the roots of some statement tokens that no
    mechanism resolves with fewer layers (first tokens deeper than ``composed_reach(layer - 1,
    False)``, second tokens deeper than ``composed_reach(layer - 1, True)``) at >= 0.9: it sees
    what the layers up to this one composed, not only a partner read by one attention hop
    (a first token of depth 1 reads its root from its own statement)."""
    for slot in ("first", "second"):
        table = result.final.get(f"lens_{slot}")
        if table is None:
            continue
        row = table[layer, composed_reach(layer - 1, slot == "second") + 1:]
        if row.size and np.nanmax(row) >= LEARNED:
            return True
    return False


def reads_query(result: RunResult, bound: int, layers: int) -> bool:
    """Whether the query's lens reads the answer at >= 0.9 after some layer from ``bound`` on
    and before the last (after the last the lens is the model itself): the query's map, fitted
    on one row per example, can read an answer that is there."""
    row = np.asarray(result.final["lens_query"])[bound:layers]
    return bool(row.size) and bool(np.nanmax(row, initial=0.0) >= LEARNED)


def _first_reading(accuracy: np.ndarray) -> int | None:
    """The first layer whose lens accuracy is >= the learning threshold, or None."""
    hits = np.flatnonzero(np.asarray(accuracy) >= LEARNED)
    return int(hits[0]) if hits.size else None
