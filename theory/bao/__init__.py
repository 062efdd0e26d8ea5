"""Theory of Bao, Hataya, Karakida (2024), *Self-attention Networks Localize When
QK-eigenspectrum Concentrates* (``shared/papers/bao2024.md``), one module per concept. The
paper's theorem was not available: everything here is the spec's derivation under a stated token
model (Gaussian random walk, query = last token, centred scores), labelled ``derived``.

- :mod:`~theory.bao.spectrum`: eigenspectrum statistics of a W_QK (§3.3)
- :mod:`~theory.bao.moments`: exact discrete score moments mu_t, v_t (§3.2)
- :mod:`~theory.bao.continuum`: their continuum limit, derived with sympy (§3.2)
- :mod:`~theory.bao.propagation`: rho_t, localization summaries, regimes (§2.2-§3.4)
- :mod:`~theory.bao.entropy`: the annealed softmax-entropy approximation (§3.6)
- :mod:`~theory.bao.locater`: the LocAteR regularizer candidates and gradients (§4)
- :mod:`~theory.bao.antrp`: the third-party variant, kept as a documented discrepancy (§3.1, §3.3)
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
