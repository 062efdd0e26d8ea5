"""theory.bao checked, not trusted: the exact moments against a brute-force covariance matrix,
the sympy continuum limit against the discrete moments, the regimes' limits, the annealed
entropy's anchor, LocAteR's gradients and trace preservation
(docs/derivations.md#bao-hataya-karakida-2024)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from attnverify import theory
from attnverify.theory.bao.continuum import s as s_sym

dims = st.integers(2, 64)
lengths = st.integers(2, 300)
means = st.floats(-0.5, 0.5)
stds = st.floats(0.0, 2.0)


def spec_reference_moments(W, T):
    """A reference implementation with the explicit T x T covariance matrix."""
    d = W.shape[0]
    c = 1 / np.sqrt(d)
    t = np.arange(1, T + 1)
    M = np.minimum.outer(t, t) / T
    B = t / T - 2 * M.mean(1) + M.mean()
    C = t / T - (t / T).mean()
    return c * C * np.trace(W), c**2 * (B * np.sum(W * W) + C**2 * np.trace(W @ W))


@given(d=dims, T=lengths, seed=st.integers(0, 2**31))
def test_closed_form_covariances_equal_the_matrix_reference(d, T, seed):
    W = np.random.default_rng(seed).normal(size=(d, d))
    mom = theory.bao.score_moments_of_matrix(W, T)
    mu, v = spec_reference_moments(W, T)
    np.testing.assert_allclose(mom.mu, mu, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mom.v, v, rtol=1e-10, atol=1e-12)


def test_sympy_derives_the_variance_polynomial():
    poly = theory.bao.continuum_variance_polynomial()
    assert sp.simplify(poly - (2 * s_sym**2 - 2 * s_sym + sp.Rational(7, 12))) == 0
    _, c = theory.bao.continuum_covariances()
    assert sp.simplify(c - (s_sym - sp.Rational(1, 2))) == 0
    assert poly.subs(s_sym, 0) == sp.Rational(7, 12) == sp.Rational(1, 3) + sp.Rational(1, 4)


@given(d=st.integers(4, 128), T=st.integers(256, 1024), m=means, sd=st.floats(1e-3, 2.0))
def test_continuum_limit_within_the_spec_bound_for_large_T(d, T, m, sd):
    """The continuum bound: |v_t / [(2s^2 - 2s + 7/12) tr W^2 / d] - 1| <= 0.02 for T >= 256
    (the gap is about 2.5/T, so 0.02 holds from T = 128 on; T >= 256 leaves margin)."""
    exact = theory.bao.score_moments(d, T, m, sd).value
    mu_c, v_c = theory.bao.continuum_moments_symmetric(d, T, m, sd)
    assert np.max(np.abs(np.asarray(exact["v"]) / v_c - 1)) <= 0.02
    # the mean is exact up to the half-step offset of C_t: (T+1)/(2T) vs 1/2
    assert np.max(np.abs(np.asarray(exact["mu"]) - mu_c)) <= np.sqrt(d) * abs(m) / (2 * T) + 1e-12


def test_continuum_gap_shrinks_like_one_over_T():
    """The spec's table: max relative gap 7.9% at T=32, 3.9% at 64, 1.9% at 128, 0.96% at 256."""
    for T, gap in ((32, 0.079), (64, 0.039), (128, 0.019), (256, 0.0096)):
        exact = np.asarray(theory.bao.score_moments(16, T, 0.0, 1.0).value["v"])
        _, v_c = theory.bao.continuum_moments_symmetric(16, T, 0.0, 1.0)
        assert np.max(np.abs(exact / v_c - 1)) == pytest.approx(gap, abs=0.001)


@given(d=dims, T=lengths, sd=st.just(0.0) | st.floats(1e-6, 2.0))
def test_zero_mean_gives_zero_mu_and_the_erf_profile(d, T, sd):
    """§8.2 item 4, exactly."""
    from scipy.special import erf

    mom = theory.bao.moments_from_traces(*theory.bao.spectrum_traces(d, 0.0, sd), T=T,
                                         c=1 / np.sqrt(d))
    assert np.all(mom.mu == 0)
    rho = theory.bao.propagation_probability(mom.mu, mom.v)
    if sd > 0:
        np.testing.assert_allclose(rho, 0.5 * erf(1 / np.sqrt(2 * mom.v)), atol=1e-15)


@given(d=st.integers(16, 256), T=st.integers(16, 256),
       m=st.floats(0.02, 0.3) | st.floats(-0.3, -0.02), sd=st.floats(0.0, 0.02))
def test_small_variance_limit_is_the_indicator_window(d, T, m, sd):
    """§8.2 item 5 for the theory: rho >= 0.95 where mu in [delta, 1 - delta], <= 0.05 where mu
    is outside [-delta, 1 + delta], delta = 4 max sqrt(v) (when max v < 1/64)."""
    mom = theory.bao.moments_from_traces(*theory.bao.spectrum_traces(d, m, sd), T=T,
                                         c=1 / np.sqrt(d))
    if mom.v.max() >= 1 / 64:
        return
    delta = 4 * np.sqrt(mom.v.max())
    rho = theory.bao.propagation_probability(mom.mu, mom.v)
    inside = (mom.mu >= delta) & (mom.mu <= 1 - delta)
    outside = (mom.mu < -delta) | (mom.mu > 1 + delta)
    assert np.all(rho[inside] >= 0.95) and np.all(rho[outside] <= 0.05)


@given(d=dims, T=lengths, m=means, sd=st.floats(0.01, 100.0))
def test_rho_is_bounded_by_the_density_bound(d, T, m, sd):
    """§8.2 item 6: rho_t <= 1/sqrt(2 pi v_t), so rho -> 0 as the std grows."""
    mom = theory.bao.moments_from_traces(*theory.bao.spectrum_traces(d, m, sd), T=T,
                                         c=1 / np.sqrt(d))
    rho = theory.bao.propagation_probability(mom.mu, mom.v)
    assert np.all(rho <= 1 / np.sqrt(2 * np.pi * mom.v) + 1e-12)
    assert np.all((rho >= 0) & (rho <= 1))


def test_regimes_at_the_spec_examples():
    assert theory.bao.regime(64, 128, 0.0, 0.05).value["regime"] == "uniform"
    localized = theory.bao.regime(64, 128, 0.1, 0.0).value
    assert localized["regime"] == "localized"
    # §3.4 example: d = 64, m = 0.1, sigma -> 0: window width 1/2, N_eff about T/2, max rho 1
    assert localized["participation_ratio"] == pytest.approx(0.5, abs=0.03)
    assert localized["max_rho"] == pytest.approx(1.0)
    assert theory.bao.regime(64, 128, 0.1, 20.0).value["regime"] == "vanishing"


def test_zero_variance_limit_is_the_indicator():
    rho = theory.bao.propagation_probability(np.array([-0.5, 0.0, 0.5, 1.0, 1.5]), np.zeros(5))
    np.testing.assert_array_equal(rho, [0.0, 0.0, 1.0, 0.0, 0.0])


@given(n=st.integers(1, 300), T=st.sampled_from([8, 33, 64]), seed=st.integers(0, 2**31))
def test_grid_equals_pointwise(n, T, seed):
    rng = np.random.default_rng(seed)
    d = rng.integers(1, 200, n)
    m, sd = rng.uniform(-1, 1, n), rng.uniform(0, 3, n)
    grid = theory.bao.localization_grid(d, T, m, sd, chunk=17, threads=2)
    for i in rng.choice(n, min(n, 5), replace=False):
        mom = theory.bao.moments_from_traces(*theory.bao.spectrum_traces(d[i], m[i], sd[i]),
                                             T=T, c=1 / np.sqrt(d[i]))
        point = theory.bao.localization(theory.bao.propagation_probability(mom.mu, mom.v))
        for name in theory.bao.Localization._fields:
            assert getattr(grid, name)[i] == pytest.approx(float(getattr(point, name)), abs=1e-12)


def test_annealed_entropy_anchor_at_w_zero():
    """§8.2 item 8: W = 0 gives entropy exactly log T (every score equal)."""
    for T in (2, 17, 128):
        assert theory.bao.annealed_entropy(8, T, 0.0, 0.0).value == pytest.approx(np.log(T),
                                                                                   abs=1e-12)


@given(d=st.integers(2, 40), seed=st.integers(0, 2**31), eta=st.floats(1e-4, 0.4))
def test_locater_a_step_keeps_the_trace_and_shrinks_the_spread(d, seed, eta):
    """§8.2 item 9: one gradient step on R_A keeps tr W to machine precision and scales
    W - (tr W/d) I by exactly 1 - 2 eta/d."""
    W = np.random.default_rng(seed).normal(size=(d, d))
    _, grad = theory.bao.locater_a(W)
    stepped = W - eta * grad
    assert np.trace(stepped) == pytest.approx(np.trace(W), abs=1e-12 * d)
    centred = lambda A: A - np.trace(A) / d * np.eye(d)  # noqa: E731
    np.testing.assert_allclose(centred(stepped), (1 - 2 * eta / d) * centred(W), atol=1e-12)
    assert np.linalg.norm(centred(stepped)) < np.linalg.norm(centred(W))


@pytest.mark.parametrize("kind", theory.bao.LOCATER_KINDS)
def test_locater_gradients_match_finite_differences(kind):
    rng = np.random.default_rng(3)
    W = rng.normal(size=(5, 5)) + 0.5 * np.eye(5)
    args = (0.2,) if kind == "B" else ()
    func = theory.bao.locater(kind)
    _, grad = func(W, *args)
    eps = 1e-6
    numeric = np.zeros_like(W)
    for i in range(5):
        for j in range(5):
            E = np.zeros_like(W)
            E[i, j] = eps
            numeric[i, j] = (func(W + E, *args)[0] - func(W - E, *args)[0]) / (2 * eps)
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="unknown LocAteR kind"):
        theory.bao.locater("D")


@given(d=st.integers(8, 256), m=st.floats(0.01, 0.5), sd=st.floats(0.0, 1.0))
def test_antrp_variance_ratio_in_the_predicted_band(d, m, sd):
    """§3.3 item 3: in the continuum v_ANTRP / v_derived lies in [1/d, about 13.5/d]; the
    means agree. Checked at T = 4096 (index offset i = t - 1, continuum error O(1/T))."""
    T = 4096
    antrp = theory.bao.antrp_moments(d, T, m, sd).value
    _, v_c = theory.bao.continuum_moments_symmetric(d, T, m, sd)
    ratio = np.asarray(antrp["v"])[1:] / v_c[:-1]
    assert ratio.min() >= (1 - 1e-2) / d and ratio.max() <= 13.6 / d


def test_predict_cli_returns_a_profile(capsys):
    from attnverify.compare.cli import main

    assert main(["predict", "bao.rho", "--d", "64", "--T", "128", "--eig-mean", "0.1",
                 "--eig-std", "0.05"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["derived"] is True and len(out["value"]) == 128
    np.testing.assert_allclose(out["value"], theory.bao.rho(64, 128, 0.1, 0.05).value)
