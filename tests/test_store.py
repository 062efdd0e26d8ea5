"""RunStore: round trip, atomicity under SIGKILL, concurrent writers, corruption detection."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from attnverify.empirics import CopyTask, CorruptEntryError, RunSpec, RunStore, Seq2SeqConfig, train
from attnverify.empirics.store import archive as archive_module
from attnverify.empirics.store.archive import Packed, Unpacked, pack, unpack


def tiny_spec(seed: int = 0) -> RunSpec:
    return RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8), steps=3,
                   batch_size=4, eval_every=1, eval_size=4, seed=seed, attention_snapshots=(3,))


def assert_same(a, b):
    assert a.spec == b.spec and a.status == b.status
    for name, values in a.arrays().items():
        np.testing.assert_array_equal(values, b.arrays()[name], err_msg=name)


def test_round_trip(store):
    result = train(tiny_spec())
    assert store.get(result.key) is None
    store.put(result)
    assert result.key in store
    assert_same(store.get(result.key), result)
    assert list(store.keys()) == [result.key]


def test_lookup_logs_one_line(store, caplog):
    spec = tiny_spec()
    caplog.clear()
    with caplog.at_level("DEBUG", logger="attnverify.store"):
        store.lookup(spec)
        store.put(train(spec))
        store.lookup(spec)
    messages = [r.getMessage() for r in caplog.records if r.name == "attnverify.store"]
    assert len(messages) == 2
    assert messages[0].startswith("compute") and "not in cache" in messages[0]
    assert messages[1].startswith("cached")


def test_remove_and_clear(store):
    a, b = train(tiny_spec(0)), train(tiny_spec(1))
    store.put(a)
    store.put(b)
    assert store.remove(a.key) and not store.remove(a.key)
    assert store.clear() == 1 and list(store.keys()) == []


@pytest.mark.parametrize("damage", ["truncate_arrays", "flip_byte", "bad_json", "old_schema"])
def test_corrupt_entries_are_detected(store, damage):
    result = train(tiny_spec())
    entry = store.put(result)
    arrays, meta = entry / "arrays.npz", entry / "meta.json"
    if damage == "truncate_arrays":
        arrays.write_bytes(arrays.read_bytes()[:100])
    elif damage == "flip_byte":
        raw = bytearray(arrays.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        arrays.write_bytes(bytes(raw))
    elif damage == "bad_json":
        meta.write_text("{not json")
    else:
        data = json.loads(meta.read_text())
        data["schema"] = 0
        meta.write_text(json.dumps(data))
    with pytest.raises(CorruptEntryError, match="corrupt cache entry"):
        store.get(result.key)


WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import attnverify.empirics.store.run_store as store_mod
    from attnverify.empirics import CopyTask, RunSpec, RunStore, Seq2SeqConfig, train

    root, seed, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    spec = RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8), steps=3,
                   batch_size=4, eval_every=1, eval_size=4, seed=seed, attention_snapshots=(3,))
    result = train(spec)
    if mode == "hang":
        real = store_mod._fsync_write
        def slow(path, data):
            real(path, data[: len(data) // 2])
            print("HALF", flush=True)
            time.sleep(60)
        store_mod._fsync_write = slow
    if mode == "race":
        while time.time() < float(sys.argv[4]):
            time.sleep(0.001)
    RunStore(root).put(result)
    print("DONE", flush=True)
""")


def test_killed_writer_leaves_no_readable_entry(tmp_path):
    root = tmp_path / "cache"
    with subprocess.Popen([sys.executable, "-c", WRITER, str(root), "0", "hang"],
                          stdout=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline().strip() == "HALF"  # mid-write: half the arrays on disk
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    store = RunStore(root)
    assert list(store.keys()) == []
    assert store.get(tiny_spec(0).key()) is None
    assert any((root / "tmp").iterdir())  # the partial write exists, but only as a tmp dir
    store.put(train(tiny_spec(0)))  # and the run can be stored afterwards
    assert store.get(tiny_spec(0).key()) is not None


def test_concurrent_writers_corrupt_nothing(tmp_path):
    root = tmp_path / "cache"
    start = time.time() + 4.0  # all processes publish at (nearly) the same moment
    seeds = [0, 0, 0, 1, 1, 2]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(s), "race",
                               str(start)], stdout=subprocess.PIPE, text=True) for s in seeds]
    for p in procs:
        with p:
            out, _ = p.communicate(timeout=120)
        assert p.returncode == 0 and "DONE" in out
    store = RunStore(root)
    assert sorted(store.keys()) == sorted({tiny_spec(s).key() for s in seeds})
    for s in set(seeds):
        assert_same(store.get(tiny_spec(s).key()), train(tiny_spec(s)))
    assert not any((root / "tmp").iterdir())


def test_store_default_location_honours_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNVERIFY_CACHE", str(tmp_path / "x"))
    assert RunStore().root == Path(tmp_path / "x")
    monkeypatch.delenv("ATTNVERIFY_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert RunStore().root == tmp_path / "xdg" / "attnverify"


class _Payload:
    """Unpickling this would create a file: the store must never get that far."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_pickled_payload_with_a_valid_checksum_is_never_executed(store, tmp_path):
    import hashlib
    import io

    import numpy as np

    result = train(tiny_spec())
    entry = store.put(result)
    marker = tmp_path / "executed"
    buffer = io.BytesIO()
    np.savez(buffer, **result.arrays(), **{"final/evil": np.array([_Payload(str(marker))],
                                                                   dtype=object)})
    (entry / "arrays.npz").write_bytes(buffer.getvalue())
    meta = json.loads((entry / "meta.json").read_text())
    meta["arrays_sha256"] = hashlib.sha256(buffer.getvalue()).hexdigest()  # a forged entry
    (entry / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CorruptEntryError, match="unreadable content"):
        store.get(result.key)
    assert not marker.exists()


# -- archives: moving runs between machines --------------------------------------------------
def _tar(path: Path, members: dict[str, bytes] | list[tuple[str, bytes]]) -> None:
    """A gzipped tar of ``members``, in their order (a list may repeat a name)."""
    import io
    import tarfile

    with tarfile.open(path, "w:gz") as tar:
        for name, data in (members.items() if isinstance(members, dict) else members):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _members(path: Path) -> dict[str, bytes]:
    import tarfile

    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar}


def test_an_archive_moves_runs_to_another_store(store, tmp_path):
    results = [train(tiny_spec(seed)) for seed in (0, 1)]
    for result in results:
        store.put(result)
    archive = tmp_path / "runs.tar.gz"
    assert pack(store, archive) == Packed(packed=2, stale=0)
    other = RunStore(tmp_path / "other")
    assert unpack(other, archive) == Unpacked(imported=2, present=0, stale=0)
    for result in results:
        assert_same(other.get(result.key), result)
        # byte for byte: the entry is moved, not re-serialised
        assert other.read_entry(result.key)[0] == store.read_entry(result.key)[0]
    assert unpack(other, archive) == Unpacked(imported=0, present=2, stale=0)
    assert pack(store, tmp_path / "one.tar.gz", [results[1].key]).packed == 1
    assert unpack(RunStore(tmp_path / "third"), tmp_path / "one.tar.gz").imported == 1
    empty = tmp_path / "empty.tar.gz"
    assert pack(RunStore(tmp_path / "none"), empty) == Packed(packed=0, stale=0)
    assert unpack(other, empty) == Unpacked(imported=0, present=0, stale=0)


def test_packing_checks_every_entry_first(store, tmp_path):
    entry = store.put(train(tiny_spec()))
    with pytest.raises(KeyError):
        pack(store, tmp_path / "a.tar.gz", ["0" * 24])
    (entry / "arrays.npz").write_bytes(b"garbage")
    with pytest.raises(CorruptEntryError, match="checksum"):
        pack(store, tmp_path / "a.tar.gz")
    assert not list(tmp_path.glob("*a.tar.gz*"))  # nothing written, no temporary left


def test_an_entry_removed_while_the_store_is_packed_is_skipped(store, tmp_path, monkeypatch):
    gone, kept = train(tiny_spec(0)), train(tiny_spec(1))
    store.put(gone)
    store.put(kept)
    listed = list(store.keys())
    store.remove(gone.key)
    monkeypatch.setattr(store, "keys", lambda: iter(listed))  # listed before the removal
    assert pack(store, tmp_path / "a.tar.gz") == Packed(packed=1, stale=0)
    with pytest.raises(KeyError):  # a key named explicitly must be there
        pack(store, tmp_path / "b.tar.gz", listed)


@pytest.mark.parametrize("damage", ["arrays", "missing_meta", "traversal", "key_dir",
                                    "duplicate"])
def test_a_bad_archive_imports_nothing(store, tmp_path, damage):
    good, bad = train(tiny_spec(0)), train(tiny_spec(1))
    store.put(good)
    store.put(bad)
    archive = tmp_path / "runs.tar.gz"
    pack(store, archive)
    members = _members(archive)
    # the sound entry first, the damaged one last: all or nothing must hold back the first
    name = f"runs/{bad.key[:2]}/{bad.key}/"
    ordered = [(n, d) for n, d in members.items() if not n.startswith(name)]
    meta, arrays = members[name + "meta.json"], members[name + "arrays.npz"]
    if damage == "arrays":
        ordered += [(name + "meta.json", meta), (name + "arrays.npz", arrays[:-7] + b"garbage")]
        expected = "arrays checksum mismatch"
    elif damage == "missing_meta":
        ordered += [(name + "arrays.npz", arrays)]
        expected = "an entry file is missing"
    elif damage == "traversal":
        ordered += [(name + "meta.json", meta), (name + "arrays.npz", arrays),
                    ("../evil.py", b"print('hi')")]
        expected = "unexpected member"
    elif damage == "duplicate":  # a second copy of a member, with other content
        changed = json.loads(meta)
        changed["wall_time_s"] = 999.0
        ordered += [(name + "meta.json", meta), (name + "arrays.npz", arrays),
                    (name + "meta.json", json.dumps(changed).encode())]
        expected = "appears twice"
    else:  # an entry under a directory that is not its key
        wrong = "f" * 24
        ordered += [(f"runs/ff/{wrong}/meta.json", meta), (f"runs/ff/{wrong}/arrays.npz", arrays)]
        expected = "key does not match its directory"
    _tar(archive, ordered)
    target = RunStore(tmp_path / "other")
    with pytest.raises(ValueError, match=expected):
        unpack(target, archive)
    assert list(target.keys()) == []  # all or nothing: the sound run was not imported either


def test_stale_runs_are_left_out_of_an_import(store, tmp_path):
    """An entry made by other code (its spec hashes to another key here) is never read, so it
    is not imported; the archive itself is sound."""
    old, current = train(tiny_spec(0)), train(tiny_spec(1))
    for result in (old, current):
        store.put(result)
    archive = tmp_path / "runs.tar.gz"
    pack(store, archive)
    members = _members(archive)
    name = f"runs/{old.key[:2]}/{old.key}/meta.json"
    meta = json.loads(members[name])
    meta["spec"]["steps"] += 1  # as if the code that made it had hashed this spec to old.key
    members[name] = json.dumps(meta).encode()
    _tar(archive, members)
    target = RunStore(tmp_path / "other")
    assert unpack(target, archive) == Unpacked(imported=1, present=0, stale=1)
    assert list(target.keys()) == [current.key]
    # a spec this code cannot read at all (a field of newer code) is stale too, not damage
    meta["spec"]["a_field_of_newer_code"] = 1
    members[name] = json.dumps(meta).encode()
    _tar(archive, members)
    assert unpack(RunStore(tmp_path / "newer"), archive) == Unpacked(imported=1, present=0,
                                                                     stale=1)
    # packing leaves a stale entry out too
    store_meta = store.root / "runs" / old.key[:2] / old.key / "meta.json"
    store_meta.write_bytes(members[name])
    assert pack(store, tmp_path / "again.tar.gz") == Packed(packed=1, stale=1)


def test_a_damaged_stream_or_an_oversized_member_is_a_value_error(store, tmp_path,
                                                                 monkeypatch):
    """A byte damaged anywhere in the archive either changes nothing that is imported or is a
    ValueError naming the archive (the gzip CRC covers the metadata, which the store does not
    checksum), and so is a member larger than an entry file may be."""
    import random

    key = store.put(train(tiny_spec())).name
    archive = tmp_path / "runs.tar.gz"
    pack(store, archive)
    data = archive.read_bytes()
    rng, caught = random.Random(0), 0
    for offset in [*sorted(rng.sample(range(len(data)), 150)), len(data) // 2]:
        damaged = bytearray(data)
        damaged[offset] ^= 0xFF
        archive.write_bytes(bytes(damaged))
        target = RunStore(tmp_path / f"t{offset}")
        try:
            unpack(target, archive)
        except ValueError as exc:
            assert str(archive) in str(exc)
            assert list(target.keys()) == []
            caught += 1
        else:  # a byte no content depends on (the gzip header's name and time fields)
            assert target.read_entry(key)[0] == store.read_entry(key)[0]
    assert caught > 100  # most bytes matter, and their damage is caught
    # metadata changed to something that still parses, in a stream whose CRC is the
    # original's: only the CRC tells (the store checksums arrays, not metadata)
    import gzip
    import struct
    import zlib

    original = gzip.decompress(data)
    changed = bytearray(original)
    at = changed.index(b'"wall_time_s": ') + len(b'"wall_time_s": ')
    changed[at] = ord("9") if changed[at] != ord("9") else ord("8")  # still a number
    changed = bytes(changed)
    forged = gzip.compress(changed)
    archive.write_bytes(forged[:-8] + struct.pack("<I", zlib.crc32(original))
                        + forged[-4:])
    with pytest.raises(ValueError, match="not a readable run archive"):
        unpack(RunStore(tmp_path / "crc"), archive)
    archive.write_bytes(data)
    monkeypatch.setattr(archive_module, "MAX_MEMBER_BYTES", 100)  # the arrays are larger
    with pytest.raises(ValueError, match="over the 100"):
        unpack(RunStore(tmp_path / "big"), archive)


def test_unpack_repairs_a_damaged_stored_entry_from_the_archive(store, tmp_path, caplog):
    """A good archive over a damaged stored run replaces it (the damaged entry goes to
    ``corrupt/``), so the next verify does not retrain it; a sound stored run is kept."""
    results = [train(tiny_spec(seed)) for seed in (0, 1)]
    for result in results:
        store.put(result)
    archive = tmp_path / "runs.tar.gz"
    pack(store, archive)
    other = RunStore(tmp_path / "other")
    unpack(other, archive)
    damaged = other.entry_path(results[0].key) / "arrays.npz"
    damaged.write_bytes(damaged.read_bytes()[:-7] + b"garbage")
    with pytest.raises(CorruptEntryError):
        other.get(results[0].key)
    with caplog.at_level("WARNING", logger="attnverify.store"):
        done = unpack(other, archive)
    assert done == Unpacked(imported=1, present=1, stale=0, repaired=1)
    assert_same(other.get(results[0].key), results[0])
    assert len(list((other.root / "corrupt").iterdir())) == 1
    assert "was damaged; moved to" in caplog.text
    assert unpack(other, archive) == Unpacked(imported=0, present=2, stale=0)  # now sound
