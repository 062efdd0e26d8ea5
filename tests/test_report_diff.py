"""``attnverify diff`` (compare/report/diff.py): two reports matched claim by claim. A report of
two claims that train nothing, then copies of its ``report.json`` with one field changed at a
time: each change is found and named, nothing else is, and the exit code says whether anything
differs."""

from __future__ import annotations

import copy
import json
import math
import os
from pathlib import Path

import pytest

import attnverify
from attnverify.compare.cli import main
from attnverify.compare.report.diff import diff_reports
from attnverify.compare.report.view import MAX_REPORT_BYTES, VerifyReport

CLAIMS = ["snell.kappa_closed_form", "bao.score_moments"]


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    cache = tmp_path_factory.mktemp("diff") / "cache"
    return attnverify.verify(CLAIMS, profile="smoke", cache=cache, progress=False).to_dict()


def _report(doc: dict) -> VerifyReport:
    return VerifyReport.from_json(json.dumps(doc))


def _edited(doc: dict, claim: str, **fields) -> dict:
    new = copy.deepcopy(doc)
    record = next(r for r in new["claims"] if r["id"] == claim)
    record.update(fields)
    return new


def test_a_report_against_itself_is_the_same(document):
    diff = diff_reports(_report(document), _report(document))
    assert diff.same and not diff.changes and diff.code is None
    assert diff.unchanged == tuple(CLAIMS)
    assert diff.text().splitlines()[-1] == "unchanged: 2 of 2 claims in both"


def test_a_verdict_or_reason_change_is_named_first(document):
    first = document["claims"][0]
    other = "refuted" if first["verdict"] != "refuted" else "confirmed"
    new = _edited(document, first["id"], verdict=other)
    new = _edited(new, CLAIMS[1], reason="budget reached")
    diff = diff_reports(_report(document), _report(new))
    assert not diff.same and [c.id for c in diff.changes] == CLAIMS
    assert all(c.verdict_moved for c in diff.changes)
    line = diff.changes[0].text()
    assert line == f"{first['id']}: {first['verdict']} ({first['reason']}) -> {other} " \
                   f"({first['reason']})"
    assert "verdict or reason changed (2):" in diff.text()


def test_evidence_changes_keep_the_verdict(document):
    claim = CLAIMS[1]
    record = next(r for r in document["claims"] if r["id"] == claim)
    empirical = dict(record["empirical"], value=0.123456)
    new = _edited(document, claim, protocol_hash="0" * 12, run_keys=["a" * 24],
                  p_value=0.5, empirical=empirical)
    diff = diff_reports(_report(document), _report(new))
    (change,) = diff.changes
    assert not change.verdict_moved and change.id == claim
    assert change.protocol.new == "0" * 12
    assert (change.runs_removed, change.runs_added) == (len(set(record["run_keys"])), 1)
    assert change.p_value.new == 0.5 and change.measured.new == 0.123456
    assert "same verdict, other rule or evidence (1):" in diff.text()
    assert diff.unchanged == (CLAIMS[0],)
    # comparing verdicts only, none of that counts
    assert diff_reports(_report(document), _report(new), only_verdicts=True).same


def test_numbers_within_rtol_and_nan_are_the_same(document):
    claim = CLAIMS[1]
    record = next(r for r in document["claims"] if r["id"] == claim)
    value = record["empirical"]["value"]
    assert isinstance(value, float) and value != 0
    nudged = _edited(document, claim, empirical=dict(record["empirical"],
                                                     value=value * (1 + 1e-9)))
    assert not diff_reports(_report(document), _report(nudged)).same
    assert diff_reports(_report(document), _report(nudged), rtol=1e-6).same
    nan = _edited(document, claim, empirical=dict(record["empirical"], value=math.nan))
    assert diff_reports(_report(nan), _report(copy.deepcopy(nan))).same
    assert not diff_reports(_report(document), _report(nan), rtol=1.0).same
    with pytest.raises(ValueError, match="rtol"):
        diff_reports(_report(document), _report(document), rtol=-1)


def test_claims_in_one_report_only_and_another_code(document):
    fewer = copy.deepcopy(document)
    fewer["claims"] = fewer["claims"][:1]
    fewer["versions"] = dict(fewer["versions"], empirics_source="feedfacecafe")
    diff = diff_reports(_report(document), _report(fewer))
    assert diff.only_old == (CLAIMS[1],) and not diff.only_new and not diff.same
    assert "feedfacecafe" in diff.code.new
    back = diff_reports(_report(fewer), _report(document))
    assert back.only_new == (CLAIMS[1],)
    assert f"only in the new report (1): {CLAIMS[1]}" in back.text()


def test_cli_exit_codes_text_and_json(document, tmp_path, capsys):
    same, moved = tmp_path / "a", tmp_path / "b"
    same.mkdir()
    (same / "report.json").write_text(json.dumps(document))
    edited = _edited(document, CLAIMS[0], verdict="refuted", reason="decided")
    (moved / "report.json").parent.mkdir()
    (moved / "report.json").write_text(json.dumps(edited))
    assert main(["diff", str(same), str(same / "report.json")]) == 0
    assert "unchanged: 2 of 2" in capsys.readouterr().out
    assert main(["diff", str(same), str(moved), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["same"] is False and out["changes"][0]["id"] == CLAIMS[0]
    assert out["changes"][0]["verdict"]["new"] == {"verdict": "refuted", "reason": "decided"}
    # a NaN measured value is null in the JSON (strict JSON has no NaN)
    record = next(r for r in edited["claims"] if r["id"] == CLAIMS[1])
    record["empirical"] = dict(record["empirical"], value=math.nan)
    (moved / "report.json").write_text(json.dumps(edited))
    assert main(["diff", str(same), str(moved), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert next(c for c in out["changes"] if c["id"] == CLAIMS[1])["measured"]["new"] is None


def _fifo(d):
    os.mkfifo(d / "pipe.json")  # nothing ever writes to it: a read would wait forever
    return d / "pipe.json"


def _huge(d):
    with open(d / "huge.json", "wb") as out:  # sparse: past the bound without the disk
        out.truncate(MAX_REPORT_BYTES + 1)
    return d / "huge.json"


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "missing", "no report at"),
    (lambda d: (d / "x.json").write_text("{}") and d / "x.json", "is not a report.json"),
    (_fifo, "is not a regular file"),
    (lambda d: Path("/dev/zero"), "is not a regular file"),
    (_huge, "is larger than any report.json"),
    (lambda d: (d / "b.json").write_bytes(b"\xff\xfe{") and d / "b.json", "is not a report.json"),
])
def test_cli_bad_input_is_one_line(tmp_path, capsys, document, make, message):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(document))
    assert main(["diff", str(good), str(make(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    for rtol in ("-1", "inf", "nan"):
        assert main(["diff", str(good), str(good), "--rtol", rtol]) == 2


def _malformed(document: dict, edit) -> dict:
    doc = copy.deepcopy(document)
    edit(doc)
    return doc


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["claims"][0].update(id=5), "claim 0: 'id' is not a string"),
    (lambda d: d["claims"][0].update(empirical=None), "'empirical' is not an object"),
    (lambda d: d.update(versions=None), "'versions' is not an object"),
    (lambda d: d.update(claims={}), "'claims' is not a list"),
    (lambda d: d["claims"][1].update(run_keys=[1, 2]), "'run_keys' is not a list of strings"),
    (lambda d: d["claims"][0].update(n_seeds="3"), "'n_seeds' is not an integer"),
])
def test_a_report_of_the_wrong_shape_is_one_line(tmp_path, capsys, document, edit, message):
    """A report.json whose fields have the wrong types is refused by diff and load_report in
    one line naming the field (they failed deep inside diff); the control: the same document
    unedited loads and diffs as the same."""
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(document))
    bad.write_text(json.dumps(_malformed(document, edit)))
    assert main(["diff", str(good), str(bad)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        attnverify.load_report(bad)
    assert main(["diff", str(good), str(good)]) == 0


def test_a_report_nested_past_the_recursion_limit_is_one_line(tmp_path, capsys, document):
    good, deep = tmp_path / "good.json", tmp_path / "deep.json"
    good.write_text(json.dumps(document))
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["diff", str(good), str(deep)]) == 2
    assert "nested deeper than any report" in capsys.readouterr().err
