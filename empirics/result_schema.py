"""What a :class:`~attnverify.empirics.result.RunResult` must look like for its own spec.

A stored entry can pass its checksum and still not be a run of its spec: arrays rewritten with
a recomputed checksum, a copy from a bug, an archive edited by hand. Such an entry would be read
as evidence, so every entry is checked against what :func:`empirics.train.train` produces for
its spec before it is used, stored, packed or imported (:mod:`empirics.store.run_store`,
:mod:`empirics.store.archive`):

- ``eval_steps``: integers, a prefix of the spec's schedule (``RunSpec.eval_steps``) starting at
  step 0; the whole schedule for an ``ok`` run without ``stop_when``;
- ``train_loss``: one float per trained step. An ``ok`` run trained up to its last evaluation
  (every step, or the step where ``stop_when`` ended it), all finite. A ``diverged`` run stops
  at its first non-finite loss: every loss before it finite, its last one not, and evaluations
  only before that step;
- a run that ``stop_when`` ended early reports its stop metric above the threshold there;
- every metric: one float per evaluation;
- the evaluation loss (metric ``loss``, where a model reports it) and the attention snapshots
  finite at every evaluation but the run's last: up to then the weights are finite (a
  non-finite update would have made the next training loss non-finite, and the run
  diverged), while the last evaluation follows an update whose effect no training loss saw;
- attention snapshots: exactly the spec's snapshot steps that were evaluated, floats;
- ``final`` (arrays describing the trained model): real numbers, none for a diverged run;
- ``wall_time_s``: finite and >= 0.

Other metrics may be NaN by design where the model has nothing to average (an attention
entropy over no earlier positions at T = 2, an accuracy over an empty depth bin), so their
values are not held to finiteness: an entry rewritten to NaN in such a metric alone is not
caught here.

The check says what is wrong in one line (:class:`ResultSchemaError`, a ValueError).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from attnverify.empirics.result import STATUSES

if TYPE_CHECKING:
    from attnverify.empirics.result import RunResult


class ResultSchemaError(ValueError):
    """A result's arrays are not what its spec's training produces."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ResultSchemaError(message)


def _float_vector(name: str, values: np.ndarray, length: int) -> None:
    _require(isinstance(values, np.ndarray) and values.ndim == 1
             and values.dtype.kind == "f", f"{name} is not a vector of floats")
    _require(values.shape[0] == length, f"{name} has {values.shape[0]} values where the "
                                        f"schedule gives {length}")


def check_result(result: RunResult) -> None:
    """ResultSchemaError unless ``result``'s arrays are what training its spec produces
    (module docstring)."""
    spec, status = result.spec, result.status
    _require(status in STATUSES, f"status {status!r} is not one of {', '.join(STATUSES)}")
    schedule = spec.eval_steps()
    steps = result.eval_steps
    _require(isinstance(steps, np.ndarray) and steps.ndim == 1 and steps.dtype.kind in "iu"
             and 1 <= steps.shape[0] <= len(schedule)
             and steps.tolist() == schedule[:steps.shape[0]],
             "eval_steps is not a prefix of the spec's evaluation schedule")
    n, last = steps.shape[0], int(steps[-1])
    losses = result.train_loss
    _float_vector("train_loss", losses, losses.shape[0] if isinstance(losses, np.ndarray) else 0)
    if status == "ok":
        _require(spec.stop_when is not None or n == len(schedule),
                 "an ok run without stop_when ends before its last scheduled evaluation")
        _require(losses.shape[0] == last, f"train_loss has {losses.shape[0]} values for a run "
                                          f"trained to step {last}")
        _require(bool(np.isfinite(losses).all()), "an ok run has a non-finite training loss")
        if n < len(schedule):  # ended by stop_when: its metric crossed the threshold here
            name, threshold = spec.stop_when  # type: ignore[misc]
            stopped_at = result.metrics.get(name)
            _require(stopped_at is not None and stopped_at.shape[:1] == (n,)
                     and bool(stopped_at[-1] > threshold),
                     f"the run ends early without {name} above {threshold}")
    else:
        diverged_at = losses.shape[0]
        _require(diverged_at > last and not np.isfinite(losses[-1])
                 and bool(np.isfinite(losses[:-1]).all()),
                 "a diverged run's losses do not end at its first non-finite one")
        _require(n == len([s for s in schedule if s < diverged_at]),
                 f"a run diverged at step {diverged_at} misses evaluations before it")
    for name, values in result.metrics.items():
        _float_vector(f"metric {name}", values, n)
    if "loss" in result.metrics:
        _require(bool(np.isfinite(result.metrics["loss"][:-1]).all()),
                 "the evaluation loss is not finite before the last evaluation")
    snapshots = set(spec.attention_snapshots) & set(steps.tolist())
    _require(set(result.attention) == snapshots,
             f"attention snapshots at steps {sorted(result.attention)}, where the spec and the "
             f"evaluations give {sorted(snapshots)}")
    for step, attn in result.attention.items():
        _require(isinstance(attn, np.ndarray) and attn.dtype.kind == "f"
                 and (step == last or bool(np.isfinite(attn).all())),
                 f"the attention snapshot at step {step} is not finite floats")
    _require(status == "ok" or not result.final, "a diverged run reports a trained state")
    for name, values in result.final.items():
        _require(isinstance(values, np.ndarray) and values.dtype.kind in "biuf",
                 f"final array {name} is not real numbers")
    _require(isinstance(result.wall_time_s, float | int) and math.isfinite(result.wall_time_s)
             and result.wall_time_s >= 0, "wall_time_s is not a finite time >= 0")
