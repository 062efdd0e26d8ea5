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

Files: ``ROOT/checkpoints/<name>.pt`` and ``<name>.json`` beside it (which runs, which step,
when: read by ``verify --dry-run`` and the progress lines without loading the state). The name
hashes the unit's run keys, and a run key hashes the spec and the declared numerics versions, so
a checkpoint is found only by code that would compute the same numbers. The state file is one
header line holding the SHA-256 of the bytes after it, then those bytes (``torch.save``; read back
with ``weights_only=True``, so loading one runs no code). Both files are written to a temporary
name (the state flushed to disk) and renamed, so a kill while saving leaves the previous
checkpoint.

Nothing of a checkpoint is used before it is checked: it must be a regular file (a directory,
a pipe or a symbolic link is never opened for reading), its bytes must match the checksum of its
header, it must hold the unit's runs at a step the run can have saved (an evaluation step before
its last one), and its state must fit the unit (the model layout, the set of devices). A
checkpoint that fails any check, or one without a checksum (written before checkpoints carried
one: it cannot be verified), is set aside: moved to ``ROOT/corrupt/`` beside the run store's
damaged entries (kept for inspection, never read again), reported in one warning line naming
it, and the unit trains from step 0, with the generators a fresh start has.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import logging
import math
import os
import shutil
import stat
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

FORMAT = 2
"""Format 2: the state file starts with :data:`HEADER` and the SHA-256 of what follows."""
HEADER = b"attnverify-checkpoint sha256 "
MAX_SIDECAR_BYTES = 2**20
"""A sidecar is a few hundred bytes of JSON; more is damage, never read into memory."""
DEFAULT_INTERVAL_S = 300.0
"""Seconds of training between two saves: at most this much is lost when a process dies."""
log = logging.getLogger("attnverify.checkpoint")


class UnusableCheckpointError(ValueError):
    """A checkpoint that is damaged, cannot be verified, or does not fit the unit it was found
    for."""


def _read_regular(path: Path, limit: int | None = None) -> bytes:
    """``path``'s bytes, read only when it is a regular file (a pipe would block, a directory or
    a link to a device is not a checkpoint) of at most ``limit`` bytes: FileNotFoundError when
    there is none, UnusableCheckpointError when it is something else, OSError when it cannot
    be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnusableCheckpointError("it is a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnusableCheckpointError("it is not a regular file")
        if limit is not None and info.st_size > limit:
            raise UnusableCheckpointError(f"it holds {info.st_size} bytes, more than {limit}")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def seal(payload: dict[str, Any]) -> bytes:
    """``payload`` as the bytes of a state file: the header line with the checksum, then the
    ``torch.save`` bytes it covers."""
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    body = buffer.getvalue()
    return HEADER + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def unseal(raw: bytes) -> dict[str, Any]:
    """The payload of a state file's bytes, loaded only once they match their checksum
    (UnusableCheckpointError otherwise)."""
    digest_end = len(HEADER) + 64
    if not raw.startswith(HEADER) or raw[digest_end:digest_end + 1] != b"\n":
        raise UnusableCheckpointError("it carries no checksum (written before checkpoints "
                                      "carried one, or not a checkpoint): it cannot be verified")
    body = memoryview(raw)[digest_end + 1:]
    if hashlib.sha256(body).hexdigest().encode() != raw[len(HEADER):digest_end]:
        raise UnusableCheckpointError("checksum mismatch: the file is damaged")
    payload = torch.load(io.BytesIO(body), map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise UnusableCheckpointError("unknown format")
    return payload


def _count(value: object, what: str) -> int:
    """``value`` when it is a non-negative int (UnusableCheckpointError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UnusableCheckpointError(f"its {what} is {value!r}, not a count")
    return value


def _seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or \
            not math.isfinite(value) or value < 0:
        raise UnusableCheckpointError(f"its training time is {value!r}, not seconds")
    return float(value)


def _remove(path: Path) -> None:
    """Delete ``path``, a directory included; nothing when it is gone."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


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
        """A sidecar file (OSError, ValueError, KeyError or TypeError when it is not one: not a
        regular file, not JSON, a field missing, or a step outside the run)."""
        data = json.loads(_read_regular(path, MAX_SIDECAR_BYTES))
        info = cls(tuple(data["keys"]), bool(data["batched"]), _count(data["step"], "step"),
                   _count(data["steps"], "length"), _seconds(data["elapsed_s"]),
                   float(data["saved_at"]))
        if info.step > info.steps:
            raise UnusableCheckpointError(f"its step {info.step} is past the run's "
                                          f"{info.steps} steps")
        return info


def unit_name(keys: Sequence[str], batched: bool) -> str:
    """The file name of a unit's checkpoint: a hash of its run keys in training order (the
    order of a seed-batched group's stack) and of its path."""
    text = json.dumps({"keys": list(keys), "batched": batched}, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@dataclass(frozen=True)
class CheckpointDir:
    """The checkpoints of one run store (``RunStore.root / "checkpoints"``); those set aside go
    to ``corrupt`` (default: ``corrupt/`` beside ``root``, the run store's)."""

    root: Path
    interval_s: float = DEFAULT_INTERVAL_S
    corrupt: Path | None = None

    @property
    def quarantine(self) -> Path:
        """Where checkpoints that cannot be used are moved (kept for inspection)."""
        return self.corrupt if self.corrupt is not None else self.root.parent / "corrupt"

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
        sealed = seal(payload)
        _replace_atomically(state_path, lambda p: _write_synced(p, sealed))
        info = CheckpointInfo(tuple(keys), batched, step, steps, elapsed_s, time.time())
        text = json.dumps({"format": FORMAT, **asdict(info)}, indent=1)
        _replace_atomically(info_path, lambda p: p.write_text(text))

    def load(self, keys: Sequence[str], batched: bool) -> tuple[int, float, dict[str, Any]] | None:
        """(step, training seconds so far, state) of the unit's checkpoint; None when there is
        none, or when it is not a regular file, fails its checksum or has none, or holds other
        runs or a step that is not a count (set aside with a warning: the unit then trains
        from the start). Whether the step and the state fit the unit's runs is the loop's
        check (:func:`~attnverify.empirics.train._resume`)."""
        state_path, _ = self._paths(keys, batched)
        try:
            raw = _read_regular(state_path)
        except FileNotFoundError:
            return None
        except Exception as exc:  # a directory, a pipe, a link, an unreadable file
            self.set_aside(keys, batched, f"{type(exc).__name__}: {exc}")
            return None
        try:
            payload = unseal(raw)
            if payload["keys"] != list(keys) or payload["batched"] != batched:
                raise UnusableCheckpointError("it holds other runs")
            step = _count(payload["step"], "step")
            return step, _seconds(payload["elapsed_s"]), payload["state"]
        except Exception as exc:  # any unusable content: set aside, train anew
            self.set_aside(keys, batched, f"{type(exc).__name__}: {exc}")
            return None

    def set_aside(self, keys: Sequence[str], batched: bool, reason: str) -> None:
        """Move a checkpoint that cannot be used (its state file, whatever it is, and its
        sidecar) into :attr:`quarantine`, with one warning naming it and the reason; deleted
        when it cannot be moved."""
        name = unit_name(keys, batched)
        stamp = f"{int(time.time())}.{uuid.uuid4().hex[:8]}"
        state_path, info_path = self._paths(keys, batched)
        where = "nowhere"
        for path in (info_path, state_path):  # the sidecar first: none reports a state gone
            target = self.quarantine / f"checkpoint.{name}.{stamp}{path.suffix}"
            try:
                self.quarantine.mkdir(parents=True, exist_ok=True)
                os.rename(path, target)
                if path is state_path:
                    where = str(target)
            except FileNotFoundError:  # no sidecar, or another process moved it first
                if path is state_path:
                    where = "nowhere (it is gone)"
                continue
            except OSError:
                with contextlib.suppress(OSError):
                    _remove(path)
                if path is state_path:
                    where = "nowhere (it could not be moved; deleted)"
        log.warning("checkpoint %s of %s not used (%s); moved to %s, training from step 0",
                    state_path, ", ".join(keys), reason, where)

    def discard(self, keys: Sequence[str], batched: bool) -> None:
        """Delete the unit's checkpoint (when it finished): its sidecar first, so that no
        sidecar reports a state that is gone."""
        for path in reversed(self._paths(keys, batched)):
            _remove(path)

    def _sidecars(self) -> list[CheckpointInfo]:
        found = []
        for path in sorted(self.root.glob("*.json")):
            try:
                found.append(CheckpointInfo.read(path))
            except (OSError, ValueError, KeyError, TypeError):  # not a sidecar: not counted
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
            _remove(path)
        return len(states)
