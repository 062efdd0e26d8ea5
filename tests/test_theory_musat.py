"""theory.musat checked, not trusted: the closed forms against the information-flow game
(literal, on sets, and on intervals) and the written-down transformer against both
(docs/derivations.md#mușat-2024)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnverify import theory
from attnverify.theory.musat import construction


@pytest.mark.parametrize(("D", "t"), [(1, 1), (2, 2), (3, 2), (4, 2), (5, 3), (13, 3), (14, 4),
                                      (40, 4), (41, 5), (121, 5), (122, 6)])
def test_known_values(D, t):
    """§9.1 item 2."""
    assert theory.musat.min_layers(D).value == t


def test_integer_form_equals_the_logarithm_and_is_monotone():
    """§9.1 items 1, 3: for D < 10^4 the integer loop equals ceil(log_3(2D)) (2D is never a
    power of 3), it is non-decreasing, and max_depth is its inverse."""
    previous = 0
    for D in range(1, 10_000):
        t = theory.musat.min_layers_value(D)
        assert t == math.ceil(math.log(2 * D, 3)) and t >= previous
        previous = t
    for t in range(1, 12):
        edge = theory.musat.max_depth_value(t)
        assert edge == (3**t - 1) // 2
        assert theory.musat.min_layers_value(edge) == t
        assert theory.musat.min_layers_value(edge + 1) == t + 1


@given(n=st.integers(1, 5000).map(lambda k: 2 * k))
def test_input_size_form(n):
    """§9.1 item 4: for even n, ceil(log_3 n)."""
    assert theory.musat.min_layers_from_input_size(n).value == math.ceil(math.log(n, 3) - 1e-12)


@settings(max_examples=40)
@given(D=st.integers(1, 60), distractors=st.integers(0, 2))
def test_game_on_sets_equals_the_closed_forms(D, distractors):
    """§9.1 item 5, on the literal game (distractor chains share nothing and change nothing)."""
    game = theory.musat.simulate(D, distractors=distractors)
    assert game.any_position == theory.musat.min_layers_value(D)
    assert game.answer_position == theory.musat.min_layers_refined_value(D, separate_query=False)
    query = theory.musat.simulate(D, distractors=distractors, separate_query=True)
    assert query.answer_position == theory.musat.min_layers_refined_value(D, separate_query=True)


def test_interval_simulator_up_to_ten_thousand():
    for D in [*range(1, 300), *range(300, 10_001, 97)]:
        assert theory.musat.simulate_intervals(D).any_position == \
            theory.musat.min_layers_value(D)
        assert theory.musat.simulate_intervals(D, separate_query=True).answer_position == \
            theory.musat.min_layers_refined_value(D)


def test_refined_variant_gap_sets():
    """§2.2: the separate-query variant needs one layer more exactly for D in {1}, {3, 4},
    {7..13}, {21..40}, {61..121}; the last-token variant for {3, 4}, {8..13}, {21..40},
    {62..121}."""
    gap = {D for D in range(1, 122) if theory.musat.min_layers_refined_value(D)
           > theory.musat.min_layers_value(D)}
    assert gap == {1, 3, 4, *range(7, 14), *range(21, 41), *range(61, 122)}
    gap_last = {D for D in range(1, 122)
                if theory.musat.min_layers_refined_value(D, separate_query=False)
                > theory.musat.min_layers_value(D)}
    assert gap_last == {3, 4, *range(8, 14), *range(21, 41), *range(62, 122)}


@settings(max_examples=15)
@given(D=st.integers(1, 9), K=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_construction_needs_exactly_the_refined_bound(D, K, seed):
    """The written-down transformer answers every instance with min_layers_refined(D) layers and
    none with one layer fewer (the answer is not yet at the query)."""
    inst = construction.random_instance(D, K, 48, np.random.default_rng(seed))
    need = theory.musat.min_layers_refined_value(D)
    for t, expected in ((need - 1, False), (need, True), (need + 1, True)):
        x, lay, _ = construction.forward(inst.tokens, 48, t)
        assert (construction.answer(x, lay) == inst.answer) is expected


def test_construction_left_ends_follow_the_game():
    """Layer by layer, the query chain's left ends equal the game's interval left ends."""
    inst = construction.random_instance(13, 2, 64, np.random.default_rng(3))
    path = list(inst.paths[inst.query_chain])
    n = len(path)
    lo, hi = np.arange(n), np.arange(n)
    for t in range(1, 5):
        first = np.searchsorted(hi, lo - 1)
        last = np.searchsorted(lo, hi + 1, side="right") - 1
        lo, hi = lo[first], hi[last]
        x, lay, patterns = construction.forward(inst.tokens, 64, t)
        ends = [path.index(construction.left_end(x, lay, p)) for p in path]
        assert ends == lo.tolist()
        assert patterns[-1].shape == (2, len(inst.tokens), len(inst.tokens))


def test_instance_generator_invariants():
    """§9.1 item 6 for the construction's instances: disjoint chains, one root per chain, the
    query resolves to its chain's root in D hops."""
    rng = np.random.default_rng(0)
    inst = construction.random_instance(5, 3, 40, rng)
    tokens = inst.tokens
    pairs = {int(tokens[2 * j]): int(tokens[2 * j + 1]) for j in range((len(tokens) - 1) // 2)}
    symbol, hops = int(tokens[-1]), 0
    while symbol in pairs:
        symbol, hops = pairs[symbol], hops + 1
    assert symbol == inst.answer and hops == 5
    assert len(set(tokens[:-1].tolist())) == 3 * 6  # K (D + 1) distinct symbols
    with pytest.raises(ValueError, match="distinct symbols"):
        construction.random_instance(5, 3, 10, rng)


@pytest.mark.parametrize(("name", "params", "fragment"), [
    ("musat.min_layers", {"D": 0}, "D must be an integer >= 1"),
    ("musat.min_layers", {"D": 2.5}, "D must be an integer >= 1"),
    ("musat.max_depth", {"t": -1}, "t must be an integer >= 0"),
    ("musat.min_layers_refined", {"D": 3, "separate_query": "yes"}, "separate_query must be"),
])
def test_bad_parameters(name, params, fragment):
    with pytest.raises(ValueError, match=fragment):
        theory.predict(name, **params)
