"""Evaluate claims: specs -> executor (through the run store) -> assessment -> outcome.

``evaluate_all`` gathers the runs of every claim first and hands them to the executor as one
batch, so claims that read the same runs share them and the workers stay busy across claim
boundaries; a claim in stages (``Claim.followup``) then adds the runs its first results call
for, batch after batch; then each claim is assessed from its own results. Claims' own
computations (Monte Carlo, the construction) are cached next to the run store
(:mod:`compare.memo`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnverify.compare.claim import Assessment, Claim, Verdict
from attnverify.compare.decision import one_sided_design
from attnverify.compare.groups import GroupedResults, Specs, flatten, staged_results
from attnverify.compare.measurement import Tolerance
from attnverify.compare.memo import rooted
from attnverify.compare.params import Params, coerce_field
from attnverify.compare.protocol import Reason

if TYPE_CHECKING:  # annotations only: importing the API loads no torch
    from matplotlib.figure import Figure

    from attnverify.empirics import Executor, RunResult, RunSpec

log = logging.getLogger("attnverify.verify")


@dataclass
class ClaimOutcome:
    """One claim evaluated at one point, with everything the report needs.

    ``elapsed_s`` is the claim's compute time: the recorded training time of its runs (whether
    computed now or read from the cache) plus the time to assess them. ``results`` are the runs
    it was assessed from, kept to draw its figures (:meth:`figures`); None where nothing was
    assessed (runs that would train no step) and there is nothing to draw. ``memo_root`` is
    where the claim's own computations were cached (:mod:`compare.memo`), so that a figure
    that reads one finds it there.
    """

    claim: Claim
    profile: str
    params: dict[str, Any]
    assessment: Assessment
    run_keys: list[str]
    elapsed_s: float
    results: GroupedResults | None = field(default=None, repr=False)
    memo_root: Path | None = field(default=None, repr=False)
    _figures: dict[str, Figure] | None = field(default=None, init=False, repr=False,
                                               compare=False)

    @property
    def scale_note(self) -> str | None:
        return self.claim.scale_note(self.profile)

    def figures(self) -> dict[str, Figure]:
        """The claim's figures by name (:meth:`Claim.figures`), drawn on the first call and
        kept: the report's figure files, ``report.md`` and ``report.html`` draw them once."""
        if self._figures is None:
            if self.results is None:
                self._figures = {}
            else:
                with rooted(self.memo_root):
                    self._figures = self.claim.figures(self.params, self.results,
                                                       self.assessment)
        return self._figures


def _assess(claim: Claim, profile: str, params: dict[str, Any], specs: Sequence[RunSpec],
            results: Sequence[RunResult], memo_root: Path | None) -> ClaimOutcome:
    start = time.perf_counter()
    results = claim.results_for(params, results)
    assessment = one_sided_design(claim.assess(params, results),
                                  claim.reachable_verdicts(params))
    elapsed = time.perf_counter() - start + sum(r.wall_time_s for r in results)
    return ClaimOutcome(claim=claim, profile=profile, params=params, assessment=assessment,
                        run_keys=[s.key() for s in specs], elapsed_s=elapsed,
                        results=results, memo_root=memo_root)


def untrained(claim: Claim, profile: str, params: dict[str, Any]) -> str | None:
    """Why the claim cannot be tested at ``params`` when runs that train at the profile's own
    parameters train no step there (``--param steps=0``): untrained networks cannot show what
    training does, so the verdict is "not testable here", never one decided from them. None
    otherwise; a claim whose runs train no step by design (a statement about initialisation,
    or an untrained baseline beside trained runs) is assessed as usual."""
    specs = claim.checked_specs(params)
    idle = sum(spec.steps == 0 for spec in specs)
    if not idle:
        return None
    own = [spec.steps for spec in flatten(claim.specs(claim.params(profile)))]
    if not any(own) or (0 in own and idle < len(specs)):
        return None
    return (f"{idle} of the claim's {len(specs)} runs train no step at these parameters "
            f"(steps = 0), where the {profile} profile's runs train (up to {max(own)} steps): "
            f"untrained networks cannot show what the claim is about. Give steps >= 1.")


def _not_testable(claim: Claim, profile: str, params: dict[str, Any], why: str,
                  left_out: bool) -> ClaimOutcome:
    """The outcome of a claim whose runs are not run (``left_out`` by its parameters,
    :meth:`Claim.not_run`, or :func:`untrained`): "not testable here" with the reason;
    ``details`` marks runs that would train no step (``untrained``), which the report's seed
    count names."""
    assessment = Assessment(
        verdict=Verdict.INCONCLUSIVE, reason=Reason.NOT_TESTABLE, theory=None, empirical=None,
        statistic=claim.protocol.test, tolerance=Tolerance("nothing was measured"),
        explanation=why, details={} if left_out else {"untrained": True})
    return ClaimOutcome(claim=claim, profile=profile, params=params, assessment=assessment,
                        run_keys=[], elapsed_s=0.0)


def evaluate(claim: Claim, profile: str, executor: Executor,
             params: dict[str, Any] | None = None) -> ClaimOutcome:
    """Train (or read from the store) one claim's runs and assess them."""
    params = claim.params(profile) if params is None else params
    return evaluate_plans([(claim, params)], profile, executor, desc=claim.id)[0]


def plan_params(claim: Claim, profile: str, overrides: dict[str, Any] | None = None,
                point: dict[str, Any] | None = None) -> dict[str, Any]:
    """The parameters a claim is evaluated at: the profile's defaults, then the ``overrides``
    the claim lists as ``overridable`` (others ignore them), then the ``point``."""
    overrides = overrides or {}
    return (claim.params(profile) | {k: v for k, v in overrides.items() if k in claim.overridable}
            | (point or {}))


def as_default_type(value: Any, default: Any) -> Any:
    """``value`` in the shape of the parameter's ``default``: a list becomes a tuple where the
    default is a tuple, an integer a float where the default is a float; anything else as is."""
    if isinstance(default, tuple) and isinstance(value, list):
        return tuple(value)
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def checked_point(claim: Claim, profile: str, values: dict[str, Any],
                  overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """``values`` as a point of ``claim`` (``verify --param``, ``attnverify.verify(params=)``):
    each name one of the profile's parameters, each value shaped like the profile's
    (:func:`as_default_type`), the whole checked by ``Claim.checked_specs`` before anything is
    trained. ValueError naming the unknown parameter and the accepted ones; the claim's own
    ValueError or TypeError for a value it refuses."""
    defaults = claim.params(profile)
    unknown = [name for name in values if name not in defaults]
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r} of {claim.id}; accepted: "
                         f"{', '.join(defaults)}")
    declared = getattr(claim, "defaults", {}).get(profile)  # a duck-typed claim may have none
    if isinstance(declared, Params):  # typed: each value coerced and checked by its field,
        point = {name: coerce_field(type(declared), name, value, claim.id)
                 for name, value in values.items()}
        dataclasses.replace(declared, **point)  # then the whole by the class's __post_init__
    else:
        point = {name: as_default_type(value, defaults[name]) for name, value in values.items()}
    claim.checked_specs(plan_params(claim, profile, overrides, point))
    return point


def evaluate_all(claims: Sequence[Claim], profile: str, executor: Executor,
                 overrides: dict[str, Any] | None = None,
                 points: dict[str, dict[str, Any]] | None = None) -> list[ClaimOutcome]:
    """Evaluate ``claims`` at their ``profile`` defaults with one executor batch for all runs;
    ``overrides`` replace the parameters a claim lists as ``overridable`` (others ignore them);
    ``points`` maps a claim id to parameters that replace its defaults (``verify --param``)."""
    points = points or {}
    plans = [(claim, plan_params(claim, profile, overrides, points.get(claim.id)))
             for claim in claims]
    return evaluate_plans(plans, profile, executor, desc="training")


def evaluate_plans(plans: Sequence[tuple[Claim, dict[str, Any]]], profile: str,
                   executor: Executor, desc: str) -> list[ClaimOutcome]:
    """Each claim at its parameters, in order: the runs of all in one executor batch (stage
    after stage), then each assessed; a claim whose runs its parameters leave out
    (:meth:`Claim.not_run`) or that would train nothing (:func:`untrained`) is "not testable
    here" without running them."""
    left_out = {claim.id: why for claim, params in plans
                if (why := claim.not_run(params)) is not None}
    untestable = left_out | {claim.id: why for claim, params in plans if claim.id not in left_out
                             and (why := untrained(claim, profile, params)) is not None}
    specs, results = _run_stages([(c, p) for c, p in plans if c.id not in untestable],
                                 executor, desc=desc)
    root = executor.store.root
    with rooted(root):
        return [_not_testable(claim, profile, params, untestable[claim.id],
                              claim.id in left_out)
                if claim.id in untestable
                else _assess(claim, profile, params, specs[claim.id], results[claim.id], root)
                for claim, params in plans]


MAX_STAGES = 1000
"""A guard against a followup that never ends (the §5 protocol needs a few dozen at most)."""


def _run_stages(plans: Sequence[tuple[Claim, dict[str, Any]]], executor: Executor,
                desc: str) -> tuple[dict[str, list[RunSpec]], dict[str, GroupedResults]]:
    """Every claim's runs, stage after stage: the specs of all claims go to the executor as one
    batch, then each claim's ``followup`` may ask for more, until none does. Every spec is
    placed on the executor's device; each claim's results come back readable by the names of
    its stages' groups."""
    specs = {claim.id: [executor.place(s) for s in claim.checked_specs(params)]
             for claim, params in plans}
    stages: dict[str, list[Specs]] = {claim.id: [claim.specs(params)] for claim, params in plans}
    keys = {claim_id: [s.key() for s in group] for claim_id, group in specs.items()}  # hashed once
    labels: dict[str, list[str]] = {}
    for claim_id, group in keys.items():
        for key in group:
            labels.setdefault(key, []).append(claim_id)
    batch = [s for group in specs.values() for s in group]
    found: dict[str, RunResult] = {}
    for stage in range(1, MAX_STAGES + 1):
        if not batch:
            return specs, {claim_id: staged_results(stages[claim_id], [found[k] for k in group])
                           for claim_id, group in keys.items()}
        for result in executor.run(batch, desc=desc,
                                   labels={k: ", ".join(v) for k, v in labels.items()}):
            found[result.key] = result
        batch = []
        for claim, params in plans:
            so_far = staged_results(stages[claim.id], [found[k] for k in keys[claim.id]])
            asked = claim.followup(params, so_far)
            more = [executor.place(s) for s in flatten(asked)]
            if more:
                stages[claim.id].append(asked)
                note = claim.stage_note(params, so_far)
                log.info("%s: stage %d, %d more runs%s", claim.id, stage + 1, len(more),
                         f" ({note})" if note else "")
            new_keys = [s.key() for s in more]
            if set(new_keys) & set(keys[claim.id]):
                raise RuntimeError(f"{claim.id}: followup asked again for runs it has (a "
                                   f"followup must return only new runs, then none)")
            specs[claim.id] += more
            keys[claim.id] += new_keys
            for key in new_keys:
                labels.setdefault(key, []).append(claim.id)
            batch += more
    raise RuntimeError(f"claims {', '.join(c.id for c, _ in plans)} asked for more than "
                       f"{MAX_STAGES} stages of runs; a followup must end")
