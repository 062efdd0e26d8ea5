"""Every theory prediction cites a paper or a section of docs/derivations.md that ships with the
repository: no source points to a file outside it, and every cited anchor exists."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest

from attnverify import theory

ROOT = Path(__file__).resolve().parents[1]
DERIVATIONS = ROOT / "docs" / "derivations.md"
OUTSIDE = ("shared/", "snell2021.md", "musat2024.md", "bao2024.md", "ARCHITECTURE.md")
ANCHOR = re.compile(r"docs/derivations\.md#([\w-]+)")

# small valid values for the parameters of the registered quantities (the others keep
# their defaults)
SAMPLE = {"V": 6, "L": 4, "distribution": "subset", "K": 1.5, "p0": 0.5, "beta0": 0.0,
          "beta1": 0.0, "d": 8, "T": 16, "eig_mean": 0.1, "eig_std": 0.05, "D": 3, "t": 2,
          "n": 6, "separate_query": True}


def github_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings: lowercase, punctuation dropped, spaces to hyphens,
    a -1, -2, ... suffix on repeats (fenced code blocks hold no headings)."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def registry_cases() -> dict[str, tuple[str, dict]]:
    """Case id -> (registered name, parameters): each quantity at the sample values, and at every
    other data distribution and query placement it accepts."""
    cases = {}
    for name in theory.QUANTITIES:
        params = {p: SAMPLE.get(p) for p, spec in theory.registry.parameters(name).items()
                  if p in SAMPLE or spec.default is inspect.Parameter.empty}
        cases[name] = (name, params)
        if "distribution" in params:
            cases[f"{name}[iid]"] = (name, params | {"distribution": "iid"})
            cases[f"{name}[permutation]"] = (name, params | {"distribution": "permutation",
                                                              "V": params["L"]})
        if "separate_query" in params:
            cases[f"{name}[last token]"] = (name, params | {"separate_query": False})
    return cases


CASES = registry_cases()
EXTRA = {  # array-valued predictions that are Python functions only
    "snell.cooccurrence": lambda: theory.snell.cooccurrence(6, 4),
    "snell.toy_classifier_trajectory": lambda: theory.snell.toy_classifier_trajectory([0, 0.5]),
    "snell.stage2_logit_velocity": lambda: theory.snell.stage2_logit_velocity(
        np.eye(6), np.array([0, 1, 2, 3]), 2),
}


def prediction(case: str) -> theory.Prediction | None:
    """The prediction of ``case``; None where the quantity rejects that distribution."""
    if case in EXTRA:
        return EXTRA[case]()
    name, params = CASES[case]
    missing = [p for p, value in params.items() if value is None]
    assert not missing, f"add a sample value for {missing} ({name}) to SAMPLE"
    try:
        return theory.predict(name, **params)
    except ValueError as err:
        assert "[" in case, err  # only a variant may be undefined (stage1_loss on iid data)
        return None


ALL = sorted([*CASES, *EXTRA])


@pytest.mark.parametrize("case", ALL)
def test_source_cites_no_file_outside_the_repository(case):
    p = prediction(case)
    if p is None:
        pytest.skip("not defined for this distribution")
    source = p.source
    assert not [word for word in OUTSIDE if word in source], source
    # any markdown file it names is the shipped derivations page
    assert set(re.findall(r"[\w./-]+\.md\b", source)) <= {"docs/derivations.md"}, source


@pytest.mark.parametrize("case", ALL)
def test_source_anchors_exist_in_the_derivations(case):
    p = prediction(case)
    if p is None:
        pytest.skip("not defined for this distribution")
    cited = ANCHOR.findall(p.source)
    assert cited, f"{case}: the source names no section of docs/derivations.md: {p.source}"
    missing = set(cited) - github_anchors(DERIVATIONS.read_text(encoding="utf-8"))
    assert not missing, f"{case}: no heading for #{', #'.join(sorted(missing))}"
    if p.derived:
        assert "derived" in p.source, p.source


def test_every_anchor_cited_under_theory_exists():
    """Docstrings and constants under theory/ cite only headings that exist."""
    anchors = github_anchors(DERIVATIONS.read_text(encoding="utf-8"))
    for path in sorted((ROOT / "theory").rglob("*.py")):
        for anchor in ANCHOR.findall(path.read_text(encoding="utf-8")):
            assert anchor in anchors, f"{path.relative_to(ROOT)}: #{anchor}"


def test_links_inside_the_derivations_resolve():
    text = DERIVATIONS.read_text(encoding="utf-8")
    anchors = github_anchors(text)
    links = re.findall(r"\]\(#([\w-]+)\)", text)
    assert links and set(links) <= anchors, set(links) - anchors


def test_theory_and_derivations_name_no_file_outside_the_repository():
    files = [*sorted((ROOT / "theory").rglob("*.py")), DERIVATIONS]
    for path in files:
        text = path.read_text(encoding="utf-8")
        found = [word for word in ("shared/papers", *OUTSIDE) if word in text]
        assert not found, f"{path.relative_to(ROOT)} mentions {found}"



def test_shipped_code_and_docs_name_no_specification_file():
    """Users cannot open the papers' specification files: code, examples and docs cite the
    papers by name and docs/derivations.md instead."""
    folders = ("compare", "empirics", "paper_figures", "examples", "docs")
    files = [ROOT / "README.md", *(path for folder in folders
                                   for path in sorted((ROOT / folder).rglob("*"))
                                   if path.suffix in {".py", ".md"})]
    assert len(files) > 100  # the folders are where this test expects them
    for path in files:
        text = path.read_text(encoding="utf-8")
        found = [word for word in ("shared/papers", *OUTSIDE) if word in text]
        assert not found, f"{path.relative_to(ROOT)} mentions {found}"

def test_anchor_rule():
    assert github_anchors("# A\n## Stage-1 bag-of-words optimum\n```\n# not a heading\n```\n"
                          "## ANTRP comparison\n## A\n") == {
        "a", "stage-1-bag-of-words-optimum", "antrp-comparison", "a-1"}
