"""The warm-up toy classifier of Snell et al. (2021; the authors' blog post), solved with sympy
(docs/derivations.md#warm-up-toy-classifier).

Loss L = p (beta_0 - beta_1) (the blog's expansion; its label s_1 - s_0 is a typo); gradient flow
    d beta_0/d tau = -p,   d beta_1/d tau = p,   dp/d tau = beta_1 - beta_0.
The closed form is obtained by ``sympy.dsolve`` on this system (not typed in by hand) and agrees
with p(tau) = p_0 cosh(sqrt2 tau) + (D_0/sqrt2) sinh(sqrt2 tau), D = beta_1 - beta_0
(derived by attnverify; not stated in the paper). Predictions: from the uniform start
(beta_0 = beta_1, p_0 = 1/2) attention does not move first and p reaches 1 at
tau* = arccosh(2)/sqrt2 ~ 0.93123; from the adversarial start (beta_0 = 10, beta_1 = -10) p first
decreases and crosses 0 at tau = atanh(sqrt2 p_0 / |D_0|)/sqrt2 ~ 0.02501.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike
from scipy.optimize import brentq

from attnverify.theory.prediction import Prediction

_SOURCE = ("toy and gradient flow: Snell et al. 2021 (arXiv:2103.07601), the authors' blog "
           "post; closed form by sympy.dsolve, derived by attnverify: "
           "docs/derivations.md#warm-up-toy-classifier (§4.2)")
_ASSUMPTIONS = ("gradient flow (continuous time)", "attention weight p unconstrained")


def _check_numbers(**values: object) -> None:
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(
                value):
            raise ValueError(f"{name} must be a finite number; got {value!r}")


@cache
def toy_classifier_solution() -> dict[str, sp.Expr]:
    """Symbolic solution {beta0, beta1, p} in tau and the initial values beta_0, beta_1, p_0
    (keys parallel to the metric names of ``empirics.ToyClassifier``)."""
    tau, p0, b0, b1 = sp.symbols("tau p_0 beta_0 beta_1", real=True)
    beta0, beta1, p = sp.symbols("B0 B1 P", cls=sp.Function)
    system = [sp.Eq(beta0(tau).diff(tau), -p(tau)),
              sp.Eq(beta1(tau).diff(tau), p(tau)),
              sp.Eq(p(tau).diff(tau), beta1(tau) - beta0(tau))]
    solution = sp.dsolve(system, [beta0(tau), beta1(tau), p(tau)],
                         ics={beta0(0): b0, beta1(0): b1, p(0): p0})
    exprs = {eq.lhs.func.__name__: sp.simplify(eq.rhs) for eq in solution}
    return {"beta0": exprs["B0"], "beta1": exprs["B1"], "p": exprs["P"]}


@cache
def _numeric() -> dict[str, Callable[..., Any]]:
    tau, p0, b0, b1 = sp.symbols("tau p_0 beta_0 beta_1", real=True)
    return {name: sp.lambdify((tau, p0, b0, b1), expr, "numpy")
            for name, expr in toy_classifier_solution().items()}


def toy_classifier_trajectory(tau: ArrayLike, p0: float = 0.5, beta0: float = 0.0,
                              beta1: float = 0.0) -> Prediction:
    """(p, beta_0, beta_1) at times ``tau`` from the sympy closed form."""
    _check_numbers(p0=p0, beta0=beta0, beta1=beta1)
    t = np.asarray(tau, dtype=float)
    funcs = _numeric()
    value = {name: np.broadcast_to(np.asarray(f(t, p0, beta0, beta1), dtype=float), t.shape)
             for name, f in funcs.items()}
    return Prediction(value=value, equation="dsolve of d(beta_0, beta_1, p)/dtau = "
                      "(-p, p, beta_1 - beta_0)", source=_SOURCE, assumptions=_ASSUMPTIONS,
                      derived=True, params={"p0": p0, "beta0": beta0, "beta1": beta1})


def toy_classifier_tau_star(p0: float = 0.5, beta0: float = 0.0, beta1: float = 0.0) -> Prediction:
    """First time p reaches 1 (attention fully on the informative token)."""
    _check_numbers(p0=p0, beta0=beta0, beta1=beta1)
    if p0 >= 1:
        value = 0.0
    else:
        p = _numeric()["p"]
        hi = 1.0
        while p(hi, p0, beta0, beta1) < 1:
            hi *= 2
            if hi > 64:
                raise ValueError("p never reaches 1 from this start")
        value = brentq(lambda t: p(t, p0, beta0, beta1) - 1, 0.0, hi, xtol=1e-14)
    return Prediction(value=float(value), equation="p(tau*) = 1; uniform start: "
                      "tau* = arccosh(2)/sqrt(2)", source=_SOURCE, assumptions=_ASSUMPTIONS,
                      derived=True, params={"p0": p0, "beta0": beta0, "beta1": beta1})


def toy_classifier_first_crossing(p0: float = 0.5, beta0: float = 10.0,
                                  beta1: float = -10.0) -> Prediction:
    """First time p crosses 0 (attention moves to the wrong token first); inf if never.

    p(tau) = 0  <=>  tanh(sqrt2 tau) = -sqrt2 p_0 / D_0, D_0 = beta_1 - beta_0.
    """
    _check_numbers(p0=p0, beta0=beta0, beta1=beta1)
    d0 = beta1 - beta0
    ratio = -math.sqrt(2) * p0 / d0 if d0 != 0 else math.inf
    value = math.atanh(ratio) / math.sqrt(2) if 0 < ratio < 1 else math.inf
    return Prediction(value=value, equation="tau = atanh(-sqrt2 p_0 / D_0) / sqrt2",
                      source=_SOURCE, assumptions=_ASSUMPTIONS, derived=True,
                      params={"p0": p0, "beta0": beta0, "beta1": beta1})
