"""The retrieval runs the Mușat claims share: the configurations of each profile (typed:
:class:`RetrievalParams`), the cells they train and what the claims read off a run.

Configurations are CPU-sized at ``quick`` and avoid three known pitfalls: K = 4 chains (chance
1/4 on the query, no single-chain shortcut); a separate query token, so the learning runs use
at least the refined bound + 1 layers (the bound is only necessary, and with a separate query
the refined bound can be a layer higher:
docs/derivations.md#information-flow-game-and-refined-bound); the same step budget for IC and
query-only (training near the bound may need many steps). Runs are shared between the claims
through the cache.

The learning cell at ``quick`` is D = 2 with 4 layers (refined bound 2, so + 2), the smallest
chain with two depths >= 1 to order. Measured on this CPU before choosing it (IC, K = 4, no
distractors): with 3 layers (refined + 1, d_model 64, lr 1e-3, batch 128) 1 of 3 seeds learned
the query in 8000 steps; with 4 layers (d_model 32, lr 3e-3, batch 64) 3 of 4 seeds did within
3000 steps. Every seed that missed sat on the same plateau: every statement token right, the
query at chance (see ``RetrievalTransformer.depth_accuracy``). A profile can add a grid of
(D, layers) cells, IC and query-only, for the heat map (PF1); ``full`` trains only the cells
that decide a claim (the grid would cost more than the claims).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from attnverify import theory
from attnverify.compare.claims.musat.common import LEARNED, NEAR_CHANCE_ALPHA
from attnverify.compare.params import Params
from attnverify.empirics import Adam, RunResult, RunSpec
from attnverify.empirics.models.retrieval_transformer import RetrievalTransformerConfig
from attnverify.empirics.probes.retrieval_metrics import QUERY_ACCURACY, depth_metric
from attnverify.empirics.tasks.retrieval import RetrievalTask

PAPER_RETRIEVAL = ("64 transformers per formulation, 24k steps, batch 128, 2^18-2^20 examples; "
                   "the paper's architecture is unknown")


class RetrievalCell(NamedTuple):
    """A cell with distractors: chains of ``D`` links, a model of ``layers`` layers and
    ``distractors`` noise statements (the shallow cell, its control, the depth step)."""

    D: int
    layers: int
    distractors: int


class LearningCell(NamedTuple):
    """The learning ('deep') cell: chains of ``D`` links, ``layers`` layers, no distractors."""

    D: int
    layers: int


NO_GRID: dict[str, Any] = {"D": (), "layers": (), "distractors": 0, "seeds": 0}


@dataclass(frozen=True)
class RetrievalParams(Params):
    """The retrieval runs of the Mușat training claims.

    ``shallow``: a cell below min_layers(D), with distractors so that 4 chains plus noise
    statements leave no fixed slot to read; ``deep``: a cell with at least the refined bound + 1
    layers; ``grid``: more (D, layers) cells (``{"D": [...], "layers": [...], "distractors": n,
    "seeds": n}``), trained with IC and query-only for the heat map only (every D with every
    layer count, ``seeds`` each); ``control``: the shallow cell's D and distractors with the
    refined bound + 1 layers (the testability precondition of musat.shallow_models_fail; None
    where the shallow cell has one layer and cannot test the claim); ``looks``: the sequential
    seed counts of musat.sufficient_depth_learns; ``shallow_looks``: those of the shallow IC
    cell (musat.shallow_models_fail; after its control where there is one; None: not trained)
    and ``shallow_query_only_seeds`` the shallow query-only cell's seeds (heat map only). The
    model: ``layers`` per cell, ``heads`` heads of width ``d_model``; K chains over ``vocab``
    symbols; Adam at ``lr``, ``steps`` steps of ``batch_size``, evaluated every ``eval_every``
    steps on ``eval_size`` fresh examples; ``seeds`` per cell."""

    shallow: RetrievalCell
    deep: LearningCell
    K: int
    vocab: int
    d_model: int
    heads: int
    steps: int
    lr: float
    batch_size: int
    eval_every: int
    eval_size: int
    seeds: int
    grid: dict[str, tuple[int, ...] | int]
    control: RetrievalCell | None
    looks: tuple[int, ...]
    shallow_looks: tuple[int, ...] | None
    shallow_query_only_seeds: int

    def __post_init__(self) -> None:
        for name in ("shallow", "deep", "control"):
            cell = getattr(self, name)
            if cell is not None and not (cell[0] >= 1 and cell[1] >= 1
                                         and (len(cell) < 3 or cell[2] >= 0)):
                raise ValueError(f"{name} must have D >= 1, layers >= 1 and distractors >= 0; "
                                 f"got {tuple(cell)!r}")
        if self.K < 2:
            raise ValueError(f"K (chains) must be an integer >= 2; got {self.K!r}")


@dataclass(frozen=True)
class RetrievalParamsWithTrain(RetrievalParams):
    """:class:`RetrievalParams` at a profile whose budget leaves the cells out (quick):
    ``train`` false trains nothing (compare.quick_budget), ``--param train=true`` trains them.
    A class of its own since the other profiles have no ``train`` parameter."""

    train: bool


RETRIEVAL_PARAMS: dict[str, RetrievalParams] = {
    # At quick the shallow cell (one layer) cannot test its claim, so it is not trained (no
    # looks), and 3 seeds of the deep cell cannot decide musat.sufficient_depth_learns: the full
    # profile decides both (a run of the deep cell takes about 85 s on one core). Quick trains
    # none of these cells (train false: compare.quick_budget); --param train=true trains them
    "smoke": RetrievalParams(
        shallow=RetrievalCell(2, 1, 4), deep=LearningCell(1, 3), K=4, vocab=64, d_model=32,
        heads=4, steps=300, lr=3e-3, batch_size=64, eval_every=50, eval_size=256, seeds=2,
        grid=NO_GRID, control=None, looks=(2,), shallow_looks=(2,),
        shallow_query_only_seeds=2),
    "quick": RetrievalParamsWithTrain(
        shallow=RetrievalCell(2, 1, 4), deep=LearningCell(2, 4), K=4, vocab=64, d_model=32,
        heads=4, steps=4000, lr=3e-3, batch_size=64, eval_every=100, eval_size=512, seeds=3,
        grid=NO_GRID, control=None, looks=(3,), shallow_looks=None,
        shallow_query_only_seeds=0, train=False),
    # full: D = 5 needs 3 layers (3^t >= 2D), so 2 layers are one below the bound. Only the
    # cells that decide a claim are trained: the heat map's grid and the shallow query-only
    # cell (64 + 8 runs, heat map only) were cut before any full run, since the deciding cells
    # alone cost about 40 h of one core (docs/methodology.md, decision log of 2026-11-26).
    # Evaluated every 100 steps, the quick grid: two calibration runs of the deep cell at
    # 500-step evaluations learned every depth between steps 500 and 2000, too fast for that
    # grid to order (decision log of 2026-11-26)
    "full": RetrievalParams(
        shallow=RetrievalCell(5, 2, 8), deep=LearningCell(3, 4), K=4, vocab=64, d_model=64,
        heads=4, steps=24_000, lr=1e-3, batch_size=128, eval_every=100, eval_size=1024,
        seeds=5, grid=NO_GRID, control=RetrievalCell(5, 4, 8), looks=(5, 10, 15),
        shallow_looks=(8, 12), shallow_query_only_seeds=0),
}
"""The retrieval profiles, shared by every Mușat training claim (the paper's scale:
PAPER_RETRIEVAL)."""
RETRIEVAL: dict[str, dict[str, Any]] = {profile: params.as_dict()
                                        for profile, params in RETRIEVAL_PARAMS.items()}
"""The same profiles as mappings, for the claims whose own profiles extend them."""


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
    return float("nan") if result.diverged else float(result.metric(QUERY_ACCURACY)[-1])


def learned(result: RunResult) -> bool:
    """The run learned the query (final accuracy >= 0.9); a diverged run did not."""
    return not result.diverged and final_query(result) >= LEARNED


def allowed_depths(layers: int, D: int) -> tuple[int, ...]:
    """The statement depths k = 1..D whose root ``layers`` layers can bring to the statement's
    own position under both bounds: the paper's (3^t >= 2k) and the refined one for an
    answer at the end of the chain (3^t >= 4k - 1, docs/derivations.md#information-flow-game-
    and-refined-bound; derived here, not in the paper). Two layers allow depths 1 and 2."""
    return tuple(k for k in range(1, D + 1)
                 if max(theory.musat.min_layers_value(k),
                        theory.musat.min_layers_refined_value(k, separate_query=False)) <= layers)


def learned_depths(result: RunResult, depths: tuple[int, ...]) -> bool:
    """The run ends with every statement depth of ``depths`` learned (final ``acc_depth{k}``
    >= 0.9); a diverged run, or one without those metrics, did not."""
    if result.diverged or not depths:
        return False
    names = [depth_metric(k) for k in depths]
    return all(name in result.metrics and float(result.metric(name)[-1]) >= LEARNED
               for name in names)


def learns_in_half(runs: list[RunResult]) -> bool:
    """``runs`` exist and at least half of them learned the query (the controls'
    precondition)."""
    return bool(runs) and 2 * sum(map(learned, runs)) >= len(runs)


@cache
def _chance_count(K: int, n: int) -> int:
    """The most correct answers of ``n`` that are not above 1/K at one-sided exact binomial
    p < ``NEAR_CHANCE_ALPHA``."""
    k = int(stats.binom.isf(NEAR_CHANCE_ALPHA, n, 1 / K))
    while stats.binom.sf(k, n, 1 / K) >= NEAR_CHANCE_ALPHA:     # k + 1 correct is not above
        k += 1
    while k > 0 and stats.binom.sf(k - 1, n, 1 / K) < NEAR_CHANCE_ALPHA:  # k correct is above
        k -= 1
    return k


def chance_limit(K: int, n: int) -> float:
    """The largest final query accuracy over ``n`` evaluation examples that is still near
    chance: not above 1/K at one-sided exact binomial p < ``NEAR_CHANCE_ALPHA``."""
    return _chance_count(K, n) / n


def near_chance(accuracy: float, K: int, n: int) -> bool:
    """Near chance (:data:`NEAR_CHANCE_ALPHA`): a finite accuracy over ``n`` examples at most
    :func:`chance_limit`; NaN (a diverged run) is not near chance."""
    return bool(np.isfinite(accuracy)) and round(accuracy * n) <= _chance_count(K, n)


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
