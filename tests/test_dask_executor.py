"""The Dask executor against a real LocalCluster on loopback: the same run keys and
bit-identical arrays as in-process training and the local pool, whatever the worker count; a
worker killed mid-run is replaced and the sweep completes; setup problems are clear errors."""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time

import numpy as np
import pytest

from attnverify.empirics import CopyTask, LocalExecutor, RunSpec, RunStore, Seq2SeqConfig, train
from attnverify.empirics.execute.dask_executor import DaskExecutor, scheduler_address
from attnverify.empirics.execute.executor import ExecutorSetupError

distributed = pytest.importorskip("distributed")


def specs(steps: int = 8, n: int = 3) -> list[RunSpec]:
    return [RunSpec(task=CopyTask("subset", 12, 8), model=Seq2SeqConfig(hidden=32), steps=steps,
                    batch_size=16, eval_every=max(1, steps // 3), eval_size=16, seed=s,
                    attention_snapshots=(steps,))
            for s in range(n)]


def assert_same_arrays(results, reference) -> None:
    for got, want in zip(results, reference, strict=True):
        assert got.key == want.key
        assert got.status == want.status
        assert got.arrays().keys() == want.arrays().keys()
        for name, values in want.arrays().items():
            np.testing.assert_array_equal(got.arrays()[name], values, err_msg=name)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                  silence_logs=logging.CRITICAL) as local:
        yield local


def dask_url(cluster) -> str:
    return "dask://" + cluster.scheduler_address.removeprefix("tcp://")


@pytest.mark.parametrize("text", ["dask://", "dask://host", "dask://host:", "dask://:8786",
                                  "dask://host:0", "dask://host:65536", "dask://host:port",
                                  "dask://a b:1", "tcp://host:8786", "dask:/host:1"])
def test_malformed_addresses_are_rejected_before_connecting(text):
    with pytest.raises(ExecutorSetupError, match="malformed Dask address"):
        scheduler_address(text)


def test_address_forms():
    assert scheduler_address("dask://10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert scheduler_address("dask://node-1.cluster:08786") == "tcp://node-1.cluster:8786"
    assert scheduler_address("dask://[::1]:8786") == "tcp://[::1]:8786"


def test_without_distributed_the_error_says_how_to_install(monkeypatch, store):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(ExecutorSetupError, match=r"pip install 'attnverify\[dask\]'"):
        DaskExecutor(store, "dask-local")


def test_unreachable_scheduler_is_a_setup_error(store):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(ExecutorSetupError, match="cannot reach the Dask scheduler"):
        DaskExecutor(store, f"dask://127.0.0.1:{port}", connect_timeout=1)
    assert time.monotonic() - start < 30


def test_same_keys_and_arrays_as_local_whatever_the_workers(cluster, tmp_path):
    batch = specs()
    direct = [train(spec) for spec in batch]
    pooled = LocalExecutor(RunStore(tmp_path / "local"), workers=2, progress=False).run(batch)
    store = RunStore(tmp_path / "dask")
    with DaskExecutor(store, dask_url(cluster), progress=False) as executor:
        remote = executor.run(batch)
        assert executor.computed == {s.key() for s in batch}
    with DaskExecutor(RunStore(tmp_path / "one"), "dask-local", workers=1,
                      progress=False) as executor:
        single = executor.run(batch)
    for results in (pooled, remote, single):
        assert_same_arrays(results, direct)
    # the client published every run; read back, they are the same again
    assert sorted(store.keys()) == sorted(s.key() for s in batch)
    assert_same_arrays([store.get(s.key()) for s in batch], direct)
    # a second sweep reads everything from the store and submits nothing
    with DaskExecutor(store, dask_url(cluster), progress=False) as executor:
        again = executor.run(batch)
        assert executor.computed == set()
    assert_same_arrays(again, direct)


def test_a_worker_killed_mid_run_is_replaced_and_the_sweep_completes(cluster, tmp_path):
    batch = specs(steps=150, n=4)  # about 1.5 s each: long enough to be killed while running
    killed: list[str] = []

    def kill_a_busy_worker() -> None:
        with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not killed:
                busy = [w for w, keys in client.processing().items() if keys]
                if busy:
                    pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                    time.sleep(0.5)  # inside the run, not at its start
                    os.kill(pid, signal.SIGKILL)
                    killed.append(busy[0])
                time.sleep(0.05)

    killer = threading.Thread(target=kill_a_busy_worker)
    store = RunStore(tmp_path / "cache")
    with DaskExecutor(store, dask_url(cluster), progress=False) as executor:
        killer.start()
        results = executor.run(batch)
    killer.join()
    assert killed, "no worker was busy, so none was killed: the test did not test anything"
    assert_same_arrays(results, [train(spec) for spec in batch])
    assert sorted(store.keys()) == sorted(s.key() for s in batch)


def test_verify_on_dask_writes_the_same_report_as_local(cluster, tmp_path, capsys):
    import json

    from attnverify.compare.cli import main

    def report(executor: str, name: str) -> list[tuple]:
        code = main(["verify", "--claim", "snell.uniform_attention_at_init", "--profile", "smoke",
                     "--executor", executor, "--workers", "2", "--cache", str(tmp_path / name),
                     "--out", str(tmp_path / f"{name}-report"), "--quiet"])
        assert code == 0, capsys.readouterr().err
        doc = json.loads((tmp_path / f"{name}-report" / "report.json").read_text())
        return [(c["id"], c["verdict"], json.dumps(c["empirical"], sort_keys=True),
                 tuple(c["run_keys"])) for c in doc["claims"]]

    local = report("local", "local")
    assert report(dask_url(cluster), "remote") == local
    assert report("dask-local", "dask-local") == local
