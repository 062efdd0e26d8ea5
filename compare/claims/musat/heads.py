"""Head emergence in a retrieval run, as the Mușat claims read it
(``musat.heads_emerge_in_sequence`` decides on it; ``musat.sufficient_depth_learns`` draws it):
the structural roles a head is scored on, the threshold and hold that make it 'emerged', and
the emergence events of a run [R, §5: the scores, roles and thresholds are this project's
reconstruction]."""

from __future__ import annotations

from attnverify.compare.claims.musat.runs import crossing_step
from attnverify.empirics import RunResult
from attnverify.empirics.probes.retrieval_metrics import HeadMetric, heads_scored

HEAD_THRESHOLD = 0.5
"""A head has emerged when its best structural score is >= 0.5 for 3 evaluations in a row."""
HOLD = 3
"""The evaluations in a row a score must stay at the threshold."""
ROLES = ("partner", "partner_from_first", "partner_from_second", "same_symbol",
         "chain_next", "chain_prev")
"""Retrieval roles; attending to itself (the ``_self`` score) is not one. The directional
partner roles catch heads like those of layer 1 at quick, seed 0 (each first token reads
its statement's second token, each second token the next statement of the chain): they
score 1 as ``partner_from_first`` but about 0.5 as ``partner``, at the edge of the
threshold."""

Event = tuple[int, int, int, str]
"""(step, layer, head, role) of an emerged head."""


def emerged(result: RunResult) -> list[Event]:
    """(step, layer, head, role) of every emerged head, in order."""
    out = []
    for layer, head in heads_scored(result.metrics):
        best = None
        for role in ROLES:
            step = crossing_step(result, HeadMetric(layer, head, role).name, HEAD_THRESHOLD,
                                 HOLD)
            if step is not None and (best is None or step < best[0]):
                best = (step, role)
        if best is not None:
            out.append((best[0], layer, head, best[1]))
    return sorted(out)


def first_by_role(events: list[Event]) -> dict[tuple[int, str], int]:
    """First emergence step of each (layer, role): redundant copies of one role in one
    layer are one event (heads within a layer are interchangeable)."""
    first: dict[tuple[int, str], int] = {}
    for step, layer, _, role in events:
        first.setdefault((layer, role), step)
    return first
