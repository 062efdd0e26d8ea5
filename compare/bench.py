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
- theory throughput: 10^6 values of Bao's rho, Bao's localization
  summaries on 10^6 (d, T, mean, std) points (each a whole rho-profile of T positions, about
  7.5 10^7 rho values), Mușat's information-flow game at D = 10^4 (intervals) and D = 60 (sets),
  and the Monte Carlo the Bao derivation checks rest on: one W scored on 1,221 walks of d = 64,
  T = 128 (10^7 walk values; drawing the walks is most of its time);
- optionally (``--compile``) the straightforward reference on one thread (as a ``verify``
  worker trains), eager and with the loss compiled by ``torch.compile`` (compilation not
  timed), side by side: whether compiling would pay;
- optionally (``--verify``) ``verify --profile quick`` wall time, cold (empty cache) and warm.

Per-step times are slopes between two run lengths, so set-up and evaluation cancel; every number
is the median over ``repeats`` with the spread (min, max). The runs timed per family and
configuration are in :mod:`attnverify.empirics.bench.families`, the FLOP counts and the peak in
:mod:`attnverify.empirics.bench.flops`, the training measurements in
:mod:`attnverify.empirics.bench.training`; this module runs them and formats the result. It
stays in compare because it times theory too, which empirics may not import.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from attnverify.empirics import RunSpec
from attnverify.empirics.bench.families import CONFIGS, FAMILIES, family_spec
from attnverify.empirics.bench.flops import (
    count_step_flops,
    flops_per_step,
    gemm_peak,
    recurrent_flops,
)
from attnverify.empirics.bench.training import (
    batching_bound,
    fixed_cost_fraction,
    op_profile,
    peak_rss_mb,
    reference_step_time,
    verify_way_seed_steps_per_s,
    verify_way_seeds,
)
from attnverify.empirics.execute.executor import worker_count

__all__ = ["CONFIGS", "FAMILIES", "batching_bound", "count_step_flops", "family_spec",
           "flops_per_step", "gemm_peak", "recurrent_flops", "run_bench", "table"]

def summary(samples: list[float]) -> dict[str, float]:
    """The median of ``samples`` with their spread (min, max)."""
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples)}


def _timed(func: Callable[[], Any], repeats: int) -> dict[str, float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return summary(samples)


def theory_throughput(repeats: int) -> dict[str, Any]:
    """Seconds (median and spread over ``repeats``) of the theory computations listed in the
    module docstring."""
    from attnverify import theory
    from attnverify.empirics import sample_scores, symmetric_qk

    w = symmetric_qk(64, 0.1, 0.2, torch.Generator().manual_seed(0))
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
        "bao_monte_carlo_1e7_walk_values_s": _timed(
            lambda: sample_scores(w, 128, 1_221, seed=0), repeats),
    }


def compiled_reference(spec: RunSpec, steps: tuple[int, int], repeats: int
                       ) -> dict[str, float] | None:
    """Median seed-steps per second of the reference loop on one thread (as a ``verify``
    worker trains), eager and with the loss compiled, and their ratio; None where
    ``torch.compile`` fails for this model (the reason is logged on stderr)."""
    from attnverify.empirics.train import single_thread

    try:
        with single_thread():
            rates = {name: summary([1.0 / reference_step_time(spec, steps, compiled=compiled)
                                    for _ in range(repeats)])["median"]
                     for name, compiled in (("eager", False), ("compiled", True))}
    except Exception as exc:  # any compiler failure means: not available here
        print(f"torch.compile failed for {spec.model.kind}: {str(exc).splitlines()[0]}",
              file=sys.stderr)
        return None
    return {**rates, "speedup": rates["compiled"] / rates["eager"]}


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
              log: Callable[[str], None] = print, with_compile: bool = False
              ) -> dict[str, Any]:
    """Every measurement of the module docstring for ``families`` x ``configs``, as the
    JSON document ``bench --json`` writes; ``log`` reports progress."""
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
            compiled = compiled_reference(spec, steps, repeats) if with_compile else None
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
                "compile_one_thread": compiled,
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
    """:func:`run_bench`'s ``result`` as the text table ``attnverify bench`` prints."""
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
    compiled = [m for m in result["models"] if m.get("compile_one_thread")]
    if compiled:
        lines.append("")
        lines.append("torch.compile, one thread (as a verify worker trains; the reference loop "
                     "with the loss compiled, compilation not timed):")
        for m in compiled:
            c = m["compile_one_thread"]
            lines.append(f"  {m['family']} @ {m['config']}: {c['compiled']:.2f} seed-steps/s "
                         f"compiled against {c['eager']:.2f} eager ({c['speedup']:.2f}x)")
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
