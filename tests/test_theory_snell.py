"""theory.snell: closed forms checked against exact enumeration and Monte Carlo (§4.5)."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnverify import theory
from attnverify.compare.claims.snell import cooccurrence_max_z
from attnverify.compare.stats import bonferroni_z
from attnverify.empirics import CopyTask, estimate_cooccurrence


def exact_cooccurrence(vocab: int, length: int, distribution: str) -> np.ndarray:
    """C[i, o] by enumerating every sequence of the distribution (small V, L only)."""
    if distribution == "iid":
        seqs = list(itertools.product(range(vocab), repeat=length))
    else:
        seqs = list(itertools.permutations(range(vocab), length))
    c = np.zeros((vocab, vocab))
    for seq in seqs:
        n = np.bincount(seq, minlength=vocab).astype(float)
        c += np.outer(n, n)
    return c / len(seqs)


@pytest.mark.parametrize("distribution", ["subset", "iid"])
@pytest.mark.parametrize(("vocab", "length"), [(2, 1), (3, 2), (4, 2), (5, 3), (4, 4)])
def test_cooccurrence_matches_exact_enumeration(vocab, length, distribution):
    exact = exact_cooccurrence(vocab, length, distribution)
    np.testing.assert_allclose(theory.snell.cooccurrence(vocab, length, distribution).value,
                               exact, rtol=1e-12, atol=1e-12)
    kappa = (exact[0, 0] - exact[0, 1]) / length
    assert theory.snell.kappa(vocab, length, distribution).value == pytest.approx(kappa, abs=1e-12)


@given(st.integers(1, 200))
def test_kappa_is_zero_for_permutations(length):
    if length == 1:
        return  # V >= 2 is required
    assert theory.snell.kappa(length, length, "permutation").value == 0.0
    assert theory.snell.kappa(length, length, "subset").value == 0.0


@given(st.integers(2, 200))
def test_kappa_shape_and_peak(length):
    """0 at V = L, strictly increasing up to floor(V*), decreasing after (T2)."""
    peak = theory.snell.kappa_peak(length).value
    assert peak == pytest.approx(length + math.sqrt(length * (length - 1)))
    vocab = np.arange(length, int(3 * length) + 3)
    k = np.array([theory.snell.kappa(int(v), length).value for v in vocab])
    assert k[0] == 0.0
    rising = vocab <= math.floor(peak)
    assert np.all(np.diff(k[rising]) > 0)
    assert np.all(np.diff(k[vocab >= math.ceil(peak)]) < 0)
    assert vocab[np.argmax(k)] in (math.floor(peak), math.ceil(peak))


@given(st.integers(2, 200))
def test_iid_kappa_is_one_over_v(vocab):
    assert theory.snell.kappa(vocab, 7, "iid").value == pytest.approx(1 / vocab)


@given(data=st.data())
def test_kappa_monte_carlo_agreement(data):
    """T1: the generator's co-occurrence agrees with C and kappa (4 SE; Bonferroni z on C).

    The Monte Carlo seed is fixed, not drawn: hypothesis searches its inputs adversarially, and
    a statistical bound must not be searched over sampling seeds. Entries of C are z-tested only
    where they are expected at least 200 times in the sample, so that the normal approximation
    holds at the Bonferroni tail (for i.i.d. tokens n_i n_o is skewed).
    """
    distribution = data.draw(st.sampled_from(["subset", "iid"]))
    vocab = data.draw(st.integers(2, 40))
    length = data.draw(st.integers(1, vocab))
    est = estimate_cooccurrence(CopyTask(distribution, vocab, length), 4000, seed=0)
    k = theory.snell.kappa(vocab, length, distribution).value
    assert abs(est.kappa - k) <= 4 * est.kappa_se + 1e-12
    c = theory.snell.cooccurrence(vocab, length, distribution).value
    z_max, _ = cooccurrence_max_z(est.matrix, est.matrix_se, c, 4000, min_expected=200)
    assert z_max <= bonferroni_z(vocab * vocab, 1e-4)


def test_monte_carlo_detects_a_biased_generator():
    """The check can fail: a generator that never emits token 0 is caught by the C entries."""
    est = estimate_cooccurrence(CopyTask("subset", 9, 4), 4000, seed=1)
    padded = np.zeros((10, 10))  # as if V = 10 but token 0 never drawn
    padded[1:, 1:] = est.matrix
    se = np.zeros((10, 10))
    se[1:, 1:] = est.matrix_se
    c = theory.snell.cooccurrence(10, 4).value
    z_max, _ = cooccurrence_max_z(padded, se, c, 4000)
    assert z_max > bonferroni_z(100, 1e-4)


@pytest.mark.parametrize(("args", "message"), [
    ((1, 1, "subset"), "V (vocabulary size) must be an integer >= 2"),
    ((10, 0, "subset"), "L (sequence length) must be an integer >= 1"),
    ((10, 20, "subset"), "L must be <= V"),
    ((10, 5, "permutation"), "L must equal V"),
    ((10, 5, "zipf"), "distribution must be one of"),
    ((10.5, 5, "subset"), "must be an integer"),
])
def test_kappa_rejects_bad_input(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        theory.snell.kappa(*args)


def test_predict_registry():
    p = theory.predict("snell.kappa", V=60, L=40)
    assert p.value == pytest.approx(20 / (60 * 59))
    assert p.derived and "§4.5" in p.source
    with pytest.raises(ValueError, match="unknown parameter"):
        theory.predict("snell.kappa", V=60, L=40, W=3)
    with pytest.raises(ValueError, match="missing parameter"):
        theory.predict("snell.kappa", V=60)
