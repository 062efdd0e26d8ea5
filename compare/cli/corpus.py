"""``attnverify corpus``: build a corpus in the WikiText layout from local English documents
(:mod:`attnverify.empirics.tasks.wikitext_layout`), for ``verify --corpus``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from attnverify.compare.cli.inputs import UserError, out_dir


def add_parser(sub: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``corpus`` subcommand and its options."""
    p = sub.add_parser("corpus", parents=[common_options],
                       help="build a WikiText-layout corpus from local text or reST files",
                       description="Turn the .txt and .rst files under SOURCE (files or "
                                   "folders) into wiki.{train,valid,test}.tokens in --out, "
                                   "for 'verify --corpus'. Nothing is downloaded.")
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="files or folders to read")
    p.add_argument("--out", required=True, help="corpus directory to write")
    p.add_argument("--min-count", type=int, default=3,
                   help="tokens seen fewer times in the training split become <unk> "
                        "(default: 3, as WikiText-2)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the document order that assigns the splits (default: 0)")


def run(args: argparse.Namespace) -> int:
    """Write the corpus and say what it holds."""
    out = out_dir(args.out)
    from attnverify.empirics.tasks.wikitext_layout import build_wikitext

    try:
        summary = build_wikitext([Path(s) for s in args.sources], out, args.min_count,
                                 args.seed)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    print(f"wrote {out.resolve()}: {summary.text()}")
    return 0
