"""The Python API (docs/python-api.md): ``attnverify.verify`` returns a report object with typed
outcomes, which round-trips through ``report.json``, saves the report directory the CLI writes
and renders in a notebook; ``attnverify.runs.frame`` gives the stored runs as a tidy DataFrame;
more workers than one are refused from a script's unguarded top-level code before anything
starts. One cheap claim at the smoke profile (two float64 SGD runs of the free-attention toy)."""

from __future__ import annotations

import json
import math
import runpy
import subprocess
import sys
import textwrap
from html.parser import HTMLParser

import numpy as np
import pytest

import attnverify
from attnverify import runs
from attnverify.compare.claim import ClaimKind, Verdict
from attnverify.compare.evaluation.script_guard import CallSite, guarded
from attnverify.compare.protocol import Reason
from attnverify.compare.report.view import VerifyReport

pd = pytest.importorskip("pandas")

CLAIM = "snell.permutation_saddle"
L = 8  # the claim's smoke sequence length (= V on permutations)


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    cache = tmp_path_factory.mktemp("api") / "cache"
    return attnverify.verify(CLAIM, profile="smoke", cache=cache, progress=False), cache


def test_verify_returns_typed_outcomes(verified):
    report, cache = verified
    assert report.profile == "smoke" and len(report) == 1 and report.cache == cache
    outcome = report[CLAIM]
    assert list(report) == [outcome] and report.verdicts == {CLAIM: Verdict.CONFIRMED}
    assert outcome.verdict is Verdict.CONFIRMED and outcome.reason is Reason.DECIDED
    assert outcome.kind is ClaimKind.DERIVATION and outcome.paper == "snell"
    # an exact statement: the permutation runs stay at log V up to float64 round-off
    assert outcome.theory == pytest.approx(math.log(L), abs=1e-12)
    assert abs(outcome.measurement.value - math.log(L)) <= 1e-9
    assert len(outcome.run_keys) == 2 and outcome.n_seeds == 2
    assert set(outcome.figures) == {"saddle"}
    assert outcome.figure_files == (f"figures/{CLAIM}.saddle.png",)
    with pytest.raises(KeyError, match=r"it holds: snell\.permutation_saddle"):
        report["snell.kappa_closed_form"]


def test_to_json_round_trip(verified):
    report, _ = verified
    text = report.to_json()
    doc = json.loads(text)
    assert doc["profile"] == "smoke" and [c["id"] for c in doc["claims"]] == [CLAIM]
    loaded = VerifyReport.from_json(text)
    assert loaded.to_json() == text
    assert loaded.outcomes == report.outcomes  # every field but the live figures
    assert loaded[CLAIM].figures == {} and loaded.summary() == report.summary()
    assert loaded == report


def test_save_writes_what_to_json_says(verified, tmp_path):
    report, _ = verified
    paths = report.save(tmp_path / "report")
    assert set(paths) == {"json", "md", "html"}
    assert json.loads(paths["json"].read_text()) == json.loads(report.to_json())
    assert (tmp_path / "report" / report[CLAIM].figure_files[0]).read_bytes().startswith(
        b"\x89PNG")
    loaded = attnverify.load_report(tmp_path / "report")
    assert loaded.outcomes == report.outcomes
    with pytest.raises(ValueError, match="read from JSON"):
        loaded.save(tmp_path / "again")
    assert not (tmp_path / "again").exists()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"notes\.txt"):  # never replaces a foreign directory
        report.save(tmp_path / "other")


class _Tags(HTMLParser):
    """Counts start and end tags (void tags have no end)."""

    VOID = frozenset({"img", "br", "hr", "meta"})

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.seen: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.seen.append(tag)
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open.pop() == tag, tag


def _tags(text: str) -> list[str]:
    parser = _Tags()
    parser.feed(text)
    assert parser.open == []  # every tag closed, in order
    return parser.seen


def test_repr_and_notebook_html(verified):
    report, _ = verified
    outcome = report[CLAIM]
    line = repr(report)
    assert "\n" not in line and line.startswith("<VerifyReport profile='smoke', 1 claims:")
    assert "derivation checks: 1 confirmed, 0 refuted, 0 inconclusive" in line
    assert repr(outcome).startswith(f"<Outcome {CLAIM}: confirmed (decided); theory 2.079")
    table = report._repr_html_()
    assert _tags(table).count("tr") == 2 and CLAIM in table and "#009E73" in table
    card = outcome._repr_html_()
    assert "img" in _tags(card) and card.count("data:image/png;base64,") == 1
    assert "data:image" not in VerifyReport.from_json(report.to_json())[CLAIM]._repr_html_()


def test_frame_is_tidy(verified):
    report, cache = verified
    df = runs.frame(cache, claim=CLAIM, profile="smoke")
    assert list(df.columns[:9]) == ["claim", "profile", "key", "status", "seed", "step",
                                    "metric", "value", "train_loss"]
    assert {"task.distribution", "model.kind", "optimizer.lr", "run.steps",
            "wall_time_s"} <= set(df.columns)
    assert set(df["key"]) == set(report[CLAIM].run_keys)
    assert set(df["claim"]) == {CLAIM} and set(df["profile"]) == {"smoke"}
    metrics = {"loss", "acc", "gold_attention", "attn_acc", "ktiw_acc"}
    assert metrics <= set(df["metric"])
    # one row per run x evaluation step x metric
    assert not df.duplicated(["key", "step", "metric"]).any()
    assert len(df) == df["key"].nunique() * df["step"].nunique() * df["metric"].nunique()
    perm = df[(df["task.distribution"] == "permutation") & (df["metric"] == "loss")]
    assert np.abs(perm["value"] - math.log(L)).max() <= 1e-9  # the claim's own read-out
    assert perm.loc[perm["step"] == 0, "train_loss"].isna().all()
    assert perm.loc[perm["step"] > 0, "train_loss"].notna().all()
    # the report's own runs, and every stored run labelled with the claim that reads it
    pd.testing.assert_frame_equal(report.frame(), df)
    everything = runs.frame(cache)
    assert set(everything["key"]) == set(df["key"]) and set(everything["claim"]) == {CLAIM}
    one = runs.frame(cache, keys=[report[CLAIM].run_keys[0]])
    assert set(one["key"]) == {report[CLAIM].run_keys[0]}


def test_interval_loss_is_the_mean_since_the_previous_evaluation():
    from attnverify.compare.runs.tidy import interval_loss

    class Run:  # the two fields interval_loss reads
        eval_steps = np.array([0, 2, 5])
        train_loss = np.array([1.0, 2.0, 3.0, 4.0, 5.0])

    assert np.allclose(interval_loss(Run), [np.nan, 1.5, 4.0], equal_nan=True)
    Run.train_loss = Run.train_loss[:3]  # a run stopped after step 3 (stop_when)
    assert np.allclose(interval_loss(Run), [np.nan, 1.5, 3.0], equal_nan=True)


def test_frame_refuses_unknown_names(verified):
    _, cache = verified
    with pytest.raises(ValueError, match=r"unknown claim 'snell\.nope'; accepted: "):
        runs.frame(cache, claim="snell.nope")
    with pytest.raises(ValueError, match="unknown profile 'medium'; accepted: smoke, quick"):
        runs.frame(cache, profile="medium")
    with pytest.raises(ValueError, match="no run '0123456789abcdef01234567'"):
        runs.frame(cache, keys=["0123456789abcdef01234567"])


def test_params_are_checked_and_shaped_like_the_profiles(verified):
    report, cache = verified
    # escape_factor is a float at every profile: an int is taken as one; same point: cached
    again = attnverify.verify(CLAIM, profile="smoke", cache=cache, params={"escape_factor": 1},
                              progress=False)
    assert again[CLAIM].params["escape_factor"] == 1.0
    assert again[CLAIM].run_keys == report[CLAIM].run_keys
    for bad, message in (({"escape": 2}, "unknown parameter 'escape' of snell.permutation_saddle"
                                         "; accepted: L, subset_V"),
                         ({"escape_factor": 50}, "escape_factor must be a number in")):
        with pytest.raises(ValueError, match=message):
            attnverify.verify(CLAIM, profile="smoke", cache=cache, params=bad)
    with pytest.raises(ValueError, match="params belong to one claim"):
        attnverify.verify([CLAIM, "snell.kappa_closed_form"], profile="smoke", cache=cache,
                          params={"L": 4})


@pytest.mark.parametrize("kwargs, message", [
    ({"claims": "snell.nope"}, r"unknown claim 'snell\.nope'; accepted: "),
    ({"paper": "vaswani"}, "unknown paper 'vaswani'; accepted: snell, musat, bao"),
    ({"claims": CLAIM, "profile": "medium"}, "unknown profile 'medium'"),
    ({"claims": CLAIM, "workers": 0}, "workers must be an integer >= 1"),
    ({"claims": CLAIM, "device": "tpu"}, "unknown device 'tpu'; accepted: cpu, cuda"),
])
def test_bad_input_is_a_value_error_before_anything_runs(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        attnverify.verify(cache=tmp_path / "c", **kwargs)
    assert not (tmp_path / "c").exists()


SCRIPT = """\
import attnverify
from attnverify.compare.evaluation.script_guard import unguarded_call

top = unguarded_call()


def nested():
    return unguarded_call()


via_function = nested()
if __name__ == "__main__":
    under_guard = unguarded_call()
"""


def test_the_call_site_of_a_script_is_found_and_its_guard_read(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    names = runpy.run_path(str(script), run_name="__main__")  # as `python script.py`
    assert names["top"] == CallSite(str(script), 4)
    assert names["via_function"] == CallSite(str(script), 11)  # the top-level statement
    assert names["under_guard"] is None
    assert guarded(SCRIPT, 13) and not guarded(SCRIPT, 4) and not guarded("if (:", 1)
    assert guarded('if "__main__" == __name__:\n    x = 1\n', 2)
    assert not guarded('if __name__ == "__main__":\n    pass\nelse:\n    x = 1\n', 4)
    # no file to import again (python -c, a notebook): always safe
    code = ("from attnverify.compare.evaluation.script_guard import unguarded_call; "
            "print(unguarded_call())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path)
    assert out.stdout.strip() == "None"


def test_workers_in_an_unguarded_script_are_refused_before_anything_starts(tmp_path):
    cache = tmp_path / "c"
    script = tmp_path / "unguarded.py"
    script.write_text(textwrap.dedent(f"""\
        import attnverify
        report = attnverify.verify({CLAIM!r}, profile="smoke", cache={str(cache)!r},
                                   workers=2)
        """))
    with pytest.raises(RuntimeError, match=r"unguarded.py, line 2\) is not under 'if "
                                           r"__name__ == \"__main__\":'.*workers=1"):
        runpy.run_path(str(script), run_name="__main__")
    # what a spawned worker does with it: the script imported again as __mp_main__
    with pytest.raises(RuntimeError, match="imported the main script again"):
        runpy.run_path(str(script), run_name="__mp_main__")
    assert not (cache / "runs").exists()  # nothing trained, no worker started


def test_runs_export_writes_the_same_tidy_table_as_parquet(verified, tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from attnverify.compare.cli import main

    _, cache = verified
    out = tmp_path / "runs.parquet"
    code = main(["runs", "export", "--format", "parquet", "--out", str(out), "--cache",
                 str(cache)])
    assert code == 0 and "rows to" in capsys.readouterr().err
    written = pd.read_parquet(out)
    pd.testing.assert_frame_equal(written, runs.frame(cache), check_dtype=False)
    assert main(["runs", "export", "--format", "parquet", "--cache", str(cache)]) == 2
    assert "needs --out FILE" in capsys.readouterr().err


def test_parquet_without_pyarrow_is_one_line(verified, tmp_path, capsys, monkeypatch):
    from attnverify.compare.cli import main

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now fails
    _, cache = verified
    code = main(["runs", "export", "--format", "parquet", "--out", str(tmp_path / "x.parquet"),
                 "--cache", str(cache)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "pip install 'attnverify[frames]'" in err
    assert not (tmp_path / "x.parquet").exists()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"claims": []}, "no claims selected: an empty sequence of ids"),
    ({"claims": 5}, "claims must be a claim id, a sequence of ids or None"),
    ({"claims": [3]}, "claim ids are strings; got 3"),
    ({"workers": 10**6}, "workers must be <= 256"),
    ({"workers": 0}, "workers must be an integer >= 1"),
    ({"cache": ""}, "cache must name a directory; got an empty path"),
])
def test_the_api_refuses_what_the_cli_refuses_with_a_value_error(kwargs, message, tmp_path):
    kwargs = {"cache": tmp_path / "c", **kwargs}
    with pytest.raises(ValueError, match=message):
        attnverify.verify(profile="smoke", **kwargs)
    assert not (tmp_path / "c" / "runs").exists()  # nothing was trained


def test_the_api_asks_for_yes_before_a_long_training(tmp_path):
    """Every claim at full on an empty cache is days of training: refused without ``yes``,
    before anything trains (as ``verify`` without ``--yes``)."""
    with pytest.raises(ValueError, match=r"this verify would train \d+ runs, about .* "
                                         r"pass yes=True to go ahead"):
        attnverify.verify(profile="full", cache=tmp_path / "c", progress=False)
    assert not list((tmp_path / "c").glob("runs/*"))
