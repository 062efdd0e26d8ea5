"""What a ``verify`` would train, before it trains anything (``attnverify verify --dry-run``).

Per claim: its first-stage runs (``Claim.specs`` at the profile's parameters), how many are in
the run store, and an estimate of the CPU time of the missing ones. The estimate is measured,
not modelled: a missing run's ``cost_estimate`` times the seconds per unit of cost measured on
the stored runs of its model family whose cost is nearest to its own (the median over the runs
of that cost). A family with no stored run is timed from its reference speed
(``ModelConfig.seconds_per_cost``, measured on a 2-core laptop-class CPU; a family without one
gets no estimate); a run more than :data:`EXTRAPOLATION` times away in cost from every stored
run of its family is flagged (larger models usually use the CPU better, so such an estimate is
rather an upper bound).
A claim whose runs would train no step where its profile's runs train (``--param steps=0``)
plans none: verify reports it "not testable here" without running them. Claims that add runs
in stages (``Claim.staged``, e.g. Snell's §5 protocol) are replayed from the store as verify
would run them: while every run of a stage is stored, its results decide the next stage
(``Claim.followup``). The plan then shows the runs known so far and the
missing ones of the first stage the store does not complete; the stages after it depend on
results not yet trained. The store is only read (a damaged entry counts as missing and stays
where it is).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from attnverify.compare.claim import Claim
from attnverify.compare.evaluation.verify import MAX_STAGES, plan_params, untrained
from attnverify.compare.groups import Specs, flatten, staged_results
from attnverify.empirics import RunResult, RunSpec, RunStore
from attnverify.empirics.store.run_store import CorruptEntryError


@dataclass
class ClaimPlan:
    claim_id: str
    runs: int
    cached: int
    missing: list[RunSpec] = field(default_factory=list)
    staged: bool = False
    """The claim may ask for more runs after these, depending on their results."""
    stage: int = 1
    """The stage the missing runs belong to (1: the first; later ones replayed from the store)."""
    note: str = ""
    """``Claim.stage_note`` on the stored results of the stages before ``stage``."""
    keys: list[str] = field(default_factory=list)
    """The key of every run counted in ``runs``, stored or not (``runs pack --profile``)."""
    seed_plan: str = ""
    """``Claim.seed_plan``: expected and maximum seeds where results decide them."""


EXTRAPOLATION = 4.0
"""A run whose cost is further than this factor from every stored run of its family gets a
flagged estimate."""


def measured_rates(store: RunStore) -> dict[str, dict[float, float]]:
    """Model kind -> {cost: median measured seconds per unit of ``RunSpec.cost_estimate``} over
    the stored runs (unreadable entries are skipped, and so are runs with ``stop_when``: they
    may have trained fewer steps than their cost counts, so their speed would read too high;
    an estimate for such a run is the time of the whole run, an upper bound)."""
    rates: dict[str, dict[float, list[float]]] = {}
    for key in store.keys():  # noqa: SIM118 (a store, not a dict)
        try:
            meta = store.metadata(key)
            spec = RunSpec.from_dict(meta["spec"])
            seconds = float(meta["wall_time_s"])
        except (CorruptEntryError, KeyError, ValueError, TypeError):  # says nothing of speed
            continue
        if seconds > 0 and spec.stop_when is None:
            cost = spec.cost_estimate()
            rates.setdefault(spec.model.kind, {}).setdefault(cost, []).append(seconds / cost)
    return {kind: {cost: statistics.median(values) for cost, values in by_cost.items()}
            for kind, by_cost in rates.items()}


@dataclass
class Estimate:
    seconds: float = 0.0
    unknown: int = 0
    """Runs of a family with no stored run and no reference speed."""
    reference: int = 0
    """Runs timed from their family's reference speed (``ModelConfig.seconds_per_cost``):
    no stored run of their family."""
    extrapolated: float = 1.0
    """The largest factor between a run's cost and the nearest stored cost of its family."""
    stopping: int = 0
    """Runs with a stop rule (``RunSpec.stop_when``), counted whole: they may end sooner."""

    def text(self) -> str:
        out = duration(self.seconds)
        if self.extrapolated > EXTRAPOLATION:
            out = f"<= {out} (from runs {self.extrapolated:.0f}x cheaper)"
        if self.reference:
            out += f" ({self.reference} runs timed from reference speeds)"
        return out + (f" + {self.unknown} runs without estimate" if self.unknown else "")


def estimate(specs: Sequence[RunSpec], rates: dict[str, dict[float, float]],
             done: dict[str, float] | None = None) -> Estimate:
    """Estimated CPU seconds of ``specs`` (see the module docstring); ``done`` maps the key of
    a run with a checkpoint to the fraction of its steps trained, which is not counted."""
    out = Estimate()
    for spec in specs:
        by_cost = rates.get(spec.model.kind)
        cost = spec.cost_estimate()
        left = 1.0 - done.get(spec.key(), 0.0) if done else 1.0
        out.stopping += spec.stop_when is not None
        if not by_cost:
            if spec.model.seconds_per_cost is not None:
                out.seconds += spec.time_estimate() * left
                out.reference += 1
            else:
                out.unknown += 1
            continue
        nearest = min(by_cost, key=lambda c: abs(math.log(c / cost)))
        out.seconds += cost * left * by_cost[nearest]
        out.extrapolated = max(out.extrapolated, cost / nearest, nearest / cost)
    return out


def plan(claims: Sequence[Claim], profile: str, store: RunStore,
         overrides: dict[str, Any] | None = None,
         points: dict[str, dict[str, Any]] | None = None,
         place: Callable[[RunSpec], RunSpec] = lambda spec: spec) -> list[ClaimPlan]:
    """The runs of each claim at its verify parameters known before training (the first
    stage; for a claim in stages, also the stages the store decides) and which of them the
    store lacks (``place`` puts a spec on the executor's device, as verify does)."""
    points = points or {}
    plans = []
    for claim in claims:
        params = plan_params(claim, profile, overrides, points.get(claim.id))
        if claim.not_run(params) is not None:  # verify runs none of them
            plans.append(ClaimPlan(claim.id, 0, 0, seed_plan=f"not run at these parameters "
                                   f"(train = false: the {profile} profile leaves it out; "
                                   f"--claim {claim.id} --param train=true trains it); "
                                   f"nothing to train"))
            continue
        if untrained(claim, profile, params) is not None:
            plans.append(ClaimPlan(claim.id, 0, 0, seed_plan="not testable here: its runs "
                                   "would train no step; nothing to train"))
            continue
        plans.append(_replay(claim, params, store, place))
        plans[-1].seed_plan = claim.seed_plan(params)
    return plans


@dataclass
class FirstStages:
    """The first-stage runs of some claims at a profile (:func:`first_stages`)."""

    runs: int
    """Distinct runs (claims share runs)."""
    missing: list[RunSpec]
    """Those the store lacks."""
    staged: bool
    """Some of the claims may add runs after these, decided by their results."""


def first_stages(claims: Sequence[Claim], profile: str, store: RunStore,
                 overrides: dict[str, Any] | None = None,
                 place: Callable[[RunSpec], RunSpec] = lambda spec: spec) -> FirstStages:
    """The claims' first-stage runs at ``profile`` (its defaults, with ``overrides``) and those
    the store lacks; later stages are not replayed (a fraction of a second, where :func:`plan`
    of a stored full profile reads every stored result). A claim's ValueError (e.g. a corpus
    too short for the profile's windows) propagates."""
    known: dict[str, RunSpec] = {}
    staged = False
    for claim in claims:
        params = plan_params(claim, profile, overrides)
        if claim.not_run(params) is None and untrained(claim, profile, params) is None:
            known.update((s.key(), s) for s in map(place, claim.checked_specs(params)))
            staged = staged or claim.staged(params)
    return FirstStages(len(known), [s for key, s in known.items() if not store.has(key)],
                       staged)


def other_profile_line(profile: str, stages: FirstStages, rates: dict[str, dict[float, float]],
                       workers: int, done: dict[str, float] | None = None,
                       params_given: bool = False) -> str:
    """The dry run's line on what another ``profile`` than the one planned would cost: its
    first stages at its defaults (``params_given``: say that ``--param`` is not applied
    there); ``done`` as in :func:`plan_table`."""
    total = estimate(stages.missing, rates, done)
    cost = (f"{len(stages.missing)} to train: CPU time {total.text()}, about "
            f"{duration(total.seconds / workers)} on {workers} worker(s)"
            if stages.missing else "nothing to train")
    later = (f"; claims in stages add runs after these, not counted (verify --profile "
             f"{profile} --dry-run counts them)" if stages.staged else "")
    where = "its defaults, --param not applied" if params_given else "its defaults"
    return (f"At {profile} ({where}): {stages.runs} first-stage runs, "
            f"{stages.runs - len(stages.missing)} cached, {cost}{later}")


def _replay(claim: Claim, params: dict[str, Any], store: RunStore,
            place: Callable[[RunSpec], RunSpec]) -> ClaimPlan:
    """One claim's plan: its first stage, then each later stage the stored results decide
    (module docstring)."""
    batch = [place(s) for s in claim.checked_specs(params)]
    known = {s.key(): s for s in batch}
    if not claim.staged(params):
        missing = [s for k, s in known.items() if not store.has(k)]
        return ClaimPlan(claim.id, len(known), len(known) - len(missing), missing,
                         keys=list(known))
    results: list[RunResult] = []  # every stage's results in spec order, as verify passes them
    stages: list[Specs] = [claim.specs(params)]
    for stage in range(1, MAX_STAGES + 1):
        known.update((s.key(), s) for s in batch)
        stored = [_stored(store, s) for s in batch]
        missing = list({s.key(): s for s, r in zip(batch, stored, strict=True)
                        if r is None}.values())
        if missing:
            return ClaimPlan(claim.id, len(known), len(known) - len(missing), missing,
                             staged=True, stage=stage,
                             note=(claim.stage_note(params, staged_results(stages[:-1], results))
                                   if results else ""),
                             keys=list(known))
        results += stored  # type: ignore[arg-type]  # none is None here
        asked = claim.followup(params, staged_results(stages, results))
        batch = [place(s) for s in flatten(asked)]
        stages.append(asked)
        if not batch:  # every stage is stored: the claim is complete
            return ClaimPlan(claim.id, len(known), len(known), stage=stage, keys=list(known))
    raise RuntimeError(f"{claim.id}: more than {MAX_STAGES} stages replayed from the store; a "
                       f"followup must end")


def _stored(store: RunStore, spec: RunSpec) -> RunResult | None:
    """The stored result of ``spec``, None when missing or damaged (left in place: a dry run
    writes nothing)."""
    try:
        return store.get(spec.key())
    except CorruptEntryError:
        return None


def duration(seconds: float) -> str:
    """``seconds`` as '42 s', '12 min' or '3.4 h'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def plan_table(plans: Sequence[ClaimPlan], rates: dict[str, dict[float, float]],
               workers: int, done: dict[str, float] | None = None) -> str:
    """The dry-run table: per claim runs, cached, to train and estimated CPU time; a total
    over distinct runs (claims share runs) with the wall time on ``workers`` workers. ``done``:
    the fraction trained of each run that resumes from a checkpoint (not counted again)."""
    done = done or {}
    width = max([len(p.claim_id) for p in plans] + [5])
    lines = [f"{'claim':<{width}}  {'runs':>5}  {'cached':>6}  {'to train':>8}  est. CPU time"]
    for p in plans:
        lines.append(f"{p.claim_id:<{width}}  {p.runs:>5}  {p.cached:>6}  "
                     f"{len(p.missing):>8}  {estimate(p.missing, rates, done).text()}"
                     f"{'  (+ stages)' if p.staged else ''}")
    for p in plans:
        if p.seed_plan:
            lines.append(f"{p.claim_id}: {p.seed_plan}")
    for p in plans:
        if p.staged and p.stage > 1:
            lines.append(f"{p.claim_id}: stage {p.stage} to train, the stages before it replayed "
                         f"from the store" + (f" ({p.note})" if p.note else ""))
    missing = list({s.key(): s for p in plans for s in p.missing}.values())
    total = estimate(missing, rates, done)
    wall = dataclasses.replace(total, seconds=total.seconds / workers)
    lines.append(f"\n{len(missing)} distinct runs to train: CPU time {total.text()}; on "
                 f"{workers} worker(s) {wall.text()}")
    if resuming := [done[s.key()] for s in missing if s.key() in done]:
        lines.append(f"{len(resuming)} of them resume from checkpoints, "
                     f"{100 * sum(resuming) / len(resuming):.0f}% of their steps done on "
                     f"average (not counted in the time)")
    if total.stopping:
        lines.append(f"{total.stopping} of them end once their stop rule is met (a run that "
                     f"has learned), which may be long before their last step: counted whole, "
                     f"an upper bound")
    if total.extrapolated > EXTRAPOLATION:
        lines.append("<=: estimated from cheaper runs of the same model family (larger models "
                     "use the CPU better, so the time is likely lower)")
    if any(p.staged for p in plans):
        lines.append("(+ stages): the claim may add runs after these, decided by their "
                     "results (not counted)")
    return "\n".join(lines)

