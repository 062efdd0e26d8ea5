"""The information-flow game of Assumption 1 (Mușat 2024), as an exact simulator: the theorem
made executable (reconstruction [R]; docs/derivations.md#information-flow-game-and-refined-bound).

Positions hold sets of input positions whose information is in their residual stream,
``I_0(p) = {p}``. In a layer, p can read q when ``I(p)`` and ``I(q)`` share information: a common
position, two positions holding the same token, or two positionally related positions (the two
halves of one statement). Reading unions the sets (unlimited heads). The chain that matters is
the path ``rhs_1 - lhs_1 ~ rhs_2 - lhs_2 ~ ... ~ rhs_D - lhs_D`` (``-``: same statement, ``~``:
same symbol), optionally followed by a separate query token holding the last symbol; distractor
chains share nothing with it.

Two implementations: :func:`simulate` runs the game literally on sets (bitsets over every
position, distractors included), and :func:`simulate_intervals` uses the fact, proved by the
induction in docs/derivations.md and checked against :func:`simulate` in the tests, that every
set restricted to the path is an interval, in O(n log n) per layer (D up to 10^5 in seconds).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FlowResult:
    """Layers until some position's set covers the chain (``any_position``, the paper's bound)
    and until the answering end covers it (``answer_position``: the query token when there is
    one, else the chain's last token; the refined bound)."""

    D: int
    any_position: int
    answer_position: int


def chain_graph(D: int, distractors: int = 0, separate_query: bool = False) -> list[list[int]]:
    """Adjacency lists of the 'share information' relation between positions.

    Positions ``0..2D-1`` are the chain's path in order (even: the value side of a link, odd:
    the variable side), then ``distractors`` chains of D links each (same layout, own symbols),
    then the query token if ``separate_query`` (same symbol as the chain's last token).
    """
    n_chain = 2 * D
    n = n_chain * (1 + distractors) + int(separate_query)
    nbrs: list[list[int]] = [[] for _ in range(n)]
    for c in range(1 + distractors):
        base = c * n_chain
        for i in range(n_chain - 1):  # path edges: statement partner, then same symbol
            nbrs[base + i].append(base + i + 1)
            nbrs[base + i + 1].append(base + i)
    if separate_query:
        nbrs[n - 1].append(n_chain - 1)
        nbrs[n_chain - 1].append(n - 1)
    return nbrs


def simulate(D: int, distractors: int = 1, separate_query: bool = False,
             max_layers: int = 64) -> FlowResult:
    """Play the game on sets (Python ints as bitsets over all positions)."""
    if D < 1:
        raise ValueError(f"D must be an integer >= 1; got {D!r}")
    nbrs = chain_graph(D, distractors, separate_query)
    n = len(nbrs)
    nbr_mask = [sum(1 << q for q in qs) for qs in nbrs]
    chain = (1 << (2 * D)) - 1 | ((1 << (n - 1)) if separate_query else 0)
    answer = n - 1 if separate_query else 2 * D - 1
    sets = [1 << p for p in range(n)]
    any_done = answer_done = None
    for layer in range(max_layers + 1):
        if any_done is None and any(s & chain == chain for s in sets):
            any_done = layer
        if answer_done is None and sets[answer] & chain == chain:
            answer_done = layer
        if any_done is not None and answer_done is not None:
            return FlowResult(D, any_done, answer_done)
        # what p shares information with: its positions and their neighbours
        reach = []
        for s in sets:
            r, bits = s, s
            while bits:
                low = bits & -bits
                r |= nbr_mask[low.bit_length() - 1]
                bits ^= low
            reach.append(r)
        sets = [s | _union(sets, r) for s, r in zip(sets, reach, strict=True)]
    raise RuntimeError(f"the chain was not covered within {max_layers} layers")


def _union(sets: list[int], reach: int) -> int:
    out = 0
    for s in sets:
        if s & reach:
            out |= s
    return out


def simulate_intervals(D: int, separate_query: bool = False,
                       max_layers: int = 64) -> FlowResult:
    """The same game on the path alone, each set an interval ``[lo, hi]`` of path nodes.

    q is readable from p when its interval overlaps or abuts p's (``lo_q <= hi_p + 1`` and
    ``hi_q >= lo_p - 1``). Both ends are non-decreasing in the node index, so the readable q form
    one contiguous range found by binary search, and the union is ``[lo[first], hi[last]]``.
    """
    if D < 1:
        raise ValueError(f"D must be an integer >= 1; got {D!r}")
    n = 2 * D + int(separate_query)
    lo = np.arange(n)
    hi = np.arange(n)
    answer = n - 1
    any_done = answer_done = None
    for layer in range(max_layers + 1):
        covered = (lo == 0) & (hi == n - 1)
        if any_done is None and covered.any():
            any_done = layer
        if answer_done is None and covered[answer]:
            answer_done = layer
        if any_done is not None and answer_done is not None:
            return FlowResult(D, any_done, answer_done)
        if np.any(np.diff(lo) < 0) or np.any(np.diff(hi) < 0):
            raise AssertionError("interval ends lost their monotonicity")  # pragma: no cover
        first = np.searchsorted(hi, lo - 1, side="left")   # first q with hi_q >= lo_p - 1
        last = np.searchsorted(lo, hi + 1, side="right") - 1  # last q with lo_q <= hi_p + 1
        lo, hi = lo[first], hi[last]
    raise RuntimeError(f"the chain was not covered within {max_layers} layers")
