"""Named groups of runs (compare/groups.py): flattened in the mapping's order, read back by
name and by position, and a claim's assess sees the same runs either way."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.compare.claims.snell import KtiwLearnedUnderUniformAttention
from attnverify.compare.groups import GroupedResults, flatten, grouped, layout
from attnverify.empirics import RunResult


def _result(spec) -> RunResult:
    return RunResult(spec=spec, status="ok", eval_steps=np.arange(2),
                     metrics={"ktiw_acc": np.array([0.0, 0.5])}, train_loss=np.zeros(1))


def test_groups_flatten_in_order_and_read_back_by_name():
    claim = KtiwLearnedUnderUniformAttention()
    params = claim.params("smoke")
    specs = claim.specs(params)
    flat = flatten(specs)
    assert list(specs) == ["subset", "permutation"]
    assert flat == [*specs["subset"], *specs["permutation"]] == claim.checked_specs(params)
    results = claim.results_for(params, [_result(s) for s in flat])
    assert [r.spec for r in results["subset"]] == list(specs["subset"])
    assert [r.spec for r in results["permutation"]] == list(specs["permutation"])
    assert results[0].spec == flat[0] and len(results) == len(flat)
    assert results.groups() == ["subset", "permutation"]
    assert grouped(specs, results) is results  # already grouped: kept as it is


def test_a_flat_list_has_no_groups_and_reads_by_position():
    results = GroupedResults(["a", "b"])  # type: ignore[list-item]  # any items
    assert layout(["x"]) is None and results[1] == "b" and results[:1] == ("a",)
    with pytest.raises(KeyError, match=r"no group of runs named 'subset'.*a flat list"):
        results["subset"]


def test_groups_are_checked():
    with pytest.raises(ValueError, match="2 results for groups of 3 runs"):
        GroupedResults(["a", "b"], {"x": 3})  # type: ignore[list-item]
    with pytest.raises(TypeError, match="non-empty string"):
        layout({"": []})


def test_follow_ups_after_the_groups_read_by_position():
    results = GroupedResults(["a", "b", "c"], {"first": 2})  # type: ignore[list-item]
    assert results["first"] == ["a", "b"] and results[2] == "c"
