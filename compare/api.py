"""The Python API of a verification: ``attnverify.verify(...)`` (docs/python-api.md).

The same verification as ``attnverify verify`` (docs/cli.md): the claims'
runs through the run store (:func:`compare.evaluation.verify.evaluate_all`), the saved falsification
searches and the verdicts at ``full`` from stored runs beside them (:func:`build_report`), as a
:class:`~compare.report.view.VerifyReport` instead of a directory and a printed table.

Library calls are safe in a plain script: by default (``workers=1``) every run trains in this
process. More workers are processes started with ``spawn``, which run the calling script again
from the top; outside ``if __name__ == "__main__":`` that is refused before anything starts,
with what to do (:mod:`compare.evaluation.script_guard`). Errors are Python exceptions: ValueError
naming the accepted values for an unknown claim, paper, profile or parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike, fspath
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnverify.compare.claim import Claim, check_profile
from attnverify.compare.evaluation.script_guard import (
    guard_message,
    reimported_main,
    unguarded_call,
)
from attnverify.compare.report.view import VerifyReport

if TYPE_CHECKING:
    from attnverify.compare.report.document import Report
    from attnverify.empirics import Executor, RunStore


def select_claims(claims: str | Sequence[str] | None = None,
                  paper: str | None = None) -> list[Claim]:
    """The claims named (one id or several; every claim of ``paper``, or every claim, when
    none is), in report order. ValueError naming the accepted values otherwise."""
    from attnverify.compare.registry import select_many

    if not isinstance(claims, str | None):
        if isinstance(claims, Mapping) or not isinstance(claims, Sequence):
            raise ValueError(f"claims must be a claim id, a sequence of ids or None (every "
                             f"claim); got {type(claims).__name__}")
        if not claims:
            raise ValueError("no claims selected: an empty sequence of ids (give ids, a "
                             "paper, or claims=None for every claim)")
        if bad := [c for c in claims if not isinstance(c, str)]:
            raise ValueError(f"claim ids are strings; got {bad[0]!r}")
    selected = select_many([claims] if isinstance(claims, str) else list(claims or []), paper)
    if not selected:
        raise ValueError(f"no claims for paper {paper!r} yet")
    return selected


def claim_points(claims: Sequence[Claim], profile: str,
                 params: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """``params`` as the points the claims are evaluated at: a mapping of claim id to
    parameters, or, with one claim selected, that claim's parameters; each checked by
    :func:`compare.evaluation.verify.checked_point` before anything trains."""
    from attnverify.compare.evaluation.verify import checked_point

    if not params:
        return {}
    by_id = {c.id: c for c in claims}
    if all(name in by_id for name in params):
        per_claim = {name: dict(values) for name, values in params.items()}
    elif len(claims) == 1:
        per_claim = {claims[0].id: dict(params)}
    else:
        raise ValueError(f"params belong to one claim: select one claim, or key them by claim "
                         f"id ({', '.join(by_id)})")
    return {claim_id: checked_point(by_id[claim_id], profile, values)
            for claim_id, values in per_claim.items()}


def build_report(claims: Sequence[Claim], profile: str, executor: Executor,
                 overrides: dict[str, Any] | None = None,
                 points: dict[str, dict[str, Any]] | None = None) -> Report:
    """Evaluate ``claims`` at ``profile`` (``points`` replace a claim's defaults) and make
    their report: the outcomes, the saved falsification searches of these claims and, below
    ``full``, each claim's verdict at full where its full runs are all stored (not for a claim
    evaluated at a point of its own)."""
    from attnverify.compare.evaluation.cross_profile import stored_outcomes
    from attnverify.compare.evaluation.falsify import load_saved
    from attnverify.compare.evaluation.verify import evaluate_all
    from attnverify.compare.report.document import Report
    from attnverify.empirics.versions import machine, versions

    points = points or {}
    outcomes = evaluate_all(claims, profile, executor, overrides, points)
    reference = {} if profile == "full" else stored_outcomes(
        [c for c in claims if c.id not in points], "full", executor.store, overrides,
        device=executor.device)
    return Report(profile=profile, versions=versions(), machine=machine(), outcomes=outcomes,
                  boundaries=load_saved(executor.store.root, claims), reference=reference)


MAX_WORKERS = 256
"""The most worker processes a verify starts (``workers=``, ``--workers``): each is a process
with its own torch and model, hundreds of MB; a typo must not fork thousands."""


def check_workers(workers: int | None) -> None:
    """``workers`` is None (every core) or an integer from 1 to :data:`MAX_WORKERS`, and more
    than one is refused from a script's top-level code outside its ``__main__`` guard
    (:mod:`compare.evaluation.script_guard`)."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"workers must be an integer >= 1 (or None: every core); got "
                         f"{workers!r}")
    if workers is not None and workers > MAX_WORKERS:
        raise ValueError(f"workers must be <= {MAX_WORKERS}: each worker is a process with its "
                         f"own torch and model (hundreds of MB); got {workers}")
    if reimported_main():
        raise RuntimeError(guard_message("attnverify.verify", workers, None))
    if workers != 1:
        site = unguarded_call()
        if site is not None:
            raise RuntimeError(guard_message("attnverify.verify", workers, site))


def verify(claims: str | Sequence[str] | None = None, *, paper: str | None = None,
           profile: str = "quick", cache: str | PathLike[str] | RunStore | None = None,
           workers: int | None = 1, params: Mapping[str, Any] | None = None,
           device: str | None = None, progress: bool = True, yes: bool = False
           ) -> VerifyReport:
    """Verify claims and return their report (docs/python-api.md).

    ``claims``: one claim id or several (see ``attnverify claims``); ``paper``: every claim of
    one paper (snell, musat, bao); neither: every claim. ``profile``: smoke, quick (default)
    or full. ``cache``: the run store (a directory or a ``RunStore``; default
    ``$ATTNVERIFY_CACHE``, else ``~/.cache/attnverify``); runs stored there are read, not
    trained again. ``workers``: 1 (default) trains in this process; more (None: every core)
    train in worker processes, which a script must start under
    ``if __name__ == "__main__":``. ``params``: with one claim, parameters replacing its
    profile's (``{"steps": 100}``); with several, keyed by claim id. ``device``: cpu or cuda.
    ``yes``: train even where the estimate of the training ahead is over an hour of wall time
    (as ``verify --yes``); without it such a call trains nothing and raises ValueError saying
    what it would train and for how long.

    ValueError for every value it refuses: an empty selection of claims, an unknown claim,
    paper, profile or parameter, ``workers`` outside 1 to :data:`MAX_WORKERS`, an empty
    ``cache`` path, a device torch cannot use, or the cost guard.
    """
    from attnverify.empirics import LocalExecutor
    from attnverify.empirics.execute.executor import ExecutorSetupError, check_device

    check_profile(profile)
    check_workers(workers)
    check_cache(cache)
    try:
        check_device(device)
    except ExecutorSetupError as exc:
        raise ValueError(str(exc)) from None
    selected = select_claims(claims, paper)
    points = claim_points(selected, profile, params)
    from attnverify.compare.evaluation.cost_guard import long_training
    from attnverify.compare.runs.tidy import store_of

    store = store_of(cache)
    store.check_layout()
    with LocalExecutor(store, workers=workers, progress=progress, device=device) as executor:
        ahead = None if yes else long_training(selected, profile, store, None, points,
                                                executor.workers, executor.place)
        if ahead is not None:
            raise ValueError(f"{ahead}; pass yes=True to go ahead (attnverify verify "
                             f"--dry-run shows the plan); nothing was trained")
        report = build_report(selected, profile, executor, points=points)
    return VerifyReport.from_report(report, cache=Path(store.root))


def check_cache(cache: str | PathLike[str] | RunStore | None) -> None:
    """An empty path is refused, not taken for the current directory (as ``--cache ""``)."""
    if isinstance(cache, str | PathLike) and fspath(cache) == "":
        raise ValueError("cache must name a directory; got an empty path")


def load_report(path: str | PathLike[str]) -> VerifyReport:
    """A report directory (or its ``report.json``) written by ``attnverify verify`` or
    :meth:`VerifyReport.save`, as a :class:`VerifyReport` (without figures)."""
    return VerifyReport.load(Path(path))
