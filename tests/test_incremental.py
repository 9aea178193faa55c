"""The online fast path (``accountant/incremental.py``): folding a history step by step.

Independent references: the one-shot fast path on the same cells, and the Gaussian-DP
closed form (q = 1: Gaussians compose exactly).
"""

from __future__ import annotations

import pytest

from dpacct.accountant.incremental import IncrementalEpsilon
from dpacct.accountant.schedule import FAST_STEP, round_schedule
from dpacct.accountant.schedule_fast import fast_epsilon_bounds

DELTA = 1e-5


@pytest.mark.slow
def test_incremental_epsilon_matches_the_one_shot_fast_path():
    sched = [(1.2 * 0.999**t, 0.01, 1) for t in range(1500)]
    inc = IncrementalEpsilon(DELTA)
    for b in range(0, 1500, 150):
        inc.fold(sched[b : b + 150])
        before = inc.epsilon()
        with_more = inc.epsilon([(0.5, 0.02, 10)])  # hypothetical: not kept
        assert with_more > before and inc.epsilon() == before
    upper = inc.epsilon()
    # the grid grew on the way: the composition was carried over, its error kept
    assert 0 < inc.remove.carried < 1e-3 * DELTA
    one_shot = fast_epsilon_bounds(round_schedule(sched), DELTA, lower=False)[1]
    # the constant q is kept exact (EXACT_VALUES): as the one-shot path that keeps it
    same_cells = fast_epsilon_bounds(round_schedule(sched, exact_values=64), DELTA, lower=False)[1]
    lower = fast_epsilon_bounds(
        round_schedule(sched, upper=False), DELTA, step=FAST_STEP / 4, upper=False
    )[0]
    # sound (above the certified lower bound of the true schedule), at least as tight
    # as rounding every coordinate, and as tight as the one-shot fast path on the
    # same cells up to its longer window
    assert lower <= upper <= one_shot * (1 + 1e-4)
    assert abs(upper - same_cells) <= 1e-4 * same_cells
