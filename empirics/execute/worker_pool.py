"""The local executor's worker processes: a pool that outlives the death of a worker.

A worker killed from outside (the out-of-memory killer, ``kill -9``) takes only the unit it was
training with it: the pool starts a new worker in its place and gives that unit to the next free
worker, while the other workers go on with theirs. Units are retried in full (a run's numbers
depend on its spec alone, so a retried run equals an undisturbed one); a unit whose worker
dies :data:`MAX_ATTEMPTS` times ends the sweep with one line naming it. An exception raised by
training (a bug, a full disk) is not retried: no new unit starts, the units in progress finish
and are stored, and the error is raised.

Each worker trains with one torch thread, stores every result itself (a finished run survives
any interruption of the sweep) and sends it back to the parent, which therefore never reads back
from the store what another process may have removed meanwhile (``runs clear`` in another
shell). A worker exits when its parent is gone (checked every :data:`PARENT_POLL_S` seconds).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

import torch

from attnverify.empirics.result import RunResult
from attnverify.empirics.spec import RunSpec
from attnverify.empirics.store.run_store import RunStore
from attnverify.empirics.train import train_group
from attnverify.empirics.versions import source_fingerprint

log = logging.getLogger("attnverify.executor")

MAX_SEND_FAILURES = 10
"""How many times in a row a new worker may be gone before it takes its first unit, before the
pool gives up (workers that cannot even start)."""
MAX_ATTEMPTS = 3
"""How many times a unit is started before a worker death is taken as the unit's own doing
(e.g. a run that needs more memory than the machine has)."""
PARENT_POLL_S = 1.0
"""How often a worker checks that the process that started it is still alive."""
STOP_WAIT_S = 10.0
"""How long an idle worker is given to exit after the sweep before it is terminated."""


class CodeMismatchError(RuntimeError):
    """A worker loaded other ``empirics`` sources than this process (edited mid-sweep, or
    another install on a remote worker): it trains nothing, since its runs would be stored
    under keys that this process's code names (keys carry declared versions, not sources)."""


class WorkerDiedError(RuntimeError):
    """A unit's worker died :data:`MAX_ATTEMPTS` times while training it."""


def one_thread() -> None:
    """Every worker trains with one torch thread: results equal the in-process path's."""
    torch.set_num_threads(1)


def _init_worker(parent: int) -> None:
    """One torch thread, the fingerprint of the sources just imported, and exit when
    ``parent`` is gone: a parent killed without a chance to stop its pool (SIGKILL, a crash)
    would otherwise leave its workers training runs nobody waits for."""
    one_thread()
    source_fingerprint()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: it stops the pool

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def train_and_store(unit: list[dict[str, Any]], store_root: str,
                    fingerprint: str) -> list[RunResult]:
    """A worker's task: refuse (CodeMismatchError) when its sources differ from the parent's,
    else train the unit and store each result; returns the results."""
    if source_fingerprint() != fingerprint:
        raise CodeMismatchError("the empirics code changed while the sweep ran (a worker "
                                "loaded other sources than the verify process); run again")
    store = RunStore(store_root)
    results = train_group([RunSpec.from_dict(data) for data in unit],
                          checkpoints=store.checkpoints)
    for result in results:
        store.put(result)
    return results


def _worker_main(conn: Connection, parent: int, store_root: str, fingerprint: str) -> None:
    """A worker's loop: a unit (spec dicts) in, ``("done", [(metadata, arrays), ...])`` or
    ``("error", kind, message, traceback)`` out (an OSError's message: its errno, text, file
    name and the whole message); ``None`` or a closed pipe ends it."""
    _init_worker(parent)
    while True:
        try:
            unit = conn.recv()
        except (EOFError, OSError):
            return
        if unit is None:
            return
        try:
            results = train_and_store(unit, store_root, fingerprint)
        except OSError as exc:  # e.g. a full disk: its errno tells the CLI what to say
            conn.send(("error", "os", (exc.errno, exc.strerror, exc.filename, str(exc)),
                       traceback.format_exc()))
        except Exception as exc:  # the parent decides; the worker stays usable
            kind = "code" if isinstance(exc, CodeMismatchError) else "other"
            conn.send(("error", kind, f"{type(exc).__name__}: {exc}", traceback.format_exc()))
        else:
            conn.send(("done", [(r.metadata(), r.arrays()) for r in results]))


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    unit: list[RunSpec] | None = None


@dataclass
class WorkerPool:
    """``workers`` processes training units of runs for ``store`` (module docstring)."""

    workers: int
    store: RunStore
    describe: Callable[[Sequence[RunSpec]], str]
    """A unit in an error message."""
    restarts: int = 0
    """Workers started in place of dead ones during the last :meth:`run`."""
    _pool: list[_Worker] = field(default_factory=list)

    def busy(self) -> list[tuple[int, list[str]]]:
        """(process id, run keys) of each worker training a unit now."""
        return [(w.process.pid or 0, [s.key() for s in w.unit])
                for w in list(self._pool) if w.unit is not None]

    def run(self, units: Sequence[list[RunSpec]],
            done: Callable[[RunSpec, RunResult], None]) -> None:
        """Train every unit (in the given order), calling ``done`` per finished run."""
        pending = deque(units)
        attempts: dict[int, int] = {}
        failure: Exception | None = None
        self.restarts = send_failures = 0
        context = multiprocessing.get_context("spawn")  # fork after torch init can deadlock
        try:
            self._pool = [self._start(context) for _ in range(min(self.workers, len(units)))]
            while True:
                for index, worker in enumerate(self._pool):
                    if worker.unit is None and pending and failure is None:
                        if not worker.process.is_alive():  # died idle: no unit lost
                            worker = self._pool[index] = self._start(context)
                            self.restarts += 1
                        try:
                            worker.conn.send([s.to_dict() for s in pending[0]])
                        except OSError:  # gone since the check: replaced on the next pass
                            send_failures += 1
                            if send_failures > MAX_SEND_FAILURES:
                                raise WorkerDiedError(
                                    f"{MAX_SEND_FAILURES} new workers in a row were gone "
                                    f"before their first run; nothing more can train "
                                    f"here") from None
                            continue
                        send_failures = 0
                        worker.unit = pending.popleft()
                        attempts[id(worker.unit)] = attempts.get(id(worker.unit), 0) + 1
                busy = [w for w in self._pool if w.unit is not None]
                if not busy:
                    if pending and failure is None:
                        continue  # a worker was gone before it took a unit: try again
                    break
                wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
                for worker in busy:
                    error = self._settle(worker, context, pending, attempts, done)
                    failure = failure or error
        except BaseException:  # Ctrl-C, SIGTERM through the CLI: stop every worker now
            self._stop(terminate=True)
            raise
        self._stop(terminate=False)
        if failure is not None:
            raise failure

    def _settle(self, worker: _Worker, context: Any, pending: deque[list[RunSpec]],
                attempts: dict[int, int],
                done: Callable[[RunSpec, RunResult], None]) -> Exception | None:
        """Take what ``worker`` reported, if anything: its results, its error (returned), or
        its death (its unit requeued, a new worker in its place)."""
        unit = worker.unit
        assert unit is not None
        try:
            message = worker.conn.recv() if worker.conn.poll() else None
        except (EOFError, OSError):
            message = None
        if message is None:
            if worker.process.is_alive():
                return None  # still training
            return self._replace(worker, context, pending, attempts)
        worker.unit = None
        if message[0] == "error":
            _, kind, text, worker_traceback = message
            if kind == "code":
                return CodeMismatchError(text)
            if kind == "os":  # the worker's OSError, errno and file name kept
                code, strerror, filename, whole = text
                error: Exception = (OSError(code, strerror, filename) if code is not None
                                    else OSError(whole))
                error.add_note(f"while training {self.describe(unit)}")
            else:
                error = RuntimeError(f"{self.describe(unit)} failed: {text}")
            error.add_note(f"in the worker:\n{worker_traceback}")
            return error
        results = [RunResult.from_parts(meta, arrays) for meta, arrays in message[1]]
        if [r.key for r in results] != [s.key() for s in unit]:
            return CodeMismatchError("the empirics code changed while the sweep ran (a "
                                     "worker computed a different run key); run again")
        for spec, result in zip(unit, results, strict=True):
            done(spec, result)
        return None

    def _replace(self, worker: _Worker, context: Any, pending: deque[list[RunSpec]],
                 attempts: dict[int, int]) -> Exception | None:
        """``worker`` died while training its unit: requeue the unit and start another
        worker in its place, unless the unit has used up its attempts (then the error is
        returned, and the dead worker stays in its slot, replaced only if asked to train)."""
        unit = worker.unit
        assert unit is not None
        worker.process.join()
        code = worker.process.exitcode
        worker.conn.close()
        worker.unit = None
        how = (f"killed by signal {-code}" if code is not None and code < 0
               else f"exit code {code}")
        if attempts[id(unit)] >= MAX_ATTEMPTS:
            return WorkerDiedError(f"{self.describe(unit)}: its worker died {MAX_ATTEMPTS} "
                                   f"times ({how}; the out-of-memory killer does this when a "
                                   f"run needs more memory than is free)")
        self._pool[self._pool.index(worker)] = self._start(context)
        self.restarts += 1
        log.warning("a worker died (%s) training %s; a new worker retries it (attempt %d of "
                    "%d)", how, self.describe(unit), attempts[id(unit)] + 1, MAX_ATTEMPTS)
        pending.appendleft(unit)
        return None

    def _start(self, context: Any) -> _Worker:
        ours, theirs = context.Pipe()
        process = context.Process(target=_worker_main, name="attnverify-worker", daemon=True,
                                  args=(theirs, os.getpid(), str(self.store.root),
                                        source_fingerprint()))
        process.start()
        theirs.close()
        return _Worker(process, ours)

    def _stop(self, terminate: bool) -> None:
        """End every worker: idle ones are asked to exit, busy ones (or all, on
        ``terminate``) are terminated; waits for them."""
        for worker in self._pool:
            if terminate or worker.unit is not None:
                worker.process.terminate()
            else:
                with contextlib.suppress(OSError):  # already gone
                    worker.conn.send(None)
        deadline = time.monotonic() + STOP_WAIT_S
        for worker in self._pool:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()
        self._pool = []
