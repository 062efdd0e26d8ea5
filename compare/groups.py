"""Named groups of runs: a claim's ``specs`` may return ``{"subset": [...], "permutation":
[...]}`` instead of a flat list, and its ``assess`` and ``figures`` then read
``results["subset"]`` by name, never by position (a reordered or added group cannot make a
claim read the wrong runs).

The runs still train, and their keys are counted, in one flat order: the groups' in the order
of the mapping (:func:`flatten`). A staged claim's ``followup`` may name its groups too; the
names of all stages are distinct. The results a claim receives are a :class:`GroupedResults`:
a sequence in that order (so a claim that returns lists reads them by position as before)
that also answers the name of a group of any stage.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias, overload

if TYPE_CHECKING:  # annotations only: importing the contract loads no torch
    from attnverify.empirics import RunResult, RunSpec

RunGroups: TypeAlias = "Mapping[str, Sequence[RunSpec]]"
"""Runs by group name, in the order they train."""
Specs: TypeAlias = "Sequence[RunSpec] | RunGroups"
"""What ``Claim.specs`` returns: a flat list (plugins, older claims) or named groups."""


def flatten(specs: Specs) -> list[RunSpec]:
    """The runs of ``specs`` in training order: the list itself, or each group's runs in the
    order of the mapping."""
    if isinstance(specs, Mapping):
        return [spec for group in specs.values() for spec in group]
    return list(specs)


def layout(specs: Specs) -> dict[str, int] | None:
    """Group name -> number of runs, in order; None for a flat list."""
    if not isinstance(specs, Mapping):
        return None
    for name in specs:
        if not isinstance(name, str) or not name:
            raise TypeError(f"a group of runs is named by a non-empty string; got {name!r}")
    return {name: len(group) for name, group in specs.items()}


class GroupedResults(Sequence["RunResult"]):
    """Results in training order, read by position or by group name (module docstring):
    ``groups`` are the first stage's (contiguous from the first result); later stages' groups
    are added by :func:`staged_results`."""

    def __init__(self, results: Sequence[RunResult],
                 groups: Mapping[str, int] | None = None) -> None:
        self._results = tuple(results)
        self._groups: dict[str, slice] = {}
        self._add(groups or {}, 0)

    def _add(self, groups: Mapping[str, int], start: int) -> None:
        for name, count in groups.items():
            if name in self._groups:
                raise ValueError(f"two stages name a group of runs {name!r}; a group's name "
                                 f"must be unique across the stages")
            self._groups[name] = slice(start, start + count)
            start += count
        if start > len(self._results):
            raise ValueError(f"{len(self._results)} results for groups of {start} runs")

    @overload
    def __getitem__(self, index: int) -> RunResult: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[RunResult]: ...
    @overload
    def __getitem__(self, index: str) -> list[RunResult]: ...

    def __getitem__(self, index: int | slice | str) -> RunResult | Sequence[RunResult]:
        if isinstance(index, str):
            if index not in self._groups:
                raise KeyError(f"no group of runs named {index!r}; the claim's groups: "
                               f"{', '.join(self._groups) or 'none (a flat list)'}")
            return list(self._results[self._groups[index]])
        return self._results[index]

    def __len__(self) -> int:
        return len(self._results)

    def __iter__(self) -> Iterator[RunResult]:
        return iter(self._results)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return item in self._groups
        return item in self._results

    def groups(self) -> list[str]:
        """The group names, in training order."""
        return list(self._groups)

    def span(self, name: str) -> tuple[int, int]:
        """Where group ``name`` lies: (start, stop) positions of its results."""
        where = self._groups[name]
        return where.start, where.stop


def grouped(specs: Specs, results: Sequence[RunResult]) -> GroupedResults:
    """``results`` (in the order of ``flatten(specs)``, then any follow-ups) as the claim
    reads them, the follow-ups by position."""
    if isinstance(results, GroupedResults):
        return results
    return GroupedResults(results, layout(specs))


def staged_results(stages: Sequence[Specs], results: Sequence[RunResult]) -> GroupedResults:
    """``results`` of ``stages`` (the first stage's specs, then each followup's, in training
    order) with the groups of every stage readable by name; a stage that returned a list is
    read by position."""
    out = GroupedResults(results)
    start = 0
    for stage in stages:
        out._add(layout(stage) or {}, start)
        start += len(flatten(stage))
    return out
