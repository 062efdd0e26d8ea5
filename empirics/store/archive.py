"""Archives of run-store entries: runs move between machines (from a cluster to a laptop, from
one session's machine to the next) and are reused wherever the same code computes the same keys.

An archive is a gzipped tar of entries in the store's own layout,
``runs/<key[:2]>/<key>/{meta.json, arrays.npz}``, moved byte for byte. Both sides check every
entry as the store checks what it reads (schema, the key of its directory, the arrays'
checksum, arrays that load without pickle), and the import reads the whole gzip stream against
its CRC first, so damage to an entry's metadata is caught too. The checks catch damage, not
forgery: the checksums travel with the archive, so import archives from sources you trust.
Entries are read one at a time, and no member over :data:`MAX_MEMBER_BYTES` is read, so memory
stays bounded whatever an archive claims.

An entry made by other code (its spec hashes to another key here, or this code cannot read its
spec at all) is *stale*: sound, but never read again, so neither packed nor imported. The one
exception is an entry of attnverify 0.1.0 stored under the key that code gave its spec
(:mod:`~attnverify.empirics.store.legacy_keys`): it is imported under its current key.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import logging
import re
import tarfile
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from attnverify.empirics.spec import RunSpec
from attnverify.empirics.store.legacy_keys import migrated
from attnverify.empirics.store.output_paths import atomic_file, check_output_file
from attnverify.empirics.store.run_store import (
    ENTRY_FILES,
    KEY_PATTERN,
    CorruptEntryError,
    RunStore,
    result_of,
)

log = logging.getLogger("attnverify.store")

MEMBER = re.compile(rf"runs/([0-9a-f]{{2}})/({KEY_PATTERN.pattern})/"
                    rf"({'|'.join(map(re.escape, ENTRY_FILES))})")
MAX_MEMBER_BYTES = 1 << 30
"""The largest entry file read from an archive (a full-profile run's arrays, attention
snapshots included, are tens of MiB)."""
READ_ERRORS = (tarfile.TarError, EOFError, OSError, zlib.error)
"""What reading a damaged gzip or tar stream raises."""


@dataclass(frozen=True)
class Packed:
    """What :func:`pack` wrote."""

    packed: int
    stale: int
    """Entries made by other code: never read again, so left out."""


@dataclass(frozen=True)
class Unpacked:
    """What :func:`unpack` did with an archive's runs."""

    imported: int
    present: int
    """Already in the store (left as they are)."""
    stale: int
    """Made by other code: never read, so left out."""
    migrated: int = 0
    """Entries of attnverify 0.1.0 imported under their current keys (counted in
    ``imported`` too)."""
    repaired: int = 0
    """Stored entries that were damaged, moved to ``corrupt/`` and replaced by the archive's
    checked copy (counted in ``imported`` too)."""


def is_current(key: str, meta: dict[str, Any]) -> bool:
    """Whether this code names an entry's spec by its key (else the entry is stale)."""
    try:
        return RunSpec.from_dict(meta["spec"]).key() == key
    except (ValueError, KeyError, TypeError):  # a spec of other code
        return False


def pack(store: RunStore, path: Path | str, keys: Iterable[str] | None = None) -> Packed:
    """Write ``keys`` (default: every entry) of ``store`` into a gzipped tar at ``path`` and
    say how many; stale entries are left out. Each entry is checked as it is added: a damaged
    one raises CorruptEntryError and a named key that is missing KeyError, and then nothing is
    written (an entry removed while the whole store is packed is skipped). The archive is
    published with one rename, after an fsync."""
    path = check_output_file(path, "the archive")
    packed = stale = 0
    with atomic_file(path) as raw, tarfile.open(path.name, "w:gz", fileobj=raw) as tar:
        for key in dict.fromkeys(store.keys() if keys is None else keys):
            try:
                files, meta, arrays = store.read_entry(key)
            except KeyError:
                if keys is None:
                    continue  # removed since the listing
                raise
            if not is_current(key, meta):
                stale += 1
                continue
            result_of(store.entry_path(key), meta, arrays)  # a run of its spec, or damage
            for name in ENTRY_FILES:
                info = tarfile.TarInfo(f"runs/{key[:2]}/{key}/{name}")
                info.size, info.mode, info.mtime = len(files[name]), 0o644, int(time.time())
                tar.addfile(info, io.BytesIO(files[name]))
            packed += 1
    return Packed(packed=packed, stale=stale)


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """Errors of a damaged gzip or tar stream, as one ValueError naming the archive."""
    try:
        yield
    except READ_ERRORS as exc:
        raise ValueError(f"{path}: not a readable run archive ({exc})") from None


def _entries(tar: tarfile.TarFile, path: Path) -> dict[str, dict[str, tarfile.TarInfo]]:
    """Key -> its members, from the archive's headers; ValueError for anything else."""
    entries: dict[str, dict[str, tarfile.TarInfo]] = {}
    with _reading(path):
        members = tar.getmembers()
    for member in members:
        match = MEMBER.fullmatch(member.name)
        if not (member.isfile() and match and match[2].startswith(match[1])):
            raise ValueError(f"{path}: unexpected member {member.name!r}: not a run archive "
                             f"(made by 'attnverify runs pack')")
        if member.size > MAX_MEMBER_BYTES:
            raise ValueError(f"{path}: member {member.name!r} is {member.size} bytes, over the "
                             f"{MAX_MEMBER_BYTES} an entry file may have")
        if match[3] in entries.get(match[2], {}):
            raise ValueError(f"{path}: member {member.name!r} appears twice: not an archive "
                             f"made by 'attnverify runs pack'")
        entries.setdefault(match[2], {})[match[3]] = member
    return entries


def _read(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo],
          path: Path) -> dict[str, bytes]:
    """One entry's files (one entry in memory at a time)."""
    with _reading(path):
        return {name: tar.extractfile(member).read()  # type: ignore[union-attr]
                for name, member in members.items()}


def _digest(files: dict[str, bytes]) -> str:
    return hashlib.sha256(b"".join(files[name] for name in ENTRY_FILES)).hexdigest()


def _check_stream(stream: IO[bytes], path: Path) -> None:
    """Read the whole gzip stream against its CRC (the store checksums arrays, not
    metadata), then rewind."""
    with _reading(path), gzip.GzipFile(fileobj=stream) as whole:
        while whole.read(1 << 20):
            pass
    stream.seek(0)


def archived_keys(path: Path | str) -> set[str]:
    """The run keys an archive made by :func:`pack` holds, read from its headers (no entry is
    read or checked: :func:`unpack` checks). ValueError if it is not such an archive."""
    path = Path(path)
    with _reading(path), tarfile.open(path, mode="r:gz") as tar:
        return set(_entries(tar, path))


def unpack(store: RunStore, path: Path | str) -> Unpacked:
    """Import the runs of an archive made by :func:`pack`. All or nothing: every entry is
    checked (layout, member sizes, schema, checksum, arrays) before any is published, and a
    bad archive raises ValueError naming what is wrong. Entries already stored are kept, unless
    the stored entry is damaged: then it is moved to ``corrupt/`` and the archive's checked copy
    takes its place (only once the whole archive has passed its checks); stale ones are left
    out. The archive is read through one open file, and what is
    published is compared with what was checked. An error writing the store (OSError) is the
    store's and propagates; the runs published before it stay, and unpacking again completes
    the import."""
    path = Path(path)
    with open(path, "rb") as stream:
        _check_stream(stream, path)
        with _reading(path):
            tar = tarfile.open(fileobj=stream, mode="r:gz")  # noqa: SIM115 (closed below)
        with tar:
            entries = _entries(tar, path)
            # the key a run is published under -> its key in the archive, the digest of its
            # files as checked, and its new metadata when it is re-keyed (a 0.1.0 entry)
            wanted: dict[str, tuple[str, str, bytes | None]] = {}
            damaged: set[str] = set()  # stored entries the archive's copies replace
            present = stale = 0
            for key, members in entries.items():  # first pass: check every entry
                files = _read(tar, members, path)
                target, new_meta = key, None
                try:
                    meta, arrays = store.check_files(path / key, files)
                    if not is_current(key, meta):
                        legacy = migrated(key, meta)
                        if legacy is None or not is_current(legacy[0], legacy[1]):
                            stale += 1
                            continue
                        target, new_meta = legacy[0], json.dumps(legacy[1], indent=1).encode()
                        meta = legacy[1]
                    result_of(path / key, meta, arrays)  # a run of its spec, or damage
                except CorruptEntryError as exc:
                    raise ValueError(f"{path}: run {key} is damaged ({exc.reason}); nothing "
                                     f"was imported") from None
                if target in wanted:  # in the archive twice (under its old and new key)
                    present += 1
                    continue
                if store.has(target):
                    if not _is_damaged(store, target):
                        present += 1
                        continue
                    damaged.add(target)
                wanted[target] = (key, _digest(files), new_meta)
            for target, (key, digest, new_meta) in wanted.items():  # second pass: publish
                files = _read(tar, entries[key], path)  # what the first pass checked
                if _digest(files) != digest:
                    raise ValueError(f"{path}: run {key} changed while it was imported")
                if target in damaged:
                    aside = store.move_aside(store.entry_path(target))
                    log.warning("stored run %s was damaged; moved to %s and replaced by the "
                                "copy in %s", target, aside, path.name)
                store.publish_files(target, files["arrays.npz"], new_meta or files["meta.json"])
    return Unpacked(imported=len(wanted), present=present, stale=stale,
                    migrated=sum(new_meta is not None for _, _, new_meta in wanted.values()),
                    repaired=len(damaged))


def _is_damaged(store: RunStore, key: str) -> bool:
    """Whether ``key``'s stored entry fails the store's checks (read, not moved)."""
    try:
        store.get(key)
    except CorruptEntryError:
        return True
    return False
