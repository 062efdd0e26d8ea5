"""The continuum limit T -> infinity of the score moments, derived with sympy
(derived by attnverify, not stated in the paper; docs/derivations.md#continuum-variance-polynomial).

With s = t/T and the walk rescaled to a Brownian path B on [0, 1] (``Cov(B(u), B(w)) =
min(u, w)``), the covariance scales of :mod:`theory.bao.moments` become

    C(s) = Cov(B(1), B(s) - int_0^1 B) ,      Bvar(s) = Var(B(s) - int_0^1 B),

and for a symmetric W (``||W||_F^2 = tr W^2``) the variance coefficient is ``Bvar(s) + C(s)^2``.
Nothing here is typed in: the integrals of ``min`` are evaluated by sympy.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import sympy as sp

s, u, w = sp.symbols("s u w", real=True, nonnegative=True)


def _min_integral_over_u(x: sp.Expr) -> sp.Expr:
    """``int_0^1 min(x, u) du`` for 0 <= x <= 1."""
    return sp.integrate(u, (u, 0, x)) + sp.integrate(x, (u, x, 1))


@cache
def continuum_covariances() -> tuple[sp.Expr, sp.Expr]:
    """``(Bvar(s), C(s))`` as sympy polynomials in s on [0, 1]."""
    mean_path_var = sp.integrate(_min_integral_over_u(w), (w, 0, 1))  # Var(int B)
    cov_s_mean = _min_integral_over_u(s)                               # Cov(B(s), int B)
    cov_1_mean = _min_integral_over_u(sp.Integer(1))                   # Cov(B(1), int B)
    b_var = sp.expand(s - 2 * cov_s_mean + mean_path_var)
    c = sp.expand(s - cov_1_mean)  # Cov(B(1), B(s)) = s, minus Cov(B(1), int B)
    return b_var, c


@cache
def continuum_variance_polynomial() -> sp.Expr:
    """The coefficient of ``c^2 tr(W^2)`` in ``v(s)`` for symmetric W: ``2 s^2 - 2 s + 7/12``."""
    b_var, c = continuum_covariances()
    return sp.expand(b_var + c**2)


def continuum_moments_symmetric(d: int, T: int, eig_mean: float,
                                eig_std: float) -> tuple[np.ndarray, np.ndarray]:
    """``mu(s)``, ``v(s)`` at s = t/T for symmetric W, c = 1/sqrt(d), sx2 = 1:
    ``mu = sqrt(d) (s - 1/2) m`` and ``v = poly(s) (sigma^2 + m^2)``; carries an O(1/T) error
    against the exact discrete moments (docs/derivations.md#continuum-variance-polynomial)."""
    _, c = continuum_covariances()
    poly = sp.lambdify(s, continuum_variance_polynomial(), "numpy")
    c_of_s = sp.lambdify(s, c, "numpy")
    pos = np.arange(1, T + 1) / T
    mu = np.sqrt(d) * c_of_s(pos) * eig_mean
    v = poly(pos) * (eig_std**2 + eig_mean**2)
    return mu, v
