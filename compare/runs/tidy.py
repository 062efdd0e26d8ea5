"""Stored runs as a tidy pandas DataFrame (``attnverify.runs.frame``), the Python side of
``attnverify runs export``.

One row per claim x run x evaluation step x metric (Wickham 2014, "Tidy data": one observation
per row), built from :meth:`RunResult.tidy_rows <attnverify.empirics.RunResult.tidy_rows>`:

======================  =====================================================================
``claim``, ``profile``  the claim that reads the run and the profile it reads it at (a run
                        read by two claims appears once for each; both missing for a run no
                        claim reads at the profiles looked at)
``key``, ``status``     the run's key in the store and ``ok`` or ``diverged``
``seed``, ``step``      the run's root seed and the evaluated training step
``metric``, ``value``   the metric's name and its value at that step
``train_loss``          the mean training-batch loss over the steps since the previous
                        evaluation (missing at step 0)
``task.*``, ``model.*``, ``optimizer.*``  the spec's fields
``run.steps``, ``run.batch_size``, ``run.dtype``, ``run.device``, ``wall_time_s``
======================  =====================================================================

Which runs: the runs the selected claims (``claim``, ``paper``) read at the selected profile
(``profile``; every profile when not given), as ``verify`` plans them
(:func:`compare.evaluation.plan.plan`: a claim in stages replayed from the store), those of them
that are stored; without a claim, paper or profile: every stored run, labelled with the claims that
read it at any profile. pandas is an optional dependency (``pip install 'attnverify[frames]'``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from attnverify.compare.claim import PROFILES, check_profile
from attnverify.empirics import RunResult, RunStore
from attnverify.empirics.store.run_store import CorruptEntryError

if TYPE_CHECKING:
    from os import PathLike

    import pandas as pd

log = logging.getLogger("attnverify.runs")

FIRST_COLUMNS = ("claim", "profile", "key", "status", "seed", "step", "metric", "value",
                 "train_loss")
Labels = dict[str, list[tuple[str, str]]]
"""Run key -> the (claim id, profile) pairs that read it."""


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("attnverify.runs.frame needs pandas: pip install "
                          "'attnverify[frames]' (or pip install pandas)") from None
    return pandas


def store_of(cache: str | PathLike[str] | RunStore | None) -> RunStore:
    """``cache`` as a run store: a store, a directory, or None for the default cache
    (``$ATTNVERIFY_CACHE``, else ``~/.cache/attnverify``)."""
    return cache if isinstance(cache, RunStore) else RunStore(cache)


def interval_loss(result: RunResult) -> np.ndarray:
    """Per evaluated step: the mean training-batch loss over the steps since the previous
    evaluation (``train_loss[i]`` is the loss of step i + 1), NaN at step 0 and where the run
    stopped before the step."""
    out = np.full(len(result.eval_steps), np.nan)
    losses = np.asarray(result.train_loss, dtype=float)
    previous = 0
    for i, step in enumerate(result.eval_steps.tolist()):
        chunk = losses[previous:min(step, len(losses))]
        if chunk.size:
            out[i] = chunk.mean()
        previous = step
    return out


def long_rows(key: str, result: RunResult,
              labels: Sequence[tuple[str | None, str | None]]) -> list[dict[str, Any]]:
    """The tidy rows of one stored run (see the module docstring), once per label."""
    spec = result.spec
    extra = {"run.steps": spec.steps, "run.batch_size": spec.batch_size,
             "run.dtype": spec.dtype, "run.device": spec.device,
             "wall_time_s": result.wall_time_s}
    rows = []
    for row, loss in zip(result.tidy_rows(), interval_loss(result), strict=True):
        ident = {name: value for name, value in row.items() if name not in result.metrics}
        ident["key"] = key  # the stored key (a stale run's spec hashes to another one now)
        for claim_id, profile in labels:
            for name in result.metrics:
                rows.append({"claim": claim_id, "profile": profile, **ident, "metric": name,
                             "value": row[name], "train_loss": loss, **extra})
    return rows


def frame_of(cache: str | Path | RunStore | None, labels: Labels,
             unlabelled: Sequence[str] = ()) -> pd.DataFrame:
    """The tidy DataFrame of the runs ``labels`` names (each once per label) and of the
    ``unlabelled`` keys (claim and profile missing); runs not stored are left out, damaged ones
    too (one warning line each)."""
    pandas = _pandas()
    store = store_of(cache)
    rows: list[dict[str, Any]] = []
    named: dict[str, Sequence[tuple[str | None, str | None]]] = dict(labels)
    named.update({key: [(None, None)] for key in unlabelled if key not in labels})
    for key, pairs in named.items():
        try:
            result = store.get(key)
        except CorruptEntryError as exc:
            log.warning("left out: %s", exc)
            continue
        if result is not None:
            rows += long_rows(key, result, pairs)
    df = pandas.DataFrame(rows)
    if df.empty:
        return pandas.DataFrame(columns=list(FIRST_COLUMNS))
    rest = [c for c in df.columns if c not in FIRST_COLUMNS]
    return df[list(FIRST_COLUMNS) + rest]


def labels_of(store: RunStore, claims: Sequence[Any], profiles: Sequence[str]) -> Labels:
    """Run key -> (claim id, profile) for every run the claims read at the profiles, as
    verify plans them (:func:`compare.evaluation.plan.plan`), the stored ones only."""
    from attnverify.compare.evaluation.plan import plan

    labels: Labels = {}
    for profile in profiles:
        for claim_plan in plan(claims, profile, store):
            for key in dict.fromkeys(claim_plan.keys):
                if store.has(key):
                    labels.setdefault(key, []).append((claim_plan.claim_id, profile))
    return labels


def frame(cache: str | Path | RunStore | None = None, *,
          claim: str | Sequence[str] | None = None, paper: str | None = None,
          profile: str | None = None, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """Stored runs as a tidy DataFrame (module docstring): those the claims ``claim`` (one id
    or several) or the claims of ``paper`` read at ``profile`` (default: every profile); with
    none of the three, every stored run. ``keys`` keeps only these runs. ValueError naming the
    accepted values for an unknown claim, paper or profile, or naming a key not stored."""
    from attnverify.compare.registry import select_many

    store = store_of(cache)
    if profile is not None:
        check_profile(profile)
    ids = [claim] if isinstance(claim, str) else list(claim or [])
    selecting = bool(ids) or paper is not None or profile is not None
    claims = select_many(ids, paper)
    labels = labels_of(store, claims, [profile] if profile else PROFILES)
    unlabelled = [] if selecting else [key for key in store.keys()  # noqa: SIM118 (a store)
                                       if key not in labels]
    if keys is not None:
        absent = [key for key in keys if not store.has(key)]  # ValueError for a malformed key
        if absent:
            raise ValueError(f"no run {absent[0]!r} in {store.root} (see 'attnverify runs "
                             f"list')")
        wanted = set(keys)
        labels = {k: v for k, v in labels.items() if k in wanted}
        unlabelled = [k for k in unlabelled if k in wanted]
    return frame_of(store, labels, unlabelled)
