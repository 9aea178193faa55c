"""The online fast path (``accountant/pld/incremental.py``): folding a history step by step.

Independent references: the one-shot fast path on the same cells, and the Gaussian-DP
closed form (q = 1: Gaussians compose exactly).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import gaussian_epsilon

from dpacct.accountant.pld.incremental import IncrementalEpsilon
from dpacct.accountant.pld.schedule import FAST_STEP, round_schedule
from dpacct.accountant.pld.schedule_fast import fast_epsilon_bounds

DELTA = 1e-5


def _random_phases(n: int, steps: int, seed: int) -> list[tuple[float, float, int]]:
    rng = np.random.default_rng(seed)
    return [
        (float(s), float(q), steps)
        for s, q in zip(rng.uniform(0.8, 2.0, n), rng.uniform(0.001, 0.02, n), strict=True)
    ]


#: a few short schedules (seconds in all); the 1 500-step decaying run that took minutes
#: is a benchmark row (``python -m benchmarks.pipelines_agree``)
AGREE = {
    "decaying sigma": [(1.2 * 0.999**t, 0.01, 1) for t in range(300)],
    "random phases": _random_phases(30, 10, 5),
    "two phases": [(1.1, 0.01, 150), (0.9, 0.02, 150)],
}


@pytest.mark.parametrize("name", list(AGREE))
def test_incremental_epsilon_matches_the_one_shot_fast_path(name):
    sched = AGREE[name]
    inc = IncrementalEpsilon(DELTA)
    for b in range(0, len(sched), max(len(sched) // 3, 1)):
        inc.fold(sched[b : b + max(len(sched) // 3, 1)])
        before = inc.epsilon()
        with_more = inc.epsilon([(0.5, 0.02, 10)])  # hypothetical: not kept
        assert with_more > before and inc.epsilon() == before
    upper = inc.epsilon()
    # the grid grew on the way: the composition is rebuilt exactly, no error carried
    assert inc.remove.carried == 0.0
    # the one-shot answers on the same loss grid (FAST_STEP) as the online fold
    one_shot = fast_epsilon_bounds(
        round_schedule(sched), DELTA, step=FAST_STEP, lower=False, factor=1
    )[1]
    # the few values kept exact (EXACT_VALUES): as the one-shot path that keeps them
    same_cells = fast_epsilon_bounds(
        round_schedule(sched, exact_values=64), DELTA, step=FAST_STEP, lower=False, factor=1
    )[1]
    # the certified lower end of the unrounded steps, at the history's own step (a
    # finer one is tighter and took minutes on 1 500 distinct steps)
    lower = fast_epsilon_bounds(
        round_schedule(sched, upper=False), DELTA, step=FAST_STEP, upper=False
    )[0]
    # sound (above the certified lower bound of the true schedule), at least as tight
    # as rounding every coordinate, and at least as tight as the one-shot fast path on
    # the same cells (its blocks are composed on a finer grid) up to its longer window
    assert lower <= upper <= one_shot * (1 + 1e-4)
    assert upper <= same_cells * (1 + 1e-4)


def test_full_batch_history_is_above_the_gdp_closed_form():
    # q = 1: Gaussians compose exactly to mu-GDP with mu^2 = sum 1 / sigma_t^2
    sigmas = [4.0 * 0.995**t for t in range(120)]
    inc = IncrementalEpsilon(DELTA)
    for b in range(0, 120, 40):
        inc.fold([(s, 1.0, 1) for s in sigmas[b : b + 40]])
    exact = gaussian_epsilon(math.sqrt(sum(s**-2 for s in sigmas)), DELTA)
    eps = inc.epsilon()
    assert exact <= eps <= exact * 1.01


def test_folding_in_chunks_equals_the_one_shot_answer_on_the_same_cells():
    # a few distinct sigmas and one q: every value is kept exact (EXACT_VALUES), so
    # the cells are the steps themselves, as in a one-shot fast path without rounding
    history = [(s, 0.02, 1) for s in (1.1, 1.3, 0.95, 1.2) for _ in range(150)]
    inc = IncrementalEpsilon(DELTA)
    answers = []
    for b in range(0, len(history), 100):
        inc.fold(history[b : b + 100])
        answers.append(inc.epsilon())
    # on the same loss grid (the one-shot default refines it for narrow steps)
    one_shot = fast_epsilon_bounds(
        [(1.1, 0.02, 150), (1.3, 0.02, 150), (0.95, 0.02, 150), (1.2, 0.02, 150)],
        DELTA,
        step=FAST_STEP,
        factor=1,  # every cell on the loss grid, as the online fold
    )
    assert answers == sorted(answers)  # more steps, more loss
    lower, upper = one_shot
    # sound, and at or below the one-shot answer on the same loss grid (the blocks are
    # composed on a finer one) up to the incremental path's longer window
    assert lower <= answers[-1] <= upper * (1 + 1e-4)


def test_hypothetical_steps_are_not_kept_and_empty_history_is_zero():
    inc = IncrementalEpsilon(DELTA)
    assert inc.epsilon() == 0.0
    inc.fold([])
    assert inc.epsilon() == 0.0
    inc.fold([(1.0, 0.01, 200)])
    before = inc.epsilon()
    after = inc.epsilon([(0.8, 0.05, 50)])
    assert after > before and inc.epsilon() == before
    # a hypothetical value claims no exact slot: it is rounded up to the grid (a
    # dominating cell), so it answers at or above the same steps folded (kept exact),
    # within the grid's width
    inc.fold([(0.8, 0.05, 50)])
    assert after >= inc.epsilon() >= after * (1 - 4 * 2.0**-10)
    assert list(inc._exact_pairs) == [(1.0, 0.01), (0.8, 0.05)]


def test_hypothetical_steps_do_not_change_later_answers():
    # a filter's look-ahead asks about steps it never folds: they must not take an
    # exact slot or lengthen the grid, so the folded history answers as if unasked
    steps = [(2.0 * 0.999**t, 0.01, 1) for t in range(150)]
    plain, asked = IncrementalEpsilon(DELTA), IncrementalEpsilon(DELTA)
    for i in range(0, 150, 10):
        plain.fold(steps[i : i + 10])
        asked.epsilon([(0.5 + 0.01 * i, 0.02, 400)])
        asked.fold(steps[i : i + 10])
    assert asked.epsilon() == plain.epsilon()


def test_rejects_a_grid_outside_its_range():
    with pytest.raises(ValueError, match="grid"):
        IncrementalEpsilon(DELTA, grid=0.5)


@pytest.mark.parametrize(("sigma", "q", "count"), [(0.6, 0.5, 20), (1.0, 0.2, 200)])
def test_add_direction_history_stays_inside_the_one_shot_bracket(sigma, q, count):
    # large sampling rates: the remove direction's swapped curve no longer certifies
    # the add direction, which is then composed too (on a coarser grid)
    inc = IncrementalEpsilon(DELTA)
    inc.fold([(sigma, q, count // 2)])
    inc.fold([(sigma, q, count - count // 2)])
    eps = inc.epsilon()
    # the add direction was composed: on the coarse grid at least (the fine one only
    # when the coarse one is above the remove direction)
    assert inc.add_coarse is not None
    lower, upper = fast_epsilon_bounds([(sigma, q, count)], DELTA)
    assert lower <= eps <= upper * (1 + 1e-4)


def test_mid_add_direction_certifies_before_the_fine_one_is_composed():
    # issue 37 (linear in phases): where the coarse add direction is above the remove
    # direction's epsilon, the mid one (the coarse grid, blocks at their own budgets) is
    # tried before the fine one; 30 000 random phases x 10 needed the fine one (17 % of
    # 100 000 phases' CPU).  Declining the coarse one forces that path here: the mid one
    # certifies the add side without the fine one, at the same answer
    def run(mid: bool):
        inc = IncrementalEpsilon(DELTA)
        inc._coarse_add_pld = lambda blocks, fit_only: None
        if not mid:
            inc._mid_add_pld = lambda blocks, fit_only: None
        inc.fold([(1.0, 0.2, 100)])
        inc.fold([(1.0, 0.2, 100)])
        return inc, inc.epsilon()

    (with_mid, eps), (fine_only, ref) = run(True), run(False)
    assert with_mid.add_mid is not None and with_mid.add is None
    assert fine_only.add is not None
    assert eps <= ref
    lower, upper = fast_epsilon_bounds([(1.0, 0.2, 200)], DELTA)
    assert lower <= eps <= upper * (1 + 1e-4)
    got, _ = with_mid.delta_at(np.array([eps]))
    assert got[0] <= DELTA * (1 + 1e-9) and with_mid.add is None


def test_swapped_curve_is_taken_only_when_it_is_as_tight_as_the_add_direction():
    # sigma 5, q = 1, 50 steps: the swapped remove curve certifies the add direction
    # 0.39 % above its own composition; the online answer must compose it instead
    from dpacct.accountant import compose
    from dpacct.mechanisms import GaussianMechanism

    inc = IncrementalEpsilon(1e-5)
    inc.fold([(5.0, 1.0, 50)])
    lo, hi = compose([GaussianMechanism(sigma=5.0)], counts=[50]).epsilon_bounds(1e-5)
    assert lo <= inc.epsilon() <= hi * (1 + 1e-4)


def test_below_the_historys_floor_epsilon_is_left_to_the_engine():
    # issue 36: a history composed for a delta below its own floor (its certificate's
    # round-off, a few 1e-12 here, 9e-9 for 100 distinct records) certifies no finite
    # epsilon.  The add direction's search then started on the swapped curve from
    # epsilon = inf and never returned (a 100-record ledger's epsilon(1e-9)); now the
    # fast path declines (None: the ledger's engine route answers)
    inc = IncrementalEpsilon(1e-14)
    inc.fold([(1.0, 0.01, 300)])
    _, floor = inc.delta_at(np.array([50.0]))
    assert floor > 1e-14
    assert inc.epsilon() is None
