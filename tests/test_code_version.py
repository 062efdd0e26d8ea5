"""The code version of a claim (compare.code_version): it follows the claim's project imports,
includes the evaluation machinery, and changes when any source in the closure changes."""

from __future__ import annotations

import importlib
import sys

from attnverify.compare import select
from attnverify.compare.code_version import EVALUATION, claim_code_version, module_closure


def test_the_closure_follows_project_imports_only():
    claim = select(claim_id="snell.toy_classifier_closed_form")[0]
    closure = module_closure(type(claim).__module__)
    assert {"compare.claims.snell.toys", "compare.claim", "theory.snell.toy_classifier",
            "empirics.toy_classifier", "empirics.train"} <= set(closure)
    assert not any(name.split(".")[0] in {"numpy", "torch", "sympy"} for name in closure)
    assert "compare.verify" in module_closure(EVALUATION)


def test_every_claim_has_a_version_and_claims_of_other_modules_differ():
    versions = {c.id: claim_code_version(c) for c in select()}
    assert all(len(v) == 12 for v in versions.values())
    assert versions["snell.toy_classifier_closed_form"] != versions["bao.locater_effect"]


def test_editing_a_source_in_the_closure_changes_the_version(tmp_path, monkeypatch):
    helper = tmp_path / "cv_probe_helper.py"
    helper.write_text("LIMIT = 7\n")
    (tmp_path / "cv_probe_claim.py").write_text(
        "from compare.claim import Claim\n"
        "import cv_probe_helper\n"
        "class Probe(Claim):\n"
        "    id = 'test.code_version'\n"
        "    def assess(self, params, results):\n"
        "        raise NotImplementedError\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        claim = importlib.import_module("cv_probe_claim").Probe()
        before = claim_code_version(claim)
        assert claim_code_version(claim) == before  # deterministic
        helper.write_text("LIMIT = 8\n")  # a module the claim's module imports
        # cv_probe_helper is not in a project package: it is not followed, the claim's own
        # module and compare.claim are
        assert claim_code_version(claim) == before
        (tmp_path / "cv_probe_claim.py").write_text(
            (tmp_path / "cv_probe_claim.py").read_text() + "# edited\n")
        assert claim_code_version(claim) != before
    finally:
        sys.modules.pop("cv_probe_claim", None)
        sys.modules.pop("cv_probe_helper", None)
