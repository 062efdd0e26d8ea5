"""Where attnverify may write a file: never over anything that is not a regular file.

Writing an archive, an export or a benchmark's JSON replaces or overwrites its target. Run as
root, ``runs pack /dev/null`` would otherwise rename a gzip file over the device, and an export
to a FIFO or a disk device would block or destroy it. Every output file is checked here first.
"""

from __future__ import annotations

import stat
from pathlib import Path


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
