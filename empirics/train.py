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

Given a :class:`~empirics.store.checkpoint.CheckpointDir`, the loop saves the state of its unit at
an evaluation step every few minutes and, when it starts, continues from a checkpoint of the same
runs: a killed process loses minutes, not the run, and the result is the uninterrupted one bit
for bit (:mod:`empirics.store.checkpoint`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np
import torch

from attnverify.empirics.config import Batch
from attnverify.empirics.result import RunResult
from attnverify.empirics.spec import DTYPES, RunSpec
from attnverify.empirics.store.checkpoint import CheckpointDir
from attnverify.empirics.versions import versions

log = logging.getLogger("attnverify.checkpoint")


class TrainableModel(Protocol):
    """What the loop needs of a model (models are ``nn.Module`` subclasses)."""

    def loss(self, batch: Batch) -> torch.Tensor: ...
    def metrics(self, batch: Batch) -> dict[str, float]: ...
    def attention(self, batch: Batch) -> torch.Tensor: ...
    # optional: ``final_state(eval_batch) -> dict[str, np.ndarray]``, arrays describing the
    # trained model (e.g. a spectrum, an ablation table)


class StepFn(Protocol):
    """The loop's training step: :class:`_PlainStep`, or
    :class:`~empirics.seed_batch.SeedBatchStep` for a seed-batched group."""

    def __call__(self, batches: list[Batch], live: list[bool]) -> list[float]: ...
    def sync(self, live: list[bool]) -> None: ...
    def state(self) -> dict[str, object]: ...
    def load_state(self, state: dict[str, Any]) -> None: ...


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


def train(spec: RunSpec, checkpoints: CheckpointDir | None = None) -> RunResult:
    """Run ``spec`` to completion (or divergence) and return its :class:`RunResult`.

    Runs on one torch thread whatever the caller's setting, and with torch's global generator
    seeded from the spec (restored afterwards), so a run key always maps to the same numbers
    whatever ran before in the process (parallelism is across runs). With ``checkpoints``, a
    long run saves its state as it trains and resumes from it (module docstring)."""
    return train_group([spec], checkpoints=checkpoints)[0]


def train_group(specs: Sequence[RunSpec], batched: bool | None = None,
                checkpoints: CheckpointDir | None = None) -> list[RunResult]:
    """Train runs that differ only in their seed; results in the order of ``specs``.

    ``batched`` None chooses per spec (:func:`batched_by_default`); True forces the
    seed-batched path (ValueError when the model does not allow it), False the plain loop, one
    run after another (what the tests compare the batched path with). ``checkpoints``: where
    the unit saves its state while it trains, and resumes from (None: no checkpoints)."""
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
            return _train_loop(specs, batched=True, checkpoints=checkpoints)
        results = []
        for spec in specs:
            torch.manual_seed(spec.seeds().noise)
            results += _train_loop([spec], batched=False, checkpoints=checkpoints)
        return results


class _Run:
    """One run's state in the loop: its model (used for evaluation), data stream, fixed
    evaluation batch, histories and status. ``warm`` False skips training the warm-start run
    (a run about to be restored from a checkpoint, which holds the result)."""

    def __init__(self, spec: RunSpec, warm: bool = True) -> None:
        self.spec = spec
        seeds = spec.seeds()
        self.device = torch.device(spec.device)
        self.model = build_model(spec)
        self.warm_final = {} if spec.warm_start is None or not warm else \
            _warm_start(self.model, spec.warm_start)
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

    def state(self) -> dict[str, object]:
        """Everything :meth:`load_state` needs to continue this run (tensors and plain
        values, which ``torch.load(weights_only=True)`` reads back)."""
        return {"model": self.model.state_dict(), "data_gen": self.data_gen.get_state(),
                "eval_steps": list(self.eval_steps),
                "history": {k: [float(v) for v in vs] for k, vs in self.history.items()},
                "attention": {s: torch.from_numpy(a) for s, a in self.attention.items()},
                "train_loss": torch.from_numpy(self.train_loss.copy()),
                "status": self.status, "stopped": self.stopped,
                "warm_final": {k: torch.from_numpy(a) for k, a in self.warm_final.items()}}

    def load_state(self, state: dict[str, Any]) -> None:
        self.model.load_state_dict(state["model"])
        self.data_gen.set_state(state["data_gen"])
        self.eval_steps = [int(s) for s in state["eval_steps"]]
        self.history = {k: list(vs) for k, vs in state["history"].items()}
        self.attention = {int(s): a.numpy() for s, a in state["attention"].items()}
        self.train_loss = state["train_loss"].numpy().copy()
        self.status, self.stopped = state["status"], bool(state["stopped"])
        self.warm_final = {k: a.numpy() for k, a in state["warm_final"].items()}

    def result(self) -> RunResult:
        """The run's result; ``wall_time_s`` is set by the loop."""
        final_state = getattr(self.model, "final_state", None)
        final: dict[str, np.ndarray] = {}
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

    def state(self) -> dict[str, object]:
        """The optimizer's state (the model is saved with its run)."""
        return {"optimizer": self.optimizer.state_dict()}

    def load_state(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])


def _warm_start(model: torch.nn.Module, warm: RunSpec) -> dict[str, np.ndarray]:
    """Train ``warm`` on the plain loop (its own seeds; torch's global generator restored
    afterwards), load its weights into ``model``, and return its last evaluated metrics as
    ``warm_start_<metric>`` arrays for the run's ``final``."""
    with torch.random.fork_rng(devices=_devices(warm)):
        torch.manual_seed(warm.seeds().noise)
        (run,), _ = _trained_runs([warm], batched=False)
    model.load_state_dict(run.model.state_dict())
    return {f"warm_start_{name}": np.array([values[-1]], dtype=np.float64)
            for name, values in run.history.items()}


def _train_loop(specs: list[RunSpec], batched: bool,
                checkpoints: CheckpointDir | None = None) -> list[RunResult]:
    start = time.perf_counter()
    runs, earlier_s = _trained_runs(specs, batched, checkpoints)
    results = [run.result() for run in runs]
    if checkpoints is not None:  # only now: ``result`` computes the trained-state arrays
        checkpoints.discard([result.key for result in results], batched)
    # a run's share of the group's time, including the time before a resumed checkpoint
    share = (earlier_s + time.perf_counter() - start) / len(runs)
    for result in results:
        result.wall_time_s = share
    return results


def _start(specs: list[RunSpec], batched: bool, warm: bool = True) -> tuple[list[_Run], StepFn]:
    """Fresh runs and their training step."""
    runs = [_Run(spec, warm=warm) for spec in specs]
    if batched:
        from attnverify.empirics.seed_batch import SeedBatchStep

        return runs, SeedBatchStep([r.model for r in runs], specs[0].optimizer)
    return runs, _PlainStep(runs[0])


def _resume(specs: list[RunSpec], batched: bool, keys: list[str],
            checkpoints: CheckpointDir) -> tuple[list[_Run], StepFn, int, float] | None:
    """The runs and step restored from the unit's checkpoint, with its step and the training
    seconds before it; None when there is no usable checkpoint."""
    saved = checkpoints.load(keys, batched)
    if saved is None:
        return None
    step, earlier_s, state = saved
    if step not in specs[0].eval_steps() or not 0 < step < specs[0].steps:
        # the loop saves at an evaluation step before the last one, and at no other
        checkpoints.set_aside(keys, batched, f"its step {step} is not one at which a run of "
                                             f"{specs[0].steps} steps saves")
        return None
    # a restore that fails half-way must leave the generators as a fresh start has them
    rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if _devices(specs[0]) else None
    try:
        runs, step_fn = _start(specs, batched, warm=False)
        for run, run_state in zip(runs, state["runs"], strict=True):
            run.load_state(run_state)
        step_fn.load_state(state["step"])
        if (state.get("cuda_rng") is None) != (cuda_rng is None) or \
                (cuda_rng is not None and len(state["cuda_rng"]) != len(cuda_rng)):
            raise ValueError("saved on another set of devices")
        torch.set_rng_state(state["rng"])
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(state["cuda_rng"])
    except Exception as exc:  # any state that does not fit: set aside, train from step 0
        torch.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)
        checkpoints.set_aside(keys, batched, f"{type(exc).__name__}: {exc}")
        return None
    log.info("resuming %s from its checkpoint at step %d of %d", ", ".join(keys), step,
             specs[0].steps)
    return runs, step_fn, step, earlier_s


def _save(checkpoints: CheckpointDir, keys: list[str], batched: bool, step: int,
          elapsed_s: float, runs: list[_Run], step_fn: StepFn) -> None:
    cuda_rng = torch.cuda.get_rng_state_all() if _devices(runs[0].spec) else None
    state = {"runs": [run.state() for run in runs], "step": step_fn.state(),
             "rng": torch.get_rng_state(), "cuda_rng": cuda_rng}
    checkpoints.save(keys, batched, step, runs[0].spec.steps, elapsed_s, state)


def _trained_runs(specs: list[RunSpec], batched: bool,
                  checkpoints: CheckpointDir | None = None) -> tuple[list[_Run], float]:
    """The runs of ``specs`` after training (the loop itself), and the training seconds
    spent before the checkpoint it resumed from (0 when it started at step 0)."""
    started = time.perf_counter()
    keys = [spec.key() for spec in specs]
    resumed = None if checkpoints is None else _resume(specs, batched, keys, checkpoints)
    if resumed is None:
        runs, step_fn = _start(specs, batched)
        first, earlier_s = 1, 0.0
        for run in runs:
            run.evaluate(0)
    else:
        runs, step_fn, reached, earlier_s = resumed
        first = reached + 1
    last_save = time.perf_counter()
    eval_at = set(specs[0].eval_steps())
    for step in range(first, specs[0].steps + 1):
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
            if checkpoints is not None and step < specs[0].steps and checkpoints.due(last_save):
                elapsed_s = earlier_s + time.perf_counter() - started
                _save(checkpoints, keys, batched, step, elapsed_s, runs, step_fn)
                last_save = time.perf_counter()
    return runs, earlier_s
