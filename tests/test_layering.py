"""Layering rules of docs/layout.md: theory never imports torch; empirics never imports theory
or compare; the light entry points (``import attnverify.theory``, ``attnverify predict``,
``attnverify --version``) import neither torch nor hypothesis. Each check runs in a fresh
interpreter started outside the repository, so only the installed ``attnverify`` is importable.
The same rules are also read from the source (every import statement, a lazy one inside a
function included), since a lazy import escapes the import-time checks until its function runs."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = {"torch", "hypothesis"}
ROOT = Path(__file__).resolve().parents[1]
"""The repository root: the folders of the ``attnverify`` package (pyproject's package-dir)."""
BANNED = {"theory": (*sorted(HEAVY), "attnverify.compare", "attnverify.empirics"),
          "empirics": ("attnverify.theory", "attnverify.compare")}
"""Per layer, the modules no import statement of its source may name (docs/layout.md)."""


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


def test_the_plugin_api_is_explicit_and_light(tmp_path):
    """``attnverify.compare`` imports its public names (no table of lazy names below the
    package root, no mutable registry among them) and loads neither torch, hypothesis nor
    the built-in claims."""
    import attnverify.compare as api

    modules = _modules_after("import attnverify.compare", tmp_path)
    assert not HEAVY & _top(modules) and "attnverify.compare.claims" not in modules
    toolkit = _modules_after("import attnverify.compare.testing", tmp_path)  # hypothesis's
    assert "torch" not in _top(toolkit) and "attnverify.compare.claims" not in toolkit
    assert "CLAIMS" not in api.__all__ and all(hasattr(api, name) for name in api.__all__)
    lazy = [name for name, path in _package_modules(ROOT).items() if name.count(".") > 0
            and re.search(r"^def __getattr__\(", path.read_text(encoding="utf-8"), re.M)]
    assert lazy == []


def test_empirics_does_not_import_theory_or_compare(tmp_path):
    modules = _modules_after("import attnverify.empirics", tmp_path)
    assert "torch" in modules
    assert not {"attnverify.theory", "attnverify.compare"} & modules


def test_the_claims_do_not_import_the_registry():
    """The built-in claims are an explicit list the registry reads; they never import it (no
    import cycle between the registry and the claims)."""
    graph, _ = _import_graph(ROOT)
    claims = [m for m in graph if m.startswith("attnverify.compare.claims")]
    assert "attnverify.compare.claims.snell.section5.multihead_rescues_permutations" in claims
    assert [m for m in claims if "attnverify.compare.registry" in graph[m]] == []


def _from_module(node: ast.ImportFrom, path: Path, root: Path) -> str:
    """The module a ``from ... import`` of ``path`` names, a relative one resolved against the
    package ``attnverify`` rooted at ``root`` (level 1 is the file's own folder, 2 its
    parent, ...)."""
    if not node.level:
        return str(node.module)
    base = path.parents[node.level - 1]
    package = ".".join(("attnverify", *base.relative_to(root).parts))
    return f"{package}.{node.module}" if node.module else package


def _imports(path: Path, root: Path) -> set[str]:
    """Every module an import statement of ``path`` names (anywhere in the file), relative
    imports resolved (:func:`_from_module`)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, path, root)
            # "from attnverify import theory" imports the module attnverify.theory
            names |= {module} | {f"{module}.{alias.name}" for alias in node.names}
    return names


def _violations(root: Path) -> list[str]:
    out = []
    for layer, banned in BANNED.items():
        for path in sorted((root / layer).rglob("*.py")):
            bad = sorted(name for name in _imports(path, root)
                         if any(name == b or name.startswith(b + ".") for b in banned))
            out += [f"{path.relative_to(root)} imports {name}" for name in bad]
    return out


def test_no_source_file_breaks_the_layering():
    assert _violations(ROOT) == []


@pytest.mark.parametrize(("layer", "source"), [
    ("theory", "def f():\n    import torch\n"),
    ("theory", "def f():\n    from ...compare import verify\n"),
    ("empirics", "def f():\n    from attnverify.theory import snell\n"),
    ("empirics", "from ... import theory\n"),
    ("empirics", "from attnverify import compare\n"),
])
def test_the_source_check_sees_lazy_and_relative_imports(tmp_path, layer, source):
    (tmp_path / layer / "sub").mkdir(parents=True)
    (tmp_path / layer / "sub" / "mod.py").write_text(source)
    assert _violations(tmp_path)


def test_the_source_check_passes_allowed_imports(tmp_path):
    (tmp_path / "theory" / "sub").mkdir(parents=True)
    (tmp_path / "theory" / "sub" / "mod.py").write_text(
        "import numpy\nfrom ..prediction import Prediction\nfrom . import other\n"
        "def f():\n    from attnverify.theory import snell\n")
    assert _violations(tmp_path) == []


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(("attnverify", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def _package_modules(root: Path) -> dict[str, Path]:
    """Every module of the package below ``root`` (tests, examples and docs are not in it)."""
    return {_module_name(p, root): p for p in sorted(root.rglob("*.py"))
            if p.relative_to(root).parts[0] not in ("tests", "examples", "docs", "build")
            and not p.relative_to(root).parts[0].startswith(".")}


def _runtime_imports(path: Path, root: Path) -> list[tuple[str, str | None]]:
    """(module, imported name) of every import statement that runs (lazy ones included), not
    those under ``if TYPE_CHECKING:``; relative imports resolved as in :func:`_imports`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree)
                   if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for statement in node.body for n in ast.walk(statement)}
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out += [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = _from_module(node, path, root)
            out += [(module, alias.name) for alias in node.names]
    return out


def _import_graph(root: Path) -> tuple[dict[str, set[str]], list[str]]:
    """Module -> the package modules it imports at run time, and every import of another
    module's private name (``from m import _x``)."""
    modules = _package_modules(root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    private = []
    for name, path in modules.items():
        for module, imported in _runtime_imports(path, root):
            whole = f"{module}.{imported}"
            target = whole if imported and whole in modules else module
            if target in modules and target != name:
                graph[name].add(target)
            if (imported and imported.startswith("_") and not imported.startswith("__")
                    and module in modules and module != name):
                private.append(f"{name} imports {whole}")
    return graph, private


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_circle_of_imports_and_no_private_name_imported():
    graph, private = _import_graph(ROOT)
    assert len(graph) > 100  # the package was found
    assert _circles(graph) == []
    assert private == []


def test_the_circle_check_sees_a_circle_and_a_private_import(tmp_path):
    (tmp_path / "compare" / "report").mkdir(parents=True)
    (tmp_path / "compare" / "report" / "a.py").write_text(
        "from attnverify.compare.report.b import _helper\n")
    (tmp_path / "compare" / "report" / "b.py").write_text(
        "def f():\n    from . import a\n")
    (tmp_path / "compare" / "report" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import x\n")
    graph, private = _import_graph(tmp_path)
    assert _circles(graph) == [["attnverify.compare.report.a", "attnverify.compare.report.b"]]
    assert private == ["attnverify.compare.report.a imports attnverify.compare.report.b._helper"]
    assert graph["attnverify.compare.report.c"] == set()  # typing-only imports do not count


def test_no_subpackage_shadows_a_public_name():
    """``attnverify.compare.evaluate`` is a function: a sub-package of that name would replace
    it as soon as the sub-package is imported. Every public name of each package is what its
    ``__all__`` promises, with every sub-package loaded."""
    import importlib
    import pkgutil
    import types

    for package in ("attnverify.compare", "attnverify.empirics", "attnverify.compare.testing"):
        module = importlib.import_module(package)
        for info in pkgutil.iter_modules(module.__path__, f"{package}."):
            if info.ispkg:
                importlib.import_module(info.name)
        shadowed = [name for name in module.__all__
                    if isinstance(getattr(module, name), types.ModuleType)]
        assert shadowed == [], f"{package}: {shadowed} are sub-modules, not the public names"


def _claim_modules(root: Path, claim_names: set[str]) -> set[str]:
    """The modules below ``compare/claims`` named after a claim id's second part."""
    return {m for m in _package_modules(root) if m.startswith("attnverify.compare.claims.")
            and m.rsplit(".", 1)[-1] in claim_names}


def _claim_to_claim_imports(root: Path, claim_names: set[str]) -> list[str]:
    graph, _ = _import_graph(root)
    claims = _claim_modules(root, claim_names)
    return sorted(f"{m} imports {t}" for m in claims for t in graph[m] & claims)


def test_no_claim_module_imports_another_claim_module():
    """A claim's home is its module; what claims of a paper share lives in the paper's shared
    modules, so that changing one claim cannot move another's runs."""
    from attnverify.compare.claims import BUILTIN

    names = {cls.id.split(".", 1)[1] for cls in BUILTIN}
    assert len(_claim_modules(ROOT, names)) == len(BUILTIN)  # one module per claim
    assert _claim_to_claim_imports(ROOT, names) == []


def test_the_claim_import_check_sees_one_claim_importing_another(tmp_path):
    claims = tmp_path / "compare" / "claims" / "snell"
    claims.mkdir(parents=True)
    (claims / "first.py").write_text("from attnverify.compare.claims.snell.common import x\n")
    (claims / "common.py").write_text("x = 1\n")
    (claims / "second.py").write_text("def f():\n    from .first import Y\n")
    assert _claim_to_claim_imports(tmp_path, {"first", "second"}) == [
        "attnverify.compare.claims.snell.second imports attnverify.compare.claims.snell.first"]
