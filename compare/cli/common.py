"""What several subcommands share: the checks of ``--profile``, ``--workers`` and ``--device``,
the run store and ``--out``, the executor ``--executor`` names, and the claims ``--paper`` and
``--claim`` select. Heavy modules (torch) are imported inside the functions, so that ``predict``
and ``--version`` stay light."""

from __future__ import annotations

import argparse
import errno
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnverify.compare.cli.inputs import (
    UserError,
    check_output_dir,
    out_dir,
    report_out,
    store_root,
)

if TYPE_CHECKING:
    from attnverify.compare.claim import Claim
    from attnverify.empirics import RunStore
    from attnverify.empirics.execute.executor import Executor

DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
"""Write failures of the machine, not of attnverify: a full disk, a quota, a read-only mount."""


def add_device(parser: argparse.ArgumentParser) -> None:
    """The ``--device`` option of the commands that train."""
    parser.add_argument("--device", choices=("cpu", "cuda"),
                        help="train on this device (default: cpu; cuda needs a GPU torch can "
                             "use)")


def store(args: argparse.Namespace) -> RunStore:
    """The run store of ``--cache`` (or the default location)."""
    from attnverify.empirics import RunStore

    run_store = RunStore(store_root(args.cache))
    try:
        run_store.check_layout()
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return run_store


def check_common_options(args: argparse.Namespace) -> None:
    """--profile, and --workers and --device where the command has them, before anything is
    written."""
    from attnverify.compare.claim import check_profile

    try:
        check_profile(args.profile)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if getattr(args, "seed_group", None) is not None and args.seed_group < 1:
        raise UserError(f"--seed-group must be an integer >= 1; got {args.seed_group}")
    if getattr(args, "workers", None) is not None and args.workers < 1:
        raise UserError(f"--workers must be an integer >= 1; got {args.workers}")
    from attnverify.compare.api import MAX_WORKERS

    if getattr(args, "workers", None) is not None and args.workers > MAX_WORKERS:
        raise UserError(f"--workers must be <= {MAX_WORKERS}: each worker is a process with "
                        f"its own torch and model (hundreds of MB); got {args.workers}")
    if getattr(args, "device", None) is not None:  # before anything is written
        from attnverify.empirics.execute.executor import ExecutorSetupError, check_device

        try:
            check_device(args.device)
        except ExecutorSetupError as exc:
            raise UserError(str(exc)) from None


def out_and_store(args: argparse.Namespace, report: bool = False) -> tuple[Path, RunStore]:
    """``--out`` and the run store, both checked to be writable directories (or creatable);
    with ``report``, ``--out`` is also checked to be replaceable by a report (absent, or a
    directory holding only an earlier report)."""
    out = report_out(args.out) if report else out_dir(args.out)
    run_store = store(args)
    check_output_dir(run_store.root,
                     "--cache" if args.cache is not None else "the cache directory")
    return out, run_store


def executor(args: argparse.Namespace, run_store: RunStore) -> Executor:
    """The executor ``--executor`` names; setup problems (no ``distributed``, a malformed or
    unreachable scheduler address) are user errors."""
    from attnverify.empirics import LocalExecutor
    from attnverify.empirics.execute.executor import ExecutorSetupError

    try:
        if args.executor == "local":
            return LocalExecutor(run_store, workers=args.workers, progress=not args.quiet,
                                 device=args.device, seed_group=getattr(args, "seed_group", None))
        from attnverify.empirics.execute.dask_executor import DaskExecutor

        return DaskExecutor(run_store, args.executor, workers=args.workers,
                            progress=not args.quiet, connect_timeout=args.connect_timeout,
                            device=args.device, seed_group=getattr(args, "seed_group", None))
    except ExecutorSetupError as exc:
        raise UserError(str(exc)) from None


def selected(args: argparse.Namespace) -> list[Claim]:
    """The claims ``--paper`` and ``--claim`` select (all without either; ``--claim`` may be
    repeated: every claim named, in the registry's order)."""
    from attnverify.compare.registry import select_many

    try:
        claims = select_many(args.claim or [], args.paper)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not claims:
        raise UserError(f"no claims for paper {args.paper!r} yet")
    return claims


def strict_json(data: Any, indent: int) -> str:
    """Strict JSON: a diverged run's NaN and inf become null (a bare NaN is no JSON)."""
    from attnverify.compare.report.text import jsonable

    return json.dumps(jsonable(data), indent=indent, allow_nan=False)
