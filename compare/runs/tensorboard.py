"""Stored runs as TensorBoard event files (``attnverify runs export --format tensorboard``), to
look at training curves side by side in TensorBoard.

Each run becomes one TensorBoard run, a folder named ``TASK-MODEL-seedSEED-KEY`` under the
output folder, with:

- ``metric/NAME``: every evaluated metric at its evaluated steps;
- ``train/loss``: the training-batch loss at every trained step;
- ``spec`` (text): the run's spec as JSON, its status and wall time.

The output folder is written whole or not at all
(:func:`compare.report.directory.replace_directory`) and must be new or empty: TensorBoard would
otherwise show old and new events as one run. A damaged entry is left out with one warning line, as
in :func:`attnverify.runs.frame`. Needs the ``tensorboard`` package (``pip install
'attnverify[tensorboard]'``); torch's own writer (``torch.utils.tensorboard``) writes the events.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from attnverify.compare.report.directory import Replaceable, entries, replace_directory
from attnverify.empirics.execute.progress import is_terminal
from attnverify.empirics.store.run_store import CorruptEntryError

if TYPE_CHECKING:
    from attnverify.empirics import RunResult, RunStore

log = logging.getLogger("attnverify.runs")
EXPORT = Replaceable("TensorBoard export", entries,
                     ": a TensorBoard export goes into a new or empty directory (TensorBoard "
                     "would show old and new events as one run)")
"""The output folder may replace only an empty folder."""


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


def write_tensorboard(store: RunStore, out: Path | str,
                      keys: Sequence[str] = ()) -> int:
    """Write the runs ``keys`` (each once; every stored run when empty) of ``store`` under
    ``out``, one TensorBoard run each, loading one run at a time; returns how many were
    written. ValueError when ``out`` may not be replaced (:data:`EXPORT`) or a key is not
    stored, before anything is written; ImportError when tensorboard is missing."""
    from torch.utils.tensorboard import SummaryWriter  # noqa: F401  (fail before any work)

    wanted = list(dict.fromkeys(keys)) or list(store.keys())
    missing = [key for key in wanted if not store.has(key)]
    if missing:
        raise ValueError(f"no run {missing[0]!r} in {store.root} (see 'attnverify runs list')")
    written = 0

    def write(folder: Path) -> None:
        nonlocal written
        for key in tqdm(wanted, desc="tensorboard", unit="run",
                        disable=not is_terminal(sys.stderr)):
            try:
                result = store.get(key)
            except CorruptEntryError as exc:
                log.warning("left out: %s", exc)
                continue
            if result is not None:  # removed meanwhile: left out
                write_run(result, folder / run_folder(result))
                written += 1

    replace_directory(out, write, "--out", EXPORT)
    return written
