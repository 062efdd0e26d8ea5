"""Named theory quantities, as ``attnverify predict PAPER.QUANTITY --param value`` sees them.

Each entry maps a dotted name to a function returning a :class:`~theory.prediction.Prediction`
and the types of its parameters (read from the signature), so the CLI can validate input without
knowing any paper.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from attnverify.theory import bao, musat, snell
from attnverify.theory.prediction import Prediction

QUANTITIES: dict[str, Callable[..., Prediction]] = {
    f"snell.{name}": getattr(snell, name)
    for name in ("kappa", "kappa_peak", "stage1_loss", "stage1_exclusion_loss",
                 "stage1_accuracy_bound", "stage2_onset_rate", "toy_classifier_tau_star",
                 "toy_classifier_first_crossing", "permutation_saddle_loss")
} | {
    f"bao.{name}": getattr(bao, name)
    for name in ("rho", "score_moments", "regime", "annealed_entropy", "antrp_moments")
} | {
    f"musat.{name}": getattr(musat, name)
    for name in ("min_layers", "max_depth", "min_layers_from_input_size", "min_layers_refined")
}


def parameters(name: str) -> dict[str, inspect.Parameter]:
    """The parameters of quantity ``name`` (raises KeyError for an unknown name)."""
    return dict(inspect.signature(QUANTITIES[name]).parameters)


def predict(name: str, **params: Any) -> Prediction:
    """Evaluate quantity ``name``; raises KeyError (unknown name) or ValueError (bad params)."""
    func = QUANTITIES[name]
    expected = parameters(name)
    unknown = sorted(set(params) - set(expected))
    if unknown:
        raise ValueError(
            f"unknown parameter(s) {', '.join(unknown)} for {name}; "
            f"accepted: {', '.join(expected)}"
        )
    missing = [p for p, spec in expected.items() if spec.default is inspect.Parameter.empty
               and p not in params]
    if missing:
        raise ValueError(f"missing parameter(s) {', '.join(missing)} for {name}")
    return func(**params)
