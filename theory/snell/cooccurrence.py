"""The stage-1 KTIW signal of Snell et al. (2021): co-occurrence and kappa.

Stage 1 of the two-stage approximation: under uniform attention a seq2seq copier sees only the bag
of input words, so what it can learn about "input i translates to output o" is set by the
co-occurrence matrix ``C[i, o] = E[n_i(x) m_o(y)]``. For copying (y = x) the initial gradient
margin of the KTIW matrix between the correct and a wrong translation is

    kappa(V, L) = (1/L) (C[i, i] - C[i, j]),   i != j.

All closed forms here are *derived* by attnverify, not stated in the paper
(docs/derivations.md#co-occurrence-and-kappa); the tests cross-check them against Monte Carlo
and exact enumeration.
"""

from __future__ import annotations

import math

import numpy as np

from attnverify.theory.prediction import Prediction

DISTRIBUTIONS = ("subset", "permutation", "iid")
"""Copying-data generators of the official code of Snell et al. (2021): L distinct of V in
random order (``subset``, the official ``--no_rep``), a permutation of all V = L tokens, and
i.i.d. uniform tokens."""

_KAPPA_SOURCE = ("derived by attnverify, not stated in Snell et al. 2021 (arXiv:2103.07601): "
                 "docs/derivations.md#co-occurrence-and-kappa (§4.5)")
_PEAK_SOURCE = ("derived by attnverify, not stated in Snell et al. 2021 (arXiv:2103.07601): "
                "docs/derivations.md#peak-of-kappa (§4.5)")


def check_sizes(vocab_size: int, length: int, distribution: str) -> None:
    """ValueError naming the parameter unless (V, L, distribution) is a valid copying setup."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(
            f"distribution must be one of {', '.join(DISTRIBUTIONS)}; got {distribution!r}"
        )
    if not isinstance(vocab_size, int | np.integer) or vocab_size < 2:
        raise ValueError(f"V (vocabulary size) must be an integer >= 2; got {vocab_size!r}")
    if not isinstance(length, int | np.integer) or length < 1:
        raise ValueError(f"L (sequence length) must be an integer >= 1; got {length!r}")
    if distribution == "subset" and length > vocab_size:
        raise ValueError(
            f"L must be <= V for the subset distribution (L distinct tokens of V); "
            f"got V={vocab_size}, L={length}"
        )
    if distribution == "permutation" and length != vocab_size:
        raise ValueError(
            f"L must equal V for the permutation distribution; got V={vocab_size}, L={length}"
        )


def cooccurrence(vocab_size: int, length: int, distribution: str = "subset") -> Prediction:
    """The co-occurrence matrix ``C[i, o] = E[n_i(x) m_o(y)]`` for copying, y = x (EOS ignored).

    Closed forms (derived, docs/derivations.md#co-occurrence-and-kappa): for L distinct
    tokens of V,
    ``C[i, i] = L/V`` and ``C[i, j] = L(L-1)/(V(V-1))``; for i.i.d. uniform tokens,
    ``C[i, i] = (L/V)(1 - 1/V) + L^2/V^2`` and ``C[i, j] = L^2/V^2 - L/V^2``.
    Returns a (V, V) array.
    """
    check_sizes(vocab_size, length, distribution)
    v, ell = float(vocab_size), float(length)
    if distribution == "iid":
        diag = (ell / v) * (1 - 1 / v) + ell**2 / v**2
        off = ell**2 / v**2 - ell / v**2
    else:
        diag = ell / v
        off = ell * (ell - 1) / (v * (v - 1))
    matrix = np.full((vocab_size, vocab_size), off)
    np.fill_diagonal(matrix, diag)
    return Prediction(
        value=matrix,
        equation="C[i,o] = E[n_i(x) m_o(y)], y = x",
        source=_KAPPA_SOURCE,
        assumptions=("copying task, y = x", "EOS not counted"),
        derived=True,
        params={"V": vocab_size, "L": length, "distribution": distribution},
    )


def kappa(V: int, L: int, distribution: str = "subset") -> Prediction:
    """Stage-1 KTIW margin ``kappa = (1/L)(C[i,i] - C[i,j])`` (derived,
    docs/derivations.md#co-occurrence-and-kappa).

    ``(V - L) / (V (V - 1))`` for L distinct of V in random order, hence 0 for permutations;
    ``1/V`` for i.i.d. tokens. Holds at the start of training (B = 0, uniform attention) under
    assumption (a) of the paper: hidden states reflect only their own input word.
    """
    check_sizes(V, L, distribution)
    value = 1.0 / V if distribution == "iid" else (V - L) / (V * (V - 1))
    return Prediction(
        value=value,
        equation="kappa = (V - L) / (V (V - 1))" if distribution != "iid" else "kappa = 1 / V",
        source=_KAPPA_SOURCE,
        assumptions=(
            "uniform attention (stage 1)",
            "hidden states carry only their own input word (assumption (a))",
            "KTIW matrix B = 0 at the start",
        ),
        derived=True,
        params={"V": V, "L": L, "distribution": distribution},
    )


def kappa_peak(L: int) -> Prediction:
    """The vocabulary size that maximises kappa(V, L) over real V >= L (derived,
    docs/derivations.md#peak-of-kappa).

    d/dV [(V - L)/(V(V - 1))] = 0  <=>  V^2 - 2 L V + L = 0  =>  V* = L + sqrt(L (L - 1)).
    """
    if not isinstance(L, int | np.integer) or L < 1:
        raise ValueError(f"L (sequence length) must be an integer >= 1; got {L!r}")
    return Prediction(
        value=L + math.sqrt(L * (L - 1)),
        equation="V* = L + sqrt(L (L - 1))",
        source=_PEAK_SOURCE,
        assumptions=("subset distribution, V treated as real",),
        derived=True,
        params={"L": L},
    )
