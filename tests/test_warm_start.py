"""``RunSpec.warm_start``: a run can start from another run's trained weights. The key carries
the warm run, a spec without one keeps its form, the weights are really carried over (the
warm-started run's step-0 evaluation is the warm run's last), and the result records the warm
run's last metrics."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.empirics import CopyTask, RunSpec, Seq2SeqConfig, train


def spec(distribution="permutation", L=6, steps=30, seed=0, **kw) -> RunSpec:
    return RunSpec(task=CopyTask(distribution, 6, L), model=Seq2SeqConfig(hidden=12),
                   steps=steps, batch_size=16, eval_every=10, eval_size=16, seed=seed, **kw)


WARM = spec("subset", L=4, steps=40)


def test_warm_start_enters_the_key_and_round_trips():
    plain, warm = spec(), spec(warm_start=WARM)
    assert "warm_start" not in plain.to_dict()
    assert warm.key() != plain.key()
    assert spec(warm_start=spec("subset", L=4, steps=41)).key() != warm.key()
    assert RunSpec.from_dict(warm.to_dict()) == warm
    assert warm.cost_estimate() > plain.cost_estimate()
    assert "warm-started from" in warm.label()


def test_a_warm_run_of_another_model_is_refused():
    other = RunSpec(**{**vars(WARM), "model": Seq2SeqConfig(hidden=8)})
    with pytest.raises(ValueError, match="warm_start must be a run of the same model"):
        spec(warm_start=other)


def test_the_weights_carry_over():
    warm_alone = train(spec("permutation", L=6, steps=0, seed=0,
                            warm_start=spec("subset", L=6, steps=40)))
    # the same warm-up, evaluated on its own last step, on the same evaluation batch
    reference = train(spec("subset", L=6, steps=40, seed=0))
    start = warm_alone.metric("loss")[0]
    assert start == pytest.approx(reference.metric("loss")[-1], rel=1e-6)
    assert warm_alone.final["warm_start_loss"][0] == pytest.approx(
        reference.metric("loss")[-1], rel=1e-6)
    cold = train(spec("permutation", L=6, steps=0, seed=0))
    assert not np.isclose(cold.metric("loss")[0], start)
