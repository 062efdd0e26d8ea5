"""RunResult: what one training run produced.

Metric histories are arrays indexed by ``eval_steps``; ``train_loss[i]`` is the loss of the batch
at step i + 1; attention snapshots are [batch, head, query_pos, key_pos] arrays on the fixed
evaluation batch; ``final`` holds arrays a model reports about its trained state (e.g. the
eigenvalues of a query-key matrix). Serialises to flat numpy arrays (``.npz``, no pickle) plus
JSON metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnverify.empirics.spec import RunSpec

STATUSES = ("ok", "diverged")


@dataclass
class RunResult:
    spec: RunSpec
    status: str
    eval_steps: np.ndarray
    metrics: dict[str, np.ndarray]
    train_loss: np.ndarray
    attention: dict[int, np.ndarray] = field(default_factory=dict)
    final: dict[str, np.ndarray] = field(default_factory=dict)
    wall_time_s: float = 0.0
    versions: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.spec.key()

    @property
    def diverged(self) -> bool:
        return self.status == "diverged"

    def metric(self, name: str) -> np.ndarray:
        """History of one metric (KeyError naming the available metrics otherwise)."""
        if name not in self.metrics:
            raise KeyError(f"no metric {name!r}; available: {', '.join(sorted(self.metrics))}")
        return self.metrics[name]

    def first_step_reaching(self, thresholds: dict[str, float]) -> int | None:
        """First evaluated step at which every metric ``name`` is >= ``thresholds[name]`` at
        once; None if never, or if the run diverged (a diverged run reaches nothing)."""
        if self.diverged:
            return None
        met = np.ones(self.eval_steps.shape, dtype=bool)
        for name, threshold in thresholds.items():
            met &= self.metric(name) >= threshold
        hits = np.flatnonzero(met)
        return int(self.eval_steps[hits[0]]) if hits.size else None

    def tidy_rows(self) -> list[dict[str, Any]]:
        """One row per evaluated step: run identity, spec fields, step and every metric."""
        spec = self.spec.to_dict()
        ident: dict[str, Any] = {"key": self.key, "status": self.status, "seed": self.spec.seed}
        for part in ("task", "model", "optimizer"):
            ident.update({f"{part}.{k}": v for k, v in spec[part].items()})
        rows = []
        for i, step in enumerate(self.eval_steps.tolist()):
            row = {**ident, "step": step}
            row.update({name: float(values[i]) for name, values in self.metrics.items()})
            rows.append(row)
        return rows

    # -- serialisation: flat arrays + JSON-able metadata -------------------------------------
    def arrays(self) -> dict[str, np.ndarray]:
        out = {"eval_steps": self.eval_steps, "train_loss": self.train_loss}
        out.update({f"metric/{k}": v for k, v in self.metrics.items()})
        out.update({f"attention/{s}": a for s, a in self.attention.items()})
        out.update({f"final/{k}": a for k, a in self.final.items()})
        return out

    def metadata(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "spec": self.spec.to_dict(),
            "status": self.status,
            "wall_time_s": self.wall_time_s,
            "versions": self.versions,
        }

    @classmethod
    def from_parts(cls, metadata: dict[str, Any], arrays: dict[str, np.ndarray]) -> RunResult:
        metrics = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("metric/")}
        attention = {int(k.split("/", 1)[1]): v for k, v in arrays.items()
                     if k.startswith("attention/")}
        return cls(
            spec=RunSpec.from_dict(metadata["spec"]),
            status=metadata["status"],
            eval_steps=arrays["eval_steps"],
            metrics=metrics,
            train_loss=arrays["train_loss"],
            attention=attention,
            final={k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith("final/")},
            wall_time_s=float(metadata["wall_time_s"]),
            versions=dict(metadata["versions"]),
        )
