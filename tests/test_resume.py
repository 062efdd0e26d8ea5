"""Kill ``attnverify verify`` with SIGKILL in the middle of a sweep, start it again: it resumes,
recomputes only the missing runs, and its report equals an uninterrupted one. Stop it
with SIGTERM or SIGKILL while a pool trains: no worker outlives it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ARGS = ["-m", "attnverify.compare.cli", "verify", "--claim", "bao.locater_effect", "--profile",
        "smoke", "--verbose"]


def verify(cache: Path, out: Path, capture: bool = True, workers: int = 1,
           log: Path | None = None) -> subprocess.Popen:
    """``verify`` in a subprocess; its output piped (``capture``), discarded, or written to
    ``log`` (a file, unlike a pipe, does not keep a reader waiting for processes that
    inherited it)."""
    command = [sys.executable, *ARGS, "--workers", str(workers), "--out", str(out)]
    env = {**os.environ, "ATTNVERIFY_CACHE": str(cache)}
    if log is not None:
        with log.open("w") as file:  # the child holds its own copy of the descriptor
            return subprocess.Popen(command, env=env, stdout=file, stderr=file)
    stream = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen(command, env=env, stdout=stream, stderr=stream, text=True)


def stored(cache: Path) -> int:
    return len(list((cache / "runs").glob("*/*/meta.json"))) if (cache / "runs").exists() else 0


def comparable(report: Path) -> list[tuple]:
    doc = json.loads((report / "report.json").read_text())
    return [(c["id"], c["verdict"], json.dumps(c["empirical"], sort_keys=True),
             tuple(c["run_keys"])) for c in doc["claims"]]


def test_sigkill_mid_sweep_then_resume_equals_uninterrupted(tmp_path):
    reference = verify(tmp_path / "ref-cache", tmp_path / "ref")
    reference.communicate(timeout=600)
    assert reference.returncode == 0
    total = stored(tmp_path / "ref-cache")

    cache = tmp_path / "cache"
    first = verify(cache, tmp_path / "killed", capture=False)
    deadline = time.time() + 300
    while stored(cache) < 2 and time.time() < deadline and first.poll() is None:
        time.sleep(0.05)
    assert first.poll() is None, "the sweep ended before it could be killed"
    first.send_signal(signal.SIGKILL)
    first.wait()
    done_before = stored(cache)
    assert 2 <= done_before < total
    assert not (tmp_path / "killed" / "report.json").exists()

    second = verify(cache, tmp_path / "resumed")
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0
    assert err.count("(not in cache)") == total - done_before  # only the missing runs
    assert comparable(tmp_path / "resumed") == comparable(tmp_path / "ref")


def test_two_verify_processes_on_one_cache_corrupt_and_duplicate_nothing(tmp_path):
    from attnverify.empirics import RunStore

    cache = tmp_path / "cache"
    both = [verify(cache, tmp_path / f"report{i}") for i in range(2)]
    errs = [proc.communicate(timeout=600)[1] for proc in both]
    assert [proc.returncode for proc in both] == [0, 0], errs
    assert comparable(tmp_path / "report0") == comparable(tmp_path / "report1")
    store = RunStore(cache)
    keys = list(store.keys())
    run_keys = {k for c in json.loads((tmp_path / "report0" / "report.json").read_text())[
        "claims"] for k in c["run_keys"]}
    assert sorted(keys) == sorted(run_keys)  # one entry per run, none missing or extra
    assert all(store.get(key) is not None for key in keys)  # every entry reads back intact
    leftovers = list((cache / "tmp").iterdir()) if (cache / "tmp").exists() else []
    assert leftovers == [] and not (cache / "corrupt").exists()


def children(pid: int) -> set[int]:
    """Live processes whose parent is ``pid`` (Linux /proc)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we looked
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited; only its exit status waits to be collected


def pool_running(cache: Path, tmp_path: Path) -> tuple[subprocess.Popen, set[int]]:
    """A ``verify`` with 2 pool workers, once it has stored a run and its workers train."""
    proc = verify(cache, tmp_path / "report", workers=2, log=tmp_path / "log")
    deadline = time.time() + 300
    while (stored(cache) < 1 or len(children(proc.pid)) < 2) and time.time() < deadline:
        assert proc.poll() is None, "the sweep ended before it could be stopped"
        time.sleep(0.05)
    workers = children(proc.pid)
    assert len(workers) >= 2 and proc.poll() is None
    return proc, workers


def none_alive(pids: set[int], within_s: float) -> bool:
    """Whether every process of ``pids`` ends within ``within_s``; the survivors are killed
    (a failing test leaves no process behind)."""
    deadline = time.time() + within_s
    while any(alive(pid) for pid in pids) and time.time() < deadline:
        time.sleep(0.1)
    survivors = [pid for pid in pids if alive(pid)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    return not survivors


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_sigterm_stops_verify_and_its_pool_workers(tmp_path):
    cache = tmp_path / "cache"
    proc, workers = pool_running(cache, tmp_path)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert none_alive(workers, within_s=10), "a pool worker outlived verify"
    assert proc.returncode == 128 + signal.SIGTERM
    assert "interrupted; finished runs are cached" in (tmp_path / "log").read_text()
    assert not (tmp_path / "report" / "report.json").exists()
    done = stored(cache)
    assert done >= 1
    time.sleep(2)
    assert stored(cache) == done  # nothing trains on after the stop


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_pool_workers_exit_when_verify_is_killed(tmp_path):
    """SIGKILL gives verify no chance to stop its pool: the workers notice their parent is
    gone and exit (empirics.execute.worker_pool._init_worker)."""
    from attnverify.empirics.execute.executor import PARENT_POLL_S

    proc, workers = pool_running(tmp_path / "cache", tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert none_alive(workers, within_s=PARENT_POLL_S + 10), "a pool worker outlived verify"


def pool_workers(pids: set[int]) -> list[int]:
    """The pool's worker processes among ``pids`` (not multiprocessing's resource tracker)."""
    workers = []
    for pid in sorted(pids):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                workers.append(pid)
        except OSError:
            continue
    return workers


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
def test_a_worker_killed_mid_sweep_is_replaced_and_the_report_equals_an_undisturbed_one(
        tmp_path):
    """What the out-of-memory killer does to one worker: the sweep goes on (a new worker
    retries the unit it held, the other worker keeps its run) and ends as if undisturbed."""
    reference = verify(tmp_path / "ref-cache", tmp_path / "ref", workers=2)
    reference.communicate(timeout=600)
    assert reference.returncode == 0
    proc, pids = pool_running(tmp_path / "cache", tmp_path)
    victim = pool_workers(pids)[0]
    os.kill(victim, signal.SIGKILL)
    proc.wait(timeout=600)
    log = (tmp_path / "log").read_text()
    assert proc.returncode == 0, log[-2000:]
    assert "a worker died (killed by signal 9)" in log and "Traceback" not in log
    assert comparable(tmp_path / "report") == comparable(tmp_path / "ref")
