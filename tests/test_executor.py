"""The local executor: same results as in-process training, cache reuse, progress to the store."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.empirics import CopyTask, LocalExecutor, RunSpec, Seq2SeqConfig, train


def specs() -> list[RunSpec]:
    return [RunSpec(task=CopyTask("subset", 10, 6), model=Seq2SeqConfig(hidden=16), steps=8,
                    batch_size=8, eval_every=4, eval_size=8, seed=s, attention_snapshots=(8,))
            for s in range(3)]


def test_pool_results_equal_in_process_results(store, caplog):
    pooled = LocalExecutor(store, workers=2, progress=False).run(specs())
    assert [r.key for r in pooled] == [s.key() for s in specs()]
    for spec, result in zip(specs(), pooled, strict=True):
        direct = train(spec)
        for name, values in direct.arrays().items():
            np.testing.assert_array_equal(result.arrays()[name], values, err_msg=name)
    caplog.clear()
    with caplog.at_level("INFO", logger="attnverify.store"):
        again = LocalExecutor(store, workers=2, progress=False).run(specs())
    lines = [r.getMessage() for r in caplog.records if r.name == "attnverify.store"]
    assert len(lines) == 3 and all(line.startswith("cached") for line in lines)
    assert [r.key for r in again] == [r.key for r in pooled]


def test_in_process_path_and_duplicates(store):
    spec = specs()[0]
    results = LocalExecutor(store, workers=1, progress=False).run([spec, spec])
    assert results[0] is results[1]
    assert list(store.keys()) == [spec.key()]


def test_progress_bar_advances_by_cost_and_names_the_claim():
    from attnverify.empirics.executor import _CostBar

    batch = specs()
    with _CostBar(batch, {batch[-1].key(): "snell.some_claim"}, "training", disable=False) as bar:
        for spec in batch:
            bar.done(spec)
        assert bar.bar.n == pytest.approx(100.0)
        assert f"{len(batch)}/{len(batch)} runs, last: snell.some_claim" in bar.bar.postfix
