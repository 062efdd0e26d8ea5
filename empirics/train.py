"""The one training loop (ARCHITECTURE.md: "a second copy of a loop is a defect").

``train(spec)`` builds the model from the init seed, draws every training batch from the data seed
and evaluates on a fixed batch drawn from the eval seed, on the spec's schedule, under
``torch.no_grad()``. A non-finite training loss stops the run and marks it ``diverged``: a result,
not a crash.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Protocol

import numpy as np
import torch

from empirics.config import Batch
from empirics.result import RunResult
from empirics.spec import DTYPES, RunSpec
from empirics.versions import versions


class TrainableModel(Protocol):
    """What the loop needs of a model (models are ``nn.Module`` subclasses)."""

    def loss(self, batch: Batch) -> torch.Tensor: ...
    def metrics(self, batch: Batch) -> dict[str, float]: ...
    def attention(self, batch: Batch) -> torch.Tensor: ...
    # optional: ``final_state(eval_batch) -> dict[str, np.ndarray]``, arrays describing the
    # trained model (e.g. a spectrum, an ablation table)


@contextlib.contextmanager
def single_thread() -> Iterator[None]:
    """One torch thread for the duration (results must not depend on the caller's setting)."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _to(batch: Batch, device: torch.device) -> Batch:
    return {k: v.to(device) for k, v in batch.items()}


def build_model(spec: RunSpec) -> torch.nn.Module:
    """The model at initialisation: deterministic in the spec's init seed, global RNG untouched."""
    if spec.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but no CUDA device is available")
    devices = list(range(torch.cuda.device_count())) if spec.device == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(spec.seeds().init)
        model = spec.model.build(spec.task)
    return model.to(device=spec.device, dtype=DTYPES[spec.dtype])


def train(spec: RunSpec) -> RunResult:
    """Run ``spec`` to completion (or divergence) and return its :class:`RunResult`.

    Runs on one torch thread whatever the caller's setting, and with torch's global generator
    seeded from the spec (restored afterwards), so a run key always maps to the same numbers
    whatever ran before in the process (parallelism is across runs, ARCHITECTURE.md
    "Performance conventions")."""
    devices = list(range(torch.cuda.device_count())) if spec.device == "cuda" else []
    with single_thread(), torch.random.fork_rng(devices=devices):
        torch.manual_seed(spec.seeds().noise)
        return _train(spec)


def _train(spec: RunSpec) -> RunResult:
    start = time.perf_counter()
    seeds = spec.seeds()
    device = torch.device(spec.device)
    model = build_model(spec)
    optimizer = spec.optimizer.build(model.parameters())
    data_gen = torch.Generator().manual_seed(seeds.data)
    eval_gen = torch.Generator().manual_seed(seeds.eval)
    eval_batch = _to(spec.task.sample_eval(spec.eval_size, eval_gen), device)
    eval_at = set(spec.eval_steps())

    eval_steps: list[int] = []
    history: dict[str, list[float]] = {}
    attention: dict[int, np.ndarray] = {}

    def evaluate(step: int) -> None:
        model.eval()
        with torch.no_grad():
            for name, value in model.metrics(eval_batch).items():
                history.setdefault(name, []).append(value)
            if step in spec.attention_snapshots:
                attention[step] = model.attention(eval_batch).float().cpu().numpy()
        model.train()
        eval_steps.append(step)

    train_loss = np.full(spec.steps, np.nan)
    status = "ok"
    evaluate(0)
    for step in range(1, spec.steps + 1):
        loss = model.loss(_to(spec.task.sample(spec.batch_size, data_gen), device))
        train_loss[step - 1] = loss.item()
        if not np.isfinite(train_loss[step - 1]):
            status = "diverged"
            train_loss = train_loss[:step]
            break
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step in eval_at:
            evaluate(step)

    final_state = getattr(model, "final_state", None)
    return RunResult(
        spec=spec,
        status=status,
        eval_steps=np.asarray(eval_steps, dtype=np.int64),
        metrics={k: np.asarray(v, dtype=np.float64) for k, v in history.items()},
        train_loss=train_loss,
        attention=attention,
        final=final_state(eval_batch) if final_state is not None and status == "ok" else {},
        wall_time_s=time.perf_counter() - start,
        versions=versions(),
    )
