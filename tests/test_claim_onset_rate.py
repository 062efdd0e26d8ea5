"""snell.stage2_onset_rate: the derived logit velocity agrees with the toy's autograd gradient,
and the check fails on a wrong derivation (negative controls)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnverify import theory
from attnverify.compare import Verdict
from attnverify.compare.claims.snell import Stage2OnsetRate
from attnverify.compare.claims.snell import stage2_onset_rate as module
from attnverify.theory.prediction import Prediction

CLAIM = Stage2OnsetRate()
PARAMS = CLAIM.params("smoke")


def test_confirmed_at_smoke():
    a = CLAIM.assess(PARAMS, [])
    assert a.verdict is Verdict.CONFIRMED, a.explanation
    assert a.empirical.value <= module.RTOL


def test_velocity_sums_to_zero_per_position():
    """Softmax logits move by alpha (g - gbar): the velocities of one row sum to zero."""
    words = torch.tensor([[0, 3, 1], [2, 0, 4]])
    ktiw = np.random.default_rng(0).normal(size=(5, 5))
    np.testing.assert_allclose(module.toy_velocity(ktiw, words).sum(axis=1), 0, atol=1e-15)


def test_wrong_velocity_is_refuted(monkeypatch):
    """Without the -gbar term the derived velocity disagrees with autograd."""
    original = theory.snell.stage2_logit_velocity

    def without_mean(ktiw, source, target):
        p = original(ktiw, source, target)
        b, x = np.asarray(ktiw), np.asarray(source)
        rows = b[x]
        logits = rows.mean(axis=0)
        q = np.exp(logits - logits.max())
        q /= q.sum()
        return Prediction(value=(rows[:, target] - rows @ q) / x.size, equation=p.equation,
                          source=p.source, derived=True)

    monkeypatch.setattr(theory.snell, "stage2_logit_velocity", without_mean)
    a = CLAIM.assess(PARAMS, [])
    assert a.verdict is Verdict.REFUTED


def test_wrong_onset_rate_is_refuted(monkeypatch):
    original = theory.snell.stage2_onset_rate
    monkeypatch.setattr(theory.snell, "stage2_onset_rate",
                        lambda k, length: original(k, length + 1))
    assert CLAIM.assess(PARAMS, []).verdict is Verdict.REFUTED


def test_length_one_is_rejected():
    with pytest.raises(ValueError, match="L must be >= 2"):
        CLAIM.check_params(PARAMS | {"L": 1})
