"""Kill ``attnverify verify`` with SIGKILL in the middle of a sweep, start it again: it resumes,
recomputes only the missing runs, and its report equals an uninterrupted one (issue 8)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ARGS = ["-m", "compare.cli", "verify", "--claim", "bao.locater_effect", "--profile", "smoke",
        "--workers", "1"]


def verify(cache: Path, out: Path, capture: bool = True) -> subprocess.Popen:
    env = {**os.environ, "ATTNVERIFY_CACHE": str(cache)}
    stream = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, *ARGS, "--out", str(out)], env=env,
                            stdout=stream, stderr=stream, text=True)


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
    from empirics import RunStore

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
