"""``attnverify bench``: its JSON contract and the arithmetic behind its ratios (the
numbers themselves are measurements of the machine, not test targets)."""

from __future__ import annotations

import json

import pytest
import torch

from attnverify.compare import bench
from attnverify.compare.cli import main


def test_flop_count_of_a_linear_step_is_exact():
    """FlopCounterMode on a known case: y = x W^T, loss = sum(y): forward 2 B n m, backward
    (weight gradient only; x needs none) 2 B n m."""
    from torch.utils.flop_counter import FlopCounterMode

    lin = torch.nn.Linear(8, 4, bias=False)
    x = torch.randn(16, 8)
    with FlopCounterMode(display=False) as counter:
        lin(x).sum().backward()
    assert counter.get_total_flops() == 2 * (2 * 16 * 8 * 4)


@pytest.mark.parametrize("cell", [torch.nn.LSTM, torch.nn.GRU])
def test_recurrent_flops_match_an_unrolled_cell(cell):
    """The analytic count equals FlopCounterMode on the same recurrence unrolled by hand (its
    matmuls only: the input and hidden projections of every step, every gradient needed), which
    the counter does see; the fused nn.LSTM/GRU kernel it does not see at all."""
    from torch.utils.flop_counter import FlopCounterMode

    B, T, n_in, H = 3, 5, 6, 4
    module = cell(n_in, H, batch_first=True)
    gates = 4 if cell is torch.nn.LSTM else 3
    x = torch.randn(B, T, n_in, requires_grad=True)
    w_ih = torch.randn(gates * H, n_in, requires_grad=True)
    w_hh = torch.randn(gates * H, H, requires_grad=True)
    h = torch.randn(B, H, requires_grad=True)
    with FlopCounterMode(display=False) as unrolled:
        for t in range(T):
            h = torch.tanh((x[:, t] @ w_ih.T + h @ w_hh.T)[:, :H])
        h.sum().backward()
    expected = unrolled.get_total_flops()
    assert bench.recurrent_flops(module, x) == expected > 0

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = module

        def forward(self, inputs: torch.Tensor) -> torch.Tensor:
            return self.rnn(inputs)[0].sum()

    # the step count: the counter's own where it sees the cell (the GRU's ops; its initial
    # state needs no gradient, hence 2 B H G H less), the analytic count where it sees
    # nothing (the fused LSTM kernel), never both
    encoder = Encoder()
    counted = bench.count_step_flops(encoder, lambda m: m(x))
    assert counted == (expected if cell is torch.nn.LSTM else expected - 2 * B * H * gates * H)


def _claims_run(family: str, config: str):
    """The run a claim of ``family`` trains at profile ``config`` (seed 0), built from the
    claims' own profiles and spec builders."""
    if family in ("snell_copying", "snell_multihead"):
        from attnverify.compare.claims.snell.common import COPYING, copy_spec

        params = COPYING[config]
        extra = ({"heads": 8, "cell": "gru", "shared_embedding": False}
                 if family == "snell_multihead" else {})
        return copy_spec(params, "permutation", params["L"], 0, **extra)
    if family == "musat_retrieval":
        from attnverify.compare.claims.musat.runs import RETRIEVAL, retrieval_spec

        return retrieval_spec(RETRIEVAL[config], "deep", True, 0)
    assert family == "bao_lm"
    from attnverify.compare.claims.bao.training import LM, lm_specs

    return lm_specs(LM[config].as_dict())[0]


@pytest.mark.parametrize("config", bench.CONFIGS)
@pytest.mark.parametrize("family", bench.FAMILIES)
def test_bench_times_the_runs_the_claims_train(family, config):
    """The benchmark's run of each family and configuration (written out in
    empirics.bench.families) is the run the claims train at that profile: the same key."""
    assert bench.family_spec(family, config).key() == _claims_run(family, config).key()


def test_an_unknown_family_or_config_is_refused():
    with pytest.raises(ValueError, match="unknown family 'gpt4'"):
        bench.family_spec("gpt4", "quick")
    with pytest.raises(ValueError, match="unknown config 'huge'"):
        bench.family_spec("bao_lm", "huge")


def test_bench_json_contract(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "gemm_peak", lambda repeats: 1e10)
    out = tmp_path / "bench.json"
    code = main(["bench", "--families", "bao_lm", "--configs", "quick", "--repeats", "1",
                 "--json", str(out), "--quiet"])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["gemm_peak_flops"] == 1e10
    (model,) = doc["models"]
    assert model["family"] == "bao_lm" and model["config"] == "quick"
    for key in ("seed_steps_per_s", "flops_per_step", "reference_seed_steps_per_s"):
        assert model[key] > 0
    assert 50 < model["peak_rss_mb"] < 2048  # a worker imports torch (~100 MiB) at least
    assert model["speedup"] == pytest.approx(model["seed_steps_per_s"]
                                             / model["reference_seed_steps_per_s"])
    assert model["fraction_of_peak"] == pytest.approx(model["seed_steps_per_s"]
                                                      * model["flops_per_step"] / 1e10)
    assert 0 < model["fixed_cost_fraction"] <= 1
    assert model["batching_bound"] == bench.batching_bound(model["fixed_cost_fraction"])
    assert bench.batching_bound(0.75) == pytest.approx(4.0)
    assert bench.batching_bound(1.0) is None  # batch 1 no faster: nothing to read off
    model["batching_bound"] = None
    assert "%      -" in bench.table(doc)  # the table shows it as '-'
    assert model["seed_batched"] is False and model["seeds_at_once"] == doc["workers"]
    shares = [op["share"] for op in model["top_ops"]]
    assert model["top_ops"] and all(isinstance(op["op"], str) for op in model["top_ops"])
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1 + 1e-9
    assert set(doc["theory"]) >= {"bao_rho_1e6_values_s", "bao_localization_grid_1e6_s",
                                  "musat_game_intervals_D1e4_s",
                                  "bao_monte_carlo_1e7_walk_values_s"}
    assert doc["verify_quick_s"] == {"cold": None, "warm": None}
    assert model["compile_one_thread"] is None and "torch.compile" not in bench.table(doc)


def test_the_compiled_reference_is_shown_beside_the_eager_one(monkeypatch, capsys):
    spec = bench.family_spec("bao_lm", "quick")
    monkeypatch.setattr(bench, "reference_step_time",
                        lambda spec, steps, compiled=False: 0.5 if compiled else 1.0)
    assert bench.compiled_reference(spec, (1, 2), repeats=2) == {"eager": 1.0, "compiled": 2.0,
                                                                  "speedup": 2.0}

    def fails(spec, steps, compiled=False):
        raise RuntimeError("no C++ compiler\nmore")

    monkeypatch.setattr(bench, "reference_step_time", fails)
    assert bench.compiled_reference(spec, (1, 2), repeats=1) is None
    assert "torch.compile failed for bao_attention_lm: no C++ compiler" in capsys.readouterr().err
    doc = {"gemm_peak_flops": 1e10, "workers": 1, "theory": {},
           "verify_quick_s": {"cold": None, "warm": None},
           "models": [{"family": "bao_lm", "config": "quick", "seed_steps_per_s": 2.0,
                       "reference_seed_steps_per_s": 1.0, "speedup": 2.0,
                       "flops_per_step": 1e9, "fraction_of_peak": 0.2, "peak_rss_mb": 100,
                       "fixed_cost_fraction": 0.5, "batching_bound": 2.0,
                       "seed_batched": False, "seeds_at_once": 1, "top_ops": [],
                       "compile_one_thread": {"eager": 1.0, "compiled": 0.8,
                                              "speedup": 0.8}}]}
    assert "bao_lm @ quick: 0.80 seed-steps/s compiled against 1.00 eager (0.80x)" \
        in bench.table(doc)


@pytest.mark.parametrize(("argv", "fragment"), [
    (["bench", "--families", "gpt4"], "--families: unknown gpt4"),
    (["bench", "--configs", "huge"], "--configs: unknown huge"),
    (["bench", "--repeats", "0"], "--repeats must be an integer >= 1"),
])
def test_bench_bad_input(capsys, argv, fragment):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err


def test_peak_rss_is_the_process_own_high_water_mark():
    """A fresh process (as the bench's workers are) reports its own peak: it grows by what the
    process allocates (ru_maxrss would report the parent's peak after exec)."""
    import subprocess
    import sys

    code = ("import numpy as np; from attnverify.empirics.bench.training import _peak_rss_mb; "
            "b = _peak_rss_mb(); x = np.ones(400 * 2**20 // 8); print(b, _peak_rss_mb(), x[-1])")
    before, after, _ = map(float, subprocess.run([sys.executable, "-c", code], check=True,
                                                 capture_output=True, text=True).stdout.split())
    assert 300 <= after - before <= 500  # the 400 MiB block, give or take the allocator
