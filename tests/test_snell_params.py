"""The typed parameters of the Snell claims outside §5: ``verify --param`` refuses, before
anything runs, the values a claim could only fail on while it computes (one line naming the
field), accepts the profiles' own values, and the claims that train name their groups."""

from __future__ import annotations

import pytest

from attnverify.compare.claims.snell import (
    InitScaleBreaksSymmetry,
    KappaClosedForm,
    KappaPredictsLearningSpeed,
    LowLossWithoutAlignedAttention,
    PermutationSaddle,
    Stage2OnsetRate,
    SubsetLearnedEverySeed,
    ToyClassifierClosedForm,
    UniformAttentionAtInit,
    UniformProbeAgreesWithAttention,
)
from attnverify.compare.evaluation.verify import checked_point


@pytest.mark.parametrize(("cls", "values", "match"), [
    (KappaClosedForm, {"points": [["subset", 10, 20]]}, "points must be"),
    (KappaClosedForm, {"points": [["iid", 1, 3]]}, "points must be"),
    (KappaClosedForm, {"n_sequences": 1}, "n_sequences must be an integer >= 2"),
    (UniformAttentionAtInit, {"configs": [[32, "permutation", 15, 10]]}, "configs must be"),
    (UniformAttentionAtInit, {"configs": [[32, "subset", 15, 10], [32, "subset", 15, 10]]},
     "configs must be distinct"),
    (ToyClassifierClosedForm, {"lr": 0}, "lr must be a number > 0"),
    (ToyClassifierClosedForm, {"tau_max": {"uniform": 1.0}}, "tau_max must give each start"),
    (ToyClassifierClosedForm, {"tau_max": {"uniform": 1.0, "adversarial": 1e-4}},
     "tau_max must give each start"),
    (PermutationSaddle, {"subset_V": 8}, "subset_V must be greater than L"),
    (PermutationSaddle, {"lr": -1.0}, "lr must be a number > 0"),
    (InitScaleBreaksSymmetry, {"sigmas": [0.01, 0]}, "sigmas must be init stds > 0"),
    (InitScaleBreaksSymmetry, {"subset_V": 8}, "subset_V must be greater than L"),
    (LowLossWithoutAlignedAttention, {"init_std": -0.1}, "init_std must be a number >= 0"),
    (LowLossWithoutAlignedAttention, {"L": 1}, "L must be an integer >= 2"),
    (Stage2OnsetRate, {"Ks": [1.0, 0]}, "Ks must be non-zero numbers"),
    (KappaPredictsLearningSpeed, {"vocab": [16, 16, 32]}, "vocab must be distinct"),
    (KappaPredictsLearningSpeed, {"vocab": [8, 32]}, "vocab must be distinct .* V >= L"),
])
def test_a_value_the_claim_cannot_compute_is_refused_up_front(cls, values, match):
    with pytest.raises(ValueError, match=match):
        checked_point(cls(), "smoke", values)


@pytest.mark.parametrize("cls", [KappaClosedForm, UniformAttentionAtInit, ToyClassifierClosedForm,
                                 PermutationSaddle, InitScaleBreaksSymmetry, Stage2OnsetRate,
                                 KappaPredictsLearningSpeed, LowLossWithoutAlignedAttention])
def test_the_profiles_own_values_are_accepted(cls):
    claim = cls()
    for profile in ("smoke", "quick", "full"):
        values = {k: list(v) if isinstance(v, tuple) else v
                  for k, v in claim.params(profile).items()}
        checked_point(claim, profile, values)


def test_groups_are_named_by_what_they_hold():
    at_init = UniformAttentionAtInit()
    assert list(at_init.specs(at_init.params("quick"))) == ["H64_subset_V30_L20",
                                                            "H256_permutation_V40_L40"]
    probe = UniformProbeAgreesWithAttention()
    pairs = probe.specs(probe.params("smoke"))
    assert list(pairs) == ["subset_300", "subset_301", "permutation_300", "permutation_301"]
    assert all(normal.seed == uniform.seed and uniform.model.attention == "uniform"
               for normal, uniform in pairs.values())
    toy = ToyClassifierClosedForm()
    assert list(toy.specs(toy.params("smoke"))) == ["uniform", "adversarial"]
    speed = KappaPredictsLearningSpeed()
    assert list(speed.specs(speed.params("smoke"))) == ["V16", "V18", "V32", "V128"]
    subset = SubsetLearnedEverySeed()
    assert list(subset.specs(subset.params("quick"))) == ["look_1"]
