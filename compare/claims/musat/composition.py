"""``musat.heads_compose_subchains``: the learned circuit composes sub-chains (each layer joins
what neighbouring positions already know, so the reach roughly triples per layer) rather than
advancing one link per layer (spec §2.2, §2.4: the interval game behind Theorem 1; the upper
construction is a reconstruction [R]).

Reach, read with the linear lens (:mod:`empirics.residual_lens`) on the statement tokens: in
the default statement order ``(s_i, s_{i-1})`` the first token of link i holds a symbol of
depth i, the second one of depth i - 1. On the chain's path of 2D nodes (root first) the first
token of depth k sits at node 2k - 1, the second at node 2k. Derived here, not in the paper:

* **one link per layer** (each layer reads one more statement): a first token of depth k can
  know its root after k layers, a second token after k + 1 (it must first find the statement
  that binds its symbol, whose own second token is read in the layer before);
* **composition** (the interval game: each layer joins the intervals of the positions it reads,
  so an interval of n nodes centred on a position grows to 3n): after l layers a position at
  node p knows the root when p <= (3^l - 1) / 2, i.e. first tokens up to depth (3^l + 1) / 4
  and second tokens up to (3^l - 1) / 4.

The cells where the two differ are the test: after layer l, a token of a depth that one link
per layer cannot have resolved yet (a first token of depth k > l, a second of depth k >= l),
within the game's reach. The earliest is a second token of depth 2 after layer 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.bounds import RECONSTRUCTION
from attnverify.compare.claims.musat.lens import (
    ControlCellLensClaim,
    binomial_sides,
    learned_with_lens,
)
from attnverify.compare.claims.musat.protocols import LEARNED, SEEDS
from attnverify.compare.claims.musat.reach import composed_reach, one_link_reach
from attnverify.compare.claims.musat.runs import cell_shape
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult

if TYPE_CHECKING:
    pass

ALPHA = 0.025
COMPOSE_PROTOCOL = Protocol(
    endpoint=("after each layer l below the last, the lens accuracy of the statement tokens "
              "one link per layer cannot have resolved yet but composition can (first tokens "
              "of depth l < k <= (3^l + 1)/4, second tokens of depth l <= k <= (3^l - 1)/4), "
              "in every seed of the 'control' cell that learned the query"),
    unit=("per (seed, slot, depth, layer): the lens's accuracy over the K chains' tokens of "
          "that slot and depth in the held-out half of the evaluation examples, tested as a "
          "binomial on the number of examples (the K tokens of one example are not "
          "independent, so they count once: conservative)"),
    h0=("some learned seed advances one link per layer before its last layer: the lens reads "
        "the cells one link per layer reaches, and none of the others above 1/K"),
    h1="every learned seed reads some tested cell above 1/K (it composes sub-chains early)",
    test=("one-sided binomial tests against 1/K (knowing the roots, not the chain); per seed "
          "the smallest p-value "
          "above the limit times its number of cells (Bonferroni), and to confirm the largest "
          "of those over seeds (intersection-union); to refute, a seed whose every cell is "
          "below the limit (its largest p-value) at 0.025 over the number of seeds"),
    confirm="every learned seed composes at Bonferroni p < 0.025, with 2 or more seeds",
    refute=("some learned seed whose lens reads the deepest first token one link per layer "
            "reaches (>= 0.9) after every tested layer reads every tested cell below 1/K at "
            "p < 0.025 / (number of seeds): it advances one link per layer until its last "
            "layer"),
    alpha=ALPHA, beta=ALPHA,
    readout=("the lens accuracies by statement slot recorded at the end of training "
             "(``final/lens_first``, ``final/lens_second``)"),
    frozen="2026-11-26",
    error_rates=("confirming: at most 0.025 when some learned seed advances one link per layer "
                 "(intersection-union over seeds, Bonferroni within a seed); refuting: at "
                 "most 0.025 over the seeds. The only randomness the tests see is the "
                 "evaluation sample: the rates are about these trained models"),
    precondition=("a cell with D + 1 > layers (one link per layer cannot answer the query with "
                  "the trained depth: the query reads its statement one layer after that "
                  "statement's first token knows the root), a tested cell below the last "
                  "layer, and at least 2 seeds that learned the query"),
    secondary=("each seed's reach per layer (the deepest depth read at >= 0.9, per slot)",
               "the lens table of the first learned seed (figure)"),
    seeds=SEEDS,
    weaknesses=("the one-link and composition reaches are derived here from the interval game, "
                "not stated in the paper",
                "a model that answers D >= layers must compose somewhere (one link per layer "
                "needs D + 1 layers), so the claim's content is where: before the last layer",
                "a linear lens can miss a non-linearly encoded root, which favours refuting; a "
                "refuting seed must show the lens reading the one-link cells at the same "
                "layers",
                "quick trains no cell where one link per layer cannot answer (D = 2 with 4 "
                "layers): not testable there; full's control cell is D = 5 with 4 layers"))


def separating_cells(D: int, layers: int) -> list[tuple[str, int, int]]:
    """(slot, depth, layer) of every cell where composition and one link per layer differ,
    after the layers before the last; second tokens have depths 0..D - 1."""
    cells = []
    for layer in range(1, layers):
        for slot, top in (("first", D), ("second", D - 1)):
            second = slot == "second"
            low = one_link_reach(layer, second) + 1
            cells += [(slot, k, layer)
                      for k in range(low, min(top, composed_reach(layer, second)) + 1)]
    return cells


def at_one_link_pace(result: RunResult, D: int, layers: int) -> bool:
    """Whether the lens reads, after every layer before the last, the deepest first token one
    link per layer reaches (>= 0.9): the lens is not blind where the claim looks."""
    first = result.final["lens_first"]
    return all(first[layer, min(one_link_reach(layer, False), D)] >= LEARNED
               for layer in range(1, layers))


class HeadsComposeSubchains(ControlCellLensClaim):
    """``musat.heads_compose_subchains`` (module docstring; protocol ``COMPOSE_PROTOCOL``)."""

    id = "musat.heads_compose_subchains"
    kind = ClaimKind.PAPER
    protocol = COMPOSE_PROTOCOL
    code_version = 1
    statement = ("The learned circuit composes sub-chains rather than advancing one link per "
                 "layer: where one link per layer could not answer with the trained depth, the "
                 "statement tokens' roots appear in the residual stream earlier than one link "
                 "per layer allows (spec §2.2, §2.4; derived reaches).")
    untestable_theory = "reads above 1/K where one link per layer cannot"
    space: ClassVar[dict[str, Dimension]] = {
        # the smallest chain first: D = 4 with 3 layers has one cell (a second token of depth
        # 2 after layer 2); one layer fewer than D, so one link per layer cannot answer
        "D": Dimension("chain length D (hops), with D - 1 layers and 4 distractors", low=4,
                       high=6),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"control": (point["D"], point["D"] - 1, 4)}

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        if not params.get("control"):
            return self._not_testable(
                "no cell here where one link per layer cannot answer with the trained depth "
                f"(the learning cell is D = {params['deep'][0]} with {params['deep'][1]} "
                "layers); full trains D = 5 with 4 layers", 0)
        D, layers, _ = cell_shape(params, "control")
        cells = separating_cells(D, layers)
        learned = [r for r in learned_with_lens(results) if "lens_second" in r.final]
        if layers >= D + 1 or not cells:
            return self._not_testable(
                f"at D = {D} with {layers} layers one link per layer can answer (it needs "
                f"D + 1 = {D + 1}), or no layer below the last separates the two", len(learned))
        if len(learned) < 2:
            return self._not_testable(f"{len(learned)} seed(s) of {len(results)} learned the "
                                      f"query at D = {D} (2 needed)", len(learned))
        limit = 1 / params["K"]
        n_test = params["eval_size"] - params["eval_size"] // 2
        per_seed = []
        for r in learned:
            accs = [a for slot, k, layer in cells
                    if np.isfinite(a := float(r.final[f"lens_{slot}"][layer, k]))]
            if not accs:
                continue
            below, above = zip(*(binomial_sides(a, n_test, limit) for a in accs),
                               strict=True)
            per_seed.append((r.spec.seed, max(accs), min(1.0, min(above) * len(accs)),
                             max(below) if at_one_link_pace(r, D, layers) else 1.0))
        if len(per_seed) < len(learned):
            return self._not_testable(f"{len(learned) - len(per_seed)} learned seed(s) without "
                                      "lens readings in the tested cells", len(learned))
        p_confirm = max(p for _, _, p, _ in per_seed)
        p_one_link = min(p for _, _, _, p in per_seed) * len(per_seed)
        why = (f"D = {D}, {layers} layers: {len(learned)} of {len(results)} seeds learned the "
               f"query; cells tested (slot, depth, after layer): "
               + ", ".join(f"{s} {k} @{layer}" for s, k, layer in cells)
               + "; per seed the best of them: "
               + ", ".join(f"seed {s}: {a:.2f} (p = {p:.2g})" for s, a, p, _ in per_seed)
               + f" (limit {limit:.2f})")
        if p_confirm < ALPHA:
            verdict, reason = Verdict.CONFIRMED, Reason.DECIDED
            why += f". Every learned seed composes: largest p = {p_confirm:.3g}"
        elif p_one_link < ALPHA:
            verdict, reason = Verdict.REFUTED, Reason.DECIDED
            why += (f". A seed advances one link per layer until its last layer: its lens reads "
                    f"the one-link cells, and every tested cell below the limit (p = "
                    f"{p_one_link:.3g} over the seeds)")
        else:
            verdict, reason = Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED
            why += f". Neither side decides (largest p to confirm {p_confirm:.3g})"
        return Assessment(
            verdict=verdict, reason=reason, p_value=p_confirm,
            theory=f"reads above 1/K = {limit:.2f} where one link per layer cannot",
            empirical=Measurement(min(a for _, a, _, _ in per_seed),
                                  quantity="the weakest seed's best lens accuracy in the cells",
                                  at=self.describe(params, "control", True)),
            statistic=(f"linear lens by statement slot, {n_test} held-out examples per seed. "
                       f"{RECONSTRUCTION}"),
            tolerance=Tolerance("1/K, a model that knows the roots but not the chain; binomial "
                                "tests on the example count, Bonferroni within a seed, "
                                "intersection-union over seeds", {"limit": limit, "alpha": ALPHA}),
            explanation=why, n_seeds=len(learned),
            details={"cells": cells, "seeds": [{"seed": s, "best": a, "p_compose": pc,
                                                "p_one_link": po}
                                               for s, a, pc, po in per_seed]})
