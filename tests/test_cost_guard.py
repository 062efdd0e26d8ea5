"""verify asks before a long training (compare.cli.cost_guard): over the threshold it trains
only with --yes or a yes at the terminal; in a batch job it ends in one line and writes
nothing. Each refusal has a negative control that goes ahead."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from attnverify.compare.cli import main
from attnverify.compare.cli.cost_guard import CONFIRM_ABOVE_S, confirm_cost
from attnverify.compare.cli.inputs import UserError
from attnverify.compare.registry import select
from attnverify.empirics import RunResult, RunStore

CLAIM = "snell.uniform_attention_at_init"


def claim_with_timed_store(root: Path, seconds_per_run: float):
    """The claim, and a store holding one run of its model family (not one the claim reads)
    that took ``seconds_per_run``: the speed the estimate is measured from."""
    claim = select(claim_id=CLAIM)[0]
    spec = claim.checked_specs(claim.params("smoke"))[0]
    other = dataclasses.replace(spec, seed=spec.seed + 10_000)
    steps = np.array(other.eval_steps())
    store = RunStore(root)
    store.put(RunResult(spec=other, status="ok", eval_steps=steps,
                        metrics={"acc": np.zeros(steps.size)}, train_loss=np.zeros(other.steps),
                        attention={s: np.zeros((1, 1, 2, 2)) for s in other.attention_snapshots},
                        wall_time_s=seconds_per_run))
    return claim, store


def args(yes: bool = False) -> argparse.Namespace:
    return argparse.Namespace(yes=yes, profile="smoke")


def test_a_long_verify_in_a_batch_job_ends_in_one_line_and_trains_nothing(capsys, tmp_path):
    _, store = claim_with_timed_store(tmp_path / "c", seconds_per_run=1e6)
    before = sorted(store.keys())
    code = main(["verify", "--claim", CLAIM, "--profile", "smoke", "--cache", str(store.root),
                 "--out", str(tmp_path / "report"), "--workers", "1"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "pass --yes to go ahead" in err and "nothing was trained" in err
    assert "Traceback" not in err
    assert sorted(store.keys()) == before and not (tmp_path / "report").exists()


def test_over_the_threshold_yes_or_a_terminal_answer_goes_ahead(tmp_path, monkeypatch):
    claim, store = claim_with_timed_store(tmp_path / "c", seconds_per_run=1e6)
    confirm_cost(args(yes=True), [claim], store, {}, {}, workers=1, place=lambda s: s,
                 ask=lambda _: pytest.fail("--yes must not ask"))
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    questions: list[str] = []
    confirm_cost(args(), [claim], store, {}, {}, workers=1, place=lambda s: s,
                 ask=lambda q: questions.append(q) or "y")
    assert len(questions) == 1 and "Go ahead? [y/N]" in questions[0]
    with pytest.raises(UserError, match="not confirmed; nothing was trained"):
        confirm_cost(args(), [claim], store, {}, {}, workers=1, place=lambda s: s,
                     ask=lambda _: "")


def test_negative_control_a_short_verify_asks_nothing(tmp_path):
    claim, store = claim_with_timed_store(tmp_path / "c", seconds_per_run=0.01)
    confirm_cost(args(), [claim], store, {}, {}, workers=1, place=lambda s: s,
                 ask=lambda _: pytest.fail("a short training must not ask"))


def test_the_threshold_is_on_wall_time_over_the_workers(tmp_path):
    """The same runs (3, each 0.9 of the threshold) are over it on 2 workers (1.35) and under
    it on 8 (the longest run, 0.9)."""
    claim, store = claim_with_timed_store(tmp_path / "c", seconds_per_run=0.9 * CONFIRM_ABOVE_S)
    assert len(claim.checked_specs(claim.params("smoke"))) == 3
    with pytest.raises(UserError, match="pass --yes"):
        confirm_cost(args(), [claim], store, {}, {}, workers=2, place=lambda s: s)
    confirm_cost(args(), [claim], store, {}, {}, workers=8, place=lambda s: s,
                 ask=lambda _: pytest.fail("under the threshold on 8 workers"))


def test_one_long_run_is_not_spread_over_idle_workers(tmp_path):
    """Wall time is at least the longest run: many workers do not hide one long run."""
    claim, store = claim_with_timed_store(tmp_path / "c", seconds_per_run=2 * CONFIRM_ABOVE_S)
    with pytest.raises(UserError, match="pass --yes"):
        confirm_cost(args(), [claim], store, {}, {}, workers=256, place=lambda s: s)


def test_the_question_goes_to_stderr_and_end_of_input_is_no(tmp_path, monkeypatch, capsys):
    import io

    from attnverify.compare.cli.cost_guard import ask_on_stderr

    claim, store = claim_with_timed_store(tmp_path / "c", seconds_per_run=1e6)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # Ctrl-D at once
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    with pytest.raises(UserError, match="not confirmed"):
        confirm_cost(args(), [claim], store, {}, {}, workers=1, place=lambda s: s,
                     ask=ask_on_stderr)
    out, err = capsys.readouterr()
    assert out == "" and "Go ahead? [y/N]" in err
