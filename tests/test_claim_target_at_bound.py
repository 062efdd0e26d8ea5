"""``musat.target_appears_at_bound`` decides correctly on constructed lens readings (it can
fail), and the linear lens reads what a stream holds linearly and nothing else."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnverify.compare import Verdict
from attnverify.compare.claims.musat import TargetAppearsAtBound
from attnverify.compare.claims.musat.common import DECISION_SEEDS
from attnverify.compare.claims.musat.lens_common import binomial_sides
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult
from attnverify.empirics.models.retrieval_transformer import RetrievalTransformerConfig
from attnverify.empirics.probes.residual_lens import fit_affine, lens_accuracy
from attnverify.empirics.tasks.retrieval import RetrievalTask


def lens_run(spec, query_acc, lens_query, sees=True, one_hop_only=False, second=False):
    """A finished run (D = 5, 4 layers) with the given final query accuracy and lens readings
    of the query; with ``sees``, the lens reads the first tokens one link per layer resolves
    (depth <= l after layer l); with ``one_hop_only``, only depth-1 first tokens (their root
    is their statement's partner, one attention hop away); with ``second``, also the second
    tokens one link per layer resolves (depth <= l - 1 after layer l)."""
    layers = len(lens_query) - 1
    first = np.full((layers + 1, 6), 0.02)
    second_tokens = np.full((layers + 1, 6), 0.02)
    for layer in range(1, layers + 1):
        if sees:
            first[layer, 1:(2 if one_hop_only else layer + 1)] = 1.0
        if second:
            second_tokens[layer, :layer] = 1.0
    return RunResult(spec=spec, status="ok", eval_steps=np.array([0, 100]),
                     metrics={"query_acc": np.array([0.0, query_acc])},
                     train_loss=np.zeros(1),
                     final={"lens_query": np.asarray(lens_query, float), "lens_first": first,
                            "lens_second": second_tokens,
                            "lens_depth": np.full((layers + 1, 6), 0.02)})


def assess(lens_rows, accs=None, sees=True, one_hop_only=False, second=False):
    claim = TargetAppearsAtBound()
    params = claim.params("full")          # the control cell: D = 5 (bound 3), 4 layers
    specs = claim.checked_specs(params)
    accs = accs or [1.0] * len(specs)
    runs = [lens_run(s, a, row, sees, one_hop_only, second)
            for s, a, row in zip(specs, accs, lens_rows, strict=True)]
    return claim.assess(params, runs)


AT_BOUND = [0.02, 0.02, 0.02, 1.0, 1.0]   # layer 2 is the one tested (layer 1 cannot hold it)
EARLY = [0.02, 0.02, 0.9, 1.0, 1.0]


@pytest.mark.parametrize(("rows", "accs", "verdict", "reason"), [
    ([AT_BOUND] * 5, None, Verdict.CONFIRMED, Reason.DECIDED),
    ([AT_BOUND] * 4 + [EARLY], None, Verdict.REFUTED, Reason.DECIDED),
    ([[0.02, 0.02, 0.24, 1.0, 1.0]] * 5, None, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    # only the learned seeds count: the seed with the answer at layer 2 did not learn
    ([AT_BOUND] * 4 + [EARLY], [1.0] * 4 + [0.5], Verdict.CONFIRMED, Reason.DECIDED),
    ([AT_BOUND] * 5, [1.0] + [0.3] * 4, Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
])
def test_lens_rule(rows, accs, verdict, reason):
    a = assess(rows, accs)
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation


def test_a_query_lens_that_reads_the_answer_only_after_the_last_layer_cannot_confirm():
    """After the last layer the lens is the model itself; a query map that never reads the
    answer before it reads below 1/K whatever the stream holds."""
    a = assess([[0.02, 0.02, 0.02, 0.02, 1.0]] * 5)
    assert a.reason is Reason.NOT_TESTABLE and "query's lens" in a.explanation


def test_a_seed_whose_query_lens_cannot_be_shown_to_read_is_left_out():
    late = [0.02, 0.02, 0.02, 0.02, 1.0]
    a = assess([AT_BOUND] * 3 + [late] * 2)
    assert a.verdict is Verdict.CONFIRMED, a.explanation
    assert a.details["left_out"] == [DECISION_SEEDS + 3, DECISION_SEEDS + 4]
    assert "Left out of the confirmation" in a.explanation
    # a left-out seed still refutes where it reads the answer early
    assert assess([AT_BOUND] * 3 + [late, EARLY]).verdict is Verdict.REFUTED
    # one readable seed is not enough
    assert assess([AT_BOUND] + [late] * 4).reason is Reason.NOT_TESTABLE
    # a left-out seed that reads the answer at >= 1/K below the bound, though not enough to
    # refute, blocks the confirmation
    half = [0.02, 0.02, 0.27, 0.85, 1.0]
    a = assess([AT_BOUND] * 2 + [half] * 3)
    assert (a.verdict, a.reason) == (Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED), a.explanation
    assert "read the answer at >= 1/K" in a.explanation and "no confirmation" in a.explanation


@pytest.mark.parametrize("layer", [0, 1])
def test_a_lens_that_reads_the_answer_where_nothing_can_hold_it_is_a_leak(layer):
    row = [0.02] * 5
    row[layer], row[3], row[4] = 0.9, 1.0, 1.0
    a = assess([row] + [AT_BOUND] * 4)
    assert a.reason is Reason.NOT_TESTABLE and "leaks" in a.explanation
    # one reading a little above 1/K, not significant over the 10 early pairs, is no leak
    assert assess([[0.02, 0.28, 0.02, 1.0, 1.0]] + [AT_BOUND] * 4).verdict is Verdict.CONFIRMED


@pytest.mark.parametrize(("layer2", "verdict"), [
    (0.22, Verdict.INCONCLUSIVE),    # below 1/K, but not significantly on 512 examples
    (0.20, Verdict.CONFIRMED),
    (0.32, Verdict.REFUTED),         # above 1/K even after Bonferroni over 5 pairs
])
def test_readings_near_the_limit(layer2, verdict):
    rows = [AT_BOUND] * 4 + [[0.02, 0.02, layer2, 1.0, 1.0]]
    a = assess(rows)
    assert a.verdict is verdict, a.explanation
    if verdict is Verdict.REFUTED:      # the p-value reported is the refutation's
        assert a.p_value == pytest.approx(min(t["p_above"] for t in a.details["tests"]) * 5)


def test_the_leak_test_counts_every_early_pair_read_or_not():
    """A pair without a reading still counts in the factor of the leak test (seeds x layers 0
    and 1), as in the refutation's (seeds x tested layers): missing readings lend no alpha."""
    early = 0.295                           # above 1/K at p between 0.025/10 and 0.025/2
    p_one = binomial_sides(early, 512, 0.25)[1]
    assert 0.025 / 10 < p_one < 0.025 / 2
    rows = [[0.02, early, 0.02, 1.0, 1.0]] + [[np.nan, np.nan, 0.02, 1.0, 1.0]] * 4
    a = assess(rows)
    assert "leaks" not in a.explanation, a.explanation


def test_the_refutation_counts_every_tested_pair_read_or_not():
    mid = 0.295                                     # above 1/K at p between 0.025/5 and 0.025
    p_mid = binomial_sides(mid, 512, 0.25)[1]
    assert 0.025 / 5 < p_mid < 0.025
    rows = [[0.02, 0.02, mid, 1.0, 1.0]] + [[0.02, 0.02, np.nan, 1.0, 1.0]] * 4
    assert assess(rows).verdict is not Verdict.REFUTED


def test_an_unread_lens_is_not_testable():
    a = assess([[np.nan] * 5] * 5)
    assert a.reason is Reason.NOT_TESTABLE


def test_a_lens_that_reads_nothing_at_the_tested_layer_cannot_confirm():
    a = assess([AT_BOUND] * 5, sees=False)
    assert a.reason is Reason.NOT_TESTABLE and "says nothing" in a.explanation
    # but the answer read early refutes whatever else the lens reads
    assert assess([AT_BOUND] * 4 + [EARLY], sees=False).verdict is Verdict.REFUTED


def test_a_lens_that_reads_only_one_hop_cannot_confirm():
    """A depth-1 first token reads its root from its own statement: a lens that reads only
    those sees nothing the layers composed, so its silence on the answer says nothing."""
    a = assess([AT_BOUND] * 5, one_hop_only=True)
    assert a.reason is Reason.NOT_TESTABLE and "fewer layers cannot resolve" in a.explanation
    # a depth-1 second token needs two hops (its statement's partner, then that one's): a lens
    # that reads it after layer 2 sees what the layers composed
    assert assess([AT_BOUND] * 5, one_hop_only=True, second=True).verdict is Verdict.CONFIRMED


def test_quick_has_no_layer_from_two_below_the_bound():
    claim = TargetAppearsAtBound()
    params = claim.params("quick")                         # D = 2: min_layers 2
    assert claim.checked_specs(params) == []
    a = claim.assess(params, [])
    assert a.reason is Reason.NOT_TESTABLE and "full trains D = 5" in a.explanation
    params = {**claim.params("full"), "control": (4, 4, 8)}  # min_layers(4) = 2
    a = claim.assess(params, [lens_run(s, 1.0, AT_BOUND) for s in claim.checked_specs(params)])
    assert a.reason is Reason.NOT_TESTABLE and "no layer from 2 on" in a.explanation


def test_the_explanation_names_the_first_layer_that_reads_the_answer():
    a = assess([AT_BOUND] * 5)
    assert f"seed {DECISION_SEEDS}: 3" in a.explanation and a.empirical.value == pytest.approx(0.02)


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
    assert set(lens) == {"lens_query", "lens_depth", "lens_first", "lens_second"}
    assert all(lens[k].shape == (3, 3) for k in ("lens_depth", "lens_first", "lens_second"))
    # depth 0 has first tokens only where a chain's root sits first: never (statements are
    # (s_i, s_{i-1})), so its first-slot cell is empty (NaN); depth D has no second tokens
    first, second = lens["lens_first"], lens["lens_second"]
    assert np.isnan(first[:, 0]).all() and np.isnan(second[:, 2]).all()
    assert np.isfinite(second[:, 0]).all() and np.isfinite(first[:, 2]).all()
