"""Text shared by the report's renderings (``report.json``, ``report.md``, ``report.html``
and the notebook view): strict JSON values, the verdict badge, claim records grouped by kind and
the cells that several renderings print alike."""

from __future__ import annotations

import html
import json
import math
from typing import Any

import numpy as np

from attnverify.compare.claim import ClaimKind, Verdict, verdict_word

VERDICT_COLOURS = {Verdict.CONFIRMED: "#009E73", Verdict.REFUTED: "#D55E00",
                   Verdict.INCONCLUSIVE: "#E69F00"}


def jsonable(value: Any) -> Any:
    """Plain JSON types; non-finite floats become null (strict JSON has no inf/NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_text(doc: dict[str, Any]) -> str:
    """``report.json``'s text: strict JSON (no NaN or inf), indented."""
    return json.dumps(jsonable(doc), indent=2, allow_nan=False)


def by_kind(records: list[dict[str, Any]]) -> list[tuple[ClaimKind, list[dict[str, Any]]]]:
    """The claim records grouped by kind, in :class:`ClaimKind` order (paper claims first),
    each group in report order; kinds without a claim are left out."""
    groups = [(kind, [r for r in records if r["kind"] == kind]) for kind in ClaimKind]
    return [(kind, group) for kind, group in groups if group]


def md_cell(text: str) -> str:
    """Text for a markdown table cell: a "|" inside a cell would end it on GitHub."""
    return text.replace("|", "\\|")


def seeds_text(record: dict[str, Any]) -> str:
    if record["details"].get("untrained"):
        return "none (its runs would train no step: nothing was run)"
    if record["n_seeds"] == 0 and not record["run_keys"]:
        if record.get("trains_at_some_profile"):
            return "none (nothing trains at this profile: see the reason)"
        return "none (the claim trains no model)"
    return str(record["n_seeds"])


def badge(verdict: str, word: str | None = None) -> str:
    """The verdict as a coloured HTML label, styled inline so that it shows the same outside
    the report's style sheet (a notebook's output); ``word``: how the label words it (default:
    the verdict; a demonstration's "demonstrated")."""
    colour = VERDICT_COLOURS[Verdict(verdict)]
    return (f"<span class='badge' style='background:{colour};color:white;padding:.1rem .5rem;"
            f"border-radius:.6rem'>{html.escape(word or verdict)}</span>")


def md_bold_to_html(text: str) -> str:
    parts = text.split("**")
    return "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))


def verdict_text(record: dict[str, Any]) -> str:
    """A claim record's verdict as the report words it
    (:func:`~attnverify.compare.claim.verdict_word`: a demonstration's "demonstrated")."""
    return verdict_word(ClaimKind(record["kind"]), Verdict(record["verdict"]))
