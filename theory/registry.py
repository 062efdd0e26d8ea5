"""Named theory quantities, as ``attnverify predict PAPER.QUANTITY --param value`` sees them.

Each entry maps a dotted name to a function returning a :class:`~theory.prediction.Prediction`
and the types of its parameters (read from the signature), so the CLI can validate input without
knowing any paper, and the upper bound of every size it takes (:data:`SIZE_BOUNDS`).
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


EXACT_FLOAT = 2**53
"""Above this a float64 no longer holds every integer (V and V + 1 round to one number)."""

SIZE_BOUNDS: dict[str, tuple[int, str]] = {
    "T": (10**6, "the score moments are summed over arrays of T positions: at T = 10^7 one "
                 "prediction takes 3 GB and 20 s"),
    "L": (10**7, "some predictions sum over the L positions (H_L): about a second per 10^7"),
    "t": (9000, "(3^t - 1) / 2 then has 4,294 digits, within the 4,300 Python prints as an "
                "exact JSON integer"),
    **{name: (EXACT_FLOAT, "above 2^53 a float64 no longer holds every integer, so neighbouring "
                           "sizes give the same prediction")
       for name in ("V", "d", "D", "n")},
}
"""Upper bound of every size ``predict`` takes, with why (a mistyped ``--T 1000000000`` would
otherwise fill the memory until the kernel kills the process)."""


def check_sizes(params: dict[str, Any]) -> None:
    """ValueError naming the first size above its bound (:data:`SIZE_BOUNDS`), with why."""
    for name, value in params.items():
        if name not in SIZE_BOUNDS or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        bound, why = SIZE_BOUNDS[name]
        if value > bound:
            shown = (f"{value:g}" if isinstance(value, float) else str(value)
                     if value.bit_length() < 128 else f"an integer of {value.bit_length()} bits")
            raise ValueError(f"{name} must be <= {bound:,}: {why}; got {shown}")


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
    check_sizes(params)
    return func(**params)
