"""The §5 multi-head protocol of Snell et al. (snell2021.md §5): heads on a shared base
initialisation, classified good/bad by single-head runs, then combined; the claim runs in
stages (``Claim.followup``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from compare import Verdict, evaluate
from compare.claims.snell.multihead import (
    CANDIDATE_SEEDS,
    RANDOM_SEEDS,
    MultiheadRescuesPermutations,
    head_label,
)
from empirics import CopyTask, LocalExecutor, RunResult, RunSpec, Seq2SeqConfig, build_model

TINY = {"hidden": 8, "L": 5, "subset_V": 8, "batch_size": 16, "steps": 40, "eval_every": 10,
        "eval_size": 16, "seeds": 2, "heads": 3, "protocol": "section5", "base_seed": 0,
        "classify_seeds": 2, "needed": 1, "stage_candidates": 3, "max_candidates": 6,
        "random_heads": 4, "combos": 2}


def model(heads: int, head_seeds: tuple[int, ...], seed: int):
    config = Seq2SeqConfig(hidden=8, heads=heads, cell="gru", shared_embedding=False,
                           base_seed=3, head_seeds=head_seeds)
    return build_model(RunSpec(task=CopyTask("permutation", 10, 10), model=config, seed=seed))


def test_a_head_is_the_same_alone_and_in_a_bundle_on_the_same_base():
    alone, bundle = model(1, (5,), seed=0), model(3, (7, 5, 9), seed=1)
    a, b = dict(alone.named_parameters()), dict(bundle.named_parameters())
    for name in a:
        if not name.startswith(("attn_lin", "project_enc")):
            assert torch.equal(a[name], b[name]), name  # the base ignores heads and run seed
    assert torch.equal(alone.attn_lin.weight, bundle.attn_lin.weight[8:16])
    assert torch.equal(alone.attn_lin.bias, bundle.attn_lin.bias[8:16])
    assert torch.equal(alone.project_enc_weight[0], bundle.project_enc_weight[1])
    assert not torch.equal(bundle.project_enc_weight[0], bundle.project_enc_weight[1])
    # the redrawn parameters follow PyTorch's default ranges
    bound = 1 / np.sqrt(8)
    assert bundle.project_enc_weight.abs().max() <= bound
    assert bundle.after_decoder.weight.abs().max() <= 1 / np.sqrt(16)


def test_head_seeds_must_match_the_heads():
    with pytest.raises(ValueError, match=r"model\.head_seeds must be empty or 2 integers"):
        Seq2SeqConfig(hidden=8, heads=2, head_seeds=(1,))
    with pytest.raises(ValueError, match=r"model\.base_seed"):
        Seq2SeqConfig(hidden=8, base_seed=-1)


def fake(spec: RunSpec, acc: list[float], status: str = "ok") -> RunResult:
    steps = np.arange(len(acc)) * 10
    return RunResult(spec=spec, status=status, eval_steps=steps,
                     metrics={"acc": np.asarray(acc, float)}, train_loss=np.zeros(1))


def test_head_labels_follow_the_official_rule():
    spec = MultiheadRescuesPermutations().specs(TINY)[0]
    good, bad, mid = [0.1, 0.97, 0.9], [0.1, 0.3, 0.5], [0.1, 0.7, 0.8]
    assert head_label([fake(spec, good), fake(spec, good)]) == "good"  # > 0.95 at some eval
    assert head_label([fake(spec, bad), fake(spec, bad)]) == "bad"  # last eval < 0.6
    assert head_label([fake(spec, good), fake(spec, bad)]) is None  # seeds disagree
    assert head_label([fake(spec, mid), fake(spec, mid)]) is None
    assert head_label([fake(spec, good), fake(spec, good, "diverged")]) is None


def test_stages_draw_candidates_until_both_kinds_then_combine():
    claim = MultiheadRescuesPermutations()
    params = {**TINY, "combos": 6, "random_heads": 8}
    first = claim.specs(params)
    assert len(first) == 3 * 2 and all(s.model.heads == 1 for s in first)
    # stage 1: all three candidates bad -> three more candidates
    results = [fake(s, [0.1, 0.2]) for s in first]
    second = claim.followup(params, results)
    assert [s.model.head_seeds[0] for s in second][::2] == [CANDIDATE_SEEDS + i
                                                           for i in range(3, 6)]
    # stage 2: one good head appears -> the combos, and nothing after them
    results += [fake(s, [0.1, 0.99] if s.model.head_seeds[0] == CANDIDATE_SEEDS + 4
                     else [0.1, 0.2]) for s in second]
    combos = claim.followup(params, results)
    assert combos and all(s.model.heads == 3 and s.seed == 0 for s in combos)
    kinds = {("random" if min(s.model.head_seeds) >= RANDOM_SEEDS else
              "good" if CANDIDATE_SEEDS + 4 in s.model.head_seeds else "bad") for s in combos}
    assert kinds == {"random", "good", "bad"}
    assert claim.followup(params, results + [fake(s, [0.1, 0.5]) for s in combos]) == []
    # the assessment groups them and decides random bundles against single random heads:
    # 1 of 6 single heads (data seed 0) learns, every bundle learns -> confirmed
    a = claim.assess(params, results + [fake(s, [0.1, 0.99]) for s in combos])
    assert a.details["heads"] == {"candidates": 6, "good": 1, "bad": 5, "discarded": 0}
    random_sets = {s.model.head_seeds for s in combos if min(s.model.head_seeds) >= RANDOM_SEEDS}
    assert a.details["groups"]["random"] == len(random_sets) >= 4  # one run per set of heads
    assert a.details["rescue"] is not None
    assert a.verdict is Verdict.CONFIRMED, a.explanation
    # and the other way round: bundles that never learn against the same singles
    a = claim.assess(params, [fake(s, [0.1, 0.99]) for s in first + second]
                     + [fake(s, [0.1, 0.2]) for s in combos])
    assert a.verdict is Verdict.REFUTED, a.explanation


def test_the_protocol_runs_end_to_end_in_stages(store):
    """Real training at a tiny scale: the claim's stages go through the executor and the store,
    and a second evaluation trains nothing."""
    claim = MultiheadRescuesPermutations()
    executor = LocalExecutor(store, workers=1, progress=False)
    outcome = evaluate(claim, "smoke", executor, TINY)
    details = outcome.assessment.details
    n_classify = TINY["classify_seeds"] * details["heads"]["candidates"]
    assert details["heads"]["candidates"] in (3, 6)  # one stage, or two when a kind lacked
    assert len(outcome.run_keys) == n_classify + sum(details["groups"].values())
    assert details["groups"]["random"] >= 1  # 4 random heads always make bundles of 3
    assert details["test"]["n"] == [details["heads"]["candidates"], details["groups"]["random"]]
    assert "section5" in outcome.assessment.figures
    again = LocalExecutor(store, workers=1, progress=False)
    assert evaluate(claim, "smoke", again, TINY).run_keys == outcome.run_keys
    assert again.computed == set()
