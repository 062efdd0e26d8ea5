"""``attnverify runs pack`` and ``runs unpack``: write cached runs into a gzipped tar archive
and import them on another machine (:mod:`attnverify.empirics.store.archive`). ``pack`` takes run
keys, or the runs a ``verify`` reads (``--paper``, ``--claim``, ``--profile``), and leaves out
the runs of earlier archives (``--except``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnverify.compare.cli import common
from attnverify.compare.cli.inputs import UserError, check_output_file

if TYPE_CHECKING:
    from attnverify.empirics import RunStore


def add_parsers(actions: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``pack`` and ``unpack`` actions of ``runs``."""
    k = actions.add_parser("pack", parents=[common_options],
                           help="write runs into an archive, to move them to another machine")
    k.add_argument("file", help="the archive to write (a gzipped tar)")
    k.add_argument("keys", nargs="*", help="run keys (default: every current run)")
    k.add_argument("--paper", help="instead of keys: the runs 'verify --paper PAPER' reads")
    k.add_argument("--claim", action="append",
                   help="instead of keys: the runs of a claim's verify (repeatable)")
    k.add_argument("--profile", help="with --paper or --claim: the profile (default: quick; "
                                     "alone: every claim at this profile)")
    k.add_argument("--except", dest="exclude", action="append", default=[], metavar="ARCHIVE",
                   help="leave out the runs this archive holds (repeatable): pack what was "
                        "trained since, as the next part of a set split over archives")
    actions.add_parser("unpack", parents=[common_options],
                       help="import the runs of archives made by 'runs pack' (each checked)"
                       ).add_argument("files", nargs="+", metavar="file",
                                      help="the archives (a set split over several files: all "
                                           "of them, in any order)")


def pack(args: argparse.Namespace, store: RunStore) -> None:
    """``runs pack FILE [KEY ...]``: the archive, and one line saying what went in."""
    from attnverify.empirics.store.archive import pack as pack_runs

    keys, scope = args.keys or None, ""
    if args.paper or args.claim or args.profile:
        if args.keys:
            raise UserError("name run keys or a verify (--paper, --claim, --profile), "
                            "not both")
        keys, scope = _verify_keys(args, store)
    check_output_file(args.file, "the archive")
    left_out = 0
    if args.exclude:
        keys, left_out = _not_archived(args.exclude, args.file, keys, store)
    try:
        done = pack_runs(store, args.file, keys)
    except KeyError as exc:
        raise UserError(f"no run {exc.args[0]!r} in {store.root} (see 'attnverify runs "
                        f"list')") from None
    except OSError as exc:
        if exc.errno in common.DISK_ERRORS:
            raise
        raise UserError(f"cannot write {args.file}: {exc.strerror}") from None
    size = Path(args.file).stat().st_size / 2**20
    print(f"packed {done.packed} runs from {store.root} into {args.file} ({size:.1f} "
          f"MiB)" + (f"; {done.stale} made by other code left out (never read again)"
                     if done.stale else "")
          + (f"; {left_out} already in the --except archives left out"
             if left_out else ""), file=sys.stderr)
    if scope:
        print(scope, file=sys.stderr)


def unpack(args: argparse.Namespace, store: RunStore) -> None:
    """``runs unpack FILE ...``: import every archive, one line each."""
    from attnverify.empirics.store.archive import unpack as unpack_runs

    _require_archives(args.files)  # before importing: a typo should not half-import
    for file in args.files:
        try:
            done = unpack_runs(store, file)
        except OSError as exc:
            if exc.errno in common.DISK_ERRORS:
                raise
            raise UserError(f"cannot write to {store.root}: {exc.strerror} (the runs "
                            f"imported before stay; unpack again to complete)") from None
        print(f"imported {done.imported} runs into {store.root}"
              + (f" from {file}" if len(args.files) > 1 else "")
              + f"; {done.present} were there already"
              + (f"; {done.repaired} stored ones were damaged and replaced (the damaged "
                 f"entries are in {store.root / 'corrupt'})" if done.repaired else "")
              + (f"; {done.migrated} of attnverify 0.1.0 re-keyed (checked against "
                 f"their specs)" if done.migrated else "")
              + (f"; {done.stale} made by other code left out (their specs have other "
                 f"keys with this code: they would never be read)"
                 if done.stale else ""), file=sys.stderr)


def _require_archives(files: list[str], role: str = "") -> None:
    """A UserError naming the first of ``files`` that is not a file, before any is read."""
    missing = [file for file in files if not Path(file).is_file()]
    if missing:
        raise UserError(f"no archive {missing[0]!r}{role}")


def _not_archived(archives: list[str], file: str, keys: list[str] | None,
                  store: RunStore) -> tuple[list[str], int]:
    """``runs pack --except ARCHIVE``: ``keys`` (None: every stored run) without the runs
    these archives hold, and how many were left out; the next part of a set split over
    several archives, e.g. the runs trained since the last pack."""
    from attnverify.empirics.store.archive import archived_keys

    if any(Path(archive).resolve() == Path(file).resolve() for archive in archives):
        raise UserError(f"{file} is also named by --except: packing would replace it by the "
                        f"runs it lacks (write the new part to another file)")
    _require_archives(archives, " (--except)")
    held = set().union(*(archived_keys(archive) for archive in archives))
    named = list(store.keys()) if keys is None else keys
    kept = [key for key in named if key not in held]
    if not kept:
        raise UserError(f"all {len(named)} runs to pack are in the --except archives; "
                        f"nothing to pack")
    return kept, len(named) - len(kept)


def _verify_keys(args: argparse.Namespace, store: RunStore) -> tuple[list[str], str]:
    """``runs pack --paper/--claim/--profile``: the stored keys of the runs ``verify`` with
    these options reads (its ``--dry-run`` plan: a staged claim's stages replayed from the
    store) and a line saying so, and what of it is not stored yet."""
    from attnverify.compare.claim import check_profile
    from attnverify.compare.evaluation.plan import plan

    profile = args.profile or "quick"
    try:
        check_profile(profile)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    plans = plan(common.selected(args), profile, store)
    named = list(dict.fromkeys(key for p in plans for key in p.keys))
    stored = [key for key in named if store.has(key)]
    what = " ".join(f"--{name} {value}" for name, value in (
        ("paper", args.paper), *(("claim", c) for c in args.claim or ()), ("profile", profile))
        if value)
    if not stored:
        raise UserError(f"none of the {len(named)} runs 'verify {what}' reads is in "
                        f"{store.root}; nothing to pack")
    scope = f"the runs 'verify {what}' reads"
    unfinished = [p for p in plans if p.missing]
    if unfinished:
        scope += (f"; {len(named) - len(stored)} of them not trained yet (" + ", ".join(
            f"{p.claim_id}{f' stage {p.stage}' if p.staged else ''}" for p in unfinished)
                  + ("; the stages after are decided by those runs"
                     if any(p.staged for p in unfinished) else "") + ")")
    return stored, scope
