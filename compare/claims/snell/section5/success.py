"""What counts as success in the §5 family (the official ``multihead.py``): the official loop's
evaluations, ``can_learn``'s labels of candidate heads, and the direct protocol's criterion."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnverify.compare.claims.snell.common import SUCCESS_ACC_ONLY, success_steps
from attnverify.empirics import RunResult

GOOD_ACC, BAD_ACC = 0.95, 0.6
"""multihead.py ``can_learn``: good as soon as validation accuracy > 0.95 at an evaluation; bad
when the accuracy at the last evaluation is < 0.6."""


def official_last_evaluation(params: dict[str, Any]) -> int:
    """The official loop's last evaluation: the last multiple of ``eval_every`` before the
    last step (190 of the paper's 200 steps)."""
    return (params["steps"] - 1) // params["eval_every"] * params["eval_every"]


def section5_success_text(params: dict[str, Any]) -> str:
    """How the §5 protocol counts a success, as the official outputs do."""
    return f"token acc > {GOOD_ACC} by step {official_last_evaluation(params)}"


def direct_success_text(params: dict[str, Any]) -> str:
    """How the direct protocol counts a success (``SUCCESS_ACC_ONLY``)."""
    return f"token acc >= {SUCCESS_ACC_ONLY['acc']}"


def official_evaluations(run: RunResult) -> tuple[np.ndarray, np.ndarray]:
    """Steps and token accuracies of the evaluations the official loop makes: every
    ``eval_every`` steps before the last step (0, 10, ..., 190 of 200; §5). Ours adds one
    after the last step (and at any attention snapshot), which ``can_learn`` and the success
    rate "by step 190" never see. Empty for a run of 0 steps."""
    spec = run.spec
    official = (run.eval_steps < spec.steps) & (run.eval_steps % spec.eval_every == 0)
    return run.eval_steps[official], run.metric("acc")[official]


def run_label(run: RunResult) -> str | None:
    """One single-head run's ``can_learn`` (§5): 'good' when token accuracy exceeds 0.95 at an
    evaluation, 'bad' when the last evaluation is below 0.6, else None (a diverged run is
    neither), on the official loop's evaluations (:func:`official_evaluations`)."""
    _, acc = official_evaluations(run)
    if run.diverged or not acc.size:
        return None
    if float(acc.max()) > GOOD_ACC:
        return "good"
    return "bad" if float(acc[-1]) < BAD_ACC else None


def official_success_steps(runs: Sequence[RunResult]) -> list[int | None]:
    """§5's success, "acc > 0.95 by step 190": the first official evaluation with token
    accuracy above 0.95, None when there is none. A run that diverged afterwards still
    succeeded there: the official histories keep every evaluation, NaN or not, and the
    single-head runs, which stop at success, could not diverge after it, so dropping such
    runs would count against the bundles alone."""
    out: list[int | None] = []
    for run in runs:
        steps, acc = official_evaluations(run)
        hits = np.flatnonzero(acc > GOOD_ACC)
        out.append(int(steps[hits[0]]) if hits.size else None)
    return out


def acc_success_steps(runs: Sequence[RunResult]) -> list[int | None]:
    """The direct protocol's success: token accuracy >= 0.95 at an evaluation."""
    return success_steps(list(runs), SUCCESS_ACC_ONLY)


def head_label(runs: Sequence[RunResult]) -> str | None:
    """'good', 'bad' or None (discarded) from one head's single-head runs (§5, all seeds must
    agree; a diverged run is neither)."""
    labels = {run_label(r) for r in runs}
    return labels.pop() if len(labels) == 1 else None


@dataclass(frozen=True)
class HeadState:
    """A candidate head during the lazy classification: the label its seeds so far agree on
    (None: discarded) and whether every classification seed has run."""

    label: str | None
    seeds_run: int
    complete: bool


def head_state(runs: Sequence[RunResult], classify_seeds: int) -> HeadState:
    """The state of one candidate from its runs (data seeds 0, 1, ... in order)."""
    label = head_label(runs)
    return HeadState(label, len(runs), label is None or len(runs) >= classify_seeds)
