"""Evaluate claims: specs -> executor (through the run store) -> assessment -> outcome.

``evaluate_all`` gathers the runs of every claim first and hands them to the executor as one
batch, so claims that read the same runs share them and the workers stay busy across claim
boundaries; then each claim is assessed from its own results. Claims' own computations (Monte
Carlo, the construction) are cached next to the run store (:mod:`compare.memo`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compare.claim import Assessment, Claim
from compare.memo import rooted
from empirics import Executor, RunResult, RunSpec


@dataclass
class ClaimOutcome:
    """One claim evaluated at one point, with everything the report needs.

    ``elapsed_s`` is the claim's compute time: the recorded training time of its runs (whether
    computed now or read from the cache) plus the time to assess them.
    """

    claim: Claim
    profile: str
    params: dict[str, Any]
    assessment: Assessment
    run_keys: list[str]
    elapsed_s: float

    @property
    def scale_note(self) -> str | None:
        return self.claim.scale_note(self.profile)


def _assess(claim: Claim, profile: str, params: dict[str, Any], specs: Sequence[RunSpec],
            results: Sequence[RunResult]) -> ClaimOutcome:
    start = time.perf_counter()
    assessment = claim.assess(params, results)
    elapsed = time.perf_counter() - start + sum(r.wall_time_s for r in results)
    return ClaimOutcome(claim=claim, profile=profile, params=params, assessment=assessment,
                        run_keys=[s.key() for s in specs], elapsed_s=elapsed)


def evaluate(claim: Claim, profile: str, executor: Executor,
             params: dict[str, Any] | None = None) -> ClaimOutcome:
    """Train (or read from the store) one claim's runs and assess them."""
    params = claim.params(profile) if params is None else params
    specs = claim.specs(params)
    results = executor.run(specs, desc=claim.id)
    with rooted(executor.store.root):
        return _assess(claim, profile, params, specs, results)


def evaluate_all(claims: Sequence[Claim], profile: str, executor: Executor,
                 overrides: dict[str, Any] | None = None,
                 points: dict[str, dict[str, Any]] | None = None) -> list[ClaimOutcome]:
    """Evaluate ``claims`` at their ``profile`` defaults with one executor batch for all runs;
    ``overrides`` replace the parameters a claim lists as ``overridable`` (others ignore them);
    ``points`` maps a claim id to parameters that replace its defaults (``verify --param``)."""
    overrides, points = overrides or {}, points or {}
    plans = [(claim, claim.params(profile) | {k: v for k, v in overrides.items()
                                              if k in claim.overridable}
              | points.get(claim.id, {}))
             for claim in claims]
    specs = {claim.id: claim.specs(params) for claim, params in plans}
    labels: dict[str, list[str]] = {}
    for claim_id, group in specs.items():
        for spec in group:
            labels.setdefault(spec.key(), []).append(claim_id)
    results = executor.run([s for group in specs.values() for s in group], desc="training",
                           labels={k: ", ".join(v) for k, v in labels.items()})
    by_key = {r.key: r for r in results}
    with rooted(executor.store.root):
        return [_assess(claim, profile, params, specs[claim.id],
                        [by_key[s.key()] for s in specs[claim.id]]) for claim, params in plans]
