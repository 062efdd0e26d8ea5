"""Ask before a long training: ``verify`` states what it would train and for how long before it
starts, and goes ahead unasked only when the estimate is below :data:`CONFIRM_ABOVE_S` of wall
time (the ``quick`` profile on a laptop), or with ``--yes``.

The estimate is the dry run's (:mod:`attnverify.compare.evaluation.plan`): the runs of each claim's
first stage the store lacks (and of later stages the store decides), timed from the stored runs of
their model family, else from the family's reference speed (``ModelConfig.seconds_per_cost``);
the wall time is their CPU time over the workers, or the longest run when that is longer. On a
terminal the question is asked; in a batch job (stdin not a terminal) the command ends in one
line saying how to go ahead, and nothing is trained or written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from attnverify.compare.cli.inputs import UserError
from attnverify.compare.evaluation.cost_guard import CONFIRM_ABOVE_S, long_training

if TYPE_CHECKING:
    from attnverify.compare.claim import Claim
    from attnverify.empirics import RunSpec, RunStore


def add_option(parser: argparse.ArgumentParser) -> None:
    """The ``--yes`` option of ``verify``."""
    parser.add_argument("--yes", action="store_true",
                        help=f"train without asking when the estimate is over "
                             f"{CONFIRM_ABOVE_S / 3600:.0f} h (a batch job, or a profile you "
                             f"have planned with --dry-run)")


def ask_on_stderr(question: str) -> str:
    """``question`` on stderr (stdout may be a JSON stream), the answer from stdin; end of
    input is no."""
    print(question, end="", file=sys.stderr, flush=True)
    return sys.stdin.readline()


def confirm_cost(args: argparse.Namespace, claims: Sequence[Claim], store: RunStore,
                 overrides: dict[str, Any], points: dict[str, dict[str, Any]],
                 workers: int, place: Callable[[RunSpec], RunSpec],
                 ask: Callable[[str], str] = ask_on_stderr) -> None:
    """Return when the training ahead is short, ``--yes`` was given, or the user agreed;
    UserError (one line) otherwise."""
    if args.yes:
        return
    what = long_training(claims, args.profile, store, overrides, points, workers, place)
    if what is None:
        return
    if not sys.stdin.isatty():
        raise UserError(f"{what}; pass --yes to go ahead (--dry-run shows the plan); "
                        f"nothing was trained")
    answer = ask(f"{what}. Go ahead? [y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        raise UserError("not confirmed; nothing was trained")
