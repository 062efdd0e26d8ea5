"""RunStore: a content-addressed cache of RunResults on disk (ARCHITECTURE.md, "Core objects").

Layout: ``ROOT/runs/<key[:2]>/<key>/{meta.json, arrays.npz}``. Arrays are ``.npz`` loaded with
``allow_pickle=False``; metadata is JSON carrying a schema version and the SHA-256 of the arrays
file, so nothing read from disk can execute code and a damaged entry is detected, never used.

Writes are atomic: an entry is assembled in ``ROOT/tmp/`` and published with one ``rename`` of its
directory, so a killed writer leaves at most an unpublished temporary directory, and of two
concurrent writers of the same key one publishes and the other discards its identical copy.
Every lookup logs one line: cached, or missing and about to be computed.

Runs move between machines as archives (:meth:`RunStore.pack`, :meth:`RunStore.unpack`): a
gzipped tar of entries in the same layout, checked entry by entry on both sides, so that runs
trained on a cluster, or in an earlier session on another machine, are reused wherever the same
code computes the same keys.
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
import tarfile
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from empirics.result import RunResult
from empirics.spec import RunSpec

SCHEMA_VERSION = 1
KEY_PATTERN = re.compile(r"[0-9a-f]{24}")
ENV_VAR = "ATTNVERIFY_CACHE"
ENTRY_FILES = ("meta.json", "arrays.npz")
ARCHIVE_MEMBER = re.compile(r"runs/([0-9a-f]{2})/([0-9a-f]{24})/(meta\.json|arrays\.npz)")
log = logging.getLogger("attnverify.store")


def default_cache_dir() -> Path:
    """``$ATTNVERIFY_CACHE``, else ``$XDG_CACHE_HOME/attnverify``, else ``~/.cache/attnverify``."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "attnverify"


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


@dataclass(frozen=True)
class Unpacked:
    """What :meth:`RunStore.unpack` did with an archive's runs."""

    imported: int
    present: int
    """Already in the store (left as they are)."""
    stale: int
    """Made by other code (their specs hash to other keys here): never read, so left out."""


class RunStore:
    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def _entry(self, key: str) -> Path:
        if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
            raise ValueError(f"malformed run key {key!r}: a run key is 24 hexadecimal digits "
                             f"(see 'attnverify runs list')")
        return self.root / "runs" / key[:2] / key

    def __contains__(self, key: str) -> bool:
        return (self._entry(key) / "meta.json").exists()

    # -- writing -----------------------------------------------------------------------------
    def put(self, result: RunResult) -> Path:
        """Publish ``result`` atomically; a no-op when the key is already stored."""
        key = result.key
        final = self._entry(key)
        if final.exists():
            return final
        buffer = io.BytesIO()
        np.savez(buffer, **result.arrays())
        arrays = buffer.getvalue()
        meta = {"schema": SCHEMA_VERSION, "arrays_sha256": hashlib.sha256(arrays).hexdigest(),
                **result.metadata()}
        return self._publish(key, arrays, json.dumps(meta, indent=1).encode())

    def _publish(self, key: str, arrays: bytes, meta: bytes) -> Path:
        """Write an entry's two files into tmp/ and publish the directory with one rename."""
        final = self._entry(key)
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
        """The stored result, None when absent; raises CorruptEntryError when damaged."""
        entry = self._entry(key)
        if not entry.exists():
            return None
        meta = self._read_meta(entry)
        try:
            raw = (entry / "arrays.npz").read_bytes()
        except OSError as exc:
            raise CorruptEntryError(entry, f"arrays unreadable ({exc.strerror})") from None
        return self._decode(entry, meta, raw)

    @staticmethod
    def _decode(entry: Path, meta: dict[str, Any], raw: bytes) -> RunResult:
        """The result of an entry's checked metadata and its arrays file's bytes;
        CorruptEntryError when the checksum or the content is wrong."""
        if hashlib.sha256(raw).hexdigest() != meta.get("arrays_sha256"):
            raise CorruptEntryError(entry, "arrays checksum mismatch")
        try:
            with np.load(io.BytesIO(raw), allow_pickle=False) as npz:
                arrays = {name: npz[name] for name in npz.files}
            return RunResult.from_parts(meta, arrays)
        except (ValueError, KeyError, TypeError, OSError) as exc:
            raise CorruptEntryError(entry, f"unreadable content ({exc})") from None

    def _read_meta(self, entry: Path) -> dict[str, Any]:
        try:
            text = (entry / "meta.json").read_bytes()
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

    def lookup(self, spec: RunSpec) -> RunResult | None:
        """``get`` by spec, logging one line: cached, or missing (to be computed). A damaged
        entry is never used: it is moved aside to ``ROOT/corrupt/`` (kept for inspection),
        reported in one warning line, and reported missing so that the sweep recomputes it."""
        key = spec.key()
        try:
            result = self.get(key)
        except CorruptEntryError as exc:
            aside = self.move_aside(exc.path)
            log.warning("%s; moved to %s, recomputing", str(exc).split("; remove it")[0], aside)
            result = None
        if result is None:
            log.info("compute %s %s (not in cache)", key, spec.label())
        else:
            log.info("cached  %s %s", key, spec.label())
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
        An entry made by other code (the package version, or the source of a module its run
        executes, changed since) is never read again: its spec now has another key. False too
        for a damaged or unreadable entry."""
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

    # -- archives: moving runs between machines ----------------------------------------------
    def pack(self, path: Path | str, keys: Iterable[str] | None = None) -> int:
        """Write entries into a gzipped tar at ``path`` (atomically) and return how many:
        ``keys``, or every current entry (stale ones are never read, so not worth moving).
        Each entry is checked first: a damaged one raises CorruptEntryError, a missing key
        KeyError, and nothing is written."""
        keys = [k for k in self.keys() if self.is_current(k)] if keys is None else list(keys)
        members: list[tuple[str, bytes]] = []
        for key in dict.fromkeys(keys):
            entry = self._entry(key)
            if not entry.exists():
                raise KeyError(key)
            files = {}
            for name in ENTRY_FILES:
                try:
                    files[name] = (entry / name).read_bytes()
                except OSError as exc:
                    raise CorruptEntryError(entry, f"{name} unreadable ({exc.strerror})") from None
            self._decode(entry, self._parse_meta(entry, files["meta.json"]), files["arrays.npz"])
            members += [(f"runs/{key[:2]}/{key}/{name}", files[name]) for name in ENTRY_FILES]
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}")
        try:
            with tarfile.open(tmp, "w:gz") as tar:
                for name, data in members:
                    info = tarfile.TarInfo(name)
                    info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
                    tar.addfile(info, io.BytesIO(data))
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.remove(tmp)
        return len(members) // len(ENTRY_FILES)

    def unpack(self, path: Path | str) -> Unpacked:
        """Import the runs of an archive made by :meth:`pack`. All or nothing: every entry is
        checked (layout, schema, checksum, readable arrays) before any is published, and a
        bad archive raises ValueError naming what is wrong. Entries already stored are kept;
        stale ones (made by other code) are left out."""
        path = Path(path)
        files: dict[str, dict[str, bytes]] = {}
        try:
            with tarfile.open(path, "r:gz") as tar:
                for member in tar:
                    match = ARCHIVE_MEMBER.fullmatch(member.name)
                    if not (member.isfile() and match and match[2].startswith(match[1])):
                        raise ValueError(f"{path}: unexpected member {member.name!r}: not a run "
                                         f"archive (made by 'attnverify runs pack')")
                    data = tar.extractfile(member)
                    files.setdefault(match[2], {})[match[3]] = data.read() if data else b""
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise ValueError(f"{path}: not a readable run archive ({exc})") from None
        checked: dict[str, tuple[bytes, bytes, bool]] = {}
        for key, parts in files.items():
            place = path / key
            try:
                if set(parts) != set(ENTRY_FILES):
                    raise CorruptEntryError(place, "an entry file is missing")
                meta = self._parse_meta(place, parts["meta.json"])
                result = self._decode(place, meta, parts["arrays.npz"])
            except CorruptEntryError as exc:
                raise ValueError(f"{path}: run {key} is damaged ({exc.reason}); nothing was "
                                 f"imported") from None
            checked[key] = (parts["arrays.npz"], parts["meta.json"], result.spec.key() == key)
        present = stale = 0
        for key, (arrays, meta, current) in checked.items():
            if not current:
                stale += 1
            elif self.has(key):
                present += 1
            else:
                self._publish(key, arrays, meta)
        return Unpacked(imported=len(checked) - present - stale, present=present, stale=stale)
