"""``musat.heads_compose_subchains`` decides correctly on constructed lens readings, and its
derived reaches follow the interval game and the one-link chain they stand for."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.compare import Verdict
from attnverify.compare.claims.musat import HeadsComposeSubchains
from attnverify.compare.claims.musat.heads_compose_subchains import (
    separating_cells,
    tripling_cells,
)
from attnverify.compare.claims.musat.lens_common import binomial_sides
from attnverify.compare.claims.musat.reach import composed_reach, doubling_reach, one_link_reach
from attnverify.compare.protocol import Reason
from attnverify.empirics import RunResult


def lens_run(spec, query_acc, cells_read):
    """A finished run (D = 5, 4 layers) whose lens reads 0.02 everywhere except
    ``cells_read``: {(slot, depth, layer): accuracy}."""
    final = {f"lens_{slot}": np.full((5, 6), 0.02) for slot in ("first", "second", "depth")}
    final["lens_query"] = np.full(5, 0.02)
    for (slot, k, layer), acc in cells_read.items():
        final[f"lens_{slot}"][layer, k] = acc
    return RunResult(spec=spec, status="ok", eval_steps=np.array([0, 100]),
                     metrics={"query_acc": np.array([0.0, query_acc])},
                     train_loss=np.zeros(1), final=final)


PACE = {("first", 1, 1): 1.0, ("first", 2, 2): 1.0, ("first", 3, 3): 1.0}
"""The lens reads, after each layer l, the first tokens of depth l: one link per layer."""
COMPOSES = {**PACE, ("second", 2, 2): 0.95}
ONE_LINK = PACE
DOUBLES = {**PACE, ("first", 4, 3): 1.0, ("second", 3, 3): 1.0}
"""Pointer doubling: beyond one link per layer after layer 3, but no cell doubling misses."""


def assess(reads, accs=None):
    claim = HeadsComposeSubchains()
    params = claim.params("full")                     # the control cell: D = 5, 4 layers
    specs = claim.checked_specs(params)
    accs = accs or [1.0] * len(specs)
    runs = [lens_run(s, a, r) for s, a, r in zip(specs, accs, reads, strict=True)]
    return claim.assess(params, runs)


@pytest.mark.parametrize(("reads", "accs", "verdict", "reason"), [
    ([COMPOSES] * 5, None, Verdict.CONFIRMED, Reason.DECIDED),
    ([COMPOSES] * 4 + [ONE_LINK], None, Verdict.REFUTED, Reason.DECIDED),
    # a lens that does not even read the one-link cells cannot refute
    ([COMPOSES] * 4 + [{}], None, Verdict.INCONCLUSIVE, Reason.BUDGET_REACHED),
    # a weak reading within doubling's reach: no cell beyond doubling, so it refutes
    ([{**PACE, ("first", 4, 3): 0.26}] * 5, None, Verdict.REFUTED, Reason.DECIDED),
    # a seed that did not learn the query is not read
    ([COMPOSES] * 4 + [ONE_LINK], [1.0] * 4 + [0.3], Verdict.CONFIRMED, Reason.DECIDED),
    ([COMPOSES] * 5, [1.0] + [0.3] * 4, Verdict.INCONCLUSIVE, Reason.NOT_TESTABLE),
])
def test_composition_rule(reads, accs, verdict, reason):
    a = assess(reads, accs)
    assert (a.verdict, a.reason) == (verdict, reason), a.explanation


def test_doubling_alone_refutes():
    """Doubling composes sub-chains but does not triple: a seed that only doubles refutes the
    claim, and the explanation says it doubles (not one link per layer)."""
    a = assess([COMPOSES] * 4 + [DOUBLES])
    assert (a.verdict, a.reason) == (Verdict.REFUTED, Reason.DECIDED), a.explanation
    assert "it doubles" in a.explanation and "read above the limit (secondary)" in a.explanation
    assert [s["doubles"] for s in a.details["seeds"]] == [False] * 4 + [True]
    assert "advances one link per layer" in assess([COMPOSES] * 4 + [ONE_LINK]).explanation


def test_the_bonferroni_factor_counts_every_cell_beyond_doubling():
    """A cell read just above 1/K: enough alone, not once three cells share the alpha."""
    n, acc = 512, 0.29
    p_one = binomial_sides(acc, n, 0.25)[1]
    assert p_one < 0.025 < 3 * p_one           # the case this test is about
    a = assess([{**PACE, ("first", 5, 3): acc}] * 5)
    assert a.verdict is Verdict.INCONCLUSIVE, a.explanation
    a = assess([{**PACE, ("first", 5, 3): 0.32}] * 5)
    assert a.verdict is Verdict.CONFIRMED, a.explanation


def test_the_doubling_flag_counts_every_doubling_cell_read_or_not():
    """The secondary flag's Bonferroni factor is the number of doubling cells, also when the
    lens has no reading in some of them: an unread cell must not lend its alpha."""
    claim = HeadsComposeSubchains()
    params = claim.params("full")
    n, acc = 512, 0.29
    p_one = binomial_sides(acc, n, 0.25)[1]
    assert p_one < 0.025 < 2 * p_one           # the case this test is about
    runs = [lens_run(s, 1.0, {**COMPOSES, ("first", 4, 3): acc})
            for s in claim.checked_specs(params)]
    for r in runs:
        r.final["lens_second"][3, 3] = np.nan       # the other doubling cell unread
    a = claim.assess(params, runs)
    assert [s["doubles"] for s in a.details["seeds"]] == [False] * 5, a.explanation
    for r in runs:
        r.final["lens_first"][3, 4] = 0.32
    a = claim.assess(params, runs)
    assert [s["doubles"] for s in a.details["seeds"]] == [True] * 5, a.explanation


def test_a_refutation_reports_its_own_p_value():
    a = assess([COMPOSES] * 4 + [ONE_LINK])
    assert a.verdict is Verdict.REFUTED and a.p_value < 0.025
    assert a.p_value == pytest.approx(min(s["p_no_faster"] for s in a.details["seeds"]) * 5)
    assert a.p_value != max(s["p_compose"] for s in a.details["seeds"])


def test_a_seed_with_unread_cells_beyond_doubling_does_not_refute():
    claim = HeadsComposeSubchains()
    params = claim.params("full")
    runs = [lens_run(s, 1.0, r) for s, r in zip(claim.checked_specs(params),
                                                 [COMPOSES] * 4 + [ONE_LINK], strict=True)]
    runs[-1].final["lens_first"][3, 5] = np.nan          # two of its three cells unread
    runs[-1].final["lens_second"][3, 4] = np.nan
    a = claim.assess(params, runs)
    assert a.verdict is Verdict.INCONCLUSIVE, a.explanation
    assert a.details["seeds"][-1]["p_no_faster"] == 1.0


def test_an_undecided_verdict_names_the_seeds_whose_lens_misses_the_one_link_cells():
    late = {("first", 2, 2): 1.0, ("first", 3, 3): 1.0}   # nothing read after layer 1
    a = assess([late] * 5)
    assert a.verdict is Verdict.INCONCLUSIVE, a.explanation
    assert "does not after layer(s) 1 in seed 200; 1 in seed 201" in a.explanation


def test_the_reach_per_layer_is_reported():
    a = assess([DOUBLES] * 5)
    assert "first / second tokens, after layers 1..3" in a.explanation
    assert a.details["seeds"][0]["reach"] == {"first": [1, 2, 4], "second": [-1, -1, 3]}


def test_a_lens_without_readings_in_the_cells_is_not_testable():
    claim = HeadsComposeSubchains()
    params = claim.params("full")
    runs = [lens_run(s, 1.0, COMPOSES) for s in claim.checked_specs(params)]
    for r in runs:
        r.final["lens_first"][:] = np.nan
        r.final["lens_second"][:] = np.nan
    a = claim.assess(params, runs)
    assert a.reason is Reason.NOT_TESTABLE and "without lens readings" in a.explanation


def test_a_cell_one_link_per_layer_reaches_does_not_count():
    # a first token of depth 3 after layer 3: one link per layer reads it too
    assert assess([{**PACE, ("first", 3, 3): 1.0}] * 5).verdict is Verdict.REFUTED


def test_quick_has_no_cell_that_needs_composition():
    claim = HeadsComposeSubchains()
    params = claim.params("quick")
    assert claim.checked_specs(params) == []
    a = claim.assess(params, [])
    assert a.reason is Reason.NOT_TESTABLE and "full trains D = 5" in a.explanation


def game_rounds(n_nodes: int, node: int) -> int:
    """Rounds of the interval game (a position reads every position whose interval overlaps
    or abuts its own and takes the union) until ``node``'s interval reaches node 0."""
    intervals = [(p, p) for p in range(n_nodes)]
    rounds = 0
    while intervals[node][0] > 0:
        intervals = [(min(b[0] for b in intervals if b[0] <= a[1] + 1 and b[1] >= a[0] - 1),
                      max(b[1] for b in intervals if b[0] <= a[1] + 1 and b[1] >= a[0] - 1))
                     for a in intervals]
        rounds += 1
    return rounds


@pytest.mark.parametrize("k", range(1, 9))
def test_composed_reach_is_the_interval_game(k):
    # first token of depth k at node 2k - 1, second token of depth k at node 2k; a long path
    for node, second in ((2 * k - 1, False), (2 * k, True)):
        rounds = game_rounds(60, node)
        assert composed_reach(rounds, second) >= k > composed_reach(rounds - 1, second)


def doubling_rounds(node: int) -> int:
    """Rounds of pointer doubling (each position takes the interval of the position just past
    the far end of its own) until ``node``'s interval reaches node 0."""
    low = list(range(node + 1))                # low[p]: the nearest node p knows back to
    rounds = 0
    while low[node] > 0:
        low = [low[low[p] - 1] if low[p] > 0 else 0 for p in range(node + 1)]
        rounds += 1
    return rounds


@pytest.mark.parametrize("k", range(1, 9))
def test_doubling_reach_is_pointer_doubling(k):
    for node, second in ((2 * k - 1, False), (2 * k, True)):
        rounds = doubling_rounds(node)
        assert doubling_reach(rounds, second) >= k > doubling_reach(rounds - 1, second)


def test_the_reaches_are_ordered():
    for layer in range(1, 7):
        for second in (False, True):
            assert (one_link_reach(layer, second) <= doubling_reach(layer, second)
                    <= composed_reach(layer, second))


def test_one_link_reach_and_the_cells_where_the_two_differ():
    assert [one_link_reach(layer, False) for layer in (1, 2, 3)] == [1, 2, 3]
    assert [one_link_reach(layer, True) for layer in (1, 2, 3)] == [0, 1, 2]
    assert separating_cells(3, 4) == [("second", 2, 2)]
    assert separating_cells(2, 4) == []
    cells = separating_cells(5, 4)
    assert ("first", 4, 3) in cells and ("first", 3, 3) not in cells
    # the primary cells: the game reaches them, doubling does not (nodes 4; 9 and 8)
    assert tripling_cells(5, 4) == [("second", 2, 2), ("first", 5, 3), ("second", 4, 3)]
    assert tripling_cells(4, 3) == [("second", 2, 2)]
    assert set(tripling_cells(5, 4)) < set(cells)
