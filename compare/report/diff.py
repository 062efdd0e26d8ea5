"""What changed between two verification reports (``attnverify diff OLD NEW``).

Two ``report.json`` documents are matched claim by claim (by id). For each claim in both, the
diff says whether its verdict or reason moved, whether its rule did (the protocol hash), and
whether its evidence did: the run keys it read (a key names a run's numerics exactly,
docs/run-store.md), its primary p-value and its headline measured value. Claims in one report
only are listed apart.

Typical uses: a refactor that must leave every verdict as it was (the same runs give the same
numbers, so any difference is a finding); a report rebuilt from the archives in
``paper_figures/runs/`` against the one that decided; the same claims at ``quick`` and at
``full`` (``only_verdicts``: the runs differ by construction there).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attnverify.compare.claim import Verdict
from attnverify.compare.protocol import Reason
from attnverify.compare.report.view import Outcome, VerifyReport


@dataclass(frozen=True)
class Moved:
    """One field's value in the old report and in the new one."""

    old: Any
    new: Any

    def text(self) -> str:
        return f"{_show(self.old)} -> {_show(self.new)}"


@dataclass(frozen=True)
class Standing:
    """A claim's verdict with its reason."""

    verdict: Verdict
    reason: Reason

    def __str__(self) -> str:
        return f"{self.verdict} ({self.reason})"


@dataclass(frozen=True)
class ClaimChange:
    """How one claim differs between the two reports (a field is None where it is the same).

    ``verdict`` holds the old and new :class:`Standing` where the verdict or its reason
    differ."""

    id: str
    verdict: Moved | None = None
    protocol: Moved | None = None
    runs_removed: int = 0
    runs_added: int = 0
    p_value: Moved | None = None
    measured: Moved | None = None

    @property
    def verdict_moved(self) -> bool:
        """Whether the verdict or its reason differ."""
        return self.verdict is not None

    @property
    def differs(self) -> bool:
        """Whether anything compared differs."""
        return (self.verdict_moved or self.protocol is not None or self.runs_removed > 0
                or self.runs_added > 0 or self.p_value is not None or self.measured is not None)

    def text(self) -> str:
        """One line: the claim, then each difference."""
        parts = []
        if self.verdict is not None:
            parts.append(self.verdict.text())
        if self.protocol is not None:
            parts.append(f"rule (protocol) {self.protocol.text()}")
        if self.runs_removed or self.runs_added:
            parts.append(f"runs: {self.runs_removed} no longer read, {self.runs_added} new")
        if self.p_value is not None:
            parts.append(f"p {self.p_value.text()}")
        if self.measured is not None:
            parts.append(f"measured {self.measured.text()}")
        return f"{self.id}: " + "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id}
        for name in ("verdict", "protocol", "p_value", "measured"):
            moved = getattr(self, name)
            if moved is not None:
                data[name] = {"old": _plain(moved.old), "new": _plain(moved.new)}
        if self.runs_removed or self.runs_added:
            data["runs"] = {"removed": self.runs_removed, "added": self.runs_added}
        return data


@dataclass(frozen=True)
class ReportDiff:
    """The claim-by-claim difference of two reports, in the new report's order."""

    old_profile: str
    new_profile: str
    changes: tuple[ClaimChange, ...]
    """Claims in both reports that differ, verdict changes first."""
    unchanged: tuple[str, ...]
    only_old: tuple[str, ...]
    only_new: tuple[str, ...]
    code: Moved | None
    """The attnverify version and training-code hash (``versions``), where they differ."""

    @property
    def same(self) -> bool:
        """Whether the two reports hold the same claims with nothing that differs."""
        return not (self.changes or self.only_old or self.only_new)

    def text(self) -> str:
        """The diff for a terminal."""
        lines = [f"profile {self.old_profile} -> {self.new_profile}"
                 if self.old_profile != self.new_profile else f"profile {self.new_profile}"]
        if self.code is not None:
            lines.append(f"code {self.code.text()}")
        moved = [c for c in self.changes if c.verdict_moved]
        other = [c for c in self.changes if not c.verdict_moved]
        for title, group in (("verdict or reason changed", moved),
                             ("same verdict, other rule or evidence", other)):
            if group:
                lines.append(f"{title} ({len(group)}):")
                lines.extend(f"  {change.text()}" for change in group)
        for title, ids in (("only in the old report", self.only_old),
                           ("only in the new report", self.only_new)):
            if ids:
                lines.append(f"{title} ({len(ids)}): {', '.join(ids)}")
        lines.append(f"unchanged: {len(self.unchanged)} of "
                     f"{len(self.unchanged) + len(self.changes)} claims in both")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"profiles": {"old": self.old_profile, "new": self.new_profile},
                "code": None if self.code is None else {"old": self.code.old,
                                                        "new": self.code.new},
                "same": self.same, "changes": [c.to_dict() for c in self.changes],
                "unchanged": list(self.unchanged), "only_old": list(self.only_old),
                "only_new": list(self.only_new)}


def diff_reports(old: VerifyReport, new: VerifyReport, only_verdicts: bool = False,
                 rtol: float = 0.0) -> ReportDiff:
    """The difference of ``new`` from ``old``.

    ``only_verdicts``: compare verdicts and reasons only (e.g. quick against full, whose runs
    and numbers differ by construction). ``rtol``: the relative tolerance for p-values and
    measured values (0: exact; the same runs analysed by the same code give the same floats).
    """
    if not (rtol >= 0 and math.isfinite(rtol)):
        raise ValueError(f"rtol must be a finite number >= 0; got {rtol!r}")
    old_ids = {o.id: o for o in old}
    new_ids = {o.id: o for o in new}
    changes: list[ClaimChange] = []
    unchanged: list[str] = []
    for outcome in new:
        before = old_ids.get(outcome.id)
        if before is None:
            continue
        change = _claim_change(before, outcome, only_verdicts, rtol)
        if change.differs:
            changes.append(change)
        else:
            unchanged.append(outcome.id)
    changes.sort(key=lambda c: not c.verdict_moved)  # stable: report order within each group
    return ReportDiff(
        old_profile=old.profile, new_profile=new.profile, changes=tuple(changes),
        unchanged=tuple(unchanged),
        only_old=tuple(i for i in old_ids if i not in new_ids),
        only_new=tuple(i for i in new_ids if i not in old_ids),
        code=_code_moved(old.versions, new.versions))


def _claim_change(old: Outcome, new: Outcome, only_verdicts: bool, rtol: float) -> ClaimChange:
    before, after = Standing(old.verdict, old.reason), Standing(new.verdict, new.reason)
    verdict = Moved(before, after) if before != after else None
    if only_verdicts:
        return ClaimChange(new.id, verdict=verdict)
    old_hash, new_hash = old.record.get("protocol_hash"), new.record.get("protocol_hash")
    old_keys, new_keys = set(old.run_keys), set(new.run_keys)
    return ClaimChange(
        new.id, verdict=verdict,
        protocol=Moved(old_hash, new_hash) if old_hash != new_hash else None,
        runs_removed=len(old_keys - new_keys), runs_added=len(new_keys - old_keys),
        p_value=(None if _same(old.p_value, new.p_value, rtol)
                 else Moved(old.p_value, new.p_value)),
        measured=(None if _same(old.measurement.value, new.measurement.value, rtol)
                  else Moved(old.measurement.value, new.measurement.value)))


def _code_moved(old: dict[str, str], new: dict[str, str]) -> Moved | None:
    fields = ("attnverify", "empirics_source")
    pair = tuple(" ".join(f"{f} {v.get(f, '?')}" for f in fields) for v in (old, new))
    return Moved(*pair) if pair[0] != pair[1] else None


def _same(a: Any, b: Any, rtol: float) -> bool:
    """Equal, with NaN equal to NaN and numbers within ``rtol`` (recursing into lists)."""
    if _is_number(a) and _is_number(b):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= rtol * max(abs(a), abs(b))
    if isinstance(a, Sequence) and isinstance(b, Sequence) and not isinstance(a, str):
        return (not isinstance(b, str) and len(a) == len(b)
                and all(_same(x, y, rtol) for x, y in zip(a, b, strict=True)))
    return bool(a == b)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _plain(value: Any) -> Any:
    """A JSON-ready value (a standing as its verdict and reason)."""
    if isinstance(value, Standing):
        return {"verdict": str(value.verdict), "reason": str(value.reason)}
    return value


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "none"
    return str(value)
