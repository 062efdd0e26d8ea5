"""``attnverify bench``: how fast attnverify trains and predicts on this machine.

Measured, in one run:

- the machine's float32 matrix-multiply peak (best sustained FLOP/s over a few sizes, all cores);
- per model family (Snell's copying LSTM and multi-head GRU, Mușat's retrieval transformer,
  Bao's attention LM) at the ``quick`` and ``full`` configurations of the claims:
  - training seed-steps per second the way ``verify`` trains: one process per core, one torch
    thread each, through the one training loop (``empirics.train``);
  - the straightforward reference: one seed after another in this process, PyTorch's default
    threads, a plain loop over steps; and the ratio of the two;
  - FLOPs per training step (forward and backward): ``torch.utils.flop_counter`` for every op
    it knows, plus the analytic count of the recurrent layers, which it does not count
    (PyTorch's fused LSTM/GRU kernels have no FLOP formula): :func:`recurrent_flops`; and the
    achieved fraction of the measured peak;
  - the peak resident memory of a worker process training what a ``verify`` worker trains at
    once: the run, or a group of 8 seeds where the model trains seed-batched (``peak_rss_mb``);
  - where a step's time goes (``top_ops``: the ops with the most self CPU time, one thread);
  - what bounds the speed-up of batching seeds (``fixed_cost_fraction``): the step time at
    batch 1 over the step time at the configuration's batch, one thread. Batching S seeds
    shares at most that per-step fixed cost, so it cannot make a seed-step faster than
    ``1 / (1 - fixed_cost_fraction)`` times (``batching_bound``; null when the batch-1 step
    measured no faster than the full batch) on one core;
- theory throughput: 10^6 values of Bao's rho (the issue's target), Bao's localization
  summaries on 10^6 (d, T, mean, std) points (each a whole rho-profile of T positions, about
  7.5 10^7 rho values), Mușat's information-flow game at D = 10^4 (intervals) and D = 60 (sets);
- optionally (``--verify``) ``verify --profile quick`` wall time, cold (empty cache) and warm.

Per-step times are slopes between two run lengths, so set-up and evaluation cancel; every number
is the median over ``repeats`` with the spread (min, max).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnverify.empirics import RunSpec
from attnverify.empirics.executor import worker_count

FAMILIES = ("snell_copying", "snell_multihead", "musat_retrieval", "bao_lm")
CONFIGS = ("quick", "full")


def family_spec(family: str, config: str) -> RunSpec:
    """The run a claim of ``family`` trains at profile ``config`` (seed 0)."""
    if family in ("snell_copying", "snell_multihead"):
        from attnverify.compare.claims.snell.common import COPYING, copy_spec

        params = COPYING[config]
        extra = ({"heads": 8, "cell": "gru", "shared_embedding": False}
                 if family == "snell_multihead" else {})
        return copy_spec(params, "permutation", params["L"], 0, **extra)
    if family == "musat_retrieval":
        from attnverify.compare.claims.musat.runs import RETRIEVAL, retrieval_spec

        return retrieval_spec(RETRIEVAL[config], "deep", True, 0)
    if family == "bao_lm":
        from attnverify.compare.claims.bao.training import LM, lm_specs

        return lm_specs(LM[config])[0]
    raise ValueError(f"unknown family {family!r}; accepted: {', '.join(FAMILIES)}")


def summary(samples: list[float]) -> dict[str, float]:
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def gemm_peak(repeats: int = 3, sizes: tuple[int, ...] = (256, 512, 1024, 2048)) -> float:
    """Best median float32 GEMM FLOP/s over ``sizes`` with all of torch's threads."""
    best = 0.0
    for n in sizes:
        a, b = torch.randn(n, n), torch.randn(n, n)
        torch.mm(a, b)  # warm-up
        inner = max(1, int(2e9 / (2 * n**3)))
        rates = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(inner):
                torch.mm(a, b)
            rates.append(2 * n**3 * inner / (time.perf_counter() - start))
        best = max(best, statistics.median(rates))
    return best


def recurrent_flops(module: torch.nn.Module, inputs: torch.Tensor) -> float:
    """Analytic forward + backward FLOPs of one call of an ``nn.LSTM`` or ``nn.GRU`` on
    ``inputs``: per layer, direction and time step the gate pre-activations are one
    (B, in + H) x (in + H, G H) matmul (G = 4 gates for the LSTM, 3 for the GRU), 2 B (in + H)
    G H FLOPs; the backward pass costs twice the forward (gradients of the inputs and of the
    weights), as for any matmul. Gate nonlinearities are not counted (FlopCounterMode counts
    no elementwise op either)."""
    assert isinstance(module, torch.nn.LSTM | torch.nn.GRU)
    gates = 4 if isinstance(module, torch.nn.LSTM) else 3
    batch_first = module.batch_first
    B, T = (inputs.shape[0], inputs.shape[1]) if batch_first else (inputs.shape[1],
                                                                      inputs.shape[0])
    H, directions = module.hidden_size, 2 if module.bidirectional else 1
    total = 0
    for layer in range(module.num_layers):
        width = module.input_size if layer == 0 else H * directions
        total += directions * T * 2 * B * (width + H) * gates * H
    return 3.0 * total


def flops_per_step(spec: RunSpec) -> float:
    """Forward + backward FLOPs of one training step of ``spec`` (:func:`count_step_flops`)."""
    from attnverify.empirics import build_model

    batch = spec.task.sample(spec.batch_size, torch.Generator().manual_seed(0))
    return count_step_flops(build_model(spec), lambda m: m.loss(batch))


def count_step_flops(model: torch.nn.Module,
                     loss: Callable[[torch.nn.Module], torch.Tensor]) -> float:
    """FLOPs of ``loss(model).backward()``: torch's FlopCounterMode, plus
    :func:`recurrent_flops` for each recurrent layer in which the counter saw nothing (the fused
    oneDNN LSTM kernel has no FLOP formula; the GRU runs as ops the counter does see, and is not
    counted twice)."""
    from torch.utils.flop_counter import FlopCounterMode

    analytic: dict[str, float] = {}
    hooks = []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.LSTM | torch.nn.GRU):
            def record(mod: torch.nn.Module, args: tuple[Any, ...], out: Any,
                       name: str = name) -> None:
                analytic[name] = analytic.get(name, 0.0) + recurrent_flops(mod, args[0])
            hooks.append(module.register_forward_hook(record))
    try:
        with FlopCounterMode(display=False) as counter:
            loss(model).backward()
    finally:
        for hook in hooks:
            hook.remove()
    # the counter names a module by its path from the outermost module called ("Model.encoder")
    seen = {key: sum(ops.values()) for key, ops in counter.get_flop_counts().items()}
    missed = sum(flops for name, flops in analytic.items()
                 if not any(n for key, n in seen.items()
                            if key == name or key.endswith(f".{name}")))
    return float(counter.get_total_flops()) + missed


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


def straightforward_step(spec: RunSpec) -> Callable[[], None]:
    """One training step of a fresh model of ``spec`` the straightforward way (the model's
    loss, backward, optimizer step; no attnverify loop), as a function to call repeatedly."""
    from attnverify.empirics import build_model

    model = build_model(spec)
    optimizer = spec.optimizer.build(model.parameters())
    generator = torch.Generator().manual_seed(0)

    def step() -> None:
        loss = model.loss(spec.task.sample(spec.batch_size, generator))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step


def reference_step_time(spec: RunSpec, steps: tuple[int, int]) -> float:
    """Seconds per step of the straightforward loop (default threads, no attnverify loop)."""

    def run(n: int) -> float:
        step = straightforward_step(spec)
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
    from attnverify.empirics import RunSpec
    from attnverify.empirics.train import train_group

    start = time.perf_counter()
    train_group([RunSpec.from_dict(data) for data in unit])
    return time.perf_counter() - start


def verify_way_seeds(spec: RunSpec, workers: int) -> int:
    """How many seeds the verify-way measurement trains at once: one per worker, or a full
    seed-batched group per worker where the model trains seed-batched (as ``verify`` does
    with a claim's seeds)."""
    from attnverify.empirics.executor import MAX_SEED_GROUP
    from attnverify.empirics.train import batched_by_default

    return workers * (MAX_SEED_GROUP if batched_by_default(spec) else 1)


def verify_way_seed_steps_per_s(spec: RunSpec, steps: tuple[int, int],
                                workers: int) -> float:
    """Seed-steps per second the way ``verify`` trains: :func:`verify_way_seeds` seeds split
    into units of work by the executor's own :func:`~empirics.executor.work_units`, one
    process per core, one thread each."""
    from attnverify.empirics.executor import work_units

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
    from attnverify.empirics import RunSpec
    from attnverify.empirics.executor import one_thread
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


def _timed(func: Callable[[], Any], repeats: int) -> dict[str, float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return summary(samples)


def theory_throughput(repeats: int) -> dict[str, Any]:
    from attnverify import theory

    rng = np.random.default_rng(0)
    n = 10**6
    d, T = rng.choice([16, 32, 64, 128], n), rng.choice([32, 64, 128], n)
    m, s = rng.uniform(-0.3, 0.3, n), rng.uniform(0, 0.5, n)
    values = 10**6 // 100  # 10^4 points x T = 100 positions = 10^6 values of rho
    vd, vm, vs = rng.choice([16, 32, 64, 128], values), rng.uniform(-0.3, 0.3, values), \
        rng.uniform(0, 0.5, values)
    return {
        "bao_rho_1e6_values_s": _timed(
            lambda: theory.bao.rho_profile_grid(vd, 100, vm, vs), repeats),
        "bao_localization_grid_1e6_s": _timed(
            lambda: theory.bao.localization_grid(d, T, m, s), repeats),
        "musat_game_intervals_D1e4_s": _timed(
            lambda: theory.musat.simulate_intervals(10_000), repeats),
        "musat_game_sets_D60_s": _timed(lambda: theory.musat.simulate(60), repeats),
    }


def verify_quick_times() -> dict[str, float]:
    """``attnverify verify --profile quick`` in a subprocess on an empty cache, then again."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "ATTNVERIFY_CACHE": cache}
        times = {}
        for name in ("cold", "warm"):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "attnverify.compare.cli", "verify",
                            "--profile", "quick", "--out", out, "--quiet"], env=env, check=True,
                           capture_output=True)
            times[name] = time.perf_counter() - start
    return times


def run_bench(families: tuple[str, ...] = FAMILIES, configs: tuple[str, ...] = CONFIGS,
              repeats: int = 3, with_verify: bool = False,
              log: Callable[[str], None] = print) -> dict[str, Any]:
    from attnverify.empirics.train import batched_by_default

    workers = worker_count(None)
    log(f"GEMM peak on {workers} core(s)...")
    peak = gemm_peak(repeats)
    models = []
    for family in families:
        for config in configs:
            spec = family_spec(family, config)
            probe = time.perf_counter()
            reference_step_time(spec, (1, 2))
            per_step = time.perf_counter() - probe
            k = max(4, min(20, int(6.0 / max(per_step, 1e-3))))  # about 6 s per measurement
            steps = (k, 2 * k)
            log(f"{family} @ {config}: {k}-step slopes, {repeats} repeats...")
            flops = flops_per_step(spec)
            fixed = fixed_cost_fraction(spec, k, repeats)
            ours = [verify_way_seed_steps_per_s(spec, steps, workers) for _ in range(repeats)]
            ref = [1.0 / reference_step_time(spec, steps) for _ in range(repeats)]
            ours_s, ref_s = summary(ours), summary(ref)
            rss = peak_rss_mb(spec, steps[1])
            models.append({
                "family": family, "config": config,
                "seed_steps_per_s": ours_s["median"], "seed_steps_per_s_spread": ours_s,
                "flops_per_step": flops,
                "fraction_of_peak": ours_s["median"] * flops / peak,
                "reference_seed_steps_per_s": ref_s["median"],
                "reference_spread": ref_s,
                "speedup": ours_s["median"] / ref_s["median"],
                "peak_rss_mb": rss,
                "seed_batched": batched_by_default(spec),
                "seeds_at_once": verify_way_seeds(spec, workers),
                "fixed_cost_fraction": fixed,
                "batching_bound": batching_bound(fixed),
                "top_ops": op_profile(spec),
            })
    log("theory throughput...")
    result: dict[str, Any] = {"gemm_peak_flops": peak, "workers": workers, "models": models,
                              "theory": theory_throughput(repeats)}
    if with_verify:
        log("verify --profile quick, cold then warm (minutes)...")
    result["verify_quick_s"] = verify_quick_times() if with_verify else \
        {"cold": None, "warm": None}
    return result


def table(result: dict[str, Any]) -> str:
    lines = [f"GEMM peak: {result['gemm_peak_flops'] / 1e9:.1f} GFLOP/s "
             f"({result['workers']} cores)", "",
             f"{'family':<17} {'config':<6} {'way':<8} {'seed-steps/s':>12} {'reference':>10} "
             f"{'speedup':>8} {'GFLOP/step':>10} {'of peak':>8} {'peak RSS':>9} "
             f"{'fixed':>6} {'bound':>6}"]
    for m in result["models"]:
        way = f"{m['seeds_at_once']}x{'b' if m['seed_batched'] else 'p'}"
        lines.append(f"{m['family']:<17} {m['config']:<6} {way:<8} "
                     f"{m['seed_steps_per_s']:>12.2f} "
                     f"{m['reference_seed_steps_per_s']:>10.2f} {m['speedup']:>7.2f}x "
                     f"{m['flops_per_step'] / 1e9:>10.3f} {100 * m['fraction_of_peak']:>7.1f}% "
                     f"{m['peak_rss_mb']:>6.0f} MiB {100 * m['fixed_cost_fraction']:>5.0f}% "
                     + (f"{m['batching_bound']:>5.2f}x" if m["batching_bound"] else "     -"))
    lines.append("way: seeds trained at once, b = seed-batched groups, p = one per process; "
                 "fixed: share of a step that batching seeds could share; bound: the most "
                 "batching could gain per core")
    lines.append("")
    lines.append("where a step's time goes (one thread, self time of the top ops):")
    for m in result["models"]:
        ops = ", ".join(f"{op['op']} {100 * op['share']:.0f}%" for op in m["top_ops"][:3])
        lines.append(f"  {m['family']} @ {m['config']}: {ops}")
    lines.append("")
    for name, s in result["theory"].items():
        lines.append(f"{name}: {s['median']:.3f} s (min {s['min']:.3f}, max {s['max']:.3f})")
    v = result["verify_quick_s"]
    lines.append("verify --profile quick: " + ("not measured (use --verify)" if v["cold"] is None
                                                else f"cold {v['cold']:.0f} s, warm "
                                                     f"{v['warm']:.1f} s"))
    return "\n".join(lines)
