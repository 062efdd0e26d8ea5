"""``attnverify claims``: one line per registered claim, or (``--json``) each claim's
parameters per profile, paper scale, overridable parameters, space and whether it trains."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_parser(sub: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``claims`` subcommand and its options."""
    p = sub.add_parser("claims", parents=[common_options], help="list the claims")
    p.add_argument("--json", action="store_true",
                   help="id, paper, statement, parameters per profile, paper scale, the "
                        "parameters a user may override, whether it trains, and the space "
                        "falsify searches (JSON)")


def run(args: argparse.Namespace) -> int:
    """Print the claims."""
    from attnverify.compare.claim import PROFILES
    from attnverify.compare.groups import flatten
    from attnverify.compare.registry import select
    from attnverify.compare.report.text import jsonable

    claims = select()
    if args.json:
        print(json.dumps([{
            "id": c.id, "paper": c.paper, "kind": str(c.kind), "statement": c.statement,
            "profiles": {p: jsonable(c.params(p)) for p in PROFILES},
            "paper_scale": c.paper_scale or None,
            "overridable": list(c.overridable),
            "space": {name: dim.describe() for name, dim in c.space.items()},
            "trains": bool(flatten(c.specs(c.params("smoke")))),
        } for c in claims], indent=2))
        return 0
    for claim in claims:
        print(f"{claim.id}  [{claim.paper}, {claim.kind}]  {claim.statement}")
    return 0
