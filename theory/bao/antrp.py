"""The third-party variant of the moments (Everlyn-Labs/ANTRP, ``calculate_signal_propagation``
[S]), kept to document how it differs from the derivation (docs/derivations.md#antrp-comparison).

    mu_i = (i/T - 1/2) tr W / sqrt(d),      v_i = (2 i^2/T^2 + 7/12) ||W||_F^2 / d^2,   i = 0..T-1

Against the derived moments (c = 1/sqrt(d), sx2 = 1) the mean agrees but the variance is smaller
by a factor between 1/d and about 13.5/d and lacks the -2s term of ``2 s^2 - 2 s + 7/12``.
"""

from __future__ import annotations

import numpy as np

from attnverify.theory.bao.moments import ScoreMoments, check_spectrum, spectrum_traces
from attnverify.theory.prediction import Prediction


def antrp_moments_from_traces(tr_w: float, frob2: float, d: int, T: int) -> ScoreMoments:
    i = np.arange(T, dtype=np.float64)
    mu = (i / T - 0.5) * tr_w / np.sqrt(d)
    v = (2 * i**2 / T**2 + 7 / 12) * frob2 / d**2
    return ScoreMoments(mu=mu, v=v)


def antrp_moments(d: int, T: int, eig_mean: float, eig_std: float) -> Prediction:
    """The ANTRP moments for a symmetric W with the given eigen-mean and -std."""
    check_spectrum(d, T, eig_mean, eig_std)
    tr_w, _, frob2 = spectrum_traces(d, eig_mean, eig_std)
    mom = antrp_moments_from_traces(float(tr_w), float(frob2), d, T)
    return Prediction(
        value={"mu": mom.mu.tolist(), "v": mom.v.tolist()},
        equation="mu_i = (i/T - 1/2) tr W / sqrt(d);  v_i = (2 i^2/T^2 + 7/12) ||W||_F^2 / d^2",
        source=("third-party [S]: Everlyn-Labs/ANTRP (calculate_signal_propagation in "
                "modeling_llama_plot.py), a reading of Bao, Hataya, Karakida 2024 "
                "(arXiv:2402.02098); compared with the derivation in "
                "docs/derivations.md#antrp-comparison (§3.1, §3.3)"),
        assumptions=("kept as documentation of a discrepancy with the derivation "
                     "(docs/derivations.md#antrp-comparison)",),
        derived=False, params={"d": d, "T": T, "eig_mean": eig_mean, "eig_std": eig_std},
    )
