"""Names of the retrieval transformer's evaluation metrics (Mușat 2024, §§ on the retrieval
problem; the head scores are a reconstruction [R], :mod:`empirics.models.retrieval_transformer`).

One place writes and parses them: ``acc_depth{k}``, the accuracy of the statement tokens at
chain depth k, and ``head{l}.{h}_{role}``, head h of layer l's mean attention mass on a
structural target. Stored runs carry these exact names (run identity), so they never change;
claims read them through :func:`depth_metric`, :func:`metric_depths` and :class:`HeadMetric`
instead of slicing strings. Imports no torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

QUERY_ACCURACY = "query_acc"
"""Accuracy of the query token (the answer the problem asks for)."""
_DEPTH_PREFIX = "acc_depth"
_HEAD_NAME = re.compile(r"head(\d+)\.(\d+)_(\w+)")


def depth_metric(depth: int) -> str:
    """The metric name of the statement tokens' accuracy at chain depth ``depth``."""
    if depth < 0:
        raise ValueError(f"a chain depth is >= 0; got {depth}")
    return f"{_DEPTH_PREFIX}{depth}"


def metric_depths(names: Iterable[str]) -> list[int]:
    """The chain depths, ascending, that have a per-depth accuracy among ``names``."""
    prefix = len(_DEPTH_PREFIX)
    return sorted(int(name[prefix:]) for name in names
                  if name.startswith(_DEPTH_PREFIX) and name[prefix:].isdigit())


@dataclass(frozen=True, order=True)
class HeadMetric:
    """One head's score on one structural role (``partner``, ``chain_next``, ``self``, ...;
    :func:`~attnverify.empirics.models.retrieval_transformer.structural_masks`)."""

    layer: int
    head: int
    role: str

    @property
    def name(self) -> str:
        """The stored metric name, ``head{layer}.{head}_{role}``."""
        return f"head{self.layer}.{self.head}_{self.role}"

    @classmethod
    def parse(cls, name: str) -> HeadMetric | None:
        """The head score a metric name stands for; None for any other metric."""
        match = _HEAD_NAME.fullmatch(name)
        if match is None:
            return None
        layer, head, role = match.groups()
        return cls(int(layer), int(head), role)


def head_metrics(names: Iterable[str]) -> list[HeadMetric]:
    """The head scores among ``names``, sorted by layer, head and role."""
    return sorted(m for m in map(HeadMetric.parse, names) if m is not None)


def heads_scored(names: Iterable[str]) -> list[tuple[int, int]]:
    """The (layer, head) pairs, ascending, with at least one score among ``names``."""
    return sorted({(m.layer, m.head) for m in head_metrics(names)})
