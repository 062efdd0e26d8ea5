"""Checkpoints of runs in training: a run killed after a checkpoint and started again continues
from it and gives the uninterrupted run's arrays bit for bit, on the plain loop (with dropout,
which draws from torch's global generator), on the seed-batched path, with a warm start and
with an early stop; a damaged or mismatched checkpoint is set aside and the run trains from
step 0; short runs write nothing; a finished unit leaves no checkpoint behind."""

from __future__ import annotations

import dataclasses
import importlib
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from checkpoint_kill import Killed, KilledAfterSave, Resuming, assert_identical

from attnverify.empirics import (
    Adam,
    AttentionLMConfig,
    CopyTask,
    LocalExecutor,
    RandomWalkLMTask,
    RetrievalTask,
    RetrievalTransformerConfig,
    RunSpec,
    RunStore,
    Seq2SeqConfig,
)
from attnverify.empirics.store.checkpoint import CheckpointDir, unit_name
from attnverify.empirics.train import train_group


def lm(seed: int = 0, dropout: float = 0.2) -> RunSpec:
    return RunSpec(task=RandomWalkLMTask(vocab=16, T=12), model=AttentionLMConfig(
        d=16, ffn=16, dropout=dropout), optimizer=Adam(3e-3), steps=30, batch_size=8,
        eval_every=5, eval_size=16, seed=seed, attention_snapshots=(5, 30))


def retrieval(seed: int) -> RunSpec:
    return RunSpec(task=RetrievalTask(D=2, K=3, vocab=30), model=RetrievalTransformerConfig(
        layers=2, heads=2, d_model=16), optimizer=Adam(3e-3), steps=30, batch_size=8,
        eval_every=5, eval_size=16, seed=seed, attention_snapshots=(30,))


def copying(seed: int = 0, **changes) -> RunSpec:
    spec = RunSpec(task=CopyTask(distribution="subset", vocab_size=6, length=6),
                   model=Seq2SeqConfig(hidden=16, cell="gru"), optimizer=Adam(1e-2),
                   steps=40, batch_size=8, eval_every=5, eval_size=16, seed=seed)
    return dataclasses.replace(spec, **changes)


def interrupted_then_resumed(specs, tmp_path: Path, kill_after: int = 2, batched=None):
    """Train ``specs`` until the ``kill_after``-th checkpoint, then again: the second run must
    resume from that checkpoint."""
    killer = KilledAfterSave(tmp_path, interval_s=0.0, kill_after=kill_after)
    with pytest.raises(Killed):
        train_group(specs, batched=batched, checkpoints=killer)
    assert len(list(tmp_path.glob("*.pt"))) == 1
    resuming = Resuming(tmp_path)
    results = train_group(specs, batched=batched, checkpoints=resuming)
    assert resuming.loaded == [killer.saves[-1]]
    return results, killer


@pytest.mark.parametrize("make, batched", [
    (lambda: [lm(0)], False),                          # dropout: the global generator
    (lambda: [copying(0)], False),                     # a recurrent seq2seq
    (lambda: [retrieval(0), retrieval(1)], True),      # the seed-batched path
    (lambda: [lm(0, dropout=0.0), lm(1, dropout=0.0)], True),
], ids=["lm-dropout", "seq2seq", "retrieval-batched", "lm-batched"])
def test_resumed_run_equals_uninterrupted(make, batched, tmp_path, caplog):
    expected = train_group(make(), batched=batched)
    with caplog.at_level(logging.INFO, logger="attnverify.checkpoint"):
        resumed, killer = interrupted_then_resumed(make(), tmp_path, batched=batched)
    assert killer.saves == [5, 10]
    assert "from its checkpoint at step 10 of" in caplog.text
    assert_identical(expected, resumed)
    assert not list(tmp_path.iterdir())  # a finished unit leaves nothing behind
    assert all(r.wall_time_s > 0 for r in resumed)


def test_resumes_without_retraining_the_warm_start(tmp_path, monkeypatch):
    warm = copying(0, steps=10)
    spec = copying(1, warm_start=warm)
    expected = train_group([spec])
    killer = KilledAfterSave(tmp_path, interval_s=0.0, kill_after=1)
    with pytest.raises(Killed):
        train_group([spec], checkpoints=killer)
    train_module = importlib.import_module("attnverify.empirics.train")

    def no_warm_training(*args, **kwargs):
        raise AssertionError("the warm-start run was trained again")

    monkeypatch.setattr(train_module, "_warm_start", no_warm_training)
    assert_identical(expected, train_group([spec], checkpoints=CheckpointDir(tmp_path)))


def test_a_stopped_seed_in_a_batched_group_resumes_stopped(tmp_path):
    # seed 0 stops at step 5, the group trains on past the checkpoint at step 10: the stopped
    # run's model and history must come back as they were, not as the optimizer left its slice
    acc = train_group([retrieval(0)], batched=False)[0].metric("acc_depth0")
    threshold = float(acc[0] + acc[1]) / 2
    specs = [dataclasses.replace(retrieval(s), stop_when=("acc_depth0", threshold))
             for s in range(3)]
    expected = train_group(specs, batched=True)
    assert expected[0].eval_steps.tolist() == [0, 5]
    assert max(len(r.eval_steps) for r in expected) > 3
    resumed, _ = interrupted_then_resumed(specs, tmp_path, batched=True)
    assert_identical(expected, resumed)


def test_a_damaged_checkpoint_is_set_aside(tmp_path, caplog):
    expected = train_group([copying(0)])
    root = tmp_path / "checkpoints"
    killer = KilledAfterSave(root, interval_s=0.0, kill_after=2)
    with pytest.raises(Killed):
        train_group([copying(0)], checkpoints=killer)
    (state,) = root.glob("*.pt")
    state.write_bytes(state.read_bytes()[:100])
    with caplog.at_level(logging.WARNING, logger="attnverify.checkpoint"):
        got = train_group([copying(0)], checkpoints=CheckpointDir(root))
    assert "not used" in caplog.text and "training from step 0" in caplog.text
    assert_identical(expected, got)


def test_another_seed_order_is_another_unit(tmp_path, caplog):
    # a seed-batched group's order is its stack's: the same seeds in another order neither
    # read nor delete the checkpoint
    specs = [retrieval(0), retrieval(1)]
    killer = KilledAfterSave(tmp_path, interval_s=0.0, kill_after=1)
    with pytest.raises(Killed):
        train_group(specs, batched=True, checkpoints=killer)
    swapped = specs[::-1]
    assert unit_name([s.key() for s in swapped], True) != unit_name([s.key() for s in specs],
                                                                    True)
    with caplog.at_level(logging.INFO, logger="attnverify.checkpoint"):
        got = train_group(swapped, batched=True, checkpoints=CheckpointDir(tmp_path))
    assert "resuming" not in caplog.text and "not used" not in caplog.text
    assert_identical(train_group(swapped, batched=True), got)
    assert len(list(tmp_path.glob("*.pt"))) == 1  # the first order's, untouched


def test_a_checkpoint_that_does_not_fit_leaves_a_fresh_start(tmp_path, caplog):
    # the models load, then the optimizer's state does not: the run must start as a fresh
    # one, generators included (dropout draws from the global one); its checksum is sound
    from attnverify.empirics.store.checkpoint import seal, unseal

    spec = lm(0)
    root = tmp_path / "checkpoints"
    killer = KilledAfterSave(root, interval_s=0.0, kill_after=2)
    with pytest.raises(Killed):
        train_group([spec], checkpoints=killer)
    (path,) = root.glob("*.pt")
    payload = unseal(path.read_bytes())
    payload["state"]["step"]["optimizer"] = {"state": {}, "param_groups": []}
    path.write_bytes(seal(payload))
    with caplog.at_level(logging.WARNING, logger="attnverify.checkpoint"):
        got = train_group([spec], checkpoints=CheckpointDir(root))
    assert "not used" in caplog.text and "checksum" not in caplog.text
    assert_identical(train_group([spec]), got)


def test_a_killed_save_leaves_nothing_that_clear_misses(tmp_path):
    root = CheckpointDir(tmp_path)
    (tmp_path / ".0123.pt.42.abc").write_bytes(b"partial")
    (tmp_path / "0123.pt").write_bytes(b"state")
    (tmp_path / "0123.json").write_text("{}")
    assert root.clear() == 1 and not list(tmp_path.iterdir())


def test_a_short_run_writes_no_checkpoint(tmp_path):
    seen = []

    @dataclass(frozen=True)
    class Watching(CheckpointDir):
        def save(self, *args, **kwargs) -> None:
            seen.append(args)
            super().save(*args, **kwargs)

    root = tmp_path / "checkpoints"
    train_group([copying(0)], checkpoints=Watching(root))  # default interval: minutes
    assert seen == [] and not root.exists()


def test_sidecar_says_how_far_a_unit_got(tmp_path):
    killer = KilledAfterSave(tmp_path, interval_s=0.0, kill_after=3)
    with pytest.raises(Killed):
        train_group([copying(0)], checkpoints=killer)
    info = CheckpointDir(tmp_path).by_run()[copying(0).key()]
    assert (info.step, info.steps, info.batched) == (15, 40, False)
    assert info.fraction_done == pytest.approx(15 / 40) and info.elapsed_s > 0
    assert CheckpointDir(tmp_path).clear() == 1 and CheckpointDir(tmp_path).by_run() == {}


def test_the_executor_resumes_from_the_store_checkpoints(tmp_path):
    store = RunStore(tmp_path / "store")
    spec = copying(0)
    killer = KilledAfterSave(store.root / "checkpoints", interval_s=0.0, kill_after=2)
    with pytest.raises(Killed):
        train_group([spec], checkpoints=killer)
    with LocalExecutor(store, workers=1, progress=False) as executor:
        (got,) = executor.run([spec])
    assert_identical(train_group([spec]), [got])
    assert store.get(spec.key()) is not None
    assert not list((store.root / "checkpoints").glob("*.pt"))


def test_dry_run_counts_only_the_steps_left(tmp_path):
    from attnverify.compare.evaluation.plan import ClaimPlan, plan_table

    specs = [copying(0), copying(1)]
    rates = {"snell_seq2seq": {specs[0].cost_estimate(): 1.0}}
    plans = [ClaimPlan("some.claim", runs=2, cached=0, missing=specs)]
    fresh = plan_table(plans, rates, workers=1)
    half = plan_table(plans, rates, workers=1, done={specs[0].key(): 0.5})
    seconds = 2 * specs[0].cost_estimate()
    assert duration(seconds) in fresh and "resume" not in fresh
    assert duration(0.75 * seconds) in half
    assert "1 of them resume from checkpoints, 50% of their steps done" in half


def duration(seconds: float) -> str:
    from attnverify.compare.evaluation.plan import duration as text

    return text(seconds)


def test_runs_clear_removes_checkpoints_too(tmp_path, capsys):
    from attnverify.compare.cli import main

    store = RunStore(tmp_path)
    killer = KilledAfterSave(store.checkpoints.root, interval_s=0.0, kill_after=1)
    with pytest.raises(Killed):
        train_group([copying(0)], checkpoints=killer)
    assert store.checkpoints.by_run()
    assert main(["runs", "clear", "--cache", str(tmp_path)]) == 0
    assert "0 runs and 1 checkpoints" in capsys.readouterr().err
    assert not store.checkpoints.by_run()


def test_a_checkpointed_unit_keeps_its_composition_in_the_next_sweep(tmp_path, caplog):
    from attnverify.empirics.execute.executor import work_units

    specs = [retrieval(s) for s in range(4)]
    saved = [specs[2].key(), specs[0].key()]
    units = work_units(specs, workers=1, seed_group=1, checkpointed=[saved])
    assert [[s.key() for s in u] for u in units if len(u) == 2] == [saved]
    assert sorted(s.seed for u in units for s in u) == [0, 1, 2, 3]
    # a checkpoint some of whose runs are no longer missing is left alone
    assert all(len(u) == 1 for u in work_units(specs[1:], 1, 1, checkpointed=[saved]))

    store = RunStore(tmp_path)
    unit = [specs[2], specs[0]]
    killer = KilledAfterSave(store.checkpoints.root, interval_s=0.0, kill_after=2)
    with pytest.raises(Killed):
        train_group(unit, checkpoints=killer)
    with caplog.at_level(logging.DEBUG, logger="attnverify"), \
            LocalExecutor(store, workers=1, progress=False, seed_group=1) as executor:
        got = executor.run(specs)
    assert "its checkpoint is at step 10 of 30" in caplog.text
    assert "from its checkpoint at step 10" in caplog.text
    assert_identical(train_group(unit), [got[2], got[0]])


def test_a_numpy_learning_rate_still_checkpoints(tmp_path, caplog):
    # the spec accepts np.float64 (a float subclass); the saved optimizer state must stay
    # readable by torch.load(weights_only=True), or every checkpoint would be set aside
    spec = copying(0, optimizer=Adam(np.float64(1e-2)))
    expected = train_group([spec])
    with caplog.at_level(logging.INFO, logger="attnverify.checkpoint"):
        resumed, _ = interrupted_then_resumed([spec], tmp_path)
    assert "from its checkpoint at step 10" in caplog.text and "not used" not in caplog.text
    assert_identical(expected, resumed)


def test_a_checkpoint_with_a_stored_run_is_dead_and_clear_stale_removes_it(tmp_path, capsys):
    """A unit resumes whole and only missing runs train, so once one of its runs is stored
    its checkpoint can never resume: the dry run and the executor ignore it, and
    ``runs clear --stale`` removes it (a checkpoint of missing runs stays)."""
    from attnverify.compare.cli import main

    store = RunStore(tmp_path)
    unit, alone = [retrieval(0), retrieval(1)], copying(0)
    for specs in (unit, [alone]):
        killer = KilledAfterSave(store.checkpoints.root, interval_s=0.0, kill_after=1)
        with pytest.raises(Killed):
            train_group(specs, checkpoints=killer)
    assert set(store.checkpoints.by_run(store.has)) == {s.key() for s in [*unit, alone]}
    store.put(train_group([unit[1]])[0])  # trained elsewhere, on its own
    assert set(store.checkpoints.by_run(store.has)) == {alone.key()}
    assert len(store.checkpoints.by_run()) == 3  # without the store: every sidecar
    assert main(["runs", "clear", "--stale", "--cache", str(tmp_path)]) == 0
    assert "0 stale runs and 1 checkpoints that can no longer resume" in capsys.readouterr().err
    assert set(store.checkpoints.by_run()) == {alone.key()}
