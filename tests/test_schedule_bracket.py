"""Schedule rounding and the ledger's bracket over rounded schedules.

Independent references: the scalar rounding ``_round`` for the vectorised
``round_schedule``, and the general composition route (``compose`` of
``poisson_subsample(GaussianMechanism(sigma), q)`` parts at tol=1e-5) for the
ledger's bracket.  The fast path's own pieces are tested in ``test_sgm_cells.py``,
``test_pld_hull.py``, ``test_schedule_fast.py`` and ``test_schedule_grid.py``.  No
wall-clock assertions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ledgers import ledger, random_phases

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.pld import schedule as sch
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5


def test_vectorised_rounding_matches_round_step():
    rng = np.random.default_rng(2)
    steps = [
        (float(s), float(q), int(c))
        for s, q, c in zip(
            rng.uniform(0.3, 5, 500),
            rng.uniform(1e-4, 1, 500),
            rng.integers(1, 9, 500),
            strict=True,
        )
    ]
    steps.append((1.0, 1.0, 3))  # on the grid: stays put
    g = 2**-9
    w = math.log1p(g)
    for upper in (True, False):
        cells: dict[tuple[float, float], int] = {}
        for s, q, c in steps:
            key = sch._round(s, q, w, upper)
            cells[key] = cells.get(key, 0) + c
        want = [(s, q, c) for (s, q), c in sorted(cells.items())]
        assert sch.round_schedule(steps, g, upper=upper) == want


def test_exact_cells_and_values_are_not_rounded():
    decay = [(1.5 * 0.999**t, 0.01, 1) for t in range(400)]
    for upper in (True, False):
        # a constant q keeps its value; sigma is still rounded (and merged)
        out = sch.round_schedule(decay, 2**-8, upper=upper, exact_values=4)
        assert {q for _, q, _ in out} == {0.01}
        assert len(out) < 400 and sum(c for *_, c in out) == 400
        # few distinct steps: nothing is rounded
        out = sch.round_schedule(decay + decay[:5], 2**-8, upper=upper, exact_cells=400)
        assert sorted((s, q) for s, q, _ in out) == sorted((s, q) for s, q, _ in decay)
        assert sum(c for *_, c in out) == 405


def _general_route_bounds(phases):
    parts = [poisson_subsample(GaussianMechanism(sigma=s), q) for s, q, _ in phases]
    run = compose(parts, counts=[c for *_, c in phases])
    return run.epsilon_bounds(DELTA, tol=1e-5)


def test_ledger_bracket_contains_the_general_route():
    # 18 distinct phases: beyond the ledger's exact composition, so the fast path
    phases = random_phases(11, 18, (0.9, 2.0), (0.002, 0.02), 40)
    acct = ledger(phases)
    lo, hi = acct.epsilon_bounds(DELTA)
    assert hi == acct.epsilon(DELTA)
    e_lo, e_hi = _general_route_bounds(phases)
    # the general route's answer is inside the fast path's bracket (up to its own
    # 1e-5 bracket), and the fast bracket is tight
    assert lo <= e_hi and e_lo <= hi
    assert lo <= e_lo * (1 + 1e-9) and e_hi <= hi * (1 + 1e-9)
    assert hi <= lo * 1.005


def test_brackets_at_different_grids_intersect():
    # more distinct steps than EXACT_CELLS and EXACT_STEPS: the steps are rounded, sigma
    # only (q constant); with fewer, both brackets are of the steps unrounded and equal
    n = max(sch.EXACT_CELLS, sch.EXACT_STEPS) + 200
    sched = [(1.4 * 0.9995**t, 0.02, 1) for t in range(n)]
    brackets = []
    for grid in (2**-7, 2**-10):
        acct = ledger(sched, grid=grid)
        brackets.append(acct.epsilon_bounds(DELTA))
    (lo1, hi1), (lo2, hi2) = brackets
    assert lo1 <= hi1 and lo2 <= hi2
    assert max(lo1, lo2) <= min(hi1, hi2)
    # the finer grid's bracket is the narrower one
    assert hi2 - lo2 < hi1 - lo1
    assert hi2 <= lo2 * 1.005


def test_ledger_bracket_with_small_rates_contains_the_general_route():
    # small q (narrow steps: the finer lower step) and a decaying sigma, 20 phases
    phases = [(1.6 * 0.97**i, 0.002 + 0.0005 * (i % 5), 30) for i in range(20)]
    acct = ledger(phases)
    lo, hi = acct.epsilon_bounds(DELTA)
    e_lo, e_hi = _general_route_bounds(phases)
    assert lo <= e_hi and e_lo <= hi
    assert lo <= e_lo * (1 + 1e-9) and e_hi <= hi * (1 + 1e-9)
    assert hi <= lo * 1.005
    # a width asked: the lower end refined (issue 37), still below the general route's
    # upper end, the upper end unchanged; a width outside (0, 0.5) is refused by name
    lo_w, hi_w = acct.epsilon_bounds(DELTA, width=1e-4)
    assert lo <= lo_w <= e_hi and hi_w == hi
    for bad in (0.0, 0.7, float("nan")):
        with pytest.raises(ValueError, match="width"):
            acct.epsilon_bounds(DELTA, width=bad)


def test_a_smaller_width_refines_on_the_same_steps_and_never_ends_lower(monkeypatch):
    """Issue 37, session 20 review: ``_refined_lower`` jumped to as many halvings as the
    width asked, so ``width=1e-6`` on 300 decaying steps (sigma 1.2 * 0.998^t, q 0.02)
    ended at 3.9677679, below ``width=1e-5``'s 3.9677704, after 4x its CPU.  The steps
    tried must not depend on the width (a smaller width only goes on further), so its
    lower end is never below a larger width's.  Steps recorded from the fast path; the
    bracket given is the ledger's upper end and a lower end 1e-3 below it."""
    steps = [(1.2 * 0.998**t, 0.02, 1) for t in range(20)]
    tried: list[float] = []
    real = sch.fast_epsilon_bounds

    def record(down, delta, step=None, upper=True):
        tried.append(step)
        return real(down, delta, step=step, upper=upper)

    acct = ledger(steps)
    upper = float(acct.epsilon(DELTA))
    monkeypatch.setattr(sch, "fast_epsilon_bounds", record)
    lows, runs = [], []
    for width in (5e-4, 1e-6):
        tried.clear()
        lows.append(sch._refined_lower(steps, DELTA, upper * (1 - 1e-3), upper, width=width))
        runs.append(list(tried))
    assert runs[0] and runs[1][: len(runs[0])] == runs[0], runs
    assert lows[1] >= lows[0] >= upper * (1 - 1e-3)


def _gdp_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon of ``mu``-GDP at ``delta`` (Dong, Roth & Su 2019, Corollary
    2.13: ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``), by mpmath
    at 40 digits and bisection: its lower end (``delta(lo) > delta``)."""
    import mpmath as mp

    def gdp_delta(eps: float) -> float:
        with mp.workdps(40):
            m, e = mp.mpf(mu), mp.mpf(eps)
            return float(mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2))

    lo, hi = 0.0, 100.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gdp_delta(mid) > delta else (lo, mid)
    return lo


def test_a_fine_first_lower_end_keeps_more_than_exact_cells_distinct_steps():
    """Issue 37, session 22: ``_first_lower(fine=True)`` compared the distinct steps
    with ``EXACT_STEPS`` (128 since session 20, below ``EXACT_CELLS`` = 1024), so beyond
    1 024 distinct steps the fine lower end was None and a ledger's ``width=`` bracket
    kept the default's rounded lower end.  1 100 distinct full-batch steps (q = 1: a
    Gaussian each, so the schedule is exactly ``mu``-GDP with ``mu^2 = sum sigma_t^-2``,
    Dong, Roth & Su 2019, Corollary 2.5): the fine lower end keeps them unrounded, is a
    lower bound of the exact epsilon and tighter than the default's (measured: exact
    7.0065236, fine 7.0057726, default 7.0016910)."""
    steps = [(30.0 * 0.9995**t, 1.0, 1) for t in range(1100)]
    exact = _gdp_epsilon(math.sqrt(sum(s**-2 for s, _, _ in steps)), DELTA)
    default = sch._first_lower(steps, DELTA)
    fine = sch._first_lower(steps, DELTA, fine=True)
    assert fine is not None and default is not None
    assert default <= fine <= exact, (default, fine, exact)
    assert fine >= exact * (1 - 2e-4) > default, (fine, exact, default)


def _random_single_steps(n: int) -> list[tuple[float, float, int]]:
    rng = np.random.default_rng(0)
    sig, q = rng.uniform(1.0, 2.0, n), np.exp(rng.uniform(math.log(1e-3), math.log(1e-2), n))
    return [(float(a), float(b), 1) for a, b in zip(sig, q, strict=True)]


@pytest.mark.parametrize(
    "steps",
    [
        _random_single_steps(sch.LOWER_EXACT_STEPS + 500),
        [(2.0 * 0.9999**t, 0.01, 1) for t in range(10_000)],
    ],
    ids=["random-single-steps", "decaying-10000"],
)
def test_a_fine_first_lower_end_is_none_where_nothing_is_finer(steps):
    """Where no rounding within ``LOWER_EXACT_STEPS`` cells is finer than the default's
    (random steps: rounding merges almost none; 10 000 steps of sigma 2 * 0.9999^t:
    1 026 cells on the grid, 2 049 at half of it), the fine lower end is None (the
    default's stands) instead of composing the default's cells again on its step: 3 000
    random single steps cost 13 s for the default's very number (issue 37, session 22)."""
    fine_cells = sch.round_schedule(
        steps, upper=False, exact_cells=sch.LOWER_EXACT_STEPS, exact_values=sch.EXACT_VALUES
    )
    default = sch.round_schedule(
        steps, upper=False, exact_cells=sch.EXACT_CELLS, exact_values=sch.EXACT_VALUES
    )
    assert fine_cells == default and len(default) > sch.EXACT_CELLS
    assert sch._first_lower(steps, DELTA, fine=True) is None


@pytest.mark.parametrize(
    "phases",
    [
        [(1.0 + 0.01 * i, 1e-5 * (1 + i), 50) for i in range(20)],
        [(1.5 * 1.01**i, 1e-3, 50) for i in range(20)],
    ],
    ids=["q 1e-5..2e-4", "q 1e-3"],
)
def test_a_small_q_ledger_bracket_is_narrow_and_contains_the_general_route(phases):
    """Issue 37, session 27: 20 phases of q 1e-5 .. 2e-4 x 50 (the session-26 review's
    ``tinyq``): every step's loss spread is a bin or two of the lower end's finest
    default step (2.5e-4), and the bracket was 36 % wide (lower 0.006869, upper
    0.010810); at sigma 1.5, q 1e-3, 3.0 %.  The lower end is now also taken on a
    finer step (:func:`~dpacct.accountant.pld.schedule_fast._small_q_step`), the
    larger kept."""
    acct = ledger(phases)
    lo, hi = acct.epsilon_bounds(DELTA)
    # the general route at its default tol (1.5 s; at tol 1e-5 13 s)
    parts = [poisson_subsample(GaussianMechanism(sigma=s), q) for s, q, _ in phases]
    e_lo, e_hi = compose(parts, counts=[c for *_, c in phases]).epsilon_bounds(DELTA)
    # both certified: the brackets intersect, and the ledger's lower end is below the
    # general route's upper end
    assert lo <= e_hi and e_lo <= hi
    assert hi - lo <= 0.005 * hi  # main: 0.36 and 0.030
    # never below the default step's lower end (the larger of the two is kept)
    default = sch.fast_epsilon_bounds(
        phases, DELTA, step=sch._lower_step(phases), upper=False
    )
    assert lo >= default[0]
