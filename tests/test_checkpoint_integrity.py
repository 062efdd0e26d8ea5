"""A damaged checkpoint never becomes a stored run (docs/reliability.md).

A checkpoint is used only once it is a regular file whose bytes match the checksum of its
header and whose step is one at which the run saves. One bit flipped in any tensor of a real
checkpoint, a checkpoint that is a directory, a pipe or a link, one of an impossible step, one
without a checksum (an earlier format): each is moved to ``corrupt/`` with one warning line
naming it, and the run trains from step 0 to the uninterrupted run's arrays, bit for bit, and is
stored so. The negative controls: an undamaged checkpoint is resumed (the step it resumed from is
recorded), and the flipped file still loads with torch, so the checksum is what catches it.
Every case runs under an alarm: a pipe opened for reading would never return."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from checkpoint_kill import Killed, KilledAfterSave, Resuming, assert_identical

from attnverify.empirics import Adam, CopyTask, LocalExecutor, RunSpec, RunStore, Seq2SeqConfig
from attnverify.empirics.store.checkpoint import (
    FORMAT,
    HEADER,
    seal,
    unit_name,
    unseal,
)
from attnverify.empirics.train import train_group

SPEC = RunSpec(task=CopyTask(distribution="subset", vocab_size=6, length=6),
               model=Seq2SeqConfig(hidden=16, cell="gru"), optimizer=Adam(1e-2),
               steps=40, batch_size=8, eval_every=5, eval_size=16, seed=0)
"""40 steps, evaluated every 5: about a second of training."""


KILL_AFTER = 2  # the checkpoint at step 10


@pytest.fixture(scope="module")
def uninterrupted():
    return train_group([SPEC])


@contextlib.contextmanager
def alarm(seconds: int = 60) -> Iterator[None]:
    """Fail instead of hanging (a blocking open of a pipe with no writer)."""
    def fire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def killed_run(store: RunStore) -> Path:
    """Train ``SPEC`` into ``store``'s checkpoints until its checkpoint at step 10, then stop as
    a killed process would; the state file."""
    killer = KilledAfterSave(store.checkpoints.root, interval_s=0.0, kill_after=KILL_AFTER)
    with pytest.raises(Killed):
        train_group([SPEC], checkpoints=killer)
    assert killer.saves == [5, 10]
    (path,) = store.checkpoints.root.glob("*.pt")
    return path


def verify_again(store: RunStore, caplog) -> tuple[object, list[logging.LogRecord]]:
    """What a second ``verify`` does: the executor trains the missing run, resuming from its
    checkpoint if it can; the stored result and the warnings."""
    caplog.clear()
    with alarm(), caplog.at_level(logging.INFO, logger="attnverify"), \
            LocalExecutor(store, workers=1, progress=False) as executor:
        (got,) = executor.run([SPEC])
    stored = store.get(SPEC.key())
    assert stored is not None
    assert_identical([got], [stored])
    return stored, [r for r in caplog.records if r.levelno >= logging.WARNING]


def assert_set_aside(store: RunStore, warnings, stored, uninterrupted, reason: str) -> None:
    """One warning line naming the checkpoint and why; it is in ``corrupt/``, none is left; the
    stored run is the uninterrupted one, trained from step 0."""
    name = unit_name([SPEC.key()], False)
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    line = warnings[0].getMessage()
    assert f"{name}.pt" in line and SPEC.key() in line, line
    assert reason in line and "training from step 0" in line and "corrupt" in line, line
    assert any(p.name.startswith(f"checkpoint.{name}.") for p in (store.root / "corrupt").iterdir())
    assert not list(store.checkpoints.root.iterdir())
    assert_identical(uninterrupted, [stored])


# -- the negative control: an undamaged checkpoint is resumed -----------------------------------
def test_an_undamaged_checkpoint_is_resumed(tmp_path, caplog, uninterrupted):
    store = RunStore(tmp_path)
    killed_run(store)
    resuming = Resuming(store.checkpoints.root)
    with alarm():
        got = train_group([SPEC], checkpoints=resuming)
    assert resuming.loaded == [10]  # resumed at step 10: the check lets a sound one through
    assert_identical(uninterrupted, got)
    killed_run(store)
    stored, warnings = verify_again(store, caplog)
    assert warnings == [] and "from its checkpoint at step 10 of 40" in caplog.text
    assert not (store.root / "corrupt").exists()
    assert_identical(uninterrupted, [stored])


def test_the_state_file_carries_the_checksum_of_its_bytes(tmp_path):
    import hashlib

    raw = killed_run(RunStore(tmp_path)).read_bytes()
    header, body = raw.split(b"\n", 1)
    assert header == HEADER + hashlib.sha256(body).hexdigest().encode()
    assert unseal(raw)["format"] == FORMAT and unseal(raw)["step"] == 10


# -- one bit flipped in a tensor --------------------------------------------------------------
def tensor_at(payload: dict, where: str) -> torch.Tensor:
    run = payload["state"]["runs"][0]
    if where == "model":
        return next(iter(run["model"].values()))
    if where == "optimizer":
        return payload["state"]["step"]["optimizer"]["state"][0]["exp_avg"]
    if where == "train_loss":
        return run["train_loss"]
    assert where == "data_gen"
    return run["data_gen"]


@pytest.mark.parametrize("where, bit", [
    ("model", 0),        # the lowest mantissa bit of a weight: one ulp
    ("model", 30),       # an exponent bit
    ("optimizer", 0),    # Adam's first moment
    ("train_loss", 0),   # a recorded training loss
    ("data_gen", 3),     # the data stream's generator state
])
def test_one_flipped_bit_in_a_tensor_retrains_from_scratch(where, bit, tmp_path, caplog,
                                                           uninterrupted):
    store = RunStore(tmp_path)
    path = killed_run(store)
    raw = bytearray(path.read_bytes())
    tensor = tensor_at(unseal(bytes(raw)), where)
    data = tensor.contiguous().view(torch.uint8).numpy().tobytes()
    at = bytes(raw).find(data)
    assert at > 0 and bytes(raw).find(data, at + 1) == -1  # the tensor's own bytes
    byte = at + bit // 8 if tensor.element_size() > 1 else at + 17
    raw[byte] ^= 1 << (bit % 8)
    path.write_bytes(bytes(raw))
    # the damage is silent to torch: the file loads, one value changed
    body = bytes(raw).split(b"\n", 1)[1]
    damaged = tensor_at(torch.load(io.BytesIO(body), weights_only=True), where)
    assert damaged.shape == tensor.shape and not torch.equal(damaged, tensor)
    stored, warnings = verify_again(store, caplog)
    assert_set_aside(store, warnings, stored, uninterrupted, "checksum mismatch")
    assert "resuming" not in caplog.text


# -- what is not a checkpoint -------------------------------------------------------------------
def make_directory(path: Path) -> None:
    path.unlink()
    (path / "data.pkl").mkdir(parents=True)


def make_fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def make_link_to_fifo(path: Path) -> None:
    path.unlink()
    pipe = path.parent.parent / "pipe"  # outside the checkpoints, so not one of them
    os.mkfifo(pipe)
    path.symlink_to(pipe)


def reseal_step(step: int):
    def damage(path: Path) -> None:
        payload = unseal(path.read_bytes())
        payload["step"] = step
        path.write_bytes(seal(payload))  # a sound checksum: the step itself is refused
    return damage


def earlier_format(path: Path) -> None:
    payload = unseal(path.read_bytes())
    payload["format"] = 1
    torch.save(payload, path)  # what checkpoints were before they carried a checksum


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(HEADER) + 70])


@pytest.mark.parametrize("damage, reason", [
    (make_directory, "not a regular file"),
    (make_fifo, "not a regular file"),
    (make_link_to_fifo, "symbolic link"),
    (reseal_step(10**9), "its step 1000000000 is not one"),
    (reseal_step(-50), "its step is -50"),
    (reseal_step(40), "its step 40 is not one"),   # the last step: the loop never saves there
    (reseal_step(41), "its step 41 is not one"),   # past the run's 40 steps
    (reseal_step(7), "its step 7 is not one"),     # not an evaluation step
    (earlier_format, "cannot be verified"),
    (truncate, "checksum mismatch"),
    (lambda path: path.write_bytes(b""), "cannot be verified"),
], ids=["directory", "fifo", "link-to-fifo", "step-1e9", "step-minus-50", "step-last",
        "step-past-the-end", "step-between-evaluations", "no-checksum", "truncated", "empty"])
def test_a_checkpoint_that_cannot_be_used_is_set_aside(damage, reason, tmp_path, caplog,
                                                       uninterrupted):
    store = RunStore(tmp_path)
    path = killed_run(store)
    damage(path)
    stored, warnings = verify_again(store, caplog)
    assert_set_aside(store, warnings, stored, uninterrupted, reason)
    assert "resuming" not in caplog.text and "Traceback" not in caplog.text


def test_a_directory_or_pipe_beside_the_checkpoints_stops_nothing(tmp_path, capsys):
    """Sidecars are read by the dry run and the progress lines: a pipe, a directory or one of
    an impossible step is skipped without blocking; ``runs clear`` removes a directory too."""
    from attnverify.compare.cli import main

    store = RunStore(tmp_path)
    killed_run(store)
    root = store.checkpoints.root
    os.mkfifo(root / "a.json")
    (root / "b.json").mkdir()
    (root / "c.pt").mkdir()
    (root / "d.json").write_text(
        '{"keys": ["k"], "batched": false, "step": 1000000000, "steps": 40, '
        '"elapsed_s": 1.0, "saved_at": 0.0}')
    with alarm():
        assert list(store.checkpoints.by_run()) == [SPEC.key()]
        assert store.checkpoints.by_run()[SPEC.key()].step == 10
        assert main(["runs", "clear", "--cache", str(tmp_path)]) == 0
    assert "0 runs and 2 checkpoints" in capsys.readouterr().err
    assert not list(root.iterdir())


def test_a_save_that_fails_midway_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    from attnverify.empirics.store import checkpoint as module

    store = RunStore(tmp_path)
    path = killed_run(store)
    before = path.read_bytes()

    def half_then_fail(target: Path, data: bytes) -> None:
        target.write_bytes(data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(module, "_write_synced", half_then_fail)
    payload = unseal(before)
    with pytest.raises(OSError):
        store.checkpoints.save([SPEC.key()], False, 15, 40, 1.0, payload["state"])
    assert path.read_bytes() == before
    assert sorted(p.name for p in store.checkpoints.root.iterdir()) == \
        sorted([path.name, path.with_suffix(".json").name])  # no temporary file left
    loaded = store.checkpoints.load([SPEC.key()], False)
    assert loaded is not None and loaded[0] == 10


def test_a_stored_run_from_a_resumed_checkpoint_is_the_uninterrupted_run(tmp_path, caplog,
                                                                          uninterrupted):
    """The whole path the damage took before: kill, verify again, then pack and unpack. A
    sound checkpoint gives the uninterrupted arrays; the archive holds them."""
    store = RunStore(tmp_path / "a")
    killed_run(store)
    stored, warnings = verify_again(store, caplog)
    assert warnings == [] and "from its checkpoint at step 10" in caplog.text
    from attnverify.compare.cli import main

    archive = tmp_path / "runs.tar.gz"
    assert main(["runs", "pack", str(archive), "--cache", str(store.root)]) == 0
    assert main(["runs", "unpack", str(archive), "--cache", str(tmp_path / "b")]) == 0
    unpacked = RunStore(tmp_path / "b").get(SPEC.key())
    assert unpacked is not None
    assert_identical(uninterrupted, [stored])
    assert_identical(uninterrupted, [unpacked])
