"""``attnverify falsify``: search a claim's parameter space for a point where it is refuted
(:mod:`attnverify.compare.evaluation.falsify`), on the local process pool; the result is written to
``--out`` and kept in the cache for the next ``verify`` report."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from attnverify.compare.cli import common
from attnverify.compare.cli.inputs import UserError, check_seconds


def add_parser(sub: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``falsify`` subcommand and its options."""
    p = sub.add_parser("falsify", parents=[common_options],
                       help="search a claim's parameter space for a point where it is refuted")
    p.add_argument("claim", help="claim id (claims with a space: 'attnverify claims --json')")
    p.add_argument("--budget", type=int, default=20,
                   help="distinct points to evaluate at most (default: 20)")
    p.add_argument("--profile", default="smoke",
                   help="the profile that fixes the parameters not searched (default: smoke)")
    p.add_argument("--max-cost", type=float, metavar="SECONDS",
                   help="stop evaluating new points after this many seconds")
    p.add_argument("--seed", type=int, default=0, help="seed of the search (default: 0)")
    p.add_argument("--out", default="attnverify-falsify", help="result directory")
    p.add_argument("--workers", type=int, help="worker processes (default: number of cores)")
    common.add_device(p)
    p.set_defaults(executor="local", connect_timeout=10.0)  # falsify runs on the local pool


def run(args: argparse.Namespace) -> int:
    """Search, write ``--out/falsify-CLAIM.json`` and print what was found."""
    from attnverify.compare.registry import select

    common.check_common_options(args)
    if args.budget < 1:
        raise UserError(f"--budget must be an integer >= 1; got {args.budget}")
    check_seconds(args.max_cost, "--max-cost")
    try:
        (claim,) = select(None, args.claim)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not claim.space:
        searchable = [c.id for c in select() if c.space]
        raise UserError(f"claim {claim.id} declares no parameter space to search; claims that "
                        f"do: {', '.join(searchable)}")
    out, store = common.out_and_store(args)

    from attnverify.compare.evaluation import falsify

    log = (lambda _: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    with common.executor(args, store) as executor:
        result = falsify.falsify(claim, args.profile, executor, budget=args.budget,
                                 seed=args.seed, max_cost=args.max_cost, log=log)
    path = out / f"falsify-{claim.id}.json"
    falsify.save(result, path, falsify.result_path(store.root, claim.id, args.profile))
    print(f"{claim.id} (profile {args.profile}, seed {args.seed}, budget {args.budget}): "
          f"{'COUNTEREXAMPLE' if result.found else 'none found'}")
    print(result.summary())
    if result.found:
        print(f"reproduce: {result.reproduce()}")
    print(f"wrote {path.resolve()} (shown in the next 'verify' report)")
    return 0
