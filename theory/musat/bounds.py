"""The depth bound of the retrieval problem (docs/derivations.md#depth-bound-and-its-integer-forms).

Theorem 1 (as reported; Mușat 2024, Section 5): with t layers, the answer's embedding can reach the
residual stream that outputs it only if ``t >= log_3(2D)``, D the number of links of the queried
chain. Integer forms (reconstruction [R]): ``min_layers(D)`` is the smallest t with
``3^t >= 2D``, evaluated in integer arithmetic (no floating logarithm). The refined variants
[R, not the paper's statement] require the information to end at the query, at one end of the
chain: ``3^t >= 4D + 1`` with a separate query token, ``3^t >= 4D - 1`` when the query is the
last chain token.
"""

from __future__ import annotations

from attnverify.theory.prediction import Prediction

SOURCE = ("Mușat 2024 (arXiv:2411.12118), Theorem 1: t >= log_3(2D); integer form and D as "
          "chain links reconstructed [R] by attnverify: "
          "docs/derivations.md#depth-bound-and-its-integer-forms (§2.1, §2.3)")
ASSUMPTIONS = (
    "Assumption 1 of Mușat 2024: attention moves information only between positions that share "
    "token or positional information",
    "D = number of links of the queried chain; each link is a 2-token statement [R] "
    "(docs/derivations.md#depth-bound-and-its-integer-forms)",
)


def _check_positive(name: str, value: int, minimum: int = 1) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")


def _smallest_power(target: int) -> int:
    """Smallest t >= 0 with 3^t >= target (integers only)."""
    t, power = 0, 1
    while power < target:
        t, power = t + 1, power * 3
    return t


def min_layers_value(D: int) -> int:
    _check_positive("D", D)
    return _smallest_power(2 * D)


def max_depth_value(t: int) -> int:
    _check_positive("t", t, 0)
    return (3**t - 1) // 2


def min_layers_refined_value(D: int, separate_query: bool = True) -> int:
    _check_positive("D", D)
    return _smallest_power(4 * D + 1 if separate_query else 4 * D - 1)


def min_layers(D: int) -> Prediction:
    """Smallest number of layers t with ``3^t >= 2D`` (``attnverify predict musat.min_layers
    --D 13``): 1 for D = 1, 2 for D = 2-4, 3 for D = 5-13, ..."""
    return Prediction(value=min_layers_value(D), equation="min t with 3^t >= 2D",
                      source=SOURCE, assumptions=ASSUMPTIONS, params={"D": D})


def max_depth(t: int) -> Prediction:
    """Largest chain length t layers can resolve under the bound: ``(3^t - 1) // 2``."""
    return Prediction(value=max_depth_value(t), equation="max D with 3^t >= 2D = (3^t - 1)//2",
                      source=SOURCE, assumptions=ASSUMPTIONS, params={"t": t})


def min_layers_from_input_size(n: int) -> Prediction:
    """The bound in the input size when the input is the chain's 2D tokens: ``ceil(log_3 n)``
    for even n (``min_layers((n + 1) // 2)``)."""
    _check_positive("n", n)
    return Prediction(value=min_layers_value((n + 1) // 2),
                      equation="min t with 3^t >= 2 ceil(n/2) (= ceil(log_3 n) for even n)",
                      source=SOURCE, assumptions=ASSUMPTIONS, params={"n": n})


def min_layers_refined(D: int, separate_query: bool = True) -> Prediction:
    """The stricter variant where the answer must reach the query at one end of the chain
    (reconstruction [R], not the paper's statement): ``3^t >= 4D + 1`` (separate query token)
    or ``3^t >= 4D - 1`` (query = last chain token)."""
    if not isinstance(separate_query, bool):
        raise ValueError(f"separate_query must be true or false; got {separate_query!r}")
    return Prediction(
        value=min_layers_refined_value(D, separate_query),
        equation="min t with 3^t >= 4D + 1" if separate_query else "min t with 3^t >= 4D - 1",
        source=("derived by attnverify (refined variant [R], not the theorem of Mușat 2024, "
                "arXiv:2411.12118): docs/derivations.md#information-flow-game-and-refined-bound "
                "(§2.2)"),
        assumptions=ASSUMPTIONS, derived=True, params={"D": D, "separate_query": separate_query})
