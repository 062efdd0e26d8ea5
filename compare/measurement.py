"""What a claim measured and what it tolerates: the typed ``empirical`` and ``tolerance`` of
an :class:`~attnverify.compare.claim.Assessment`.

A :class:`Measurement` is the headline number a claim compares with its theory: the value, its
confidence interval where it has one, what was measured and where, and any further numbers the
claim reports beside it (never deciding). A :class:`Tolerance` is why the decision is as strict
as it is, with its thresholds by name, in order; ``compare.report.cells`` puts those names in words.

In ``report.json`` both are plain objects (docs/report.md): ``to_dict`` writes them and
``from_dict`` reads them back, from reports written by this or any earlier version.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_FIELDS = ("value", "ci", "confidence", "p_value", "quantity", "at")
"""The keys of a measurement in ``report.json`` that are fields here; others are extras."""


@dataclass(frozen=True)
class Measurement:
    """A claim's headline measurement (``report.json``'s ``empirical``).

    ``value``: the measured number (None when nothing could be measured; NaN where the
    statistic is undefined). ``ci``: its confidence interval (low, high) at ``confidence``,
    where it has one. ``p_value``: the p-value the measurement itself comes with, where the
    claim reports one beside it. ``quantity``: what is measured, in words; ``at``: where or
    under which configuration. ``extras``: further numbers the claim reports beside the value,
    by name, in order (rates of other groups, median steps, branch statistics); the report
    shows them in ``report.json`` only, and they never decide.
    """

    value: Any
    ci: Sequence[Any] | None = None  # stored as a tuple (low, high)
    confidence: float | None = None
    p_value: float | None = None
    quantity: str = ""
    at: str = ""
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.ci is not None:
            if len(self.ci) != 2:
                raise ValueError(f"ci must be a pair (low, high); got {self.ci!r}")
            object.__setattr__(self, "ci", tuple(self.ci))
        clash = set(_FIELDS) & set(self.extras)
        if clash:
            raise ValueError(f"extras may not repeat a field of Measurement: {sorted(clash)}")
        object.__setattr__(self, "extras", dict(self.extras))

    def to_dict(self) -> dict[str, Any]:
        """The ``empirical`` object of ``report.json``: ``value`` always, the other fields
        where set, the extras before ``at``."""
        out: dict[str, Any] = {"value": self.value}
        if self.ci is not None:
            out["ci"] = list(self.ci)
        if self.confidence is not None:
            out["confidence"] = self.confidence
        if self.p_value is not None:
            out["p_value"] = self.p_value
        if self.quantity:
            out["quantity"] = self.quantity
        out.update(self.extras)
        if self.at:
            out["at"] = self.at
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Measurement:
        """A measurement from ``report.json``'s ``empirical`` object (an empty one, of a
        claim that measured nothing, gives value None)."""
        ci = data.get("ci")
        return cls(value=data.get("value"), ci=None if ci is None else (ci[0], ci[1]),
                   confidence=data.get("confidence"), p_value=data.get("p_value"),
                   quantity=data.get("quantity") or "", at=data.get("at") or "",
                   extras={k: v for k, v in data.items() if k not in _FIELDS})


@dataclass(frozen=True)
class Tolerance:
    """How strict a claim's decision is and why (``report.json``'s ``tolerance``).

    ``why``: the reasoning, in words. ``thresholds``: each threshold of the rule by name, in
    the order the report shows them (``compare.report.cells.tolerance_items`` puts names and values
    in words: ``entropy_ratio_min`` -> "minimum entropy ratio", ">= 0.9" -> "at least 0.9").
    """

    why: str = ""
    thresholds: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if "why" in self.thresholds:
            raise ValueError("'why' is the tolerance's reasoning, not a threshold")
        object.__setattr__(self, "thresholds", dict(self.thresholds))

    def to_dict(self) -> dict[str, Any]:
        """The ``tolerance`` object of ``report.json``: the thresholds, then ``why``."""
        return {**self.thresholds, "why": self.why} if self.why else dict(self.thresholds)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tolerance:
        """A tolerance from ``report.json``'s ``tolerance`` object."""
        return cls(why=data.get("why") or "",
                   thresholds={k: v for k, v in data.items() if k != "why"})
