"""What the report's table cells and claim sections say: numbers, measured values with their
intervals, tolerances, the verdict at full, p-values and the protocol's fields (shared by
report.md, report.html and the CLI table)."""

from __future__ import annotations

import base64
import html
import math
from typing import Any

import numpy as np

from attnverify.compare.measurement import Measurement, Tolerance


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


def measured_text(measurement: Measurement | None) -> str:
    """The measured value, its interval where both ends are finite, what it is (its quantity,
    with its unit) and where it was measured ("—" when nothing was)."""
    if measurement is None:
        return fmt(None)
    text = fmt(measurement.value)
    ci = measurement.ci
    if ci is not None and all(c is not None and math.isfinite(c) for c in ci):
        text += f" [{fmt(ci[0])}, {fmt(ci[1])}]"
    if measurement.quantity and measurement.value is not None:
        text += f" {measurement.quantity}"
    if measurement.at:
        text += f" ({measurement.at})"
    return text


TOLERANCE_LABELS = {
    "alpha": "significance level (alpha)",
    "alpha_per_test": "significance level per test (alpha)",
    "beta": "miss rate at the smallest effect (beta)",
    "delta": "smallest effect that matters",
    "p": "test",
    "p0": "success rate under H0",
    "p1": "success rate under H1",
    "kappa": "allowed deviation of kappa",
    "C_entries_max_abs_z": "largest |z| over the entries of C",
    "N_eff/T": "effective number of attended keys / T",
    "band_floor_log_L_factorial_over_L": "band floor log(L!)/L",
    "bow_model_tolerance": "bag-of-words model tolerance",
    "eval_every": "evaluated every (steps)",
    "intervals": "confidence intervals",
    "learned": "learned at accuracy",
    "learned_above": "learned above",
    "chance_below": "chance below",
    "near_chance": "near chance up to",
    "mismatches": "mismatches allowed",
    "plus": "allowed beyond the interval",
    "step_z": "|z| per step",
}
"""Readable labels of threshold names; other names are spelled out by
:func:`tolerance_label`."""

_BOUNDS = {"min": "minimum", "max": "maximum"}
_COMPARISONS = ((">=", "at least"), ("<=", "at most"), (">", "above"), ("<", "below"),
                ("==", "exactly"))


def tolerance_label(key: str) -> str:
    """A threshold's name in words: ``entropy_ratio_min`` -> "minimum entropy ratio",
    ``max_abs_Q`` -> "maximum |Q|" (a known key by :data:`TOLERANCE_LABELS`)."""
    if key in TOLERANCE_LABELS:
        return TOLERANCE_LABELS[key]
    words = key.split("_")
    bound = ""
    if len(words) > 1 and words[-1] in _BOUNDS:
        bound, words = _BOUNDS[words[-1]], words[:-1]
    elif len(words) > 1 and words[0] in _BOUNDS:
        bound, words = _BOUNDS[words[0]], words[1:]
    text = " ".join(words)
    for i in range(len(words) - 1):
        if words[i] == "abs":
            text = " ".join([*words[:i], f"|{words[i + 1]}|", *words[i + 2:]])
            break
    return f"{bound} {text}".strip()


def tolerance_value(value: Any) -> str:
    """A tolerance value in words: ">= 0.9" -> "at least 0.9", [a, b] -> "a to b"."""
    if isinstance(value, str):
        text = value.strip()
        for op, words in _COMPARISONS:
            if text.startswith(op):
                return f"{words} {text[len(op):].strip()}"
        return text
    if isinstance(value, list | tuple) and len(value) == 2:
        return f"{fmt(value[0])} to {fmt(value[1])}"
    return fmt(value)


def tolerance_items(tolerance: Tolerance) -> list[tuple[str, str]]:
    """The tolerance's thresholds as (label, value) pairs in words; ``why`` is left out (the
    report shows it on its own)."""
    return [(tolerance_label(k), tolerance_value(v)) for k, v in tolerance.thresholds.items()]


def tolerance_text(tolerance: Tolerance) -> str:
    """The tolerance's thresholds in one line ("minimum entropy ratio: 0.95; ...")."""
    return "; ".join(f"{label}: {value}" for label, value in tolerance_items(tolerance)) \
        or "none"


def full_text(record: dict[str, Any]) -> str:
    """The claim's verdict at full from stored runs ('—' without them), flagged when it
    differs from the report's own."""
    full = record.get("at_full")
    if not full:
        return "—"
    return f"{full['verdict']} ({full['reason']})" + (" ≠" if full["flip"] else "")


def p_text(record: dict[str, Any]) -> str:
    """The primary p-value toward H1 and, for a paper claim, its Holm-adjusted value; for a
    refutation, the p-value of the test that refuted, named so."""
    if record.get("verdict") == "refuted" and record.get("refuting_p") is not None:
        return f"{record['refuting_p']:.3g} (the refuting test)"
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


def figure_html(caption: str, png: bytes) -> str:
    """A figure embedded in HTML (a self-contained page or a notebook cell), with its caption
    as alt text and figcaption."""
    text = html.escape(caption)
    return (f"<figure><img alt='{text}' src='data:image/png;base64,"
            f"{base64.b64encode(png).decode()}'><figcaption>{text}</figcaption></figure>")
