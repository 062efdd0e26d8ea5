"""A claim's verdict at another profile, from stored runs only (docs/methodology.md, "Quick
against full").

The report of a ``quick`` verification shows, beside each training claim's verdict, its
verdict at ``full`` where every run that profile needs is already in the run store (trained
before, or unpacked from ``paper_figures/runs/`` with ``attnverify runs unpack``): nothing is
trained for it. A verdict that differs between the two profiles is flagged, and the claim's
section gives the full assessment's explanation, which says why.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from attnverify.compare.claim import Claim
from attnverify.compare.evaluation.plan import plan
from attnverify.compare.evaluation.verify import ClaimOutcome, evaluate_all
from attnverify.empirics import Executor, RunResult, RunSpec, RunStore

log = logging.getLogger("attnverify.verify")


class StoredRunsOnly(Executor):
    """An executor that reads the store and never trains: asked for a missing run, it raises
    (the caller checks completeness first, with :func:`compare.evaluation.plan.plan`)."""

    def _compute(self, missing: Sequence[RunSpec], bar: Any) -> dict[str, RunResult]:
        raise RuntimeError(f"{len(missing)} run(s) missing from the store; the verdict at "
                           f"this profile needs them trained first")


def stored_outcomes(claims: Sequence[Claim], profile: str, store: RunStore,
                    overrides: dict[str, Any] | None = None,
                    device: str | None = None) -> dict[str, ClaimOutcome]:
    """Claim id -> outcome at ``profile`` (its defaults, with ``overrides``) for the training
    claims whose runs at that profile are all stored (every stage included, on ``device``);
    the others are left out. The outcomes keep no runs: their verdicts are shown, never their
    figures."""
    executor = StoredRunsOnly(store, progress=False, device=device)
    complete = [claim for claim, p in zip(claims, plan(claims, profile, store, overrides,
                                                        place=executor.place), strict=True)
                if p.runs and not p.missing]
    if not complete:
        return {}
    log.info("verdicts at %s from stored runs: %s", profile,
             ", ".join(claim.id for claim in complete))
    outcomes = evaluate_all(complete, profile, executor, overrides)
    return {outcome.claim.id: replace(outcome, results=None) for outcome in outcomes}
