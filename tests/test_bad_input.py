"""Bad input, one table (ARCHITECTURE.md, "Contracts"): across the CLI, the RunSpecs a
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
         "--device cuda: this machine has no CUDA")]),
    (["verify", "--workers", "0"], "--workers must be an integer >= 1"),
    (["verify", "--workers", "-2"], "--workers must be an integer >= 1"),
    (["verify", "--workers", "two"], "invalid int value: 'two'"),
    (["verify", "--paper", "bao", "--corpus", "/nonexistent/corpus"], "--corpus"),
    (["verify", "--bogus"], "unrecognized arguments: --bogus"),
    # -- verify --param: the claim's RunSpecs (and theory inputs) reject the point ----------
    ([*PERMUTATION_IS_HARD, "--param", "L=1"], "task.vocab_size (V) must be an integer >= 2"),
    ([*PERMUTATION_IS_HARD, "--param", "L=-4"], "L must be an integer >= 1; got -4"),
    ([*PERMUTATION_IS_HARD, "--param", "L=4.5"], "L must be an integer >= 1; got 4.5"),
    # counts the runs do not see (Claim.check_params), in verify and in its dry run
    (["verify", "--claim", "snell.ktiw_precedes_attention", *SMOKE, "--param", "seeds=0"],
     "--param: seeds must be an integer >= 1; got 0"),
    (["verify", "--claim", "snell.ktiw_precedes_attention", *SMOKE, "--param", "seeds=0",
      "--dry-run"], "--param: seeds must be an integer >= 1; got 0"),
    (["verify", "--claim", "snell.kappa_closed_form", *SMOKE, "--param", "n_sequences=-4"],
     "n_sequences must be an integer >= 1; got -4"),
    (["verify", "--claim", "musat.depth_bound_closed_form", *SMOKE, "--param", "d_sets=-4",
      "--dry-run"], "d_sets must be an integer >= 1; got -4"),
    ([*PERMUTATION_IS_HARD, "--param", "subset_V=10"],
     "task.length (L) must be <= V = 10 for the subset distribution"),
    ([*PERMUTATION_IS_HARD, "--param", "hidden=abc"], "model.hidden must be an integer >= 1"),
    ([*PERMUTATION_IS_HARD, "--param", "hidden=0"], "model.hidden must be an integer >= 1"),
    ([*PERMUTATION_IS_HARD, "--param", "batch_size=0"], "batch_size must be an integer >= 1"),
    (["verify", "--claim", "snell.stage1_bow_optimum", *SMOKE, "--param", "steps=-5"],
     "steps must be an integer >= 0; got -5"),
    ([*SHALLOW, "--param", "shallow=[0, 1, 4]"], "task.D must be an integer >= 1; got 0"),
    ([*LOCATER, "--param", "d=0"], "model.d must be an integer >= 1; got 0"),
    ([*LOCATER, "--param", "lambdas=[0, -1]"], "model.locater must be a finite number >= 0"),
    (["verify", "--claim", "bao.antrp_variant_disagrees", *SMOKE, "--param", "eig_std=-1"],
     "std >= 0"),
    (["verify", "--claim", "musat.construction_meets_bound", *SMOKE, "--param", "depths=[0]"],
     "D must be an integer >= 1; got 0"),
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
    from attnverify.empirics import store as store_module

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
