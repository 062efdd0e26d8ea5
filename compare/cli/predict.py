"""``attnverify predict PAPER.QUANTITY --NAME VALUE ...``: a theory value as JSON, without
importing torch. The parameters are the tokens after the quantity, read by
:func:`~attnverify.compare.cli.values.parse_options` (the grammar ``verify --param`` uses)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from attnverify.compare.cli.inputs import UserError
from attnverify.compare.cli.values import parse_options


def add_parser(sub: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``predict`` subcommand; its ``--help`` lists every quantity with its parameters."""
    p = sub.add_parser("predict", parents=[common_options],
                       help="print a theory value as JSON: predict snell.kappa --V 60 --L 40")
    p.add_argument("quantity", help="PAPER.QUANTITY, e.g. snell.kappa (listed below)")
    p.help_tail = _quantities_help


def _quantities_help() -> str:
    """``predict --help``: every quantity with its parameters."""
    import inspect

    from attnverify import theory
    from attnverify.theory.registry import parameters

    def usage(param: inspect.Parameter) -> str:
        return (f"--{param.name} VALUE" if param.default is inspect.Parameter.empty
                else f"[--{param.name} {param.default}]")

    return "\nquantities and their parameters ([...]: optional, with its default):\n" + "".join(
        f"  {name} {' '.join(map(usage, parameters(name).values()))}\n"
        for name in theory.QUANTITIES)


def run(args: argparse.Namespace, tokens: Sequence[str]) -> int:
    """Print the prediction of ``args.quantity`` at the parameters ``tokens`` name."""
    from attnverify import theory

    if args.quantity not in theory.QUANTITIES:
        raise UserError(f"unknown quantity {args.quantity!r}; accepted: "
                        f"{', '.join(theory.QUANTITIES)}")
    params = parse_options(tokens)
    try:
        prediction = theory.predict(args.quantity, **params)
    except (ValueError, TypeError) as exc:
        raise UserError(str(exc)) from None
    print(json.dumps({"quantity": args.quantity, **prediction.to_dict()}, indent=2))
    return 0
