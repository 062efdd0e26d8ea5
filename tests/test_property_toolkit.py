"""The property-testing toolkit (``attnverify.compare.testing``): the strategies of claim
spaces and theory arguments, ``assert_close``, ``assert_claim_holds``, and the pytest plugin,
run on the code of docs/property-testing.md in a pytest process of its own (float ranges of a
space and falsify's steering: tests/test_float_spaces.py)."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import find as hypothesis_find
from hypothesis import given, settings

from attnverify import theory
from attnverify.compare import select
from attnverify.compare.claim import Verdict
from attnverify.compare.stats import Comparison
from attnverify.compare.testing import (
    ARGUMENTS,
    assert_claim_holds,
    assert_close,
    strategy_for,
    theory_arguments,
)
from attnverify.theory.registry import QUANTITIES, SIZE_BOUNDS, parameters

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "property-testing.md"
PLUGIN = "attnverify.compare.testing.plugin"


def find_minimal(strategy: Any, condition: Any) -> Any:
    """``hypothesis.find`` without the example database (whose entries are keyed by the
    condition's code: one condition shared by several tests would replay another's example)."""
    return hypothesis_find(strategy, condition, settings=settings(database=None))


# --- strategies -----------------------------------------------------------------------------

SEARCHABLE = [c for c in select() if c.space]


@pytest.mark.parametrize("claim", SEARCHABLE, ids=lambda c: c.id)
def test_strategy_for_draws_points_of_the_claims_space(claim):
    @settings(max_examples=20)
    @given(point=strategy_for(claim.id))
    def check(point):
        assert point.keys() == claim.space.keys()
        assert all(claim.space[k].contains(v) for k, v in point.items())

    check()
    front = {k: d.bounds()[0] for k, d in claim.space.items()}
    assert find_minimal(strategy_for(claim), lambda p: True) == front


def test_strategy_for_a_claim_without_a_space_says_so(monkeypatch):
    (claim,) = select(claim_id="snell.kappa_closed_form")
    monkeypatch.setattr(claim, "space", {})
    with pytest.raises(ValueError, match="declares no parameter space"):
        strategy_for(claim.id)
    with pytest.raises(ValueError, match="unknown claim"):
        strategy_for("snell.no_such_claim")


def test_every_parameter_of_every_theory_quantity_has_a_domain():
    assert {p for name in QUANTITIES for p in parameters(name)} <= ARGUMENTS.keys()
    for name in ("V", "L", "d", "T", "D", "n", "t"):  # the sizes stop at the registry's bounds
        assert ARGUMENTS[name].high == SIZE_BOUNDS[name][0]


@pytest.mark.parametrize("name", sorted(QUANTITIES))
def test_theory_arguments_are_accepted_by_the_quantity(name):
    """Every draw is a valid call of ``theory.predict`` (the domain is not wider than the
    function's), with sizes at most ``max_size``."""

    @settings(max_examples=15, deadline=None)
    @given(args=theory_arguments(name, max_size=64))
    def check(args):
        assert args.keys() == parameters(name).keys()
        assert all(v <= 64 for k, v in args.items() if k in SIZE_BOUNDS)
        prediction = theory.predict(name, **args)
        assert prediction.value is not None

    check()


@given(args=theory_arguments("snell.kappa"))
def test_copying_arguments_are_drawn_jointly(args):
    V, L, dist = args["V"], args["L"], args["distribution"]
    assert {"subset": L <= V, "permutation": L == V, "iid": True}[dist]
    kappa = theory.snell.kappa(**args).value
    assert_close(kappa, 1 / V if dist == "iid" else (V - L) / (V * (V - 1)), rtol=1e-12)


@given(args=theory_arguments("snell.kappa", distribution="subset", L=30, max_size=40))
def test_fixed_arguments_are_kept_and_the_others_follow_them(args):
    assert args["distribution"] == "subset" and args["L"] == 30 and 30 <= args["V"] <= 40


@given(args=theory_arguments("bao.score_moments", d=64, c=None))
def test_fixed_arguments_of_a_quantity_without_constraints(args):
    assert args["d"] == 64 and args["c"] is None and 2 <= args["T"] <= 1000
    assert -1 <= args["eig_mean"] <= 1 and 0 <= args["eig_std"] <= 2


def test_theory_arguments_refuse_unknown_names():
    with pytest.raises(ValueError, match=r"unknown theory quantity 'snell\.nope'; accepted: "):
        theory_arguments("snell.nope")
    with pytest.raises(ValueError, match=r"unknown parameter.*accepted: d, T, eig_mean"):
        theory_arguments("bao.rho", width=3)
    with pytest.raises(ValueError, match="max_size must be"):
        theory_arguments("bao.rho", max_size=0)


def test_without_max_size_the_sizes_reach_the_registrys_bounds():
    big = find_minimal(theory_arguments("musat.min_layers_from_input_size", max_size=None),
               lambda a: a["n"] > 10**9)
    assert 10**9 < big["n"] <= SIZE_BOUNDS["n"][0]


# --- assert_close ---------------------------------------------------------------------------

def test_assert_close_passes_within_atol_plus_rtol_and_returns_the_comparison():
    result = assert_close([1.0, 2.0], [1.09, 2.0], rtol=0.05, atol=0.05)  # 0.09 <= 0.1
    assert isinstance(result, Comparison) and result.passed
    assert result.max_abs_error == pytest.approx(0.09)
    with pytest.raises(AssertionError):  # 0.11 > 0.05 + 0.05 * 1
        assert_close([1.0, 2.0], [1.11, 2.0], rtol=0.05, atol=0.05)
    assert assert_close(np.zeros((2, 3)), np.zeros((2, 3))).passed  # exact agreement


def test_assert_close_names_the_worst_element_and_the_tolerance():
    with pytest.raises(AssertionError) as info:
        assert_close([1.0, 2.0, 3.0], [1.0, 2.5, 3.01], rtol=0.01, what="loss")
    text = str(info.value)
    assert text.startswith("loss differs from theory: theory 2, loss 2.5;")
    assert "at index (1,)" in text and "rtol=0.01" in text


def test_assert_close_takes_a_prediction_and_compares_a_scalar_with_every_element():
    kappa = theory.snell.kappa(V=60, L=40)
    assert_close(kappa, np.full(5, kappa.value), atol=1e-15)
    with pytest.raises(AssertionError, match=r"\(kappa = \(V - L\) / \(V \(V - 1\)\)\)"):
        assert_close(kappa, [kappa.value, 2 * kappa.value], rtol=0.1)
    with pytest.raises(TypeError, match="compare one entry at a time"):
        assert_close(theory.bao.score_moments(d=4, T=3, eig_mean=0.1, eig_std=0.1), [0.0])
    with pytest.raises(ValueError, match="shape"):
        assert_close([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(AssertionError):  # a NaN estimate never passes
        assert_close(1.0, [1.0, math.nan], atol=1.0)


# --- assert_claim_holds ---------------------------------------------------------------------

def test_assert_claim_holds_at_a_point_and_fails_with_the_explanation(store):
    """The toy classifier's closed form holds at a step of 0.01 and not at 0.2 (the boundary
    ``falsify`` finds, tests/test_falsify.py)."""
    outcome = assert_claim_holds("snell.toy_classifier_closed_form", cache=store.root, lr=0.01)
    assert outcome.assessment.verdict == Verdict.CONFIRMED and outcome.params["lr"] == 0.01
    with pytest.raises(AssertionError) as info:
        assert_claim_holds("snell.toy_classifier_closed_form", cache=store, lr=0.2)
    text = str(info.value)
    assert text.startswith("snell.toy_classifier_closed_form is refuted (decided) at lr = 0.2 "
                           "(smoke profile): ")
    assert "DISAGREES" in text  # the claim's own explanation
    assert text.endswith("reproduce: attnverify verify --claim snell.toy_classifier_closed_form"
                         " --profile smoke --param lr=0.2")


def test_assert_claim_holds_refuses_points_outside_the_space(store, monkeypatch):
    claim = "snell.toy_classifier_closed_form"
    with pytest.raises(ValueError, match=r"lr = 0.3 is outside .*'values': \[0.001"):
        assert_claim_holds(claim, cache=store, lr=0.3)
    with pytest.raises(ValueError, match=r"steps: not a dimension of .*; accepted: lr"):
        assert_claim_holds(claim, cache=store, steps=3)
    with pytest.raises(ValueError, match="unknown claim"):
        assert_claim_holds("snell.no_such_claim", cache=store)
    with pytest.raises(ValueError, match="unknown profile"):
        assert_claim_holds(claim, profile="huge", cache=store)
    (spaceless,) = select(claim_id="snell.kappa_closed_form")
    monkeypatch.setattr(spaceless, "space", {})
    with pytest.raises(ValueError, match="declares no parameter space"):
        assert_claim_holds(spaceless.id, cache=store, x=1)


def test_assert_claim_holds_completes_a_point_with_the_front_of_each_dimension(store):
    """snell.kappa_closed_form's space is (L, extra); L alone takes extra = 1 (its low end)."""
    outcome = assert_claim_holds("snell.kappa_closed_form", cache=store, L=3)
    assert outcome.params["points"] == (("subset", 4, 3), ("permutation", 3, 3), ("iid", 4, 3))


# --- the pytest plugin ----------------------------------------------------------------------

def test_the_plugin_is_declared_as_a_pytest11_entry_point_and_imports_light():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"attnverify": PLUGIN}
    assert "attnverify.compare.testing" in project["tool"]["setuptools"]["packages"]
    # pytest loads the plugin in every session: it must not import torch or the claims
    code = (f"import sys, {PLUGIN}; "
            "print(sorted(m for m in ('torch', 'attnverify.compare.claims') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


WIRING = '''
import pytest
from hypothesis import given, settings, strategies as st

from attnverify.empirics import LocalExecutor, RunStore

CALLS = {"trains": 0, "own": 0}


@pytest.mark.trains
@given(x=st.integers())
def test_trains_runs_five_examples(x):
    CALLS["trains"] += 1


@pytest.mark.trains
@settings(max_examples=2)
@given(x=st.integers())
def test_own_settings_win(x):
    CALLS["own"] += 1


def test_counts_and_fixtures(request, attnverify_store, attnverify_executor, tmp_path_factory):
    assert CALLS == {"trains": 5, "own": 2}
    assert any(line.startswith("trains:") for line in request.config.getini("markers"))
    assert isinstance(attnverify_store, RunStore) and isinstance(attnverify_executor,
                                                                  LocalExecutor)
    assert attnverify_executor.store is attnverify_store and attnverify_executor.workers == 1
    assert tmp_path_factory.getbasetemp() in attnverify_store.root.parents
'''


def doc_code() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1, "the page has one test file"
    return blocks[0]


def _entry_point_installed(cwd: Path, env: dict[str, str]) -> bool:
    """Whether pytest started in ``cwd`` loads the plugin through its entry point (pytest
    reads the entry points of every distribution it sees, as here)."""
    code = ("from importlib.metadata import distributions; "
            f"print(any(e.group == 'pytest11' and e.value == {PLUGIN!r} "
            "for d in distributions() for e in d.entry_points))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                          text=True)
    return proc.stdout.strip() == "True"


def test_the_documented_test_file_runs_under_the_plugin(tmp_path):
    """docs/property-testing.md's file passes under ``python -m pytest`` in a directory of its
    own (no conftest of this repository), with the plugin found through its entry point."""
    (tmp_path / "test_my_theory.py").write_text(doc_code())
    (tmp_path / "test_wiring.py").write_text(WIRING)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_theory.py",
            "test_wiring.py"]
    env = {**os.environ, "ATTNVERIFY_CACHE": str(tmp_path / "cache")}
    env.pop("PYTEST_ADDOPTS", None)
    if not _entry_point_installed(tmp_path, env):  # metadata of an install without it
        argv[3:3] = ["-p", PLUGIN]
    proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b7 passed\b", proc.stdout), proc.stdout
    # the runs went to the session's temporary store, not to the default cache
    assert not (tmp_path / "cache").exists()


def test_a_failing_property_fails_with_the_toolkits_message(tmp_path):
    (tmp_path / "test_wrong.py").write_text(
        "from hypothesis import given\n"
        "from attnverify import theory\n"
        "from attnverify.compare.testing import assert_close, theory_arguments\n\n"
        "@given(args=theory_arguments('snell.kappa', distribution='iid'))\n"
        "def test_wrong_kappa(args):\n"
        "    assert_close(theory.snell.kappa(**args), 1 / (args['V'] - 1), rtol=1e-9)\n")
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_wrong.py"]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "ATTNVERIFY_CACHE": str(tmp_path / "cache")})
    assert proc.returncode == 1
    assert "estimate differs from theory (kappa = 1 / V): theory 0.5, estimate 1;" in proc.stdout
    assert "'V': 2" in proc.stdout  # hypothesis shrinks to the smallest vocabulary
