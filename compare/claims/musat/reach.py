"""How deep in its chain a statement token's root can be known after a number of layers
(derived here from the interval game of docs/derivations.md#information-flow-game-and-refined-bound,
not stated in the paper): advancing one link per layer, pointer doubling, or composing
sub-chains as the game allows. Read by the lens claims (:mod:`.lens`, :mod:`.composition`).

In the default statement order a statement (s_i, s_{i-1}) of depth i holds its symbol first and
the symbol it is bound to second; the second token of a depth-i statement is one link closer
to the root than the first. On the chain's path of nodes, root first, the first token of depth
k sits at node 2k - 1 and the second token of depth k (in the statement of depth k + 1) at node
2k. A mechanism's reach after l layers is the farthest node whose position can know the root:

* one link per layer (each layer reads one more statement): 2l - 1;
* pointer doubling (each position reads the position just past the far end of what it knows
  and takes what that one knows: r -> 2r + 1): 2^l - 1;
* the interval game (each position joins the intervals on both sides of its own: r -> 3r + 1),
  what any mechanism reaches at most: (3^l - 1) / 2.
"""

from __future__ import annotations


def _depth(nodes: int, second: bool) -> int:
    """The deepest depth whose first (or second) token lies within ``nodes`` of the root."""
    return nodes // 2 if second else (nodes + 1) // 2


def one_link_reach(layer: int, second: bool) -> int:
    """The deepest depth one link per layer resolves after ``layer`` layers (derived)."""
    return _depth(2 * layer - 1, second)


def doubling_reach(layer: int, second: bool) -> int:
    """The deepest depth pointer doubling resolves after ``layer`` layers (derived)."""
    return _depth(2 ** layer - 1, second)


def composed_reach(layer: int, second: bool) -> int:
    """The deepest depth the interval game resolves after ``layer`` layers (derived): what
    any mechanism can resolve at most."""
    return _depth((3 ** layer - 1) // 2, second)
