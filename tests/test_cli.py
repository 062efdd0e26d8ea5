"""The attnverify CLI: user errors (exit 2, one line, nothing written), predict, runs, verify."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest

from attnverify.compare.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_real_process_exit_code_and_stderr(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "attnverify.compare.cli", "verify", "--claim",
                           "x.y", "--cache", str(tmp_path / "c")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("attnverify: error: unknown claim 'x.y'")
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""


def test_predict_prints_json_with_value(capsys):
    code, out, _ = run(capsys, "predict", "snell.kappa", "--V", "60", "--L", "40")
    data = json.loads(out)
    assert code == 0 and data["value"] == pytest.approx(20 / (60 * 59))
    assert data["quantity"] == "snell.kappa" and data["derived"] is True
    code, out, _ = run(capsys, "predict", "snell.kappa", "--V=40", "--L=40",
                       "--distribution=permutation")
    assert json.loads(out)["value"] == 0.0


def dry_run_row(capsys, cache, profile, tmp_path):
    """``verify --dry-run`` of one claim: its table row's fields and the whole output."""
    code, out, _ = run(capsys, "verify", "--claim", "snell.uniform_attention_at_init",
                       "--profile", profile, "--cache", cache, "--dry-run",
                       "--out", str(tmp_path / "never"))
    assert code == 0 and not (tmp_path / "never").exists()  # nothing written
    row = next(line for line in out.splitlines() if line.startswith("snell.uniform"))
    return row.split(), out


def test_verify_runs_and_export(capsys, tmp_path):
    cache, out_dir = str(tmp_path / "c"), tmp_path / "r"
    # the dry run before anything is cached: 3 runs to train, timed from reference speeds
    row, out = dry_run_row(capsys, cache, "smoke", tmp_path)
    assert row[1:4] == ["3", "0", "3"] and "(3 runs timed from reference speeds)" in out
    assert "At full (its defaults): 40 first-stage runs, 0 cached, 40 to train" in out
    assert not (tmp_path / "c").exists()  # and it trained nothing
    code, out, err = run(capsys, "verify", "--claim", "snell.uniform_attention_at_init",
                         "--profile", "smoke", "--cache", cache, "--out", str(out_dir),
                         "--workers", "1", "-v")
    assert code == 0
    assert "snell.uniform_attention_at_init  confirmed" in out
    assert f"report: {(out_dir / 'report.html').resolve()}" in out
    assert err.count("not in cache") == 3
    # second time: everything from the cache
    code, out, err = run(capsys, "verify", "--claim", "snell.uniform_attention_at_init",
                         "--profile", "smoke", "--cache", cache, "--out", str(out_dir), "-v")
    assert code == 0 and err.count("cached ") == 3 and "not in cache" not in err
    row, _ = dry_run_row(capsys, cache, "smoke", tmp_path)
    assert row[1:5] == ["3", "3", "0", "0"]  # all cached: 0 s to train
    # the quick profile's runs are estimated from the smoke runs' measured speed
    row, out = dry_run_row(capsys, cache, "quick", tmp_path)
    assert row[2] == "0" and int(row[3]) > 0 and "without estimate" not in out
    assert "reference speeds" not in out
    assert "distinct runs to train: CPU time" in out
    _, out = dry_run_row(capsys, cache, "full", tmp_path)
    assert "At full" not in out  # the plan is the full profile's own

    code, out, err = run(capsys, "runs", "list", "--cache", cache)
    keys = [line.split()[0] for line in out.splitlines()]
    assert code == 0 and len(keys) == 3
    code, out, _ = run(capsys, "runs", "show", keys[0], "--cache", cache)
    assert json.loads(out)["key"] == keys[0]
    code, out, _ = run(capsys, "runs", "export", "--cache", cache)
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 3 and {"key", "step", "seed", "attn_entropy", "task.vocab_size"} <= set(
        rows[0])
    # pack what a verify reads: every run, then (one removed) what is stored, with a note
    pack = ("runs", "pack", str(tmp_path / "v.tar.gz"), "--claim",
            "snell.uniform_attention_at_init", "--profile", "smoke", "--cache", cache)
    code, _, err = run(capsys, *pack)
    assert code == 0 and "packed 3 runs" in err and "not trained yet" not in err
    run(capsys, "runs", "rm", keys[0], "--cache", cache)
    code, _, err = run(capsys, *pack)
    assert code == 0 and "packed 2 runs" in err
    assert "1 of them not trained yet (snell.uniform_attention_at_init)" in err
    code, _, err = run(capsys, *pack[:3], keys[1], "--paper", "snell", "--cache", cache)
    assert code == 2 and "not both" in err
    code, _, err = run(capsys, "runs", "clear", "--cache", cache)
    assert "removed 2 runs" in err
    code, _, err = run(capsys, *pack)
    assert code == 2 and "none of the 3 runs" in err and err.count("\n") == 1


def test_runs_made_by_other_code_are_marked_stale_and_can_be_cleared(capsys, tmp_path):
    """A run whose spec hashes to another key with this code (a module it executes changed
    since) is never read again: ``runs list`` marks it, ``show``/``export`` give the key it is
    stored under, ``clear --stale`` removes only such runs."""
    import numpy as np

    from attnverify.compare.registry import select
    from attnverify.empirics import RunResult, RunStore

    cache = tmp_path / "c"
    store = RunStore(cache)
    claim = select(claim_id="snell.uniform_attention_at_init")[0]
    specs = claim.checked_specs(claim.params("smoke"))[:2]
    for spec in specs:
        steps = np.array(spec.eval_steps())
        store.put(RunResult(spec=spec, status="ok", eval_steps=steps,
                            metrics={"acc": np.linspace(0.1, 0.2, steps.size)},
                            train_loss=np.zeros(spec.steps),
                            attention={s: np.zeros((1, 1, 2, 2))
                                       for s in spec.attention_snapshots}))
    old, current = (s.key() for s in specs)
    meta_path = next((cache / "runs").glob(f"*/{old}/meta.json"))
    meta = json.loads(meta_path.read_text())
    meta["spec"]["steps"] += 1  # as if the code that made it had hashed this spec to `old`
    meta_path.write_text(json.dumps(meta))
    assert not store.is_current(old) and store.is_current(current)

    code, out, err = run(capsys, "runs", "list", "--cache", str(cache))
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert lines[old].endswith("(stale)") and not lines[current].endswith("(stale)")
    assert "2 runs" in err and "1 stale" in err
    code, out, _ = run(capsys, "runs", "show", old, "--cache", str(cache))
    assert json.loads(out)["key"] == old and json.loads(out)["current"] is False
    code, out, _ = run(capsys, "runs", "export", old, "--cache", str(cache))
    assert {row["key"] for row in csv.DictReader(io.StringIO(out))} == {old}
    code, _, err = run(capsys, "runs", "clear", "--stale", "--cache", str(cache))
    assert code == 0 and "removed 1 stale runs" in err
    assert list(store.keys()) == [current]


def test_runs_pack_and_unpack(capsys, tmp_path):
    from attnverify.empirics import CopyTask, RunSpec, RunStore, Seq2SeqConfig, train

    store = RunStore(tmp_path / "a")
    spec = RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8), steps=1,
                   batch_size=2, eval_size=2)
    store.put(train(spec))
    archive = str(tmp_path / "runs.tar.gz")
    code, _, err = run(capsys, "runs", "pack", archive, "--cache", str(store.root))
    assert code == 0 and "packed 1 runs" in err
    code, _, err = run(capsys, "runs", "unpack", archive, "--cache", str(tmp_path / "b"))
    assert code == 0 and "imported 1 runs" in err and "0 were there already" in err
    assert RunStore(tmp_path / "b").get(spec.key()) is not None
    # a set split over several archives: one call imports them all, one line each
    other = RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8), steps=1,
                    batch_size=2, eval_size=2, seed=1)
    store.put(train(other))
    second = str(tmp_path / "second.tar.gz")
    code, _, err = run(capsys, "runs", "pack", second, "--except", archive, "--cache",
                       str(store.root))  # the runs trained since the first archive
    assert code == 0 and "packed 1 runs" in err and "1 already in the --except" in err
    code, _, err = run(capsys, "runs", "unpack", archive, second, "--cache",
                       str(tmp_path / "c"))
    assert code == 0 and f"imported 1 runs into {tmp_path / 'c'} from {archive}" in err
    assert f"from {second}" in err and err.count("\n") == 2
    assert set(RunStore(tmp_path / "c").keys()) == {spec.key(), other.key()}
    # a missing one is named before anything is imported
    code, _, err = run(capsys, "runs", "unpack", second, str(tmp_path / "none.tar.gz"),
                       "--cache", str(tmp_path / "d"))
    assert code == 2 and "none.tar.gz" in err and not (tmp_path / "d" / "runs").exists()
    # user errors: one line, exit 2
    for argv, message in ((["unpack", str(tmp_path / "none.tar.gz")], "no archive"),
                          (["unpack", str(tmp_path / "a" / "runs")], "no archive"),
                          (["pack", archive, "0" * 24], "no run"),
                          (["pack", archive, "--except", archive], "also named by --except"),
                          (["pack", str(tmp_path / "x.tar.gz"), spec.key(), "--except",
                            archive], "nothing to pack"),
                          (["pack", str(tmp_path / "x.tar.gz"), "--except",
                            str(tmp_path / "none.tar.gz")], "no archive"),
                          (["pack", str(tmp_path / "no" / "x.tar.gz")], "cannot write")):
        code, _, err = run(capsys, "runs", *argv, "--cache", str(store.root))
        assert code == 2 and message in err and err.count("\n") == 1, argv
    (tmp_path / "junk.tar.gz").write_text("junk")
    code, _, err = run(capsys, "runs", "unpack", str(tmp_path / "junk.tar.gz"), "--cache",
                       str(tmp_path / "b"))
    assert code == 2 and "not a readable run archive" in err and err.count("\n") == 1
    code, _, err = run(capsys, "runs", "pack", str(tmp_path / "x.tar.gz"), "--except",
                       str(tmp_path / "junk.tar.gz"), "--cache", str(store.root))
    assert code == 2 and "not a readable run archive" in err and not (tmp_path / "x.tar.gz"
                                                                      ).exists()


def test_figures_trains_on_the_workers_and_device_given(capsys, tmp_path, monkeypatch):
    from attnverify.compare.report import figures

    seen = {}

    def fake_regenerate(out, profile, store, **options):
        seen.update(options, profile=profile)
        return []

    monkeypatch.setattr(figures, "regenerate", fake_regenerate)
    code, out, _ = run(capsys, "figures", "--profile", "smoke", "--workers", "3", "--device",
                       "cpu", "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "f"))
    assert code == 0 and "wrote 0 files" in out
    assert seen == {"profile": "smoke", "workers": 3, "device": "cpu", "progress": True}


def test_claims_lists_every_claim(capsys):
    code, out, _ = run(capsys, "claims")
    assert code == 0
    assert "snell.kappa_closed_form" in out and "snell.subset_learned_every_seed" in out


def test_cache_option_at_any_level(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNVERIFY_CACHE", str(tmp_path / "default"))
    for argv in (["runs", "--cache", str(tmp_path / "x"), "list"],
                 ["runs", "list", "--cache", str(tmp_path / "x")]):
        code, _, err = run(capsys, *argv)
        assert code == 0 and str(tmp_path / "x") in err, argv


def test_corrupt_entry_is_a_one_line_error(capsys, tmp_path):
    from attnverify.empirics import CopyTask, RunSpec, RunStore, Seq2SeqConfig, train

    store = RunStore(tmp_path / "c")
    spec = RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8), steps=1,
                   batch_size=2, eval_size=2)
    entry = store.put(train(spec))
    (entry / "arrays.npz").write_bytes(b"garbage")
    code, _, err = run(capsys, "runs", "show", spec.key(), "--cache", str(store.root))
    assert code == 2 and err.count("\n") == 1 and "corrupt cache entry" in err


def test_unwritable_outputs_are_user_errors(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run(capsys, "verify", "--claim", "snell.kappa_closed_form", "--out",
                       str(blocker / "sub"), "--cache", str(tmp_path / "c"))
    assert code == 2 and "is not a directory" in err
    code, _, err = run(capsys, "runs", "export", "--out", str(tmp_path / "no" / "x.csv"),
                       "--cache", str(tmp_path / "c"))
    assert code == 2 and "cannot write --out" in err


@pytest.mark.parametrize("argv", [
    ["predict", "snell.toy_classifier_tau_star", "--p0", "abc"],
    ["predict", "snell.stage2_onset_rate", "--K", "x", "--L", "3"],
    ["predict", "snell.stage1_accuracy_bound", "--L", "2.5"],
    ["predict", "snell.stage1_loss", "--V", "10", "--L", "5", "--distribution", "iid"],
])
def test_predict_bad_values_are_one_line_errors(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err


def test_predict_every_scalar_quantity_at_its_defaults(capsys):
    from attnverify import theory

    args = {"V": 30, "L": 20, "K": 1.0, "d": 16, "T": 8, "eig_mean": 0.1, "eig_std": 0.05,
            "D": 13, "t": 3, "n": 26}
    for name in theory.QUANTITIES:
        params = [tok for p in theory.registry.parameters(name).values()
                  if p.default is p.empty for tok in (f"--{p.name}", str(args[p.name]))]
        code, out, _ = run(capsys, "predict", name, *params)
        assert code == 0 and "value" in json.loads(out), name


def test_claims_json_lists_every_claim_with_its_parameters(capsys):
    from attnverify.compare.registry import select

    code, out, _ = run(capsys, "claims", "--json")
    doc = json.loads(out)
    assert code == 0 and [c["id"] for c in doc] == [c.id for c in select()]
    by_id = {c["id"]: c for c in doc}
    assert set(by_id["bao.locater_effect"]["profiles"]) == {"smoke", "quick", "full"}
    assert by_id["bao.locater_effect"]["overridable"] == ["corpus"]
    assert by_id["bao.locater_effect"]["trains"] is True
    assert by_id["musat.depth_bound_closed_form"]["trains"] is False
    assert by_id["snell.kappa_closed_form"]["profiles"]["quick"]["n_sequences"] == 20_000


def test_predict_help_lists_every_quantity_with_its_parameters(capsys):
    from attnverify import theory

    code, out, _ = run(capsys, "predict", "--help")
    assert code == 0
    assert all(f"  {name} " in out for name in theory.QUANTITIES)
    assert "  snell.kappa --V VALUE --L VALUE [--distribution subset]" in out


# one grammar for NAME=VALUE: predict's --NAME VALUE and verify's --param NAME=VALUE
GRAMMAR = [("True", True), ("false", False), ("FALSE", False), ("3", 3), ("-4", -4),
           ("0.5", 0.5), ("1e-3", 1e-3), ("[2, 1]", [2, 1]), ("[0.5, true]", [0.5, True]),
           ("permutation", "permutation"), ('"3"', "3"), ("null", None)]


@pytest.mark.parametrize(("text", "value"), GRAMMAR)
def test_predict_arguments_and_param_values_parse_alike(text, value):
    from attnverify.compare.cli.values import parse_assignment, parse_options, parse_value

    for parsed in (parse_value(text), parse_options(["--x", text])["x"],
                   parse_options([f"--x={text}"])["x"], parse_assignment(f"x={text}")[1]):
        assert parsed == value and type(parsed) is type(value), (text, parsed)


STUB_DEFAULTS = {"flag": False, "n": 3, "rate": 0.1, "sizes": (2, 1), "mode": "subset"}


class _StubClaim:
    """A claim with one parameter of every type, for ``verify --param`` without training."""

    id = "stub.every_type"
    overridable = ()

    def params(self, profile):
        return dict(STUB_DEFAULTS)

    def checked_specs(self, params):
        return []


@pytest.mark.parametrize(("name", "text", "value"), [
    ("flag", "True", True), ("flag", "false", False), ("n", "7", 7), ("rate", "0.25", 0.25),
    ("rate", "1", 1.0), ("sizes", "[4, 3]", (4, 3)), ("mode", "permutation", "permutation")])
def test_param_reads_predicts_grammar_then_takes_the_defaults_shape(name, text, value):
    """``--param`` reads a value as ``predict`` does; a list becomes a tuple and an integer a
    float only where the claim's default is one."""
    from attnverify.compare.cli.values import parse_options
    from attnverify.compare.cli.verify import claim_point
    from attnverify.compare.evaluation.verify import as_default_type

    point = claim_point([_StubClaim()], "smoke", [f"{name}={text}"], {})[_StubClaim.id]
    assert point == {name: value} and type(point[name]) is type(value)
    predicted = parse_options([f"--{name}", text])[name]
    assert point[name] == as_default_type(predicted, STUB_DEFAULTS[name])


@pytest.mark.parametrize(("argv", "separate_query"), [
    (["--separate_query", "False"], False), (["--separate-query=false"], False),
    (["--separate_query", "TRUE"], True), ([], True)])
def test_predict_reads_a_boolean_in_any_case(capsys, argv, separate_query):
    from attnverify import theory

    # D = 7: 3^3 = 27 >= 4D - 1 but < 4D + 1, so the two variants differ (3 and 4 layers)
    code, out, _ = run(capsys, "predict", "musat.min_layers_refined", "--D", "7", *argv)
    assert code == 0
    assert json.loads(out)["value"] == theory.musat.min_layers_refined(7, separate_query).value
    assert json.loads(out)["value"] == (4 if separate_query else 3)


def test_a_bug_after_the_param_check_is_a_traceback_not_a_user_error(tmp_path, monkeypatch):
    """``--param`` values are checked before anything runs; an error after that check is the
    code's, so it propagates instead of becoming "--param: ..." with exit 2."""
    from attnverify.compare.claims.snell.kappa_closed_form import KappaClosedForm

    def broken(self, params, results):
        raise ValueError("a bug in assess")

    monkeypatch.setattr(KappaClosedForm, "assess", broken)
    argv = ["verify", "--claim", "snell.kappa_closed_form", "--profile", "smoke", "-q",
            "--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out"),
            "--param", "n_sequences=200", "--workers", "1"]
    with pytest.raises(ValueError, match="a bug in assess"):
        main(argv)


def test_the_terminal_has_no_line_per_run_unless_verbose(capsys, tmp_path):
    """README command 1 shows progress and the verdict table, not a line per stored run;
    ``--verbose`` adds them (key, configuration, cached or not)."""
    argv = ["verify", "--claim", "snell.uniform_attention_at_init", "--profile", "smoke",
            "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "out"), "--workers", "1"]
    code, _, err = run(capsys, *argv)
    assert code == 0 and "not in cache" not in err and "cached " not in err
    code, _, err = run(capsys, *argv, "--verbose")
    assert code == 0 and err.count("cached ") == 3


def test_an_ascii_terminal_gets_escaped_characters_not_a_traceback(tmp_path):
    """``PYTHONIOENCODING=ascii`` (or a C locale): the statements' § and the report lines print
    escaped, and the command ends as it would anywhere else."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run([sys.executable, "-m", "attnverify.compare.cli", "claims"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "\\xa7" in proc.stdout and "Traceback" not in proc.stderr


def test_fail_on_sets_the_exit_code_and_names_the_claims(capsys, tmp_path):
    """--fail-on refuted fails on a refuted claim only, --fail-on inconclusive on any claim not
    confirmed; without it the exit code is 0 whatever the verdicts. The report is written."""
    from types import SimpleNamespace

    from attnverify.compare.cli.verify import failing_exit

    def outcome(claim_id, verdict):
        return SimpleNamespace(claim=SimpleNamespace(id=claim_id),
                               assessment=SimpleNamespace(verdict=verdict))

    report = SimpleNamespace(outcomes=[outcome("a.x", "confirmed"), outcome("a.y", "inconclusive")])
    assert failing_exit(report, None) == 0 and failing_exit(report, "refuted") == 0
    assert failing_exit(report, "inconclusive", say=True) == 1
    assert "--fail-on inconclusive: 1 claim(s) inconclusive or refuted: a.y" in \
        capsys.readouterr().err
    report.outcomes.append(outcome("a.z", "refuted"))
    assert failing_exit(report, "refuted") == 1
    # end to end: a confirmed derivation check passes both
    for verdict in ("refuted", "inconclusive"):
        code, _, _ = run(capsys, "verify", "--claim", "snell.kappa_closed_form", "--profile",
                         "smoke", "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "r"),
                         "-q", "--fail-on", verdict)
        assert code == 0 and (tmp_path / "r" / "report.json").exists()
    code, _, err = run(capsys, "verify", "--claim", "snell.kappa_closed_form", "--fail-on",
                       "maybe", "--cache", str(tmp_path / "c"))
    assert code == 2 and "invalid choice: 'maybe'" in err


@pytest.mark.parametrize("closed", [2, 0])
def test_a_closed_standard_stream_is_no_traceback(tmp_path, closed):
    """verify with stderr closed (2>&-) stores its runs and exits 0, where the progress bar
    failed on the missing stream; with stdin closed (<&-) above the cost guard's threshold it
    stops as a batch job does, in one line with exit 2, where the terminal check failed."""
    argv = [sys.executable, "-m", "attnverify.compare.cli", "verify", "--cache",
            str(tmp_path / "c"), "--out", str(tmp_path / "r"), "--workers", "1"]
    if closed == 2:
        argv += ["--claim", "snell.uniform_attention_at_init", "--profile", "smoke"]
    else:
        argv += ["--claim", "snell.permutation_is_hard", "--profile", "full"]
    pipes = {"stdout": subprocess.PIPE}
    if closed == 0:  # stderr is read; stdin is the closed stream
        pipes["stderr"] = subprocess.PIPE
    proc = subprocess.run(argv, text=True, check=False, preexec_fn=lambda: os.close(closed),
                          **pipes)
    if closed == 2:
        assert proc.returncode == 0 and "confirmed" in proc.stdout
        assert len(list((tmp_path / "c" / "runs").rglob("meta.json"))) == 3
    else:
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert "pass --yes to go ahead" in proc.stderr and not (tmp_path / "c" / "runs").exists()
