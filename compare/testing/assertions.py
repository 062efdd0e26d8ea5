"""Assertions for property tests: a theory value against an estimate, a claim at a point.

:func:`assert_close` is the project's one theory-vs-estimate check
(:func:`attnverify.compare.stats.compare`: ``|estimate - theory| <= atol + rtol |theory|``
elementwise) turned into an assertion that names the worst element. :func:`assert_claim_holds`
evaluates a claim exactly as ``verify`` does (its runs through a run store, its own Monte Carlo
through the memo cache) and fails with the claim's explanation and the ``verify`` command that
reproduces the verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from attnverify.compare.stats import Comparison, compare
from attnverify.theory.prediction import Prediction

if TYPE_CHECKING:
    from attnverify.compare.evaluation.verify import ClaimOutcome
    from attnverify.empirics import Executor, RunStore


def assert_close(theory: ArrayLike | Prediction, estimate: ArrayLike, rtol: float = 0.0,
                 atol: ArrayLike = 0.0, *, what: str = "estimate") -> Comparison:
    """Assert ``|estimate - theory| <= atol + rtol |theory|`` elementwise (``atol`` may be per
    element); ``theory`` may be a :class:`~attnverify.theory.prediction.Prediction` (its value
    is compared, its equation named on failure). A scalar theory is compared with every
    element of ``estimate``; otherwise the shapes must match (ValueError). Returns the
    :class:`~attnverify.compare.stats.Comparison`; raises AssertionError naming ``what``, the
    worst element, both values there and the tolerance."""
    equation = ""
    if isinstance(theory, Prediction):
        equation = f" ({theory.equation})"
        theory = theory.value
        if isinstance(theory, dict):
            raise TypeError(f"the prediction's value is a dict (keys {', '.join(theory)}): "
                            f"compare one entry at a time")
    t, e = np.asarray(theory, dtype=float), np.asarray(estimate, dtype=float)
    if t.ndim == 0:  # one predicted value against a history or a batch of measurements
        t = np.broadcast_to(t, e.shape)
    result = compare(t, e, rtol=rtol, atol=atol)
    if not result.passed:
        at = result.worst_index
        raise AssertionError(
            f"{what} differs from theory{equation}: theory {t[at]:.6g}, {what} {e[at]:.6g}; "
            f"{result.describe()}")
    return result


def assert_claim_holds(claim_id: str, profile: str = "smoke",
                       cache: str | Path | RunStore | Executor | None = None,
                       **point: Any) -> ClaimOutcome:
    """Evaluate claim ``claim_id`` at ``point`` (values of dimensions of its space; the
    dimensions not given take their first value, the front of the dimension) at ``profile``,
    and return the outcome when the verdict is ``confirmed``; AssertionError with the verdict,
    its reason, the claim's explanation and the ``verify`` command that reproduces it
    otherwise. Without a point the claim is evaluated at the profile's defaults, as ``verify``
    evaluates it. ``cache``: a run store directory, a :class:`~attnverify.empirics.RunStore` or
    an :class:`~attnverify.empirics.Executor` (the plugin's ``attnverify_executor``); None: the
    default cache directory, as ``verify``. ValueError for an unknown claim or profile, or a
    point outside the claim's space."""
    from attnverify.compare.claim import Verdict
    from attnverify.compare.evaluation.falsify import verify_command
    from attnverify.compare.evaluation.verify import evaluate, plan_params
    from attnverify.compare.registry import select
    from attnverify.compare.runs.tidy import store_of
    from attnverify.empirics import Executor, LocalExecutor

    claim = select(claim_id=claim_id)[0]
    params = claim.params(profile)  # ValueError for an unknown profile
    overrides: dict[str, Any] = {}
    if point:
        overrides = claim.point_params(_full_point(claim_id, claim.space, point))
        params = plan_params(claim, profile, point=overrides)
    if isinstance(cache, Executor):
        outcome = evaluate(claim, profile, cache, params)
    else:  # one worker, no progress bar: a test's output stays clean
        with LocalExecutor(store_of(cache), workers=1, progress=False) as executor:
            outcome = evaluate(claim, profile, executor, params)
    a = outcome.assessment
    if a.verdict != Verdict.CONFIRMED:
        where = (", ".join(f"{k} = {v!r}" for k, v in point.items()) if point
                 else "the profile's defaults")
        raise AssertionError(
            f"{claim_id} is {a.verdict} ({a.reason}) at {where} ({profile} profile): "
            f"{a.explanation}\nreproduce: {verify_command(claim_id, profile, overrides)}")
    return outcome


def _full_point(claim_id: str, space: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    """``point`` checked against ``space`` and completed with the front of every dimension it
    does not give (each given value replaced by the dimension's own, equal value)."""
    if not space:
        raise ValueError(f"claim {claim_id} declares no parameter space: call it without a "
                         f"point (its profile's defaults)")
    unknown = sorted(set(point) - set(space))
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: not a dimension of {claim_id}'s space; "
                         f"accepted: {', '.join(space)}")
    full = {}
    for name, dim in space.items():
        if name not in point:
            full[name] = dim.bounds()[0]
            continue
        value = point[name]
        if not dim.contains(value):
            raise ValueError(f"{name} = {value!r} is outside {claim_id}'s space: "
                             f"{dim.describe()}")
        full[name] = next((v for v in dim.values if v == value), value)
    return full
