"""The examples in examples/ run as they are, top to bottom, as a plain script would (no
``__main__`` guard needed: the default is one process), and produce what they say."""

from __future__ import annotations

import math
import runpy
import tempfile
from pathlib import Path

import pytest

from attnverify.compare.claim import Verdict

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_verify_and_plot(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # its temporary cache goes here
    names = runpy.run_path(str(EXAMPLES / "verify_and_plot.py"), run_name="__main__")
    out = tmp_path / "attnverify-example"
    assert (out / "runs.png").read_bytes().startswith(b"\x89PNG")
    assert {p.name for p in (out / "report").iterdir()} == {"report.json", "report.md",
                                                             "report.html", "figures"}
    assert names["prediction"].value == pytest.approx(math.log(8))
    assert names["outcome"].verdict is Verdict.CONFIRMED
    df, final = names["df"], names["final"]
    assert set(df["key"]) == set(names["outcome"].run_keys)
    # the plotted read-out: the permutation runs end at the predicted loss, the subset escapes
    assert final.loc["permutation", "loss"] == pytest.approx(math.log(8), abs=1e-9)
    assert final.loc["subset", "gold_attention"] > 0.5
    assert names["cache"].parent == tmp_path
