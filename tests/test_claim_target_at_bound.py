"""``musat.target_appears_at_bound`` decides correctly on constructed lens readings (it can
fail), and the linear lens reads what a stream holds linearly and nothing else."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnverify.compare import Verdict
from attnverify.compare.claims.musat import TargetAppearsAtBound
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult
from attnverify.empirics.residual_lens import fit_affine, lens_accuracy
from attnverify.empirics.retrieval import RetrievalTask
from attnverify.empirics.retrieval_transformer import RetrievalTransformerConfig


def lens_run(spec, query_acc, lens_query):
    """A finished run with the given final query accuracy and lens readings of the query."""
    layers = len(lens_query) - 1
    return RunResult(spec=spec, status="ok", eval_steps=np.array([0, 100]),
                     metrics={"query_acc": np.array([0.0, query_acc])},
                     train_loss=np.zeros(1),
                     final={"lens_query": np.asarray(lens_query, float),
                            "lens_depth": np.zeros((layers + 1, 3))})


def assess(lens_rows, accs=None, **overrides):
    claim = TargetAppearsAtBound()
    params = {**claim.params("quick"), **overrides}   # D = 2, 4 layers: layer 1 is below
    specs = claim.specs(params)
    accs = accs or [1.0] * len(specs)
    runs = [lens_run(s, a, row) for s, a, row in zip(specs, accs, lens_rows, strict=True)]
    return claim.assess(params, runs)


AT_BOUND = [0.02, 0.02, 0.6, 1.0, 1.0]


@pytest.mark.parametrize(("rows", "accs", "verdict", "reason"), [
    ([AT_BOUND] * 3, None, Verdict.CONFIRMED, Reason.DECIDED),
    ([AT_BOUND, AT_BOUND, [0.02, 0.9, 1.0, 1.0, 1.0]], None, Verdict.REFUTED, Reason.DECIDED),
    ([[0.02, 0.33, 1.0, 1.0, 1.0]] * 3, None, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    # only the learned seeds count: the seed with the answer at layer 1 did not learn
    ([AT_BOUND, AT_BOUND, [0.02, 0.9, 1.0, 1.0, 1.0]], [1.0, 1.0, 0.5], Verdict.CONFIRMED,
     Reason.DECIDED),
    ([AT_BOUND] * 3, [1.0, 0.3, 0.3], Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
])
def test_lens_rule(rows, accs, verdict, reason):
    a = assess(rows, accs)
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation


def test_no_layer_below_the_bound_is_not_testable():
    claim = TargetAppearsAtBound()
    params = {**claim.params("quick"), "deep": (1, 3)}     # min_layers(1) = 1
    runs = [lens_run(s, 1.0, [0.0, 1.0, 1.0, 1.0]) for s in claim.specs(params)]
    a = claim.assess(params, runs)
    assert a.reason is Reason.NOT_TESTABLE and "no layer between" in a.explanation


def test_the_explanation_names_the_first_layer_that_reads_the_answer():
    a = assess([AT_BOUND] * 3)
    assert "seed 100: 3" in a.explanation and a.empirical.value == pytest.approx(0.02)


def test_fit_affine_recovers_an_exact_map():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(200, 5, generator=gen)
    W, b = torch.randn(5, 3, generator=gen), torch.randn(3, generator=gen)
    W_hat, b_hat = fit_affine(x, x @ W + b)
    assert torch.allclose(W_hat.float(), W, atol=1e-3) and torch.allclose(b_hat.float(), b,
                                                                          atol=1e-3)


def test_the_lens_reads_a_linear_copy_and_not_noise():
    gen = torch.Generator().manual_seed(1)
    B, T, d, V = 400, 3, 8, 8
    targets = torch.randint(0, V, (B, T), generator=gen)
    final = torch.nn.functional.one_hot(targets, d).float()        # the answer, readable
    mixed = final @ torch.randn(d, d, generator=gen)                # an invertible mix of it
    noise = torch.randn(B, T, d, generator=gen)                     # nothing about it
    every = torch.ones(B, T, dtype=torch.bool)
    accs = lens_accuracy([noise, mixed, final], lambda s: s, targets, every, {"all": every})
    assert accs["all"][1] == accs["all"][2] == 1.0
    assert accs["all"][0] < 0.3                                     # chance 1/8


def test_after_the_last_layer_the_lens_is_the_model():
    task = RetrievalTask(D=2, K=2, vocab=16)
    model = RetrievalTransformerConfig(layers=2, heads=2, d_model=16).build(task)
    batch = task.sample_eval(64, torch.Generator().manual_seed(0))
    with torch.no_grad():
        lens = model.lens(batch)
        logits, _ = model(batch["tokens"])
    held_out = logits[32:, -1].argmax(-1) == batch["eval_targets"][32:, -1]
    assert lens["lens_query"][-1] == pytest.approx(held_out.double().mean().item())
    assert lens["lens_depth"].shape == (3, 3)
