"""Training speed and memory for ``attnverify bench`` (:mod:`attnverify.compare.bench`): step
times of the straightforward loop (the reference), seed-steps per second the way ``verify``
trains (one process per core, seed-batched groups where the model allows), the share of a step
that batching seeds could share, where a step's time goes, and a worker's peak memory. Step
times are slopes between two run lengths, so set-up and evaluation cancel."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import torch

from attnverify.empirics import RunSpec


def fixed_cost_fraction(spec: RunSpec, steps: int, repeats: int) -> float:
    """Step time at batch 1 over step time at ``spec.batch_size``, one thread, the plain loop:
    the share of a step that does not grow with the batch (op dispatch, Python, the optimizer
    over the parameters), i.e. all that batching seeds could share."""
    from attnverify.empirics.train import single_thread

    with single_thread():
        small = min(reference_step_time(dataclasses.replace(spec, batch_size=1),
                                        (steps, 2 * steps)) for _ in range(repeats))
        full = min(reference_step_time(spec, (steps, 2 * steps)) for _ in range(repeats))
    return min(1.0, small / full)


def batching_bound(fixed: float) -> float | None:
    """``1 / (1 - fixed)``: the most batching seeds could gain per core. None when the batch-1
    step measured no faster than the full batch (``fixed`` = 1: no bound can be read off;
    a busy machine can do this to a small model)."""
    return 1.0 / (1.0 - fixed) if fixed < 1.0 else None


def straightforward_step(spec: RunSpec, compiled: bool = False) -> Callable[[], None]:
    """One training step of a fresh model of ``spec`` the straightforward way (the model's
    loss, backward, optimizer step; no attnverify loop), as a function to call repeatedly;
    with ``compiled``, the loss (forward and, through it, backward) is ``torch.compile``d."""
    from attnverify.empirics import build_model

    model = build_model(spec)
    optimizer = spec.optimizer.build(model.parameters())
    generator = torch.Generator().manual_seed(0)
    loss_of = torch.compile(model.loss) if compiled else model.loss

    def step() -> None:
        loss = loss_of(spec.task.sample(spec.batch_size, generator))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def reference_step_time(spec: RunSpec, steps: tuple[int, int], compiled: bool = False
                        ) -> float:
    """Seconds per step of the straightforward loop (default threads, no attnverify loop);
    with ``compiled``, of the loop with the loss compiled (each run length compiles a fresh
    model after a first step outside the timing, so compilation is not counted)."""

    def run(n: int) -> float:
        step = straightforward_step(spec, compiled)
        if compiled:
            step()
        start = time.perf_counter()
        for _ in range(n):
            step()
        return time.perf_counter() - start

    longer, shorter = run(steps[1]), run(steps[0])
    slope = (longer - shorter) / (steps[1] - steps[0])
    # another process taking the core during the shorter run can make the difference <= 0;
    # the longer run's mean step time (set-up included, so an upper bound) is then the estimate
    return slope if slope > 0 else longer / steps[1]


def op_profile(spec: RunSpec, steps: int = 2, top: int = 5) -> list[dict[str, Any]]:
    """Where one thread spends a training step: the ``top`` ops by self CPU time over ``steps``
    steps of the plain loop (after one warm-up step), with their share of the total. This is
    the profile that says what bounds a configuration (a fused recurrent kernel, softmax,
    the optimizer...)."""
    from torch.profiler import ProfilerActivity, profile

    from attnverify.empirics.train import single_thread

    with single_thread():
        step = straightforward_step(spec)
        step()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                step()
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events) or 1.0
    events.sort(key=lambda e: e.self_cpu_time_total, reverse=True)
    return [{"op": e.key, "share": e.self_cpu_time_total / total} for e in events[:top]]


def _train_unit(unit: list[dict[str, Any]]) -> float:
    from attnverify.empirics.train import train_group

    start = time.perf_counter()
    train_group([RunSpec.from_dict(data) for data in unit])
    return time.perf_counter() - start


def verify_way_seeds(spec: RunSpec, workers: int) -> int:
    """How many seeds the verify-way measurement trains at once: one per worker, or a full
    seed-batched group per worker where the model trains seed-batched (as ``verify`` does
    with a claim's seeds)."""
    from attnverify.empirics.execute.executor import MAX_SEED_GROUP
    from attnverify.empirics.train import batched_by_default

    return workers * (MAX_SEED_GROUP if batched_by_default(spec) else 1)


def verify_way_seed_steps_per_s(spec: RunSpec, steps: tuple[int, int],
                                workers: int) -> float:
    """Seed-steps per second the way ``verify`` trains: :func:`verify_way_seeds` seeds split
    into units of work by the executor's own :func:`~empirics.execute.executor.work_units`, one
    process per core, one thread each."""
    from attnverify.empirics.execute.executor import work_units

    seeds = verify_way_seeds(spec, workers)

    def units(n: int) -> list[list[dict[str, Any]]]:
        return [[s.to_dict() for s in unit]
                for unit in work_units([_short(spec, n, s) for s in range(seeds)], workers)]

    walls = []
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        list(pool.map(_train_unit, units(1)))
        for n in steps:
            start = time.perf_counter()
            list(pool.map(_train_unit, units(n)))
            walls.append(time.perf_counter() - start)
    return seeds * (steps[1] - steps[0]) / max(walls[1] - walls[0], 1e-9)


def _train_peak_rss_mb(unit: list[dict[str, Any]]) -> float:
    from attnverify.empirics.execute.executor import one_thread
    from attnverify.empirics.train import train_group

    one_thread()
    train_group([RunSpec.from_dict(data) for data in unit])
    return _peak_rss_mb()


def _peak_rss_mb() -> float:
    """This process's peak resident memory in MiB: VmHWM, the high-water mark of its own
    address space (ru_maxrss would not do: Linux carries it across exec, so a spawned worker
    would report its parent's peak), else ru_maxrss where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB -> MiB
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def peak_rss_mb(spec: RunSpec, steps: int) -> float:
    """Peak resident memory (MiB) of a fresh worker process that trains what a ``verify``
    worker trains at once (``spec``, or a full group of its seeds where the model trains
    seed-batched) for ``steps`` steps with its own evaluation set and attention snapshots
    (memory does not grow with the step count beyond the metric histories, so a short run
    shows the worker's peak)."""
    short = dataclasses.replace(spec, steps=steps, eval_every=max(1, steps // 2),
                                attention_snapshots=tuple(s for s in spec.attention_snapshots
                                                          if s <= steps))
    seeds = verify_way_seeds(spec, workers=1)
    unit = [dataclasses.replace(short, seed=s).to_dict() for s in range(seeds)]
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_train_peak_rss_mb, unit).result()


def _short(spec: RunSpec, steps: int, seed: int) -> RunSpec:
    """``spec`` with ``steps`` steps, evaluated only at the ends, on a small evaluation batch."""
    return dataclasses.replace(spec, steps=steps, eval_every=max(steps, 1), eval_size=8,
                               seed=seed, attention_snapshots=())
