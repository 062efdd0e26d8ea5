"""The entry point: parse the command line, run the subcommand, and turn what goes wrong into an
exit code. A user error (:class:`~attnverify.compare.cli.inputs.UserError`, a damaged cache
entry, a full disk) prints one line on stderr and exits with 2, without a traceback; Ctrl-C and
SIGTERM stop the workers, keep the finished runs cached and exit with 130 and 143."""

from __future__ import annotations

import io
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn

from tqdm.auto import tqdm

from attnverify.compare.cli import predict
from attnverify.compare.cli.common import DISK_ERRORS
from attnverify.compare.cli.inputs import UserError, one_value_per_option
from attnverify.compare.cli.parser import EXIT_USAGE, SUBCOMMANDS, build_parser

COMMANDS = {module.__name__.rsplit(".", 1)[1]: module for module in SUBCOMMANDS}
"""Subcommand name -> its module."""


class _TqdmHandler(logging.Handler):
    """Log lines that do not tear the progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        tqdm.write(self.format(record), file=sys.stderr)


def _setup_logging(quiet: bool, verbose: bool = False) -> None:
    """Warnings only with ``--quiet``; one line per run and per figure with ``--verbose``
    (debug); otherwise the progress and what a claim in stages does (info)."""
    logger = logging.getLogger("attnverify")
    logger.handlers[:] = [_TqdmHandler()]
    logger.handlers[0].setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    logger.setLevel(logging.WARNING if quiet else logging.DEBUG if verbose else logging.INFO)


def _is_user_error(exc: Exception) -> bool:
    """UserError, a damaged cache entry (without importing torch for ``predict``), a disk
    that refuses writes (the store's writes are atomic, so nothing half-written is left), or a
    run whose worker died at every attempt (the finished runs are stored)."""
    store = sys.modules.get("attnverify.empirics.store.run_store")
    pool = sys.modules.get("attnverify.empirics.execute.worker_pool")
    return (isinstance(exc, UserError)
            or (isinstance(exc, OSError) and exc.errno in DISK_ERRORS)
            or (store is not None and isinstance(exc, store.CorruptEntryError))
            or (pool is not None and isinstance(exc, pool.WorkerDiedError)))


def _one_line(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot write{where}: {exc.strerror}; free some space or choose another --cache"
    return str(exc)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: handled like Ctrl-C, but the exit code is 143 (128 + SIGTERM)."""


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Inside: SIGTERM (``kill``, a batch scheduler's stop) takes the path of Ctrl-C, so the
    executor stops its workers and the finished runs stay cached. Only the main thread can set a
    handler; the previous one is put back on exit (tests call :func:`main` in-process)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> NoReturn:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``attnverify`` with ``argv`` (default: ``sys.argv[1:]``); the exit code."""
    with _sigterm_as_interrupt():
        return _main(argv)


def _tolerant_output() -> None:
    """Under an encoding that lacks a character the output holds (``PYTHONIOENCODING=ascii``,
    a C locale), print it escaped (``\\xa7``) instead of failing after the work is done."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def _closed_streams_to_devnull() -> None:
    """A standard stream the caller closed (``2>&-``, ``<&-``) is ``None`` in Python: the
    progress bar and the cost guard's terminal check would fail on it after or before the
    work. Such a stream reads or writes the null device instead: nothing is shown, every run
    is stored, and a closed stdin is a batch job (the cost guard stops in one line)."""
    if sys.stdin is None:
        sys.stdin = open(os.devnull)  # noqa: SIM115 -- the process's stdin, kept open
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w"))  # noqa: SIM115 -- kept open


def _main(argv: Sequence[str] | None) -> int:
    _closed_streams_to_devnull()
    _tolerant_output()
    parser = build_parser()
    try:
        with one_value_per_option():
            args, extra = parser.parse_known_args(argv)
        if extra and args.command != "predict":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, one line printed)
        return int(exc.code or 0)
    _setup_logging(getattr(args, "quiet", False), getattr(args, "verbose", False))
    try:
        if args.command == "predict":  # its parameters are the tokens argparse left over
            return predict.run(args, extra)
        return COMMANDS[args.command].run(args)
    except BrokenPipeError:  # e.g. piped into head: not an error
        os._exit(0)
    except KeyboardInterrupt as exc:
        print("attnverify: interrupted; finished runs are cached, run again to resume",
              file=sys.stderr)
        return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
    except Exception as exc:
        if not _is_user_error(exc):
            raise
        print(f"attnverify: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
