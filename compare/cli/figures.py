"""``attnverify figures``: regenerate every figure of :mod:`attnverify.paper_figures` (trains
only the runs that are not cached)."""

from __future__ import annotations

import argparse
from typing import Any

from attnverify.compare.cli import common


def add_parser(sub: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``figures`` subcommand and its options."""
    p = sub.add_parser("figures", parents=[common_options],
                       help="regenerate every figure (trains only what is not cached)")
    p.add_argument("--profile", default="quick", help="smoke, quick (default) or full")
    p.add_argument("--out", default="attnverify-figures", help="figure directory")
    p.add_argument("--workers", type=int,
                   help="worker processes for runs not cached (default: number of cores)")
    common.add_device(p)


def run(args: argparse.Namespace) -> int:
    """Write the figures into ``--out``."""
    common.check_common_options(args)
    out, store = common.out_and_store(args)
    from attnverify.compare.report.figures import regenerate

    written = regenerate(out, args.profile, store, workers=args.workers, progress=not args.quiet,
                         device=args.device)
    print(f"wrote {len(written)} files to {out.resolve()}")
    return 0
