"""``musat.heads_compose_subchains``: the learned circuit composes sub-chains (each layer joins
what neighbouring positions already know, so the reach roughly triples per layer) rather than
advancing one link per layer (spec §2.2, §2.4: the interval game behind Theorem 1; the upper
construction is a reconstruction [R]).

Reach, read with the linear lens (:mod:`empirics.probes.residual_lens`) on the statement tokens, is
compared with three derived mechanisms (:mod:`.reach`, derived here, not in the paper): one
link per layer (node 2l - 1 after l layers), pointer doubling (node 2^l - 1) and the interval
game ((3^l - 1) / 2). The claim's content is the base of the growth, so the primary cells are
those after a layer l below the last that the game reaches and doubling does not: composition
that only doubles is not the tripling the bound rests on. At D = 5 with 4 layers: a second
token of depth 2 after layer 2, a first token of depth 5 and a second of depth 4 after layer
3. A seed that reads none of them while its lens reads the one-link cells refutes: its reach
grows no faster than doubling's. The cells doubling reaches beyond one link per layer tell
the two slower mechanisms apart (secondary).

Composition is not forced in the cell tested: a query that follows pointers itself, each layer
reading the statement token of the symbol it holds, gains after layer l + 1 the l links that
token knows, so through statements that advance one link per layer it answers D <= 6 with 4
layers (derived here). A refutation therefore says the trained model did not triple on its
statement tokens, not that it could not.

The rule's history: docs/methodology.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from attnverify.compare.claim import Assessment, ClaimKind, Verdict
from attnverify.compare.claims.musat.common import LEARNED, RECONSTRUCTION, SEEDS
from attnverify.compare.claims.musat.lens_common import (
    ControlCellLensClaim,
    binomial_sides,
    learned_with_lens,
)
from attnverify.compare.claims.musat.reach import composed_reach, doubling_reach, one_link_reach
from attnverify.compare.claims.musat.runs import RetrievalCell, cell_shape
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Protocol, Reason
from attnverify.compare.space import Dimension
from attnverify.compare.stats import bonferroni_min
from attnverify.empirics import RunResult

ALPHA = 0.025
COMPOSE_PROTOCOL = Protocol(
    endpoint=("after each layer l below the last, the lens accuracy of the statement tokens "
              "the interval game reaches and pointer doubling does not (first tokens of depth "
              "2^(l-1) < k <= (3^l + 1)/4, second tokens of depth 2^(l-1) - 1 < k <= "
              "(3^l - 1)/4), in every seed of the 'control' cell that learned the query"),
    unit=("per (seed, slot, depth, layer): the lens's accuracy over the K chains' tokens of "
          "that slot and depth in the held-out half of the evaluation examples, tested as a "
          "binomial on the number of examples (the K tokens of one example are not "
          "independent, so they count once: conservative)"),
    h0=("some learned seed reads none of the cells beyond pointer doubling above 1/K (its "
        "statement tokens compose no faster than doubling, or advance one link per layer)"),
    h1=("every learned seed reads some cell beyond pointer doubling above 1/K (its reach "
        "grows faster than doubling, as the interval game's does)"),
    test=("one-sided binomial tests against 1/K (knowing the roots, not the chain); per seed "
          "the smallest p-value above the limit over the cells beyond doubling times their "
          "number (Bonferroni), and to confirm the largest of those over seeds "
          "(intersection-union); to refute, a seed whose every cell beyond doubling is below "
          "the limit (its largest p-value) at 0.025 over the number of seeds"),
    confirm=("every learned seed reads a cell beyond doubling above 1/K at Bonferroni "
             "p < 0.025, with 2 or more seeds"),
    refute=("some learned seed whose lens reads the deepest first token one link per layer "
            "reaches (>= 0.9) after every layer before the last reads every cell beyond "
            "doubling (all of them with a reading) below 1/K at p < 0.025 / (number of seeds): "
            "no root beyond doubling's reach is known in it (the explanation says whether it "
            "doubles or advances one link per layer)"),
    alpha=ALPHA, beta=ALPHA,
    readout=("the lens accuracies by statement slot recorded at the end of training "
             "(``final/lens_first``, ``final/lens_second``)"),
    frozen="2026-11-27",
    error_rates=("confirming: at most 0.025 when some learned seed reads no cell beyond "
                 "doubling above 1/K (intersection-union over seeds, Bonferroni within a "
                 "seed); refuting: at most 0.025 over the seeds. The only randomness the tests "
                 "see is the evaluation sample: the rates are about these trained models"),
    precondition=("a cell below the last layer that the interval game reaches and pointer "
                  "doubling does not (D >= 3 with 3 or more layers), and at least 2 seeds "
                  "that learned the query"),
    secondary=("each seed's reach per layer (the deepest depth read at >= 0.9, per slot)",
               "the cells doubling reaches beyond one link per layer, per seed (composition "
               "at least as fast as doubling; Bonferroni over every such cell, read or not)",
               "the lens table of the first learned seed (figure)"),
    seeds=SEEDS,
    weaknesses=("the one-link, doubling and game reaches are derived here from the interval "
                "game, not stated in the paper",
                "composition is not forced at D = 5 with 4 layers: a query that follows "
                "pointers through statements that advance one link per layer answers D <= 6 "
                "(derived here), so a refutation says the model did not triple, not that it "
                "could not",
                "a linear lens can miss a non-linearly encoded root, which favours refuting; a "
                "refuting seed must show the lens reading the one-link cells at the same "
                "layers (not the cells it is refuted on)",
                "below 1/K is not nothing: a lens that knows nothing reads about 1/vocab, so a "
                "refuting seed may hold partial information beyond doubling's reach; what it "
                "lacks is the root itself",
                "quick trains no cell with a layer below the last that doubling cannot reach "
                "(D = 2 with 4 layers): not testable there; full's control cell is D = 5 with "
                "4 layers"))

Reach = Callable[[int, bool], int]
"""A derived reach: (layer, second slot) -> the deepest depth resolved (:mod:`.reach`)."""


def cells_beyond(reach: Reach, D: int, layers: int) -> list[tuple[str, int, int]]:
    """(slot, depth, layer) of every cell after a layer before the last that the interval game
    reaches and ``reach`` does not; second tokens have depths 0..D - 1."""
    cells = []
    for layer in range(1, layers):
        for slot, top in (("first", D), ("second", D - 1)):
            second = slot == "second"
            cells += [(slot, k, layer) for k in range(reach(layer, second) + 1,
                                                      min(top, composed_reach(layer, second)) + 1)]
    return cells


def separating_cells(D: int, layers: int) -> list[tuple[str, int, int]]:
    """The cells where composition and one link per layer differ (those doubling also reaches
    tell doubling from one link per layer: secondary)."""
    return cells_beyond(one_link_reach, D, layers)


def tripling_cells(D: int, layers: int) -> list[tuple[str, int, int]]:
    """The cells the interval game reaches and pointer doubling does not (the primary cells)."""
    return cells_beyond(doubling_reach, D, layers)


def doubling_cells(D: int, layers: int) -> list[tuple[str, int, int]]:
    """The cells pointer doubling reaches beyond one link per layer (secondary: they tell
    doubling from one link per layer)."""
    beyond_doubling = set(tripling_cells(D, layers))
    return [c for c in separating_cells(D, layers) if c not in beyond_doubling]


def one_link_misses(result: RunResult, D: int, layers: int) -> list[int]:
    """The layers before the last after which the lens does not read (>= 0.9) the deepest
    first token one link per layer reaches; none: the lens is not blind where the claim
    looks (a refuting seed needs that)."""
    first = result.final["lens_first"]
    return [layer for layer in range(1, layers)
            if not first[layer, min(one_link_reach(layer, False), D)] >= LEARNED]


@dataclass(frozen=True)
class SeedReading:
    """One learned seed's lens in the tested cells: its best accuracy beyond doubling, the
    Bonferroni p-value that it reads one of them above 1/K (``p_compose``), the largest
    p-value that it reads them all below 1/K where its lens reads the one-link cells and has a
    reading in every one of them (else 1: ``p_no_faster``), whether it reads a cell within
    doubling's reach beyond one link per layer above 1/K (Bonferroni), and its reach per layer
    (:func:`reach_per_layer`)."""

    seed: int
    best: float
    p_compose: float
    p_no_faster: float
    doubles: bool
    reach: dict[str, list[int]]


def reach_per_layer(result: RunResult, layers: int) -> dict[str, list[int]]:
    """Per slot, after each layer 1..layers - 1, the deepest depth the lens reads at >= 0.9
    (-1 where it reads none): the secondary 'reach per layer'."""
    out = {}
    for slot in ("first", "second"):
        table = np.nan_to_num(result.final[f"lens_{slot}"], nan=0.0)
        out[slot] = [int(hits[-1]) if (hits := np.flatnonzero(table[layer] >= LEARNED)).size
                     else -1 for layer in range(1, layers)]
    return out


def _cell_tests(result: RunResult, cells: list[tuple[str, int, int]], n: int,
                limit: float) -> list[tuple[float, float, float]]:
    """(accuracy, p below, p above) of each cell the lens has a reading for."""
    accs = [a for slot, k, layer in cells
            if np.isfinite(a := float(result.final[f"lens_{slot}"][layer, k]))]
    return [(a, *binomial_sides(a, n, limit)) for a in accs]


class HeadsComposeSubchains(ControlCellLensClaim):
    """``musat.heads_compose_subchains`` (module docstring; protocol ``COMPOSE_PROTOCOL``)."""

    id = "musat.heads_compose_subchains"
    kind = ClaimKind.DERIVED
    protocol = COMPOSE_PROTOCOL
    code_version = 4
    statement = ("The learned circuit composes sub-chains as the interval game does (reach "
                 "roughly triples per layer) rather than advancing one link per layer: before "
                 "the last layer, the statement tokens' roots appear in the residual stream "
                 "farther down their chains than pointer doubling, let alone one link per "
                 "layer, allows (spec §2.2, §2.4; derived reaches).")
    untestable_theory = "reads above 1/K where pointer doubling cannot"
    space: ClassVar[dict[str, Dimension]] = {
        # the smallest chain first: D = 4 with 3 layers has one primary cell (a second token
        # of depth 2 after layer 2)
        "D": Dimension("chain length D (hops), with D - 1 layers and 4 distractors", low=4,
                       high=6),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        return {"control": RetrievalCell(point["D"], point["D"] - 1, 4)}

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
        if not params.get("control"):
            return self._not_testable(
                "no cell here with a layer below the last that doubling cannot reach (the "
                f"learning cell is D = {params['deep'][0]} with {params['deep'][1]} layers); "
                "full trains D = 5 with 4 layers", 0)
        D, layers, _ = cell_shape(params, "control")
        cells, doubling = tripling_cells(D, layers), doubling_cells(D, layers)
        runs = self.control_runs(params, results)
        learned = [r for r in learned_with_lens(runs) if "lens_second" in r.final]
        if not cells:
            return self._not_testable(
                f"at D = {D} with {layers} layers no layer below the last has a statement "
                "token that the interval game reaches and pointer doubling does not",
                len(learned))
        if len(learned) < 2:
            return self._not_testable(f"{len(learned)} seed(s) of {len(runs)} learned the "
                                      f"query at D = {D} (2 needed)", len(learned))
        limit = 1 / params["K"]
        n_test = params["eval_size"] - params["eval_size"] // 2
        misses = {r.spec.seed: one_link_misses(r, D, layers) for r in learned}
        per_seed = []
        for r in learned:
            tests = _cell_tests(r, cells, n_test, limit)
            if not tests:
                continue
            per_seed.append(SeedReading(
                seed=r.spec.seed, best=max(a for a, _, _ in tests),
                p_compose=bonferroni_min((p for _, _, p in tests), len(cells)),
                p_no_faster=(max(p for _, p, _ in tests)
                             if not misses[r.spec.seed] and len(tests) == len(cells)
                             else 1.0),
                doubles=bonferroni_min((p for _, _, p in _cell_tests(r, doubling, n_test,
                                                                     limit)),
                                       len(doubling)) < ALPHA,
                reach=reach_per_layer(r, layers)))
        if len(per_seed) < len(learned):
            return self._not_testable(f"{len(learned) - len(per_seed)} learned seed(s) without "
                                      "lens readings in the tested cells", len(learned))
        p_confirm = max(s.p_compose for s in per_seed)
        p_no_faster = bonferroni_min(s.p_no_faster for s in per_seed)

        def cell_list(cs: list[tuple[str, int, int]]) -> str:
            return ", ".join(f"{s} {k} @{layer}" for s, k, layer in cs)

        why = (f"D = {D}, {layers} layers: {len(learned)} of {len(runs)} seeds learned the "
               f"query; cells beyond doubling (slot, depth, after layer): {cell_list(cells)}; "
               "per seed the best of them: "
               + ", ".join(f"seed {s.seed}: {s.best:.2f} (p = {s.p_compose:.2g})"
                           for s in per_seed)
               + f" (limit {limit:.2f}). Reach per layer (deepest depth read at >= {LEARNED}, "
               "first / second tokens, after layers 1.."
               + f"{layers - 1}): " + "; ".join(
                   f"seed {s.seed}: {s.reach['first']} / {s.reach['second']}"
                   for s in per_seed))
        doubling_seeds = [s.seed for s in per_seed if s.doubles]
        if doubling_seeds:
            why += (f". Beyond one link per layer within doubling's reach "
                    f"({cell_list(doubling)}), seeds "
                    f"{doubling_seeds} read above the limit (secondary)")
        if p_confirm < ALPHA:
            verdict, reason, p = Verdict.CONFIRMED, Reason.DECIDED, p_confirm
            why += (f". Every one of these {len(per_seed)} trained models composes faster than "
                    f"doubling: largest p = {p_confirm:.3g}")
        elif p_no_faster < ALPHA:
            verdict, reason, p = Verdict.REFUTED, Reason.DECIDED, p_no_faster
            slowest = min(per_seed, key=lambda s: s.p_no_faster)
            pace = ("doubles (it reads cells beyond one link per layer)" if slowest.doubles
                    else "advances one link per layer, as far as its lens shows")
            why += (f". In seed {slowest.seed} no root beyond doubling's reach is known: its "
                    f"lens reads the one-link cells, and every cell beyond doubling below the "
                    f"limit (p = {p_no_faster:.3g} over the seeds); it {pace}")
        else:
            verdict, reason, p = Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED, p_confirm
            why += (f". Neither side decides (largest p to confirm {p_confirm:.3g}, to refute "
                    f"{p_no_faster:.3g})")
            if blind := {seed: m for seed, m in misses.items() if m}:
                why += ("; a refuting seed's lens must read the first token one link per layer "
                        "reaches after every layer before the last, and here it does not after "
                        "layer(s) " + "; ".join(
                            f"{', '.join(map(str, m))} in seed {seed}"
                            for seed, m in blind.items()))
        return Assessment(
            verdict=verdict, reason=reason, p_value=p,
            theory=f"reads above 1/K = {limit:.2f} where pointer doubling cannot",
            empirical=Measurement(min(s.best for s in per_seed),
                                  quantity=("the weakest seed's best lens accuracy in the "
                                            "cells beyond doubling"),
                                  at=self.describe(params, "control", True)),
            statistic=(f"linear lens by statement slot, {n_test} held-out examples per seed. "
                       f"{RECONSTRUCTION}"),
            tolerance=Tolerance("1/K, a model that knows the roots but not the chain; binomial "
                                "tests on the example count, Bonferroni within a seed, "
                                "intersection-union over seeds", {"limit": limit, "alpha": ALPHA}),
            explanation=why, n_seeds=len(learned),
            details={"cells": cells, "separating_cells": separating_cells(D, layers),
                     "seeds": [asdict(s) for s in per_seed]})
