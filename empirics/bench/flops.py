"""FLOP counts and the machine's peak for ``attnverify bench`` (:mod:`attnverify.compare.bench`):
the float32 matrix-multiply peak, and the forward + backward FLOPs of one training step, from
``torch.utils.flop_counter`` plus the analytic count of the recurrent layers it cannot see."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from attnverify.empirics import RunSpec


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
