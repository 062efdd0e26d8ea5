"""Output files are never written over anything but a regular file (a device, a pipe, a
directory, a symbolic link), and an empty ``--out`` is refused: one line, exit 2, the target
untouched (``runs pack /dev/null`` as root would otherwise replace the device)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from attnverify.compare.cli import main
from attnverify.empirics import RunStore
from attnverify.empirics.archive import pack
from attnverify.empirics.output_paths import check_output_file


@pytest.fixture
def specials(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere.txt")
    return {"a pipe": fifo, "a directory": folder, "a symbolic link": link,
            "a device": Path(os.devnull)}


def _run(capsys, argv):
    code = main(argv)
    _, err = capsys.readouterr()
    return code, err


@pytest.mark.parametrize("what", ["a pipe", "a directory", "a symbolic link", "a device"])
def test_pack_export_and_bench_refuse_special_files(capsys, tmp_path, specials, what):
    target = specials[what]
    before = target.lstat()
    cache = str(tmp_path / "cache")
    for argv in (["runs", "pack", str(target), "--cache", cache],
                 ["runs", "export", "--out", str(target), "--cache", cache],
                 ["bench", "--families", "snell_copying", "--json", str(target)]):
        code, err = _run(capsys, argv)
        assert code == 2, (argv, err)
        assert len(err.strip().splitlines()) == 1 and f"is {what}" in err, (argv, err)
    after = target.lstat()
    assert (stat.S_IFMT(after.st_mode), after.st_ino) == (stat.S_IFMT(before.st_mode),
                                                          before.st_ino)


def test_the_library_refuses_too(tmp_path):
    with pytest.raises(ValueError, match="is a device"):
        pack(RunStore(tmp_path / "c"), os.devnull)
    with pytest.raises(ValueError, match="empty path"):
        check_output_file("", "--json")
    assert check_output_file(tmp_path / "new.tar.gz", "x") == tmp_path / "new.tar.gz"
    regular = tmp_path / "old.tar.gz"
    regular.write_bytes(b"")
    assert check_output_file(regular, "x") == regular  # a regular file may be replaced


@pytest.mark.parametrize("command", [["verify", "--claim", "snell.kappa_closed_form"],
                                     ["figures"]])
def test_an_empty_out_is_refused(capsys, tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    code, err = _run(capsys, [*command, "--profile", "smoke", "--out", "", "--cache",
                              str(tmp_path / "c")])
    assert code == 2 and "--out must name a directory; got an empty path" in err
    assert list(tmp_path.iterdir()) == []
