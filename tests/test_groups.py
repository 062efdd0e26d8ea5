"""Named groups of runs (compare/groups.py): flattened in the mapping's order, read back by
name and by position, and a claim's assess sees the same runs either way."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attnverify.compare.claims.snell import KtiwLearnedUnderUniformAttention
from attnverify.compare.groups import GroupedResults, flatten, grouped, layout, staged_results
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


class Staged(KtiwLearnedUnderUniformAttention):
    """A claim whose one follow-up stage names its group ("again": the subset runs once more
    at other seeds), for the staged reading."""

    def followup(self, params, results):
        if "again" in results.groups() or len(results) > len(self.checked_specs(params)):
            return []
        return {"again": [dataclasses.replace(r.spec, seed=r.spec.seed + 1000)
                          for r in results["subset"]]}


def test_a_follow_up_stage_names_its_groups_and_results_for_finds_them_again():
    claim = Staged()
    params = claim.params("smoke")
    first = claim.checked_specs(params)
    first_results = claim.results_for(params, [_result(s) for s in first])
    more = flatten(claim.followup(params, first_results))
    assert more and len(more) == len(first_results["subset"])
    results = claim.results_for(params, [_result(s) for s in [*first, *more]])
    assert results.groups() == ["subset", "permutation", "again"]
    assert [r.spec for r in results["again"]] == more
    assert [r.spec for r in results["subset"]] == list(claim.specs(params)["subset"])


def test_a_group_name_is_unique_across_stages():
    with pytest.raises(ValueError, match="two stages name a group of runs 'x'"):
        staged_results([{"x": ["s"]}, {"x": ["t"]}], ["a", "b"])  # type: ignore[list-item]
    results = staged_results([["s"], {"y": ["t"]}], ["a", "b"])  # type: ignore[list-item]
    assert results["y"] == ["b"] and results[0] == "a" and "y" in results
