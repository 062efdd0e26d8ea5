"""Layering rules of docs/layout.md: theory never imports torch; empirics never imports theory
or compare; the light entry points (``import attnverify.theory``, ``attnverify predict``,
``attnverify --version``) import neither torch nor hypothesis. Each check runs in a fresh
interpreter started outside the repository, so only the installed ``attnverify`` is importable."""

from __future__ import annotations

import subprocess
import sys

HEAVY = {"torch", "hypothesis"}


def _modules_after(statement: str, cwd) -> set[str]:
    code = f"import sys\n{statement}\nprint('\\n'.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         cwd=cwd)
    return set(out.stdout.split())


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_import_theory_leaves_torch_and_hypothesis_unimported(tmp_path):
    modules = _modules_after("from attnverify import theory\ntheory.snell.kappa(60, 40)",
                             tmp_path)
    assert "attnverify.theory.snell" in modules
    assert not HEAVY & _top(modules)


def test_import_attnverify_alone_loads_no_subpackage(tmp_path):
    modules = _modules_after("import attnverify\nassert attnverify.__version__", tmp_path)
    assert not {m for m in modules if m.startswith("attnverify.")}
    lazy = _modules_after("import attnverify\nattnverify.theory.predict('snell.kappa', V=60, "
                          "L=40)", tmp_path)
    assert "attnverify.theory" in lazy and not HEAVY & _top(lazy)


def test_predict_and_version_commands_stay_light(tmp_path):
    for argv in (["predict", "snell.kappa", "--V", "60", "--L", "40"], ["--version"],
                 ["predict", "--help"]):
        modules = _modules_after(
            "from attnverify.compare.cli import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass", tmp_path)
        assert "attnverify.compare.cli" in modules
        assert not HEAVY & _top(modules), argv


def test_empirics_does_not_import_theory_or_compare(tmp_path):
    modules = _modules_after("import attnverify.empirics", tmp_path)
    assert "torch" in modules
    assert not {"attnverify.theory", "attnverify.compare"} & modules


def test_the_claims_do_not_import_the_registry(tmp_path):
    """The built-in claims are an explicit list the registry reads; they never import it (no
    import cycle between the registry and the claims)."""
    modules = _modules_after("import attnverify.compare.claims", tmp_path)
    assert "attnverify.compare.claims.snell.multihead" in modules
    assert "attnverify.compare.registry" not in modules
