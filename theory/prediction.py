"""The object every theory function returns.

A :class:`Prediction` carries the value, the equation it implements, where that equation comes
from (a paper and its section or theorem, or "derived" with the section of docs/derivations.md
that derives it), and the assumptions under which it holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Prediction:
    """A theory value with its provenance.

    ``derived`` is True when the paper does not state the formula and attnverify derives it
    (docs/derivations.md).
    """

    value: Any
    equation: str
    source: str
    assumptions: tuple[str, ...] = ()
    derived: bool = False
    params: dict[str, Any] = field(default_factory=dict)

    def __float__(self) -> float:
        return float(self.value)

    def to_dict(self) -> dict[str, Any]:
        value = self.value
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        return {
            "value": value,
            "equation": self.equation,
            "source": self.source,
            "derived": self.derived,
            "assumptions": list(self.assumptions),
            "params": dict(self.params),
        }
