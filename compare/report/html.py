"""``report.html``: the verification report as one self-contained page for people.

The page reads on a phone as on a desktop: the verdict tables put the claim and its verdict
first and scroll inside their own box, secondary columns fold away on narrow screens, a table of
contents links every table and claim, and each section links back to the top. A few lines of
inline script filter the tables, the contents and the claim sections by verdict and by kind;
without script the page shows everything and the filters stay hidden. Figures are embedded as
base64 PNG, captioned with what they show.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from attnverify.compare.claim import KIND_NAMES, KIND_SUMMARY, KIND_TITLES, ClaimKind, Verdict
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.report.cells import (
    figure_html,
    fmt,
    full_text,
    measured_text,
    p_text,
    protocol_items,
    tolerance_items,
)
from attnverify.compare.report.text import (
    badge,
    by_kind,
    md_bold_to_html,
    seeds_text,
    verdict_text,
)

if TYPE_CHECKING:
    from attnverify.compare.report.document import Report

FigurePng = tuple[str, bytes, str]
"""A saved figure: its path in the report directory, its PNG bytes and its caption."""

STYLE = """
html { -webkit-text-size-adjust: 100%; }
body { font-family: system-ui, sans-serif; max-width: 70rem; margin: 1.5rem auto;
       padding: 0 1rem; color: #222; line-height: 1.45; }
.scroll { overflow-x: auto; -webkit-overflow-scrolling: touch; }
table { border-collapse: collapse; width: 100%; font-size: .85em; }
th, td { border-bottom: 1px solid #ddd; padding: .25rem .5rem; text-align: left;
         vertical-align: top; }
th { background: #f4f4f4; }
td.claim { overflow-wrap: anywhere; min-width: 9rem; }
td.measured { min-width: 14rem; }
.badge { color: white; padding: .1rem .5rem; border-radius: .6rem; font-size: .85em;
         white-space: nowrap; }
blockquote { border-left: 4px solid #0072B2; margin: .5rem 0; padding-left: .8rem; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; }
figcaption { font-size: .85em; color: #555; }
.scale { color: #8a5a00; font-style: italic; }
code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
       font-size: .9em; }
section { margin-top: 2.5rem; } h2 { overflow-wrap: anywhere; }
.why { background: #f3f8fc; border-left: 4px solid #56B4E9; padding: .4rem .8rem; }
.banner { background: #fff4e0; border-left: 4px solid #E69F00; padding: .5rem .8rem; }
.top { font-size: .85em; display: inline-block; margin-top: .5rem; }
nav ul { padding-left: 1.2rem; } nav li { overflow-wrap: anywhere; }
.filters { display: none; background: #fafafa; border: 1px solid #ddd; padding: .5rem .8rem;
           margin: 1rem 0; }
.js .filters { display: block; }
.filters label { margin-right: .8rem; white-space: nowrap; }
[hidden] { display: none !important; }
@media (max-width: 40rem) {
  body { margin: .5rem auto; padding: 0 .6rem; }
  .secondary { display: none; }
  table { font-size: .8em; }
}
"""

SCRIPT = """
document.documentElement.classList.add('js');
function applyFilters() {
  var off = {};
  document.querySelectorAll('.filters input').forEach(function (box) {
    if (!box.checked) { off[box.name + ':' + box.value] = true; }
  });
  document.querySelectorAll('[data-verdict]').forEach(function (el) {
    el.hidden = off['verdict:' + el.dataset.verdict] || off['kind:' + el.dataset.kind] || false;
  });
}
document.addEventListener('change', function (ev) {
  if (ev.target.closest && ev.target.closest('.filters')) { applyFilters(); }
});
"""


def render(report: Report, records: list[dict[str, Any]],
           figure_png: dict[str, list[FigurePng]]) -> str:
    """The page of ``report`` from its claim records (:meth:`Report.claim_records`) and the
    PNGs of its figures by claim id."""
    e = html.escape
    header = "".join(f"<li>{md_bold_to_html(e(line))}</li>"
                     for line in report._header_lines())
    groups = by_kind(records)
    tables = "".join(_verdict_table(report, kind, group) for kind, group in groups)
    sections = "".join(_claim_section(r, figure_png.get(r["id"], [])) for r in records)
    note = report.banner()
    banner = f"<p class='banner'><b>{e(note)}</b></p>\n" if note else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>attnverify report ({e(report.profile)})</title>
<style>{STYLE}</style>
<script>{SCRIPT}</script>
</head><body>
<h1 id="top">attnverify verification report</h1>
{banner}<ul>{header}</ul>
{_filters(records)}
{_contents(report, groups)}
{tables}
{report._boundary_html()}
{sections}
</body></html>
"""


def _data(record: dict[str, Any]) -> str:
    """The attributes the filters select on."""
    e = html.escape
    return f"data-verdict='{e(record['verdict'])}' data-kind='{e(record['kind'])}'"


def _filters(records: list[dict[str, Any]]) -> str:
    """Check boxes by verdict and by kind (shown only where script runs)."""
    kinds = [kind for kind in ClaimKind if any(r["kind"] == kind for r in records)]
    verdicts = "".join(f"<label><input type='checkbox' name='verdict' value='{v}' checked> "
                       f"{v}</label>" for v in map(str, Verdict))
    by_kind = "".join(f"<label><input type='checkbox' name='kind' value='{kind}' checked> "
                      f"{html.escape(KIND_SUMMARY[kind])}</label>" for kind in kinds)
    return (f"<form class='filters' aria-label='filters'><b>Show verdicts:</b> {verdicts}<br>"
            f"<b>Show kinds:</b> {by_kind}</form>")


def _contents(report: Report, groups: list[tuple[ClaimKind, list[dict[str, Any]]]]) -> str:
    """The table of contents: each kind's verdict table, then its claims' sections."""
    e = html.escape
    items = []
    for kind, group in groups:
        claims = "".join(f"<li {_data(r)}><a href='#{e(r['id'])}'>{e(r['id'])}</a> "
                         f"{badge(r['verdict'], verdict_text(r))}</li>" for r in group)
        items.append(f"<li><a href='#kind-{kind}'>{e(KIND_TITLES[kind].split(' (')[0])}"
                     f"</a> ({len(group)})<ul>{claims}</ul></li>")
    if report.boundaries:
        items.append("<li><a href='#boundaries'>Boundary of validity</a></li>")
    return f"<nav id='contents'><h2>Contents</h2><ul>{''.join(items)}</ul></nav>"


VERDICT_COLUMNS = (("claim", ""), ("verdict", ""), ("reason", ""), ("theory", ""),
                   ("measured [95% CI]", ""), ("paper", "secondary"),
                   ("p (Holm)", "secondary"), ("at full", "secondary"),
                   ("protocol", "secondary"))
"""The verdict tables' columns, claim and verdict first; "secondary" ones fold away on narrow
screens."""


def _verdict_table(report: Report, kind: ClaimKind, group: list[dict[str, Any]]) -> str:
    e = html.escape
    head = "".join(f"<th class='{cls}'>{e(name)}</th>" if cls else f"<th>{e(name)}</th>"
                   for name, cls in VERDICT_COLUMNS)
    rows = "".join(
        f"<tr {_data(r)}><td class='claim'><a href='#{e(r['id'])}'><code>{e(r['id'])}</code>"
        f"</a></td><td>{badge(r['verdict'], verdict_text(r))}</td><td>{e(r['reason'])}</td>"
        f"<td>{e(fmt(r['theory']))}</td>"
        f"<td class='measured'>{e(measured_text(Measurement.from_dict(r['empirical'])))}</td>"
        f"<td class='secondary'>{e(r['paper'])}</td><td class='secondary'>{e(p_text(r))}</td>"
        f"<td class='secondary'>{e(full_text(r))}</td>"
        f"<td class='secondary'><code>{e(r['protocol_hash'])}</code></td></tr>" for r in group)
    multiplicity = (f"<p><i>Multiplicity.</i> {e(report.multiplicity_text())}</p>"
                    if kind is ClaimKind.PAPER else "")
    return (f"<section id='kind-{kind}'><h2>{e(KIND_TITLES[kind])}</h2>"
            f"<div class='scroll'><table id='verdicts-{kind}'><thead><tr>{head}</tr></thead>"
            f"<tbody>{rows}</tbody></table></div>{multiplicity}{_top()}</section>")


def _top() -> str:
    return "<a class='top' href='#top'>↑ back to top</a>"


def _tolerance(tolerance: Tolerance) -> str:
    """Why the tolerance is what it is, prominently, then its thresholds in words."""
    e = html.escape
    items = tolerance_items(tolerance)
    thresholds = ("<ul>" + "".join(f"<li>{e(label)}: {e(value)}</li>" for label, value in items)
                  + "</ul>") if items else ""
    return f"<div class='why'><b>Tolerance.</b> {e(tolerance.why)}{thresholds}</div>"


def _claim_section(r: dict[str, Any], figures: list[FigurePng]) -> str:
    e = html.escape
    imgs = "".join(figure_html(caption, png) for _, png, caption in figures)
    scale = f"<p class='scale'>Scale: {e(r['scale_note'])}.</p>" if r["scale_note"] else ""
    full = (f"<p class='scale'>At full, from stored runs: {e(full_text(r))}. "
            f"{e(r['at_full']['explanation'])}</p>" if r["at_full"] else "")
    protocol = "".join(f"<li><b>{e(label)}:</b> {e(text)}</li>"
                       for label, text in protocol_items(r)[1:])
    keys = "".join(f"<li><code>{e(k)}</code></li>" for k in r["run_keys"])
    runs = (f"<details><summary>Run keys ({len(r['run_keys'])})</summary><ul>{keys}</ul>"
            f"</details>" if keys else "<p>Run keys: none</p>")
    tolerance = _tolerance(Tolerance.from_dict(r["tolerance"]))
    return (
        f"<section id='{e(r['id'])}' {_data(r)}><h2>{e(r['id'])} "
        f"{badge(r['verdict'], verdict_text(r))}</h2>"
        f"<blockquote>{e(r['statement'])}</blockquote>"
        f"<p><i>{e(KIND_NAMES[r['kind']])}.</i> <b>Reason: {e(r['reason'])}.</b> "
        f"{e(r['explanation'])}</p>{scale}{full}"
        f"<p><b>Statistic:</b> {e(r['statistic'])}</p>{tolerance}"
        f"<p><b>Seeds:</b> {e(seeds_text(r))}; <b>time:</b> {r['elapsed_s']:.1f} s</p>"
        f"<details><summary>Protocol <code>{e(r['protocol_hash'])}</code></summary>"
        f"<ul>{protocol}</ul></details>{runs}{imgs}{_top()}</section>")
