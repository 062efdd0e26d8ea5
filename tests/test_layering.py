"""Layering rules of ARCHITECTURE.md: theory never imports torch; empirics never imports theory
or compare."""

from __future__ import annotations

import subprocess
import sys


def _modules_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(out.stdout.split())


def test_import_theory_leaves_torch_unimported():
    modules = _modules_after("import theory; theory.snell.kappa(60, 40)")
    assert "theory.snell" in modules
    assert "torch" not in modules


def test_empirics_does_not_import_theory_or_compare():
    modules = _modules_after("import empirics")
    assert "torch" in modules
    assert not {"theory", "compare"} & modules
