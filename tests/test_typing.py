"""The package type-checks: mypy on every module of ``attnverify`` (its settings are
pyproject's ``[tool.mypy]``), so an annotation that stops matching the code fails CI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_type_checks(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy comes with the dev extra")
    # the repository root is the package directory: mypy finds it under its import name
    (tmp_path / "attnverify").symlink_to(ROOT, target_is_directory=True)
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy-cache"), "-p", "attnverify"],
        cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout[-20000:] + proc.stderr[-2000:]
