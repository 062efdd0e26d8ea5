"""``attnverify verify``: evaluate the selected claims, write the report and print a verdict table;
``--dry-run`` prints what would be trained instead (:mod:`attnverify.compare.evaluation.plan`), and
``--claim ID --param NAME=VALUE`` evaluates one claim at another point of its parameters (values
read by :mod:`attnverify.compare.cli.values`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from attnverify.compare.cli import common, cost_guard
from attnverify.compare.cli.inputs import (
    UserError,
    check_corpus,
    check_corpus_fits,
    check_llm_dir,
    check_seconds,
)
from attnverify.compare.cli.values import parse_assignment

if TYPE_CHECKING:
    from attnverify.compare.claim import Claim
    from attnverify.compare.report.document import Report


def add_parser(sub: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``verify`` subcommand and its options."""
    p = sub.add_parser("verify", parents=[common_options],
                       help="evaluate claims and write the report")
    p.add_argument("--paper", help="snell, musat or bao (default: all)")
    p.add_argument("--claim", action="append",
                   help="a claim id (see 'attnverify claims'; repeatable)")
    p.add_argument("--profile", default="quick", help="smoke, quick (default) or full")
    p.add_argument("--out", default="attnverify-report", help="report directory")
    p.add_argument("--executor", default="local",
                   help="local (default: a process pool), dask-local (a Dask LocalCluster on "
                        "this machine) or dask://HOST:PORT (a running Dask scheduler)")
    p.add_argument("--workers", type=int,
                   help="worker processes of local and dask-local (default: number of cores)")
    p.add_argument("--seed-group", type=int, metavar="N",
                   help="at most N seeds of a seed-batched model train as one unit (default: "
                        "8; 1 trains and stores every run on its own, for a long sweep that "
                        "may be stopped; results do not depend on it)")
    common.add_device(p)
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="how long to try to reach a Dask scheduler (default: 10)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="with --claim: evaluate the claim at this parameter value instead of "
                        "the profile's (repeatable; values: 3, 0.5, true, [2, 1], text)")
    p.add_argument("--corpus", metavar="DIR",
                   help="train the Bao language models on a local WikiText-format corpus "
                        "(wiki.train.tokens, wiki.valid.tokens) instead of the random-walk task")
    p.add_argument("--llm-dir", metavar="DIR",
                   help="a local pretrained causal language model (a directory that "
                        "save_pretrained wrote, with its tokenizer) for "
                        "musat.llms_solve_by_prompting; needs the 'llm' extra (transformers). "
                        "Without it that claim is not run")
    p.add_argument("--json", action="store_true",
                   help="print the summary as JSON on stdout instead of the verdict table: "
                        "verdict counts per kind, each claim's id, kind, verdict and reason, "
                        "and the report's path")
    p.add_argument("--fail-on", choices=FAIL_ON, metavar="VERDICT",
                   help="exit with code 1 when a claim's verdict is this or worse: 'refuted' "
                        "(any claim refuted) or 'inconclusive' (any claim not confirmed); the "
                        "report is written either way (default: exit 0 whatever the verdicts)")
    cost_guard.add_option(p)
    p.add_argument("--dry-run", action="store_true",
                   help="list each claim's runs, how many are cached and the estimated CPU "
                        "time of the rest (measured from the cached runs); train nothing")


def run(args: argparse.Namespace) -> int:
    """Evaluate the claims, write ``--out/report.{json,html,md}``, print the verdict table."""
    common.check_common_options(args)
    if not (args.executor in ("local", "dask-local") or args.executor.startswith("dask://")):
        raise UserError(f"unknown executor {args.executor!r}; accepted: local, dask-local, "
                        f"dask://HOST:PORT")
    claims = common.selected(args)
    check_seconds(args.connect_timeout, "--connect-timeout")
    if args.dry_run:
        return _dry_run(args, claims)
    out, store = common.out_and_store(args, report=True)
    overrides, points = _overrides_and_points(args, claims)

    from attnverify.compare.api import build_report

    with common.executor(args, store) as executor:
        cost_guard.confirm_cost(args, claims, store, overrides, points,
                                workers=executor.workers,
                                place=executor.place)
        report = build_report(claims, args.profile, executor, overrides, points)
    try:
        paths = report.write(out)
    except ValueError as exc:  # something else was put into --out while the claims ran
        raise UserError(str(exc)) from None
    if args.json:
        print(json.dumps(summary_json(report, paths["html"].resolve()), indent=2))
        return failing_exit(report, args.fail_on)
    print(verdict_table(report, colour=use_colour(sys.stdout)))
    print(f"\n{report.summary()} (profile {args.profile})")
    if banner := report.banner():
        print(banner)
    print(f"report: {paths['html'].resolve()}")
    return failing_exit(report, args.fail_on, say=True)


FAIL_ON = ("refuted", "inconclusive")
"""``--fail-on``'s verdicts: each fails on itself and on every verdict worse than it."""
FAILING = {"refuted": {"refuted"}, "inconclusive": {"refuted", "inconclusive"}}


def failing_exit(report: Report, fail_on: str | None, say: bool = False) -> int:
    """1 where ``--fail-on`` is given and some claim's verdict is among those it fails on (the
    ids named on stderr when ``say``), else 0."""
    if fail_on is None:
        return 0
    failed = [o.claim.id for o in report.outcomes
              if str(o.assessment.verdict) in FAILING[fail_on]]
    if failed and say:
        verdicts = " or ".join(sorted(FAILING[fail_on]))
        print(f"--fail-on {fail_on}: {len(failed)} claim(s) {verdicts}: {', '.join(failed)}",
              file=sys.stderr)
    return 1 if failed else 0


CLAIM_WIDTH, REASON_WIDTH, THEORY_WIDTH, MEASURED_WIDTH = 44, 20, 28, 48
"""The verdict table's column widths (characters); longer theory and measured texts wrap onto
the next lines of their row (at spaces; an id is never broken)."""


VERDICT_COLOURS = {"confirmed": "32", "refuted": "31", "inconclusive": "33"}
"""ANSI colours of the terminal table's verdicts: green, red, yellow."""


def use_colour(stream: TextIO) -> bool:
    """Whether to colour the verdicts printed to ``stream``: never where ``NO_COLOR`` is set
    (no-color.org), else wherever ``FORCE_COLOR`` is set, else on a terminal (both variables:
    any non-empty value)."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    from attnverify.empirics.execute.progress import is_terminal

    return is_terminal(stream)


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` on lines of at most ``width`` characters, broken at spaces (a word longer than
    the width, such as a long number with its unit, is broken only where it must be)."""
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def verdict_table(report: Report, colour: bool = False) -> str:
    """The terminal's verdict table, one block per kind, in fixed-width columns; a theory or
    measured text longer than its column continues on the row's next lines. With ``colour``,
    each verdict in its ANSI colour (:data:`VERDICT_COLOURS`; the columns stay where they
    are)."""
    from attnverify.compare.claim import KIND_SUMMARY, verdict_word
    from attnverify.compare.report.cells import fmt, measured_text

    width = min(CLAIM_WIDTH, max(len(o.claim.id) for o in report.outcomes))
    lines = []
    for kind in report.kinds():
        lines += [f"{KIND_SUMMARY[kind].capitalize()}:",
                  f"  {'claim':<{width}}  {'verdict':<12}  {'reason':<{REASON_WIDTH}}  "
                  f"{'theory':<{THEORY_WIDTH}}  measured [95% CI]"]
        for o in (o for o in report.outcomes if o.claim.kind == kind):
            a = o.assessment
            verdict = f"{verdict_word(kind, a.verdict):<12}"
            if colour:
                verdict = f"\033[{VERDICT_COLOURS[a.verdict]}m{verdict}\033[0m"
            theory = _wrapped(fmt(a.theory), THEORY_WIDTH)
            measured = _wrapped(measured_text(a.empirical), MEASURED_WIDTH)
            blank = " " * 12
            for i in range(max(len(theory), len(measured))):
                first = i == 0
                lines.append(
                    f"  {(o.claim.id if first else ''):<{width}}  {verdict if first else blank}"
                    f"  {(str(a.reason) if first else ''):<{REASON_WIDTH}}  "
                    f"{(theory[i] if i < len(theory) else ''):<{THEORY_WIDTH}}  "
                    f"{measured[i] if i < len(measured) else ''}".rstrip())
    return "\n".join(lines)


def summary_json(report: Report, html: Path) -> dict[str, Any]:
    """What ``verify --json`` prints: the profile, verdict counts per kind, each claim's id,
    kind, verdict and reason, and the path of ``report.html``."""
    return {"profile": report.profile,
            "summary": {str(kind): report.counts(kind) for kind in report.kinds()},
            "claims": [{"id": o.claim.id, "kind": str(o.claim.kind),
                        "verdict": str(o.assessment.verdict),
                        "reason": str(o.assessment.reason)} for o in report.outcomes],
            "report": str(html)}


def _dry_run(args: argparse.Namespace, claims: Sequence[Claim]) -> int:
    """``verify --dry-run``: what would be trained and roughly how long it takes; nothing is
    trained or written (:mod:`compare.evaluation.plan`)."""
    from attnverify.compare.evaluation.plan import (
        first_stages,
        measured_rates,
        other_profile_line,
        plan,
        plan_table,
    )
    from attnverify.empirics import LocalExecutor

    store = common.store(args)
    overrides, points = _overrides_and_points(args, claims)
    executor = LocalExecutor(store, workers=args.workers, progress=False, device=args.device)
    plans = plan(claims, args.profile, store, overrides, points, place=executor.place)
    done = {key: info.fraction_done
            for key, info in store.checkpoints.by_run(store.has).items()}
    rates = measured_rates(store)
    print(plan_table(plans, rates, executor.workers, done))
    if args.profile != "full":  # what the papers' scale would cost (first stages only)
        try:
            stages = first_stages(claims, "full", store, overrides, executor.place)
        except ValueError as exc:  # e.g. a --corpus long enough here, too short at full
            print(f"At full: not estimated ({exc})")
        else:
            print(other_profile_line("full", stages, rates, executor.workers, done,
                                     params_given=bool(points)))
    print(f"(profile {args.profile}; estimates from the runs in {store.root}; nothing was "
          f"trained or written)")
    return 0


def _overrides_and_points(args: argparse.Namespace, claims: Sequence[Claim]
                          ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``--corpus`` and ``--llm-dir`` as overrides of the claims that take them, ``--param``
    as a point."""
    overrides = {}
    if args.corpus is not None:
        overrides["corpus"] = check_corpus(args.corpus)
    if args.llm_dir is not None:
        overrides["llm_dir"] = check_llm_dir(args.llm_dir)
    points = claim_point(claims, args.profile, args.param, overrides)
    check_corpus_fits(claims, args.profile, overrides, points)
    return overrides, points


def claim_point(claims: Sequence[Claim], profile: str, items: Sequence[str] | None,
                overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``--param NAME=VALUE`` items as parameters of the one selected claim (each value read by
    :func:`~attnverify.compare.cli.values.parse_value`, then shaped like the profile's value),
    checked by ``Claim.checked_specs`` (the claim's checks, then a RunSpec rejects a bad size)
    before anything is trained or written."""
    if not items:
        return {}
    if len(claims) != 1:
        raise UserError("--param needs --claim ID: parameters belong to one claim "
                        "(see 'attnverify claims --json' for each claim's parameters)")
    claim = claims[0]
    values = dict(parse_assignment(item) for item in items)
    from attnverify.compare.evaluation.verify import checked_point

    defaults = claim.params(profile)
    if unknown := [name for name in values if name not in defaults]:  # without the prefix
        raise UserError(f"unknown parameter {unknown[0]!r} of {claim.id}; accepted: "
                        f"{', '.join(defaults)}")
    try:  # validation only: once the point is checked, an exception is a bug (a traceback)
        return {claim.id: checked_point(claim, profile, values, overrides)}
    except (ValueError, TypeError) as exc:
        raise UserError(f"--param: {exc}") from None
