"""What the Snell claims share: the copying configurations of each profile (so that claims
reading the same runs share them through the cache), the success criterion, and the
"every seed" decision rule used by several claims (group comparisons are
:func:`attnverify.compare.stats.compare_groups`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from attnverify.compare.claim import Verdict
from attnverify.compare.params import Params
from attnverify.compare.space import Dimension
from attnverify.compare.stats import binomial_ci
from attnverify.empirics import CopyTask, RunResult, RunSpec, Seq2SeqConfig

PAPER_COPYING = "H = 256, V = L = 40 and 40 of 60, batch 128, Adam 1e-3, 200 steps, 20 seeds"


@dataclass(frozen=True)
class CopyingModel(Params):
    """The copying configuration every Snell training claim starts from: a seq2seq model of
    ``hidden`` units on length-``L`` sequences, permutations (V = L) against subsets (L of
    ``subset_V``), trained ``steps`` steps at ``batch_size``, evaluated every ``eval_every``
    steps on ``eval_size`` examples."""

    hidden: int
    L: int
    subset_V: int
    batch_size: int
    steps: int
    eval_every: int
    eval_size: int


@dataclass(frozen=True)
class CopyingParams(CopyingModel):
    """The copying runs of Snell's claims (:class:`CopyingModel`), ``seeds`` seeds per
    distribution."""

    seeds: int


COPYING_PARAMS = {
    # smoke: wiring only; quick: L = 20 and H = 64, the smallest scale at which permutations
    # cannot be solved by a non-aligned shortcut (an EOS or diffuse-band solution, seen at
    # L = 10); full: the paper's configuration
    "smoke": CopyingParams(hidden=48, L=16, subset_V=24, batch_size=64, steps=400,
                           eval_every=25, eval_size=64, seeds=3),
    "quick": CopyingParams(hidden=64, L=20, subset_V=30, batch_size=64, steps=500,
                           eval_every=25, eval_size=100, seeds=12),
    "full": CopyingParams(hidden=256, L=40, subset_V=60, batch_size=128, steps=200,
                          eval_every=10, eval_size=50, seeds=20),
}
"""The copying profiles (the paper's configuration at full: PAPER_COPYING)."""
COPYING: dict[str, dict[str, Any]] = {profile: params.as_dict()
                                      for profile, params in COPYING_PARAMS.items()}
"""The same profiles as mappings, for the claims that extend them with parameters of their
own."""

DECISION_SEEDS = 100
"""The first seed of the fresh decision blocks of the Snell claims whose protocols were frozen
on 2026-11-25 (docs/methodology.md): their rules were developed on seeds 0 to 19, whose runs
stay on record and decide nothing for these claims."""
CALIBRATION_SEEDS = 200
"""The first seed of the Snell calibration blocks (choosing a configuration, measuring a
testability precondition); disjoint from the decision and development seeds."""

SUCCESS = {"acc": 0.95, "attn_acc_best_offset": 0.9}
"""A seed has learned to copy when, at one evaluation, teacher-forced token accuracy >= 0.95
(the official threshold, multihead.py ``can_learn``, read inclusively) and its attention is
aligned:
argmax at t, or consistently at t - 1 or t + 1 (the off-by-one alignments a unidirectional
encoder produces), for >= 90% of word steps -- so that a non-aligned shortcut (attention on
the EOS position, or a diffuse band ahead of the gold position) does not count; chance is 1/S.
A diverged run never succeeds."""

SUCCESS_ACC_ONLY = {"acc": 0.95}
"""Token accuracy alone, for the multi-head model's direct protocol (its §5 protocol counts
success exactly as the official outputs do; see its claim)."""


def copy_task(spec: RunSpec) -> CopyTask:
    """``spec.task`` as the copying task, for the type checker (a cast: the claims that call
    this read only copying runs; nothing is checked at run time)."""
    return cast(CopyTask, spec.task)


def seq2seq_model(spec: RunSpec) -> Seq2SeqConfig:
    """``spec.model`` as the copying model's config, for the type checker (a cast: the claims
    that call this read only its runs; nothing is checked at run time)."""
    return cast(Seq2SeqConfig, spec.model)


def copy_spec(params: dict[str, Any], distribution: str, vocab: int, seed: int,
              **model: Any) -> RunSpec:
    """A copying run at the scale of ``params`` (a COPYING entry, possibly overridden) with
    training seed ``seed``."""
    return RunSpec(task=CopyTask(distribution, vocab, params["L"]),
                   model=Seq2SeqConfig(hidden=params["hidden"], **model),
                   steps=params["steps"], batch_size=params["batch_size"],
                   eval_every=params["eval_every"], eval_size=params["eval_size"], seed=seed)


LENGTH_SPACE = {
    # shortest first (cheapest): a counterexample shrinks toward the smallest sequence length
    # at which the claim fails (pitfall §9.2: short permutations can be solved through EOS)
    "L": Dimension("sequence length L (permutations of L tokens; subsets of L of subset_V)",
                   low=4, high=16),
}
"""The parameter space of the copying claims; subset_V >= 16 at every profile."""


def scale_text(params: dict[str, Any]) -> str:
    """The scale of a copying experiment in words, for statistics lines."""
    return (f"H={params['hidden']}, L={params['L']}, batch {params['batch_size']}, "
            f"{params['steps']} steps, {params['seeds']} seeds")


def success_steps(results: list[RunResult],
                  criterion: dict[str, float] = SUCCESS) -> list[int | None]:
    return [r.first_step_reaching(criterion) for r in results]


def every_seed_verdict(k: int, n: int, rate: float = 0.9) -> tuple[Verdict, str]:
    """Decide "holds in every seed", read as a per-seed probability p >= ``rate``.

    Exact 95% Clopper-Pearson interval [lo, hi]: refuted when hi < rate (p >= rate rejected);
    confirmed only when every seed holds (k = n) and lo > 0.5, i.e. n >= 6 (with k = n - 1 a
    true rate of 0.8 would be confirmed about a quarter of the time at n = 12); else
    inconclusive.
    """
    if n == 0:
        return Verdict.INCONCLUSIVE, "no seed qualified, so there is nothing to count"
    lo, hi = binomial_ci(k, n)
    text = f"{k}/{n} seeds (95% CI {lo:.2f}-{hi:.2f})"
    if hi < rate:
        return Verdict.REFUTED, f"{text}: the upper bound is below {rate}"
    if k == n and lo > 0.5:
        return Verdict.CONFIRMED, f"{text}: every seed, and the lower bound excludes a minority"
    return Verdict.INCONCLUSIVE, f"{text}: p >= {rate} is not rejected, but not every seed " \
                                 f"holds or the seeds are too few for a lower bound above 0.5"


def constructed_copy_result(spec: RunSpec, learns_at: int | None) -> RunResult:
    """A copying run built by hand, for the rules' tests and the claim contract: every metric
    of :data:`SUCCESS` (and the KTIW probe) at 0 until the evaluation at step ``learns_at``,
    at 1 from there on; ``None``: it never learns within its steps."""
    steps = np.arange(0, spec.steps + 1, spec.eval_every)
    learned = (steps >= learns_at if learns_at is not None
               else np.zeros(steps.shape, dtype=bool)).astype(float)
    metrics = {name: learned.copy() for name in ("acc", "attn_acc", "attn_acc_best_offset",
                                                 "ktiw_acc")}
    return RunResult(spec=spec, status="ok", eval_steps=steps, metrics=metrics,
                     train_loss=np.zeros(1))
