"""Falsification search: where in its parameter space does a claim stop holding?

``falsify`` runs ``hypothesis.find`` over the claim's :attr:`~compare.claim.Claim.space` for a
point whose verdict is ``refuted`` and shrinks it toward the front of every dimension (the
smallest, cheapest configuration, or the one nearest the paper's regime: each claim's space says
which). Every point is evaluated exactly as ``verify`` evaluates one (its runs through the run
store, its Monte Carlo through the memo cache). The search is seeded (``seed``): the same seed
proposes the same points, so a repeated or interrupted search replays them from the cache and
computes only what is missing. Hypothesis' example database is therefore switched off: nothing is
written outside the cache directory. The search is bounded twice: ``budget`` distinct points at
most, and ``max_cost`` seconds of evaluation at most (a point not evaluated for lack of budget
counts as not refuted, and the result says that the search was cut).

The search is steered toward the decision boundary: every evaluated point reports its
:func:`margins` to ``hypothesis.target`` (the verdict as a score and, where the claim's primary
test has a p-value, its distance from the confirmation boundary ``p = alpha``), so that
hypothesis' targeting phase mutates the points nearest a refutation first.
"""

from __future__ import annotations

import json
import math
import random
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, find, settings, target
from hypothesis.errors import NoSuchExample

from attnverify.compare.claim import Assessment, Claim, Verdict
from attnverify.compare.evaluation.verify import evaluate, plan_params
from attnverify.compare.report.text import jsonable
from attnverify.compare.space import covered, space_strategy
from attnverify.empirics import Executor
from attnverify.empirics.store.output_paths import write_atomic
from attnverify.empirics.versions import package_version


@dataclass
class EvaluatedPoint:
    """One point of the search and what the claim concluded there."""

    point: dict[str, Any]
    params: dict[str, Any]
    """The claim parameters the point sets (``verify --param``)."""
    verdict: str
    value: Any
    explanation: str
    elapsed_s: float
    run_keys: list[str] = field(default_factory=list)
    margins: dict[str, float] = field(default_factory=dict)
    """What the search steered by at this point (:func:`margins`)."""


@dataclass
class FalsifyResult:
    claim_id: str
    profile: str
    seed: int
    budget: int
    max_cost: float | None
    space: dict[str, Any]
    evaluated: list[EvaluatedPoint]
    counterexample: EvaluatedPoint | None
    cut: str | None
    """Why the search stopped early ('budget', 'max-cost'), None when hypothesis finished."""
    elapsed_s: float
    region: dict[str, Any] = field(default_factory=dict)
    """Per dimension, the smallest and largest value evaluated."""
    code: str = ""
    """:func:`claim_version` of the code that searched."""

    @property
    def found(self) -> bool:
        return self.counterexample is not None

    def still_holds(self) -> dict[str, Any]:
        """Per dimension, the evaluated value nearest the counterexample (on either side, in
        the dimension's order) at which the claim was not refuted, all other dimensions equal
        to the counterexample's: the other side of the boundary, as far as it was seen."""
        if self.counterexample is None:
            return {}
        c = self.counterexample.point
        out = {}
        for name, dim in self.space.items():
            order = dim.get("values")
            rank = order.index if order else (lambda v: v)
            holds = [p.point[name] for p in self.evaluated
                     if p.verdict != Verdict.REFUTED
                     and all(p.point[k] == c[k] for k in c if k != name)]
            if holds:
                out[name] = min(holds, key=lambda v: abs(rank(v) - rank(c[name])))
        return out

    def reproduce(self) -> str | None:
        """The ``verify`` command that evaluates the claim at the counterexample."""
        if self.counterexample is None:
            return None
        return verify_command(self.claim_id, self.profile, self.counterexample.params)

    def summary(self) -> str:
        """One paragraph: the counterexample, or none within the stated budget and region."""
        region = ", ".join(f"{k} in [{v[0]}, {v[1]}]" for k, v in self.region.items())
        n = len(self.evaluated)
        if self.counterexample is not None:
            c = self.counterexample
            point = ", ".join(f"{k} = {c.point[k]}" for k in self.space)
            text = (f"refuted at {point} (the smallest counterexample after shrinking, of {n} "
                    f"points evaluated)")
            if holds := self.still_holds():
                text += "; not refuted at the nearest point evaluated: " + ", ".join(
                    f"{k} = {v}" for k, v in holds.items())
            text += f". At the counterexample: {c.explanation}"
        else:
            text = (f"no counterexample within the budget: {n} points evaluated "
                    f"(region covered: {region or 'none'})")
        if self.cut:
            text += f"; the search was cut by its {self.cut} limit"
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(found=self.found, reproduce=self.reproduce(), still_holds=self.still_holds(),
                    summary=self.summary())
        return jsonable(data)


def verify_command(claim_id: str, profile: str, params: dict[str, Any]) -> str:
    """The ``attnverify verify`` command that evaluates a claim with ``params`` set."""
    words = ["attnverify", "verify", "--claim", claim_id, "--profile", profile]
    for name, value in params.items():
        words += ["--param", f"{name}={json.dumps(jsonable(value))}"]
    return shlex.join(words)


def falsify(claim: Claim, profile: str, executor: Executor, budget: int = 20, seed: int = 0,
            max_cost: float | None = None,
            log: Callable[[str], None] = lambda _: None) -> FalsifyResult:
    """Search ``claim.space`` for a refuted point (see the module docstring)."""
    if not claim.space:
        raise ValueError(f"claim {claim.id} declares no parameter space to search; claims that "
                         f"do: see 'attnverify claims --json' (\"space\")")
    if budget < 1:
        raise ValueError(f"budget must be an integer >= 1; got {budget}")
    if max_cost is not None and max_cost <= 0:
        raise ValueError(f"max-cost must be a number of seconds > 0; got {max_cost}")
    start = time.monotonic()
    seen: dict[str, EvaluatedPoint] = {}
    cut: list[str] = []
    # a claim built outside the registry (a test double) may declare no protocol
    alpha = getattr(getattr(claim, "protocol", None), "alpha", None)
    # a search trains what it evaluates, also where the profile leaves the claim's runs out
    forced = {"train": True} if claim.not_run(claim.params(profile)) is not None else {}

    def evaluate_point(point: dict[str, Any]) -> EvaluatedPoint | None:
        key = _point_key(point)
        if key in seen:
            return seen[key]
        if len(seen) >= budget:
            cut[:] = ["budget"]
            return None
        if max_cost is not None and time.monotonic() - start > max_cost:
            cut[:] = ["max-cost"]
            return None
        overrides = claim.point_params(point) | forced
        outcome = evaluate(claim, profile, executor, plan_params(claim, profile, point=overrides))
        a = outcome.assessment
        seen[key] = done = EvaluatedPoint(
            point=point, params=overrides, verdict=str(a.verdict),
            value=None if a.empirical is None else a.empirical.value, explanation=a.explanation,
            elapsed_s=outcome.elapsed_s, run_keys=outcome.run_keys,
            margins=margins(a, alpha))
        log(f"point {len(seen)}/{budget}: "
            + ", ".join(f"{k}={point[k]}" for k in claim.space) + f" -> {done.verdict}")
        return done

    def refuted(point: dict[str, Any]) -> bool:
        done = evaluate_point(point)
        if done is None:
            return False
        for label, value in done.margins.items():
            target(value, label=label)
        return done.verdict == Verdict.REFUTED

    config = settings(
        max_examples=budget, deadline=None, verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.generate, Phase.target, Phase.shrink), database=None)
    try:
        found = find(space_strategy(claim.space), refuted, settings=config,
                     random=random.Random(seed))
        counterexample = seen[_point_key(found)]
    except NoSuchExample:
        counterexample = None
        if len(seen) >= budget and not cut:  # hypothesis stopped at max_examples = budget
            cut.append("budget")
    return FalsifyResult(
        claim_id=claim.id, profile=profile, seed=seed, budget=budget, max_cost=max_cost,
        space={k: d.describe() for k, d in claim.space.items()},
        evaluated=list(seen.values()), counterexample=counterexample,
        cut=cut[0] if cut else None, elapsed_s=time.monotonic() - start,
        region=covered(claim.space, [p.point for p in seen.values()]),
        code=claim_version(claim))


VERDICT_SCORE = {Verdict.CONFIRMED: -1.0, Verdict.INCONCLUSIVE: 0.0, Verdict.REFUTED: 1.0}
"""The verdict as a score that rises toward a refutation."""
SMALLEST_P = 1e-300
"""p-values below this count as this (an observation for ``target`` must be finite)."""


def margins(assessment: Assessment, alpha: float | None) -> dict[str, float]:
    """What the search steers by (hypothesis raises each), every value larger nearer a
    refutation: ``verdict``, the :data:`VERDICT_SCORE`; and, where the assessment has the
    primary test's p-value toward H1 and the protocol an ``alpha``, ``log10(p/alpha)``: the
    margin to the confirmation boundary ``p = alpha`` (negative: confirmed with room to
    spare; positive: past the boundary, on the way to a refutation, which needs the test
    significant the other way, p toward H1 near 1)."""
    out = {"verdict": VERDICT_SCORE[Verdict(assessment.verdict)]}
    if assessment.p_value is not None and alpha:
        out["log10(p/alpha)"] = math.log10(max(assessment.p_value, SMALLEST_P) / alpha)
    return out


def claim_version(claim: Claim) -> str:
    """What a saved search records of the code that ran it: the package version and the
    claim's declared ``code_version`` (a search saved under another is stale)."""
    return f"{package_version()}/v{type(claim).code_version}"


def _point_key(point: dict[str, Any]) -> str:
    """A search point's identity (points are dicts: hypothesis hands out fresh ones)."""
    return json.dumps(jsonable(point), sort_keys=True)


def result_path(cache_root: Path, claim_id: str, profile: str) -> Path:
    """Where the last search of a claim at a profile is kept for the report."""
    return Path(cache_root) / "falsify" / f"{claim_id}.{profile}.json"


def save(result: FalsifyResult, *paths: Path) -> None:
    """Write the result's JSON to each path (atomically: a temporary file renamed)."""
    text = json.dumps(result.to_dict(), indent=1) + "\n"
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)


REQUIRED_KEYS = frozenset({"claim_id", "profile", "seed", "budget", "evaluated", "summary",
                           "found", "reproduce"})
"""What the report reads from a saved search; a file without them is skipped."""


def load_saved(cache_root: Path, claims: Sequence[Claim]) -> list[dict[str, Any]]:
    """The saved searches of ``claims``, at every profile searched (unreadable files are
    skipped: a report is never blocked by a damaged search result). Each gets ``stale``: True
    when it was saved by other code than the claim's current code (or says nothing of it)."""
    out = []
    folder = Path(cache_root) / "falsify"
    for claim in claims:
        for path in sorted(folder.glob(f"{claim.id}.*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if (isinstance(data, dict) and data.get("claim_id") == claim.id
                    and data.keys() >= REQUIRED_KEYS):
                data["stale"] = data.get("code") != claim_version(claim)
                out.append(data)
    return out
