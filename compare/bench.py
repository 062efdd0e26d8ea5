"""``attnverify bench``: how fast attnverify trains and predicts on this machine (issue 7).

Measured, in one run:

- the machine's float32 matrix-multiply peak (best sustained FLOP/s over a few sizes, all cores);
- per model family (Snell's copying LSTM and multi-head GRU, Mușat's retrieval transformer,
  Bao's attention LM) at the ``quick`` and ``full`` configurations of the claims:
  - training seed-steps per second the way ``verify`` trains: one process per core, one torch
    thread each, through the one training loop (``empirics.train``);
  - the straightforward reference: one seed after another in this process, PyTorch's default
    threads, a plain loop over steps; and the ratio of the two;
  - FLOPs per training step counted by ``torch.utils.flop_counter`` (forward and backward) and
    the achieved fraction of the measured peak;
  - the peak resident memory of a worker process training the run (``peak_rss_mb``);
- theory throughput: Bao's localization summaries on 10^6 (d, T, mean, std) points, Mușat's
  information-flow game at D = 10^4 (intervals) and D = 60 (sets);
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

from empirics import RunSpec
from empirics.executor import worker_count

FAMILIES = ("snell_copying", "snell_multihead", "musat_retrieval", "bao_lm")
CONFIGS = ("quick", "full")


def family_spec(family: str, config: str) -> RunSpec:
    """The run a claim of ``family`` trains at profile ``config`` (seed 0)."""
    if family in ("snell_copying", "snell_multihead"):
        from compare.claims.snell.common import COPYING, copy_spec

        params = COPYING[config]
        extra = ({"heads": 8, "cell": "gru", "shared_embedding": False}
                 if family == "snell_multihead" else {})
        return copy_spec(params, "permutation", params["L"], 0, **extra)
    if family == "musat_retrieval":
        from compare.claims.musat.training import RETRIEVAL, retrieval_spec

        return retrieval_spec(RETRIEVAL[config], "deep", True, 0)
    if family == "bao_lm":
        from compare.claims.bao.training import LM, lm_specs

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


def flops_per_step(spec: RunSpec) -> float:
    """Forward + backward FLOPs of one training step, counted by torch's FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    from empirics import build_model

    model = build_model(spec)
    batch = spec.task.sample(spec.batch_size, torch.Generator().manual_seed(0))
    with FlopCounterMode(display=False) as counter:
        model.loss(batch).backward()
    return float(counter.get_total_flops())


def reference_step_time(spec: RunSpec, steps: tuple[int, int]) -> float:
    """Seconds per step of the straightforward loop (default threads, no attnverify loop)."""
    from empirics import build_model

    def run(n: int) -> float:
        model = build_model(spec)
        optimizer = spec.optimizer.build(model.parameters())
        generator = torch.Generator().manual_seed(0)
        start = time.perf_counter()
        for _ in range(n):
            loss = model.loss(spec.task.sample(spec.batch_size, generator))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return time.perf_counter() - start

    return (run(steps[1]) - run(steps[0])) / (steps[1] - steps[0])


def _train_steps(spec_data: dict[str, Any]) -> float:
    from empirics import RunSpec, train

    start = time.perf_counter()
    train(RunSpec.from_dict(spec_data))
    return time.perf_counter() - start


def verify_way_seed_steps_per_s(spec: RunSpec, steps: tuple[int, int],
                                workers: int) -> float:
    """Seed-steps per second with ``workers`` processes each training one seed on one thread."""
    context = get_context("spawn")
    walls = []
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        list(pool.map(_train_steps, [_short(spec, 1, s).to_dict() for s in range(workers)]))
        for n in steps:
            start = time.perf_counter()
            list(pool.map(_train_steps, [_short(spec, n, s).to_dict() for s in range(workers)]))
            walls.append(time.perf_counter() - start)
    return workers * (steps[1] - steps[0]) / max(walls[1] - walls[0], 1e-9)


def _train_peak_rss_mb(spec_data: dict[str, Any]) -> float:
    from empirics import RunSpec, train
    from empirics.executor import one_thread

    one_thread()
    train(RunSpec.from_dict(spec_data))
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
    """Peak resident memory (MiB) of a fresh worker process that trains ``spec`` for ``steps``
    steps with its own evaluation set and attention snapshots (memory does not grow with the
    step count beyond the metric histories, so a short run shows the worker's peak)."""
    short = dataclasses.replace(spec, steps=steps, eval_every=max(1, steps // 2),
                                attention_snapshots=tuple(s for s in spec.attention_snapshots
                                                          if s <= steps))
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_train_peak_rss_mb, short.to_dict()).result()


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
    import theory

    rng = np.random.default_rng(0)
    n = 10**6
    d, T = rng.choice([16, 32, 64, 128], n), rng.choice([32, 64, 128], n)
    m, s = rng.uniform(-0.3, 0.3, n), rng.uniform(0, 0.5, n)
    return {
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
            subprocess.run([sys.executable, "-m", "compare.cli", "verify", "--profile", "quick",
                            "--out", out, "--quiet"], env=env, check=True,
                           capture_output=True)
            times[name] = time.perf_counter() - start
    return times


def run_bench(families: tuple[str, ...] = FAMILIES, configs: tuple[str, ...] = CONFIGS,
              repeats: int = 3, with_verify: bool = False,
              log: Callable[[str], None] = print) -> dict[str, Any]:
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
            k = max(2, min(20, int(3.0 / max(per_step, 1e-3))))  # about 3 s per measurement
            steps = (k, 2 * k)
            log(f"{family} @ {config}: {k}-step slopes, {repeats} repeats...")
            flops = flops_per_step(spec)
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
             f"{'family':<17} {'config':<6} {'seed-steps/s':>12} {'reference':>10} "
             f"{'speedup':>8} {'GFLOP/step':>10} {'of peak':>8} {'peak RSS':>9}"]
    for m in result["models"]:
        lines.append(f"{m['family']:<17} {m['config']:<6} {m['seed_steps_per_s']:>12.2f} "
                     f"{m['reference_seed_steps_per_s']:>10.2f} {m['speedup']:>7.2f}x "
                     f"{m['flops_per_step'] / 1e9:>10.3f} {100 * m['fraction_of_peak']:>7.1f}% "
                     f"{m['peak_rss_mb']:>6.0f} MiB")
    lines.append("")
    for name, s in result["theory"].items():
        lines.append(f"{name}: {s['median']:.3f} s (min {s['min']:.3f}, max {s['max']:.3f})")
    v = result["verify_quick_s"]
    lines.append("verify --profile quick: " + ("not measured (use --verify)" if v["cold"] is None
                                                else f"cold {v['cold']:.0f} s, warm "
                                                     f"{v['warm']:.1f} s"))
    return "\n".join(lines)
