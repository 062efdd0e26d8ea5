"""What the checkpoint tests share: a checkpoint directory that stops the run after a save
(a killed process), one that records what it resumed from, and the bit-for-bit comparison of
two runs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from attnverify.empirics.store.checkpoint import CheckpointDir


class Killed(Exception):
    """What a killed process would stop with, raised right after a checkpoint is written."""


@dataclass(frozen=True)
class KilledAfterSave(CheckpointDir):
    """Saves at every evaluation step and stops the process after its ``kill_after``-th save."""

    kill_after: int = 1
    saves: list[int] = dataclasses.field(default_factory=list)

    def save(self, keys, batched, step, steps, elapsed_s, state) -> None:
        super().save(keys, batched, step, steps, elapsed_s, state)
        self.saves.append(step)
        if len(self.saves) == self.kill_after:
            raise Killed


@dataclass(frozen=True)
class Resuming(CheckpointDir):
    """Records the step of each checkpoint it hands back (None: none usable)."""

    loaded: list = dataclasses.field(default_factory=list)

    def load(self, keys, batched):
        saved = super().load(keys, batched)
        self.loaded.append(None if saved is None else saved[0])
        return saved


def assert_identical(expected, got) -> None:
    """The same runs, array for array, bit for bit."""
    for want, have in zip(expected, got, strict=True):
        assert (have.key, have.status) == (want.key, want.status)
        a, b = want.arrays(), have.arrays()
        assert sorted(a) == sorted(b)
        for name in a:
            np.testing.assert_array_equal(b[name], a[name], err_msg=name)
