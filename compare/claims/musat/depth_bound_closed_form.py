"""``musat.depth_bound_closed_form`` (§2.1-§2.4): the closed form of the depth bound against the
information-flow game of Assumption 1, the paper's form and both refined ones."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from attnverify import theory
from attnverify.compare.claim import Assessment, Claim, ClaimKind, Verdict
from attnverify.compare.claims.musat.common import FROZEN, RECONSTRUCTION
from attnverify.compare.groups import GroupedResults
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.memo import memo
from attnverify.compare.params import Params
from attnverify.compare.protocol import derivation_protocol
from attnverify.compare.report.plotting import PALETTE, new_figure
from attnverify.compare.space import Dimension

if TYPE_CHECKING:
    from matplotlib.figure import Figure

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


@dataclass(frozen=True)
class GameParams(Params):
    """The largest chain depth D played on sets of positions (``d_sets``, every form) and on
    intervals (``d_intervals``, the paper's form); both at least 1, since an empty range would
    confirm vacuously."""

    d_sets: int
    d_intervals: int

    def __post_init__(self) -> None:
        for name in ("d_sets", "d_intervals"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be an integer >= 1; got {getattr(self, name)!r}")


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
    defaults: ClassVar[dict[str, GameParams]] = {
        "smoke": GameParams(d_sets=20, d_intervals=500),
        "quick": GameParams(d_sets=60, d_intervals=3_000),
        "full": GameParams(d_sets=200, d_intervals=10_000),
    }

    def assess(self, params: dict[str, Any], results: GroupedResults) -> Assessment:
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

    def figures(self, params: dict[str, Any], results: GroupedResults,
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


def bound_figure(d_max: int) -> Figure:
    """The closed forms of the depth bound (the paper's and both refined ones) up to ``d_max``,
    with the game's values at a few D."""
    fig, (ax,) = new_figure(width=5.0)
    D = np.unique(np.geomspace(1, d_max, 400).astype(int))
    for values, colour, label in (
            ([theory.musat.min_layers_value(int(d)) for d in D], PALETTE["theory"],
             "paper: 3^t >= 2D"),
            ([theory.musat.min_layers_refined_value(int(d), False) for d in D],
             PALETTE["orange"], "refined, query = last chain token: 3^t >= 4D - 1"),
            ([theory.musat.min_layers_refined_value(int(d), True) for d in D],
             PALETTE["blue"], "refined, separate query: 3^t >= 4D + 1")):
        ax.step(D, values, where="post", color=colour, label=label)
    sims = np.unique(np.geomspace(1, min(d_max, 60), 12).astype(int))
    ax.plot(sims, [theory.musat.simulate(int(d)).any_position for d in sims], "o",
            color=PALETTE["theory"], markersize=4, label="game simulator (some position)")
    ax.set_xscale("log")
    ax.set_xlabel("chain length D (links)")
    ax.set_ylabel("layers t needed")
    ax.set_title("depth bound: closed forms and the game")
    ax.legend(fontsize=7)
    return fig
