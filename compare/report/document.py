"""The verification report: ``report.json`` (the contract of docs/report.md), ``report.md``
(renders on GitHub) and a self-contained ``report.html`` (figures embedded as base64 PNG).

The claims' figures are drawn here, when the report is made (``ClaimOutcome.figures``), never
while a claim is assessed. The report is written into a temporary directory and swapped in whole
(:mod:`compare.report.directory`), so a report directory never holds a half-written file nor parts
of two reports.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnverify.compare.claim import (
    KIND_NAMES,
    KIND_SUMMARY,
    KIND_TITLES,
    ClaimKind,
    Verdict,
    verdict_word,
)
from attnverify.compare.evaluation.verify import ClaimOutcome
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.report.cells import (
    fmt,
    full_text,
    measured_text,
    p_text,
    protocol_items,
    tolerance_text,
)
from attnverify.compare.report.directory import FIGURES, replace_directory
from attnverify.compare.report.text import (
    by_kind,
    json_text,
    jsonable,
    md_cell,
    seeds_text,
    verdict_text,
)
from attnverify.compare.stats import benjamini_hochberg, holm

FAMILY_ALPHA = 0.025
"""The family-wise (Holm) and false-discovery (Benjamini-Hochberg) level of the multiplicity
adjustment over the paper claims' primary p-values."""

FIGURE_DPI = 110


def figure_path(claim_id: str, name: str) -> str:
    """Where a claim's figure ``name`` lies in a report directory (relative to it)."""
    return f"{FIGURES}/{claim_id}.{name}.png"


def summary_text(counts: dict[ClaimKind, dict[str, int]]) -> str:
    """The summary line from verdict counts per kind (:meth:`Report.counts`), in
    :class:`ClaimKind` order: paper claims first."""
    return "; ".join(f"{KIND_SUMMARY[kind]}: " + _counts_text(kind, counts[kind])
                     for kind in ClaimKind if kind in counts)


def _counts_text(kind: ClaimKind, counts: dict[str, int]) -> str:
    """"2 confirmed, 0 refuted, 1 inconclusive"; a demonstration is shown or it is not (runs
    cannot refute one): "1 demonstrated, 0 not demonstrated"."""
    if kind is ClaimKind.DEMONSTRATION:
        shown = counts.get(str(Verdict.CONFIRMED), 0)
        return (f"{shown} {verdict_word(kind, Verdict.CONFIRMED)}, "
                f"{sum(counts.values()) - shown} {verdict_word(kind, Verdict.INCONCLUSIVE)}")
    return ", ".join(f"{n} {v}" for v, n in counts.items())



BOUNDARY_INTRO = ("Where {cmd} searched each claim's parameter space for a point at which it is "
                  "refuted (the other parameters at the search's profile).")


@dataclass
class Report:
    profile: str
    versions: dict[str, str]
    machine: dict[str, Any]
    outcomes: list[ClaimOutcome]
    boundaries: list[dict[str, Any]] = field(default_factory=list)
    """Saved ``attnverify falsify`` results of the reported claims (``FalsifyResult.to_dict``),
    shown as the "boundary of validity" section."""
    reference: dict[str, ClaimOutcome] = field(default_factory=dict)
    """Claim id -> its outcome at ``full`` from stored runs
    (:mod:`compare.evaluation.cross_profile`), shown beside the verdict; a verdict that differs is
    flagged."""

    def kinds(self) -> list[ClaimKind]:
        """The kinds of the reported claims, in :class:`ClaimKind` order (paper claims first)."""
        present = {o.claim.kind for o in self.outcomes}
        return [kind for kind in ClaimKind if kind in present]

    def counts(self, kind: ClaimKind) -> dict[str, int]:
        """Verdict counts of the claims of ``kind`` (every verdict, zeros included)."""
        c = Counter(str(o.assessment.verdict) for o in self.outcomes if o.claim.kind == kind)
        return {str(v): c.get(str(v), 0) for v in Verdict}

    def summary(self) -> str:
        """One line: the paper claims' verdicts first, then the derived predictions' and the
        derivation checks' (these test this project's own work, not the papers)."""
        return summary_text({kind: self.counts(kind) for kind in self.kinds()})

    def adjusted(self) -> dict[str, dict[str, float]]:
        """Claim id -> {"holm", "bh"}: the adjusted primary p-values of the paper claims that
        have one (:attr:`Assessment.p_value`), adjusted over those claims."""
        with_p = [o for o in self.outcomes
                  if o.claim.kind is ClaimKind.PAPER and o.assessment.p_value is not None]
        p = [float(o.assessment.p_value) for o in with_p]  # type: ignore[arg-type]
        return {o.claim.id: {"holm": h, "bh": b}
                for o, h, b in zip(with_p, holm(p), benjamini_hochberg(p), strict=True)}

    def multiplicity_text(self) -> str:
        """What the adjustment says about the paper claims' confirmations."""
        adjusted = self.adjusted()
        paper = [o for o in self.outcomes if o.claim.kind is ClaimKind.PAPER]
        confirmed = [o for o in paper if o.assessment.verdict is Verdict.CONFIRMED]
        tested = [o for o in confirmed if o.claim.id in adjusted]
        holm_ok = sum(adjusted[o.claim.id]["holm"] < FAMILY_ALPHA for o in tested)
        bh_ok = sum(adjusted[o.claim.id]["bh"] < FAMILY_ALPHA for o in tested)
        return (f"The headline counts each claim's own verdict. Adjusted over the "
                f"{len(adjusted)} of {len(paper)} paper claims whose rule gave a primary "
                f"p-value here: {holm_ok} of their {len(tested)} confirmations stay below "
                f"{FAMILY_ALPHA} after Holm (family-wise, valid under any dependence), "
                f"{bh_ok} after Benjamini-Hochberg (false discovery rate, which assumes "
                f"independent or positively dependent tests; some claims share runs); "
                f"{len(confirmed) - len(tested)} confirmations come from rules without a "
                f"p-value (interval or deterministic rules) and are not adjusted.")

    def claim_records(self, figure_paths: dict[str, list[str]]) -> list[dict[str, Any]]:
        records = []
        adjusted = self.adjusted()
        for o in self.outcomes:
            a = o.assessment
            protocol = o.claim.protocol
            records.append(jsonable({
                "id": o.claim.id, "paper": o.claim.paper, "kind": str(o.claim.kind),
                "statement": o.claim.statement,
                "verdict": str(a.verdict), "reason": str(a.reason), "p_value": a.p_value,
                "refuting_p": a.refuting_p,
                "adjusted_p": adjusted.get(o.claim.id),
                "protocol_hash": protocol.digest(), "protocol": protocol.to_dict(),
                "theory": a.theory,
                "empirical": a.empirical.to_dict() if a.empirical is not None else {},
                "statistic": a.statistic, "tolerance": a.tolerance.to_dict(),
                "n_seeds": a.n_seeds,
                "run_keys": o.run_keys, "elapsed_s": round(o.elapsed_s, 3),
                "trains_at_some_profile": o.claim.trains_at_some_profile(),
                "figures": figure_paths.get(o.claim.id, []), "explanation": a.explanation,
                "scale_note": o.scale_note, "params": o.params, "details": a.details,
                "at_full": self._at_full(o),
            }))
        return records

    def _at_full(self, outcome: ClaimOutcome) -> dict[str, Any] | None:
        """The claim's verdict at full from stored runs, flagged when it differs from one this
        profile measured (a claim that ran nothing here is not flagged: nothing differs)."""
        ref = self.reference.get(outcome.claim.id)
        if ref is None or ref is outcome:
            return None
        a = ref.assessment
        return {"verdict": str(a.verdict), "reason": str(a.reason),
                "flip": bool(outcome.run_keys) and a.verdict is not outcome.assessment.verdict,
                "explanation": a.explanation, "protocol_hash": ref.claim.protocol.digest()}

    def figure_paths(self) -> dict[str, list[str]]:
        """Claim id -> its figures' paths relative to the report directory, as :meth:`write`
        saves them (the figures are drawn here, once: :meth:`ClaimOutcome.figures`)."""
        return {o.claim.id: [figure_path(o.claim.id, name) for name in o.figures()]
                for o in self.outcomes if o.figures()}

    def document(self) -> dict[str, Any]:
        """The content of ``report.json`` (its contract: docs/report.md): plain JSON types,
        non-finite floats as null, figures named by the paths :meth:`write` saves them under."""
        return jsonable({"profile": self.profile, "versions": self.versions,
                         "machine": self.machine,
                         "summary": {str(kind): self.counts(kind) for kind in self.kinds()},
                         "claims": self.claim_records(self.figure_paths()),
                         "boundaries": self.boundaries})

    # -- writing -----------------------------------------------------------------------------
    def write(self, out: Path) -> dict[str, Path]:
        """Write ``report.json``, ``report.md``, ``report.html`` and ``figures/`` into a new
        directory and swap it in place of ``out`` (:mod:`compare.report.directory`): ``out`` holds
        the old report or the new one, never parts of both. ValueError when ``out`` holds
        anything but a report; an OSError (a full disk) leaves the old report as it was."""
        target = replace_directory(out, self._write_files)
        return {kind: target / f"report.{kind}" for kind in ("json", "md", "html")}

    def _write_files(self, out: Path) -> None:
        (out / FIGURES).mkdir()
        figure_png: dict[str, list[tuple[str, bytes, str]]] = {}
        captions: dict[str, str] = {}
        for o in self.outcomes:
            for name, fig in o.figures().items():
                rel = figure_path(o.claim.id, name)
                fig.savefig(out / rel, dpi=FIGURE_DPI)
                captions[rel] = figure_caption(fig, o.claim.statement)
                figure_png.setdefault(o.claim.id, []).append(
                    (rel, (out / rel).read_bytes(), captions[rel]))
        doc = self.document()
        (out / "report.json").write_text(json_text(doc), encoding="utf-8")
        (out / "report.md").write_text(self.markdown(doc["claims"], captions),
                                       encoding="utf-8")
        (out / "report.html").write_text(self.html(doc["claims"], figure_png), encoding="utf-8")

    def banner(self) -> str | None:
        """What a reader must know before any verdict: at ``smoke``, that the report checks
        that the code runs, not the claims; None at the other profiles."""
        if self.profile != "smoke":
            return None
        return ("Smoke profile: tiny runs that check that every claim's code runs end to end. "
                "Its verdicts are not evidence about the claims; --profile quick (a laptop's "
                "scale) or full (the papers') decides them.")

    def _header_lines(self) -> list[str]:
        v = ", ".join(f"{k} {val}" for k, val in self.versions.items())
        m = self.machine
        gpu = "GPU available" if m.get("cuda_available") else "no GPU"
        return [f"Profile: **{self.profile}**", f"Versions: {v}",
                f"Machine: {m.get('processor')}, {m.get('cores')} cores, {gpu}",
                f"Summary: {self.summary()}"]

    def markdown(self, records: list[dict[str, Any]],
                 captions: dict[str, str] | None = None) -> str:
        """``report.md``'s text; ``captions`` maps a figure's path to what it shows (default:
        the claim's statement)."""
        captions = captions or {}
        lines = ["# attnverify verification report", ""]
        if banner := self.banner():
            lines += [f"> **{banner}**", ""]
        lines += [f"- {line}" for line in self._header_lines()] + [""]
        for kind, group in by_kind(records):
            lines += [f"## {KIND_TITLES[kind]}", "",
                      "| claim | paper | verdict | reason | p (Holm) | theory | measured [95% CI] "
                      "| at full | protocol |",
                      "|---|---|---|---|---|---|---|---|---|"]
            for r in group:
                lines.append(f"| [`{r['id']}`](#{r['id'].replace('.', '')}) | {r['paper']} | "
                             f"**{verdict_text(r)}** | {r['reason']} | {p_text(r)} | "
                             f"{md_cell(fmt(r['theory']))} | "
                             f"{md_cell(measured_text(Measurement.from_dict(r['empirical'])))} | "
                             f"{full_text(r)} | `{r['protocol_hash']}` |")
            lines.append("")
            if kind is ClaimKind.PAPER:
                lines += [f"*Multiplicity.* {self.multiplicity_text()}", ""]
        lines += self._boundary_markdown()
        for r in records:
            lines += ["", f"## {r['id']}", "", f"> {r['statement']}", "",
                      f"*{KIND_NAMES[r['kind']]}.* **Verdict: {verdict_text(r)}** "
                      f"({r['reason']}). {r['explanation']}", ""]
            if r["scale_note"]:
                lines += [f"*Scale: {r['scale_note']}.*", ""]
            if r["at_full"]:
                lines += [f"*At full, from stored runs: {full_text(r)}.* "
                          f"{r['at_full']['explanation']}", ""]
            lines += [f"- {label}: {text}" for label, text in protocol_items(r)]
            tolerance = Tolerance.from_dict(r["tolerance"])
            lines += [f"- Statistic: {r['statistic']}",
                      f"- **Tolerance.** {tolerance.why} ({tolerance_text(tolerance)})",
                      f"- Seeds: {seeds_text(r)}; time: {r['elapsed_s']:.1f} s", ""]
            if r["run_keys"]:
                lines += [f"<details><summary>Run keys ({len(r['run_keys'])})</summary>", "",
                          ", ".join(f"`{k}`" for k in r["run_keys"]), "", "</details>", ""]
            for p in r["figures"]:
                caption = md_cell(captions.get(p, r["statement"])).replace("]", "\\]")
                lines += [f"![{caption}]({p})", "", f"*{caption}*", ""]
        return "\n".join(lines) + "\n"

    def _boundary_markdown(self) -> list[str]:
        if not self.boundaries:
            return []
        lines = ["", "## Boundary of validity", "", BOUNDARY_INTRO.replace("{cmd}",
                                                                           "`attnverify falsify`"),
                 "",
                 "| claim | search | result | reproduce |", "|---|---|---|---|"]
        for b in self.boundaries:
            lines.append(f"| `{b['claim_id']}` | {_search_text(b)} | "
                         f"{md_cell(_boundary_result(b))} | "
                         + (f"`{b['reproduce']}`" if b.get("reproduce") else "—") + " |")
        return lines

    def _boundary_html(self) -> str:
        if not self.boundaries:
            return ""
        e = html.escape
        rows = "".join(
            f"<tr><td><code>{e(b['claim_id'])}</code></td><td>{e(_search_text(b))}</td>"
            f"<td>{e(_boundary_result(b))}</td>"
            f"<td>{'<code>' + e(b['reproduce']) + '</code>' if b.get('reproduce') else '—'}"
            f"</td></tr>" for b in self.boundaries)
        intro = BOUNDARY_INTRO.replace("{cmd}", "<code>attnverify falsify</code>")
        return ("<section id='boundaries'><h2>Boundary of validity</h2>"
                f"<p>{intro}</p><div class='scroll'><table><thead><tr><th>claim</th>"
                f"<th>search</th><th>result</th><th>reproduce</th></tr></thead><tbody>{rows}</tbody></table></div>"
                "<a class='top' href='#top'>↑ back to top</a></section>")

    def html(self, records: list[dict[str, Any]],
             figure_png: dict[str, list[tuple[str, bytes, str]]]) -> str:
        """``report.html``'s text (:mod:`compare.report.html`); ``figure_png`` holds each
        claim's figures as (path, PNG bytes, caption)."""
        from attnverify.compare.report.html import render

        return render(self, records, figure_png)


def figure_caption(fig: Any, fallback: str) -> str:
    """What a figure shows, for its caption: its suptitle, else its axes' titles (joined by
    "; "), else ``fallback`` (the claim's statement)."""
    suptitle = fig.get_suptitle().strip() if hasattr(fig, "get_suptitle") else ""
    if suptitle:
        return plain_title(suptitle)
    titles = [plain_title(ax.get_title()) for ax in getattr(fig, "axes", [])]
    titles = list(dict.fromkeys(t for t in titles if t))
    return "; ".join(titles) or fallback


_TEX_SYMBOLS = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε",
                "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
                "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "psi": "ψ",
                "omega": "ω", "Sigma": "Σ", "Delta": "Δ", "cdot": "·", "times": "×",
                "leq": "≤", "geq": "≥", "le": "≤", "ge": "≥", "approx": "≈", "infty": "∞"}


def plain_title(title: str) -> str:
    """A matplotlib title as plain text: mathtext ``$\\kappa(V, L)$`` -> "κ(V, L)", lines
    joined."""
    def symbol(match: re.Match[str]) -> str:
        return _TEX_SYMBOLS.get(match.group(1), match.group(1))

    text = re.sub(r"\\(?:mathrm|mathbf|mathit|text|operatorname)\{([^}]*)\}", r"\1", title)
    text = re.sub(r"\\([A-Za-z]+)\s?", symbol, text)
    text = text.replace("$", "").replace("{", "").replace("}", "").replace("\\", "")
    return " ".join(text.split())


def _boundary_result(boundary: dict[str, Any]) -> str:
    """The search's summary, flagged when it was saved by other code than the claim's current
    code (:func:`compare.evaluation.falsify.load_saved`): its verdicts may no longer hold."""
    if not boundary.get("stale"):
        return boundary["summary"]
    again = (f"attnverify falsify {boundary['claim_id']} --profile {boundary['profile']} "
             f"--seed {boundary['seed']} --budget {boundary['budget']}")
    return (f"STALE (searched by other code than this report's; run '{again}' again). "
            f"It said: {boundary['summary']}")


def _search_text(boundary: dict[str, Any]) -> str:
    text = (f"profile {boundary['profile']}, seed {boundary['seed']}, "
            f"{len(boundary['evaluated'])} of at most {boundary['budget']} points")
    if boundary.get("max_cost"):
        text += f", at most {boundary['max_cost']:g} s"
    return text
