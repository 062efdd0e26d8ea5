"""The retrieval task generator (its invariants for the minimal formulation) and the transformer."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnverify.empirics import (
    RetrievalTask,
    RetrievalTransformerConfig,
    RunSpec,
    build_model,
    train,
)
from attnverify.empirics.models.retrieval_transformer import structural_masks
from attnverify.empirics.probes.retrieval_metrics import (
    HeadMetric,
    depth_metric,
    head_metrics,
    heads_scored,
    metric_depths,
)
from attnverify.empirics.tasks.retrieval import IGNORE


def resolve(tokens: list[int], symbol: int, lhs_first: bool = True) -> tuple[int, int]:
    """Follow statements from ``symbol`` to the root: (root, hops)."""
    statements = [(tokens[i], tokens[i + 1]) for i in range(0, len(tokens) - 1, 2)]
    pairs = {a: b for a, b in statements} if lhs_first else {b: a for a, b in statements}
    hops = 0
    while symbol in pairs:
        symbol, hops = pairs[symbol], hops + 1
    return symbol, hops


@settings(max_examples=25)
@given(D=st.integers(1, 5), K=st.integers(2, 4), distractors=st.integers(0, 3),
       order=st.sampled_from(["lhs_first", "value_first"]), ic=st.booleans(),
       seed=st.integers(0, 10_000))
def test_generator_invariants(D, K, distractors, order, ic, seed):
    task = RetrievalTask(D=D, K=K, vocab=40, ic=ic, statement_order=order,
                         distractors=distractors)
    batch = task.sample(16, torch.Generator().manual_seed(seed))
    tokens, depth = batch["tokens"], batch["depth"]
    assert tokens.shape == (16, task.T)
    for b in range(16):
        seq = tokens[b].tolist()
        body = seq[:-1]
        root, hops = resolve(body, seq[-1], order == "lhs_first")
        assert hops == D and batch["eval_targets"][b, -1].item() == root  # query resolves
        assert batch["targets"][b, -1].item() == root
        for i, sym in enumerate(body):  # IC targets: the root each symbol resolves to
            target = batch["eval_targets"][b, i].item()
            if target == IGNORE:
                assert depth[b, i].item() == -1  # distractor statements
                continue
            assert (target, depth[b, i].item()) == resolve(body, sym, order == "lhs_first")
        counts = np.bincount(depth[b][depth[b] >= 0].numpy(), minlength=D + 1)
        # per chain {0: 1, 1: 2, ..., D-1: 2, D: 1}, plus the query at depth D
        assert counts[0] == K and all(counts[1:D] == 2 * K) and counts[D] == K + 1
        if not ic:
            assert (batch["targets"][b, :-1] == IGNORE).all()


def test_shuffling_never_changes_the_answer_and_seeds_reproduce():
    task = RetrievalTask(D=3, K=3, vocab=30)
    a = task.sample(8, torch.Generator().manual_seed(1))
    b = task.sample(8, torch.Generator().manual_seed(1))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_bad_task_and_model_configs():
    with pytest.raises(ValueError, match="distinct symbols"):
        RetrievalTask(D=10, K=4, vocab=20)
    with pytest.raises(ValueError, match=r"task\.K must be an integer >= 2"):
        RetrievalTask(K=1)
    with pytest.raises(ValueError, match=r"model\.d_model must be a multiple of heads"):
        RetrievalTransformerConfig(d_model=30, heads=4)
    with pytest.raises(ValueError, match=r"model\.pos_encoding must be one of learned"):
        RetrievalTransformerConfig(pos_encoding="alibi")
    with pytest.raises(ValueError, match=r"model\.d_model must be an even width per head"):
        RetrievalTransformerConfig(d_model=12, heads=4, pos_encoding="rope")
    with pytest.raises(ValueError, match=r"model\.mlp_ratio must be an integer >= 1"):
        RetrievalTransformerConfig(mlp_ratio=0)
    with pytest.raises(ValueError, match=r"task\.train_examples must be an integer >= 0"):
        RetrievalTask(train_examples=-1)
    with pytest.raises(ValueError, match=r"task\.dataset_seed must be an integer"):
        RetrievalTask(dataset_seed=-1)


@settings(max_examples=20)
@given(i=st.integers(0, 20), j=st.integers(0, 20), shift=st.integers(0, 20),
       seed=st.integers(0, 1000))
def test_rotary_scores_depend_on_the_offset_only(i, j, shift, seed):
    """Rotary embeddings (Su et al. 2021): the score of a query at position i and a key at j is
    the same at i + s and j + s; one position apart, a unit vector in the first pair scores
    cos(1) against itself (the rotation is real)."""
    from attnverify.empirics.models.retrieval_transformer import rotary_angles, rotate

    q, k = torch.randn(2, 8, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    cos, sin = (a.double() for a in rotary_angles(48, 8))

    def score(a: int, b: int) -> float:
        return float(rotate(q, cos[a], sin[a]) @ rotate(k, cos[b], sin[b]))

    # the angles are float32 tables: agreement to float32 rounding
    assert score(i, j) == pytest.approx(score(i + shift, j + shift), abs=1e-5)
    # negative control: the rotation is not the identity (first pair turns 1 rad a position)
    unit = torch.zeros(8, dtype=torch.float64)
    unit[0] = 1.0
    turned = rotate(unit, cos[1], sin[1]) @ rotate(unit, cos[0], sin[0])
    assert float(turned) == pytest.approx(np.cos(1.0), abs=1e-6)


@pytest.mark.parametrize("pos_encoding", ["learned", "sinusoidal", "rope"])
def test_position_encodings_train_and_batch_seeds(pos_encoding):
    """Every encoding trains, has no learned position table unless "learned", and the
    seed-batched path gives the plain loop's numbers (rotary and sinusoidal tables are
    buffers, stacked like parameters)."""
    from attnverify.empirics.train import train_group

    specs = [RunSpec(task=RetrievalTask(D=2, K=3, vocab=30),
                     model=RetrievalTransformerConfig(layers=2, heads=2, d_model=16,
                                                      pos_encoding=pos_encoding, mlp_ratio=2),
                     steps=8, batch_size=8, eval_every=4, eval_size=16, seed=s)
             for s in range(2)]
    model = build_model(specs[0])
    learned = {name for name, _ in model.named_parameters() if name == "pos"}
    assert learned == ({"pos"} if pos_encoding == "learned" else set())
    assert model.blocks[0].mlp[0].out_features == 32
    plain = train_group(specs, batched=False)
    batched = train_group(specs, batched=True)
    for a, b in zip(plain, batched, strict=True):
        assert a.status == b.status == "ok"
        for name, values in a.arrays().items():
            np.testing.assert_allclose(b.arrays()[name], values, rtol=1e-4, atol=1e-5,
                                       err_msg=name)


def test_a_fixed_training_set_is_shared_sampled_from_and_evaluation_stays_fresh():
    """``train_examples=N``: every training example is one of the N drawn once from
    ``dataset_seed`` (the same set for every run with that seed, another set for another
    seed); evaluation batches are fresh examples, as with the default."""
    task = RetrievalTask(D=2, K=3, vocab=30, train_examples=64, dataset_seed=5)
    pool = task.fresh(64, torch.Generator().manual_seed(5))
    rows = {tuple(r) for r in pool["tokens"].tolist()}
    batch = task.sample(200, torch.Generator().manual_seed(1))
    assert {tuple(r) for r in batch["tokens"].tolist()} <= rows
    assert len({tuple(r) for r in batch["tokens"].tolist()}) > 32  # drawn across the set
    for name in ("targets", "eval_targets", "depth"):  # rows stay aligned across fields
        index = {tuple(t): i for i, t in enumerate(pool["tokens"].tolist())}
        picked = torch.tensor([index[tuple(t)] for t in batch["tokens"].tolist()])
        assert torch.equal(batch[name], pool[name][picked])
    other = RetrievalTask(D=2, K=3, vocab=30, train_examples=64, dataset_seed=6)
    assert not {tuple(r) for r in other.sample(50, torch.Generator()).get("tokens").tolist()} \
        <= rows
    fresh = RetrievalTask(D=2, K=3, vocab=30)
    a = task.sample_eval(16, torch.Generator().manual_seed(3))
    b = fresh.sample_eval(16, torch.Generator().manual_seed(3))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_transformer_patterns_ablation_and_training():
    spec = RunSpec(task=RetrievalTask(D=1, K=2, vocab=16),
                   model=RetrievalTransformerConfig(layers=2, heads=2, d_model=16),
                   steps=40, batch_size=32, eval_every=20, eval_size=64, seed=0)
    model = build_model(spec)
    batch = spec.task.sample(4, torch.Generator().manual_seed(0))
    logits, patterns = model(batch["tokens"])
    assert logits.shape == (4, spec.task.T, 16) and len(patterns) == 2
    torch.testing.assert_close(patterns[0].sum(-1), torch.ones(4, 2, spec.task.T))
    ablated, _ = model(batch["tokens"], {(0, 0): "zero", (1, 1): "zero"})
    assert not torch.allclose(ablated, logits)
    causal = RunSpec(task=spec.task, model=RetrievalTransformerConfig(layers=1, heads=2,
                                                                      d_model=16, causal=True))
    _, (alpha,) = build_model(causal)(batch["tokens"])
    assert torch.all(alpha.triu(1) == 0)
    result = train(spec)
    assert {"query_acc", "acc_depth0", "acc_depth1", "head1.1_partner"} <= set(result.metrics)
    # every metric the model writes parses back through retrieval_metrics
    assert metric_depths(result.metrics) == [0, 1]
    assert heads_scored(result.metrics) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert {m.role for m in head_metrics(result.metrics)} == set(structural_masks(
        batch["tokens"]))
    assert result.final["ablation_zero"].shape == (2, 2, 2)
    assert result.final["attention_example"].shape == (2, 2, spec.task.T, spec.task.T)


@pytest.mark.parametrize("query_marker", [False, True])
def test_per_depth_accuracy_counts_statements_and_not_the_query(query_marker):
    """A model right at every statement token and wrong at the query scores 1 at every depth
    and 0 on the query (the query is reported on its own); wrong only at the depth-1 tokens, it
    scores 0 at depth 1 and 1 elsewhere."""
    task = RetrievalTask(D=3, K=3, vocab=30, query_marker=query_marker)
    batch = task.sample(16, torch.Generator().manual_seed(2))
    model = build_model(RunSpec(task=task, model=RetrievalTransformerConfig(layers=1, heads=1,
                                                                            d_model=8)))
    targets = batch["eval_targets"].clamp_min(0)

    def answering(wrong: torch.Tensor):
        def forward(tokens, ablate=None):
            logits = torch.nn.functional.one_hot(torch.where(wrong, targets + 1, targets),
                                                 task.vocab_size() + 1).float()
            return logits, []
        return forward

    query = torch.zeros_like(targets, dtype=torch.bool)
    query[:, -1] = True
    model.forward = answering(query)
    query_acc, per_depth = model.depth_accuracy(batch)
    assert query_acc == 0.0
    np.testing.assert_array_equal(per_depth, np.ones(4))
    model.forward = answering(batch["depth"] == 1)
    query_acc, per_depth = model.depth_accuracy(batch)
    assert query_acc == 1.0
    np.testing.assert_array_equal(per_depth, [1.0, 0.0, 1.0, 1.0])


def test_chain_neighbour_masks_follow_the_chain():
    """In R1 order, statement (s_i, s_{i-1}) of link i: ``chain_next`` marks both tokens of link
    i - 1 (depths i - 1, i - 2), none for link 1; ``chain_prev`` both tokens of link i + 1,
    none for link D; the query has neither (depths from the generator, not from the masks)."""
    D = 3
    batch = RetrievalTask(D=D, K=3, vocab=30).sample(8, torch.Generator().manual_seed(4))
    tokens, depth = batch["tokens"], batch["depth"]
    masks = structural_masks(tokens)
    T = tokens.shape[1]
    for b in range(tokens.shape[0]):
        for p in range(T - 1):
            link = int(depth[b, p - p % 2])  # the first token of a statement has depth i
            for name, other, exists in (("chain_next", link - 1, link > 1),
                                        ("chain_prev", link + 1, link < D)):
                hits = torch.nonzero(masks[name][b, p]).flatten().tolist()
                if not exists:
                    assert hits == [], (name, b, p)
                    continue
                assert len(hits) == 2 and hits[0] ^ 1 == hits[1], (name, b, p, hits)
                assert sorted(depth[b, hits].tolist()) == [other - 1, other]
        assert not masks["chain_next"][b, -1].any() and not masks["chain_prev"][b, -1].any()


def test_one_way_partner_heads_score_on_their_direction_only():
    """A head whose first tokens read their statement's second token (and whose second tokens
    attend to themselves) scores 1 as ``partner_from_first``, 0 as ``partner_from_second`` and
    about 1/2 as ``partner``; each directional mask has targets at one token of every
    statement only, never at the query."""
    from attnverify.empirics.models.retrieval_transformer import structural_masks

    tokens = RetrievalTask(D=2, K=2, vocab=20).sample(4, torch.Generator().manual_seed(1))[
        "tokens"]
    masks = structural_masks(tokens)
    T = tokens.shape[1]
    first, second = masks["partner_from_first"].any(-1), masks["partner_from_second"].any(-1)
    assert first[:, 0:T - 1:2].all() and not first[:, 1::2].any()
    assert second[:, 1:T - 1:2].all() and not second[:, 0::2].any() and not second[:, -1].any()
    alpha = torch.eye(T)
    alpha[0:T - 1:2] = 0.0
    alpha[torch.arange(0, T - 1, 2), torch.arange(1, T - 1, 2)] = 1.0

    def score(name: str) -> float:
        mask = masks[name]
        has = mask.any(-1)
        return float(((alpha * mask).sum(-1) * has).sum() / has.sum())

    assert score("partner_from_first") == 1.0 and score("partner_from_second") == 0.0
    assert score("partner") == pytest.approx(0.5)


@pytest.mark.parametrize("order", ["lhs_first", "value_first"])
def test_in_order_arrangement_writes_each_chain_in_order(order):
    """R5: link i - 1 of a chain comes before link i, wherever the chain's slots are (and the
    slots differ between examples: positions stay randomised)."""
    task = RetrievalTask(D=4, K=3, vocab=40, distractors=3, arrangement="in_order",
                         statement_order=order)
    batch = task.sample(32, torch.Generator().manual_seed(2))
    tokens, depth = batch["tokens"], batch["depth"]
    n = 2 * (task.K * task.D + task.distractors)
    lhs_at = 0 if order == "lhs_first" else 1
    first_slots = set()
    for b in range(tokens.shape[0]):
        slot_of = {}  # lhs symbol -> (slot, rhs symbol, link)
        for j in range(n // 2):
            lhs, rhs = int(tokens[b, 2 * j + lhs_at]), int(tokens[b, 2 * j + 1 - lhs_at])
            link = int(depth[b, 2 * j + lhs_at])
            if link > 0:
                slot_of[lhs] = (j, rhs, link)
        for slot, rhs, link in slot_of.values():
            if link == 1:
                first_slots.add(slot)
            else:
                below = slot_of[rhs]
                assert below[2] == link - 1 and below[0] < slot
    assert len(first_slots) > 3
    shuffled = RetrievalTask(D=4, K=3, vocab=40, distractors=3, statement_order=order)
    assert not torch.equal(shuffled.sample(32, torch.Generator().manual_seed(2))["tokens"],
                           tokens)  # the option changes the arrangement


@pytest.mark.parametrize("order", ["lhs_first", "value_first"])
def test_prefix_scope_keeps_exactly_the_computable_targets(order):
    """R3: a position keeps its target (and its depth for evaluation) iff walking its chain
    down to the root only uses statements that end at or before it; checked by that walk,
    written out per example."""
    kwargs = {"D": 3, "K": 3, "vocab": 40, "distractors": 2, "statement_order": order}
    full = RetrievalTask(**kwargs).sample(16, torch.Generator().manual_seed(5))
    prefix = RetrievalTask(**kwargs, ic_scope="prefix").sample(16,
                                                                torch.Generator().manual_seed(5))
    assert torch.equal(full["tokens"], prefix["tokens"])
    tokens, depth = full["tokens"], full["depth"]
    n = tokens.shape[1] - 1
    lhs_at = 0 if order == "lhs_first" else 1
    kept = 0
    for b in range(tokens.shape[0]):
        defined = {int(tokens[b, 2 * j + lhs_at]): 2 * j + 1 for j in range(n // 2)}
        value = {int(tokens[b, 2 * j + lhs_at]): int(tokens[b, 2 * j + 1 - lhs_at])
                 for j in range(n // 2)}
        for p in range(n):
            if depth[b, p] < 0:
                assert prefix["depth"][b, p] == -1
                continue
            symbol, ok = int(tokens[b, p]), True
            for _ in range(int(depth[b, p])):
                ok &= defined[symbol] <= p
                symbol = value[symbol]
            assert (prefix["depth"][b, p] >= 0) == ok, (b, p)
            expected = full["eval_targets"][b, p] if ok else -100
            assert prefix["eval_targets"][b, p] == expected
            kept += ok
        assert prefix["targets"][b, -1] == full["targets"][b, -1]  # the query, always
    assert 0 < kept < (depth[:, :-1] >= 0).sum()


def test_metric_names_round_trip_and_ignore_other_metrics():
    names = [depth_metric(3), depth_metric(0), depth_metric(12), "query_acc", "loss",
             HeadMetric(2, 3, "partner_from_first").name, HeadMetric(0, 1, "self").name,
             "acc_depthx", "head1_partner", "head1.2", "ahead1.2_partner"]
    assert metric_depths(names) == [0, 3, 12]
    assert head_metrics(names) == [HeadMetric(0, 1, "self"),
                                   HeadMetric(2, 3, "partner_from_first")]
    assert HeadMetric.parse("head10.7_chain_next") == HeadMetric(10, 7, "chain_next")
    assert heads_scored(names) == [(0, 1), (2, 3)]
    # the names stored runs carry (run identity): never renamed
    assert depth_metric(2) == "acc_depth2"
    assert HeadMetric(1, 0, "same_symbol").name == "head1.0_same_symbol"
    with pytest.raises(ValueError, match="depth"):
        depth_metric(-1)
