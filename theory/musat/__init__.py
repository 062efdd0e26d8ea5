"""Theory of Mușat (2024, ICLR 2025), *Mechanism and Emergence of Stacked Attention Heads in
Multi-Layer Transformers* (``shared/papers/musat2024.md``). The paper's body was not available:
the integer forms, the refined variants, the information-flow game and the construction are
reconstructions [R] of the spec, labelled as such.

- :mod:`~theory.musat.bounds`: ``min_layers(D)``, ``max_depth(t)`` and variants (§2.3)
- :mod:`~theory.musat.information_flow`: the game of Assumption 1 as an exact simulator (§2.2)
- :mod:`~theory.musat.construction`: a transformer with written-down weights (§2.4)
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
