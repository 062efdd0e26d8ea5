"""Parameter spaces of claims: where a claim can be evaluated, as hypothesis strategies.

A claim declares ``space``: search dimensions with their valid values, ordered from the cheapest
and simplest to the most expensive (hypothesis shrinks toward the front, so a counterexample
shrinks toward the smallest, cheapest configuration), and ``point_params`` maps a search point
to the claim's own parameters (the ones ``verify --param`` takes). ``verify`` evaluates the
profile defaults; the property-based tests sample the space; ``attnverify falsify`` searches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st


@dataclass(frozen=True)
class Dimension:
    """One search dimension: an integer range ``[low, high]`` or an ordered list of ``values``
    (cheapest first). ``doc`` says what it is, with the paper's symbol."""

    doc: str
    low: int | None = None
    high: int | None = None
    values: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        ranged = self.low is not None and self.high is not None
        if ranged == bool(self.values):
            raise ValueError("a Dimension is either an integer range (low, high) or values")
        if ranged and self.low > self.high:  # type: ignore[operator]
            raise ValueError(f"empty range [{self.low}, {self.high}]")

    def strategy(self) -> st.SearchStrategy[Any]:
        if self.values:
            return st.sampled_from(self.values)
        return st.integers(self.low, self.high)

    def describe(self) -> dict[str, Any]:
        if self.values:
            return {"doc": self.doc, "values": list(self.values)}
        return {"doc": self.doc, "low": self.low, "high": self.high}

    def bounds(self) -> tuple[Any, Any]:
        return (self.values[0], self.values[-1]) if self.values else (self.low, self.high)


def space_strategy(space: dict[str, Dimension]) -> st.SearchStrategy[dict[str, Any]]:
    """Points of ``space`` as dicts (one value per dimension)."""
    return st.fixed_dictionaries({name: dim.strategy() for name, dim in space.items()})


def covered(space: dict[str, Dimension], points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per dimension, the smallest and largest value evaluated (by the dimension's order)."""
    out: dict[str, Any] = {}
    for name, dim in space.items():
        seen = [p[name] for p in points if name in p]
        if not seen:
            continue
        key = (lambda v, d=dim: d.values.index(v)) if dim.values else (lambda v: v)
        out[name] = [min(seen, key=key), max(seen, key=key)]
    return out
