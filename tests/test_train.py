"""The training loop: determinism, divergence as a result, and the copying model of Snell et al."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch import nn

from attnverify.empirics import CopyTask, ModelConfig, RunSpec, Seq2SeqConfig, build_model, train


def small_spec(**overrides) -> RunSpec:
    base = {"task": CopyTask("subset", 12, 8), "model": Seq2SeqConfig(hidden=16), "steps": 12,
            "batch_size": 16, "eval_every": 4, "eval_size": 16, "seed": 0,
            "attention_snapshots": (0, 12)}
    return RunSpec(**{**base, **overrides})


def test_same_spec_twice_gives_identical_arrays():
    a, b = train(small_spec()), train(small_spec())
    assert a.arrays().keys() == b.arrays().keys()
    for name, values in a.arrays().items():
        np.testing.assert_array_equal(values, b.arrays()[name], err_msg=name)


def test_different_seed_gives_different_runs():
    a, b = train(small_spec()), train(small_spec(seed=1))
    assert not np.array_equal(a.train_loss, b.train_loss)


def test_history_layout():
    r = train(small_spec())
    np.testing.assert_array_equal(r.eval_steps, [0, 4, 8, 12])
    assert r.train_loss.shape == (12,) and np.all(np.isfinite(r.train_loss))
    assert all(v.shape == (4,) for v in r.metrics.values())
    assert set(r.attention) == {0, 12}
    assert r.attention[0].shape == (16, 1, 9, 9)  # [batch, head, query_pos, key_pos]
    np.testing.assert_allclose(r.attention[0].sum(-1), 1.0, rtol=1e-5)
    assert r.status == "ok" and r.wall_time_s > 0 and "torch" in r.versions


def test_training_reduces_the_loss():
    r = train(small_spec(steps=60, eval_every=60))
    assert r.metric("loss")[-1] < r.metric("loss")[0] - 0.1


def test_initial_loss_is_near_log_vocabulary():
    """At init the output is near uniform over the V + 2 tokens: loss ~ log(V + 2)."""
    r = train(small_spec(steps=0, attention_snapshots=(0,)))
    assert abs(r.metric("loss")[0] - math.log(14)) < 0.1


def test_uniform_attention_mode_is_exactly_uniform_and_attention_gets_no_gradient():
    spec = small_spec(model=Seq2SeqConfig(hidden=16, attention="uniform"))
    r = train(spec)
    assert np.all(r.attention[12] == pytest.approx(1 / 9, abs=1e-7))
    model = build_model(spec)
    batch = spec.task.sample(4, torch.Generator().manual_seed(0))
    model.loss(batch).backward()
    assert model.attn_lin.weight.grad is None
    assert model.embedding.weight.grad is not None


def test_init_does_not_touch_the_global_rng():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_model(small_spec())
    assert torch.equal(torch.rand(3), expected)


@dataclass(frozen=True)
class NanAfter(ModelConfig):
    """A test model whose loss becomes NaN at a given step."""

    kind = "test_nan_after"
    code_version = 1
    at_step: int = 3

    def build(self, task):
        return _NanModel(self.at_step)


class _NanModel(nn.Module):
    def __init__(self, at_step: int) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(2))
        self.at_step = at_step
        self.calls = 0

    def loss(self, batch):
        self.calls += 1
        loss = (self.w**2).sum()
        return loss * float("nan") if self.calls >= self.at_step else loss

    def metrics(self, batch):
        return {"loss": float((self.w**2).sum())}

    def attention(self, batch):
        return torch.zeros(1, 1, 1, 1)


def test_non_finite_loss_marks_the_run_diverged():
    r = train(small_spec(model=NanAfter(at_step=6), optimizer=__import__("empirics").SGD(0.1),
                         attention_snapshots=()))
    assert r.status == "diverged" and r.diverged
    assert r.train_loss.shape == (6,) and np.isnan(r.train_loss[-1])
    np.testing.assert_array_equal(r.eval_steps, [0, 4])


def test_stop_when_ends_the_run_at_the_first_evaluation_over_the_threshold():
    """A stopped run is the full run's prefix up to the first evaluation whose metric exceeds
    the threshold (strictly), and trains no further."""
    full = train(small_spec(steps=24, attention_snapshots=()))
    acc = full.metric("acc")
    threshold = float((acc[1] + acc[2]) / 2)  # crossed between the second and third evaluation
    assert acc[1] < threshold < acc.max()
    first = int(np.flatnonzero(acc > threshold)[0])
    stopped = train(small_spec(steps=24, attention_snapshots=(), stop_when=("acc", threshold)))
    assert stopped.status == "ok"
    step = int(full.eval_steps[first])
    np.testing.assert_array_equal(stopped.eval_steps, full.eval_steps[:first + 1])
    np.testing.assert_array_equal(stopped.train_loss, full.train_loss[:step])
    for name, values in full.metrics.items():
        np.testing.assert_array_equal(stopped.metric(name), values[:first + 1], err_msg=name)
    # at exactly the reached value (not above it) the run goes on to the end
    exact = train(small_spec(steps=24, attention_snapshots=(),
                             stop_when=("acc", float(acc.max()))))
    np.testing.assert_array_equal(exact.eval_steps, full.eval_steps)


def test_stop_when_met_at_initialisation_trains_nothing():
    r = train(small_spec(stop_when=("acc", -1.0)))
    assert r.status == "ok"
    np.testing.assert_array_equal(r.eval_steps, [0])
    assert r.train_loss.shape == (0,) and set(r.attention) == {0}  # no snapshot at 12


def test_stop_when_names_a_metric_the_model_reports():
    with pytest.raises(KeyError, match=r"'accuracy'.*available: .*acc"):
        train(small_spec(stop_when=("accuracy", 0.5)))
