"""A report directory is replaced whole, never edited in place.

A report is written into a fresh temporary directory beside its target and then swapped in:
with one atomic ``renameat2(RENAME_EXCHANGE)`` where the kernel has it (Linux), else with two
renames (the old report moved aside, the new one moved in, the old one put back if that fails).
A reader sees the old report or the new one, never a mix of the two; a write that fails (a full
disk) removes its temporary directory and leaves the old report as it was.

Only a directory that holds nothing but a report (``report.json``, ``report.md``,
``report.html``, ``figures/`` of PNG files) is ever replaced, so ``--out`` naming a directory of
other files (a home directory, a project) is refused before anything is computed. Other
directories written whole (``runs export --format tensorboard``) name what they may replace with
a :class:`Replaceable` (with :func:`entries`: only an empty directory).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attnverify.empirics.store.output_paths import check_name_length, short_temporary_name

REPORT_FILES = frozenset({"report.json", "report.md", "report.html"})
FIGURES = "figures"
_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


@dataclass(frozen=True)
class Replaceable:
    """What a directory written whole may replace: ``foreign`` lists what an existing directory
    holds that it may not (sorted, relative paths; empty: it may be replaced), ``what`` names
    the directory's contents and ``refusal`` ends the error that names a foreign entry (why
    not, and which directory to name instead)."""

    what: str
    foreign: Callable[[Path], list[str]]
    refusal: str


def report_target(out: Path | str, option: str = "--out",
                  kind: Replaceable | None = None) -> Path:
    """``out`` as an absolute path (a symbolic link followed to its target) that may be
    replaced by a directory of ``kind`` (default :data:`REPORT`): absent, or a directory
    holding only what ``kind`` allows. ValueError (one line naming ``option``) otherwise."""
    kind = REPORT if kind is None else kind
    if str(out) == "":
        raise ValueError(f"{option} must name a directory; got an empty path")
    target = Path(os.path.realpath(out))
    check_name_length(target, option)
    cwd = Path.cwd().resolve()
    if target == cwd or target in cwd.parents:
        raise ValueError(f"{option} {out} is the current directory or holds it: a {kind.what} "
                         f"directory is replaced whole; name a directory for the {kind.what}")
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        return target
    if not stat.S_ISDIR(mode):
        raise ValueError(f"{option} {out} exists and is not a directory")
    foreign = kind.foreign(target)
    if foreign:
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        raise ValueError(f"{option} {out} holds {foreign[0]!r}{more}{kind.refusal}")
    return target


def _foreign_entries(directory: Path) -> list[str]:
    """What ``directory`` holds besides a report, sorted (paths relative to it)."""
    foreign = []
    for entry in sorted(directory.iterdir()):
        if entry.name in REPORT_FILES and entry.is_file() and not entry.is_symlink():
            continue
        if entry.name == FIGURES and entry.is_dir() and not entry.is_symlink():
            foreign += [f"{FIGURES}/{f.name}" for f in sorted(entry.iterdir())
                        if f.suffix != ".png" or not f.is_file() or f.is_symlink()]
            continue
        foreign.append(entry.name)
    return foreign


def entries(directory: Path) -> list[str]:
    """Everything ``directory`` holds, sorted: as :attr:`Replaceable.foreign`, a directory that
    replaces only an empty one."""
    return sorted(entry.name for entry in directory.iterdir())


REPORT = Replaceable("report", _foreign_entries,
                     ", not part of a report: a report directory is replaced whole; name a new "
                     "directory or an earlier report's")
"""A verification report: replaces a directory holding only an earlier report."""


def replace_directory(out: Path | str, write: Callable[[Path], None],
                      option: str = "--out", kind: Replaceable | None = None) -> Path:
    """Call ``write(tmp)`` on a new empty directory beside ``out``, then swap it in place of
    ``out`` (:func:`report_target` decides whether ``out`` may be replaced by a directory of
    ``kind``, default :data:`REPORT`); returns the directory written. On any failure the
    temporary directory is removed and ``out`` is left as it was."""
    target = report_target(out, option, kind)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(short_temporary_name(target.name))
    tmp.mkdir()  # the umask's permissions (or the old report's, below), as a plain mkdir
    try:
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        write(tmp)
        report_target(out, option, kind)  # nothing foreign appeared while it was computed
        _swap_in(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # after a swap: the old report
    return target


def _swap_in(new: Path, target: Path) -> None:
    """Put directory ``new`` at ``target``; afterwards ``new`` holds the old report (or is
    gone when there was none)."""
    if not target.exists():
        os.rename(new, target)
        return
    if _exchange(new, target):
        return
    aside = target.with_name(short_temporary_name(target.name) + ".old")
    os.rename(target, aside)
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(aside, target)
        raise
    os.rename(aside, new)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2``); False where the call is not
    available, so the caller falls back to two renames."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):  # not supported here
        return False
    raise OSError(err, os.strerror(err), str(b))
