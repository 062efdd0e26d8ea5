"""Parameter spaces of claims: where a claim can be evaluated, as hypothesis strategies.

A claim declares ``space``: search dimensions with their valid values, ordered from the cheapest
and simplest to the most expensive (hypothesis shrinks toward the front, so a counterexample
shrinks toward the smallest, cheapest configuration), and ``point_params`` maps a search point
to the claim's own parameters (the ones ``verify --param`` takes). ``verify`` evaluates the
profile defaults; the property-based tests sample the space; ``attnverify falsify`` searches it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # hypothesis loads when a strategy is built, not with the contract
    from hypothesis import strategies as st


@dataclass(frozen=True)
class Dimension:
    """One search dimension: a range ``[low, high]`` or an ordered list of ``values`` (cheapest
    first). ``doc`` says what it is, with the paper's symbol.

    A range of two integers is an integer range; a range with a float bound is a float range
    (``Dimension("eigen-std", low=0.0, high=2.0)``): any finite number from ``low`` to ``high``
    is a point of it (:meth:`contains`), and its strategy draws the ``resolution + 1`` evenly
    spaced points ``low + k (high - low) / resolution``, k = 0..resolution, shrinking toward
    ``low`` as an integer range does (k shrinks toward 0): a counterexample shrinks to the grid
    point nearest the boundary, where a plain float strategy would shrink to the simplest float
    past it (an integer, before any fraction)."""

    doc: str
    low: int | float | None = None
    high: int | float | None = None
    values: tuple[Any, ...] = ()
    resolution: int = 1024
    """How many equal intervals a float range is drawn on (unused by the other kinds)."""

    def __post_init__(self) -> None:
        ranged = self.low is not None and self.high is not None
        if ranged == bool(self.values):
            raise ValueError("a Dimension is either an integer range (low, high), a float range "
                             "(low, high with a float bound) or values")
        if not ranged:
            return
        for bound in (self.low, self.high):
            if not _is_number(bound) or not math.isfinite(bound):  # type: ignore[arg-type]
                raise ValueError(f"range bounds must be finite numbers; got {bound!r}")
        if self.low > self.high:  # type: ignore[operator]
            raise ValueError(f"empty range [{self.low}, {self.high}]")
        if not math.isfinite(float(self.high) - float(self.low)):  # type: ignore[arg-type]
            raise ValueError(f"range [{self.low}, {self.high}] is wider than a float can hold")
        if isinstance(self.resolution, bool) or not isinstance(self.resolution, int) or (
                self.resolution < 1):
            raise ValueError(f"resolution must be an integer >= 1; got {self.resolution!r}")

    @property
    def is_float(self) -> bool:
        """Whether this is a float range (a range with a float bound)."""
        return not self.values and (isinstance(self.low, float) or isinstance(self.high, float))

    def strategy(self) -> st.SearchStrategy[Any]:
        from hypothesis import strategies as st

        if self.values:
            return st.sampled_from(self.values)
        if self.is_float:
            low, high, n = float(self.low), float(self.high), self.resolution  # type: ignore[arg-type]
            # min() keeps low + (high - low) from rounding past high
            return st.integers(0, n).map(lambda k: min(low + (high - low) * (k / n), high))
        return st.integers(self.low, self.high)

    def describe(self) -> dict[str, Any]:
        if self.values:
            return {"doc": self.doc, "values": list(self.values)}
        if self.is_float:
            return {"doc": self.doc, "low": self.low, "high": self.high, "type": "float",
                    "resolution": self.resolution}
        return {"doc": self.doc, "low": self.low, "high": self.high}

    def bounds(self) -> tuple[Any, Any]:
        return (self.values[0], self.values[-1]) if self.values else (self.low, self.high)

    def contains(self, value: Any) -> bool:
        """Whether ``value`` is a point of this dimension (one of its values, an integer of its
        integer range, a finite number of its float range)."""
        if self.values:
            return any(value == v and isinstance(value, bool) == isinstance(v, bool)
                       for v in self.values)
        if self.is_float:
            ok = _is_number(value) and math.isfinite(value)
        else:
            ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        return ok and self.low <= value <= self.high  # type: ignore[operator]


def _is_number(value: Any) -> bool:
    """A real number (an integer or a float; booleans are not numbers here)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def space_strategy(space: dict[str, Dimension]) -> st.SearchStrategy[dict[str, Any]]:
    """Points of ``space`` as dicts (one value per dimension)."""
    from hypothesis import strategies as st

    return st.fixed_dictionaries({name: dim.strategy() for name, dim in space.items()})


def covered(space: dict[str, Dimension], points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per dimension, the smallest and largest value evaluated (by the dimension's order)."""
    out: dict[str, Any] = {}
    for name, dim in space.items():
        seen = [p[name] for p in points if name in p]
        if not seen:
            continue
        key: Callable[..., Any] = (
            (lambda v, d=dim: d.values.index(v)) if dim.values else (lambda v: v))
        out[name] = [min(seen, key=key), max(seen, key=key)]
    return out
