"""When a verify asks before it trains: the estimate of the training ahead against
:data:`CONFIRM_ABOVE_S` of wall time (the CLI's ``--yes``, :func:`attnverify.verify`'s
``yes=True``). Light to import (the CLI's help text reads the threshold); the plan loads on
use."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnverify.compare.claim import Claim
    from attnverify.empirics import RunSpec, RunStore

CONFIRM_ABOVE_S = 3600.0
"""Estimated wall time (seconds, on the chosen workers) above which verify asks first."""


def long_training(claims: Sequence[Claim], profile: str, store: RunStore,
                  overrides: dict[str, Any] | None, points: dict[str, dict[str, Any]],
                  workers: int, place: Callable[[RunSpec], RunSpec]) -> str | None:
    """What a verify of ``claims`` would train and for how long, where its estimated wall time
    on ``workers`` is over :data:`CONFIRM_ABOVE_S`; None where it is shorter. The estimate is
    the dry run's (:mod:`attnverify.compare.evaluation.plan`): the first stages' missing runs,
    timed from the stored runs of their family; the wall time is their CPU time over the
    workers, or the longest run when that is longer."""
    from attnverify.compare.evaluation.plan import estimate, measured_rates, plan

    plans = plan(claims, profile, store, overrides or {}, points, place=place)
    missing = list({s.key(): s for p in plans for s in p.missing}.values())
    if not missing:
        return None
    rates = measured_rates(store)
    total = estimate(missing, rates)
    longest = max(estimate([spec], rates).seconds for spec in missing)
    wall = dataclasses.replace(total, seconds=max(total.seconds / workers, longest))
    if wall.seconds <= CONFIRM_ABOVE_S:
        return None
    return (f"this verify would train {len(missing)} runs, about {wall.text()} on {workers} "
            f"worker(s) (estimated; later stages not counted)")
