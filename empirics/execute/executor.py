"""Executors: run a list of RunSpecs through the store.

:class:`Executor` holds what every backend shares: cached runs are read back, the missing ones are
computed longest first under one progress bar, and only they are computed (an interrupted sweep
resumes where it stopped). A backend implements :meth:`Executor._compute`; the unit of work it
ships is a list of runs from :func:`work_units`: one run, or a group of seeds of a model that
trains seed-batched (:func:`empirics.train.train_group`).

:class:`LocalExecutor` trains the missing runs one per worker process with
``torch.set_num_threads(1)`` (parallelism across runs, not inside tiny ops). Its workers publish
their results to the store themselves, so every finished run survives an interruption, and a
worker that dies (the out-of-memory killer) is replaced and its unit retried
(:mod:`empirics.execute.worker_pool`). The in-process path uses one thread too, so both paths give
identical arrays. The Dask backend is :mod:`empirics.execute.dask_executor`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence

import torch
from tqdm.auto import tqdm

from attnverify.empirics.execute.progress import ProgressLines, is_terminal
from attnverify.empirics.execute.worker_pool import (  # noqa: F401 (re-exported)
    PARENT_POLL_S,
    CodeMismatchError,
    WorkerPool,
    one_thread,
)
from attnverify.empirics.result import RunResult
from attnverify.empirics.spec import DEVICES, RunSpec
from attnverify.empirics.store.checkpoint import CheckpointDir
from attnverify.empirics.store.run_store import RunStore
from attnverify.empirics.train import batched_by_default, seed_group_key, train_group


class ExecutorSetupError(Exception):
    """An executor cannot start for a reason its user can fix (a missing optional dependency,
    an unreachable scheduler, a malformed address): the CLI reports it in one line."""


def worker_count(workers: int | None) -> int:
    """``workers``, or the number of cores this process may use; ValueError below 1."""
    workers = workers if workers is not None else len(os.sched_getaffinity(0))
    if workers < 1:
        raise ValueError(f"workers must be an integer >= 1; got {workers!r}")
    return workers


def check_device(device: str | None) -> None:
    """ExecutorSetupError unless ``device`` is None, "cpu", or "cuda" with a GPU torch can
    use."""
    if device is not None and device not in DEVICES:
        raise ExecutorSetupError(f"unknown device {device!r}; accepted: {', '.join(DEVICES)}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ExecutorSetupError("--device cuda: this machine has no CUDA device that torch "
                                 "can use (torch.cuda.is_available() is False); accepted "
                                 "here: cpu")


MAX_SEED_GROUP = 8
"""At most this many seeds per batched group (memory grows with the group)."""


def work_units(specs: Sequence[RunSpec], workers: int,
               seed_group: int = MAX_SEED_GROUP,
               checkpointed: Sequence[Sequence[str]] = ()) -> list[list[RunSpec]]:
    """Split ``specs`` into units of work, longest first: every run of a model that trains
    seed-batched joins the other seeds of its configuration (at most ``seed_group`` per unit;
    1 trains every run on its own, so that a long sweep is stored run by run), every other run
    is a unit of its own. While there are fewer units than
    ``workers``, groups are split further so that no core idles. A seed's numbers do not
    depend on its group (:mod:`empirics.train`), so this choice never changes a result.
    ``checkpointed``: the run keys of each unit with a checkpoint
    (:mod:`empirics.store.checkpoint`); such a unit is kept as it was, in its order, when all its
    runs are in ``specs``, so that it resumes whatever the workers and seed group of this sweep."""
    by_key = {spec.key(): spec for spec in specs}
    units: list[list[RunSpec]] = []
    for keys in checkpointed:
        if keys and all(key in by_key for key in keys):
            units.append([by_key.pop(key) for key in keys])
    groups: dict[str, list[RunSpec]] = {}
    for spec in by_key.values():
        if batched_by_default(spec):
            groups.setdefault(seed_group_key(spec), []).append(spec)
        else:
            units.append([spec])
    spread = len(units) + len(groups) < workers
    for group in groups.values():
        n = len(group)
        chunks = max(math.ceil(n / seed_group), min(n, workers) if spread else 1)
        bounds = [round(i * n / chunks) for i in range(chunks + 1)]
        units += [group[a:b] for a, b in itertools.pairwise(bounds)]
    return sorted(units, key=lambda unit: sum(s.time_estimate() for s in unit), reverse=True)


class Executor(ABC):
    """Runs specs through ``store``: cached runs are read back, missing runs computed.

    ``device`` ("cpu" or "cuda"; None: as each spec says) is where the runs the claims plan
    train (:meth:`place`): the same code on a GPU, with its own run keys (a GPU's numbers
    differ from the CPU's in the last bits)."""

    workers: int = 1
    """How many units of work train at once (estimates of wall time divide by it)."""
    seed_group: int = MAX_SEED_GROUP
    """At most this many seeds train as one seed-batched unit (:func:`work_units`)."""

    def __init__(self, store: RunStore, progress: bool = True,
                 device: str | None = None, seed_group: int | None = None) -> None:
        check_device(device)
        if seed_group is not None:
            if seed_group < 1:
                raise ValueError(f"seed_group must be an integer >= 1; got {seed_group!r}")
            self.seed_group = seed_group
        self.store = store
        self.progress = progress
        self.device = device
        self.computed: set[str] = set()
        """Keys of the runs this executor computed (the rest came from the store)."""

    def place(self, spec: RunSpec) -> RunSpec:
        """``spec`` on this executor's device (unchanged when it has none)."""
        if self.device is None or spec.device == self.device:
            return spec
        return dataclasses.replace(spec, device=self.device)

    def run(self, specs: Sequence[RunSpec], desc: str = "runs",
            labels: dict[str, str] | None = None) -> list[RunResult]:
        """Results in the order of ``specs``, computing only the runs missing from the store.

        The progress bar advances by each run's estimated cost (so its time-left estimate holds
        although the longest runs go first) and names the run just finished: ``labels`` maps a
        run key to what it is for (e.g. the claims that read it), else the spec's task kind.
        """
        labels = labels or {}
        unique = {spec.key(): spec for spec in specs}
        resuming = self.store.checkpoints.by_run(self.store.has)  # read once, not per run
        found = {key: self.store.lookup(spec, resuming.get(key)) for key, spec in unique.items()}
        missing = [unique[key] for key, result in found.items() if result is None]
        if missing:
            # disable=None: the bar on a terminal, a line a minute in logs; progress=False: none
            with CostBar(missing, labels, desc, disable=None if self.progress else True,
                          checkpoints=self.store.checkpoints) as bar:
                found.update(self._compute(missing, bar))
            self.computed.update(spec.key() for spec in missing)
        return [found[spec.key()] for spec in specs]  # type: ignore[misc]

    @abstractmethod
    def _compute(self, missing: Sequence[RunSpec], bar: CostBar) -> dict[str, RunResult]:
        """Compute every spec of ``missing`` (in the :func:`work_units` order: longest first,
        so that no long run starts last while the other workers idle), publish each to the
        store, call ``bar.done`` per finished run, and return the results by key."""

    def close(self) -> None:  # noqa: B027 (optional hook: a pool per batch needs no close)
        """Release the backend's resources (processes, connections)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalExecutor(Executor):
    """Runs specs on up to ``workers`` processes (default: the number of cores)."""

    def __init__(self, store: RunStore, workers: int | None = None, progress: bool = True,
                 device: str | None = None, seed_group: int | None = None) -> None:
        super().__init__(store, progress, device, seed_group)
        self.workers = worker_count(workers)
        self.pool: WorkerPool | None = None
        """The worker processes of the last sweep that needed more than one
        (:mod:`empirics.execute.worker_pool`: a dead worker is replaced and its unit retried)."""

    def _compute(self, missing: Sequence[RunSpec], bar: CostBar) -> dict[str, RunResult]:
        checkpointed = {info.keys for info in
                        self.store.checkpoints.by_run(self.store.has).values()}
        units = work_units(missing, self.workers, self.seed_group, sorted(checkpointed))
        if self.workers == 1 or len(units) == 1:
            results = {}
            for unit in units:
                trained = train_group(unit, checkpoints=self.store.checkpoints)
                for spec, result in zip(unit, trained, strict=True):
                    results[spec.key()] = result
                    self.store.put(result)
                    bar.done(spec)
            return results
        results = {}

        def done(spec: RunSpec, result: RunResult) -> None:
            results[spec.key()] = result
            bar.done(spec)

        self.pool = WorkerPool(self.workers, self.store, unit_label)
        self.pool.run(units, done)
        return results


def unit_label(unit: Sequence[RunSpec]) -> str:
    """A unit of work in an error message: "run KEY (label)", and "and its N seed-batched
    siblings" for a group."""
    others = f" and its {len(unit) - 1} seed-batched siblings" if len(unit) > 1 else ""
    return f"run {unit[0].key()} ({unit[0].label()}){others}"


CHECKPOINTS_LISTED = 4
"""How many runs in training a progress line names with their checkpointed step."""


class CostBar:
    """A tqdm bar in percent of the batch's estimated cost, with 'k/n runs' and the label of the
    last finished run as its postfix. ``disable=None`` (progress on, the bar where stderr is a
    terminal) prints a plain line about every minute instead where stderr is not a terminal
    (:mod:`empirics.execute.progress`): a batch job's log shows the sweep advancing, and with
    ``checkpoints`` how far the runs still training have got by their last checkpoints
    (a run of hours would otherwise show 0% until it ends)."""

    def __init__(self, specs: Sequence[RunSpec], labels: dict[str, str], desc: str,
                 disable: bool | None, checkpoints: CheckpointDir | None = None) -> None:
        self.total_cost = sum(s.time_estimate() for s in specs) or 1.0
        self.n, self.finished, self.percent = len(specs), 0, 0.0
        self.labels = labels
        self.checkpoints = checkpoints
        self.training = {spec.key(): spec for spec in specs}
        """The runs not finished yet (read by the progress thread: replaced, never mutated)."""
        self.lines = (ProgressLines(self.n, desc, partial=self.checkpointed)
                      if disable is None and not is_terminal(sys.stderr) else None)
        self.bar = tqdm(total=100.0, desc=desc, disable=disable, leave=False,
                        bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} "
                                   "[{elapsed}<{remaining}]")

    def checkpointed(self) -> tuple[float, str]:
        """The percent of the cost that the unfinished runs' checkpoints stand for, and
        "checkpoints: seed 3 at step 1200/24000, ..." (the first few; a count beyond them)."""
        training = self.training
        if self.checkpoints is None or not training:
            return 0.0, ""
        saved = self.checkpoints.by_run()
        reached = [(spec, saved[key]) for key, spec in training.items() if key in saved]
        percent = sum(100.0 * spec.time_estimate() * min(info.fraction_done, 1.0)
                      for spec, info in reached) / self.total_cost
        shown = [f"seed {spec.seed} at step {info.step}/{info.steps}"
                 for spec, info in reached[:CHECKPOINTS_LISTED]]
        if len(reached) > CHECKPOINTS_LISTED:
            shown.append(f"{len(reached) - CHECKPOINTS_LISTED} more")
        return percent, f"checkpoints: {', '.join(shown)}" if shown else ""

    def done(self, spec: RunSpec) -> None:
        self.training = {k: s for k, s in self.training.items() if k != spec.key()}
        self.finished += 1
        label = self.labels.get(spec.key(), spec.task.kind)
        self.bar.set_postfix_str(f"{self.finished}/{self.n} runs, last: {label} "
                                 f"seed={spec.seed}", refresh=False)
        step = 100.0 * spec.time_estimate() / self.total_cost
        self.percent += step
        self.bar.update(step)
        if self.lines is not None:
            self.lines.update(self.finished, self.percent)

    def __enter__(self) -> CostBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.close()
        if self.lines is not None:
            self.lines.close()
