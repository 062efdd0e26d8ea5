"""Where attnverify may write a file: never over anything that is not a regular file.

Writing an archive, an export or a benchmark's JSON replaces or overwrites its target. Run as
root, ``runs pack /dev/null`` would otherwise rename a gzip file over the device, and an export
to a FIFO or a disk device would block or destroy it. Every output file is checked here first,
and written through :func:`atomic_file` (the report directory is written whole into a new
directory and swapped in, :mod:`attnverify.compare.report.directory`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def check_output_file(path: Path | str, option: str) -> Path:
    """``path`` as a :class:`~pathlib.Path`; ValueError (one line naming ``option``) when it is
    empty or exists as anything but a regular file (a directory, a device, a pipe, a socket, a
    symbolic link), so that nothing else is ever replaced or overwritten."""
    if str(path) == "":
        raise ValueError(f"{option} must name a file; got an empty path")
    path = Path(path)
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return path
    if not stat.S_ISREG(mode):
        what = ("a directory" if stat.S_ISDIR(mode) else "a symbolic link" if stat.S_ISLNK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
                else "a pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "not a regular file")
        raise ValueError(f"{option} {path} exists and is {what}: attnverify replaces only regular "
                         f"files; name a new file or a regular one")
    return path


TEMPORARY_PREFIX_LENGTH = 40
"""How much of a name its temporary sibling keeps: the sibling's name stays far below every
file system's limit on a name (255 bytes on ext4, XFS, APFS and NTFS) whatever the name."""


def short_temporary_name(name: str) -> str:
    """The name of a temporary file or directory beside ``name``: a hidden name holding the
    first characters of ``name`` (so that a leftover says what it was for), the process and a
    random part, at most about 75 bytes."""
    return (f".{name[:TEMPORARY_PREFIX_LENGTH]}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")


def check_name_length(path: Path, option: str | None) -> None:
    """ValueError (naming ``option``) where ``path``'s last component or the whole path is
    longer than the file system allows where it would be created (``os.pathconf`` of its
    nearest existing folder; 255 and 4096 bytes where that cannot be asked), before anything is
    computed for it."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
        path_max = os.pathconf(folder, "PC_PATH_MAX")
    except (OSError, ValueError):
        name_max, path_max = 255, 4096
    who = f"{option} " if option else ""
    for part in path.parts:
        if len(os.fsencode(part)) > name_max:
            raise ValueError(f"{who}{path}: the name {part[:40]}... is {len(os.fsencode(part))} "
                             f"bytes, longer than the {name_max} the file system allows; "
                             f"choose a shorter name")
    if len(os.fsencode(str(path))) >= path_max:
        raise ValueError(f"{who}{path}: the path is {len(os.fsencode(str(path)))} bytes, longer "
                         f"than the {path_max} the file system allows; choose a shorter one")


@contextlib.contextmanager
def atomic_file(path: Path | str, option: str | None = None) -> Iterator[BinaryIO]:
    """A binary file to write ``path`` through: a new file beside it, flushed to disk, then
    renamed over ``path`` in one step, so a reader sees the old file or the whole new one,
    never a part. Nothing is left behind when the writing fails (the temporary file is
    removed, ``path`` is untouched). With ``option``, ``path`` is first checked by
    :func:`check_output_file` (named ``option`` in the error): nothing but a regular file is
    replaced."""
    path = check_output_file(path, option) if option is not None else Path(path)
    tmp = path.with_name(short_temporary_name(path.name))
    try:
        with open(tmp, "xb") as handle:
            with contextlib.suppress(FileNotFoundError):  # a file replaced keeps its mode
                os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)


def write_atomic(path: Path | str, data: bytes | str, option: str | None = None) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` atomically (:func:`atomic_file`)."""
    with atomic_file(path, option) as handle:
        handle.write(data.encode() if isinstance(data, str) else data)
    return Path(path)
