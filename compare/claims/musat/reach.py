"""How deep in its chain a statement token's root can be known after a number of layers
(derived here from the interval game of docs/derivations.md#information-flow-game-and-refined-bound,
not stated in the paper): advancing one link per layer, or composing sub-chains as the
game allows. Read by the lens claims (:mod:`.lens`, :mod:`.composition`).

In the default statement order a statement (s_i, s_{i-1}) of depth i holds its symbol first and
the symbol it is bound to second; the second token of a depth-i statement is one link closer
to the root than the first."""

from __future__ import annotations


def one_link_reach(layer: int, second: bool) -> int:
    """The deepest depth one link per layer resolves after ``layer`` layers (derived)."""
    return layer - 1 if second else layer


def composed_reach(layer: int, second: bool) -> int:
    """The deepest depth the interval game resolves after ``layer`` layers (derived): what
    any mechanism can resolve at most."""
    return (3 ** layer - 1) // 4 if second else (3 ** layer + 1) // 4
