"""What the report's table cells and claim sections say: numbers, measured values with their
intervals, tolerances, the verdict at full, p-values and the protocol's fields (shared by
report.md, report.html and the CLI table)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def fmt(value: Any) -> str:
    """A number with 4 significant digits; anything else as text."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    if isinstance(value, int | float | np.number):
        x = float(value)
        if not math.isfinite(x):
            return str(x)
        return f"{x:.4g}"
    return str(value)


def measured_text(empirical: dict[str, Any]) -> str:
    text = fmt(empirical.get("value"))
    ci = empirical.get("ci")
    if ci is not None and all(c is not None and math.isfinite(c) for c in ci):
        text += f" [{fmt(ci[0])}, {fmt(ci[1])}]"
    if empirical.get("at"):
        text += f" ({empirical['at']})"
    return text


def tolerance_text(tolerance: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {fmt(v)}" for k, v in tolerance.items() if k != "why")


def full_text(record: dict[str, Any]) -> str:
    """The claim's verdict at full from stored runs ('—' without them), flagged when it
    differs from the report's own."""
    full = record.get("at_full")
    if not full:
        return "—"
    return f"{full['verdict']} ({full['reason']})" + (" ≠" if full["flip"] else "")


def p_text(record: dict[str, Any]) -> str:
    """The primary p-value toward H1 and, for a paper claim, its Holm-adjusted value."""
    if record.get("p_value") is None:
        return "—"
    text = f"{record['p_value']:.3g}"
    if record.get("adjusted_p"):
        text += f" ({record['adjusted_p']['holm']:.3g})"
    return text


def protocol_items(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The claim's protocol as (label, text) pairs for the report's claim section."""
    p = record["protocol"]
    rates = (f"alpha {fmt(p['alpha'])} for confirmed, beta {fmt(p['beta'])} for refuted"
             + (f" ({p['error_rates']})" if p["error_rates"] else ""))
    seeds = "; ".join(f"{b['use']} from seed {b['start']}" + (f" ({b['note']})" if b["note"]
                                                               else "")
                      for b in p["seeds"]) or "none (no training)"
    items = [("Protocol", f"`{record['protocol_hash']}`, frozen {p['frozen']}"),
             ("Endpoint", f"{p['endpoint']} (unit: {p['unit']}; read-out: {p['readout']})"),
             ("Hypotheses", f"H0: {p['h0']}; H1: {p['h1']}"),
             ("Test", p["test"]), ("Confirmed when", p["confirm"]),
             ("Refuted when", p["refute"]), ("Error rates", rates),
             ("Testable when", p["precondition"] or "no precondition is checked"),
             ("Secondary (never decide)", "; ".join(p["secondary"]) or "none"),
             ("Seed blocks", seeds)]
    if p["weaknesses"]:
        items.append(("Known weaknesses", "; ".join(p["weaknesses"])))
    return items
