"""``attnverify diff OLD NEW``: what changed between two verification reports, claim by claim
(:mod:`attnverify.compare.report.diff`). Exits with 0 when nothing differs and 1 when something
does, as ``diff`` does, so a script can require that a refactor or a rebuild from the archives
left every verdict as it was."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from attnverify.compare.cli.common import strict_json
from attnverify.compare.cli.inputs import UserError

if TYPE_CHECKING:
    from attnverify.compare.report.view import VerifyReport

EXIT_DIFFERENT = 1


def add_parser(sub: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``diff`` subcommand and its options."""
    p = sub.add_parser("diff", parents=[common_options],
                       help="what changed between two reports (verdicts, rules, runs, numbers); "
                            "exit 1 where something did")
    p.add_argument("old", help="a report directory written by verify, or its report.json")
    p.add_argument("new", help="the report to compare with it")
    p.add_argument("--only-verdicts", action="store_true",
                   help="compare verdicts and reasons only (e.g. quick against full, whose runs "
                        "differ by construction)")
    p.add_argument("--rtol", type=float, default=0.0,
                   help="relative tolerance for p-values and measured values (default 0: "
                        "exact; the same runs analysed by the same code give the same numbers)")
    p.add_argument("--json", action="store_true", help="the difference as JSON")


def run(args: argparse.Namespace) -> int:
    """Print the difference; 0 when the reports agree, 1 when they differ."""
    from attnverify.compare.report.diff import diff_reports

    if not (args.rtol >= 0 and math.isfinite(args.rtol)):
        raise UserError(f"--rtol must be a finite number >= 0; got {args.rtol}")
    old, new = (_load(path) for path in (args.old, args.new))
    result = diff_reports(old, new, only_verdicts=args.only_verdicts, rtol=args.rtol)
    print(strict_json(result.to_dict(), indent=2) if args.json else result.text())
    return 0 if result.same else EXIT_DIFFERENT


def _load(path: str) -> VerifyReport:
    """The report at ``path`` (a report directory or its report.json; the rule is
    :meth:`VerifyReport.load`'s), or a one-line error."""
    from attnverify.compare.report.view import VerifyReport

    try:
        return VerifyReport.load(path)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
        raise UserError(f"no report at {path}: give a directory written by 'attnverify verify' "
                        f"(it holds report.json) or a report.json file") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path} is not a report.json written by attnverify verify "
                        f"({type(exc).__name__}: {exc})") from exc
