"""``attnverify runs``: list, show, export and remove the cached runs, re-key those of
attnverify 0.1.0; ``pack`` and ``unpack`` move runs between machines
(:mod:`attnverify.compare.cli.runs_archive`). A malformed run key is a user error."""

from __future__ import annotations

import argparse
import csv
import io
import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attnverify.compare.cli import common, runs_archive
from attnverify.compare.cli.inputs import UserError, check_output_file

if TYPE_CHECKING:
    from attnverify.empirics import RunResult, RunStore


def add_parser(sub: Any, common_options: argparse.ArgumentParser) -> None:
    """The ``runs`` subcommand and its actions."""
    p = sub.add_parser("runs", parents=[common_options],
                       help="list, show, export, pack, unpack, migrate or remove cached runs")
    actions = p.add_subparsers(dest="action", required=True)  # parser class: p's own
    actions.add_parser("list", parents=[common_options], help="one line per cached run")
    actions.add_parser("show", parents=[common_options],
                       help="metadata and final metrics").add_argument("key")
    e = actions.add_parser("export", parents=[common_options],
                           help="tidy table: one row per run x step")
    e.add_argument("keys", nargs="*", help="run keys (default: all)")
    e.add_argument("--format", choices=("csv", "json", "parquet", "tensorboard"), default="csv",
                   help="csv (default) or json: one row per run x step, a column per metric; "
                        "parquet (needs --out, pandas and pyarrow): the tidy table of "
                        "attnverify.runs.frame, one row per run x step x metric, with the "
                        "claims that read each run; tensorboard (needs --out, a new folder, "
                        "and the tensorboard package): one TensorBoard run per run, its "
                        "metrics and training loss over the steps")
    e.add_argument("--out", help="file (default: stdout); the folder for tensorboard")
    runs_archive.add_parsers(actions, common_options)
    actions.add_parser("migrate", parents=[common_options],
                       help="re-key the runs stored by attnverify 0.1.0 (each checked against "
                            "its spec) so that this version reads them")
    actions.add_parser("rm", parents=[common_options],
                       help="remove one run").add_argument("key")
    clear = actions.add_parser("clear", parents=[common_options],
                               help="remove every cached run and every checkpoint of a run in "
                                    "training")
    clear.add_argument(
        "--stale", action="store_true",
        help="only the runs made by other code (never read again; marked in 'runs list') and "
             "the checkpoints that can no longer resume (a run of theirs is stored)")


def run(args: argparse.Namespace) -> int:
    """Do ``args.action`` on the run store of ``--cache``."""
    store = common.store(args)
    try:
        ACTIONS[args.action](args, store)
    except ValueError as exc:  # a malformed run key, an archive that is not one
        raise UserError(str(exc)) from None
    return 0


def _list(args: argparse.Namespace, store: RunStore) -> None:
    keys = list(store.keys())
    stale = damaged = 0
    for key in keys:
        line, current = _run_line(store, key)
        stale += not current
        damaged += line.endswith("(damaged)")
        print(line)
    print(f"{len(keys)} runs in {store.root}" + (
        f"; {stale} stale (made by other code, never read again; 'attnverify runs "
        f"migrate' re-keys those of attnverify 0.1.0, 'attnverify runs clear --stale' "
        f"removes them)" if stale else "") + (
        f"; {damaged} damaged (never read; 'attnverify runs rm KEY' removes one, a "
        f"verify that needs it moves it to corrupt/ and trains it again)"
        if damaged else ""), file=sys.stderr)


def _run_line(store: RunStore, key: str) -> tuple[str, bool]:
    """``runs list``'s line of one run and whether it is current; an entry whose metadata is
    damaged or lacks a field is listed as such, and the listing goes on."""
    from attnverify.empirics.store.run_store import CorruptEntryError

    try:
        meta = store.metadata(key)
        spec = meta["spec"]
        current = store.is_current(key)
        return (f"{key}  {meta['status']:<8}  {meta['wall_time_s']:7.1f}s  "
                f"{spec['task']['kind']} {spec['model']['kind']} seed={spec['seed']} "
                f"steps={spec['steps']}"
                + (f" (stops once {spec['stop_when'][0]} > {spec['stop_when'][1]})"
                   if spec.get("stop_when") else "")
                + ("" if current else "  (stale)")), current
    except (CorruptEntryError, KeyError, TypeError, ValueError) as exc:
        what = exc.reason if isinstance(exc, CorruptEntryError) else f"no field {exc}" if (
            isinstance(exc, KeyError)) else str(exc)
        return f"{key}  {what}  (damaged)", True


def _show(args: argparse.Namespace, store: RunStore) -> None:
    result = _get(store, args.key)
    # the stored key: a stale entry's spec hashes to another key with this code
    print(common.strict_json({**result.metadata(), "key": args.key,
                              "current": store.is_current(args.key), "final": {
        name: float(values[-1]) for name, values in result.metrics.items()}}, indent=2))


def _export(args: argparse.Namespace, store: RunStore) -> None:
    if args.format == "parquet":
        _export_parquet(args, store)
        return
    if args.format == "tensorboard":
        _export_tensorboard(args, store)
        return
    keys = args.keys or list(store.keys())
    rows = [{**row, "key": key} for key in keys for row in _get(store, key).tidy_rows()]
    text = _table(rows, args.format)
    if args.out is None:
        sys.stdout.write(text)
        return
    check_output_file(args.out, "--out")
    from attnverify.empirics.store.output_paths import write_atomic

    try:
        write_atomic(args.out, text)  # checked above
    except OSError as exc:
        raise UserError(f"cannot write --out {args.out}: {exc.strerror}") from None
    print(f"wrote {len(rows)} rows to {args.out}", file=sys.stderr)


def _export_parquet(args: argparse.Namespace, store: RunStore) -> None:
    """``runs export --format parquet --out FILE``: :func:`attnverify.runs.frame` of the
    named runs (default: all), written atomically."""
    if args.out is None:
        raise UserError("--format parquet needs --out FILE (Parquet is a binary format)")
    check_output_file(args.out, "--out")
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError as exc:
        raise UserError(f"--format parquet needs pandas and pyarrow ({exc.name} is not "
                        f"installed): pip install 'attnverify[frames]'") from None
    from attnverify.compare.runs.tidy import frame
    from attnverify.empirics.store.output_paths import atomic_file

    try:
        table = frame(store, keys=args.keys or None)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    try:
        with atomic_file(args.out) as handle:  # checked above
            table.to_parquet(handle, index=False)
    except OSError as exc:
        raise UserError(f"cannot write --out {args.out}: {exc.strerror}") from None
    print(f"wrote {len(table)} rows to {args.out}", file=sys.stderr)


def _export_tensorboard(args: argparse.Namespace, store: RunStore) -> None:
    """``runs export --format tensorboard --out DIR``: the named runs (default: all) as
    TensorBoard event files (:mod:`attnverify.compare.runs.tensorboard`)."""
    if args.out is None:
        raise UserError("--format tensorboard needs --out DIR (a new or empty folder)")
    from attnverify.compare.runs.tensorboard import write_tensorboard

    try:
        count = write_tensorboard(store, args.out, args.keys)
    except ImportError as exc:  # raised before any work: torch's writer needs tensorboard
        raise UserError(f"--format tensorboard needs the tensorboard package ({exc}): pip "
                        f"install 'attnverify[tensorboard]'") from None
    except OSError as exc:
        raise UserError(f"cannot write --out {args.out}: {exc.strerror}") from None
    print(f"wrote {count} run{'s' * (count != 1)} to {args.out} (view them with: tensorboard "
          f"--logdir {shlex.quote(args.out)})", file=sys.stderr)


def _table(rows: list[dict[str, Any]], fmt_name: str) -> str:
    """``rows`` as JSON or as CSV (columns in order of first appearance)."""
    if fmt_name == "json":
        return common.strict_json(rows, indent=1) + "\n"
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _get(store: RunStore, key: str) -> RunResult:
    result = store.get(key)
    if result is None:
        raise UserError(f"no run {key!r} in {store.root} (see 'attnverify runs list')")
    return result


def _migrate(args: argparse.Namespace, store: RunStore) -> None:
    from attnverify.empirics.store.legacy_keys import migrate_store

    done, left = migrate_store(store)
    print(f"re-keyed {done} runs of attnverify 0.1.0 in {store.root}"
          + (f"; {left} stale runs of older code left as they are ('attnverify runs "
             f"clear --stale' removes them)" if left else ""), file=sys.stderr)


def _rm(args: argparse.Namespace, store: RunStore) -> None:
    if not store.remove(args.key):
        raise UserError(f"no run {args.key!r} in {store.root}")


def _clear(args: argparse.Namespace, store: RunStore) -> None:
    if args.stale:
        removed = sum(store.remove(key) for key in list(store.keys())
                      if not store.is_current(key))
        dead = store.checkpoints.discard_dead(store.has)
        print(f"removed {removed} stale runs and {dead} checkpoints that can no longer resume "
              f"(a run of theirs is stored) from {store.root}", file=sys.stderr)
    else:
        runs, checkpoints = store.clear(), store.checkpoints.clear()
        print(f"removed {runs} runs and {checkpoints} checkpoints of runs in training from "
              f"{store.root}", file=sys.stderr)


ACTIONS: dict[str, Callable[[argparse.Namespace, RunStore], None]] = {
    "list": _list, "show": _show, "export": _export, "pack": runs_archive.pack,
    "unpack": runs_archive.unpack, "migrate": _migrate, "rm": _rm, "clear": _clear}
"""``runs ACTION`` -> what it does."""
