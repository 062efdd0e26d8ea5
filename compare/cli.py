"""The ``attnverify`` command line (ARCHITECTURE.md, "Contracts").

    attnverify verify [--paper P] [--claim ID ...] [--profile smoke|quick|full] [--out DIR]
                      [--executor local|dask-local|dask://HOST:PORT] [--workers N] [--cache DIR]
                      [--device cpu|cuda] [--claim ID --param NAME=VALUE ...] [--dry-run]
    attnverify predict PAPER.QUANTITY --param value ...
    attnverify falsify CLAIM [--budget N] [--profile P] [--max-cost SECONDS] [--seed S] [--out DIR]
                      [--device cpu|cuda]
    attnverify figures [--profile P] [--out DIR]
    attnverify bench [--json FILE] [--families F,...] [--configs quick,full] [--verify]
    attnverify claims [--json]
    attnverify --version
    attnverify runs list | show KEY | export [--format csv|json] [--out FILE] | pack | unpack
                   | migrate | rm KEY | clear

User errors print one line on stderr naming the problem and the accepted values and exit with 2,
without a traceback and without writing anything (:mod:`compare.cli_inputs` checks them); an
option that takes one value refuses a second one. Refuted claims are results: exit 0.
"""

from __future__ import annotations

import argparse
import csv
import errno
import io
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from tqdm.auto import tqdm

from attnverify import __version__
from attnverify.compare.cli_inputs import (
    Once,
    UserError,
    check_corpus,
    check_corpus_fits,
    check_output_dir,
    check_output_file,
    check_seconds,
    one_value_per_option,
    out_dir,
    report_out,
    store_root,
)

if TYPE_CHECKING:
    from attnverify.compare.claim import Claim

EXIT_USAGE = 2
MAX_WORKERS = 256
"""The most worker processes ``--workers`` starts (a typo must not fork thousands)."""


class _Parser(argparse.ArgumentParser):
    help_tail: Callable[[], str] | None = None
    """More text for ``--help``, computed only when asked (e.g. the theory quantities)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, Once)  # one value per option: a second one is refused
        self.register("action", "store", Once)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        return super().format_help() + (self.help_tail() if self.help_tail else "")


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


class _TqdmHandler(logging.Handler):
    """Log lines that do not tear the progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        tqdm.write(self.format(record), file=sys.stderr)


def _setup_logging(quiet: bool) -> None:
    logger = logging.getLogger("attnverify")
    logger.handlers[:] = [_TqdmHandler()]
    logger.handlers[0].setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    logger.setLevel(logging.WARNING if quiet else logging.INFO)


def _store(args: argparse.Namespace):
    from attnverify.empirics import RunStore

    return RunStore(store_root(args.cache))


def _check_common_options(args: argparse.Namespace) -> None:
    """--profile, and --workers and --device where the command has them, before anything is
    written."""
    from attnverify.compare.claim import PROFILES

    if args.profile not in PROFILES:
        raise UserError(f"unknown profile {args.profile!r}; accepted: {', '.join(PROFILES)}")
    if getattr(args, "workers", None) is not None and args.workers < 1:
        raise UserError(f"--workers must be an integer >= 1; got {args.workers}")
    if getattr(args, "workers", None) is not None and args.workers > MAX_WORKERS:
        raise UserError(f"--workers must be <= {MAX_WORKERS}: each worker is a process with "
                        f"its own torch and model (hundreds of MB); got {args.workers}")
    if getattr(args, "device", None) is not None:  # before anything is written
        from attnverify.empirics.executor import ExecutorSetupError, check_device

        try:
            check_device(args.device)
        except ExecutorSetupError as exc:
            raise UserError(str(exc)) from None


def _out_and_store(args: argparse.Namespace, report: bool = False):
    """``--out`` and the run store, both checked to be writable directories (or creatable);
    with ``report``, ``--out`` is also checked to be replaceable by a report (absent, or a
    directory holding only an earlier report)."""
    out = report_out(args.out) if report else out_dir(args.out)
    store = _store(args)
    check_output_dir(store.root, "--cache" if args.cache is not None else "the cache directory")
    return out, store


# -- verify ---------------------------------------------------------------------------------
def _cmd_verify(args: argparse.Namespace) -> int:
    _check_common_options(args)
    if not (args.executor in ("local", "dask-local") or args.executor.startswith("dask://")):
        raise UserError(f"unknown executor {args.executor!r}; accepted: local, dask-local, "
                        f"dask://HOST:PORT")
    claims = _selected(args)
    check_seconds(args.connect_timeout, "--connect-timeout")
    if args.dry_run:
        return _dry_run(args, claims)
    out, store = _out_and_store(args, report=True)
    overrides, points = _overrides_and_points(args, claims)

    from attnverify.compare.claim import KIND_SUMMARY
    from attnverify.compare.report import Report
    from attnverify.compare.report_cells import fmt, measured_text
    from attnverify.compare.verify import evaluate_all
    from attnverify.empirics.versions import machine, versions

    with _executor(args, store) as executor, _param_errors(points):
        outcomes = evaluate_all(claims, args.profile, executor, overrides, points)
    from attnverify.compare.falsify import load_saved

    report = Report(profile=args.profile, versions=versions(), machine=machine(),
                    outcomes=outcomes,
                    boundaries=load_saved(store.root, claims),
                    reference=_full_reference(args, claims, store, overrides, points))
    try:
        paths = report.write(out)
    except ValueError as exc:  # something else was put into --out while the claims ran
        raise UserError(str(exc)) from None

    width = max(len(o.claim.id) for o in outcomes)
    for kind in report.kinds():
        print(f"{KIND_SUMMARY[kind].capitalize()}:")
        print(f"  {'claim':<{width}}  {'verdict':<12}  {'reason':<17}  {'theory':>10}  "
              f"measured [95% CI]")
        for o in (o for o in outcomes if o.claim.kind == kind):
            a = o.assessment
            print(f"  {o.claim.id:<{width}}  {a.verdict!s:<12}  {a.reason!s:<17}  "
                  f"{fmt(a.theory):>10}  {measured_text(a.empirical)}")
    print(f"\n{report.summary()} (profile {args.profile})")
    print(f"report: {paths['html'].resolve()}")
    return 0


def _full_reference(args: argparse.Namespace, claims: list[Claim], store,
                    overrides: dict[str, Any], points: dict[str, dict[str, Any]]) -> dict:
    """The verdicts at ``full`` of the claims whose full runs are all stored (none when the
    profile is full; a claim evaluated at a ``--param`` point is not compared)."""
    if args.profile == "full":
        return {}
    from attnverify.compare.cross_profile import stored_outcomes

    return stored_outcomes([c for c in claims if c.id not in points], "full", store,
                           overrides, device=args.device)


def _selected(args: argparse.Namespace) -> list[Claim]:
    """The claims ``--paper`` and ``--claim`` select (all without either; ``--claim`` may be
    repeated: every claim named, in the registry's order)."""
    from attnverify.compare.registry import select

    try:
        named = {c.id for claim_id in args.claim or [None] for c in select(args.paper, claim_id)}
        claims = [c for c in select(args.paper) if c.id in named]
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if not claims:
        raise UserError(f"no claims for paper {args.paper!r} yet")
    return claims


@contextmanager
def _param_errors(points: dict[str, dict[str, Any]]) -> Iterator[None]:
    """Inside: a claim's own computation rejecting a ``--param`` value (e.g. D = 0) is a user
    error; without ``--param`` such an error is a bug and propagates."""
    try:
        yield
    except (ValueError, TypeError, KeyError, IndexError, ArithmeticError) as exc:
        if not points:
            raise
        raise UserError(f"--param: {exc}") from None


def _overrides_and_points(args: argparse.Namespace, claims: Sequence[Any]
                          ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """``--corpus`` as an override of the claims that take it, ``--param`` as a point."""
    overrides = {}
    if args.corpus is not None:
        overrides["corpus"] = check_corpus(args.corpus)
    points = _claim_point(claims, args.profile, args.param, overrides)
    check_corpus_fits(claims, args.profile, overrides, points)
    return overrides, points


def _dry_run(args: argparse.Namespace, claims: Sequence[Any]) -> int:
    """``verify --dry-run``: what would be trained and roughly how long it takes; nothing is
    trained or written (:mod:`compare.plan`)."""
    from attnverify.compare.plan import measured_rates, plan, plan_table
    from attnverify.empirics import LocalExecutor

    store = _store(args)
    overrides, points = _overrides_and_points(args, claims)
    executor = LocalExecutor(store, workers=args.workers, progress=False, device=args.device)
    with _param_errors(points):
        plans = plan(claims, args.profile, store, overrides, points, place=executor.place)
    print(plan_table(plans, measured_rates(store), executor.workers))
    print(f"(profile {args.profile}; estimates from the runs in {store.root}; nothing was "
          f"trained or written)")
    return 0


def _param_value(text: str, default: Any) -> Any:
    """A ``--param`` value: JSON where it parses (3, 0.5, true, [2, 1]), else the text; lists
    become tuples and integers floats where the default is one."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(default, tuple) and isinstance(value, list):
        return tuple(value)
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _claim_point(claims: Sequence[Any], profile: str, items: Sequence[str] | None,
                 overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``--param NAME=VALUE`` items as parameters of the one selected claim, checked by
    ``Claim.checked_specs`` (the claim's checks, then a RunSpec rejects a bad size) before
    anything is trained or written."""
    if not items:
        return {}
    if len(claims) != 1:
        raise UserError("--param needs --claim ID: parameters belong to one claim "
                        "(see 'attnverify claims --json' for each claim's parameters)")
    claim = claims[0]
    defaults = claim.params(profile)
    point: dict[str, Any] = {}
    for item in items:
        name, eq, text = item.partition("=")
        if not eq or not name:
            raise UserError(f"--param {item!r}: expected NAME=VALUE")
        if name not in defaults:
            raise UserError(f"unknown parameter {name!r} of {claim.id}; accepted: "
                            f"{', '.join(defaults)}")
        point[name] = _param_value(text, defaults[name])
    from attnverify.compare.verify import plan_params

    with _param_errors({claim.id: point}):
        claim.checked_specs(plan_params(claim, profile, overrides, point))
    return {claim.id: point}


def _executor(args: argparse.Namespace, store):
    """The executor ``--executor`` names; setup problems (no ``distributed``, a malformed or
    unreachable scheduler address) are user errors."""
    from attnverify.empirics import LocalExecutor
    from attnverify.empirics.executor import ExecutorSetupError

    try:
        if args.executor == "local":
            return LocalExecutor(store, workers=args.workers, progress=not args.quiet,
                                 device=args.device)
        from attnverify.empirics.dask_executor import DaskExecutor

        return DaskExecutor(store, args.executor, workers=args.workers,
                            progress=not args.quiet, connect_timeout=args.connect_timeout,
                            device=args.device)
    except ExecutorSetupError as exc:
        raise UserError(str(exc)) from None


# -- falsify --------------------------------------------------------------------------------
def _cmd_falsify(args: argparse.Namespace) -> int:
    from attnverify.compare.registry import select

    _check_common_options(args)
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
    out, store = _out_and_store(args)

    from attnverify.compare import falsify

    log = (lambda _: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    with _executor(args, store) as executor:
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


# -- predict --------------------------------------------------------------------------------
def _parse_value(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _parse_params(tokens: Sequence[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--") or len(token) == 2:
            raise UserError(f"expected --PARAM VALUE, got {token!r}")
        name, eq, value = token[2:].partition("=")
        name = name.replace("-", "_")  # --eig-mean -> eig_mean
        if not eq:
            if i + 1 >= len(tokens):
                raise UserError(f"parameter --{name} has no value")
            i += 1
            value = tokens[i]
        if name in params:
            raise UserError(f"parameter --{name} given twice; it takes one value")
        params[name] = _parse_value(value)
        i += 1
    return params


def _cmd_predict(args: argparse.Namespace, extra: Sequence[str]) -> int:
    from attnverify import theory

    if args.quantity not in theory.QUANTITIES:
        raise UserError(f"unknown quantity {args.quantity!r}; accepted: "
                        f"{', '.join(theory.QUANTITIES)}")
    params = _parse_params(extra)
    try:
        prediction = theory.predict(args.quantity, **params)
    except (ValueError, TypeError) as exc:
        raise UserError(str(exc)) from None
    print(json.dumps({"quantity": args.quantity, **prediction.to_dict()}, indent=2))
    return 0


# -- figures ------------------------------------------------------------------------------
def _cmd_figures(args: argparse.Namespace) -> int:
    _check_common_options(args)
    out, store = _out_and_store(args)
    from attnverify.paper_figures import regenerate

    written = regenerate(out, args.profile, store, progress=not args.quiet)
    print(f"wrote {len(written)} files to {out.resolve()}")
    return 0


# -- bench ----------------------------------------------------------------------------------
def _split_choice(text: str, accepted: tuple[str, ...], option: str) -> tuple[str, ...]:
    chosen = tuple(t for t in text.split(",") if t)
    unknown = [t for t in chosen if t not in accepted]
    if unknown or not chosen:
        raise UserError(f"{option}: unknown {', '.join(unknown) or 'empty value'}; accepted: "
                        f"{', '.join(accepted)}")
    return chosen


def _cmd_bench(args: argparse.Namespace) -> int:
    from attnverify.compare import bench

    families = _split_choice(args.families, bench.FAMILIES, "--families")
    configs = _split_choice(args.configs, bench.CONFIGS, "--configs")
    if args.repeats < 1:
        raise UserError(f"--repeats must be an integer >= 1; got {args.repeats}")
    if args.json is not None:
        check_output_file(args.json, "--json")
    log = (lambda _: None) if args.quiet else (lambda text: print(text, file=sys.stderr))
    result = bench.run_bench(families, configs, args.repeats, args.verify, log)
    print(bench.table(result))
    if args.json is not None:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {Path(args.json).resolve()}")
    return 0


# -- claims ---------------------------------------------------------------------------------
def _cmd_claims(args: argparse.Namespace) -> int:
    from attnverify.compare.claim import PROFILES
    from attnverify.compare.registry import select
    from attnverify.compare.report import jsonable

    claims = select()
    if args.json:
        print(json.dumps([{
            "id": c.id, "paper": c.paper, "kind": str(c.kind), "statement": c.statement,
            "profiles": {p: jsonable(c.params(p)) for p in PROFILES},
            "paper_scale": c.paper_scale or None,
            "overridable": list(c.overridable),
            "space": {name: dim.describe() for name, dim in c.space.items()},
            "trains": bool(c.specs(c.params("smoke"))),
        } for c in claims], indent=2))
        return 0
    for claim in claims:
        print(f"{claim.id}  [{claim.paper}, {claim.kind}]  {claim.statement}")
    return 0


# -- runs -----------------------------------------------------------------------------------
def _cmd_runs(args: argparse.Namespace) -> int:
    from attnverify.empirics.archive import pack, unpack

    store = _store(args)
    try:
        if args.action == "list":
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
        elif args.action == "show":
            result = _get(store, args.key)
            # the stored key: a stale entry's spec hashes to another key with this code
            print(_strict_json({**result.metadata(), "key": args.key,
                                "current": store.is_current(args.key), "final": {
                name: float(values[-1]) for name, values in result.metrics.items()}}, indent=2))
        elif args.action == "export":
            keys = args.keys or list(store.keys())
            rows = [{**row, "key": key} for key in keys for row in _get(store, key).tidy_rows()]
            text = _export(rows, args.format)
            if args.out is not None:
                check_output_file(args.out, "--out")
                try:
                    Path(args.out).write_text(text)
                except OSError as exc:
                    raise UserError(f"cannot write --out {args.out}: {exc.strerror}") from None
                print(f"wrote {len(rows)} rows to {args.out}", file=sys.stderr)
            else:
                sys.stdout.write(text)
        elif args.action == "pack":
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
                done = pack(store, args.file, keys)
            except KeyError as exc:
                raise UserError(f"no run {exc.args[0]!r} in {store.root} (see 'attnverify runs "
                                f"list')") from None
            except OSError as exc:
                if exc.errno in DISK_ERRORS:
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
        elif args.action == "unpack":
            _require_archives(args.files)  # before importing: a typo should not half-import
            for file in args.files:
                try:
                    done = unpack(store, file)
                except OSError as exc:
                    if exc.errno in DISK_ERRORS:
                        raise
                    raise UserError(f"cannot write to {store.root}: {exc.strerror} (the runs "
                                    f"imported before stay; unpack again to complete)") from None
                print(f"imported {done.imported} runs into {store.root}"
                      + (f" from {file}" if len(args.files) > 1 else "")
                      + f"; {done.present} were there already"
                      + (f"; {done.migrated} of attnverify 0.1.0 re-keyed (checked against "
                         f"their specs)" if done.migrated else "")
                      + (f"; {done.stale} made by other code left out (their specs have other "
                         f"keys with this code: they would never be read)"
                         if done.stale else ""), file=sys.stderr)
        elif args.action == "migrate":
            from attnverify.empirics.legacy_keys import migrate_store

            done, left = migrate_store(store)
            print(f"re-keyed {done} runs of attnverify 0.1.0 in {store.root}"
                  + (f"; {left} stale runs of older code left as they are ('attnverify runs "
                     f"clear --stale' removes them)" if left else ""), file=sys.stderr)
        elif args.action == "rm":
            if not store.remove(args.key):
                raise UserError(f"no run {args.key!r} in {store.root}")
        elif args.action == "clear" and args.stale:
            removed = sum(store.remove(key) for key in list(store.keys())
                          if not store.is_current(key))
            print(f"removed {removed} stale runs from {store.root}", file=sys.stderr)
        elif args.action == "clear":
            print(f"removed {store.clear()} runs from {store.root}", file=sys.stderr)
    except ValueError as exc:  # a malformed run key, an archive that is not one
        raise UserError(str(exc)) from None
    return 0


def _run_line(store, key: str) -> tuple[str, bool]:
    """``runs list``'s line of one run and whether it is current; an entry whose metadata is
    damaged or lacks a field is listed as such, and the listing goes on."""
    from attnverify.empirics.store import CorruptEntryError

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


def _require_archives(files: list[str], role: str = "") -> None:
    """A UserError naming the first of ``files`` that is not a file, before any is read."""
    missing = [file for file in files if not Path(file).is_file()]
    if missing:
        raise UserError(f"no archive {missing[0]!r}{role}")


def _not_archived(archives: list[str], file: str, keys: list[str] | None,
                  store) -> tuple[list[str], int]:
    """``runs pack --except ARCHIVE``: ``keys`` (None: every stored run) without the runs
    these archives hold, and how many were left out; the next part of a set split over
    several archives, e.g. the runs trained since the last pack."""
    from attnverify.empirics.archive import archived_keys

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


def _verify_keys(args: argparse.Namespace, store) -> tuple[list[str], str]:
    """``runs pack --paper/--claim/--profile``: the stored keys of the runs ``verify`` with
    these options reads (its ``--dry-run`` plan: a staged claim's stages replayed from the
    store) and a line saying so, and what of it is not stored yet."""
    from attnverify.compare.claim import PROFILES
    from attnverify.compare.plan import plan

    profile = args.profile or "quick"
    if profile not in PROFILES:
        raise UserError(f"unknown profile {profile!r}; accepted: {', '.join(PROFILES)}")
    plans = plan(_selected(args), profile, store)
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


def _get(store, key: str):
    result = store.get(key)
    if result is None:
        raise UserError(f"no run {key!r} in {store.root} (see 'attnverify runs list')")
    return result


def _strict_json(data: Any, indent: int) -> str:
    """Strict JSON: a diverged run's NaN and inf become null (a bare NaN is no JSON)."""
    from attnverify.compare.report import jsonable

    return json.dumps(jsonable(data), indent=indent, allow_nan=False)


def _export(rows: list[dict[str, Any]], fmt_name: str) -> str:
    if fmt_name == "json":
        return _strict_json(rows, indent=1) + "\n"
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


# -- entry point ----------------------------------------------------------------------------
def _add_device(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", choices=("cpu", "cuda"),
                        help="train on this device (default: cpu; cuda needs a GPU torch can "
                             "use)")


def build_parser() -> argparse.ArgumentParser:
    # shared options may be given at any level; SUPPRESS keeps a nested parser from
    # overwriting a value given earlier with its default
    common = _Parser(add_help=False, allow_abbrev=False)
    common.add_argument("--cache", metavar="DIR", default=argparse.SUPPRESS,
                        help="run store directory (default: $ATTNVERIFY_CACHE or "
                             "~/.cache/attnverify)")
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="no progress bars or cache lines")
    parser = _Parser(prog="attnverify", allow_abbrev=False,
                     description="Check theories of how attention learns against real "
                                 "training runs.")
    parser.set_defaults(cache=None, quiet=False)
    parser.add_argument("--version", action="version", version=f"attnverify {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _add = sub.add_parser

    def add_parser(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return _add(name, allow_abbrev=False, **kwargs)

    sub.add_parser = add_parser  # type: ignore[method-assign]

    p = sub.add_parser("verify", parents=[common], help="evaluate claims and write the report")
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
    _add_device(p)
    p.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="how long to try to reach a Dask scheduler (default: 10)")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="with --claim: evaluate the claim at this parameter value instead of "
                        "the profile's (repeatable; JSON values: 3, 0.5, true, [2, 1])")
    p.add_argument("--corpus", metavar="DIR",
                   help="train the Bao language models on a local WikiText-format corpus "
                        "(wiki.train.tokens, wiki.valid.tokens) instead of the random-walk task")
    p.add_argument("--dry-run", action="store_true",
                   help="list each claim's runs, how many are cached and the estimated CPU "
                        "time of the rest (measured from the cached runs); train nothing")

    p = sub.add_parser("falsify", parents=[common],
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
    _add_device(p)
    p.set_defaults(executor="local", connect_timeout=10.0)  # falsify runs on the local pool

    p = sub.add_parser("predict", parents=[common],
                       help="print a theory value as JSON: predict snell.kappa --V 60 --L 40")
    p.add_argument("quantity", help="PAPER.QUANTITY, e.g. snell.kappa (listed below)")
    p.help_tail = _quantities_help

    p = sub.add_parser("figures", parents=[common],
                       help="regenerate every figure (trains only what is not cached)")
    p.add_argument("--profile", default="quick", help="smoke, quick (default) or full")
    p.add_argument("--out", default="attnverify-figures", help="figure directory")

    p = sub.add_parser("bench", parents=[common],
                       help="measure training and theory throughput on this machine")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument("--families", default="snell_copying,snell_multihead,musat_retrieval,bao_lm",
                   help="comma-separated model families (default: all)")
    p.add_argument("--configs", default="quick,full",
                   help="comma-separated: quick, full (default: quick,full)")
    p.add_argument("--repeats", type=int, default=3, help="repeats per number (median)")
    p.add_argument("--verify", action="store_true",
                   help="also time 'verify --profile quick' cold and warm (minutes)")

    p = sub.add_parser("claims", parents=[common], help="list the claims")
    p.add_argument("--json", action="store_true",
                   help="id, paper, statement, parameters per profile, paper scale, the "
                        "parameters a user may override, whether it trains, and the space "
                        "falsify searches (JSON)")

    p = sub.add_parser("runs", parents=[common],
                       help="list, show, export, pack, unpack, migrate or remove cached runs")
    runs = p.add_subparsers(dest="action", required=True, parser_class=_Parser)
    _add_run = runs.add_parser
    runs.add_parser = lambda name, **kw: _add_run(name, allow_abbrev=False, **kw)  # type: ignore
    runs.add_parser("list", parents=[common], help="one line per cached run")
    runs.add_parser("show", parents=[common], help="metadata and final metrics").add_argument(
        "key")
    e = runs.add_parser("export", parents=[common], help="tidy table: one row per run x step")
    e.add_argument("keys", nargs="*", help="run keys (default: all)")
    e.add_argument("--format", choices=("csv", "json"), default="csv")
    e.add_argument("--out", help="file (default: stdout)")
    k = runs.add_parser("pack", parents=[common],
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
    runs.add_parser("unpack", parents=[common],
                    help="import the runs of archives made by 'runs pack' (each checked)"
                    ).add_argument("files", nargs="+", metavar="file",
                                   help="the archives (a set split over several files: all "
                                        "of them, in any order)")
    runs.add_parser("migrate", parents=[common],
                    help="re-key the runs stored by attnverify 0.1.0 (each checked against its "
                         "spec) so that this version reads them")
    runs.add_parser("rm", parents=[common], help="remove one run").add_argument("key")
    runs.add_parser("clear", parents=[common], help="remove every cached run").add_argument(
        "--stale", action="store_true",
        help="only the runs made by other code (never read again; marked in 'runs list')")
    return parser


DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
"""Write failures of the machine, not of attnverify: a full disk, a quota, a read-only mount."""


def _is_user_error(exc: Exception) -> bool:
    """UserError, a damaged cache entry (without importing torch for ``predict``), or a disk
    that refuses writes (the store's writes are atomic, so nothing half-written is left)."""
    store = sys.modules.get("attnverify.empirics.store")
    return (isinstance(exc, UserError)
            or (isinstance(exc, OSError) and exc.errno in DISK_ERRORS)
            or (store is not None and isinstance(exc, store.CorruptEntryError)))


def _one_line(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot write{where}: {exc.strerror}; free some space or choose another --cache"
    return str(exc)


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: handled like Ctrl-C, but the exit code is 143 (128 + SIGTERM)."""


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Inside: SIGTERM (``kill``, a batch scheduler's stop) takes the path of Ctrl-C, so the
    executor stops its workers and the finished runs stay cached. Only the main thread can set a
    handler; the previous one is put back on exit (tests call :func:`main` in-process)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> NoReturn:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    with _sigterm_as_interrupt():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        with one_value_per_option():
            args, extra = parser.parse_known_args(argv)
        if extra and args.command != "predict":
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, one line printed)
        return int(exc.code or 0)
    _setup_logging(getattr(args, "quiet", False))
    try:
        if args.command == "verify":
            return _cmd_verify(args)
        if args.command == "predict":
            return _cmd_predict(args, extra)
        if args.command == "claims":
            return _cmd_claims(args)
        if args.command == "falsify":
            return _cmd_falsify(args)
        if args.command == "figures":
            return _cmd_figures(args)
        if args.command == "bench":
            return _cmd_bench(args)
        return _cmd_runs(args)
    except BrokenPipeError:  # e.g. piped into head: not an error
        os._exit(0)
    except KeyboardInterrupt as exc:
        print("attnverify: interrupted; finished runs are cached, run again to resume",
              file=sys.stderr)
        return 128 + (signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT)
    except Exception as exc:
        if not _is_user_error(exc):
            raise
        print(f"attnverify: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
