"""Run identity (docs/run-store.md#run-identity): a key is the canonical spec plus the
declared numerics versions of its task, model, optimizer and the loop, never source bytes.
Editing a docstring of the loop keeps every key; a bumped version changes exactly the keys of
the runs that use the class; a config or a claim without a version is refused when it is
defined; runs stored by attnverify 0.1.0 are re-keyed only when their old key checks out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import attnverify
from attnverify.compare.claim import Claim
from attnverify.compare.registry import register
from attnverify.empirics import (
    SGD,
    CopyTask,
    FreeAttentionToyConfig,
    ModelConfig,
    RunResult,
    RunSpec,
    RunStore,
    Seq2SeqConfig,
)
from attnverify.empirics.store.archive import pack, unpack
from attnverify.empirics.store.legacy_keys import legacy_key, migrate_store

PACKAGE_ROOT = Path(attnverify.__file__).parent
SPECS = [
    RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8), steps=3, seed=s)
    for s in range(3)
] + [RunSpec(task=CopyTask("subset", 8, 4), model=FreeAttentionToyConfig(), optimizer=SGD(),
             steps=5, dtype="float64")]
KEYS_SCRIPT = textwrap.dedent("""
    import json, sys
    import attnverify
    from attnverify.empirics import RunSpec
    specs = json.loads(sys.stdin.read())
    print(json.dumps({"file": attnverify.__file__,
                      "keys": [RunSpec.from_dict(s).key() for s in specs]}))
""")


def _keys_with_package_at(root: Path) -> tuple[str, list[str]]:
    """The keys of SPECS computed by a fresh interpreter importing ``root/attnverify``."""
    proc = subprocess.run([sys.executable, "-c", KEYS_SCRIPT], cwd=root, check=True,
                          input=json.dumps([s.to_dict() for s in SPECS]), capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(root)})
    out = json.loads(proc.stdout)
    return out["file"], out["keys"]


def test_a_docstring_edit_in_the_training_loop_keeps_every_key(tmp_path):
    copy = tmp_path / "attnverify"
    copy.mkdir()
    shutil.copy2(PACKAGE_ROOT / "__init__.py", copy / "__init__.py")
    for folder in ("theory", "empirics", "compare"):
        shutil.copytree(PACKAGE_ROOT / folder, copy / folder,
                        ignore=shutil.ignore_patterns("__pycache__"))
    train_py = copy / "empirics" / "train.py"
    source = train_py.read_text()
    edited = source.replace('"""The one training loop', '"""The one (edited) training loop', 1)
    assert edited != source
    train_py.write_text(edited + "\n# a comment added at the end\n")
    (copy / "empirics" / "spec.py").write_text(
        (copy / "empirics" / "spec.py").read_text().replace("Its identity is", "Its id is", 1))
    where, keys = _keys_with_package_at(tmp_path)
    assert Path(where).parent == copy  # the edited copy was imported, not the installed one
    assert keys == [s.key() for s in SPECS]


def test_a_bumped_version_changes_the_keys_of_its_runs_only(monkeypatch):
    before = [s.key() for s in SPECS]
    monkeypatch.setattr(Seq2SeqConfig, "code_version", Seq2SeqConfig.code_version + 1)
    after = [s.key() for s in SPECS]
    assert all(a != b for a, b in zip(before[:3], after[:3], strict=True))
    assert before[3] == after[3]  # the free-attention toy does not use Seq2SeqConfig


def test_a_kind_taken_by_another_class_is_refused():
    with pytest.raises(TypeError, match=r"declares model kind 'snell_seq2seq', which "):
        @dataclass(frozen=True)
        class Impostor(ModelConfig):
            kind = "snell_seq2seq"
            code_version = 1


def test_a_config_without_a_numerics_version_is_refused_in_one_line():
    with pytest.raises(TypeError) as info:
        @dataclass(frozen=True)
        class Unversioned(ModelConfig):
            kind = "test_unversioned"
            width: int = 4

    message = str(info.value)
    assert "\n" not in message and "Unversioned" in message and "code_version = 1" in message
    with pytest.raises(TypeError, match="integer >= 1"):
        class BadVersion(ModelConfig):
            kind = "test_bad_version"
            code_version = "1"


def test_a_subclass_that_inherits_a_kind_is_refused():
    with pytest.raises(TypeError, match=r"inherits kind 'snell_seq2seq'.*own kind"):
        @dataclass(frozen=True)
        class Tweaked(Seq2SeqConfig):
            def build(self, task):
                raise NotImplementedError


def test_a_claim_without_a_version_is_refused_at_registration():
    class Unversioned(Claim):
        id = "test.unversioned"
        paper = "test"
        statement = "nothing"
        defaults = {}  # noqa: RUF012

        def assess(self, params, results):
            raise NotImplementedError

    with pytest.raises(TypeError, match=r"Unversioned.*code_version = 1"):
        register(Unversioned)


def _result(spec: RunSpec) -> RunResult:
    steps = np.array(spec.eval_steps())  # [0, 3]: three steps, evaluated every 10
    return RunResult(spec=spec, status="ok", eval_steps=steps,
                     metrics={"acc": np.array([0.1, 0.2])}, train_loss=np.zeros(spec.steps))


def _store_under(store: RunStore, key: str, result: RunResult) -> None:
    """Store ``result`` as if an older attnverify had stored it under ``key``."""
    store.put(result)
    entry = next((store.root / "runs").glob(f"*/{result.key}"))
    meta = json.loads((entry / "meta.json").read_text())
    meta["key"] = key
    store.publish_files(key, (entry / "arrays.npz").read_bytes(), json.dumps(meta).encode())
    store.remove(result.key)


def _archive_of(path: Path, entries: list[tuple[RunStore, str]]) -> None:
    """An archive of stored entries as they are, stale or not (as 0.1.0's pack wrote them)."""
    with tarfile.open(path, "w:gz") as tar:
        for store, key in entries:
            for name in ("meta.json", "arrays.npz"):
                tar.add(store.root / "runs" / key[:2] / key / name,
                        f"runs/{key[:2]}/{key}/{name}")


def test_runs_of_the_previous_key_scheme_are_re_keyed_when_their_key_checks_out(tmp_path):
    store = RunStore(tmp_path / "old")
    legacy, other = SPECS[0], SPECS[1]
    _store_under(store, legacy_key(legacy), _result(legacy))
    _store_under(store, "0" * 24, _result(other))  # not the 0.1.0 key of its spec
    stored = list(store.keys())
    assert len(stored) == 2 and not any(store.is_current(k) for k in stored)
    archive = tmp_path / "old.tar.gz"
    pack(store, archive)  # an archive of stale entries holds none of them ...
    assert unpack(RunStore(tmp_path / "x"), archive).imported == 0

    # ... so build the 0.1.0 archive by hand
    _archive_of(archive, [(store, key) for key in stored])
    target = RunStore(tmp_path / "new")
    done = unpack(target, archive)
    assert (done.imported, done.migrated, done.stale) == (1, 1, 1)
    assert list(target.keys()) == [legacy.key()] and target.get(legacy.key()).spec == legacy

    # an archive holding the same run under its 0.1.0 key and its current key imports it once
    both = tmp_path / "both.tar.gz"
    _archive_of(both, [(store, legacy_key(legacy)), (target, legacy.key())])
    done = unpack(RunStore(tmp_path / "third"), both)
    assert (done.imported, done.present, done.stale) == (1, 1, 0)

    assert migrate_store(store) == (1, 1)
    assert store.is_current(legacy.key()) and legacy_key(legacy) not in set(store.keys())
    assert store.get(legacy.key()).metrics["acc"].tolist() == [0.1, 0.2]


PINNED_0_1_0 = [
    ("682ea88500dbd342fde22a4d",
     {"task": {"kind": "toy_classifier"},
      "model": {"kind": "toy_classifier", "p0": 0.5, "beta0": 0.0, "beta1": 0.0},
      "optimizer": {"kind": "sgd", "lr": 5e-05}, "steps": 40000, "batch_size": 1,
      "eval_every": 200, "eval_size": 1, "seed": 0, "dtype": "float64", "device": "cpu",
      "attention_snapshots": [1]}),
    ("0a3ea71afe907072357d36c6",
     {"task": {"kind": "copy", "distribution": "permutation", "vocab_size": 40, "length": 40},
      "model": {"kind": "snell_seq2seq", "hidden": 256, "attention": "learned", "heads": 1,
                "cell": "lstm", "shared_embedding": True, "base_seed": None, "head_seeds": []},
      "optimizer": {"kind": "adam", "lr": 0.001}, "steps": 0, "batch_size": 128,
      "eval_every": 10, "eval_size": 50, "seed": 12, "dtype": "float32", "device": "cpu",
      "attention_snapshots": [0]}),
]
"""Two runs of the archives in ``paper_figures/runs/`` as attnverify 0.1.0 stored them: their
keys are those 0.1.0 computed, not recomputed by the function under test."""


@pytest.mark.parametrize(("old_key", "spec"), PINNED_0_1_0)
def test_the_0_1_0_key_is_reproduced_exactly(old_key, spec):
    assert legacy_key(RunSpec.from_dict(spec)) == old_key


def test_a_worker_with_other_sources_trains_and_stores_nothing(tmp_path):
    from attnverify.empirics.execute.worker_pool import CodeMismatchError, train_and_store
    from attnverify.empirics.versions import source_fingerprint

    unit = [SPECS[3].to_dict()]
    with pytest.raises(CodeMismatchError, match="changed while the sweep ran"):
        train_and_store(unit, str(tmp_path / "c"), "not-" + source_fingerprint())
    assert not list(RunStore(tmp_path / "c").keys())
    results = train_and_store(unit, str(tmp_path / "c"), source_fingerprint())
    assert [r.key for r in results] == [SPECS[3].key()] == list(RunStore(tmp_path / "c").keys())


def test_the_source_fingerprint_covers_sub_packages(tmp_path, monkeypatch):
    """A worker whose ``empirics/models/`` (or any sub-package) differs must not pass the
    sweep's source check: the fingerprint hashes every source file below the package."""
    from attnverify.empirics import versions

    (tmp_path / "models").mkdir()
    (tmp_path / "train.py").write_text("x = 1\n")
    (tmp_path / "models" / "net.py").write_text("y = 1\n")
    monkeypatch.setattr(versions, "_PACKAGE_DIR", tmp_path)
    versions.source_fingerprint.cache_clear()
    try:
        before = versions.source_fingerprint()
        versions.source_fingerprint.cache_clear()
        (tmp_path / "models" / "net.py").write_text("y = 2\n")
        assert versions.source_fingerprint() != before
    finally:
        versions.source_fingerprint.cache_clear()
