"""The Dask distributed executor: the same sweep on a cluster.

``dask://HOST:PORT`` connects to a running Dask scheduler; ``dask-local`` starts a
``LocalCluster`` (real scheduler and worker processes on loopback) to try it out. Workers only
compute: a run's spec travels as its JSON dict, the worker trains it with one torch thread and
sends back the result's metadata and arrays; this client alone writes the run store (one writer),
after checking that the worker computed the same run key (the same ``empirics`` code). A worker
that dies mid-run is replaced by the scheduler, which reruns its tasks elsewhere
(``distributed.scheduler.allowed-failures`` times). Runs are seeded from their spec alone, so the
arrays equal the local executor's bit for bit.

``distributed`` is an optional dependency (``pip install 'attnverify[dask]'``): it is imported
only when a Dask executor is built.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from attnverify.empirics.execute.executor import (
    CodeMismatchError,
    CostBar,
    Executor,
    ExecutorSetupError,
    one_thread,
    unit_label,
    work_units,
    worker_count,
)
from attnverify.empirics.result import RunResult
from attnverify.empirics.spec import RunSpec
from attnverify.empirics.store.run_store import RunStore
from attnverify.empirics.train import train_group
from attnverify.empirics.versions import source_fingerprint

INSTALL_HINT = "pip install 'attnverify[dask]' (or: pip install 'dask[distributed]')"
_ADDRESS = re.compile(r"dask://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]+)")


def scheduler_address(text: str) -> str:
    """``dask://HOST:PORT`` -> ``tcp://HOST:PORT``; ExecutorSetupError naming the accepted form
    otherwise."""
    match = _ADDRESS.fullmatch(text)
    if match is None or not 1 <= int(match["port"]) <= 65535:
        raise ExecutorSetupError(f"malformed Dask address {text!r}; accepted: dask://HOST:PORT "
                                 f"with a port in 1..65535, or dask-local")
    return f"tcp://{match['host']}:{int(match['port'])}"


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ExecutorSetupError(f"the Dask executor needs the optional dependency "
                                 f"'distributed': {INSTALL_HINT}") from None
    return distributed


def train_remote(unit: list[dict[str, Any]]
                 ) -> list[tuple[dict[str, Any], dict[str, np.ndarray]]]:
    """The task a worker runs: train one unit of work (one run, or a seed-batched group; one
    torch thread), return each run's metadata and arrays."""
    one_thread()
    return [(result.metadata(), result.arrays())
            for result in train_group([RunSpec.from_dict(data) for data in unit])]


class DaskExecutor(Executor):
    """Runs the missing specs as Dask tasks; the client publishes each result to the store.

    ``address`` is ``dask://HOST:PORT`` or ``dask-local`` (then ``workers`` worker processes,
    default: the number of cores, each with one thread, on 127.0.0.1).
    """

    def __init__(self, store: RunStore, address: str, workers: int | None = None,
                 progress: bool = True, connect_timeout: float = 10.0,
                 device: str | None = None, seed_group: int | None = None) -> None:
        super().__init__(store, progress, device, seed_group)
        n_workers = worker_count(workers)  # validated even when a remote cluster ignores it
        local = address == "dask-local"
        target = None if local else scheduler_address(address)  # before importing: fast errors
        distributed = _import_distributed()
        self.cluster = None
        if local:
            # one thread per worker (a run is one torch thread); the scheduler's HTTP server
            # always starts, so it gets a free loopback port (8787 may be taken)
            self.cluster = distributed.LocalCluster(
                n_workers=n_workers, threads_per_worker=1,
                processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0",
                silence_logs=logging.ERROR)
            target = self.cluster.scheduler_address
        try:
            self.client = distributed.Client(target, timeout=f"{connect_timeout}s",
                                             set_as_default=False)
        except (OSError, TimeoutError) as exc:
            self.close()
            raise ExecutorSetupError(f"cannot reach the Dask scheduler at {address} "
                                     f"({target}) within {connect_timeout:g} s: {exc}") from None
        self.address = target

    # read-only here: the base's plain attribute is set only by executors that fix their workers
    @property
    def workers(self) -> int:  # type: ignore[override]
        """The cluster's workers now (at least 1)."""
        return len(self.client.scheduler_info().get("workers", {})) or 1

    def _compute(self, missing: Sequence[RunSpec], bar: CostBar) -> dict[str, RunResult]:
        from distributed import as_completed

        units = work_units(missing, self.workers, self.seed_group)
        futures = {self.client.submit(train_remote, [s.to_dict() for s in unit],
                                      key=f"attnverify-{unit[0].key()}-{len(unit)}",
                                      pure=False): unit
                   for unit in units}
        results: dict[str, RunResult] = {}
        try:
            for future in as_completed(futures, loop=self.client.loop):
                unit = futures[future]
                if future.status != "finished":
                    error = future.exception()
                    raise RuntimeError(f"{unit_label(unit)} failed on the Dask cluster: "
                                       f"{type(error).__name__}: {error}") from error
                for spec, (metadata, arrays) in zip(unit, future.result(), strict=True):
                    worker_source = metadata.get("versions", {}).get("empirics_source")
                    if (metadata.get("key") != spec.key()
                            or worker_source != source_fingerprint()):
                        raise CodeMismatchError(
                            f"a Dask worker trained {spec.key()} with other attnverify code "
                            f"than this client's (run key {metadata.get('key')}, sources "
                            f"{worker_source} against {source_fingerprint()}); install the "
                            f"same version on the workers")
                    result = RunResult.from_parts(metadata, arrays)
                    self.store.put(result)  # the client is the store's only writer
                    results[spec.key()] = result
                    bar.done(spec)
                future.release()
        finally:
            self.client.cancel([f for f in futures if not f.done()])
        return results

    def close(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            client.close()
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None
