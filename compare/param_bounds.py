"""Upper bounds on the sizes and counts a claim is evaluated at (``verify --param``, a falsify
point), derived from the claim itself so that no table goes stale.

Every integer of a parameter (also inside a list: the depths, the widths, the cases) must be at
most :data:`SIZE_FACTOR` times the largest value the claim's profiles or the top of its search
space give it: a mistyped ``--param steps=240000000`` or ``hidden=1000000`` would otherwise
train for days or ask for more memory than the machine has, and end in a MemoryError or the
kernel's OOM killer. Seeds are identifiers, not sizes, and are not bounded here (RunSpec
bounds them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

SIZE_FACTOR = 10
"""How far above the largest value of its profiles and space a parameter may go (the full
profile is the papers' own scale where the claim can afford it)."""


def _integers(value: Any) -> Iterator[int]:
    """The integers in ``value`` (itself, or inside lists and tuples; booleans are not)."""
    if isinstance(value, list | tuple):
        for item in value:
            yield from _integers(item)
    elif isinstance(value, int) and not isinstance(value, bool):
        yield value


def is_size(name: str) -> bool:
    """Whether parameter ``name`` is a size or a count (every integer parameter except seeds:
    ``seed``, ``base_seed``, ``point_seed``; ``seeds`` is a count)."""
    return not name.endswith("seed")


def size_bounds(profiles: Mapping[str, Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """Parameter name -> (bound, the largest value any of ``profiles`` gives it), for the
    integer sizes and counts (``profiles``: ``Claim.size_references``)."""
    largest: dict[str, int] = {}
    for params in profiles.values():
        for name, value in params.items():
            values = list(_integers(value))
            if values and is_size(name):
                largest[name] = max(largest.get(name, 0), *values)
    return {name: (SIZE_FACTOR * max(top, 1), top) for name, top in largest.items()}


def space_top(space: Mapping[str, Any]) -> dict[str, Any]:
    """The largest value of every dimension of a search space (:class:`compare.space.Dimension`;
    the last of a list of values that are not all numbers), as a point of that space."""
    top = {}
    for name, dim in space.items():
        high = dim.bounds()[1]
        numbers = [v for v in dim.values if isinstance(v, int | float) and not isinstance(v, bool)]
        top[name] = max(numbers) if dim.values and len(numbers) == len(dim.values) else high
    return top


def check_sizes(params: Mapping[str, Any], profiles: Mapping[str, Mapping[str, Any]]) -> None:
    """ValueError (one line naming the parameter, its bound and why) for the first integer of
    ``params`` above its bound (:func:`size_bounds`)."""
    bounds = size_bounds(profiles)
    for name in sorted(bounds.keys() & params.keys()):
        bound, top = bounds[name]
        too_large = [v for v in _integers(params[name]) if v > bound]
        if too_large:
            shown = (str(too_large[0]) if too_large[0].bit_length() < 128
                     else f"an integer of {too_large[0].bit_length()} bits")
            raise ValueError(
                f"{name} must be <= {bound:,}, {SIZE_FACTOR} times the largest the claim's "
                f"profiles and search space use ({top:,}): beyond that a run's time or memory "
                f"is far outside what the claim is sized for; got {shown}")
