"""RunSpec: validation, round trip, key stability across processes, seed derivation."""

from __future__ import annotations

import subprocess
import sys

import pytest

from attnverify.empirics import SGD, Adam, CopyTask, RunSpec, Seq2SeqConfig


def make_spec(**overrides) -> RunSpec:
    base = {"task": CopyTask("subset", 12, 8), "model": Seq2SeqConfig(hidden=16), "steps": 5,
            "batch_size": 8, "eval_every": 2, "eval_size": 8, "seed": 3}
    return RunSpec(**{**base, **overrides})


def test_round_trip_preserves_spec_and_key():
    spec = make_spec(optimizer=SGD(lr=0.5), attention_snapshots=(4, 0, 4))
    again = RunSpec.from_dict(spec.to_dict())
    assert again == spec
    assert again.key() == spec.key()
    assert spec.attention_snapshots == (0, 4)


def test_stop_when_round_trips_and_is_left_out_when_unset():
    spec = make_spec(stop_when=["acc", 1])
    assert spec.stop_when == ("acc", 1.0)
    assert RunSpec.from_dict(spec.to_dict()) == spec
    assert "stop_when" not in make_spec().to_dict()  # older specs keep their form and key
    assert make_spec(stop_when=("acc", 0.5)).key() != make_spec(stop_when=("acc", 0.6)).key()


def test_key_is_stable_across_processes():
    spec = make_spec()
    code = ("from empirics import *; print(RunSpec(task=CopyTask('subset', 12, 8), "
            "model=Seq2SeqConfig(hidden=16), steps=5, batch_size=8, eval_every=2, eval_size=8, "
            "seed=3).key())")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == spec.key()


@pytest.mark.parametrize("change", [
    {"seed": 4}, {"steps": 6}, {"optimizer": Adam(lr=2e-3)}, {"task": CopyTask("subset", 13, 8)},
    {"model": Seq2SeqConfig(hidden=16, attention="uniform")}, {"dtype": "float64"},
    {"stop_when": ("acc", 0.95)},
])
def test_every_field_enters_the_key(change):
    assert make_spec(**change).key() != make_spec().key()


def test_seed_streams_are_distinct_and_deterministic():
    seeds = make_spec().seeds()
    assert len(set(seeds)) == len(seeds) == 4
    assert make_spec().seeds() == seeds
    assert make_spec(seed=4).seeds() != seeds


def test_eval_steps_cover_start_end_and_snapshots():
    spec = make_spec(steps=7, eval_every=3, attention_snapshots=(5,))
    assert spec.eval_steps() == [0, 3, 5, 6, 7]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"steps": -1}, "steps"),
    ({"batch_size": 0}, "batch_size"),
    ({"eval_every": 0}, "eval_every"),
    ({"seed": -1}, "seed"),
    ({"seed": 1.5}, "seed"),
    ({"dtype": "float16"}, "dtype"),
    ({"device": "tpu"}, "device"),
    ({"attention_snapshots": (99,)}, "attention_snapshots"),
    ({"stop_when": ("acc",)}, "stop_when"),
    ({"stop_when": ("", 0.5)}, "stop_when"),
    ({"stop_when": ("acc", float("nan"))}, "stop_when"),
    ({"stop_when": ("acc", True)}, "stop_when"),
    ({"stop_when": 0.95}, "stop_when"),
])
def test_invalid_run_fields_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field} must be"):
        make_spec(**kwargs)


@pytest.mark.parametrize(("build", "message"), [
    (lambda: CopyTask("subset", 10, 20), r"task.length \(L\) must be <= V = 10"),
    (lambda: CopyTask("permutation", 10, 9), "equal to V = 10"),
    (lambda: CopyTask("zipf", 10, 9), "task.distribution must be one of"),
    (lambda: CopyTask("iid", 1, 9), r"task.vocab_size \(V\) must be an integer >= 2"),
    (lambda: CopyTask("iid", 10, 0), r"task.length \(L\) must be an integer >= 1"),
    (lambda: Seq2SeqConfig(hidden=0), "model.hidden must be"),
    (lambda: Seq2SeqConfig(attention="hard"), "model.attention must be one of"),
    (lambda: Adam(lr=0), "optimizer.lr must be > 0"),
    (lambda: SGD(lr=-1), "optimizer.lr must be > 0"),
])
def test_invalid_configs_name_the_field(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_unknown_kind_is_rejected():
    data = make_spec().to_dict()
    data["model"]["kind"] = "transformer9000"
    with pytest.raises(ValueError, match="unknown model kind 'transformer9000'"):
        RunSpec.from_dict(data)
