"""One import root (docs/layout.md): the wheel installs ``attnverify`` and nothing
else at the top level of site-packages, ships the license and ``py.typed``; the console script
and ``python -m attnverify.paper_figures`` work from a directory holding a user's own
``compare.py``, ``theory.py`` and ``empirics/``, which the old top-level names would have picked up.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import attnverify

ROOT = Path(__file__).resolve().parents[1]
REPO_PACKAGES = ("theory", "empirics", "compare", "paper_figures")


def _source_tree(target: Path) -> Path:
    """The files a build reads, copied (a build writes build/ beside its sources)."""
    target.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "__init__.py", "py.typed"):
        shutil.copy2(ROOT / name, target / name)
    for folder in REPO_PACKAGES:
        shutil.copytree(ROOT / folder, target / folder, ignore=shutil.ignore_patterns(
            "__pycache__", "*.tar.gz"))
    return target


def test_the_wheel_holds_one_top_level_package_the_license_and_py_typed(tmp_path):
    source = _source_tree(tmp_path / "src")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", str(source), "--no-deps",
                           "--no-build-isolation", "-w", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "deprecat" not in (proc.stdout + proc.stderr).lower()
    (wheel,) = tmp_path.glob("attnverify-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"attnverify", f"attnverify-{attnverify.__version__}.dist-info"}
    assert "attnverify/py.typed" in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    # every module of the repository's package folders is in the wheel, and nothing else
    sources = {f"attnverify/{path.relative_to(ROOT).as_posix()}"
               for folder in REPO_PACKAGES for path in (ROOT / folder).rglob("*.py")}
    assert sources | {"attnverify/__init__.py"} == {n for n in names if n.endswith(".py")}
    metadata = zipfile.ZipFile(wheel).read(
        f"attnverify-{attnverify.__version__}.dist-info/METADATA").decode()
    assert "License-Expression: MIT" in metadata


@pytest.fixture
def shadowing_dir(tmp_path):
    """A working directory of a user whose own modules carry the repository's folder names."""
    (tmp_path / "compare.py").write_text("raise ImportError('the user compare.py was imported')\n")
    (tmp_path / "theory.py").write_text("raise ImportError('the user theory.py was imported')\n")
    (tmp_path / "empirics").mkdir()
    (tmp_path / "empirics" / "__init__.py").write_text("raise ImportError('user empirics')\n")
    return tmp_path


def _attnverify(*argv: str) -> list[str]:
    script = shutil.which("attnverify") or str(Path(sys.executable).with_name("attnverify"))
    return [script, *argv]


@pytest.mark.parametrize("argv", [
    _attnverify("--version"),
    _attnverify("predict", "snell.kappa", "--V", "60", "--L", "40"),
    _attnverify("claims"),
    [sys.executable, "-m", "attnverify.paper_figures", "--help"],
    [sys.executable, "-c", "from attnverify import theory; import attnverify.compare, "
                           "attnverify.empirics; print(theory.snell.kappa(60, 40).value)"],
], ids=["version", "predict", "claims", "python-m-paper-figures", "import"])
def test_entry_points_work_beside_a_users_compare_theory_and_empirics(shadowing_dir, argv):
    proc = subprocess.run(argv, cwd=shadowing_dir, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "user" not in proc.stderr


def test_one_version_source():
    proc = subprocess.run(_attnverify("--version"), capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == f"attnverify {attnverify.__version__}"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{attnverify.__version__}"' in pyproject
