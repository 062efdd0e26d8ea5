"""The verification report as Python objects: what :func:`attnverify.verify` returns.

A :class:`VerifyReport` is read from the ``report.json`` document (docs/report.md;
:meth:`compare.report.document.Report.document`), so a report computed in this process and
one loaded from a report directory written by ``attnverify verify`` are the same object, and
``to_json`` gives that document back unchanged. A report computed here also holds the live
:class:`~compare.report.document.Report` it was made from: its claims' outcomes, which draw their
matplotlib figures (once, when first asked for), and what :meth:`VerifyReport.save` needs to
write ``report.{json,md,html}`` and ``figures/``.

Both :class:`Outcome` and :class:`VerifyReport` print in one line (``repr``) and render as a
table in a notebook (``_repr_html_``), with a claim's figures inline.
"""

from __future__ import annotations

import html
import io
import json
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnverify.compare.claim import ClaimKind, Verdict
from attnverify.compare.measurement import Measurement, Tolerance
from attnverify.compare.protocol import Reason
from attnverify.compare.report.cells import figure_html, fmt, measured_text, tolerance_text
from attnverify.compare.report.document import (
    FIGURE_DPI,
    Report,
    figure_caption,
    summary_text,
)
from attnverify.compare.report.text import badge, json_text

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from attnverify.compare.evaluation.verify import ClaimOutcome


@dataclass(frozen=True)
class Outcome:
    """One claim's result: a claim record of ``report.json`` as typed fields.

    ``measurement`` is the record's ``empirical`` entry as a
    :class:`~attnverify.compare.measurement.Measurement` (``value`` and, where it has one, a
    confidence interval ``ci`` with its ``confidence``), ``tolerance`` its ``tolerance`` entry
    as a :class:`~attnverify.compare.measurement.Tolerance`; ``figures`` holds the claim's
    matplotlib figures by name when it was computed in this process, drawn on first access
    (empty when read from JSON, where ``figure_files`` names the saved PNG files, relative to
    the report directory).
    """

    id: str
    paper: str
    kind: ClaimKind
    statement: str
    verdict: Verdict
    reason: Reason
    theory: Any
    measurement: Measurement
    statistic: str
    tolerance: Tolerance
    explanation: str
    p_value: float | None
    refuting_p: float | None
    """For a refutation, the p-value of the test that refuted (None otherwise, or in a report
    written before it was recorded)."""
    n_seeds: int
    run_keys: tuple[str, ...]
    params: dict[str, Any]
    elapsed_s: float
    scale_note: str | None
    figure_files: tuple[str, ...]
    record: dict[str, Any] = field(repr=False)
    """The whole claim record of ``report.json`` (protocol, details, adjusted p-values)."""
    live: ClaimOutcome | None = field(default=None, repr=False, compare=False)
    """The outcome computed in this process, which draws the figures (None when read from
    JSON)."""

    @classmethod
    def from_record(cls, record: dict[str, Any], live: ClaimOutcome | None = None) -> Outcome:
        return cls(
            id=record["id"], paper=record["paper"], kind=ClaimKind(record["kind"]),
            statement=record["statement"], verdict=Verdict(record["verdict"]),
            reason=Reason(record["reason"]), theory=record["theory"],
            measurement=Measurement.from_dict(record["empirical"]),
            statistic=record["statistic"], tolerance=Tolerance.from_dict(record["tolerance"]),
            explanation=record["explanation"],
            p_value=record.get("p_value"), refuting_p=record.get("refuting_p"),
            n_seeds=record["n_seeds"],
            run_keys=tuple(record["run_keys"]), params=record["params"],
            elapsed_s=record["elapsed_s"], scale_note=record.get("scale_note"),
            figure_files=tuple(record["figures"]), record=record, live=live)

    @property
    def figures(self) -> dict[str, Figure]:
        """The claim's figures by name, drawn on first access (none when read from JSON)."""
        return {} if self.live is None else self.live.figures()

    @property
    def confirmed(self) -> bool:
        return self.verdict is Verdict.CONFIRMED

    def __repr__(self) -> str:
        return (f"<Outcome {self.id}: {self.verdict} ({self.reason}); theory "
                f"{fmt(self.theory)}, measured {measured_text(self.measurement)}>")

    def _repr_html_(self) -> str:
        e = html.escape
        rows = [("kind", str(self.kind)), ("reason", str(self.reason)),
                ("theory", fmt(self.theory)), ("measured", measured_text(self.measurement)),
                ("statistic", self.statistic),
                ("tolerance", tolerance_text(self.tolerance)),
                ("seeds", str(self.n_seeds)), ("time", f"{self.elapsed_s:.1f} s")]
        if self.scale_note:
            rows.append(("scale", self.scale_note))
        table = "".join(f"<tr><th style='text-align:left'>{e(k)}</th><td style='text-align:"
                        f"left'>{e(v)}</td></tr>" for k, v in rows)
        captions = [figure_caption(fig, self.statement) for fig in self.figures.values()]
        images = "".join(figure_html(caption, _png(fig))
                         for caption, fig in zip(captions, self.figures.values(), strict=True))
        return (f"<div><h4><code>{e(self.id)}</code> {badge(str(self.verdict))}</h4>"
                f"<blockquote>{e(self.statement)}</blockquote><table>{table}</table>"
                f"<p>{e(self.explanation)}</p>{images}</div>")


def _png(fig: Figure) -> bytes:
    """A figure as PNG bytes, at the report's resolution."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=FIGURE_DPI)
    return buffer.getvalue()


@dataclass(frozen=True)
class VerifyReport:
    """A verification's outcomes in report order, with the profile, versions and machine.

    ``report["snell.kappa_closed_form"]`` is one outcome; iterating gives them all;
    ``verdicts`` maps claim id to verdict. ``to_json`` is ``report.json``'s text,
    ``save(dir)`` writes the report directory (``report.json``, ``report.md``, ``report.html``,
    ``figures/``) of a report computed in this process, ``frame()`` its runs as a DataFrame.
    """

    profile: str
    versions: dict[str, str]
    machine: dict[str, Any]
    outcomes: tuple[Outcome, ...]
    document: dict[str, Any] = field(repr=False)
    """The ``report.json`` document this report reads."""
    cache: Path | None = field(default=None, repr=False, compare=False)
    """The run store the report's runs are in, where known (:meth:`frame`)."""
    live: Report | None = field(default=None, repr=False, compare=False)
    """The report it was computed as, in this process (None when read from JSON)."""

    @classmethod
    def from_report(cls, report: Report, cache: Path | None = None) -> VerifyReport:
        """The view of a report computed in this process, its figures included."""
        doc = report.document()
        return cls._from_document(doc, {o.claim.id: o for o in report.outcomes}, cache, report)

    @classmethod
    def from_json(cls, text: str) -> VerifyReport:
        """A report from ``report.json``'s text (no figures: their files are named in each
        outcome's ``figure_files``)."""
        try:
            doc = json.loads(text)
        except RecursionError:
            raise ValueError("report.json is nested deeper than any report") from None
        return cls._from_document(checked_document(doc), {}, None, None)

    @classmethod
    def load(cls, path: str | Path) -> VerifyReport:
        """A report from a report directory (or its ``report.json``) written by
        ``attnverify verify`` or :meth:`save`."""
        path = Path(path)
        file = path / "report.json" if path.is_dir() else path
        return cls.from_json(_read_report(file))

    @classmethod
    def _from_document(cls, doc: dict[str, Any], outcomes: dict[str, ClaimOutcome],
                       cache: Path | None, live: Report | None) -> VerifyReport:
        return cls(profile=doc["profile"], versions=doc["versions"], machine=doc["machine"],
                   outcomes=tuple(Outcome.from_record(r, outcomes.get(r["id"]))
                                  for r in doc["claims"]),
                   document=doc, cache=cache, live=live)

    # -- access ------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Outcome]:
        return iter(self.outcomes)

    def __len__(self) -> int:
        return len(self.outcomes)

    def __getitem__(self, claim_id: str) -> Outcome:
        for outcome in self.outcomes:
            if outcome.id == claim_id:
                return outcome
        raise KeyError(f"no claim {claim_id!r} in this report; it holds: "
                       f"{', '.join(o.id for o in self.outcomes)}")

    @property
    def verdicts(self) -> dict[str, Verdict]:
        return {o.id: o.verdict for o in self.outcomes}

    def summary(self) -> str:
        """The report's summary line: verdict counts per kind, paper claims first."""
        return summary_text({ClaimKind(kind): counts
                             for kind, counts in self.document["summary"].items()})

    # -- output ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return self.document

    def to_json(self) -> str:
        """``report.json``'s text (strict JSON)."""
        return json_text(self.document)

    def save(self, out: str | Path) -> dict[str, Path]:
        """Write the report directory ``out`` (``report.json``, ``report.md``, ``report.html``
        and ``figures/``), replaced whole; returns the three report files by suffix.
        ValueError when ``out`` holds other files than a report's (nothing is written then)
        or when the report was read from JSON (it has no figures to write)."""
        if self.live is None:
            raise ValueError("a report read from JSON has no figures or claims to render "
                             "again; its report.json is the file it was read from (save "
                             "writes reports computed by attnverify.verify)")
        return self.live.write(Path(out))

    def frame(self, cache: str | Path | None = None) -> pd.DataFrame:
        """The report's runs as a tidy DataFrame (:func:`attnverify.compare.runs.tidy.frame`), each
        row labelled with the claim that read the run; ``cache`` defaults to the run store the
        report was computed with (for a report read from JSON: the default cache)."""
        from attnverify.compare.runs.tidy import frame_of

        labels: dict[str, list[tuple[str, str]]] = {}
        for outcome in self.outcomes:
            for key in outcome.run_keys:
                labels.setdefault(key, []).append((outcome.id, self.profile))
        return frame_of(cache if cache is not None else self.cache, labels)

    def __repr__(self) -> str:
        return f"<VerifyReport profile={self.profile!r}, {len(self)} claims: {self.summary()}>"

    def _repr_html_(self) -> str:
        e = html.escape
        rows = "".join(
            f"<tr><td style='text-align:left'><code>{e(o.id)}</code></td>"
            f"<td style='text-align:left'>{e(str(o.kind))}</td>"
            f"<td style='text-align:left'>{badge(str(o.verdict))}</td>"
            f"<td style='text-align:left'>{e(str(o.reason))}</td>"
            f"<td style='text-align:right'>{e(fmt(o.theory))}</td>"
            f"<td style='text-align:left'>{e(measured_text(o.measurement))}</td></tr>"
            for o in self.outcomes)
        head = "".join(f"<th style='text-align:left'>{h}</th>" for h in (
            "claim", "kind", "verdict", "reason", "theory", "measured [95% CI]"))
        return (f"<div><p><b>attnverify report</b>, profile <b>{e(self.profile)}</b>: "
                f"{e(self.summary())}</p><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{rows}</tbody></table></div>")


_TEXT_FIELDS = ("id", "paper", "kind", "statement", "verdict", "reason", "statistic",
                "explanation")
_OBJECT_FIELDS = ("empirical", "tolerance", "params")
_LIST_FIELDS = ("run_keys", "figures")


def checked_document(doc: Any) -> dict[str, Any]:
    """``doc`` where it has the shape of a ``report.json`` (the fields the report's readers
    use, with their types); ValueError naming the first field that does not, so a hand-edited
    or foreign file is refused in one line rather than failing deep inside ``diff``."""
    def need(ok: bool, what: str) -> None:
        if not ok:
            raise ValueError(f"report.json: {what}")

    need(isinstance(doc, dict), "the document is not a JSON object")
    need(isinstance(doc.get("profile"), str), "'profile' is not a string")
    for key in ("versions", "machine", "summary"):
        need(isinstance(doc.get(key), dict), f"'{key}' is not an object")
    need(all(isinstance(v, dict) for v in doc["summary"].values()),
         "'summary' holds a count that is not an object")
    claims = doc.get("claims")
    need(isinstance(claims, list), "'claims' is not a list")
    for i, record in enumerate(claims):
        need(isinstance(record, dict), f"claim {i} is not an object")
        name = record.get("id") if isinstance(record.get("id"), str) else f"claim {i}"
        for key in _TEXT_FIELDS:
            need(isinstance(record.get(key), str), f"{name}: '{key}' is not a string")
        for key in _OBJECT_FIELDS:
            need(isinstance(record.get(key), dict), f"{name}: '{key}' is not an object")
        for key in _LIST_FIELDS:
            need(isinstance(record.get(key), list)
                 and all(isinstance(item, str) for item in record[key]),
                 f"{name}: '{key}' is not a list of strings")
        need(isinstance(record.get("n_seeds"), int), f"{name}: 'n_seeds' is not an integer")
        need(isinstance(record.get("elapsed_s"), int | float),
             f"{name}: 'elapsed_s' is not a number")
    return doc


MAX_REPORT_BYTES = 64 * 2**20
"""The largest report.json read (a full report of every claim is well under 1 MB): an endless
or huge file is refused, not read into memory."""


def _read_report(file: Path) -> str:
    """``file``'s text, read only where it is a regular file of at most
    :data:`MAX_REPORT_BYTES` (a pipe or a device is refused before it is opened, so nothing
    waits on it); ValueError otherwise, FileNotFoundError where it is absent."""
    if not stat.S_ISREG(file.stat().st_mode):
        raise ValueError(f"{file} is not a regular file")
    with open(file, "rb") as handle:
        data = handle.read(MAX_REPORT_BYTES + 1)
    if len(data) > MAX_REPORT_BYTES:
        raise ValueError(f"{file} is larger than any report.json ({MAX_REPORT_BYTES} bytes)")
    return data.decode("utf-8")
