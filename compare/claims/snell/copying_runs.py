"""The copying runs that several Snell claims read, so that they train once and share the
cache: the normally trained permutation and subset runs on the decision seeds
(``snell.permutation_is_hard``, ``snell.ktiw_precedes_attention``), and the runs with
attention frozen uniform, with their profiles (``snell.stage1_bow_optimum``; their step
budget is also that of the KTIW claims' own frozen-uniform runs and of the
frozen-uniform runs of ``snell.uniform_probe_agrees_with_attention``), with the read-out of a
run's last evaluation and the seed blocks the frozen-uniform protocols share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from attnverify.compare.claims.snell.common import (
    COPYING_PARAMS,
    DECISION_SEEDS,
    SUCCESS,
    CopyingParams,
    copy_spec,
)
from attnverify.compare.protocol import SeedBlock, SeedUse
from attnverify.compare.stats import mean_ci
from attnverify.empirics import RunResult, RunSpec

SUCCESS_TEXT = (f"token acc >= {SUCCESS['acc']} and aligned attention (argmax at t or t +- 1) "
                f">= {SUCCESS['attn_acc_best_offset']} at one evaluation")
""":data:`~attnverify.compare.claims.snell.common.SUCCESS` in words, for statistics lines."""


def normal_copying_specs(params: dict[str, Any]) -> dict[str, list[RunSpec]]:
    """Normally trained copying runs on the fresh decision seeds: permutations (V = L), then
    the subset (L of ``subset_V``), ``params["seeds"]`` each."""
    seeds = range(DECISION_SEEDS, DECISION_SEEDS + params["seeds"])
    return {"permutation": [copy_spec(params, "permutation", params["L"], s) for s in seeds],
            "subset": [copy_spec(params, "subset", params["subset_V"], s) for s in seeds]}


UNIFORM_SEEDS = {"smoke": 2, "quick": 4, "full": 20}
"""Seeds per distribution of the frozen-uniform runs."""
UNIFORM_STEPS = {"smoke": 400, "quick": 400, "full": 200}
"""Their step budget: the paper's 200 at full."""
UNIFORM_PARAMS: dict[str, CopyingParams] = {
    # full: the paper's copying configuration (§1.6), frozen-uniform as --invasive_uniform
    profile: replace(params, seeds=UNIFORM_SEEDS[profile], steps=UNIFORM_STEPS[profile])
    for profile, params in COPYING_PARAMS.items()
}
"""The frozen-uniform profiles: the copying configuration at their own seeds and budget."""


def uniform_specs(params: dict[str, Any]) -> dict[str, list[RunSpec]]:
    """Frozen-uniform seq2seq runs by distribution: the subset seeds, then the permutation
    seeds."""
    return {dist: [copy_spec(params, dist, vocab, DECISION_SEEDS + i, attention="uniform")
                   for i in range(params["seeds"])]
            for dist, vocab in (("subset", params["subset_V"]), ("permutation", params["L"]))}


def final_values(results: Sequence[RunResult], metric: str) -> np.ndarray:
    """Last evaluated value per run; diverged runs are left out (their count is reported)."""
    return np.array([r.metric(metric)[-1] for r in results if not r.diverged])


def final_ci(results: Sequence[RunResult], metric: str) -> tuple[np.ndarray, float, float]:
    """:func:`final_values` with its 95% t-interval; (nan, nan) when every run diverged."""
    values = final_values(results, metric)
    lo, hi = mean_ci(values) if values.size else (float("nan"), float("nan"))
    return values, lo, hi


def diverged_count(results: Sequence[RunResult]) -> int:
    return sum(r.diverged for r in results)


UNIFORM_SEED_BLOCKS = (
    SeedBlock(SeedUse.DECISION, DECISION_SEEDS,
              note="frozen-uniform runs, subsets and permutations, of "
                   "snell.stage1_bow_optimum"),
    SeedBlock(SeedUse.DEVELOPMENT, 0,
              note="the rule was developed on these (seeds 0 to 19 at full: the archived "
                   "runs, on record)"))
"""The seed blocks of the frozen-uniform runs' protocols."""
FINAL_STEP = ("the last evaluation of each run, at its final training step (the profile's "
              "budget: 400 steps at smoke and quick, 200 at full), on the run's fixed "
              "evaluation batch")
"""The read-out of the frozen-uniform runs' protocols, in words."""
