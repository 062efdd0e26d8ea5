"""Theory of Bao, Hataya, Karakida (2024), *Self-attention Networks Localize When
QK-eigenspectrum Concentrates* (arXiv:2402.02098), one module per concept. The paper's theorem
was not available: everything here is attnverify's derivation under a stated token model
(Gaussian random walk, query = last token, centred scores), labelled ``derived`` and derived in
docs/derivations.md:

- :mod:`~theory.bao.spectrum`: eigenspectrum statistics of a W_QK
  (docs/derivations.md#eigenspectrum-statistics)
- :mod:`~theory.bao.moments`: exact discrete score moments mu_t, v_t
  (docs/derivations.md#random-walk-token-model, docs/derivations.md#score-moments)
- :mod:`~theory.bao.continuum`: their continuum limit, derived with sympy
  (docs/derivations.md#continuum-variance-polynomial)
- :mod:`~theory.bao.propagation`: rho_t, localization summaries, regimes
  (docs/derivations.md#propagation-probability-and-rho-profile,
  docs/derivations.md#regimes-and-thresholds)
- :mod:`~theory.bao.entropy`: the annealed softmax-entropy approximation
  (docs/derivations.md#annealed-entropy)
- :mod:`~theory.bao.locater`: the LocAteR regularizer candidates and gradients
  (docs/derivations.md#locater-candidates)
- :mod:`~theory.bao.antrp`: the third-party variant, kept as a documented discrepancy
  (docs/derivations.md#antrp-comparison)
"""

from attnverify.theory.bao.antrp import antrp_moments, antrp_moments_from_traces
from attnverify.theory.bao.continuum import (
    continuum_covariances,
    continuum_moments_symmetric,
    continuum_variance_polynomial,
)
from attnverify.theory.bao.entropy import annealed_entropy, annealed_entropy_grid
from attnverify.theory.bao.locater import KINDS as LOCATER_KINDS
from attnverify.theory.bao.locater import locater, locater_a, locater_b, locater_c
from attnverify.theory.bao.moments import (
    ScoreMoments,
    WalkCovariances,
    moments_from_traces,
    score_moments,
    score_moments_of_matrix,
    spectrum_traces,
    walk_covariances,
)
from attnverify.theory.bao.propagation import (
    REGIMES,
    Localization,
    classify_regime,
    localization,
    localization_grid,
    propagation_probability,
    regime,
    rho,
    rho_profile_grid,
)
from attnverify.theory.bao.spectrum import SpectrumStats, spectrum_stats

__all__ = [
    "LOCATER_KINDS",
    "REGIMES",
    "Localization",
    "ScoreMoments",
    "SpectrumStats",
    "WalkCovariances",
    "annealed_entropy",
    "annealed_entropy_grid",
    "antrp_moments",
    "antrp_moments_from_traces",
    "classify_regime",
    "continuum_covariances",
    "continuum_moments_symmetric",
    "continuum_variance_polynomial",
    "localization",
    "localization_grid",
    "locater",
    "locater_a",
    "locater_b",
    "locater_c",
    "moments_from_traces",
    "propagation_probability",
    "regime",
    "rho",
    "rho_profile_grid",
    "score_moments",
    "score_moments_of_matrix",
    "spectrum_stats",
    "spectrum_traces",
    "walk_covariances",
]
