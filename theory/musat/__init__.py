"""Theory of Mușat (2024, ICLR 2025), *Mechanism and Emergence of Stacked Attention Heads in
Multi-Layer Transformers* (arXiv:2411.12118). The paper's body was not available: the integer
forms, the refined variants, the information-flow game and the construction are reconstructions
[R] by attnverify, labelled as such and derived in docs/derivations.md:

- :mod:`~theory.musat.bounds`: ``min_layers(D)``, ``max_depth(t)`` and variants
  (docs/derivations.md#depth-bound-and-its-integer-forms)
- :mod:`~theory.musat.information_flow`: the game of Assumption 1 as an exact simulator
  (docs/derivations.md#information-flow-game-and-refined-bound)
- :mod:`~theory.musat.construction`: a transformer with written-down weights
  (docs/derivations.md#written-down-construction)
"""

from attnverify.theory.musat.bounds import (
    max_depth,
    max_depth_value,
    min_layers,
    min_layers_from_input_size,
    min_layers_refined,
    min_layers_refined_value,
    min_layers_value,
)
from attnverify.theory.musat.construction import RetrievalInstance, random_instance
from attnverify.theory.musat.information_flow import (
    FlowResult,
    chain_graph,
    simulate,
    simulate_intervals,
)

__all__ = [
    "FlowResult",
    "RetrievalInstance",
    "chain_graph",
    "max_depth",
    "max_depth_value",
    "min_layers",
    "min_layers_from_input_size",
    "min_layers_refined",
    "min_layers_refined_value",
    "min_layers_value",
    "random_instance",
    "simulate",
    "simulate_intervals",
]
