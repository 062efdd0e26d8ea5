"""Entries that pass their checksum but are not runs of their spec (empirics.result_schema):
detected on every read, moved aside and recomputed, refused by put, pack and unpack. Each kind
of damage has a negative control: the same path with the entry as trained passes."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from attnverify.empirics import (
    CopyTask,
    CorruptEntryError,
    LocalExecutor,
    RunResult,
    RunSpec,
    RunStore,
    Seq2SeqConfig,
    train,
)
from attnverify.empirics.models.free_attention import FreeAttentionToyConfig
from attnverify.empirics.optim import SGD
from attnverify.empirics.result_schema import ResultSchemaError, check_result
from attnverify.empirics.store.archive import pack, unpack


def spec(**changes) -> RunSpec:
    base = RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8), steps=6,
                   batch_size=4, eval_every=2, eval_size=4, seed=0, attention_snapshots=(2, 6))
    return dataclasses.replace(base, **changes)


def diverging() -> RunSpec:
    """A run that diverges at step 3 (SGD at lr 1e30 on the free-attention toy)."""
    return RunSpec(task=CopyTask("subset", 8, 4), model=FreeAttentionToyConfig(),
                   optimizer=SGD(lr=1e30), steps=50, batch_size=4, eval_every=2, eval_size=4)


def rewrite(store: RunStore, key: str, change: Callable[[dict, dict], None]) -> None:
    """Change an entry's arrays and metadata in place and recompute its checksum, as someone
    editing the cache by hand would: the integrity checks then pass."""
    entry = next((store.root / "runs").glob(f"*/{key}"))
    meta = json.loads((entry / "meta.json").read_text())
    with np.load(entry / "arrays.npz", allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    change(meta, arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    (entry / "arrays.npz").write_bytes(buffer.getvalue())
    meta["arrays_sha256"] = hashlib.sha256(buffer.getvalue()).hexdigest()
    (entry / "meta.json").write_text(json.dumps(meta))


def _set(name: str, value: Callable[[np.ndarray], np.ndarray]):
    def change(meta: dict, arrays: dict) -> None:
        arrays[name] = value(arrays[name])
    return change


def _status(status: str):
    def change(meta: dict, arrays: dict) -> None:
        meta["status"] = status
    return change


def _drop(name: str):
    def change(meta: dict, arrays: dict) -> None:
        del arrays[name]
    return change


DAMAGE = {
    "metric one value short": _set("metric/acc", lambda a: a[:-1]),
    "metric one value long": _set("metric/acc", lambda a: np.append(a, 0.5)),
    "metric as integers": _set("metric/acc", lambda a: a.astype(np.int64)),
    "loss metric all NaN in an ok run": _set("metric/loss", lambda a: np.full_like(a, np.nan)),
    "one infinite metric value": _set("metric/loss", lambda a: np.where(
        np.arange(a.size) == 1, np.inf, a)),
    "eval steps as floats": _set("eval_steps", lambda a: a.astype(np.float64)),
    "eval steps off schedule": _set("eval_steps", lambda a: a + 1),
    "eval steps cut short": _set("eval_steps", lambda a: a[:-1]),
    "train loss short": _set("train_loss", lambda a: a[:-1]),
    "train loss NaN in an ok run": _set("train_loss", lambda a: np.full_like(a, np.nan)),
    "train loss as a matrix": _set("train_loss", lambda a: a.reshape(1, -1)),
    "attention snapshot missing": _drop("attention/6"),
    "attention snapshot NaN": _set("attention/2", lambda a: np.full_like(a, np.nan)),
    "ok run relabelled diverged": _status("diverged"),
    "unknown status": _status("finished"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_an_entry_that_is_not_a_run_of_its_spec_is_moved_aside_and_recomputed(store, damage):
    trained = train(spec())
    store.put(trained)
    rewrite(store, trained.key, DAMAGE[damage])
    with pytest.raises(CorruptEntryError, match=f"{trained.key}.*not a run of its spec"):
        store.get(trained.key)
    assert store.lookup(spec()) is None  # moved aside, reported missing
    assert trained.key not in store and len(list((store.root / "corrupt").iterdir())) == 1
    (again,) = LocalExecutor(store, workers=1, progress=False).run([spec()])
    for name, values in trained.arrays().items():
        np.testing.assert_array_equal(again.arrays()[name], values, err_msg=name)


def test_negative_control_a_rewrite_that_changes_nothing_is_read(store):
    trained = train(spec())
    store.put(trained)
    rewrite(store, trained.key, lambda meta, arrays: None)
    assert store.get(trained.key) is not None and store.lookup(spec()) is not None


@pytest.mark.parametrize("damage", ["loss metric all NaN in an ok run", "eval steps cut short",
                                    "ok run relabelled diverged"])
def test_pack_and_unpack_refuse_such_an_entry(store, tmp_path, damage):
    trained, other = train(spec()), train(spec(seed=1))
    store.put(trained)
    store.put(other)
    good = tmp_path / "good.tar.gz"
    pack(store, good)
    rewrite(store, trained.key, DAMAGE[damage])
    bad = tmp_path / "bad.tar.gz"
    with pytest.raises(CorruptEntryError, match="not a run of its spec"):
        pack(store, bad)
    assert not bad.exists()
    # an archive holding it (built from the damaged store's files by hand)
    source = RunStore(tmp_path / "src")
    unpack(source, good)
    rewrite(source, trained.key, DAMAGE[damage])
    import tarfile

    with tarfile.open(bad, "w:gz") as tar:
        for path in sorted((source.root / "runs").rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(source.root)))
    target = RunStore(tmp_path / "target")
    with pytest.raises(ValueError, match=f"run {trained.key} is damaged.*nothing was imported"):
        unpack(target, bad)
    assert list(target.keys()) == []
    assert unpack(target, good).imported == 2  # negative control: the intact archive


def test_put_refuses_a_result_that_is_not_a_run_of_its_spec(store):
    trained = train(spec())
    broken = dataclasses.replace(trained, metrics={"acc": trained.metric("acc")[:-1]})
    with pytest.raises(ResultSchemaError, match="metric acc has"):
        store.put(broken)
    assert list(store.keys()) == [] and not (store.root / "tmp").exists()


def test_every_way_a_run_can_end_passes(tmp_path):
    """Negative controls on real training: a whole run, one stopped early by ``stop_when``
    and one that diverged all satisfy the schema; so do the stored runs of every golden
    model family (tests/test_golden.py trains them)."""
    whole = train(spec())
    stopped = train(spec(steps=60, stop_when=("loss", -1.0)))  # the loss is above -1 at once
    diverged = train(diverging())
    assert stopped.eval_steps.tolist() == [0]
    assert diverged.status == "diverged", "no longer diverges: choose a larger lr"
    for result in (whole, stopped, diverged):
        check_result(result)


def test_a_diverged_run_must_end_at_its_first_non_finite_loss():
    diverged = train(diverging())
    assert diverged.status == "diverged" and diverged.eval_steps.tolist() == [0, 2]
    finite = dataclasses.replace(diverged, train_loss=np.nan_to_num(diverged.train_loss))
    with pytest.raises(ResultSchemaError, match="first non-finite"):
        check_result(finite)
    extra_eval = dataclasses.replace(
        diverged, eval_steps=np.array([0, 2, 4]),
        metrics={k: np.append(v, 0.0) for k, v in diverged.metrics.items()})
    with pytest.raises(ResultSchemaError):
        check_result(extra_eval)
    check_result(diverged)  # negative control


def test_a_run_that_ends_early_must_show_its_stop_metric_over_the_threshold():
    stopped = train(spec(steps=60, stop_when=("loss", -1.0)))
    never = dataclasses.replace(stopped, spec=dataclasses.replace(
        stopped.spec, stop_when=("loss", 1e9)))
    with pytest.raises(ResultSchemaError, match="ends early without loss above"):
        check_result(never)


def test_stale_entries_are_shown_as_stored(store, tmp_path: Path):
    """An entry of other code (its spec hashes to another key now) is never used, so its
    arrays are not held to this code's schema: ``runs show`` still reads it."""
    trained = train(spec())
    store.put(trained)
    rewrite(store, trained.key, lambda meta, arrays: meta["spec"].update(steps=7))
    assert not store.is_current(trained.key)
    result = store.get(trained.key)
    assert isinstance(result, RunResult) and result.spec.steps == 7


def _from_golden(name: str, **changes) -> RunSpec:
    data = json.loads((Path(__file__).parent / "golden" / f"{name}.json").read_text())["spec"]
    for path, value in changes.items():
        part, _, field = path.partition(".")
        if field:
            data[part][field] = value
        else:
            data[part] = value
    return RunSpec.from_dict(data)


LEGITIMATE = {
    # the update after the last recorded loss blows the weights up: NaN metrics, still ok
    "ok, NaN metrics at the last evaluation": lambda: dataclasses.replace(diverging(), steps=2),
    # a snapshot on the step before divergence is taken on non-finite weights
    "diverged, NaN snapshot at its last evaluation": lambda: dataclasses.replace(
        diverging(), attention_snapshots=(2,)),
    # an attention entropy over no earlier positions (T = 2) is NaN by design
    "attention LM at T = 2": lambda: _from_golden("attention_lm", **{"task.T": 2}),
    # no computable position at some depth under the prefix curriculum: an empty depth bin
    "retrieval, empty depth bin": lambda: _from_golden(
        "retrieval_transformer", **{"task.D": 5, "task.ic_scope": "prefix", "eval_size": 4}),
}


@pytest.mark.parametrize("case", LEGITIMATE)
def test_runs_with_legitimate_non_finite_values_pass(store, case):
    """Negative controls: what the training loop produces is a run of its spec, NaN where
    the model or the last update makes one; it is stored and read back."""
    result = train(LEGITIMATE[case]())
    values = [*result.metrics.values(), *result.attention.values()]
    assert not all(np.isfinite(v).all() for v in values), "the case lost its NaN"
    check_result(result)
    store.put(result)
    assert store.get(result.key) is not None


def test_an_entry_whose_metadata_names_another_spec_is_not_used_for_its_key(store):
    """The metadata carries no checksum: a spec field edited in place must not make
    ``lookup`` hand another run to the spec that asked (it is moved aside, recomputed)."""
    trained = train(spec())
    store.put(trained)
    rewrite(store, trained.key, lambda meta, arrays: meta["spec"].update(seed=1))
    assert store.lookup(spec()) is None
    assert trained.key not in store and len(list((store.root / "corrupt").iterdir())) == 1
