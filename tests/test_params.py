"""Typed claim parameters (compare/params.py): profiles as frozen dataclasses, read as the
same mapping a dict profile gives, and ``--param`` values coerced and checked by field type
before anything runs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

import pytest

from attnverify.compare.claims.snell.common import COPYING, COPYING_PARAMS
from attnverify.compare.evaluation.verify import checked_point
from attnverify.compare.params import Params, as_mapping, coerce_field, is_typed
from attnverify.compare.registry import select


class Cell(NamedTuple):
    layers: int
    rate: float


@dataclass(frozen=True)
class Example(Params):
    seeds: int
    rate: float
    train: bool
    name: str
    depths: tuple[int, ...]
    budget: int | None = None
    cell: Cell = Cell(2, 0.5)  # noqa: RUF009  # a NamedTuple is immutable
    widths: dict[str, int] | None = None


def test_typed_profiles_read_as_the_mapping_a_dict_profile_gives():
    for profile, params in COPYING_PARAMS.items():
        assert is_typed(params) and as_mapping(params) == COPYING[profile]
    assert not is_typed({"seeds": 1}) and not is_typed(Example)
    claim = select(claim_id="snell.permutation_is_hard")[0]
    assert claim.params("full") == COPYING["full"]


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("seeds", 3, 3), ("rate", 2, 2.0), ("rate", 0.5, 0.5), ("train", False, False),
    ("name", "x", "x"), ("depths", [1, 2], (1, 2)), ("budget", None, None), ("budget", 7, 7),
    ("cell", [3, 1], Cell(3, 1.0)), ("widths", {"a": 2}, {"a": 2}),
])
def test_values_are_coerced_by_field_type(name, value, expected):
    got = coerce_field(Example, name, value, "a.claim")
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(("name", "value", "allowed"), [
    ("seeds", 1.5, "an integer"), ("seeds", True, "an integer"), ("rate", "fast", "a number"),
    ("train", 1, "true or false"), ("name", 3, "a string"),
    ("depths", [1, "x"], "a list of an integer"), ("depths", 3, "a list of an integer"),
    ("budget", 0.5, "an integer or null"),
    ("cell", [3], r"a list of 2 values \(layers: an integer, rate: a number\)"),
    ("cell", [3, "x"], r"a list of 2 values \(layers: an integer, rate: a number\)"),
    ("widths", {"a": 0.5}, "a mapping of names to an integer or null"),
])
def test_a_wrong_type_is_one_line_naming_the_field(name, value, allowed):
    with pytest.raises(ValueError, match=f"^the '{name}' parameter of a.claim must be "
                                         f"{allowed}; got "):
        coerce_field(Example, name, value, "a.claim")


def test_an_unknown_field_names_the_accepted_ones():
    with pytest.raises(ValueError, match=re.escape("unknown parameter 'nope' of a.claim; "
                                                   "accepted: seeds, rate, train, name, "
                                                   "depths, budget, cell, widths")):
        coerce_field(Example, "nope", 1, "a.claim")


def test_verify_param_on_a_typed_claim_is_checked_by_field_type():
    claim = select(claim_id="snell.permutation_is_hard")[0]
    assert checked_point(claim, "smoke", {"seeds": 2}) == {"seeds": 2}
    with pytest.raises(ValueError, match=re.escape("the 'seeds' parameter of "
                                                   "snell.permutation_is_hard must be an "
                                                   "integer; got 1.5")):
        checked_point(claim, "smoke", {"seeds": 1.5})
    with pytest.raises(ValueError, match="seeds must be an integer >= 1; got 0"):
        checked_point(claim, "smoke", {"seeds": 0})  # then the claim's own checks


@dataclass(frozen=True)
class Checked(Params):
    """A claim's parameters whose ``__post_init__`` refuses a value (as verify sees it)."""

    seeds: int
    std: float

    def __post_init__(self) -> None:
        if self.std <= 0:
            raise ValueError(f"std must be > 0; got {self.std}")


def test_a_point_is_built_as_an_instance_so_the_class_checks_it_before_anything_runs():
    claim = select(claim_id="snell.permutation_is_hard")[0]

    class Typed(type(claim)):  # the same claim with parameters that check themselves
        defaults = {"smoke": Checked(seeds=3, std=1.0)}  # noqa: RUF012

        def specs(self, params):
            return []

    assert checked_point(Typed(), "smoke", {"std": 2}) == {"std": 2.0}
    with pytest.raises(ValueError, match=r"^std must be > 0; got -1.0$"):
        checked_point(Typed(), "smoke", {"std": -1})
