"""theory.snell: bag-of-words optimum, toy classifier, stage-2 gradient, free-attention toy —
each cross-checked by sympy, Monte Carlo, numerical integration or finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnverify import theory
from attnverify.empirics import Adam, CopyTask, FreeAttentionToyConfig, RunSpec, build_model, train


# -- bag-of-words optimum (§4.5) ---------------------------------------------------------------
@pytest.mark.parametrize(("length", "expected"), [(20, 0.219), (40, 0.129)])
def test_accuracy_bound_matches_the_spec(length, expected):
    assert theory.snell.stage1_accuracy_bound(length).value == pytest.approx(expected, abs=5e-4)


@given(st.integers(1, 60))
def test_exclusion_loss_is_log_factorial_over_l_by_sympy(length):
    t = sp.Symbol("t", integer=True)
    total = sp.summation(sp.log(length - t), (t, 0, length - 1))
    assert float(total) / length == pytest.approx(
        theory.snell.stage1_exclusion_loss(length).value, rel=1e-12)


def test_accuracy_bound_by_monte_carlo():
    """An oracle that knows the bag and the emitted prefix, guessing uniformly among the words
    left, achieves the accuracy bound (EOS step included, as in the spec). (Its loss is
    log(L!)/L by construction, so the loss bound is checked by sympy above, not here.)"""
    rng = np.random.default_rng(0)
    length, hits, n = 12, 0.0, 2000
    for _ in range(n):
        remaining = list(rng.permutation(30)[:length])
        for _ in range(length):
            hits += rng.choice(remaining) == remaining[0]
            remaining.pop(0)
        hits += 1  # the EOS step is certain
    acc = hits / (n * (length + 1))
    se = math.sqrt(acc * (1 - acc) / (n * (length + 1)))
    assert abs(acc - theory.snell.stage1_accuracy_bound(length).value) < 4 * se


@settings(max_examples=4, deadline=None)
@given(st.integers(3, 8), st.data())
def test_bag_of_words_model_reaches_log_l(length, data):
    """T4: the §4.5 model (Q frozen at 0), Adam, float64, reaches log L within 0.05 and
    learns the identity translation (argmax_i B[i, o] = o)."""
    vocab = data.draw(st.integers(length + 1, 3 * length))
    spec = RunSpec(task=CopyTask("subset", vocab, length),
                   model=FreeAttentionToyConfig(init_std_ktiw=0.01, attention="frozen"),
                   optimizer=Adam(lr=0.2), steps=1000, batch_size=256, eval_every=1000,
                   eval_size=512, dtype="float64")
    r = train(spec)
    assert abs(r.metric("loss")[-1] - theory.snell.stage1_loss(vocab, length).value) < 0.05
    assert r.metric("ktiw_acc")[-1] == 1.0


def test_stage1_loss_rejects_iid():
    with pytest.raises(ValueError, match="subset and permutation"):
        theory.snell.stage1_loss(10, 5, "iid")


# -- toy classifier (§4.2) ---------------------------------------------------------------------
@given(st.floats(0.01, 0.99), st.floats(-20, 20), st.floats(-5, 5))
def test_sympy_solution_matches_the_spec_formula(p0, d0, b0):
    tau = np.linspace(0, 2, 7)
    flow = theory.snell.toy_classifier_trajectory(tau, p0, b0, b0 + d0).value
    r2 = math.sqrt(2)
    expected = p0 * np.cosh(r2 * tau) + d0 / r2 * np.sinh(r2 * tau)
    np.testing.assert_allclose(flow["p"], expected, rtol=1e-9, atol=1e-9)
    integral = p0 / r2 * np.sinh(r2 * tau) + d0 / 2 * (np.cosh(r2 * tau) - 1)
    np.testing.assert_allclose(flow["beta0"], b0 - integral, rtol=1e-9, atol=1e-9)


def _rk4(p0, b0, b1, tau_max, dt=1e-3):
    y = np.array([b0, b1, p0], dtype=float)
    f = lambda y: np.array([-y[2], y[2], y[1] - y[0]])  # noqa: E731
    for _ in range(round(tau_max / dt)):
        k1 = f(y)
        k2 = f(y + dt / 2 * k1)
        k3 = f(y + dt / 2 * k2)
        k4 = f(y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


@settings(max_examples=10)
@given(st.floats(0.01, 0.99), st.floats(-20, 20))
def test_closed_form_matches_rk4(p0, d0):
    """T3: RK4 integration of the ODE agrees with the closed form to 1e-6 relative at tau = 2."""
    b0, b1, p = _rk4(p0, 0.0, d0, 2.0)
    flow = theory.snell.toy_classifier_trajectory(2.0, p0, 0.0, d0).value
    scale = max(abs(flow["p"]), abs(flow["beta0"]), abs(flow["beta1"]), 1.0)
    assert abs(p - flow["p"]) / scale < 1e-6
    assert abs(b0 - flow["beta0"]) / scale < 1e-6 and abs(b1 - flow["beta1"]) / scale < 1e-6


def test_toy_predictions():
    assert theory.snell.toy_classifier_tau_star().value == pytest.approx(
        math.acosh(2) / math.sqrt(2), rel=1e-10)
    assert theory.snell.toy_classifier_first_crossing().value == pytest.approx(0.02501, abs=1e-5)
    assert theory.snell.toy_classifier_first_crossing(0.5, 0.0, 1.0).value == math.inf
    flow = theory.snell.toy_classifier_trajectory(np.array([0.0, 1e-3]), 0.5, 0.0, 0.0).value
    assert flow["p"][1] >= 0.5  # uniform start: p'(0) = 0 and p never drops


# -- stage 2 (§4.4, §4.5b) ---------------------------------------------------------------------
@given(st.integers(2, 8), st.floats(0.1, 5.0), st.data())
def test_onset_rate_is_k_over_l(length, k, data):
    vocab = data.draw(st.integers(length, 2 * length))
    x = np.array(data.draw(st.permutations(range(vocab)))[:length])
    t = data.draw(st.integers(0, length - 1))
    v = theory.snell.stage2_logit_velocity(k * np.eye(vocab), x, int(x[t])).value
    others = np.delete(v, t)
    np.testing.assert_allclose(v[t] - others, theory.snell.stage2_onset_rate(k, length).value)
    assert abs(v.sum()) < 1e-12


@given(st.integers(2, 6), st.integers(0, 2**16))
def test_stage2_velocity_is_minus_the_logit_gradient(length, seed):
    """da/dtau = -dL/da at uniform attention, checked against torch autograd."""
    rng = np.random.default_rng(seed)
    vocab = length + 2
    b = rng.normal(size=(vocab, vocab))
    x = rng.permutation(vocab)[:length]
    target = int(x[rng.integers(length)])
    a = torch.zeros(length, dtype=torch.float64, requires_grad=True)
    z = torch.softmax(a, 0) @ torch.from_numpy(b[x])
    loss = -torch.log_softmax(z, 0)[target]
    loss.backward()
    v = theory.snell.stage2_logit_velocity(b, x, target).value
    np.testing.assert_allclose(v, -a.grad.numpy(), atol=1e-12)


# -- free-attention toy (§4.6) -----------------------------------------------------------------
def _perm_batch(rng, n, vocab, length):
    return np.stack([rng.permutation(vocab)[:length] for _ in range(n)])


@given(st.integers(2, 7), st.integers(0, 2**16), st.booleans())
def test_free_attention_gradients_match_autograd(length, seed, subset):
    rng = np.random.default_rng(seed)
    vocab = length + 3 if subset else length
    b, q = rng.normal(size=(vocab, vocab)), rng.normal(size=(length, length))
    x = _perm_batch(rng, 5, vocab, length)
    gb, gq = theory.snell.free_attention_gradients(b, q, x)
    spec = RunSpec(task=CopyTask("subset", vocab, length), model=FreeAttentionToyConfig(),
                   dtype="float64")
    model = build_model(spec)
    with torch.no_grad():
        model.ktiw.copy_(torch.from_numpy(b))
        model.logits.copy_(torch.from_numpy(q))
    eos = np.full((5, 1), vocab)
    loss = model.loss({"source": torch.from_numpy(np.hstack([x, eos]))})
    loss.backward()
    assert loss.item() == pytest.approx(theory.snell.free_attention_loss(b, q, x), rel=1e-12)
    np.testing.assert_allclose(gb, model.ktiw.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(gq, model.logits.grad.numpy(), atol=1e-12)


@given(st.integers(2, 12), st.integers(0, 2**16))
def test_permutation_saddle_and_row_invariance(length, seed):
    """T5: at B = Q = 0 the gradient vanishes on permutations; from a row-constant B with Q = 0
    SGD keeps B row-constant and Q at 0."""
    rng = np.random.default_rng(seed)
    x = _perm_batch(rng, 8, length, length)
    gb, gq = theory.snell.free_attention_gradients(np.zeros((length,) * 2),
                                                   np.zeros((length,) * 2), x)
    assert np.abs(gb).max() < 1e-15 and np.abs(gq).max() == 0.0
    b = np.tile(rng.normal(size=length), (length, 1))  # row-constant
    q = np.zeros((length, length))
    for _ in range(20):
        gb, gq = theory.snell.free_attention_gradients(b, q, _perm_batch(rng, 8, length, length))
        b, q = b - 0.5 * gb, q - 0.5 * gq
    assert np.abs(b - b[0]).max() < 1e-10 and np.abs(q).max() < 1e-10
    assert theory.snell.permutation_saddle_loss(length).value == pytest.approx(math.log(length))


def test_subset_breaks_the_saddle():
    rng = np.random.default_rng(0)
    x = _perm_batch(rng, 16, 9, 6)
    gb, _ = theory.snell.free_attention_gradients(np.zeros((9, 9)), np.zeros((6, 6)), x)
    assert np.abs(gb).max() > 1e-3
