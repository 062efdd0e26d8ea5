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
from attnverify.empirics.store.archive import pack
from attnverify.empirics.store.output_paths import check_output_file


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


# -- the report directory is replaced whole --------------------------------------------------
KAPPA = ["verify", "--claim", "snell.kappa_closed_form", "--profile", "smoke", "--quiet"]
MOMENTS = ["verify", "--claim", "bao.score_moments", "--profile", "smoke", "--quiet"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def _leftovers(parent: Path, name: str) -> list[str]:
    return [p.name for p in parent.iterdir() if p.name.startswith(f".{name}.")]


def test_a_new_report_replaces_the_old_one_whole(capsys, tmp_path):
    out, cache = tmp_path / "report", str(tmp_path / "c")
    assert main([*KAPPA, "--out", str(out), "--cache", cache]) == 0
    first = _tree(out)
    assert main([*MOMENTS, "--out", str(out), "--cache", cache]) == 0
    second = _tree(out)
    assert set(second) >= {"report.json", "report.md", "report.html"}
    assert not any("snell.kappa" in name for name in second)  # nothing of the old report left
    assert b"snell.kappa_closed_form" in first["report.json"]
    assert b"snell.kappa_closed_form" not in second["report.json"]
    assert _leftovers(tmp_path, "report") == []
    capsys.readouterr()


def test_a_full_disk_leaves_the_old_report_as_it_was(capsys, tmp_path, monkeypatch):
    import errno

    from attnverify.compare.report.document import Report

    out, cache = tmp_path / "report", str(tmp_path / "c")
    assert main([*KAPPA, "--out", str(out), "--cache", cache]) == 0
    before = _tree(out)
    capsys.readouterr()

    def full_disk(self, records, figures):  # report.json and report.md are written by then
        raise OSError(errno.ENOSPC, "No space left on device", "report.html")

    monkeypatch.setattr(Report, "html", full_disk)
    code, err = _run(capsys, [*MOMENTS, "--out", str(out), "--cache", cache])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "No space left on device" in err and "Traceback" not in err
    assert _tree(out) == before  # neither a new report.json beside the old html nor a .tmp
    assert _leftovers(tmp_path, "report") == []


@pytest.mark.parametrize(("setup", "fragment"), [
    (lambda d: (d / "notes.txt").write_text("mine"), "holds 'notes.txt', not part of a report"),
    (lambda d: (d / "figures").mkdir() or (d / "figures" / "data.csv").write_text("1"),
     "holds 'figures/data.csv'"),
])
def test_a_directory_of_other_files_is_refused_before_anything_runs(capsys, tmp_path, setup,
                                                                      fragment):
    out = tmp_path / "project"
    out.mkdir()
    setup(out)
    before = _tree(out)
    code, err = _run(capsys, [*KAPPA, "--out", str(out), "--cache", str(tmp_path / "c")])
    assert code == 2 and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert _tree(out) == before and not (tmp_path / "c").exists()


def test_the_current_directory_is_refused(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = _run(capsys, [*KAPPA, "--out", ".", "--cache", str(tmp_path / "c")])
    assert code == 2 and "is the current directory or holds it" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("atomic", [True, False])
def test_the_swap_with_and_without_an_atomic_exchange(tmp_path, monkeypatch, atomic):
    from attnverify.compare.report import directory as report_dir

    if not atomic:  # kernels without renameat2: two renames
        monkeypatch.setattr(report_dir, "_exchange", lambda a, b: False)
    out = tmp_path / "r"
    report_dir.replace_directory(out, lambda d: (d / "report.md").write_text("old"))
    assert (out / "report.md").read_text() == "old"
    report_dir.replace_directory(out, lambda d: (d / "report.json").write_text("new"))
    assert _tree(out) == {"report.json": b"new"} and _leftovers(tmp_path, "r") == []

    def fails(d: Path) -> None:
        (d / "report.json").write_text("half")
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        report_dir.replace_directory(out, fails)
    assert _tree(out) == {"report.json": b"new"} and _leftovers(tmp_path, "r") == []
