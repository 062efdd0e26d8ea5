"""The argument parser: the top level (``--version``, the options every subcommand takes) and
one subparser per subcommand, each defined by the subcommand's own module (its
``add_parser``). A usage error prints one line and exits with 2; an option that takes one value
refuses a second one (:class:`~attnverify.compare.cli.inputs.Once`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NoReturn

from attnverify import __version__
from attnverify.compare.cli import (
    bench,
    claims,
    corpus,
    diff,
    falsify,
    figures,
    predict,
    runs,
    verify,
)
from attnverify.compare.cli.inputs import Once

EXIT_USAGE = 2

SUBCOMMANDS = (verify, falsify, predict, figures, bench, claims, runs, corpus, diff)
"""The subcommand modules, in the order ``--help`` lists them. Each defines
``add_parser(sub, common)`` and ``run(args)`` (``predict``: ``run(args, tokens)``)."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit 2), :class:`Once` as the default action and
    subparsers that take no abbreviations."""

    help_tail: Callable[[], str] | None = None
    """More text for ``--help``, computed only when asked (e.g. the theory quantities)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.register("action", None, Once)  # one value per option: a second one is refused
        self.register("action", "store", Once)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        return super().format_help() + (self.help_tail() if self.help_tail else "")


def build_parser() -> argparse.ArgumentParser:
    """The ``attnverify`` parser with every subcommand."""
    # shared options may be given at any level; SUPPRESS keeps a nested parser from
    # overwriting a value given earlier with its default
    common = Parser(add_help=False)
    common.add_argument("--cache", metavar="DIR", default=argparse.SUPPRESS,
                        help="run store directory (default: $ATTNVERIFY_CACHE or "
                             "~/.cache/attnverify)")
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="no progress bars or cache lines")
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="also one line per run looked up in the store (its key, its "
                             "configuration, cached or not) and per figure")
    parser = Parser(prog="attnverify",
                    description="Check theories of how attention learns against real "
                                "training runs.")
    parser.set_defaults(cache=None, quiet=False, verbose=False)
    parser.add_argument("--version", action="version", version=f"attnverify {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for module in SUBCOMMANDS:
        module.add_parser(sub, common)
    return parser
