"""Claims on the depth bound itself (§2.1-§2.4): the closed form against the
information-flow game, and a transformer with written-down weights against both."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.musat.bound_figures import bound_figure, construction_figure
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.memo import memo
from attnverify.compare.protocol import derivation_protocol
from attnverify.compare.space import Dimension
from attnverify.empirics import RunResult
from attnverify.theory.musat import construction

if TYPE_CHECKING:
    from matplotlib.figure import Figure

RECONSTRUCTION = ("Reconstruction [R] (docs/derivations.md#mușat-2024): the paper's body was "
                  "not available; D = "
                  "links of the queried chain, statements of 2 tokens, Assumption 1 formalised "
                  "as the information-flow game of §2.2.")
FROZEN = "2026-11-25"
"""The date the Mușat claims' protocols were fixed."""

GAME_PROTOCOL = replace(
    derivation_protocol(
        endpoint=("mismatches between the closed forms (min_layers(D): smallest t with "
                  "3^t >= 2D; the refined 3^t >= 4D - 1 and 3^t >= 4D + 1) and the "
                  "information-flow game of Assumption 1"),
        unit="exact computation (integers), one per D and simulator",
        test=("exact equality at every D: the game on sets (with a distractor chain) against "
              "all three forms for D = 1..d_sets (20, 60, 200 by profile), the game on "
              "intervals against min_layers(D) only for D = 1..d_intervals (500, 3000, 10000)"),
        frozen=FROZEN,
        secondary=("the bound curves and game values (figure)",)),
    confirm="no mismatch at any D tested (tolerance 0: integers)",
    refute="a mismatch at any one D, in either simulator",
    weaknesses=(
        "the closed forms and the game are both this project's reconstruction of Assumption 1 "
        "(the paper's body was not available): agreement checks our code, not the paper's "
        "proof",
        "the refined forms are checked only by the game on sets, up to d_sets; the game on "
        "intervals checks the paper's form only"))


class DepthBoundClosedForm(Claim):
    """``musat.depth_bound_closed_form``: ``min_layers(D)`` (smallest t with 3^t >= 2D) equals
    the number of layers after which some position of the game holds the whole chain, for every
    D tested; the refined forms equal the layers after which the answering end holds it (with
    the query as the last chain token, and as a separate token).

    Two simulators: the literal game on sets (with a distractor chain) for D up to
    ``d_sets``, and the interval form for D up to ``d_intervals``. Exact agreement is required
    (integers; any mismatch refutes).
    """

    id = "musat.depth_bound_closed_form"
    kind = ClaimKind.DERIVATION
    protocol = GAME_PROTOCOL
    code_version = 1
    paper = "musat"
    statement = ("The closed form t >= log_3(2D) equals the information-flow simulator of "
                 "Assumption 1 for every D tested.")
    space: ClassVar[dict[str, Dimension]] = {
        "d_sets": Dimension("largest chain depth D played on sets of positions", low=1,
                            high=120),
        "d_intervals": Dimension("largest chain depth D played on intervals", low=1,
                                 high=5_000),  # the game on intervals is quadratic in D
    }
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"d_sets": 20, "d_intervals": 500},
        "quick": {"d_sets": 60, "d_intervals": 3_000},
        "full": {"d_sets": 200, "d_intervals": 10_000},
    }

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        for name in ("d_sets", "d_intervals"):  # an empty range would confirm vacuously
            if not (isinstance(params[name], int) and params[name] >= 1):
                raise ValueError(f"{name} must be an integer >= 1; got {params[name]!r}")
        found = memo("musat_game", {k: params[k] for k in ("d_sets", "d_intervals")},
                     {"claim": self.code_version}, lambda: self._mismatches(params))
        mismatches = [{"D": int(D), "simulator": "sets" if kind == 0 else "intervals"}
                      for D, kind in zip(found["D"], found["kind"], strict=True)]
        ok = not mismatches
        return Assessment(
            verdict=Verdict.CONFIRMED if ok else Verdict.REFUTED,
            theory="min t with 3^t >= 2D",
            empirical=Measurement(len(mismatches), at="mismatches between game and closed form"),
            statistic=(f"the game on sets for D = 1..{params['d_sets']} (paper bound and both "
                       f"refined variants), on intervals for D = 1..{params['d_intervals']}. "
                       f"{RECONSTRUCTION}"),
            tolerance=Tolerance("integers: exact agreement", {"mismatches": 0}),
            explanation=("closed form = simulator at every D" if ok else
                         f"{len(mismatches)} mismatches, first at D = {mismatches[0]['D']}"),
            details={"mismatches": mismatches[:20]})

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        return {"bound": bound_figure(params["d_intervals"])}

    @staticmethod
    def _mismatches(params: dict[str, Any]) -> dict[str, np.ndarray]:
        """D and simulator (0: sets, 1: intervals) of every disagreement with a closed form."""
        bad: list[tuple[int, int]] = []
        for D in range(1, params["d_sets"] + 1):
            game = theory.musat.simulate(D, distractors=1)
            query = theory.musat.simulate(D, distractors=1, separate_query=True)
            expected = (theory.musat.min_layers_value(D),
                        theory.musat.min_layers_refined_value(D, separate_query=False),
                        theory.musat.min_layers_refined_value(D, separate_query=True))
            if (game.any_position, game.answer_position, query.answer_position) != expected:
                bad.append((D, 0))
        for D in range(1, params["d_intervals"] + 1):
            if theory.musat.simulate_intervals(D).any_position != \
                    theory.musat.min_layers_value(D):
                bad.append((D, 1))
        return {"D": np.array([b[0] for b in bad], dtype=np.int64),
                "kind": np.array([b[1] for b in bad], dtype=np.int64)}

CONSTRUCTION_PROTOCOL = replace(
    derivation_protocol(
        endpoint=("per D, the fewest layers with which the written-down transformer answers "
                  "every sampled instance, against the refined bound 3^t >= 4D + 1 (the answer "
                  "read at a separate query token)"),
        unit=("exact computation: hard-attention forward passes (2 heads per layer) on random "
              "instances, 3, 4, 10 per D by profile, K = 2, 3, 3 chains, generator seed 0"),
        test=("per D, the fewest t in 0..refined + 1 answering every instance, compared exactly "
              "with the refined count"),
        frozen=FROZEN,
        secondary=("the D where the refined count exceeds min_layers(D) (the gap, reported as "
                   "a finding)", "the fraction of D solved with exactly the refined count")),
    confirm=("at every D tested (1..5, 1..13, 1..21 by profile) the fewest layers equal the "
             "refined count exactly"),
    refute=("at some D the fewest layers differ from the refined count: fewer than "
            "min_layers(D) (Theorem 1 contradicted), between min_layers(D) and the refined "
            "count (our game contradicted), more, or no t up to refined + 1 answers every "
            "instance"),
    weaknesses=(
        "'solves every instance' is checked on 3 to 10 random instances per D from one "
        "generator seed, not proved for every instance",
        "the construction, the refined bound and the game are this project's reconstruction "
        "[R]: a match shows our construction is tight for our game, not the paper's "
        "construction (unavailable)",
        "hard attention with weights written down: it shows the bound is attainable, not what "
        "trained softmax models learn"))


class ConstructionMeetsBound(Claim):
    """``musat.construction_meets_bound``: the written-down transformer of
    :mod:`theory.musat.construction` solves random instances exactly with the number of layers
    the bound predicts for the position that answers.

    For each D, on ``instances`` random instances (K chains, shuffled), the fewest layers at
    which every answer is right. Theorem 1 is a lower bound (``3^t >= 2D`` for *some* position
    to hold the chain); the answer is read at the query, one end of the chain, where the game
    needs ``3^t >= 4D + 1`` (the refined form). Confirmed when the construction solves every D
    with exactly the refined count; refuted when it needs fewer layers than the paper's bound
    (the theorem would be contradicted) or more than the refined count (the construction is not
    tight). The gap between the two bounds (D = 1, 3, 4, 7..13, ...) is reported as a finding.
    """

    id = "musat.construction_meets_bound"
    kind = ClaimKind.DERIVATION
    protocol = CONSTRUCTION_PROTOCOL
    code_version = 1
    paper = "musat"
    statement = ("An explicit transformer construction solves random instances exactly with the "
                 "predicted layer count (the bound for the answering position; the gap to "
                 "3^t >= 2D is reported).")
    space: ClassVar[dict[str, Dimension]] = {
        "D": Dimension("chain length D (hops)", low=1, high=30),
    }

    def point_params(self, point: dict[str, Any]) -> dict[str, Any]:
        # K chains of D + 1 distinct symbols need vocab >= K (D + 1); K <= 4 at every profile
        return {"depths": (point["D"],), "vocab": max(32, 4 * (point["D"] + 1))}
    defaults: ClassVar[dict[str, dict[str, Any]]] = {
        "smoke": {"depths": (1, 2, 3, 4, 5), "K": 2, "vocab": 32, "instances": 3, "seed": 0},
        "quick": {"depths": tuple(range(1, 14)), "K": 3, "vocab": 64, "instances": 4, "seed": 0},
        "full": {"depths": tuple(range(1, 22)), "K": 3, "vocab": 96, "instances": 10, "seed": 0},
    }

    def assess(self, params: dict[str, Any], results: Sequence[RunResult]) -> Assessment:
        table = memo("musat_construction", {k: params[k] for k in
                                             ("depths", "K", "vocab", "instances", "seed")},
                     {"claim": self.code_version},
                     lambda: {"needed": np.array(self._layers_needed(params))})
        rows = [{"D": D, "paper_bound": theory.musat.min_layers_value(D),
                 "refined_bound": theory.musat.min_layers_refined_value(D),
                 "construction_layers": int(n) if n >= 0 else None}
                for D, n in zip(params["depths"], table["needed"], strict=True)]
        below = [r for r in rows if r["construction_layers"] is not None
                 and r["construction_layers"] < r["paper_bound"]]
        not_tight = [r for r in rows if r["construction_layers"] != r["refined_bound"]]
        gap = [r["D"] for r in rows if r["refined_bound"] > r["paper_bound"]]
        if below:
            verdict = Verdict.REFUTED
            why = (f"the construction answers with fewer layers than min_layers(D) at D = "
                   f"{', '.join(str(r['D']) for r in below)}: Theorem 1 would be contradicted")
        elif not_tight:
            verdict = Verdict.REFUTED
            why = (f"the construction needs more than the refined bound at D = "
                   f"{', '.join(str(r['D']) for r in not_tight)}: it is not tight")
        else:
            verdict = Verdict.CONFIRMED
            why = ("the construction solves every instance with exactly the refined bound "
                   "3^t >= 4D + 1 at every D, never fewer than min_layers(D)")
        if gap:
            why += (f". Finding: at D = {', '.join(map(str, gap))} this is one layer more than "
                    "the reported 3^t >= 2D, which only a position in the middle of the chain "
                    "can reach; the information-flow game proves that no construction obeying "
                    "Assumption 1 answers at the query with fewer")
        return Assessment(
            verdict=verdict,
            theory="refined 3^t >= 4D + 1 at the query (paper: 3^t >= 2D somewhere)",
            empirical=Measurement(
                sum(r["construction_layers"] == r["refined_bound"] for r in rows) / len(rows),
                at="fraction of D solved with exactly the refined count"),
            statistic=(f"{params['instances']} random instances per D, K = {params['K']} "
                       f"chains, hard attention with 2 heads per layer (weights written down). "
                       f"{RECONSTRUCTION}"),
            tolerance=Tolerance("a construction is exact or it is not", {"answers": "all exact"}),
            explanation=why, details={"depths": rows})

    def figures(self, params: dict[str, Any], results: Sequence[RunResult],
                assessment: Assessment) -> dict[str, Figure]:
        return {"construction": construction_figure(assessment.details["depths"])}

    @staticmethod
    def _layers_needed(params: dict[str, Any]) -> list[int]:
        """Per D, the fewest layers answering every instance (-1: none up to refined + 1)."""
        rng = np.random.default_rng(params["seed"])
        out = []
        for D in params["depths"]:
            instances = [construction.random_instance(D, params["K"], params["vocab"], rng)
                         for _ in range(params["instances"])]
            refined = theory.musat.min_layers_refined_value(D, separate_query=True)
            needed = -1
            for t in range(0, refined + 2):
                if all(construction.answer(*construction.forward(i.tokens, params["vocab"],
                                                                 t)[:2]) == i.answer
                       for i in instances):
                    needed = t
                    break
            out.append(needed)
        return out
