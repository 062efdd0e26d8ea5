"""Stored runs as TensorBoard event files (``attnverify runs export --format tensorboard``), to
look at training curves side by side in TensorBoard.

Each run becomes one TensorBoard run, a folder named ``TASK-MODEL-seedSEED-KEY`` under the
output folder, with:

- ``metric/NAME``: every evaluated metric at its evaluated steps;
- ``train/loss``: the training-batch loss at every trained step;
- ``spec`` (text): the run's spec as JSON, its status and wall time.

The folder is written whole or not at all (into a temporary sibling, renamed into place), and
must not exist yet or be empty: TensorBoard would otherwise show the old and new events as one
run. Needs the ``tensorboard`` package (``pip install 'attnverify[tensorboard]'``); torch's own
writer (``torch.utils.tensorboard``) writes the events.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnverify.empirics import RunResult, RunStore


def run_folder(result: RunResult) -> str:
    """The TensorBoard run name of a stored run: task, model, seed and key."""
    spec = result.spec
    return f"{spec.task.kind}-{spec.model.kind}-seed{spec.seed}-{result.key}"


def write_run(result: RunResult, folder: Path) -> None:
    """One run's curves and spec as event files in ``folder``."""
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(log_dir=str(folder))
    try:
        steps = result.eval_steps.tolist()
        for name, values in sorted(result.metrics.items()):
            for step, value in zip(steps, values.tolist(), strict=True):
                writer.add_scalar(f"metric/{name}", value, int(step))
        for index, loss in enumerate(result.train_loss.tolist()):  # the loss of step index + 1
            writer.add_scalar("train/loss", loss, index + 1)
        writer.add_text("spec", "```\n" + json.dumps(
            {"key": result.key, "status": result.status,
             "wall_time_s": round(result.wall_time_s, 1), "spec": result.spec.to_dict()},
            indent=2, sort_keys=True) + "\n```")
    finally:
        writer.close()


def write_tensorboard(store: RunStore, out: str | os.PathLike[str],
                      keys: Sequence[str] = ()) -> int:
    """Write the runs ``keys`` (every stored run when empty) of ``store`` under ``out``, one
    TensorBoard run each; returns how many. ValueError when ``out`` is a non-empty folder or
    not a folder, or a key is not stored; ImportError when tensorboard is missing."""
    import tensorboard  # noqa: F401  (torch's writer needs it; fail before writing anything)

    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ValueError(f"{target} exists and is not an empty folder: TensorBoard would mix "
                         f"its events with the new ones; give a new folder")
    wanted = list(keys) or list(store.keys())
    results = []
    for key in wanted:
        result = store.get(key)
        if result is None:
            raise ValueError(f"no run {key!r} in {store.root} (see 'attnverify runs list')")
        results.append(result)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.parent / f".{target.name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        for result in results:
            write_run(result, scratch / run_folder(result))
        scratch.mkdir(exist_ok=True)  # no runs: an empty folder
        if target.exists():
            target.rmdir()  # empty, checked above
        os.rename(scratch, target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return len(results)
