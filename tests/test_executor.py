"""The local executor: same results as in-process training, cache reuse, progress to the store."""

from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from attnverify.empirics import CopyTask, LocalExecutor, RunSpec, RunStore, Seq2SeqConfig, train


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
    with caplog.at_level("DEBUG", logger="attnverify.store"):
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
    from attnverify.empirics.execute.executor import CostBar

    batch = specs()
    with CostBar(batch, {batch[-1].key(): "snell.some_claim"}, "training", disable=False) as bar:
        for spec in batch:
            bar.done(spec)
        assert bar.bar.n == pytest.approx(100.0)
        assert f"{len(batch)}/{len(batch)} runs, last: snell.some_claim" in bar.bar.postfix


def slow_specs(n: int = 4) -> list[RunSpec]:
    """Runs of a second or so each: long enough for a worker to be killed mid-run."""
    return [RunSpec(task=CopyTask("subset", 10, 6), model=Seq2SeqConfig(hidden=32), steps=300,
                    batch_size=32, eval_every=100, eval_size=16, seed=s) for s in range(n)]


def kill_busy_workers(executor: LocalExecutor, times: int, only: str | None = None,
                      stop: threading.Event | None = None) -> list[str]:
    """Kill -9 a worker training a unit (the one holding run ``only`` when given), ``times``
    times, as the out-of-memory killer would; the keys of the units killed."""
    killed: list[str] = []
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while len(killed) < times and time.monotonic() < deadline and not (stop and stop.is_set()):
        pool = executor.pool
        for pid, keys in pool.busy() if pool is not None else []:
            if pid not in seen and (only is None or only in keys):
                time.sleep(0.5)  # into the unit: importing torch, or training
                os.kill(pid, signal.SIGKILL)
                seen.add(pid)
                killed.append(keys[0])
                break
        time.sleep(0.05)
    return killed


def test_a_killed_worker_is_replaced_and_the_sweep_equals_an_undisturbed_one(store):
    executor = LocalExecutor(store, workers=2, progress=False)
    with ThreadPoolExecutor(1) as killer:
        killed = killer.submit(kill_busy_workers, executor, 1)
        results = executor.run(slow_specs())
    assert len(killed.result()) == 1 and executor.pool.restarts == 1
    assert sorted(store.keys()) == sorted(s.key() for s in slow_specs())
    for spec, result in zip(slow_specs(), results, strict=True):
        direct = train(spec)
        for name, values in direct.arrays().items():
            np.testing.assert_array_equal(result.arrays()[name], values, err_msg=name)
        stored = store.get(spec.key())
        np.testing.assert_array_equal(stored.metric("acc"), direct.metric("acc"))


def test_negative_control_an_undisturbed_sweep_restarts_no_worker(store):
    executor = LocalExecutor(store, workers=2, progress=False)
    executor.run(slow_specs(3))
    assert executor.pool.restarts == 0


def test_a_run_whose_worker_dies_at_every_attempt_ends_in_one_line(store):
    from attnverify.empirics.execute.worker_pool import MAX_ATTEMPTS, WorkerDiedError

    executor = LocalExecutor(store, workers=2, progress=False)
    doomed = slow_specs()[0].key()
    stop = threading.Event()
    with ThreadPoolExecutor(1) as killer:
        killed = killer.submit(kill_busy_workers, executor, MAX_ATTEMPTS, doomed, stop)
        with pytest.raises(WorkerDiedError) as error:
            executor.run(slow_specs())
        stop.set()
    assert killed.result() == [doomed] * MAX_ATTEMPTS
    message = str(error.value)
    assert "\n" not in message and doomed in message and f"died {MAX_ATTEMPTS} times" in message
    assert doomed not in set(store.keys())
    assert set(store.keys()) <= {s.key() for s in slow_specs()}


def test_runs_cleared_by_another_process_mid_sweep_still_reach_the_sweep(store):
    """``runs clear`` in another shell while a sweep trains: the sweep still returns every
    run (its workers send their results back), identical to undisturbed training."""
    executor = LocalExecutor(store, workers=2, progress=False)
    stop = threading.Event()

    def clear_repeatedly() -> int:
        cleared = 0
        while not stop.is_set():
            cleared += RunStore(store.root).clear()
            time.sleep(0.05)
        return cleared

    with ThreadPoolExecutor(1) as other_shell:
        cleared = other_shell.submit(clear_repeatedly)
        try:
            results = executor.run(slow_specs(3))
        finally:  # a failing sweep must not leave the clearing thread running forever
            stop.set()
    assert cleared.result() >= 1  # the store lost runs while the sweep ran
    for spec, result in zip(slow_specs(3), results, strict=True):
        assert result.key == spec.key()
        np.testing.assert_array_equal(result.metric("acc"), train(spec).metric("acc"))


def test_a_workers_os_error_keeps_its_errno_for_the_one_line_disk_message(store):
    """A full disk in a pool worker reaches the CLI as the OSError it was (errno and file),
    which compare.cli.entry turns into its one-line message."""
    import errno
    import multiprocessing

    from attnverify.empirics.execute.worker_pool import WorkerPool, _Worker

    ours, theirs = multiprocessing.Pipe()
    theirs.send(("error", "os", (errno.ENOSPC, "No space left on device", "/cache/x",
                                 "[Errno 28] No space left on device: '/cache/x'"), "trace"))
    pool = WorkerPool(2, store, lambda unit: "a unit")
    worker = _Worker(process=multiprocessing.current_process(), conn=ours, unit=specs()[:1])
    error = pool._settle(worker, None, None, {}, lambda spec, result: None)
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC
    assert error.filename == "/cache/x" and worker.unit is None
    assert any("a unit" in note for note in error.__notes__)
    # an OSError without errno keeps its message
    theirs.send(("error", "os", (None, None, None, "corpus /x not found"), "trace"))
    worker.unit = specs()[:1]
    error = pool._settle(worker, None, None, {}, lambda spec, result: None)
    assert isinstance(error, OSError) and str(error) == "corpus /x not found"
