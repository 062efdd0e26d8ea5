"""The seed-batched path: many seeds trained as one vmapped
model give each seed the plain loop's losses and metrics to float tolerance; a seed's numbers do
not depend on the group it trains in; a diverging seed leaves the others alone; the executors
group runs by configuration and the choice never changes a run's arrays."""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

from attnverify.empirics import (
    Adam,
    AttentionLMConfig,
    CopyTask,
    LocalExecutor,
    RandomWalkLMTask,
    RetrievalTask,
    RetrievalTransformerConfig,
    RunSpec,
    Seq2SeqConfig,
    build_model,
)
from attnverify.empirics.execute.executor import MAX_SEED_GROUP, work_units
from attnverify.empirics.seed_batch import SeedBatchStep
from attnverify.empirics.train import _PlainStep, _Run, train_group

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device"))]


def retrieval(seed: int = 0, device: str = "cpu", **changes) -> RunSpec:
    spec = RunSpec(task=RetrievalTask(D=2, K=3, vocab=30), model=RetrievalTransformerConfig(
        layers=2, heads=2, d_model=16), optimizer=Adam(3e-3), steps=12, batch_size=8,
        eval_every=4, eval_size=16, seed=seed, device=device, attention_snapshots=(12,))
    return dataclasses.replace(spec, **changes)


def lm(seed: int = 0, locater: float = 1.0) -> RunSpec:
    return RunSpec(task=RandomWalkLMTask(vocab=16, T=12), model=AttentionLMConfig(
        d=16, ffn=16, dropout=0.0, locater=locater), optimizer=Adam(3e-3), steps=12,
        batch_size=8, eval_every=4, eval_size=16, seed=seed)


def assert_close(plain, batched, rtol=1e-4, atol=1e-5):
    assert plain.status == batched.status and plain.key == batched.key
    a, b = plain.arrays(), batched.arrays()
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_allclose(b[name], a[name], rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make", [retrieval, lm], ids=["retrieval", "attention_lm"])
def test_batched_equals_plain(make, device):
    specs = ([retrieval(s, device) for s in range(3)] if make is retrieval
             else [lm(s) for s in range(3)])
    plain = train_group(specs, batched=False)
    batched = train_group(specs, batched=True)
    for p, b in zip(plain, batched, strict=True):
        assert_close(p, b)
    # the comparison can fail: a different seed's plain run is far from this batched run
    with pytest.raises(AssertionError):
        assert_close(plain[0], dataclasses.replace(batched[1], spec=plain[0].spec))


def test_a_seed_does_not_depend_on_its_group():
    alone = train_group([retrieval(1)], batched=True)[0]
    grouped = train_group([retrieval(s) for s in (0, 1, 2)], batched=True)[1]
    for name, values in alone.arrays().items():
        np.testing.assert_array_equal(grouped.arrays()[name], values, err_msg=name)


def test_a_diverging_seed_leaves_the_others_alone():
    specs = [retrieval(s) for s in range(3)]
    runs = [_Run(spec) for spec in specs]
    with torch.no_grad():  # seed 0 is broken from the start: its loss is NaN
        next(runs[0].model.parameters()).fill_(float("nan"))
    plain = [_Run(spec) for spec in specs[1:]]
    step = SeedBatchStep([r.model for r in runs], specs[0].optimizer)
    plain_steps = [_PlainStep(r) for r in plain]
    live = [True, True, True]
    for _ in range(5):
        batches = [r.next_batch() for r in runs]
        losses = step(batches, live)
        assert np.isnan(losses[0])
        live[0] = False
        for k, (plain_step, run) in enumerate(zip(plain_steps, plain, strict=True), start=1):
            expected = plain_step([run.next_batch()], [True])[0]
            assert losses[k] == pytest.approx(expected, rel=1e-5)
    step.sync(live)  # the synced models compute what the plain ones do (parameters are compared
    # through the function they compute: the key bias has no gradient but round-off, which Adam
    # scales up to lr-sized steps in either path)
    for k in (1, 2):
        with torch.no_grad():
            got, want = runs[k].model.metrics(runs[k].eval_batch), plain[k - 1].model.metrics(
                plain[k - 1].eval_batch)
        assert got == pytest.approx(want, rel=1e-4, abs=1e-5)


def test_a_stopping_seed_matches_the_plain_loop_and_leaves_the_others_alone():
    """``stop_when`` in a seed-batched group: each seed stops where its plain run does."""
    full = train_group([retrieval(s) for s in range(3)], batched=False)
    acc = full[0].metric("acc_depth0")
    threshold = float(acc[0] + acc[1]) / 2  # seed 0 crosses it at its first evaluation
    specs = [retrieval(s, stop_when=("acc_depth0", threshold)) for s in range(3)]
    plain = train_group(specs, batched=False)
    batched = train_group(specs, batched=True)
    # the seeds stop at different steps (or not at all): the group outlives seed 0
    assert len({len(p.eval_steps) for p in plain}) > 1
    assert len(plain[0].eval_steps) == 2
    for p, b in zip(plain, batched, strict=True):
        assert_close(p, b)


def test_diverged_runs_match_the_plain_loop():
    specs = [retrieval(s, optimizer=Adam(1e6)) for s in range(2)]
    for p, b in zip(train_group(specs, batched=False), train_group(specs, batched=True),
                    strict=True):
        assert p.status == b.status
        assert p.train_loss.shape == b.train_loss.shape
        assert list(p.eval_steps) == list(b.eval_steps)


def test_which_models_batch():
    assert retrieval().model.seed_batchable()
    assert lm().model.seed_batchable()
    assert not AttentionLMConfig(dropout=0.1).seed_batchable()  # per-seed dropout streams
    copy_spec = RunSpec(task=CopyTask("subset", 10, 6), model=Seq2SeqConfig(hidden=8), steps=2,
                        batch_size=4, eval_size=4)
    assert not copy_spec.model.seed_batchable()  # nn.LSTM has no vmap rule
    with pytest.raises(ValueError, match="cannot train seed-batched"):
        train_group([copy_spec], batched=True)
    with pytest.raises(ValueError, match="differ only in their seed"):
        train_group([retrieval(0), retrieval(1, eval_every=3)])


def test_work_units_group_by_configuration():
    copies = [RunSpec(task=CopyTask("subset", 10, 6), model=Seq2SeqConfig(hidden=8), seed=s)
              for s in range(3)]
    many = [retrieval(s) for s in range(2 * MAX_SEED_GROUP + 1)]
    other = [retrieval(s, steps=20) for s in range(2)]
    units = work_units(copies + many + other, workers=2)
    assert sorted(len(u) for u in units) == [1, 1, 1, 2, 5, 6, 6]  # 17 seeds -> 3 groups
    for unit in units:
        assert len({dataclasses.replace(s, seed=0) for s in unit}) == 1
    assert sorted(s.key() for u in units for s in u) == sorted(
        s.key() for s in copies + many + other)
    # fewer units than workers: a group is split so that no core idles
    assert sorted(len(u) for u in work_units([retrieval(s) for s in range(3)], workers=2)) \
        == [1, 2]
    assert [len(u) for u in work_units([retrieval(s) for s in range(3)], workers=1)] == [3]


def test_a_seed_group_of_one_trains_every_run_on_its_own(store):
    from attnverify.empirics import LocalExecutor

    specs = [retrieval(s) for s in range(3)]
    assert [len(u) for u in work_units(specs, workers=1, seed_group=1)] == [1, 1, 1]
    assert sorted(len(u) for u in work_units(specs, workers=1, seed_group=2)) == [1, 2]
    assert LocalExecutor(store, workers=1, seed_group=1).seed_group == 1
    with pytest.raises(ValueError, match="seed_group must be an integer >= 1"):
        LocalExecutor(store, workers=1, seed_group=0)


def test_pool_and_in_process_give_the_same_batched_arrays(store, tmp_path):
    from attnverify.empirics import RunStore

    specs = [retrieval(s) for s in range(3)]
    pooled = LocalExecutor(store, workers=2, progress=False).run(specs)
    direct = LocalExecutor(RunStore(tmp_path / "other"), workers=1, progress=False).run(specs)
    for a, b in zip(pooled, direct, strict=True):
        for name, values in a.arrays().items():
            np.testing.assert_array_equal(b.arrays()[name], values, err_msg=name)


def test_the_plain_model_is_untouched_by_building_a_group():
    spec = retrieval(0)
    model = build_model(spec)
    before = copy.deepcopy(model.state_dict())
    SeedBatchStep([model, build_model(retrieval(1))], spec.optimizer)
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(tensor, before[name], rtol=0, atol=0, msg=name)


def test_the_executor_places_every_planned_run_on_its_device(store, monkeypatch):
    """``--device``: the claims' runs, first stage and followups, reach the executor on its
    device (their keys change with it: a GPU run is a different run)."""
    from attnverify.compare.claim import Claim
    from attnverify.compare.evaluation.verify import _run_stages
    from attnverify.empirics.execute.executor import Executor
    from attnverify.empirics.result import RunResult

    class Staged(Claim):
        id, paper, statement, defaults = "test.staged", "test", "", {}

        def specs(self, params):
            return [retrieval(0)]

        def followup(self, params, results):
            return [retrieval(1)] if len(results) == 1 else []

        def assess(self, params, results):
            raise NotImplementedError

    class Recording(Executor):
        def _compute(self, missing, bar):
            seen.extend(missing)
            return {s.key(): RunResult(spec=s, status="ok", eval_steps=np.array([0]),
                                       metrics={}, train_loss=np.array([])) for s in missing}

    seen: list[RunSpec] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    _, results = _run_stages([(Staged(), {})], Recording(store, progress=False,
                                                         device="cuda"), "test")
    assert [s.device for s in seen] == ["cuda", "cuda"]
    assert [r.spec.device for r in results["test.staged"]] == ["cuda", "cuda"]
    assert seen[0].key() != retrieval(0).key()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_verify_on_cuda(tmp_path):
    from attnverify.compare.cli import main

    assert main(["verify", "--claim", "musat.sufficient_depth_learns", "--profile", "smoke",
                 "--device", "cuda", "--cache", str(tmp_path / "c"), "--out",
                 str(tmp_path / "r"), "--quiet"]) == 0
