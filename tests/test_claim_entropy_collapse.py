"""bao.small_variance_avoids_entropy_collapse: the prescribed initial spectrum, the run keys of
models without it, and the decision rule on constructed results."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from attnverify.compare import Verdict
from attnverify.compare.claims.bao import SmallVarianceAvoidsEntropyCollapse
from attnverify.compare.claims.bao.small_variance_avoids_entropy_collapse import eigen_mean
from attnverify.compare.protocol import Reason
from attnverify.empirics import AttentionLMConfig, RandomWalkLMTask, RunResult
from attnverify.empirics.probes.qk_spectrum import eigen_stats
from attnverify.empirics.train import train

CLAIM = SmallVarianceAvoidsEntropyCollapse()
PARAMS = CLAIM.params("quick")


def test_prescribed_spectrum_and_common_random_numbers():
    task = RandomWalkLMTask(vocab=16, T=8)
    ws = []
    for std in (0.1, 4.0):
        torch.manual_seed(5)
        model = AttentionLMConfig(d=16, ffn=16, init_qk_mean=0.5, init_qk_std=std).build(task)
        w = model.qk_matrix().detach().double()
        stats = eigen_stats(w)
        assert stats.mean == pytest.approx(0.5, abs=1e-6)
        assert stats.var_sym == pytest.approx(std**2, rel=1e-5)
        ws.append(w)
    # same seed: the same eigenvectors and noise, only the spread differs
    assert torch.allclose((ws[1] - 0.5 * torch.eye(16)) / 4.0, (ws[0] - 0.5 * torch.eye(16)) / 0.1,
                          atol=1e-4)


def test_unset_spectrum_keeps_the_form_and_default_init():
    plain = AttentionLMConfig(d=16, ffn=16)
    assert "init_qk_mean" not in plain.to_dict()
    assert AttentionLMConfig.from_dict(plain.to_dict()) == plain
    set_ = AttentionLMConfig(d=16, ffn=16, init_qk_mean=0.5, init_qk_std=1.0)
    assert AttentionLMConfig.from_dict(set_.to_dict()) == set_
    with pytest.raises(ValueError, match="init_qk_std"):
        AttentionLMConfig(d=16, init_qk_mean=0.5).validate()


def run(spec, entropy: tuple[float, float], loss: tuple[float, float]) -> RunResult:
    """A run whose attention entropy goes from entropy[0] to entropy[1] and loss likewise."""
    return RunResult(spec=spec, status="ok", eval_steps=np.array([0, 200, 400]),
                     metrics={"attn_entropy_norm": np.array([entropy[0], entropy[1],
                                                             entropy[1]]),
                              "loss": np.array([3.9, loss[0], loss[1]])},
                     train_loss=np.array([3.9, loss[1]]))


def results(small, large, diverged=()):
    specs = CLAIM.specs(PARAMS)
    out = ([run(s, *small(i)) for i, s in enumerate(specs["small_std"])]
           + [run(s, *large(i)) for i, s in enumerate(specs["large_std"])])
    for i in diverged:
        out[i] = replace(out[i], status="diverged")
    return out


SMALL = lambda i: ((0.6, 0.75 + 0.01 * i), (1.0, 0.8))        # noqa: E731
COLLAPSED = lambda i: ((0.2, 0.1 + 0.01 * i), (1.3, 1.0))     # noqa: E731
ALTERNATE = lambda i: 0.05 if i % 2 else -0.05                 # noqa: E731


@pytest.mark.parametrize(("small", "large", "verdict", "reason"), [
    (SMALL, COLLAPSED, Verdict.CONFIRMED, Reason.DECIDED),
    # the entropy fares better, but the loss area is larger with the small variance
    (SMALL, lambda i: ((0.2, 0.1), (0.9, 0.7)), Verdict.REFUTED, Reason.DECIDED),
    # the large variance recovers: its entropy rises more over training
    (SMALL, lambda i: ((0.2, 0.9 + 0.01 * i), (1.3, 1.0)), Verdict.REFUTED, Reason.DECIDED),
    # the same entropy change and loss up to noise of both signs: neither way
    (SMALL, lambda i: ((0.2, 0.35 + 0.01 * i + ALTERNATE(i)), (1.0 + 2 * ALTERNATE(i), 0.8)),
     Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    # the entropy half alone is significant: not confirmed
    (SMALL, lambda i: ((0.2, 0.1 + 0.01 * i), (1.0 + 2 * ALTERNATE(i), 0.8)),
     Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    # the large variance does not start lower: the spectra set up no contrast
    (SMALL, lambda i: ((0.7, 0.1), (1.3, 1.0)), Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
])
def test_rule(small, large, verdict, reason):
    a = CLAIM.assess(PARAMS, results(small, large))
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation
    assert (a.p_value is None) == (reason is Reason.NOT_TESTABLE)


def test_the_entropy_endpoint_is_the_change_not_the_final_value():
    """Both arms end at the same entropy; the small variance started higher, so its entropy
    fell more: the entropy half goes the other way (refuted), whatever the final values."""
    a = CLAIM.assess(PARAMS, results(lambda i: ((0.6, 0.3 + 0.01 * i), (1.0, 0.8)),
                                     lambda i: ((0.2, 0.3 + 0.01 * i), (1.3, 1.0))))
    assert a.verdict is Verdict.REFUTED and "entropy fares worse" in a.explanation


def test_diverged_pairs_are_dropped_and_counted():
    n = PARAMS["seeds"]
    a = CLAIM.assess(PARAMS, results(SMALL, COLLAPSED, diverged=(0, n + 1)))
    assert a.details["dropped_pairs"] == 2 and a.n_seeds == 2 * (n - 2)
    assert a.verdict is Verdict.CONFIRMED
    every = CLAIM.assess(PARAMS, results(SMALL, COLLAPSED, diverged=range(n)))
    assert every.reason is Reason.NOT_TESTABLE and every.empirical.value is None


def test_too_few_pairs_is_not_testable():
    params = PARAMS | {"seeds": 5}
    specs = CLAIM.specs(params)
    runs = ([run(s, *SMALL(0)) for s in specs["small_std"]]
            + [run(s, *COLLAPSED(0)) for s in specs["large_std"]])
    a = CLAIM.assess(params, runs)
    assert a.reason is Reason.NOT_TESTABLE and "fewer than 6" in a.explanation


def test_decision_seeds_are_fresh():
    seeds = {s.seed for s in CLAIM.checked_specs(PARAMS)}
    assert seeds == set(range(840, 850))
    with pytest.raises(ValueError, match="small_std < large_std"):
        CLAIM.check_params(PARAMS | {"small_std": 4.0, "large_std": 0.1})


def test_eigen_mean_keeps_mean_times_sqrt_d():
    assert eigen_mean(32) == 0.5 and eigen_mean(128) == 0.25
    assert CLAIM.params("full")["mean"] == 0.25 and PARAMS["mean"] == 0.5


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_spectra_set_up_the_contrast_at_step_0(profile):
    """The precondition at each profile's width, on calibration seed 700 (nothing trained):
    the large variance starts attention collapsed, the small one does not."""
    params = CLAIM.params(profile)
    specs = CLAIM.specs(params)
    start = {}
    for arm, spec in (("small", specs["small_std"][0]), ("large", specs["large_std"][0])):
        spec = replace(spec, seed=700, steps=1, eval_every=1)
        start[arm] = float(train(spec).metric("attn_entropy_norm")[0])
    assert start["large"] < 0.3 < 0.5 < start["small"]
