"""Bad input, one table (docs/cli.md): across the CLI, the RunSpecs a
claim builds (``verify --param``) and ``predict``, every row prints one line on stderr naming
the problem and the accepted values, exits with 2, prints no traceback and writes nothing: no
cache directory, no report directory."""

from __future__ import annotations

import errno
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnverify.compare.cli import main


def _free_port() -> int:
    with socket.socket() as sock:  # bound, then released: nobody listens on it
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SMOKE = ["--profile", "smoke"]
PERMUTATION_IS_HARD = ["verify", "--claim", "snell.permutation_is_hard", *SMOKE]
SHALLOW = ["verify", "--claim", "musat.shallow_models_fail", *SMOKE]
LOCATER = ["verify", "--claim", "bao.locater_effect", *SMOKE]

BAD_INPUTS = [
    # -- verify: selection, profile, executor ---------------------------------------------
    (["verify", "--claim", "snell.nope"], "unknown claim 'snell.nope'; accepted: snell."),
    (["verify", "--claim", "snell.ktiw_learned"], "unknown claim 'snell.ktiw_learned'; did you "
                                                   "mean snell.ktiw_learned_under_uniform_"
                                                   "attention? (accepted: "),
    (["verify", "--claim", "snell.permutaton_is_hard"], "did you mean snell.permutation_is_hard"),
    (["verify", "--paper", "bao", "--claim", "snell.kappa_closed_form"],
     "claim 'snell.kappa_closed_form' belongs to paper 'snell', not 'bao'"),
    (["verify", "--paper", "hinton"], "unknown paper 'hinton'; accepted: snell, musat, bao"),
    (["verify", "--profile", "huge"], "unknown profile 'huge'; accepted: smoke, quick, full"),
    (["verify", "--executor", "slurm"],
     "unknown executor 'slurm'; accepted: local, dask-local, dask://HOST:PORT"),
    (["verify", "--executor", "dask://nowhere"], "malformed Dask address 'dask://nowhere'"),
    (["verify", "--executor", "dask://host:70000"], "with a port in 1..65535"),
    (["verify", "--executor", "dask://host:port"], "accepted: dask://HOST:PORT"),
    (["verify", "--claim", "snell.kappa_closed_form", "--executor",
      f"dask://127.0.0.1:{_free_port()}", "--connect-timeout", "1"],
     "cannot reach the Dask scheduler at dask://127.0.0.1:"),
    (["verify", "--connect-timeout", "0"], "--connect-timeout must be a number of seconds > 0"),
    (["verify", "--device", "tpu"], "invalid choice: 'tpu'"),
    # --device cuda is bad input only where torch sees no GPU
    *([] if torch.cuda.is_available() else [
        (["verify", "--device", "cuda"], "--device cuda: this machine has no CUDA"),
        (["falsify", "bao.locater_effect", "--device", "cuda"],
         "--device cuda: this machine has no CUDA"),
        (["figures", "--device", "cuda"], "--device cuda: this machine has no CUDA")]),
    (["figures", "--workers", "0"], "--workers must be an integer >= 1"),
    (["figures", "--device", "tpu"], "invalid choice: 'tpu'"),
    (["verify", "--workers", "0"], "--workers must be an integer >= 1"),
    (["verify", "--workers", "-2"], "--workers must be an integer >= 1"),
    (["verify", "--seed-group", "0"], "--seed-group must be an integer >= 1"),
    (["verify", "--workers", "two"], "invalid int value: 'two'"),
    (["verify", "--paper", "bao", "--corpus", "/nonexistent/corpus"], "--corpus"),
    (["verify", "--paper", "musat", "--llm-dir", "/nonexistent/model"], "--llm-dir"),
    (["verify", "--bogus"], "unrecognized arguments: --bogus"),
    # -- verify --param: the claim's RunSpecs (and theory inputs) reject the point ----------
    ([*PERMUTATION_IS_HARD, "--param", "L=1"], "task.vocab_size (V) must be an integer >= 2"),
    ([*PERMUTATION_IS_HARD, "--param", "L=-4"], "L must be an integer >= 1; got -4"),
    ([*PERMUTATION_IS_HARD, "--param", "L=4.5"],
     "the 'L' parameter of snell.permutation_is_hard must be an integer; got 4.5"),
    # counts the runs do not see (Claim.check_params), in verify and in its dry run
    (["verify", "--claim", "snell.ktiw_precedes_attention", *SMOKE, "--param", "seeds=0"],
     "--param: seeds must be an integer >= 1; got 0"),
    (["verify", "--claim", "snell.ktiw_precedes_attention", *SMOKE, "--param", "seeds=0",
      "--dry-run"], "--param: seeds must be an integer >= 1; got 0"),
    (["verify", "--claim", "snell.kappa_closed_form", *SMOKE, "--param", "n_sequences=-4"],
     "n_sequences must be an integer >= 2 (a standard error needs two sequences); got -4"),
    (["verify", "--claim", "musat.depth_bound_closed_form", *SMOKE, "--param", "d_sets=-4",
      "--dry-run"], "d_sets must be an integer >= 1; got -4"),
    ([*PERMUTATION_IS_HARD, "--param", "subset_V=10"],
     "task.length (L) must be <= V = 10 for the subset distribution"),
    ([*PERMUTATION_IS_HARD, "--param", "hidden=abc"],
     "the 'hidden' parameter of snell.permutation_is_hard must be an integer; got 'abc'"),
    ([*PERMUTATION_IS_HARD, "--param", "hidden=0"], "model.hidden must be an integer >= 1"),
    ([*PERMUTATION_IS_HARD, "--param", "batch_size=0"], "batch_size must be an integer >= 1"),
    (["verify", "--claim", "snell.stage1_bow_optimum", *SMOKE, "--param", "steps=-5"],
     "steps must be an integer >= 0; got -5"),
    ([*SHALLOW, "--param", "shallow=[0, 1, 4]"],
     "--param: shallow must have D >= 1, layers >= 1 and distractors >= 0; got (0, 1, 4)"),
    ([*LOCATER, "--param", "d=0"], "model.d must be an integer >= 1; got 0"),
    ([*LOCATER, "--param", "lambdas=[0, -1]"], "model.locater must be a finite number >= 0"),
    (["verify", "--claim", "bao.antrp_variant_disagrees", *SMOKE, "--param", "eig_std=-1"],
     "std >= 0"),
    (["verify", "--claim", "musat.construction_meets_bound", *SMOKE, "--param", "depths=[0]"],
     "--param: depths must be chain lengths >= 1; got (0,)"),
    (["verify", "--claim", "musat.depth_bound_closed_form", *SMOKE, "--param", "d_sets=0"],
     "d_sets must be an integer >= 1; got 0"),
    ([*PERMUTATION_IS_HARD, "--param", "nope=1"],
     "unknown parameter 'nope' of snell.permutation_is_hard; accepted: hidden, L"),
    ([*PERMUTATION_IS_HARD, "--param", "L"], "--param 'L': expected NAME=VALUE"),
    (["verify", "--paper", "bao", "--param", "d=3"], "--param needs --claim ID"),
    # -- predict ------------------------------------------------------------------------------
    (["predict", "snell.nope"], "unknown quantity 'snell.nope'; accepted: snell.kappa"),
    (["predict", "snell.kappa", "--V", "30", "--L", "40"], "L must be <= V"),
    (["predict", "snell.kappa", "--V", "-3", "--L", "2"], "V (vocabulary size) must be"),
    (["predict", "snell.kappa", "--V", "abc", "--L", "2"], "V (vocabulary size) must be"),
    (["predict", "snell.kappa", "--V", "30"], "missing parameter(s) L"),
    (["predict", "snell.kappa", "--V", "30", "--L", "3", "--W", "1"], "unknown parameter(s) W"),
    (["predict", "snell.kappa", "--V"], "parameter --V has no value"),
    (["predict", "snell.kappa", "60"], "expected --PARAM VALUE"),
    (["predict", "snell.kappa", "--V", "60", "--c", "40"], "unknown parameter(s) c"),
    (["predict", "musat.min_layers", "--D", "0"], "D must be an integer >= 1"),
    (["predict", "musat.min_layers", "--D", "three"], "D must be an integer >= 1"),
    (["predict", "musat.max_depth", "--t", "-1"], "t must be an integer >= 0"),
    (["predict", "bao.rho", "--d", "64", "--T", "128", "--eig-mean", "0.1", "--eig-std", "-1"],
     "eig_std must be >= 0"),
    (["predict", "bao.rho", "--d", "0", "--T", "128", "--eig-mean", "0.1", "--eig-std", "1"],
     "d must be an integer >= 1"),
    (["predict", "bao.regime", "--d", "8", "--T", "1", "--eig-mean", "0", "--eig-std", "1"],
     "T must be an integer >= 2"),
    (["predict", "bao.rho", "--d", "8", "--T", "8", "--eig-mean", "x", "--eig-std", "1"],
     "eig_mean must be a finite number"),
    (["predict", "bao.rho", "--d", "8", "--T", "8", "--eig-mean", "nan", "--eig-std", "1"],
     "eig_mean must be a finite number"),
    (["predict", "bao.rho", "--d", "8", "--T", "8", "--eig-mean", "0", "--eig-std", "inf"],
     "eig_std"),
    # -- runs and the command itself ---------------------------------------------------------
    (["runs", "show", "0" * 24], f"no run '{'0' * 24}'"),
    (["runs", "rm", "0" * 24], f"no run '{'0' * 24}'"),
    (["runs", "rm", ".."], "malformed run key '..'"),
    (["runs", "rm", ""], "malformed run key ''"),
    (["runs", "show", "deadbeef"], "malformed run key 'deadbeef'"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["bench", "--families", "gpt"], "--families: unknown gpt; accepted: snell_copying"),
    (["bench", "--repeats", "0"], "--repeats must be an integer >= 1"),
    # -- one value per option, durations that are numbers --------------------------------------
    (["verify", "--profile", "smoke", "--profile", "quick"],
     "--profile given twice ('smoke', then 'quick'); it takes one value"),
    (["verify", "--out", "elsewhere"], "--out given twice ('elsewhere', then "),
    (["runs", "--cache", "/elsewhere", "list"], "--cache given twice ('/elsewhere', then "),
    (["predict", "snell.kappa", "--V", "60", "--V", "70", "--L", "3"],
     "parameter --V given twice; it takes one value"),
    (["verify", "--connect-timeout", "nan"],
     "--connect-timeout must be a number of seconds > 0; got nan"),
    (["verify", "--connect-timeout", "inf"],
     "--connect-timeout must be a number of seconds > 0; got inf"),
    (["falsify", "bao.locater_effect", "--max-cost", "nan"],
     "--max-cost must be a number of seconds > 0; got nan"),
    # -- an empty list leaves nothing to compare (before: an IndexError or a traceback) -----------
    ([*SHALLOW, "--param", "shallow=[]"],
     "must be a list of 3 values (D: an integer, layers: an integer, distractors: an integer); "
     "got []"),
    (["verify", "--claim", "snell.kappa_closed_form", *SMOKE, "--param", "points=[]"],
     "--param: points must be a list of at least one value"),
    (["verify", "--claim", "musat.construction_meets_bound", *SMOKE, "--param", "depths=[]"],
     "--param: depths must be a list of at least one value"),
    (["verify", "--claim", "bao.zero_mean_no_selectivity", *SMOKE, "--param", "stds=[]",
      "--dry-run"], "--param: stds must be a list of at least one value"),
    # -- upper bounds of sizes and counts: the parameter, the bound and why -------------------
    ([*PERMUTATION_IS_HARD, "--param", "steps=1000000000"], "--param: steps must be <= "),
    ([*PERMUTATION_IS_HARD, "--param", "hidden=1000000"],
     "10 times the largest the claim's profiles and search space use"),
    (["verify", "--claim", "snell.ktiw_precedes_attention", *SMOKE, "--param", "seeds=100000",
      "--dry-run"], "--param: seeds must be <= "),
    (["verify", "--claim", "bao.score_moments", *SMOKE, "--param", "n_samples=1000000000"],
     "--param: n_samples must be <= "),
    (["verify", "--claim", "musat.depth_bound_closed_form", *SMOKE, "--param",
      "d_sets=100000000"], "--param: d_sets must be <= "),
    ([*SHALLOW, "--param", "shallow=[2, 1, 100000]"], "--param: shallow must be <= "),
    (["verify", "--workers", "100000"], "--workers must be <= 256: each worker is a process"),
    (["predict", "bao.rho", "--d", "64", "--T", "1000000000", "--eig-mean", "0.1", "--eig-std",
      "1"], "T must be <= 1,000,000: the score moments are summed over arrays of T positions"),
    (["predict", "musat.max_depth", "--t", "9100"], "t must be <= 9,000: (3^t - 1) / 2"),
    (["predict", "snell.stage1_accuracy_bound", "--L", "1000000000"], "L must be <= 10,000,000"),
    (["predict", "snell.kappa", "--V", "1e300", "--L", "3"],
     "V must be <= 9,007,199,254,740,992: above 2^53"),
]


def test_the_table_is_large_enough():
    assert len(BAD_INPUTS) >= 30


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, out: str, err: str, fragment: str) -> None:
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("attnverify"), err
    assert fragment in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize(("argv", "fragment"), BAD_INPUTS,
                         ids=[" ".join(a)[:60] for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(capsys, tmp_path, argv, fragment):
    cache, out_dir = tmp_path / "c", tmp_path / "report"
    extra = ["--cache", str(cache)] + (["--out", str(out_dir)] if argv[0] == "verify" else [])
    code, out, err = run(capsys, [*argv, *extra])
    assert_one_line_error(code, out, err, fragment)
    assert not cache.exists() and not out_dir.exists()
    assert not (tmp_path / "default-cache").exists()


def test_unwritable_cache_directory(capsys, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    argv = ["verify", "--claim", "snell.kappa_closed_form", *SMOKE, "--out",
            str(tmp_path / "report")]
    code, out, err = run(capsys, [*argv, "--cache", str(blocker / "cache")])
    assert_one_line_error(code, out, err, f"--cache {blocker / 'cache'}: {blocker} exists and "
                                          f"is not a directory")
    monkeypatch.setenv("ATTNVERIFY_CACHE", str(blocker / "cache"))  # the default location too
    code, out, err = run(capsys, argv)
    assert_one_line_error(code, out, err, "the cache directory")
    assert not (tmp_path / "report").exists() and blocker.read_text() == "not a directory"


def test_full_disk_is_one_line_and_leaves_nothing_in_the_cache(capsys, tmp_path, monkeypatch):
    from attnverify.empirics.store import run_store as store_module

    def full_disk(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(store_module, "_fsync_write", full_disk)
    cache = tmp_path / "c"
    code, out, err = run(capsys, ["verify", "--claim", "snell.uniform_attention_at_init", *SMOKE,
                                  "--workers", "1", "--quiet", "--cache", str(cache), "--out",
                                  str(tmp_path / "report")])
    assert_one_line_error(code, out, err, "No space left on device; free some space")
    assert [p for p in cache.rglob("*") if p.is_file()] == []  # no half-written entry
    assert not (tmp_path / "report").exists()


def test_a_real_process_prints_one_line_and_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "attnverify.compare.cli", "verify", "--executor",
                           "dask://x", "--cache", str(tmp_path / "c")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("attnverify: error: malformed Dask address 'dask://x'")
    assert proc.stderr.count("\n") == 1


def test_every_profile_default_passes_the_claims_own_checks():
    """``Claim.check_params`` rejects only what no profile uses."""
    from attnverify.compare.claim import PROFILES
    from attnverify.compare.registry import select

    for claim in select(None, None):
        for profile in PROFILES:
            claim.check_params(claim.params(profile))


# -- paths the table cannot hold: files, the environment, several claims ---------------------
def _corpus(root: Path, text: bytes) -> Path:
    root.mkdir()
    for name in ("wiki.train.tokens", "wiki.valid.tokens"):
        (root / name).write_bytes(text)
    return root


@pytest.mark.parametrize(("content", "fragment"), [
    (bytes(range(128, 256)) * 8, "wiki.train.tokens is not UTF-8 text (byte 0x80 at offset 0)"),
    (b"three token file\n", "corpus train split must be longer than T = "),
])
@pytest.mark.parametrize("dry_run", [False, True])
def test_a_corpus_that_cannot_be_read_or_is_too_short(capsys, tmp_path, content, fragment,
                                                      dry_run):
    corpus = _corpus(tmp_path / "corpus", content)
    cache, out_dir = tmp_path / "c", tmp_path / "report"
    code, out, err = run(capsys, [*LOCATER, "--corpus", str(corpus), "--cache", str(cache),
                                  "--out", str(out_dir), *(["--dry-run"] if dry_run else [])])
    assert_one_line_error(code, out, err, f"--corpus {corpus}: ")
    assert fragment in err
    assert not cache.exists() and not out_dir.exists()
    # the negative control: a readable corpus longer than the windows passes the same checks
    good = _corpus(tmp_path / "good", (" ".join(f"w{i % 17}" for i in range(400)) + "\n").encode())
    code, out, err = run(capsys, [*LOCATER, "--corpus", str(good), "--cache", str(cache),
                                  "--dry-run"])
    assert code == 0 and "bao.locater_effect" in out, err


def test_a_corpus_long_enough_here_but_not_at_full_is_not_estimated_there(capsys, tmp_path):
    """The dry run's line on full builds full's windows (T = 128) from a corpus that smoke's
    (T = 32) accept: a corpus between the two is planned here and not estimated at full."""
    corpus = _corpus(tmp_path / "corpus", (" ".join(f"w{i % 17}" for i in range(100))
                                           + "\n").encode())
    code, out, err = run(capsys, [*LOCATER, "--corpus", str(corpus), "--cache",
                                  str(tmp_path / "c"), "--dry-run"])
    assert code == 0 and "bao.locater_effect" in out, err
    assert "At full: not estimated (corpus train split must be longer than T = 128" in out


@pytest.fixture
def no_home(monkeypatch):
    """A user without a home directory: HOME unset and no password entry (some containers)."""
    import pwd

    def no_entry(uid: int):
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    for name in ("HOME", "XDG_CACHE_HOME", "ATTNVERIFY_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)


@pytest.mark.parametrize("argv", [["runs", "list"], ["verify", "--claim",
                                                     "snell.kappa_closed_form", *SMOKE]])
def test_no_home_directory_without_cache(capsys, tmp_path, no_home, argv):
    out_dir = tmp_path / "report"
    extra = ["--out", str(out_dir)] if argv[0] == "verify" else []
    code, out, err = run(capsys, [*argv, *extra])
    assert_one_line_error(code, out, err, "no home directory to hold the default cache")
    assert "pass --cache DIR or set ATTNVERIFY_CACHE" in err and not out_dir.exists()
    code, _, err = run(capsys, ["runs", "list", "--cache", str(tmp_path / "c")])  # the way out
    assert code == 0 and "0 runs in" in err


@pytest.mark.parametrize("argv", [["figures", *SMOKE, "--out", "FIGS"], ["runs", "list"],
                                  ["runs", "show", "0" * 24], ["runs", "export"]])
def test_a_cache_that_is_a_file(capsys, tmp_path, argv):
    blocker = tmp_path / "cache-file"
    blocker.write_text("not a cache")
    argv = [a.replace("FIGS", str(tmp_path / "figs")) for a in argv]
    code, out, err = run(capsys, [*argv, "--cache", str(blocker)])
    assert_one_line_error(code, out, err, f"--cache {blocker}: {blocker} exists and is not a "
                                          f"directory")
    assert blocker.read_text() == "not a cache" and not (tmp_path / "figs").exists()


@pytest.mark.parametrize("option", ["--out", "--cache"])
def test_a_name_past_the_file_system_limit_is_refused_before_training(capsys, tmp_path,
                                                                      option):
    """A name longer than the file system allows (255 bytes here) is refused in one line before
    anything trains; the longest legal name works, its temporary names included (they keep
    only the name's first characters)."""
    argv = ["verify", "--claim", "snell.uniform_attention_at_init", *SMOKE, "-q",
            "--workers", "1", "--cache", str(tmp_path / "c"), "--out", str(tmp_path / "r")]
    at = argv.index(option) + 1
    too_long, longest = list(argv), list(argv)
    too_long[at] = str(tmp_path / ("n" * 256))
    code, out, err = run(capsys, too_long)
    assert_one_line_error(code, out, err, "is 256 bytes, longer than the 255 the file system "
                                          "allows; choose a shorter name")
    assert not (tmp_path / "c").exists() and not (tmp_path / "r").exists()
    longest[at] = str(tmp_path / ("n" * 255))
    code, out, _ = run(capsys, longest)
    assert code == 0 and "confirmed" in out and (tmp_path / ("n" * 255)).is_dir()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("folder", ["runs", "tmp", "corrupt", "checkpoints", "memo", "falsify"])
def test_a_cache_folder_that_is_a_file_is_named_in_one_line(capsys, tmp_path, folder):
    """Where one of the cache's folders is a plain file (or a link to nothing), verify and
    runs stop in one line naming it, before training, and change nothing; the control: once
    it is moved aside, the same command works."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / folder).write_text("x")
    argv = ["verify", "--claim", "snell.uniform_attention_at_init", *SMOKE, "--cache",
            str(cache), "--out", str(tmp_path / "report"), "-q", "--workers", "1"]
    code, out, err = run(capsys, argv)
    assert_one_line_error(code, out, err, f"the cache's {folder}/ at {cache / folder} is a "
                                          f"file of 1 bytes, not a folder: move it aside")
    assert sorted(p.name for p in cache.iterdir()) == [folder]
    assert not (tmp_path / "report").exists()
    code, _, err = run(capsys, ["runs", "list", "--cache", str(cache)])
    assert code == 2 and f"{folder}/" in err
    (cache / folder).unlink()
    (cache / folder).symlink_to(tmp_path / "nowhere")
    code, out, err = run(capsys, argv)
    assert_one_line_error(code, out, err, "is a link to nothing, not a folder")
    (cache / folder).unlink()
    code, out, _ = run(capsys, argv)
    assert code == 0 and "confirmed" in out


@pytest.mark.parametrize("argv", [["runs", "list"], ["verify", "--claim",
                                                     "snell.kappa_closed_form", *SMOKE]])
def test_an_empty_cache_is_refused_not_the_default(capsys, tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    default = tmp_path / "default-cache"
    extra = ["--out", str(tmp_path / "report")] if argv[0] == "verify" else []
    code, out, err = run(capsys, [*argv, "--cache", "", *extra])
    assert_one_line_error(code, out, err, "--cache must name a directory; got an empty path")
    assert list(tmp_path.iterdir()) == []
    code, _, err = run(capsys, ["runs", "list"])  # the control: the fallback it would have used
    assert code == 0 and f"0 runs in {default}" in err


def test_two_claims_run_both(capsys, tmp_path):
    two = ["--claim", "snell.kappa_closed_form", "--claim", "bao.score_moments"]
    code, out, err = run(capsys, ["verify", *two, *SMOKE, "--dry-run", "--cache",
                                  str(tmp_path / "c")])
    rows = [line.split()[0] for line in out.splitlines() if line.startswith(("snell.", "bao."))]
    assert code == 0 and rows == ["snell.kappa_closed_form", "bao.score_moments"], out
    code, out, _ = run(capsys, ["verify", *two[:2], *SMOKE, "--dry-run", "--cache",
                                str(tmp_path / "c")])  # the control: one claim, one row
    assert code == 0 and "bao.score_moments" not in out
    code, out, err = run(capsys, ["verify", *two, *SMOKE, "--param", "n_samples=10", "--cache",
                                  str(tmp_path / "c")])
    assert_one_line_error(code, out, err, "--param needs --claim ID")


def test_untrained_runs_are_not_testable_not_refuted(capsys, tmp_path):
    """``--param steps=0``: nothing trained, nothing decided; the claim says so and exits 0."""
    import json

    cache, out_dir = tmp_path / "c", tmp_path / "report"
    argv = [*PERMUTATION_IS_HARD, "--param", "steps=0", "--cache", str(cache)]
    code, out, _ = run(capsys, [*argv, "--dry-run"])
    assert code == 0 and "not testable here" in out
    code, out, _ = run(capsys, [*argv, "--out", str(out_dir), "--quiet"])
    assert code == 0 and "not testable here" in out
    (record,) = json.loads((out_dir / "report.json").read_text())["claims"]
    assert (record["verdict"], record["reason"]) == ("inconclusive", "not testable here")
    assert "train no step" in record["explanation"] and record["run_keys"] == []
    assert "its runs would train no step: nothing was run" in (out_dir / "report.md").read_text()
    assert not (cache / "runs").exists()  # nothing was trained


def test_not_testable_is_decided_by_the_claims_own_runs():
    """Generic, from the runs: claims whose runs train at their profile are not testable at
    steps = 0 (also when only some runs lose their training); a claim about initialisation,
    whose runs train no step by design, and every profile default are assessed as usual."""
    from attnverify.compare.claim import PROFILES
    from attnverify.compare.evaluation.verify import untrained
    from attnverify.compare.protocol import Reason
    from attnverify.compare.registry import select

    assert str(Reason.NOT_TESTABLE) == "not testable here"
    # claims that train at smoke (two Mușat claims read a cell only the full profile has)
    trainers = [c for c in select() if "steps" in c.params("smoke")
                and c.checked_specs(c.params("smoke"))]
    assert len(trainers) >= 10
    for claim in trainers:
        assert untrained(claim, "smoke", claim.params("smoke") | {"steps": 0}), claim.id
    (partial,) = select(None, "snell.stage1_bow_optimum")  # a reference run keeps its steps
    specs = partial.checked_specs(partial.params("smoke") | {"steps": 0})
    assert 0 < sum(s.steps == 0 for s in specs) < len(specs)
    for claim in select():
        for profile in PROFILES:
            assert untrained(claim, profile, claim.params(profile)) is None, (claim.id, profile)
    (at_init,) = select(None, "snell.uniform_attention_at_init")
    assert {s.steps for s in at_init.checked_specs(at_init.params("smoke"))} == {0}


def test_bounds_hold_at_the_bound_and_refuse_past_it():
    """The negative control of the bound rows above: every claim's sizes pass at their bound
    and fail one past it; predict's bounds likewise."""
    from attnverify.compare.param_bounds import check_sizes, size_bounds
    from attnverify.compare.registry import select
    from attnverify.theory.registry import SIZE_BOUNDS
    from attnverify.theory.registry import check_sizes as check_predict

    checked = 0
    for claim in select():
        references = claim.size_references()
        for name, (bound, _) in size_bounds(references).items():
            check_sizes({name: bound}, references)
            with pytest.raises(ValueError, match=f"^{name} must be <= {bound:,}, "):
                check_sizes({name: [bound + 1]}, references)
            checked += 1
    assert checked > 50
    for name, (bound, _) in SIZE_BOUNDS.items():
        check_predict({name: bound})
        with pytest.raises(ValueError, match=f"^{name} must be <= {bound:,}: "):
            check_predict({name: bound + 1})
    assert main(["predict", "musat.max_depth", "--t", "9000"]) == 0  # its digits still print


# -- damaged entries: listed, never read, printed as strict JSON -----------------------------
def _stored_runs(root: Path, n: int) -> list[str]:
    """``n`` runs put into a store at ``root`` without training (diverged: NaN metrics)."""
    import numpy as np

    from attnverify.empirics import RunResult, RunSpec, RunStore
    from attnverify.empirics.models.seq2seq import Seq2SeqConfig
    from attnverify.empirics.tasks.copying import CopyTask

    store, keys = RunStore(root), []
    for seed in range(n):
        spec = RunSpec(task=CopyTask("subset", 8, 4), model=Seq2SeqConfig(hidden=8), steps=1,
                       batch_size=2, eval_every=1, eval_size=2, seed=seed)
        nan = np.full(1, np.nan)  # diverged at step 1: evaluated at step 0 only
        store.put(RunResult(spec=spec, status="diverged", eval_steps=np.arange(1),
                            metrics={"accuracy": nan}, train_loss=nan))
        keys.append(spec.key())
    return keys


def test_damaged_metadata_is_listed_and_the_listing_goes_on(capsys, tmp_path):
    import json

    root = tmp_path / "c"
    intact, missing, endless = _stored_runs(root, 3)
    meta = root / "runs" / missing[:2] / missing / "meta.json"
    data = json.loads(meta.read_text())
    del data["status"]
    meta.write_text(json.dumps(data))
    link = root / "runs" / endless[:2] / endless / "meta.json"
    link.unlink()
    link.symlink_to("/dev/zero")  # read whole, it would never end
    code, out, err = run(capsys, ["runs", "list", "--cache", str(root)])
    lines = dict(line.split("  ", 1) for line in out.splitlines())
    assert code == 0 and "Traceback" not in err and "3 runs in" in err and "2 damaged" in err
    assert lines[intact].startswith("diverged")  # the control: an intact entry as usual
    assert lines[missing] == "no field 'status'  (damaged)"
    assert lines[endless] == "meta.json is a symbolic link  (damaged)"
    code, out, err = run(capsys, ["runs", "show", endless, "--cache", str(root)])
    assert_one_line_error(code, out, err, "meta.json is a symbolic link")


def test_show_and_export_print_strict_json(capsys, tmp_path):
    import json

    def strict(text: str):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in {text}"))

    root = tmp_path / "c"
    (key,) = _stored_runs(root, 1)
    code, out, _ = run(capsys, ["runs", "show", key, "--cache", str(root)])
    assert code == 0 and strict(out)["final"] == {"accuracy": None}
    code, out, _ = run(capsys, ["runs", "export", "--format", "json", "--cache", str(root)])
    rows = strict(out)
    assert code == 0 and len(rows) == 1 and all(r["accuracy"] is None for r in rows)
    code, out, _ = run(capsys, ["runs", "export", "--cache", str(root)])  # CSV keeps nan
    assert code == 0 and "nan" in out
