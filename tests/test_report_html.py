"""report.html for people (compare/report/html.py), tolerances in words (compare/report/cells.py)
and figure captions, on a small report built from constructed outcomes: nothing trains."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from attnverify.compare import select
from attnverify.compare.claim import Assessment, Claim, Verdict
from attnverify.compare.evaluation.verify import ClaimOutcome
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.report.cells import tolerance_label, tolerance_text, tolerance_value
from attnverify.compare.report.document import Report, figure_caption

LONG_KEYS = [f"{i:064x}" for i in range(3)]


def _figure(title: str | None):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.plot([0, 1, 2], [1, 0, 1])
    if title:
        fig.suptitle(title)
    return fig


def _drawing(claim: Claim, figures: dict) -> Claim:
    """``claim`` (its id, statement, kind and protocol) drawing ``figures`` as its own."""
    cls = type(claim)
    return type(cls.__name__, (cls,), {"figures": lambda self, *_: figures})()


def _outcome(claim_id: str, verdict: Verdict, tolerance: Tolerance,
             figures: dict | None = None, reason: Reason | None = None, theory: object = 0.5,
             empirical: Measurement | None = None) -> ClaimOutcome:
    claim = select(claim_id=claim_id)[0]
    assessment = Assessment(
        verdict=verdict, theory=theory,
        empirical=empirical or Measurement(0.51, ci=(0.45, 0.57)),
        statistic="difference of means", tolerance=tolerance,
        explanation="constructed for the test", n_seeds=3, reason=reason)
    return ClaimOutcome(claim=_drawing(claim, figures or {}), profile="smoke", params={},
                        assessment=assessment, run_keys=LONG_KEYS, elapsed_s=1.5, results=())


@pytest.fixture(scope="module")
def small_report(tmp_path_factory) -> Path:
    """A report of three claims, one per kind and verdict, with two figures."""
    outcomes = [
        _outcome("snell.ktiw_precedes_attention", Verdict.CONFIRMED,
                 Tolerance("entropy within 5% of the uniform maximum at initialization",
                           {"entropy_ratio_min": 0.95, "N_eff/T": ">= 0.9"}),
                 {"entropy": _figure("Attention entropy at initialization, per seed")}),
        _outcome("snell.stage1_bow_optimum", Verdict.REFUTED,
                 Tolerance("float64 round-off", {"max_abs_Q": 1e-10, "alpha": 0.025})),
        _outcome("snell.kappa_closed_form", Verdict.INCONCLUSIVE,
                 Tolerance("Monte Carlo standard error", {"kappa": "4 SE + 1e-12"}),
                 {"untitled": _figure(None)}, reason=Reason.BUDGET_REACHED),
    ]
    report = Report(profile="smoke", versions={"attnverify": "test"}, machine={"cores": 2},
                    outcomes=outcomes)
    out = tmp_path_factory.mktemp("html") / "report"
    report.write(out)
    return out


def test_tolerances_read_as_words():
    assert tolerance_label("entropy_ratio_min") == "minimum entropy ratio"
    assert tolerance_label("max_abs_Q") == "maximum |Q|"
    assert tolerance_value(">= 0.9") == "at least 0.9"
    assert tolerance_value("<= 1e-12") == "at most 1e-12"
    assert tolerance_value([1.8, 2.2]) == "1.8 to 2.2"
    text = tolerance_text(Tolerance("w", {"N_eff/T": ">= 0.9", "query_fraction_min": 0.95}))
    assert text == ("effective number of attended keys / T: at least 0.9; "
                    "minimum query fraction: 0.95")
    assert tolerance_text(Tolerance("only a reason")) == "none"


def test_page_is_navigable_and_filterable(small_report):
    page = (small_report / "report.html").read_text()
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    nav = re.search(r"<nav id='contents'>(.*?)</nav>", page).group(1)
    for claim_id in ("snell.ktiw_precedes_attention", "snell.stage1_bow_optimum",
                     "snell.kappa_closed_form"):
        assert f"<a href='#{claim_id}'>" in nav and f"<section id='{claim_id}'" in page
    for kind in ("paper", "derived", "derivation"):
        assert f"<a href='#kind-{kind}'>" in nav and f"<section id='kind-{kind}'>" in page
    # every table and claim section links back to the top; the top exists
    assert 'id="top"' in page
    assert page.count("href='#top'") == 3 + 3  # three kind tables, three claim sections
    # filters by verdict and by kind; rows and sections carry what they filter on
    for verdict in ("confirmed", "refuted", "inconclusive"):
        assert f"name='verdict' value='{verdict}'" in page
    for kind in ("paper", "derived", "derivation"):
        assert f"name='kind' value='{kind}'" in page
    assert "data-verdict='refuted' data-kind='derived'" in page
    # without script the filters are hidden and everything shows
    assert ".filters { display: none;" in page and ".js .filters { display: block; }" in page


def test_verdict_columns_come_first_and_tables_scroll(small_report):
    page = (small_report / "report.html").read_text()
    head = re.search(r"<table id='verdicts-paper'><thead><tr>(.*?)</tr>", page).group(1)
    columns = re.findall(r"<th[^>]*>(.*?)</th>", head)
    assert columns[:2] == ["claim", "verdict"]
    assert "<div class='scroll'><table id='verdicts-paper'>" in page
    assert ".scroll { overflow-x: auto;" in page and "@media (max-width: 40rem)" in page


def test_sections_say_tolerances_in_words_and_fold_run_keys(small_report):
    page = (small_report / "report.html").read_text()
    md = (small_report / "report.md").read_text()
    for text in (page, md):
        assert "= >=" not in text and "entropy_ratio_min" not in text and "max_abs_Q" not in text
        assert "minimum entropy ratio: 0.95" in text and "maximum |Q|: 1e-10" in text
    assert ("<div class='why'><b>Tolerance.</b> entropy within 5% of the uniform maximum at "
            "initialization") in page
    assert "<details><summary>Run keys (3)</summary>" in page
    assert "<details><summary>Run keys (3)</summary>" in md


def test_figure_captions_describe_the_figure(small_report):
    page = (small_report / "report.html").read_text()
    md = (small_report / "report.md").read_text()
    titled = "Attention entropy at initialization, per seed"
    assert f"<figcaption>{titled}</figcaption>" in page and f"*{titled}*" in md
    statement = select(claim_id="snell.kappa_closed_form")[0].statement
    assert figure_caption(_figure(None), statement) == statement  # no title: the statement
    assert "figures/" not in "".join(re.findall(r"<figcaption>(.*?)</figcaption>", page))


def test_axes_titles_caption_a_figure_without_suptitle():
    from matplotlib.figure import Figure

    fig = Figure()
    fig.add_subplot(1, 2, 1).set_title("loss")
    fig.add_subplot(1, 2, 2).set_title("attention")
    assert figure_caption(fig, "fallback") == "loss; attention"


def _browser() -> str | None:
    return next((path for name in ("chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)


@pytest.mark.parametrize(("width", "copy_to"), [(1280, "/tmp/report_desktop.png"),
                                                 (390, "/tmp/report_phone.png")])
def test_screenshots_at_desktop_and_phone_width(small_report, tmp_path, width, copy_to):
    """Headless Chromium renders the page at 1280 and 390 px (skipped without a browser)."""
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium or Chrome on this machine")
    shot = tmp_path / f"report_{width}.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         f"--screenshot={shot}", f"--window-size={width},2000",
         (small_report / "report.html").resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    data = shot.read_bytes()
    assert len(data) > 1000 and data.startswith(b"\x89PNG\r\n\x1a\n")
    from PIL import Image

    with Image.open(shot) as image:
        assert image.size[0] == width
    with contextlib.suppress(OSError):  # a copy for people to look at; not the check
        shutil.copyfile(shot, copy_to)


def test_terminal_table_keeps_its_columns_with_long_texts():
    from attnverify.compare.cli.verify import verdict_table

    long_measured = Measurement(0.123456, ci=(0.1, 0.2), at="step " + "9" * 80)
    report = Report(profile="smoke", versions={}, machine={}, outcomes=[
        _outcome("snell.kappa_closed_form", Verdict.CONFIRMED, Tolerance("w"),
                 theory=list(range(40)), empirical=long_measured),
        _outcome("bao.rank_collapse_at_uniform", Verdict.INCONCLUSIVE, Tolerance("w"),
                 reason=Reason.CONFLICTING),
        _outcome("snell.permutation_saddle", Verdict.REFUTED, Tolerance("w"))])
    rows = [line for line in verdict_table(report).splitlines() if line.startswith("  ")]
    firsts = [line for line in rows if not line.startswith("   ")]  # a claim's first line
    assert len(firsts) == 4  # the header and three claims: all of one kind
    verdict_at = firsts[0].index("verdict")
    for line, verdict in zip(firsts[1:], ("confirmed", "inconclusive", "refuted"), strict=True):
        assert line.index(verdict) == verdict_at, line
    assert max(len(line) for line in rows) <= 2 + 44 + 2 + 12 + 2 + 20 + 2 + 28 + 2 + 48
    # the long theory and measured texts wrap onto the row's next lines, nothing is cut
    table = verdict_table(report)
    assert "…" not in table and "38, 39]" in table and table.count("9") >= 80
    assert len(rows) > 4 and rows[2].strip() and not rows[2][:verdict_at].strip()
    measured_at = firsts[0].index("measured")
    assert all(line[measured_at - 2:measured_at] == "  " for line in rows
               if len(line) > measured_at)


def test_verify_json_prints_only_json(tmp_path, capsys):
    import json

    from attnverify.compare.cli import main

    code = main(["verify", "--claim", "snell.kappa_closed_form", "--claim",
                 "bao.rank_collapse_at_uniform", "--profile", "smoke", "--json", "--workers",
                 "1", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out)  # stdout is the JSON document and nothing else
    assert doc["profile"] == "smoke"
    assert doc["summary"] == {"derivation": {"confirmed": 2, "refuted": 0, "inconclusive": 0}}
    assert [(c["id"], c["verdict"], c["reason"]) for c in doc["claims"]] == [
        ("snell.kappa_closed_form", "confirmed", "decided"),
        ("bao.rank_collapse_at_uniform", "confirmed", "decided")]
    assert doc["report"] == str((tmp_path / "out" / "report.html").resolve())


def test_mathtext_titles_become_plain_captions():
    from matplotlib.figure import Figure

    from attnverify.compare.report.document import plain_title

    assert plain_title(r"$\kappa(V, L)$: theory vs data generator") == (
        "κ(V, L): theory vs data generator")
    assert plain_title("$\\mathrm{Var}(s)$ against\n$\\sigma^2$") == "Var(s) against σ^2"
    fig = Figure()
    fig.suptitle(r"entropy $\leq$ log S")
    assert figure_caption(fig, "fallback") == "entropy ≤ log S"


def test_filters_hide_what_is_unchecked_in_a_browser(small_report, tmp_path):
    """The inline script run by headless Chromium (skipped without a browser): unchecking
    "confirmed" and "derivation checks" hides their rows, contents entries and sections."""
    browser = _browser()
    if browser is None:
        pytest.skip("no Chromium or Chrome on this machine")
    page = (small_report / "report.html").read_text()
    uncheck = ("<script>document.querySelector(\"input[value=confirmed]\").checked = false;"
               "document.querySelector(\"input[value=derivation]\").checked = false;"
               "applyFilters();</script></body>")
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", uncheck))
    dom = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False).stdout
    tags = re.findall(r"<(?:tr|li|section) [^>]*data-verdict=[^>]*>", dom)
    assert len(tags) == 9  # three claims: a row, a contents entry and a section each
    for tag in tags:
        shown = 'data-verdict="refuted"' in tag  # the derived claim is the refuted one
        assert ("hidden" not in tag) == shown, tag
    assert 'class="js"' in dom  # the filters are shown where script runs


def test_terminal_table_colours_verdicts_only_where_asked(monkeypatch):
    """Colour wraps each verdict in its ANSI code and moves no column; ``use_colour`` follows
    the terminal, ``NO_COLOR`` and ``FORCE_COLOR``."""
    import io
    import re

    from attnverify.compare.cli.verify import use_colour, verdict_table

    report = Report(profile="smoke", versions={}, machine={}, outcomes=[
        _outcome("snell.kappa_closed_form", Verdict.CONFIRMED, Tolerance("w")),
        _outcome("snell.permutation_saddle", Verdict.REFUTED, Tolerance("w")),
        _outcome("bao.rank_collapse_at_uniform", Verdict.INCONCLUSIVE, Tolerance("w"),
                 reason=Reason.CONFLICTING)])
    plain, coloured = verdict_table(report), verdict_table(report, colour=True)
    assert "\033[" not in plain
    assert all(f"\033[{code}m{verdict}" in coloured for verdict, code in (
        ("confirmed", 32), ("refuted", 31), ("inconclusive", 33)))
    assert re.sub("\033\\[[0-9;]*m", "", coloured) == plain

    class Terminal(io.StringIO):
        def isatty(self):
            super().isatty()  # ValueError once closed, as a real stream's
            return True

    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    assert use_colour(Terminal()) and not use_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(Terminal())
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert use_colour(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(Terminal())  # NO_COLOR wins
    closed = Terminal()
    closed.close()
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.delenv("NO_COLOR")
    assert not use_colour(closed)


def test_a_smoke_report_says_it_checks_wiring_not_claims(small_report):
    page = (small_report / "report.html").read_text()
    md = (small_report / "report.md").read_text()
    for text in (page, md):
        assert "Smoke profile: tiny runs that check that every claim" in text
    quick = Report(profile="quick", versions={}, machine={}, outcomes=[])
    assert quick.banner() is None


def test_a_demonstration_is_worded_demonstrated_everywhere(tmp_path):
    """Its section, its table row and its badge say "demonstrated", as its summary count does:
    a demonstration is not a confirmation."""
    outcome = _outcome("snell.low_loss_without_aligned_attention", Verdict.CONFIRMED,
                       Tolerance("existential", {}))
    report = Report(profile="quick", versions={}, machine={}, outcomes=[outcome])
    out = tmp_path / "report"
    report.write(out)
    md, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    assert "**Verdict: demonstrated**" in md and "| **demonstrated** |" in md
    assert ">demonstrated</span>" in page and ">confirmed</span>" not in page
    assert "demonstrations: 1 demonstrated, 0 not demonstrated" in report.summary()
