"""What a user types, checked before anything is written (bad input: docs/cli.md).

Every check raises :class:`UserError` with one line naming the option, the problem and what is
accepted; the command line prints it and exits with 2. Options that take one value refuse a
second, different one (:class:`Once`) instead of silently keeping the last.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any


class UserError(Exception):
    """A problem with the user's input: reported in one line, exit code 2."""


_GIVEN: ContextVar[dict[str, Any] | None] = ContextVar("attnverify_given", default=None)
"""The values given so far in the parse of one command line (:func:`one_value_per_option`)."""


@contextmanager
def one_value_per_option() -> Iterator[None]:
    """Inside: :class:`Once` sees the options of every level of the command line, so ``runs
    --cache A list --cache B`` is refused too (a subcommand parses into a namespace of its own)."""
    token = _GIVEN.set({})
    try:
        yield
    finally:
        _GIVEN.reset(token)


class Once(argparse.Action):
    """``store`` that refuses a second, different value of the same option: ``--profile smoke
    --profile quick`` would otherwise run quick without a word. The same value twice is kept."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        given = _GIVEN.get()
        if given is None:  # a parse outside one_value_per_option: this level only
            given = namespace.__dict__.setdefault("_given_once", {})
        if option_string is not None and self.dest in given and given[self.dest] != values:
            parser.error(f"{option_string} given twice ({given[self.dest]!r}, then {values!r}); "
                         f"it takes one value")
        given[self.dest] = values
        setattr(namespace, self.dest, values)


def check_output_dir(path: Path, option: str) -> None:
    """UserError unless ``path`` is, or can be created as, a writable directory (its names
    within the file system's limits)."""
    from attnverify.empirics.store.output_paths import check_name_length

    try:
        check_name_length(Path(os.path.abspath(path)), option)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise UserError(f"{option} {path}: {probe} exists and is not a directory")
    if not os.access(probe, os.W_OK):
        raise UserError(f"{option} {path}: {probe} is not writable")


def check_output_file(path: str, option: str) -> None:
    """UserError unless ``path`` may be written: new or a regular file, in a writable
    directory (:func:`~attnverify.empirics.store.output_paths.check_output_file`)."""
    from attnverify.empirics.store.output_paths import check_output_file as check_file

    try:
        check_file(path, option)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    check_output_dir(Path(path).parent, option)


def out_dir(text: str, option: str = "--out") -> Path:
    """``--out`` as a directory; an empty value is refused (it would write into the current
    directory unasked)."""
    if not text:
        raise UserError(f"{option} must name a directory; got an empty path")
    out = Path(text)
    check_output_dir(out, option)
    return out


def report_out(text: str) -> Path:
    """``verify --out``: a writable directory that a report may replace whole (absent, or
    holding only an earlier report; :func:`~attnverify.compare.report.directory.report_target`)."""
    from attnverify.compare.report.directory import report_target

    out = out_dir(text)
    try:
        report_target(out)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    return out


def store_root(cache: str | None) -> Path:
    """The run store directory: ``--cache`` (an empty value is refused, not taken for the
    default), else the default location
    (:func:`~attnverify.empirics.store.run_store.default_cache_dir`, which needs a home directory
    or ``$ATTNVERIFY_CACHE``). UserError when the directory cannot be named or exists as something
    else than a directory."""
    from attnverify.empirics.store.run_store import default_cache_dir

    option = "--cache" if cache is not None else "the cache directory"
    if cache == "":
        raise UserError("--cache must name a directory; got an empty path")
    try:
        root = Path(cache).expanduser() if cache is not None else default_cache_dir()
    except (RuntimeError, ValueError) as exc:  # "~nobody/x", or no home directory
        raise UserError(f"{option}: {exc}") from None
    from attnverify.empirics.store.output_paths import check_name_length

    try:
        check_name_length(Path(os.path.abspath(root)), option)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    if root.exists() and not root.is_dir():
        raise UserError(f"{option} {root}: {root} exists and is not a directory")
    return root


def check_corpus(path: str) -> str:
    """The corpus directory, resolved, after checking that it holds the WikiText files and
    that they read as text (a binary file is refused, not decoded half-way in a worker)."""
    from attnverify.empirics.tasks.text_corpus import corpus_fingerprint, load_corpus

    root = Path(path).expanduser().resolve()
    try:
        load_corpus(str(root), corpus_fingerprint(root))
    except (OSError, ValueError) as exc:
        raise UserError(f"--corpus {path}: {exc}") from None
    return str(root)


def check_llm_dir(path: str) -> str:
    """The model directory, resolved, after checking that it holds a ``config.json`` and that
    transformers is installed (the ``llm`` extra)."""
    from importlib.util import find_spec

    from attnverify.empirics.models.local_llm import INSTALL_HINT, check_model_directory

    try:
        root = check_model_directory(Path(path))
    except FileNotFoundError as exc:
        raise UserError(f"--llm-dir {path}: {exc}") from None
    if find_spec("transformers") is None:
        raise UserError(f"--llm-dir needs transformers: {INSTALL_HINT}")
    return str(root)


def check_corpus_fits(claims: Sequence[Any], profile: str, overrides: dict[str, Any],
                      points: dict[str, dict[str, Any]]) -> None:
    """The RunSpecs of every claim that trains on ``--corpus``, built before anything is
    written: a corpus too short for the claim's windows is refused in one line."""
    if "corpus" not in overrides:
        return
    from attnverify.compare.evaluation.verify import plan_params

    for claim in claims:
        if "corpus" in claim.overridable:
            try:
                claim.checked_specs(plan_params(claim, profile, overrides, points.get(claim.id)))
            except ValueError as exc:
                raise UserError(f"--corpus {overrides['corpus']}: {exc}") from None


def check_seconds(value: float | None, option: str) -> None:
    """A duration in seconds: finite and > 0 (``nan`` compares false with everything and
    would slip past ``<= 0``)."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise UserError(f"{option} must be a number of seconds > 0; got {value:g}")
