"""``attnverify bench``: training and theory throughput on this machine
(:mod:`attnverify.compare.bench`), printed as a table and optionally written as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from attnverify.compare.cli.inputs import UserError, check_output_file


def add_parser(sub: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``bench`` subcommand and its options."""
    p = sub.add_parser("bench", parents=[common_options],
                       help="measure training and theory throughput on this machine")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument("--families", default="snell_copying,snell_multihead,musat_retrieval,bao_lm",
                   help="comma-separated model families (default: all)")
    p.add_argument("--configs", default="quick,full",
                   help="comma-separated: quick, full (default: quick,full)")
    p.add_argument("--repeats", type=int, default=3, help="repeats per number (median)")
    p.add_argument("--verify", action="store_true",
                   help="also time 'verify --profile quick' cold and warm (minutes)")
    p.add_argument("--compile", action="store_true",
                   help="also time the reference loop with the loss compiled by torch.compile "
                        "(beside the eager one; needs a C++ compiler)")


def _split_choice(text: str, accepted: tuple[str, ...], option: str) -> tuple[str, ...]:
    """A comma-separated choice of ``accepted`` values; UserError naming any other."""
    chosen = tuple(t for t in text.split(",") if t)
    unknown = [t for t in chosen if t not in accepted]
    if unknown or not chosen:
        raise UserError(f"{option}: unknown {', '.join(unknown) or 'empty value'}; accepted: "
                        f"{', '.join(accepted)}")
    return chosen


def run(args: argparse.Namespace) -> int:
    """Measure, print the table, write ``--json``."""
    from attnverify.compare import bench

    families = _split_choice(args.families, bench.FAMILIES, "--families")
    configs = _split_choice(args.configs, bench.CONFIGS, "--configs")
    if args.repeats < 1:
        raise UserError(f"--repeats must be an integer >= 1; got {args.repeats}")
    if args.json is not None:
        check_output_file(args.json, "--json")
    log = (lambda _: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    result = bench.run_bench(families, configs, args.repeats, args.verify, log,
                             with_compile=args.compile)
    print(bench.table(result))
    if args.json is not None:
        from attnverify.empirics.store.output_paths import write_atomic

        write_atomic(args.json, json.dumps(result, indent=2) + "\n", "--json")
        print(f"wrote {Path(args.json).resolve()}")
    return 0
