"""What the three claims on the KTIW probe under frozen uniform attention share (P2, P4;
spec §3.1, §4.5): their runs (the copying seq2seq with ``attention="uniform"``, the official
``--invasive_uniform``) on a seed block of their own, the probe's levels in multiples of chance,
the per-seed read-out and the rate design of the two claims that count seeds.

- ``snell.ktiw_learned_under_uniform_attention``: the subset probe is learned (a rate of seeds);
- ``snell.ktiw_harder_on_permutations``: it is learned less often on permutations (rates);
- ``snell.permutation_ktiw_at_chance`` (derived): the permutation probe stays at chance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from attnverify.compare.claim import Verdict
from attnverify.compare.claims.snell.common import (
    COPYING_PARAMS,
    CopyingParams,
    copy_spec,
    copy_task,
)
from attnverify.compare.claims.snell.copying_runs import UNIFORM_STEPS
from attnverify.compare.decision import Decision, decide, rate_above, rate_above_verdicts
from attnverify.compare.measurement import Tolerance
from attnverify.compare.protocol import SeedBlock, SeedUse
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import RunResult, RunSpec

KTIW_FIRST_SEED = 1100
"""The first seed of the block the three claims decide on, trained for them only."""
KTIW_SEEDS = {"smoke": 3, "quick": 12, "full": 20}
"""Seeds per distribution. The rate design of one distribution reaches both verdicts from 6;
the difference of two rates refutes equal rates from 12 each."""
KTIW_PARAMS: dict[str, CopyingParams] = {
    # full: the paper's copying configuration (§1.6) at its 200 steps, frozen uniform
    profile: replace(params, seeds=KTIW_SEEDS[profile], steps=UNIFORM_STEPS[profile])
    for profile, params in COPYING_PARAMS.items()
}
"""The profiles of the three claims: the copying configuration at their seeds and budget."""
KTIW_SEED_BLOCKS = (
    SeedBlock(SeedUse.DECISION, KTIW_FIRST_SEED,
              note="frozen-uniform runs shared by the three KTIW claims, subsets on the even "
                   "seeds and permutations on the odd ones; first trained after their rules "
                   "were frozen on 2026-12-04"),
    SeedBlock(SeedUse.DEVELOPMENT, 1000,
              note="the first decision block of these three claims (seeds 1000 to 1039), whose "
                   "step-0 precondition, 'below twice chance in every seed', failed at full "
                   "on a probe of 0.0490 against 0.0488 in one of 40 untrained models; seen, "
                   "on record, they decide nothing"),
    SeedBlock(SeedUse.DEVELOPMENT, 100,
              note="an earlier form of snell.ktiw_learned_under_uniform_attention (both "
                   "distributions in one rule) decided on these (4 seeds at quick, 20 at "
                   "full); seen, on record, they decide nothing here"),
    SeedBlock(SeedUse.DEVELOPMENT, 0,
              note="the first rule was developed on these (seeds 0 to 19 at full: the "
                   "archived runs, on record)"))
"""The seed blocks of the three claims' protocols."""
READOUT = ("the last evaluation of each run, at its final training step (the profile's budget: "
           "400 steps at smoke and quick, 200 at full, the paper's), on the run's fixed "
           "evaluation batch: one step fixed by the profile before the decision")
"""The read-out of the three claims, in words."""

RATE_H0, RATE_H1 = 0.5, 0.75
RATE_ALPHA, RATE_BETA = 0.025, 0.10
"""The rate design's levels: toward H1 at 0.025, against H1's rate at 0.10."""


@dataclass(frozen=True)
class RateReading:
    """The rate design read on a count of seeds: its decision and the exact 95% interval of
    the share."""

    decision: Decision
    ci: tuple[float, float]


def read_rate(hits: int, n: int, counted: str, effect: str) -> RateReading:
    """:data:`RATE_H0` against :data:`RATE_H1` on ``hits`` of ``n`` seeds (``counted``: what
    a hit is, for the test's name; ``effect``: the claim's effect, for the decision's text)."""
    test, refutation = rate_above(hits, n, RATE_H0, RATE_H1,
                                  f"exact binomial, {hits} of {n} seeds {counted}")
    decision = decide(test, RATE_ALPHA, refutation=refutation, beta=RATE_BETA, effect=effect)
    return RateReading(decision, binomial_ci(hits, n))


def rate_verdicts(seeds: int) -> frozenset[Verdict]:
    """The verdicts the rate design can reach over ``seeds`` seeds."""
    return rate_above_verdicts(seeds, RATE_H0, RATE_H1, RATE_ALPHA, RATE_BETA)


def rate_tolerance(level: str, thresholds: dict[str, float]) -> Tolerance:
    """The rate design's tolerance: the per-seed ``level`` in words, its ``thresholds`` and
    the two rates."""
    return Tolerance(f"{level}; rate 1/2 (H0) against 3/4 (H1)",
                     {**thresholds, "rate_h0": RATE_H0, "rate_h1": RATE_H1})
"""The rate design of the claims that count seeds: confirmed when the share of seeds that
show the property is above one half (exact binomial at alpha); refuted when a share of 3/4 or
more is rejected (at beta): "the probe is learned" read as "most seeds learn it"."""


@dataclass(frozen=True)
class ProbeLevels:
    """The KTIW probe's levels at length L: chance 1/S (S = L + 1, the positions the probe's
    argmax ranges over), "learned" above five times chance (at most half-way from chance to
    1, which binds for L <= 8 only), "at chance" below twice chance; the factors are the
    spec's (T10)."""

    chance: float
    learned: float
    at_chance: float


def probe_levels(length: int) -> ProbeLevels:
    """The probe's :class:`ProbeLevels` at sequence length ``length``."""
    chance = 1.0 / (length + 1)
    return ProbeLevels(chance=chance, learned=min(5.0 * chance, (1.0 + chance) / 2),
                       at_chance=2.0 * chance)


def ktiw_specs(params: dict[str, Any]) -> dict[str, list[RunSpec]]:
    """The three claims' runs: subsets on the even seeds from :data:`KTIW_FIRST_SEED`, then
    permutations on the odd ones, so that no two runs share a seed (init and data stream)."""
    return {dist: [copy_spec(params, dist, vocab, KTIW_FIRST_SEED + 2 * i + offset,
                             attention="uniform") for i in range(params["seeds"])]
            for offset, (dist, vocab) in enumerate((("subset", params["subset_V"]),
                                                    ("permutation", params["L"])))}


def starts_learned(runs: Sequence[RunResult], levels: ProbeLevels) -> int:
    """How many runs' probe is already above the "learned" level at step 0 (a testability
    precondition: such a seed would count as learned by its initialisation). The level, not
    "at chance": an untrained model's probe is a noisy estimate around 1/S (0.009 to 0.049 at
    full, 2/S = 0.049), and a gate at twice chance stops on that noise."""
    return sum(1 for r in runs if not r.diverged and r.eval_steps[0] == 0
               and float(r.metric("ktiw_acc")[0]) > levels.learned)


def final_probes(runs: Sequence[RunResult], diverged_as: float | None) -> np.ndarray:
    """Each run's final KTIW-probe accuracy; a diverged run counts as ``diverged_as`` (None:
    left out)."""
    return np.array([float(r.metric("ktiw_acc")[-1]) if not r.diverged else diverged_as
                     for r in runs if not r.diverged or diverged_as is not None], dtype=float)


def constructed_probe_run(spec: RunSpec, final: float) -> RunResult:
    """A frozen-uniform run built by hand, for the rules' tests and the claim contract: the
    probe rising linearly from 0 to ``final``, the per-word loss falling from log L to 1."""
    steps = np.arange(0, spec.steps + 1, spec.eval_every)
    rise = steps / steps[-1]
    length = copy_task(spec).length
    metrics = {"ktiw_acc": final * rise, "acc": rise,
               "loss_words": np.log(length) + (1.0 - np.log(length)) * rise}
    return RunResult(spec=spec, status="ok", eval_steps=steps, metrics=metrics,
                     train_loss=np.zeros(1))
