"""Checkpoints of runs in training, so that a long run survives a killed process.

A paper-scale run can take longer than the machine it trains on is held (hours for the
retrieval transformer at ``full``). While a unit of work (one run, or a seed-batched group)
trains, the loop (:mod:`empirics.train`) saves its whole state at an evaluation step once
``interval_s`` seconds have passed since the last save: every run's model, data generator,
histories, attention snapshots, training losses and status; the optimizer (or the stacked
parameters and optimizer of a seed-batched group); torch's global generator (dropout draws
from it). A unit that starts with a checkpoint of the same runs continues from that step, and
its result is the one the uninterrupted run gives, array for array, bit for bit
(tests/test_checkpoint.py): resuming changes no numerics, so it changes no run key. The
checkpoint is deleted when the unit finishes.

Files: ``ROOT/checkpoints/<name>.pt`` (``torch.save``; read back with ``weights_only=True``,
so loading one runs no code) and ``<name>.json`` beside it (which runs, which step, when: read
by ``verify --dry-run`` and the progress lines without loading the state). The name hashes the
unit's run keys, and a run key hashes the spec and the declared numerics versions, so a
checkpoint is found only by code that would compute the same numbers. Both files are
written to a temporary name and renamed, so a kill while saving leaves the previous
checkpoint. A checkpoint that cannot be read or does not fit the unit (another model layout,
another set of devices) is set aside with a warning and the unit trains from step 0, with the
generators a fresh start has.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

FORMAT = 1
DEFAULT_INTERVAL_S = 300.0
"""Seconds of training between two saves: at most this much is lost when a process dies."""
log = logging.getLogger("attnverify.checkpoint")


class UnusableCheckpointError(Exception):
    """A checkpoint that does not fit the unit it was found for."""


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint's sidecar says: the unit's run keys in training order, whether it
    trains seed-batched, the step reached, the run's length in steps, the training seconds
    spent so far, and when it was saved (seconds since the epoch)."""

    keys: tuple[str, ...]
    batched: bool
    step: int
    steps: int
    elapsed_s: float
    saved_at: float

    @property
    def fraction_done(self) -> float:
        return self.step / self.steps if self.steps else 0.0

    @classmethod
    def read(cls, path: Path) -> CheckpointInfo:
        """A sidecar file (OSError, ValueError, KeyError or TypeError when it is not one)."""
        data = json.loads(path.read_text())
        return cls(tuple(data["keys"]), bool(data["batched"]), int(data["step"]),
                   int(data["steps"]), float(data["elapsed_s"]), float(data["saved_at"]))


def unit_name(keys: Sequence[str], batched: bool) -> str:
    """The file name of a unit's checkpoint: a hash of its run keys in training order (the
    order of a seed-batched group's stack) and of its path."""
    text = json.dumps({"keys": list(keys), "batched": batched}, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class CheckpointDir:
    """The checkpoints of one run store (``RunStore.root / "checkpoints"``)."""

    root: Path
    interval_s: float = DEFAULT_INTERVAL_S

    def _paths(self, keys: Sequence[str], batched: bool) -> tuple[Path, Path]:
        name = unit_name(keys, batched)
        return self.root / f"{name}.pt", self.root / f"{name}.json"

    def due(self, last_save: float) -> bool:
        """Whether ``interval_s`` has passed since ``last_save`` (a ``time.perf_counter``)."""
        return time.perf_counter() - last_save >= self.interval_s

    def save(self, keys: Sequence[str], batched: bool, step: int, steps: int,
             elapsed_s: float, state: dict[str, Any]) -> None:
        """Write the unit's state at ``step`` (replacing its previous checkpoint)."""
        self.root.mkdir(parents=True, exist_ok=True)
        state_path, info_path = self._paths(keys, batched)
        payload = {"format": FORMAT, "keys": list(keys), "batched": batched, "step": step,
                   "elapsed_s": elapsed_s, "state": state}
        _replace_atomically(state_path, lambda p: torch.save(payload, p))
        info = CheckpointInfo(tuple(keys), batched, step, steps, elapsed_s, time.time())
        text = json.dumps({"format": FORMAT, **asdict(info)}, indent=1)
        _replace_atomically(info_path, lambda p: p.write_text(text))

    def load(self, keys: Sequence[str], batched: bool) -> tuple[int, float, dict[str, Any]] | None:
        """(step, training seconds so far, state) of the unit's checkpoint; None when there is
        none, or when it cannot be read or holds other runs (set aside
        with a warning: the unit then trains from the start)."""
        state_path, _ = self._paths(keys, batched)
        if not state_path.exists():
            return None
        try:
            payload = torch.load(state_path, map_location="cpu", weights_only=True)
            if not isinstance(payload, dict) or payload.get("format") != FORMAT:
                raise UnusableCheckpointError("unknown format")
            if payload["keys"] != list(keys) or payload["batched"] != batched:
                raise UnusableCheckpointError("it holds other runs")
            return int(payload["step"]), float(payload["elapsed_s"]), payload["state"]
        except Exception as exc:  # any unreadable file: set aside, train anew
            self.set_aside(keys, batched, f"{type(exc).__name__}: {exc}")
            return None

    def set_aside(self, keys: Sequence[str], batched: bool, reason: str) -> None:
        """Delete a checkpoint that cannot be used, with a warning naming the reason."""
        log.warning("checkpoint of %s not used (%s); training from step 0",
                    ", ".join(keys), reason)
        self.discard(keys, batched)

    def discard(self, keys: Sequence[str], batched: bool) -> None:
        """Delete the unit's checkpoint (when it finished): its sidecar first, so that no
        sidecar reports a state that is gone."""
        for path in reversed(self._paths(keys, batched)):
            path.unlink(missing_ok=True)

    def _sidecars(self) -> list[CheckpointInfo]:
        found = []
        for path in sorted(self.root.glob("*.json")):
            try:
                found.append(CheckpointInfo.read(path))
            except (OSError, ValueError, KeyError, TypeError):
                continue
        return found

    def by_run(self, stored: Callable[[str], bool] | None = None) -> dict[str, CheckpointInfo]:
        """Each run key that a checkpoint holds, with that checkpoint's sidecar; with
        ``stored`` (is a run key in the store?), only the checkpoints that can still resume:
        a unit resumes whole, and the executor trains only the runs missing from the store,
        so a unit one of whose runs is stored never resumes (:meth:`discard_dead`)."""
        return {key: info for info in self._sidecars()
                if stored is None or not any(map(stored, info.keys)) for key in info.keys}

    def discard_dead(self, stored: Callable[[str], bool]) -> int:
        """Delete the checkpoints that can never resume (a run of theirs is in the store);
        returns how many."""
        dead = [info for info in self._sidecars() if any(map(stored, info.keys))]
        for info in dead:
            self.discard(info.keys, info.batched)
        return len(dead)

    def clear(self) -> int:
        """Delete every checkpoint; returns how many there were."""
        if not self.root.is_dir():
            return 0
        states = list(self.root.glob("*.pt"))
        # and what a save killed before its rename left (``.NAME.pt.PID.UUID``)
        for path in [*states, *self.root.glob("*.json"), *self.root.glob(".*")]:
            path.unlink(missing_ok=True)
        return len(states)
