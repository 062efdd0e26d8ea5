"""The add-a-claim tutorial (docs/adding-a-claim.md) stays true, and third-party claims come in
through the ``attnverify.claims`` entry point group: the tutorial's code, installed as
a plugin in a test package, is listed by ``attnverify claims`` and runs in ``verify`` and
``falsify``; a broken plugin is one warning line and is left out."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnverify.compare.claim import Assessment, Claim
from attnverify.compare.registry import register

DOC = Path(__file__).parents[1] / "docs" / "adding-a-claim.md"
CLAIM_ID = "example.untrained_loss_is_log_vocabulary"


def tutorial_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1, "the tutorial has one Python module"
    return blocks[0]


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    """A directory on PYTHONPATH holding the tutorial module and a distribution's metadata
    with its entry point (what ``pip install`` of the tutorial's package leaves behind), plus a
    broken plugin."""
    site = tmp_path_factory.mktemp("site")
    (site / "attnverify_example.py").write_text(tutorial_code())
    info = site / "attnverify_example-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: attnverify-example\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[attnverify.claims]\nexample = attnverify_example:UntrainedLossIsLogVocabulary\n"
        "broken = attnverify_missing_module:Nothing\n")
    return site


def cli(site: Path, *argv: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site), "ATTNVERIFY_CACHE": str(cache)}
    return subprocess.run([sys.executable, "-m", "attnverify.compare.cli", *argv], env=env,
                          capture_output=True, text=True, timeout=600)


def test_plugin_claim_is_listed_and_a_broken_plugin_is_one_warning(plugin_site, tmp_path):
    proc = cli(plugin_site, "claims", cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    assert f"{CLAIM_ID}  [example, derived]  Before training" in proc.stdout
    assert "snell.kappa_closed_form" in proc.stdout  # the built-in claims are all still there
    warnings = [line for line in proc.stderr.splitlines() if "plugin" in line]
    assert len(warnings) == 1 and "'broken'" in warnings[0] and "left out" in warnings[0]
    doc = json.loads(cli(plugin_site, "claims", "--json", cache=tmp_path / "c").stdout)
    entry = next(c for c in doc if c["id"] == CLAIM_ID)
    assert entry["trains"] is True and entry["space"]["V"]["values"] == [8, 16, 32, 64, 128]


def test_plugin_claim_runs_in_verify_and_falsify(plugin_site, tmp_path):
    cache = tmp_path / "c"
    proc = cli(plugin_site, "verify", "--paper", "example", "--profile", "smoke", "--workers",
               "1", "--out", str(tmp_path / "r"), cache=cache)
    assert proc.returncode == 0, proc.stderr
    assert re.search(rf"{CLAIM_ID}\s+confirmed", proc.stdout), proc.stdout
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    (record,) = report["claims"]
    assert record["id"] == CLAIM_ID and len(record["run_keys"]) == 3
    assert abs(record["empirical"]["value"] - record["theory"]) <= 0.1
    proc = cli(plugin_site, "falsify", CLAIM_ID, "--budget", "3", "--workers", "1", "--out",
               str(tmp_path / "f"), cache=cache)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "f" / f"falsify-{CLAIM_ID}.json").read_text())
    assert 1 <= len(data["evaluated"]) <= 3


@pytest.mark.parametrize(("claim_id", "paper"), [("Snell.x", "snell"), ("snell.x", "musat"),
                                                 ("nodot", "nodot"), ("a.b c", "a")])
def test_register_rejects_ids_that_do_not_read_paper_dot_name(claim_id, paper):
    cls = type("Bad", (Claim,), {"id": claim_id, "paper": paper, "statement": "",
                                 "defaults": {}, "assess": lambda self, p, r: Assessment})
    with pytest.raises(ValueError, match=r"must read PAPER\.NAME"):
        register(cls)


def test_register_requires_a_kind_and_every_built_in_claim_has_one():
    from attnverify.compare.claim import ClaimKind
    from attnverify.compare.registry import select

    cls = type("Kindless", (Claim,), {"id": "kindless.x", "paper": "kindless", "statement": "",
                                      "code_version": 1, "defaults": {},
                                      "assess": lambda self, p, r: Assessment})
    with pytest.raises(TypeError, match="must declare its kind, one of paper, demonstration, "
                                        "derived"):
        register(cls)
    assert all(isinstance(c.kind, ClaimKind) for c in select())
    assert {c.kind for c in select()} == set(ClaimKind)


def test_the_tutorial_claim_runs_through_the_contract(plugin_site, monkeypatch):
    """The tutorial's claim keeps every item it supplies and fails, by name, those it does not
    declare (nothing passes by default)."""
    import importlib

    from attnverify.compare.testing.contract import CHECKS, ContractError

    monkeypatch.syspath_prepend(str(plugin_site))
    module = importlib.import_module("attnverify_example")
    claim = module.UntrainedLossIsLogVocabulary()
    failed = set()
    for item, check in CHECKS.items():
        try:
            check(claim)
        except ContractError:
            failed.add(item)
    assert failed == {"reachable_verdicts"}
