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
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import tarfile
import time
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from empirics.store import ENTRY_FILES, CorruptEntryError, RunStore

MEMBER = re.compile(r"runs/([0-9a-f]{2})/([0-9a-f]{24})/(meta\.json|arrays\.npz)")
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
    """Entries made by other code (their specs hash to other keys here): never read again, so
    left out."""


@dataclass(frozen=True)
class Unpacked:
    """What :func:`unpack` did with an archive's runs."""

    imported: int
    present: int
    """Already in the store (left as they are)."""
    stale: int
    """Made by other code (their specs hash to other keys here): never read, so left out."""


def pack(store: RunStore, path: Path | str, keys: Iterable[str] | None = None) -> Packed:
    """Write ``keys`` (default: every entry) of ``store`` into a gzipped tar at ``path`` and
    say how many; stale entries are left out. Each entry is checked as it is added: a damaged
    one raises CorruptEntryError, a missing key KeyError, and then nothing is written. The
    archive is published with one rename, after an fsync."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}")
    packed = stale = 0
    try:
        with open(tmp, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
            for key in dict.fromkeys(store.keys() if keys is None else keys):
                files = store.entry_files(key)  # checked; KeyError, CorruptEntryError
                if not store.is_current(key):
                    stale += 1
                    continue
                for name in ENTRY_FILES:
                    info = tarfile.TarInfo(f"runs/{key[:2]}/{key}/{name}")
                    info.size, info.mode, info.mtime = len(files[name]), 0o644, int(time.time())
                    tar.addfile(info, io.BytesIO(files[name]))
                packed += 1
            tar.close()
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
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
        entries.setdefault(match[2], {})[match[3]] = member
    return entries


def _read(tar: tarfile.TarFile, members: dict[str, tarfile.TarInfo],
          path: Path) -> dict[str, bytes]:
    """One entry's files (one entry in memory at a time)."""
    files = {}
    with _reading(path):
        for name, member in members.items():
            data = tar.extractfile(member)
            files[name] = data.read() if data is not None else b""
    return files


def unpack(store: RunStore, path: Path | str) -> Unpacked:
    """Import the runs of an archive made by :func:`pack`. All or nothing: every entry is
    checked (layout, member sizes, schema, checksum, arrays) before any is published, and a
    bad archive raises ValueError naming what is wrong. Entries already stored are kept;
    stale ones (made by other code) are left out. An error writing the store (OSError) is
    the store's, and propagates as it is."""
    path = Path(path)
    with _reading(path), gzip.open(path) as stream:  # the whole stream against its CRC: the
        while stream.read(1 << 20):                  # store checksums arrays, not metadata
            pass
    with _reading(path):
        tar = tarfile.open(path, "r:gz")  # noqa: SIM115 (closed by the with below)
    with tar:
        entries = _entries(tar, path)
        wanted = []
        present = stale = 0
        for key, members in entries.items():  # first pass: check every entry
            try:
                result = store.check_files(path / key, _read(tar, members, path))
            except CorruptEntryError as exc:
                raise ValueError(f"{path}: run {key} is damaged ({exc.reason}); nothing was "
                                 f"imported") from None
            if result.spec.key() != key:
                stale += 1
            elif store.has(key):
                present += 1
            else:
                wanted.append(key)
        for key in wanted:  # second pass: publish what the first found sound
            files = _read(tar, entries[key], path)
            store.publish_files(key, files["arrays.npz"], files["meta.json"])
    return Unpacked(imported=len(wanted), present=present, stale=stale)
