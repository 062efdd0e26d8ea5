"""RunSpec: the complete, frozen description of one training run (docs/run-store.md).

Its identity is a content hash of the canonical JSON of the spec plus the declared numerics
versions of its task, model, optimizer and the training loop
(:func:`~attnverify.empirics.versions.run_versions`), so the same spec always finds the same cache
entry, a change of numerics (a bumped version) recomputes, and comments, renames and refactors
keep every key. One root seed derives independent seeds for the data stream, the
initialisation and the evaluation set.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from attnverify.empirics.config import Config, ModelConfig, TaskConfig, is_int, require
from attnverify.empirics.optim import Adam, OptimizerConfig
from attnverify.empirics.versions import run_versions

DTYPES = {"float32": torch.float32, "float64": torch.float64}
DEVICES = ("cpu", "cuda")
SEED_STREAMS = ("data", "init", "eval", "noise")


class Seeds(NamedTuple):
    data: int
    init: int
    eval: int
    noise: int
    """In-model randomness during training (dropout): torch's global generator is seeded with it
    for the run, so a result never depends on what ran before in the same process."""


@dataclass(frozen=True)
class RunSpec:
    task: TaskConfig
    model: ModelConfig
    optimizer: OptimizerConfig = field(default_factory=Adam)
    steps: int = 200
    batch_size: int = 128
    eval_every: int = 10
    eval_size: int = 50
    seed: int = 0
    dtype: str = "float32"
    device: str = "cpu"
    attention_snapshots: tuple[int, ...] = ()
    stop_when: tuple[str, float] | None = None
    """``(metric, threshold)``: end the run at the first evaluation where ``metric`` exceeds
    ``threshold`` (strictly), as the official multi-head code of Snell et al. (``can_learn``)
    stops a single-head run once it is known to be good. None trains every step."""
    warm_start: RunSpec | None = None
    """A run trained first, on its own seeds, whose trained weights start this one (its
    optimizer state is not carried over): the same model config, dtype and device, on a task
    with the same tokens (e.g. Snell's subsets before permutations). None starts from the
    initialisation."""

    def __post_init__(self) -> None:
        require(isinstance(self.task, TaskConfig), "task", "a task config", self.task)
        require(isinstance(self.model, ModelConfig), "model", "a model config", self.model)
        require(isinstance(self.optimizer, OptimizerConfig), "optimizer", "an optimizer config",
                self.optimizer)
        require(is_int(self.steps) and self.steps >= 0, "steps", "an integer >= 0", self.steps)
        for name in ("batch_size", "eval_every", "eval_size"):
            value = getattr(self, name)
            require(is_int(value) and value >= 1, name, "an integer >= 1", value)
        require(is_int(self.seed) and 0 <= self.seed < 2**32, "seed", "an integer in [0, 2^32)",
                self.seed)
        require(self.dtype in DTYPES, "dtype", f"one of {', '.join(DTYPES)}", self.dtype)
        require(self.device in DEVICES, "device", f"one of {', '.join(DEVICES)}", self.device)
        snaps = tuple(self.attention_snapshots)
        require(all(is_int(s) and 0 <= s <= self.steps for s in snaps), "attention_snapshots",
                f"steps in [0, {self.steps}]", snaps)
        object.__setattr__(self, "attention_snapshots", tuple(sorted(set(snaps))))
        if self.stop_when is not None:
            stop = self.stop_when
            require(isinstance(stop, tuple | list) and len(stop) == 2
                    and isinstance(stop[0], str) and bool(stop[0])
                    and isinstance(stop[1], int | float) and not isinstance(stop[1], bool)
                    and math.isfinite(stop[1]), "stop_when",
                    "None or (metric name, finite threshold)", stop)
            object.__setattr__(self, "stop_when", (stop[0], float(stop[1])))
        if self.warm_start is not None:
            warm = self.warm_start
            require(isinstance(warm, RunSpec), "warm_start", "None or a RunSpec", warm)
            require(warm.model == self.model and warm.dtype == self.dtype
                    and warm.device == self.device, "warm_start",
                    "a run of the same model config, dtype and device", warm.label())

    def seeds(self) -> Seeds:
        """Independent seeds for data, init, eval and in-model noise, derived from the root seed."""
        states = [np.random.SeedSequence([self.seed, i]).generate_state(1)[0]
                  for i in range(len(SEED_STREAMS))]
        return Seeds(*(int(s) for s in states))

    def eval_steps(self) -> list[int]:
        """Step 0, every ``eval_every`` steps, the attention snapshots, and the last step."""
        steps = set(range(0, self.steps + 1, self.eval_every)) | {self.steps}
        return sorted(steps | set(self.attention_snapshots))

    def cost_estimate(self) -> float:
        """Training cost in the model family's own units (steps x batch x ``relative_cost``,
        the warm start included): comparable within a family only. Not part of the identity."""
        own = (self.steps + 1) * self.batch_size * self.model.relative_cost(self.task)
        return own + (self.warm_start.cost_estimate() if self.warm_start is not None else 0.0)

    def time_estimate(self) -> float:
        """Estimated seconds on one core of the reference CPU (``cost_estimate`` times the
        family's ``seconds_per_cost``), comparable across families: for scheduling the longest
        runs first and for progress. A family never timed counts one unit of cost as one
        second. Not part of the identity."""
        rate = self.model.seconds_per_cost
        own = ((self.steps + 1) * self.batch_size * self.model.relative_cost(self.task)
               * (1.0 if rate is None else rate))
        return own + (self.warm_start.time_estimate() if self.warm_start is not None else 0.0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form; ``stop_when`` and ``warm_start`` only when set, so specs without
        them keep the form (and the key) they had before the fields existed."""
        return self._form(identity=False)

    def identity(self) -> dict[str, Any]:
        """``to_dict`` with each config's :meth:`~empirics.config.Config.identity` (where data
        lives is left out: a corpus's directory), the warm start's likewise."""
        return self._form(identity=True)

    def _form(self, identity: bool) -> dict[str, Any]:
        """The spec as a dict, its configs (and warm start) as ``identity`` or ``to_dict``."""
        def config(c: Config) -> dict[str, Any]:
            return c.identity() if identity else c.to_dict()

        data = {
            "task": config(self.task),
            "model": config(self.model),
            "optimizer": config(self.optimizer),
            "steps": self.steps,
            "batch_size": self.batch_size,
            "eval_every": self.eval_every,
            "eval_size": self.eval_size,
            "seed": self.seed,
            "dtype": self.dtype,
            "device": self.device,
            "attention_snapshots": list(self.attention_snapshots),
        }
        if self.stop_when is not None:
            data["stop_when"] = list(self.stop_when)
        if self.warm_start is not None:
            data["warm_start"] = self.warm_start._form(identity)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSpec:
        data = dict(data)
        data["task"] = TaskConfig.from_dict(data["task"])
        data["model"] = ModelConfig.from_dict(data["model"])
        data["optimizer"] = OptimizerConfig.from_dict(data["optimizer"])
        data["attention_snapshots"] = tuple(data.get("attention_snapshots", ()))
        if data.get("stop_when") is not None:
            data["stop_when"] = tuple(data["stop_when"])
        if data.get("warm_start") is not None:
            data["warm_start"] = cls.from_dict(data["warm_start"])
        return cls(**data)

    def key(self) -> str:
        """The run's identity: a content hash of the canonical spec (:meth:`identity`) and the
        numerics versions of its task, model, optimizer and the loop (never of source
        bytes)."""
        versions: dict[str, Any] = run_versions(self)
        if self.warm_start is not None:  # the warm run's task may be of another class
            versions = versions | {"warm_start": run_versions(self.warm_start)}
        payload = json.dumps({"spec": self.identity(), "versions": versions},
                             sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(payload.encode()).hexdigest()[:24]

    def label(self) -> str:
        """A short human-readable description for logs and progress bars."""
        task = ",".join(f"{k}={v}" for k, v in self.task.to_dict().items() if k != "kind")
        model = ",".join(f"{k}={v}" for k, v in self.model.to_dict().items() if k != "kind")
        warm = "" if self.warm_start is None else f" warm-started from {self.warm_start.label()}"
        return f"{self.task.kind}({task}) {self.model.kind}({model}) seed={self.seed}{warm}"
