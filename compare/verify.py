"""Evaluate claims: specs -> executor (through the run store) -> assessment -> outcome."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from compare.claim import Assessment, Claim
from empirics import LocalExecutor


@dataclass
class ClaimOutcome:
    """One claim evaluated at one point, with everything the report needs."""

    claim: Claim
    profile: str
    params: dict[str, Any]
    assessment: Assessment
    run_keys: list[str]
    elapsed_s: float

    @property
    def scale_note(self) -> str | None:
        return self.claim.scale_note(self.profile)


def evaluate(claim: Claim, profile: str, executor: LocalExecutor,
             params: dict[str, Any] | None = None) -> ClaimOutcome:
    """Train (or read from the store) the claim's runs and assess them."""
    start = time.perf_counter()
    params = claim.params(profile) if params is None else params
    specs = claim.specs(params)
    results = executor.run(specs, desc=claim.id)
    assessment = claim.assess(params, results)
    return ClaimOutcome(claim=claim, profile=profile, params=params, assessment=assessment,
                        run_keys=[s.key() for s in specs],
                        elapsed_s=time.perf_counter() - start)
