"""The online ledger's block rules (``accountant/pld/block_rules.py``, issue 25).

How steps are cut into blocks (by the steps alone), which step a cell of several steps
is composed at, the refinement of a block's grid and the history's step, and the mass a
trimmed block PMF sends to ``+inf``; checked against the rules' own definitions on
hand-made inputs and exact sums (``math.fsum``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct.accountant.pld import block_rules as rules
from dpacct.accountant.pld.block_rules import (
    _budget,
    _coarse_step,
    _composed,
    _cut,
    _factor,
    _history_step,
    _trim,
)
from dpacct.accountant.pld.schedule_fast import FAST_STEP


def test_cut_commits_at_block_steps_and_at_block_cells():
    # one cell of 2.5 blocks' steps: two full blocks, the rest pending
    n = rules.BLOCK_STEPS
    cell = ((1.0, 0.01), (1.0, 0.01))
    blocks, pending, left = _cut({}, 0, [(cell[0], cell[1], 2 * n + n // 2)])
    assert [sum(m.values()) for b in blocks for m in b.values()] == [n, n]
    assert left == n // 2 and sum(pending[cell[0]].values()) == n // 2
    # BLOCK_CELLS distinct rounded cells (a cell other than its step's own value) of
    # one step each fill a block; the next one starts a new one
    cells = [((1.0 + i, 0.01), (1.0 + i + 1e-4, 0.01), 1) for i in range(rules.BLOCK_CELLS + 1)]
    blocks, pending, left = _cut({}, 0, cells)
    assert len(blocks) == 1 and len(blocks[0]) == rules.BLOCK_CELLS and left == 1
    # exact cells (each its own step's value) fill EXACT_BLOCK_CELLS; a rounded one
    # arriving after BLOCK_CELLS of them commits the block at once
    m = rules.EXACT_BLOCK_CELLS
    assert rules.BLOCK_CELLS < m <= rules.BLOCK_STEPS
    exact = [((1.0 + i, 0.01), (1.0 + i, 0.01), 1) for i in range(m + 1)]
    blocks, pending, left = _cut({}, 0, exact)
    assert [len(b) for b in blocks] == [m] and left == 1
    blocks, pending, left = _cut({}, 0, [*exact[:40], ((99.0, 0.01), (99.001, 0.01), 1)])
    assert [len(b) for b in blocks] == [40] and left == 1


def test_factor_refines_narrow_and_few_cell_blocks_within_the_budget():
    many = {(1.0 + i / 100, 0.01): 10 for i in range(32)}
    assert _factor(many, FAST_STEP) == rules.FINE_MIN  # the cost budget binds
    narrow = _factor({(4.0, 0.01): 256}, FAST_STEP)
    wide = _factor({(0.8, 0.05): 256}, FAST_STEP)
    assert wide < narrow <= rules.FINE_MAX
    # the rule: the fine grid adds at most FINE_VARIANCE_SHARE of the block's variance
    var = 256 * 0.01**2 * math.expm1(1 / 16)
    assert 256 * (FAST_STEP / narrow) ** 2 / 4 <= rules.FINE_VARIANCE_SHARE * var


def test_trim_moves_at_most_the_cut_and_bounds_it_from_above():
    pmf = np.exp(-0.5 * ((np.arange(2001) - 1000) / 100.0) ** 2)
    pmf /= pmf.sum() * (1 + 1e-12)
    first, kept, moved = _trim(-1000, pmf, 1e-12)
    lo = first + 1000
    removed = math.fsum(pmf[:lo]) + math.fsum(pmf[lo + kept.size :])
    assert 0 < lo and kept.size < pmf.size
    assert np.array_equal(kept, pmf[lo : lo + kept.size])
    assert removed <= moved <= 1e-12 * (1 + 1e-9)
    # nothing to trim: unchanged
    assert _trim(3, np.array([0.5, 0.5]), 1e-12) == (3, pytest.approx(np.array([0.5, 0.5])), 0.0)


def test_composed_takes_a_dominating_step_of_a_cell_of_several():
    block = {
        (1.0, 0.01): {(1.0, 0.01): 7},  # one member: itself
        (1.2, 0.02): {(1.21, 0.019): 3, (1.205, 0.02): 2},  # two: smaller sigma, larger q
    }
    assert _composed(block) == {(1.0, 0.01): 7, (1.205, 0.02): 5}


def test_coarse_step_is_the_coarsest_whose_widening_is_a_small_share():
    for sigma, q in [(2.0, 0.1), (3.8, 0.01), (8.0, 0.001)]:
        step = _coarse_step({(sigma, q): 256})
        var = 256 * q**2 * math.expm1(1 / sigma**2)
        coarsest = FAST_STEP / 2**rules.COARSE_LEVELS
        assert step == coarsest or step**2 / 4 <= rules.COARSE_VARIANCE_SHARE * var
        if step < FAST_STEP:  # twice as coarse would have been too wide
            assert (2 * step) ** 2 / 4 > rules.COARSE_VARIANCE_SHARE * var
    # a block cut early by its cells measures the loss scale per step
    assert _coarse_step({(3.8, 0.01): 10}) == _coarse_step({(3.8, 0.01): 256})


def _widening(items, step, budget):
    """A full block's widening at the history step ``step``: its coarsening ``step^2 /
    4`` and its steps' fine grid ``n (step / K)^2 / 4`` (``n`` = BLOCK_STEPS)."""
    k = _factor(items, step, budget)
    return step**2 / 4 + rules.BLOCK_STEPS * (step / k) ** 2 / 4


def test_history_step_keeps_one_cell_blocks_and_refines_many_cell_ones():
    """Issue 37, session 31: one cell (a constant-sigma run) keeps the coarse rule to
    the bit; a block of several cells gets the coarsest step at which a full block like
    it widens the loss by at most the larger of ``n`` discretisations at PEER_INTERVAL
    and HISTORY_VARIANCE_SHARE of its variance (or the finest step), and twice that step
    would not.  Guard: with the old rule (``_coarse_step`` alone) the 25 phases x 10
    below stay at 1e-3, where their widening is 2x the target."""
    for sigma, q in [(1.1, 0.01), (2.0, 0.1), (3.8, 0.004), (8.0, 0.001)]:
        for budget in (rules.FINE_BUDGET, rules.EXACT_BUDGET):
            assert _history_step({(sigma, q): 256}, budget) == _coarse_step({(sigma, q): 256})
    # per-step values (a decaying sigma) keep the coarse rule too
    decay = {(1.5 * 0.9999**t, 0.01): 1 for t in range(256)}
    assert _history_step(decay, 2048) == _coarse_step(decay) == FAST_STEP
    finest = FAST_STEP / 2**rules.COARSE_LEVELS
    rng = np.random.default_rng(31)
    sig, qs = rng.uniform(0.8, 2, 25), rng.uniform(1e-3, 0.02, 25)
    sig2, qs2 = rng.uniform(1, 2, 200), np.exp(rng.uniform(-7, -4.6, 200))
    shapes = [
        {(1.0 + k / 50, 0.01): 10 for k in range(25)},
        {(float(s), float(q)): 10 for s, q in zip(sig, qs, strict=True)},
        {(float(s), float(q)): 2 for s, q in zip(sig2, qs2, strict=True)},
        {(0.6, 0.2): 100, (0.7, 0.3): 100},  # wide steps: the variance share decides
    ]
    for items in shapes:
        for budget in (rules.FINE_BUDGET, _budget({c: {c: n} for c, n in items.items()})):
            step = _history_step(items, budget)
            var, n = rules._variance(items)
            assert n >= rules.HISTORY_MIN_COUNT * len(items)
            var *= rules.BLOCK_STEPS / n
            target = max(
                rules.BLOCK_STEPS * rules.PEER_INTERVAL**2 / 4, rules.HISTORY_VARIANCE_SHARE * var
            )
            assert step <= _coarse_step(items)
            assert step == finest or _widening(items, step, budget) <= target
            if step < _coarse_step(items):
                assert _widening(items, 2 * step, budget) > target
    phases = shapes[0]
    assert _coarse_step(phases) == FAST_STEP and _history_step(phases, 256) == FAST_STEP / 2
    # below HISTORY_MIN_DELTA the blocks' round-off outweighs the widening: the coarse
    # rule (tests/test_review21_phases.py's 20 phases at 1e-9 were 1.7e-4 looser without)
    assert _history_step(phases, 256, 1e-5) == _history_step(phases, 256, rules.HISTORY_MIN_DELTA)
    assert _history_step(phases, 256, rules.HISTORY_MIN_DELTA * 0.99) == FAST_STEP
    assert _widening(phases, FAST_STEP, 256) > 1.9 * rules.BLOCK_STEPS * 1e-8 / 4
    assert _history_step(shapes[3], rules.FINE_BUDGET) == _coarse_step(shapes[3])


def test_budget_is_larger_only_for_blocks_that_merged_nothing():
    exact = {(1.0 + i / 100, 0.01): {(1.0 + i / 100, 0.01): 10} for i in range(26)}
    merged = dict(exact)
    merged[(2.0, 0.01)] = {(2.001, 0.01): 4, (2.0015, 0.01): 4}
    assert _budget(exact) == max(rules.EXACT_BUDGET, 26 * rules.EXACT_FACTOR) > rules.FINE_BUDGET
    assert _budget(merged) == rules.FINE_BUDGET
    # the larger budget buys a finer grid for the same cells
    items = _composed(exact)
    assert _factor(items, FAST_STEP, _budget(exact)) > _factor(items, FAST_STEP)
