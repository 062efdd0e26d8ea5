"""The report: report.json follows the schema of docs/report.md; md and html are complete."""

from __future__ import annotations

import base64
import json
import subprocess

import pytest

from attnverify.compare.claim import KIND_TITLES, ClaimKind
from attnverify.compare.cli import main

CLAIM_FIELDS = {"id": str, "paper": str, "kind": str, "statement": str, "verdict": str,
                "statistic": str, "tolerance": dict, "n_seeds": int, "run_keys": list,
                "elapsed_s": float, "trains_at_some_profile": bool, "figures": list,
                "empirical": dict}


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    # a falsification search first, so that the report has a boundary-of-validity section
    assert main(["falsify", "snell.toy_classifier_closed_form", "--budget", "12", "--cache",
                 str(root / "cache"), "--out", str(root / "falsify"), "--workers", "1",
                 "--quiet"]) == 0
    code = main(["verify", "--profile", "smoke", "--cache", str(root / "cache"), "--out",
                 str(root / "out"), "--workers", "1", "--quiet"])
    assert code == 0
    return root / "out"


def test_json_schema(report_dir):
    doc = json.loads((report_dir / "report.json").read_text())
    assert doc["profile"] == "smoke"
    assert {"attnverify", "torch", "numpy", "python"} <= set(doc["versions"])
    ids = [c["id"] for c in doc["claims"]]
    assert {"snell.kappa_closed_form", "snell.uniform_attention_at_init",
            "snell.subset_learned_every_seed"} <= set(ids)
    for claim in doc["claims"]:
        for name, kind in CLAIM_FIELDS.items():
            assert isinstance(claim[name], kind), (claim["id"], name)
        assert "theory" in claim and claim["verdict"] in {"confirmed", "refuted", "inconclusive"}
        assert "value" in claim["empirical"]
        for fig in claim["figures"]:
            assert (report_dir / fig).read_bytes().startswith(b"\x89PNG")
    networks = [c for c in doc["claims"] if "hidden" in c["params"]]  # sized like the paper's
    assert networks and all(c["scale_note"] and "below the paper's scale" in c["scale_note"]
                            for c in networks)


def test_markdown_and_html(report_dir):
    md = (report_dir / "report.md").read_text()
    html = (report_dir / "report.html").read_text()
    doc = json.loads((report_dir / "report.json").read_text())
    assert "| claim | paper | verdict |" in md
    for kind, title in KIND_TITLES.items():  # one table per kind, paper claims first
        assert f"## {title}" in md and f"<table id='verdicts-{kind}'>" in html
    assert md.index(KIND_TITLES[ClaimKind.PAPER]) < md.index(KIND_TITLES[ClaimKind.DERIVATION])
    for claim in doc["claims"]:
        assert claim["id"] in md and claim["id"] in html
        for fig in claim["figures"]:
            png = (report_dir / fig).read_bytes()
            assert base64.b64encode(png).decode() in html  # self-contained
    assert "src='figures/" not in html


def test_smoke_verdicts(report_dir):
    """Exact and Monte Carlo claims hold at any scale; three seeds cannot confirm 'every seed'."""
    verdicts = {c["id"]: c["verdict"] for c in
                json.loads((report_dir / "report.json").read_text())["claims"]}
    for claim_id in ("snell.kappa_closed_form", "snell.uniform_attention_at_init",
                     "snell.toy_classifier_closed_form", "snell.permutation_saddle"):
        assert verdicts[claim_id] == "confirmed", claim_id
    assert verdicts["snell.subset_learned_every_seed"] == "inconclusive"


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium to run this check)")
    return subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True, text=True, timeout=120)


def test_report_renders_in_a_browser(report_dir, tmp_path):
    """Headless Chromium (skipped when none is installed) builds every claim's section, every
    figure and the boundary section, and the verdict table is visible at the top of the page:
    the first screen shows the badge colours of the verdicts the report holds."""
    import numpy as np
    from PIL import Image

    from attnverify.compare.report.text import VERDICT_COLOURS

    page = (report_dir / "report.html").resolve().as_uri()
    dom = _chromium(tmp_path, "--dump-dom", page).stdout
    assert 'id="verdicts-paper"' in dom and 'id="boundaries"' in dom
    doc = json.loads((report_dir / "report.json").read_text())
    for claim in doc["claims"]:
        assert claim["id"] in dom
    assert dom.count("<img") == sum(len(c["figures"]) for c in doc["claims"])

    shot = tmp_path / "top.png"
    _chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1000",
              "--hide-scrollbars", page)
    pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3).astype(int)
    for verdict in {c["verdict"] for c in doc["claims"]}:
        rgb = np.array([int(VERDICT_COLOURS[verdict][i:i + 2], 16) for i in (1, 3, 5)])
        badge = (np.abs(pixels - rgb).max(axis=1) <= 8).sum()
        assert badge > 100, f"no visible '{verdict}' badge on the first screen"


def test_figures_regenerate_from_cache(report_dir, tmp_path, caplog):
    """With the runs cached, figures train nothing and say so, one line per figure."""
    from attnverify.empirics import RunStore
    from attnverify.paper_figures import regenerate

    store = RunStore(report_dir.parent / "cache")
    with caplog.at_level("DEBUG", logger="attnverify"):
        files = regenerate(tmp_path / "figs", "smoke", store, workers=1, progress=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "attnverify.figures"]
    assert lines and all("computed" not in line for line in lines)
    assert not [r for r in caplog.records if "not in cache" in r.getMessage()]
    assert {f.suffix for f in files} == {".png", ".pdf", ".txt"}
    assert "Run keys:" in next(f for f in files if f.suffix == ".txt").read_text()


def test_markdown_table_rows_keep_their_nine_columns(report_dir):
    """Cells holding "|" (e.g. "max |z|", "||W||_F") are escaped, so GitHub keeps the table."""
    import re

    rows = [line for line in (report_dir / "report.md").read_text().splitlines()
            if line.startswith("| [`")]
    assert rows
    for row in rows:
        assert len(re.split(r"(?<!\\)\|", row)) == 11, row  # 9 cells between 10 bars


def test_summary_counts_each_kind_apart(report_dir):
    doc = json.loads((report_dir / "report.json").read_text())
    assert list(doc["summary"]) == [str(kind) for kind in ClaimKind]
    for kind, counts in doc["summary"].items():
        claims = [c for c in doc["claims"] if c["kind"] == kind]
        assert sum(counts.values()) == len(claims) > 0
        assert all(counts[v] == sum(c["verdict"] == v for c in claims) for v in counts)
    md = (report_dir / "report.md").read_text()
    summary = next(line for line in md.splitlines() if line.startswith("- Summary: "))
    assert summary.startswith("- Summary: paper claims: ")
    assert "; derived predictions: " in summary and "; derivation checks: " in summary


def test_seeds_line_tells_a_claim_untrained_here_from_one_that_never_trains(report_dir):
    """A claim that trains only at full shows no seeds at smoke; the report must not call it
    theory checked against Monte Carlo."""
    md = (report_dir / "report.md").read_text()
    doc = {c["id"]: c for c in json.loads((report_dir / "report.json").read_text())["claims"]}

    def seeds_line(claim_id: str) -> str:
        section = md[md.index(f"## {claim_id}\n"):]
        return next(line for line in section.splitlines() if line.startswith("- Seeds:"))

    assert doc["musat.target_appears_at_bound"]["trains_at_some_profile"]  # at full only
    assert doc["musat.target_appears_at_bound"]["run_keys"] == []
    assert "nothing trains at this profile" in seeds_line("musat.target_appears_at_bound")
    assert not doc["bao.score_moments"]["trains_at_some_profile"]
    assert "the claim trains no model" in seeds_line("bao.score_moments")
    assert doc["snell.subset_learned_every_seed"]["trains_at_some_profile"]
    trained = doc["snell.subset_learned_every_seed"]["n_seeds"]
    assert trained > 0
    assert seeds_line("snell.subset_learned_every_seed").startswith(f"- Seeds: {trained};")


def test_a_demonstration_is_counted_as_shown_or_not():
    """Runs cannot refute an existence statement: its count says demonstrated or not, apart
    from the paper claims' confirmed / refuted / inconclusive."""
    from attnverify.compare.claim import ClaimKind
    from attnverify.compare.report.document import summary_text

    line = summary_text({ClaimKind.PAPER: {"confirmed": 2, "refuted": 1, "inconclusive": 0},
                         ClaimKind.DEMONSTRATION: {"confirmed": 1, "refuted": 0,
                                                   "inconclusive": 2}})
    assert line == ("paper claims: 2 confirmed, 1 refuted, 0 inconclusive; "
                    "demonstrations: 1 demonstrated, 2 not demonstrated")
