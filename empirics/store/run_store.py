"""RunStore: a content-addressed cache of RunResults on disk (docs/run-store.md).

Layout: ``ROOT/runs/<key[:2]>/<key>/{meta.json, arrays.npz}``. Arrays are ``.npz`` loaded with
``allow_pickle=False``; metadata is JSON carrying a schema version and the SHA-256 of the arrays
file, so nothing read from disk can execute code and a damaged entry is detected, never used.

Writes are atomic: an entry is assembled in ``ROOT/tmp/`` and published with one ``rename`` of its
directory, so a killed writer leaves at most an unpublished temporary directory, and of two
concurrent writers of the same key one publishes and the other discards its identical copy.
Every lookup logs one line: cached, or missing and about to be computed.
Runs move between machines as archives of entries (:mod:`empirics.store.archive`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import logging
import os
import re
import shutil
import stat
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import platformdirs

from attnverify.empirics.result import RunResult
from attnverify.empirics.result_schema import ResultSchemaError, check_result
from attnverify.empirics.spec import RunSpec
from attnverify.empirics.store.checkpoint import CheckpointDir, CheckpointInfo

SCHEMA_VERSION = 1
KEY_PATTERN = re.compile(r"[0-9a-f]{24}")
ENV_VAR = "ATTNVERIFY_CACHE"
ENTRY_FILES = ("meta.json", "arrays.npz")
log = logging.getLogger("attnverify.store")


def default_cache_dir() -> Path:
    """``$ATTNVERIFY_CACHE``, else the platform's user cache directory for attnverify
    (``platformdirs.user_cache_dir``: ``$XDG_CACHE_HOME/attnverify`` or
    ``~/.cache/attnverify`` on Linux, ``~/Library/Caches/attnverify`` on macOS, the local
    application data folder on Windows), except that an existing ``~/.cache/attnverify`` (the
    location of earlier versions on every platform) keeps being used. ValueError (one line)
    when none of these can be named: a user without a home directory (no ``$HOME`` and no
    password entry, as in some containers) sets ``$ATTNVERIFY_CACHE`` or passes a
    directory."""
    try:
        if os.environ.get(ENV_VAR):
            path = Path(os.path.expanduser(os.environ[ENV_VAR]))
        else:
            earlier = Path(os.path.expanduser("~/.cache/attnverify"))
            path = (earlier if earlier.is_dir() and not os.environ.get("XDG_CACHE_HOME")
                    else Path(platformdirs.user_cache_dir("attnverify", appauthor=False)))
    except (RuntimeError, KeyError):  # no home to expand "~" with
        path = Path("~")
    if str(path).startswith("~"):  # os.path.expanduser leaves "~" when it finds no home
        raise ValueError(f"no home directory to hold the default cache (HOME is not set and "
                         f"the user has no password entry); pass --cache DIR or set "
                         f"{ENV_VAR}")
    return path


class CorruptEntryError(Exception):
    """A cache entry exists but cannot be trusted (truncated, wrong checksum or schema)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"corrupt cache entry {path}: {reason}; remove it with "
                         f"'attnverify runs rm {path.name}' and run again")
        self.path = path
        self.reason = reason


def _fsync_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


MAX_META_BYTES = 16 * 2**20
"""An entry's metadata is a few kB of JSON; more is damage, never read into memory."""


def _read_entry_file(entry: Path, name: str) -> bytes:
    """An entry file's bytes, read only when it is a regular file (a symbolic link to
    ``/dev/zero`` or a pipe would never end) and, for the metadata, within
    :data:`MAX_META_BYTES`; CorruptEntryError otherwise, OSError when it cannot be opened."""
    try:
        fd = os.open(entry / name, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CorruptEntryError(entry, f"{name} is a symbolic link") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise CorruptEntryError(entry, f"{name} is not a regular file")
        if name == "meta.json" and info.st_size > MAX_META_BYTES:
            raise CorruptEntryError(entry, f"{name} holds {info.st_size} bytes, more than "
                                           f"metadata ever does ({MAX_META_BYTES})")
        return fh.read()


def result_of(entry: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> RunResult:
    """The run a sound entry's metadata and arrays hold, named ``entry`` in errors:
    CorruptEntryError when they cannot be read as a run, or when the entry is current (this
    code gives its spec the key it is stored under) and they are not what training its spec
    produces (lengths from the evaluation schedule, dtypes, finiteness consistent with the
    status: :func:`~attnverify.empirics.result_schema.check_result`). An entry of other code
    is returned as stored, for ``runs show``: it is never used as a run (its spec has another
    key now)."""
    try:
        result = RunResult.from_parts(meta, arrays)
    except (ValueError, KeyError, TypeError) as exc:
        raise CorruptEntryError(entry, f"unreadable content ({exc})") from None
    if result.key != meta.get("key"):
        return result
    try:
        check_result(result)
    except ResultSchemaError as exc:
        raise CorruptEntryError(entry, f"not a run of its spec: {exc}") from None
    return result


CACHE_FOLDERS = ("runs", "tmp", "corrupt", "checkpoints", "memo", "falsify")
"""The folders a cache keeps (the runs, temporary entries, entries set aside, checkpoints of
runs in training, computed values of the claims, saved falsify searches)."""


class RunStore:
    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def check_layout(self) -> None:
        """ValueError naming the first of :data:`CACHE_FOLDERS` that exists as something other
        than a folder (a file, a pipe, a link to nothing): every later write there would fail
        with a traceback. Nothing is changed."""
        for name in CACHE_FOLDERS:
            path = self.root / name
            if (path.exists() or path.is_symlink()) and not path.is_dir():
                what = ("a link to nothing" if not path.exists() else
                        f"a file of {path.stat().st_size} bytes" if path.is_file() else
                        "not a regular folder")
                raise ValueError(f"the cache's {name}/ at {path} is {what}, not a folder: move "
                                 f"it aside and run again (the cache needs a folder there)")

    @property
    def checkpoints(self) -> CheckpointDir:
        """Where runs training for this store keep their checkpoints
        (:mod:`empirics.store.checkpoint`)."""
        return CheckpointDir(self.root / "checkpoints")

    def _entry(self, key: str) -> Path:
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            raise ValueError(f"malformed run key {key!r}: a run key is 24 hexadecimal digits "
                             f"(see 'attnverify runs list')")
        return self.root / "runs" / key[:2] / key

    def __contains__(self, key: str) -> bool:
        return (self._entry(key) / "meta.json").exists()

    # -- writing -----------------------------------------------------------------------------
    def put(self, result: RunResult) -> Path:
        """Publish ``result`` atomically; a no-op when the key is already stored.
        ResultSchemaError (nothing written) when its arrays are not what its spec's training
        produces (:mod:`empirics.result_schema`): what the store holds is always readable."""
        check_result(result)
        key = result.key
        final = self._entry(key)
        if final.exists():
            return final
        buffer = io.BytesIO()
        # cast: to numpy's stub any keyword might be allow_pickle (a bool)
        np.savez(buffer, **cast("dict[str, Any]", result.arrays()))
        arrays = buffer.getvalue()
        meta = {"schema": SCHEMA_VERSION, "arrays_sha256": hashlib.sha256(arrays).hexdigest(),
                **result.metadata()}
        return self.publish_files(key, arrays, json.dumps(meta, indent=1).encode())

    def publish_files(self, key: str, arrays: bytes, meta: bytes) -> Path:
        """Publish an entry from its two files' bytes (``put``, and an archive's import,
        which checks them first with :meth:`check_files`): written into tmp/, then the
        directory published with one rename; a no-op when the key is already stored."""
        final = self._entry(key)
        if final.exists():
            return final
        tmp_root = self.root / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        tmp = tmp_root / f"{key}.{os.getpid()}.{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            _fsync_write(tmp / "arrays.npz", arrays)
            _fsync_write(tmp / "meta.json", meta)
            final.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.rename(tmp, final)  # atomic publication of the whole directory
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                # another writer published the same key first: same content, keep theirs
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return final

    # -- reading -----------------------------------------------------------------------------
    def get(self, key: str) -> RunResult | None:
        """The stored result, None when absent; raises CorruptEntryError when damaged: its
        files fail :meth:`check_files`, or what they hold is not a run of its own spec
        (:func:`result_of`)."""
        try:
            _, meta, arrays = self.read_entry(key)
        except KeyError:
            return None
        return result_of(self._entry(key), meta, arrays)

    def entry_path(self, key: str) -> Path:
        """Where ``key``'s entry is (or would be) stored."""
        return self._entry(key)

    def read_entry(self, key: str) -> tuple[dict[str, bytes], dict[str, Any],
                                             dict[str, np.ndarray]]:
        """``key``'s two files as stored, with the metadata and arrays they hold, checked by
        :meth:`check_files` (KeyError when absent or removed meanwhile, CorruptEntryError when
        damaged)."""
        entry = self._entry(key)
        files = {}
        for name in ENTRY_FILES:
            try:
                files[name] = _read_entry_file(entry, name)
            except FileNotFoundError:
                if not entry.exists():
                    raise KeyError(key) from None
                raise CorruptEntryError(entry, "an entry file is missing") from None
            except OSError as exc:
                raise CorruptEntryError(entry, f"{name} unreadable ({exc.strerror})") from None
        return (files, *self.check_files(entry, files))

    @classmethod
    def check_files(cls, entry: Path, files: dict[str, bytes]) -> tuple[dict[str, Any],
                                                                       dict[str, np.ndarray]]:
        """The metadata and arrays an entry's two files hold, named ``entry`` in errors:
        CorruptEntryError unless both files are there, the metadata is sound (JSON, schema,
        the key of its directory), the arrays match their checksum and load without pickle.
        This is integrity only: whether this code reads them as a run
        (``RunResult.from_parts``) is another question, which an entry of other code may
        fail while being sound."""
        if set(files) != set(ENTRY_FILES):
            raise CorruptEntryError(entry, "an entry file is missing")
        meta = cls._parse_meta(entry, files["meta.json"])
        return meta, cls._load_arrays(entry, meta, files["arrays.npz"])

    @staticmethod
    def _load_arrays(entry: Path, meta: dict[str, Any], raw: bytes) -> dict[str, np.ndarray]:
        if hashlib.sha256(raw).hexdigest() != meta.get("arrays_sha256"):
            raise CorruptEntryError(entry, "arrays checksum mismatch")
        try:
            with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
                return {name: npz[name] for name in npz.files}
        except (ValueError, KeyError, TypeError, OSError) as exc:
            raise CorruptEntryError(entry, f"unreadable content ({exc})") from None

    def _read_meta(self, entry: Path) -> dict[str, Any]:
        try:
            text = _read_entry_file(entry, "meta.json")
        except OSError as exc:
            raise CorruptEntryError(entry, f"metadata unreadable ({exc})") from None
        return self._parse_meta(entry, text)

    @staticmethod
    def _parse_meta(entry: Path, text: bytes) -> dict[str, Any]:
        """An entry's metadata, checked: JSON, this schema, the key of its directory."""
        try:
            meta = json.loads(text)
        except ValueError as exc:
            raise CorruptEntryError(entry, f"metadata unreadable ({exc})") from None
        if not isinstance(meta, dict) or meta.get("schema") != SCHEMA_VERSION:
            raise CorruptEntryError(entry, f"schema version is not {SCHEMA_VERSION}")
        if meta.get("key") != entry.name:
            raise CorruptEntryError(entry, "key does not match its directory")
        return meta

    def lookup(self, spec: RunSpec, checkpoint: CheckpointInfo | None = None) -> RunResult | None:
        """``get`` by spec, logging one line: cached, or missing (to be computed; with
        ``checkpoint``, the one it will resume from, where it stands). A damaged entry is never
        used: it is moved aside to ``ROOT/corrupt/`` (kept for inspection), reported in one
        warning line, and reported missing so that the sweep recomputes it."""
        key = spec.key()
        try:
            result = self.get(key)
            if result is not None and result.key != key:  # its metadata names another spec
                raise CorruptEntryError(self._entry(key), "its metadata holds another spec")
        except CorruptEntryError as exc:
            aside = self.move_aside(exc.path)
            log.warning("%s; moved to %s, recomputing", str(exc).split("; remove it")[0], aside)
            result = None
        if result is None:
            resumes = "" if checkpoint is None else \
                f"; its checkpoint is at step {checkpoint.step} of {checkpoint.steps}"
            log.debug("compute %s %s (not in cache%s)", key, spec.label(), resumes)
        else:
            log.debug("cached  %s %s", key, spec.label())
        return result

    def move_aside(self, entry: Path) -> Path:
        """Rename a damaged entry into ``ROOT/corrupt/`` (atomic; a unique name per move)."""
        target = self.root / "corrupt" / f"{entry.name}.{int(time.time())}.{uuid.uuid4().hex[:8]}"
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):  # another process moved it first
            os.rename(entry, target)
        return target

    # -- listing and removal -----------------------------------------------------------------
    def has(self, key: str) -> bool:
        """Whether an entry for ``key`` is published (not checked for damage: ``get`` does)."""
        return (self._entry(key) / "meta.json").exists()

    def keys(self) -> Iterator[str]:
        runs = self.root / "runs"
        if runs.exists():
            for entry in sorted(runs.glob("*/*")):
                if (entry / "meta.json").exists():
                    yield entry.name

    def metadata(self, key: str) -> dict[str, Any]:
        entry = self._entry(key)
        if not entry.exists():
            raise KeyError(key)
        return self._read_meta(entry)

    def is_current(self, key: str) -> bool:
        """Whether the entry's spec still hashes to ``key`` with this code (``RunSpec.key``).
        An entry made by other code (a numerics version of its task, model, optimizer or the
        loop bumped since, or the 0.1.0 key scheme) is never read again: its spec now has
        another key. False too for a damaged or unreadable entry."""
        try:
            return RunSpec.from_dict(self.metadata(key)["spec"]).key() == key
        except (CorruptEntryError, KeyError, ValueError, TypeError):
            return False

    def remove(self, key: str) -> bool:
        """Unpublish atomically (rename into tmp/), then delete; False when absent."""
        entry = self._entry(key)
        if not entry.exists():
            return False
        tmp_root = self.root / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        doomed = tmp_root / f"{key}.removed.{os.getpid()}.{uuid.uuid4().hex}"
        try:
            os.rename(entry, doomed)
        except FileNotFoundError:
            return False
        shutil.rmtree(doomed, ignore_errors=True)
        return True

    def clear(self) -> int:
        """Remove every entry; returns how many were removed. Writes in progress (in tmp/)
        are left alone."""
        return sum(self.remove(key) for key in list(self.keys()))
