"""theory.bao against Monte Carlo under its token model, and the samplers the Monte Carlo rests
on. Tolerances come from standard errors (Bonferroni over the positions tested), except where
docs/derivations.md states the Gaussian approximation's accuracy."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from attnverify import theory
from attnverify.compare.stats import bonferroni_z
from attnverify.empirics import (
    eigen_stats,
    factored_qk,
    gaussian_random_walk,
    rank_collapse,
    sample_scores,
    sample_scores_many,
    symmetric_qk,
)

N = 4_000  # the spec's minimum for the moment tests
mc_settings = settings(max_examples=6)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@given(d=st.integers(1, 64), m=st.floats(-1, 1), sd=st.floats(0, 2), seed=st.integers(0, 999))
def test_symmetric_sampler_has_the_exact_spectrum(d, m, sd, seed):
    w = symmetric_qk(d, m, sd, gen(seed))
    assert torch.equal(w, w.T)
    stats = eigen_stats(w)
    assert stats.mean == pytest.approx(m, abs=1e-12)
    if d > 1:
        assert stats.var_sym == pytest.approx(sd**2, abs=1e-10 * (1 + sd**2 + m**2))
        eig = np.linalg.eigvalsh(w.numpy())
        assert eig.std() == pytest.approx(sd, abs=1e-8 * (1 + sd + abs(m)))


@given(d=st.integers(1, 30), seed=st.integers(0, 999))
def test_empirical_and_theory_spectrum_statistics_agree(d, seed):
    w = factored_qk(d, max(d // 2, 1), gen(seed))
    assert tuple(eigen_stats(w)) == pytest.approx(tuple(theory.bao.spectrum_stats(w.numpy())),
                                                  rel=1e-12, abs=1e-14)
    sym = symmetric_qk(d, 0.3, 0.7, gen(seed)).numpy()
    stats = theory.bao.spectrum_stats(sym)
    tr_w, tr_w2, frob2 = theory.bao.spectrum_traces(d, 0.3, 0.7 if d > 1 else 0.0)
    assert (stats.mean * d, stats.tr_w2 * d, stats.frob2 * d) == pytest.approx(
        (tr_w, tr_w2, frob2), rel=1e-10)


def test_common_random_numbers_share_eigenvectors():
    a = symmetric_qk(16, 0.1, 0.2, gen(5))
    b = symmetric_qk(16, 0.1, 0.4, gen(5))
    # same Q and xi: b - m I = 2 (a - m I)
    eye = torch.eye(16, dtype=torch.float64)
    torch.testing.assert_close(b - 0.1 * eye, 2 * (a - 0.1 * eye))


def test_walks_do_not_depend_on_the_chunk_size():
    rng = np.random.default_rng
    whole = gaussian_random_walk(10, 7, 3, rng(4))
    split = torch.cat([gaussian_random_walk(k, 7, 3, r) for r in [rng(4)] for k in (3, 7)])
    assert torch.equal(whole, split)


def test_scores_on_shared_walks_equal_each_w_alone():
    """Several W's scored on one draw of the walks give each W's own sample, to the bit (the
    Bao claims batch the points that share walks; their cached samples must not change)."""
    ws = [symmetric_qk(8, m, s, gen(1)) for m, s in ((0.1, 0.2), (0.0, 0.5))]
    ws.append(factored_qk(8, 8, gen(2)))
    together = sample_scores_many(ws, 16, 300, seed=3, chunk=128)
    for w, sample in zip(ws, together, strict=True):
        alone = sample_scores(w, 16, 300, seed=3, chunk=64)
        for name, array in sample.arrays().items():
            np.testing.assert_array_equal(array, alone.arrays()[name], err_msg=name)
    with pytest.raises(ValueError, match="every W must be 8 x 8"):
        sample_scores_many([ws[0], symmetric_qk(4, 0.1, 0.2, gen(1))], 16, 10, seed=3)
    assert sample_scores_many([], 16, 10, seed=3) == []


def test_random_walk_covariance_is_min_over_T():
    T, d = 6, 4
    x = gaussian_random_walk(200_000, T, d, np.random.default_rng(0)).numpy()            # (n, T, d)
    cov = np.einsum("ntd,nsd->ts", x, x) / (x.shape[0] * d)
    t = np.arange(1, T + 1)
    expected = np.minimum.outer(t, t) / T
    # SE of each entry is below sqrt(2/(n d)) * max cov ~ 1.6e-3; 6 SE
    np.testing.assert_allclose(cov, expected, atol=0.01)


@mc_settings
@given(d=st.integers(16, 64), T=st.integers(16, 128), m=st.floats(-0.3, 0.3),
       sd=st.floats(0, 0.5), symmetric=st.booleans(), seed=st.integers(0, 999))
def test_moments_match_monte_carlo(d, T, m, sd, symmetric, seed):
    """§8.2 item 1: every position within a Bonferroni z bound (family-wise 1e-3) and the
    variance ratio in [0.90, 1.10]; for non-symmetric W the general formula (||W||_F^2 in the
    B-term) is the one that holds."""
    assume(m * m + sd * sd >= 1e-4)  # W ~ 0: moments of ~1e-250 underflow in the fourth moment
    w = (symmetric_qk(d, m, sd, gen(seed)) if symmetric else
         factored_qk(d, d, gen(seed), scale=max(sd, 0.05)) + m * torch.eye(d, dtype=torch.float64))
    sample = sample_scores(w, T, N, seed=seed + 1)
    mom = theory.bao.score_moments_of_matrix(w.numpy(), T)
    z = bonferroni_z(2 * T, 1e-3)
    mu, mu_se = sample.mu()
    v, v_se = sample.v()
    assert np.all(np.abs(mu - mom.mu) <= z * mu_se + 1e-12)
    assert np.all(np.abs(v - mom.v) <= z * v_se)
    assert np.all((v / mom.v >= 0.90) & (v / mom.v <= 1.10))


def test_naive_variance_fails_for_a_generic_nonsymmetric_w():
    """§8.2 item 1: using tr W^2 for both terms is wrong by more than 10% for generic W."""
    d, T = 32, 64
    w = factored_qk(d, d, gen(1)).numpy()
    v, _ = sample_scores(torch.as_tensor(w), T, N, seed=2).v()
    naive = theory.bao.moments_from_traces(np.trace(w), np.trace(w @ w), np.trace(w @ w), T=T,
                                           c=1 / np.sqrt(d)).v
    assert np.max(np.abs(v / naive - 1)) > 0.10


@mc_settings
@given(d=st.sampled_from([8, 16, 32, 64]), m=st.floats(-0.3, 0.3), sd=st.floats(0, 0.5),
       seed=st.integers(0, 999))
@example(d=8, m=0.0, sd=4.755585335183398e-177, seed=0)  # sd^2 underflows: rho is 1/2, not 0
def test_rho_matches_monte_carlo_within_the_gaussian_accuracy(d, m, sd, seed):
    """§8.2 item 2: max_t |rho^ - rho| <= 0.06 for d >= 32, <= 0.12 for d in [8, 16] (the
    spec's calibration at N >= 3000, sampling noise included)."""
    T = 64
    sample = sample_scores(symmetric_qk(d, m, sd, gen(seed)), T, N, seed=seed + 1)
    rho_mc, _ = sample.rho()
    rho_th = np.asarray(theory.bao.rho(d, T, m, sd).value)
    assert np.max(np.abs(rho_mc - rho_th)) <= (0.06 if d >= 32 else 0.12)


def test_entropy_non_increasing_in_std_and_in_mean_with_common_random_numbers():
    """§8.2 item 7: with common random numbers, non-increasing in sigma at fixed m and in |m|
    at fixed sigma, up to 0.01 nats with N >= 1500."""
    d, T = 64, 128
    ent = lambda m, s: sample_scores(symmetric_qk(d, m, s, gen(0)), T, 1500,  # noqa: E731
                                     seed=1).mean_entropy()[0]
    by_std = [ent(0.1, s) for s in (0.0, 0.25, 0.5, 1.0, 2.0)]
    by_mean = [ent(m, 0.1) for m in (0.0, 0.1, 0.2, 0.4)]
    assert np.all(np.diff(by_std) <= 0.01) and by_std[-1] < by_std[0] - 0.1
    assert np.all(np.diff(by_mean) <= 0.01)


def test_uniform_attention_anchor():
    """§8.2 item 8: W = 0 gives entropy exactly log T and, bidirectionally, identical output
    tokens (res = 0); all rho_t equal."""
    d, T = 16, 32
    zero = torch.zeros(d, d, dtype=torch.float64)
    sample = sample_scores(zero, T, 50, seed=0)
    np.testing.assert_allclose(sample.entropy, np.log(T), atol=1e-12)
    _, after = rank_collapse(zero, T, 20, seed=0)
    assert after.max() <= 1e-12
    rho = theory.bao.rho(d, T, 0.0, 0.0).value
    assert len(set(rho)) == 1


@pytest.mark.parametrize("sd", [0.0, 0.1, 0.3])
def test_annealed_entropy_matches_monte_carlo_at_small_std(sd):
    """§8.2 item 11: |H_annealed - H_MC| <= 0.01 nats for sigma <= 0.3 at d = 64, T = 128
    (MC standard error about 5e-4 here)."""
    d, T, m = 64, 128, 0.1
    h_mc, se = sample_scores(symmetric_qk(d, m, sd, gen(0)), T, N, seed=1).mean_entropy()
    assert se < 2e-3
    assert abs(theory.bao.annealed_entropy(d, T, m, sd).value - h_mc) <= 0.01
