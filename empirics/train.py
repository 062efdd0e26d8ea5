"""The one training loop (docs/layout.md): a second copy of a loop is a defect.

``train(spec)`` builds the model from the init seed, draws every training batch from the data seed
and evaluates on a fixed batch drawn from the eval seed, on the spec's schedule, under
``torch.no_grad()``. A non-finite training loss stops the run and marks it ``diverged``: a result,
not a crash. A spec's ``stop_when`` ends a run early, at the first evaluation where its metric
exceeds the threshold: the result is ``ok`` and its histories end at that step.

``train_group(specs)`` runs the same loop for runs that differ only in their seed. When the model
allows it (:meth:`~empirics.config.ModelConfig.seed_batchable`: no in-model randomness, every op
vmappable), the group trains as one seed-batched model (:mod:`empirics.seed_batch`): each seed
keeps its own initialisation, data stream, evaluation batch and optimizer state, and its numbers
equal the plain loop's to float tolerance (tests/test_seed_batch.py). Which path a spec takes
depends on the spec alone, and a seed's arrays do not depend on which other seeds share its
group, so a run key maps to the same numbers however the executor groups the runs.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from typing import Protocol

import numpy as np
import torch

from attnverify.empirics.config import Batch
from attnverify.empirics.result import RunResult
from attnverify.empirics.spec import DTYPES, RunSpec
from attnverify.empirics.versions import versions


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


def _devices(spec: RunSpec) -> list[int]:
    return list(range(torch.cuda.device_count())) if spec.device == "cuda" else []


def build_model(spec: RunSpec) -> torch.nn.Module:
    """The model at initialisation: deterministic in the spec's init seed, global RNG untouched."""
    if spec.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device 'cuda' requested but no CUDA device is available")
    with torch.random.fork_rng(devices=_devices(spec)):
        torch.manual_seed(spec.seeds().init)
        model = spec.model.build(spec.task)
    return model.to(device=spec.device, dtype=DTYPES[spec.dtype])


def seed_group_key(spec: RunSpec) -> str:
    """What runs must share to train as one seed-batched group: everything but the seed."""
    data = spec.to_dict()
    del data["seed"]
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def batched_by_default(spec: RunSpec) -> bool:
    """Whether ``spec`` trains on the seed-batched path: when its model allows it. Measured
    (``attnverify bench``; README, "Performance"): the retrieval transformer gains 1.1-1.25x
    per core from batching; LSTM and GRU cells have no vmap rule in PyTorch, and a vmappable
    loop over time runs at 0.5-0.75x of PyTorch's fused cell, so they stay on processes."""
    return spec.model.seed_batchable() and spec.warm_start is None


def train(spec: RunSpec) -> RunResult:
    """Run ``spec`` to completion (or divergence) and return its :class:`RunResult`.

    Runs on one torch thread whatever the caller's setting, and with torch's global generator
    seeded from the spec (restored afterwards), so a run key always maps to the same numbers
    whatever ran before in the process (parallelism is across runs)."""
    return train_group([spec])[0]


def train_group(specs: Sequence[RunSpec], batched: bool | None = None) -> list[RunResult]:
    """Train runs that differ only in their seed; results in the order of ``specs``.

    ``batched`` None chooses per spec (:func:`batched_by_default`); True forces the
    seed-batched path (ValueError when the model does not allow it), False the plain loop, one
    run after another (what the tests compare the batched path with)."""
    specs = list(specs)
    if not specs:
        return []
    keys = {seed_group_key(s) for s in specs}
    if len(keys) > 1:
        raise ValueError("train_group takes runs that differ only in their seed")
    if batched is None:
        batched = batched_by_default(specs[0])
    if batched and not specs[0].model.seed_batchable():
        raise ValueError(f"model {specs[0].model.kind} cannot train seed-batched (it has "
                         f"in-model randomness or an op without a vmap rule)")
    with single_thread(), torch.random.fork_rng(devices=_devices(specs[0])):
        if batched:
            torch.manual_seed(specs[0].seeds().noise)  # unused: batchable models draw nothing
            return _train_loop(specs, batched=True)
        results = []
        for spec in specs:
            torch.manual_seed(spec.seeds().noise)
            results += _train_loop([spec], batched=False)
        return results


class _Run:
    """One run's state in the loop: its model (used for evaluation), data stream, fixed
    evaluation batch, histories and status."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        seeds = spec.seeds()
        self.device = torch.device(spec.device)
        self.model = build_model(spec)
        self.warm_final = {} if spec.warm_start is None else _warm_start(self.model,
                                                                         spec.warm_start)
        self.data_gen = torch.Generator().manual_seed(seeds.data)
        eval_gen = torch.Generator().manual_seed(seeds.eval)
        self.eval_batch = _to(spec.task.sample_eval(spec.eval_size, eval_gen), self.device)
        self.eval_steps: list[int] = []
        self.history: dict[str, list[float]] = {}
        self.attention: dict[int, np.ndarray] = {}
        self.train_loss = np.full(spec.steps, np.nan)
        self.status = "ok"
        self.stopped = False
        """Ended by ``spec.stop_when``: still ``ok``, trained no further."""

    @property
    def live(self) -> bool:
        """Still training: neither diverged nor stopped."""
        return self.status == "ok" and not self.stopped

    def next_batch(self) -> Batch:
        return _to(self.spec.task.sample(self.spec.batch_size, self.data_gen), self.device)

    def record_loss(self, step: int, loss: float) -> None:
        """Store step ``step``'s training loss; a non-finite one ends the run as diverged."""
        self.train_loss[step - 1] = loss
        if not np.isfinite(loss):
            self.status = "diverged"
            self.train_loss = self.train_loss[:step]

    def evaluate(self, step: int) -> None:
        model = self.model
        model.eval()
        with torch.no_grad():
            for name, value in model.metrics(self.eval_batch).items():
                self.history.setdefault(name, []).append(value)
            if step in self.spec.attention_snapshots:
                self.attention[step] = model.attention(self.eval_batch).float().cpu().numpy()
        model.train()
        self.eval_steps.append(step)
        if self.spec.stop_when is not None:
            name, threshold = self.spec.stop_when
            if name not in self.history:
                raise KeyError(f"stop_when names metric {name!r}, which the model does not "
                               f"report; available: {', '.join(sorted(self.history))}")
            if self.history[name][-1] > threshold:
                self.stopped = True
                self.train_loss = self.train_loss[:step]

    def result(self) -> RunResult:
        """The run's result; ``wall_time_s`` is set by the loop."""
        final_state = getattr(self.model, "final_state", None)
        final = {}
        if self.status == "ok":  # a diverged run reports no trained state
            final = (final_state(self.eval_batch) if final_state is not None else {}) | \
                self.warm_final
        return RunResult(
            spec=self.spec,
            status=self.status,
            eval_steps=np.asarray(self.eval_steps, dtype=np.int64),
            metrics={k: np.asarray(v, dtype=np.float64) for k, v in self.history.items()},
            train_loss=self.train_loss,
            attention=self.attention,
            final=final,
            versions=versions(),
        )


class _PlainStep:
    """One model, one optimizer: the straightforward step."""

    def __init__(self, run: _Run) -> None:
        self.model = run.model
        self.optimizer = run.spec.optimizer.build(run.model.parameters())

    def __call__(self, batches: list[Batch], live: list[bool]) -> list[float]:
        loss = self.model.loss(batches[0])
        value = loss.item()
        if np.isfinite(value):
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
        return [value]

    def sync(self, live: list[bool]) -> None:
        """The evaluated model is the trained one: nothing to copy."""


def _warm_start(model: torch.nn.Module, warm: RunSpec) -> dict[str, np.ndarray]:
    """Train ``warm`` on the plain loop (its own seeds; torch's global generator restored
    afterwards), load its weights into ``model``, and return its last evaluated metrics as
    ``warm_start_<metric>`` arrays for the run's ``final``."""
    with torch.random.fork_rng(devices=_devices(warm)):
        torch.manual_seed(warm.seeds().noise)
        (run,) = _trained_runs([warm], batched=False)
    model.load_state_dict(run.model.state_dict())
    return {f"warm_start_{name}": np.array([values[-1]], dtype=np.float64)
            for name, values in run.history.items()}


def _train_loop(specs: list[RunSpec], batched: bool) -> list[RunResult]:
    start = time.perf_counter()
    runs = _trained_runs(specs, batched)
    results = [run.result() for run in runs]
    share = (time.perf_counter() - start) / len(runs)  # a run's share of the group's time
    for result in results:
        result.wall_time_s = share
    return results


def _trained_runs(specs: list[RunSpec], batched: bool) -> list[_Run]:
    """The runs of ``specs`` after training (the loop itself)."""
    runs = [_Run(spec) for spec in specs]
    if batched:
        from attnverify.empirics.seed_batch import SeedBatchStep

        step_fn: _PlainStep | SeedBatchStep = SeedBatchStep(
            [r.model for r in runs], specs[0].optimizer)
    else:
        step_fn = _PlainStep(runs[0])
    eval_at = set(specs[0].eval_steps())
    for run in runs:
        run.evaluate(0)
    for step in range(1, specs[0].steps + 1):
        live = [run.live for run in runs]
        if not any(live):
            break
        # every run draws its batch, live or not, so no stream depends on another run's fate
        batches = [run.next_batch() for run in runs]
        for run, alive, loss in zip(runs, live, step_fn(batches, live), strict=True):
            if alive:
                run.record_loss(step, loss)
        if step in eval_at:
            step_fn.sync(live)
            for run, alive in zip(runs, live, strict=True):
                if alive and run.status == "ok":
                    run.evaluate(step)
    return runs
