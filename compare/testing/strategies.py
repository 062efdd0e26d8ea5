"""Hypothesis strategies for property tests: points of a claim's space, arguments of a theory
quantity.

:func:`strategy_for` draws the points a claim may be evaluated at (its
:attr:`~attnverify.compare.claim.Claim.space`, the same strategy ``attnverify falsify``
searches). :func:`theory_arguments` draws valid keyword arguments of a quantity of
:data:`attnverify.theory.registry.QUANTITIES` (the names ``attnverify predict`` takes): every
parameter name means the same in every quantity (``V`` a vocabulary size, ``L`` a sequence
length, ...), so one domain per name (:data:`ARGUMENTS`) covers them all, and the quantities
whose parameters constrain each other (``L <= V`` for a subset, ``L = V`` for a permutation; a
start from which ``p`` reaches 1) draw them jointly.

Sizes are drawn up to ``max_size`` (default :data:`DEFAULT_MAX_SIZE`, where one prediction
takes milliseconds), never above the registry's own bound (:data:`~attnverify.theory.registry.
SIZE_BOUNDS`); real-valued parameters are drawn from the ranges of :data:`ARGUMENTS` (the
papers' regimes, not every finite float the function accepts).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from hypothesis import strategies as st

from attnverify.compare.space import Dimension, space_strategy
from attnverify.theory.registry import QUANTITIES, SIZE_BOUNDS, parameters
from attnverify.theory.snell.cooccurrence import DISTRIBUTIONS

if TYPE_CHECKING:
    from attnverify.compare.claim import Claim

DEFAULT_MAX_SIZE = 1_000
"""The largest size :func:`theory_arguments` draws unless told otherwise."""
REAL_RESOLUTION = 2**20
"""The grid of the real-valued parameters (:class:`~attnverify.compare.space.Dimension`):
finer than a claim space's, as a prediction costs microseconds where a claim's point trains."""


def _real(doc: str, low: float, high: float) -> Dimension:
    """A real-valued parameter's range, on the :data:`REAL_RESOLUTION` grid."""
    return Dimension(doc, low=low, high=high, resolution=REAL_RESOLUTION)


ARGUMENTS: dict[str, Dimension] = {
    "V": Dimension("vocabulary size V (Snell)", low=2, high=SIZE_BOUNDS["V"][0]),
    "L": Dimension("sequence length L (Snell)", low=1, high=SIZE_BOUNDS["L"][0]),
    "distribution": Dimension("copying data (Snell §2.1)", values=DISTRIBUTIONS),
    "K": _real("KTIW strength K of B = K I (Snell §4.5b)", -100.0, 100.0),
    "p0": _real("initial attention weight p_0 of the toy classifier (Snell §4.2)", 0.0, 1.0),
    "beta0": _real("initial unigram weight beta_0 (Snell §4.2)", -10.0, 10.0),
    "beta1": _real("initial unigram weight beta_1 (Snell §4.2)", -10.0, 10.0),
    "d": Dimension("width d of the query-key matrix (Bao)", low=1, high=SIZE_BOUNDS["d"][0]),
    "T": Dimension("sequence length T, one query and its keys (Bao)", low=2,
                   high=SIZE_BOUNDS["T"][0]),
    "eig_mean": _real("mean m of the W_QK eigenspectrum (Bao)", -1.0, 1.0),
    "eig_std": _real("standard deviation s of the W_QK eigenspectrum (Bao)", 0.0, 2.0),
    "c": _real("attention scale c (Bao; None: 1/sqrt(d))", 0.01, 2.0),
    "sx2": _real("variance of the token entries (Bao)", 0.01, 4.0),
    "D": Dimension("chain length D, links of the queried chain (Mușat)", low=1,
                   high=SIZE_BOUNDS["D"][0]),
    "t": Dimension("number of layers t (Mușat)", low=0, high=SIZE_BOUNDS["t"][0]),
    "n": Dimension("input size n, tokens of the chain (Mușat)", low=1,
                   high=SIZE_BOUNDS["n"][0]),
    "separate_query": Dimension("whether the query is a token of its own (Mușat)",
                                values=(True, False)),
}
"""The domain of every parameter name of the theory quantities (a parameter whose default is
None may also be None)."""

REACH_MARGIN = 1e-6
"""How far ``p_0 + (beta_1 - beta_0)/sqrt 2`` (the growing mode of the toy's flow) must be
above 0 for ``toy_classifier_tau_star``: p then reaches 1 well within its search horizon."""


def strategy_for(claim: Claim | str) -> st.SearchStrategy[dict[str, Any]]:
    """The points of a claim's parameter space (a claim or its id), as dicts of one value per
    dimension, shrinking toward the front of every dimension. ValueError for a claim without a
    space."""
    if isinstance(claim, str):
        from attnverify.compare.registry import select

        claim = select(claim_id=claim)[0]
    if not claim.space:
        raise ValueError(f"claim {claim.id} declares no parameter space; claims that do: see "
                         f"'attnverify claims --json' (\"space\")")
    return space_strategy(claim.space)


def theory_arguments(name: str, *, max_size: int | None = DEFAULT_MAX_SIZE,
                     **fixed: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Valid keyword arguments of theory quantity ``name`` (``theory.predict(name, **args)``
    accepts every draw). ``fixed`` pins parameters (``theory_arguments("bao.rho", d=64)``);
    ``max_size`` caps the sizes (None: the registry's bounds). ValueError for an unknown name
    or parameter."""
    if name not in QUANTITIES:
        raise ValueError(f"unknown theory quantity {name!r}; accepted: {', '.join(QUANTITIES)}")
    signature = parameters(name)
    unknown = sorted(set(fixed) - set(signature))
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)} for {name}; accepted: "
                         f"{', '.join(signature)}")
    if max_size is not None and max_size < 1:
        raise ValueError(f"max_size must be an integer >= 1 or None; got {max_size!r}")
    missing = sorted(set(signature) - set(fixed) - set(ARGUMENTS))
    if missing:
        raise ValueError(f"no domain for parameter(s) {', '.join(missing)} of {name}: give "
                         f"them fixed values, or declare their domain in ARGUMENTS")
    dims = {p: _capped(ARGUMENTS[p], max_size) for p in signature if p in ARGUMENTS}
    if name in _JOINT:
        return _JOINT[name](dims, fixed)
    draws: dict[str, st.SearchStrategy[Any]] = {}
    for p, spec in signature.items():
        if p in fixed:
            draws[p] = st.just(fixed[p])
        else:
            base = dims[p].strategy()
            draws[p] = st.none() | base if spec.default is None else base
    return st.fixed_dictionaries(draws)


def _capped(dim: Dimension, max_size: int | None) -> Dimension:
    """An integer range capped at ``max_size`` (never below its own low end)."""
    if max_size is None or dim.values or dim.is_float:
        return dim
    return replace(dim, high=max(dim.low, min(dim.high, max_size)))  # type: ignore[type-var]


def _copying(distributions: tuple[str, ...]) -> Callable[..., st.SearchStrategy[dict[str, Any]]]:
    """(V, L, distribution) of a copying setup: L <= V for a subset, L = V for a permutation."""

    def build(dims: dict[str, Dimension], fixed: dict[str, Any]
              ) -> st.SearchStrategy[dict[str, Any]]:
        @st.composite
        def draw_setup(draw: st.DrawFn) -> dict[str, Any]:
            dist = fixed.get("distribution") or draw(st.sampled_from(distributions))
            v_dim, l_dim = dims["V"], dims["L"]
            if "V" in fixed:
                vocab = fixed["V"]
            else:
                # V's dimension is an integer range: its bounds are ints
                v_low, v_high = cast(int, v_dim.low), cast(int, v_dim.high)
                low = max(v_low, fixed.get("L", 1)) if dist != "iid" else v_low
                vocab = draw(st.integers(low, max(low, v_high)))
            if "L" in fixed:
                length = fixed["L"]
            elif dist == "permutation":
                length = vocab
            elif dist == "subset":
                length = draw(st.integers(l_dim.low, vocab))
            else:
                length = draw(l_dim.strategy())
            return {"V": vocab, "L": length, "distribution": dist}

        return draw_setup()

    return build


def _reaching_start(dims: dict[str, Dimension], fixed: dict[str, Any]
                    ) -> st.SearchStrategy[dict[str, Any]]:
    """(p0, beta0, beta1) from which p reaches 1: p0 >= 1, or a growing mode of the flow
    ``p_0 + (beta_1 - beta_0)/sqrt 2`` above :data:`REACH_MARGIN`."""
    draws = {p: st.just(fixed[p]) if p in fixed else dims[p].strategy()
             for p in ("p0", "beta0", "beta1")}
    return st.fixed_dictionaries(draws).filter(
        lambda a: a["p0"] >= 1 or a["p0"] + (a["beta1"] - a["beta0"]) / math.sqrt(2)
        > REACH_MARGIN)


_JOINT: dict[str, Callable[[dict[str, Dimension], dict[str, Any]],
                           st.SearchStrategy[dict[str, Any]]]] = {
    "snell.kappa": _copying(DISTRIBUTIONS),
    "snell.stage1_loss": _copying(("subset", "permutation")),
    "snell.toy_classifier_tau_star": _reaching_start,
}
"""Quantities whose parameters constrain each other, drawn jointly."""
