"""accountant/pld/pld_settings.py: the grid policy's contracts, each written out from its
documented formula (tail budget, resolution, cap, first grid step) and checked for the
monotonicity the policy promises; discretised laws bracket the Gaussian closed form."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpacct.accountant.laws.loss_law import GaussianLossLaw
from dpacct.accountant.pld.pld_settings import (
    DEFAULT_RESOLUTION,
    DEFAULT_TAIL,
    DEFAULT_TOL,
    FIRST_LEVEL_FRACTION,
    MIN_TOL,
    PLDSettings,
    discretize_law,
    grid_step,
    tail_budget,
    tail_budgets,
)
from dpacct.mechanisms.primitives._discrete_laplace_law import discrete_laplace_law


# ------------------------------------------------------------------ tail budget
@pytest.mark.parametrize(
    ("delta", "expected"),
    [
        # a millionth of delta, rounded down to a power of ten, within [1e-16, 1e-12]
        (0.5, 1e-12),  # 5e-7 -> clipped to 1e-12
        (3e-7, 1e-13),  # 3e-13
        (2e-8, 1e-14),  # 2e-14
        (3e-9, 1e-15),  # 3e-15
        (4e-10, 1e-16),  # 4e-16
        (7e-11, 1e-16),  # 7e-17 -> clipped to 1e-16
        (1e-30, 1e-16),
    ],
)
def test_tail_budget_is_the_documented_formula(delta, expected):
    assert tail_budget(delta) == expected


def test_tail_budget_is_monotone_and_below_a_millionth_of_delta():
    deltas = np.geomspace(1e-20, 1.0, 2001)
    budgets = np.array([tail_budget(float(d)) for d in deltas])
    assert np.all(np.diff(budgets) >= 0)
    assert set(budgets.tolist()) <= {10.0**k for k in range(-16, -11)}
    big = deltas >= 1e-10  # where the lower clip does not apply
    assert np.all(budgets[big] <= deltas[big] * 1e-6 * (1 + 1e-12))
    assert tail_budget(None) == DEFAULT_TAIL


@pytest.mark.parametrize("bad", [0.0, -1e-5, 1.5, math.nan])
def test_tail_budget_refuses_a_bad_delta(bad):
    with pytest.raises(ValueError, match="delta"):
        tail_budget(bad)


# ------------------------------------------------------------------ settings
@pytest.mark.parametrize("tol", [None, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6])
def test_resolution_and_tail_follow_the_tolerance(tol):
    s = PLDSettings(tol, 1e-6)
    t = DEFAULT_TOL if tol is None else max(tol, MIN_TOL)
    # resolution grows like 1/sqrt(tol), at least 16 points per spread
    assert s.resolution == pytest.approx(max(DEFAULT_RESOLUTION * math.sqrt(DEFAULT_TOL / t), 16))
    # tighter tolerances cut less mass
    assert s.tail == pytest.approx(tail_budget(1e-6) * min(1.0, t / DEFAULT_TOL))
    assert s.coarse_cap is None and s.first_fraction is None


def test_resolution_is_monotone_and_stops_at_min_tol():
    tols = np.geomspace(0.49, 1e-9, 60)
    res = [PLDSettings(float(t)).resolution for t in tols]
    assert np.all(np.diff(res) >= 0)
    assert PLDSettings(1e-9).key() == PLDSettings(MIN_TOL).key()
    assert PLDSettings(1e-3).resolution_for(False) >= DEFAULT_RESOLUTION


@pytest.mark.parametrize("cap", [1e-3, 0.01, 0.25, 0.3, 5.0])
def test_capped_rounds_down_to_a_power_of_two_and_copies(cap):
    base = PLDSettings(1e-4, 1e-6)
    capped = base.capped(cap)
    c = capped.coarse_cap
    assert c <= cap < 2 * c and math.log2(c) == int(math.log2(c))
    assert base.coarse_cap is None  # the original is untouched
    assert capped.key() != base.key() and hash(capped.key()) is not None
    assert base.copy().key() == base.key()
    assert base.with_first_fraction(1.0).first_fraction == 1.0 and base.first_fraction is None


@pytest.mark.parametrize("bad", [0.0, 0.5, -1e-3, math.nan])
def test_settings_refuse_a_bad_tolerance(bad):
    with pytest.raises(ValueError, match="tol"):
        PLDSettings(bad)


# ------------------------------------------------------------------ grid step
@pytest.mark.parametrize("mu", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("tol", [None, 1e-2, 1e-6])
def test_grid_step_is_the_power_of_two_below_spread_over_resolution(mu, tol):
    law = GaussianLossLaw(mu=mu)
    s = PLDSettings(tol)
    for pessimistic in (True, False):
        step = grid_step(law, pessimistic, s)
        target = law.spread() / (s.resolution_for(pessimistic) * FIRST_LEVEL_FRACTION)
        assert step <= target < 2 * step
        assert math.log2(step) == int(math.log2(step))


def test_grid_step_of_a_lattice_law_is_its_lattice():
    law = discrete_laplace_law(0.75, 3)
    assert grid_step(law, True, PLDSettings(1e-6)) == law.lattice


# ------------------------------------------------------------------ discretisation
@pytest.mark.parametrize("mu", [0.5, 2.0])
def test_discretised_laws_bracket_the_gaussian_curve(mu):
    law = GaussianLossLaw(mu=mu)
    s = PLDSettings(1e-4, 1e-6)
    upper = discretize_law(law, True, s)
    lower = discretize_law(law, False, s)
    for eps in (0.0, 0.5, 1.5, 3.0):
        with mpmath.workdps(30):
            m, e = mpmath.mpf(mu), mpmath.mpf(eps)
            exact = float(mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m))
        hi = float(upper.delta(np.array([eps]))[0])
        lo = float(lower.delta(np.array([eps]))[0])
        assert lo <= exact * (1 + 1e-12) and exact <= hi * (1 + 1e-12)
        assert hi - lo <= 1e-2 * exact + 1e-12


# ------------------------------------------------------------ one tail-budget policy
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 3e-9, 1e-12])
@pytest.mark.parametrize("pieces", [1, 7, 10_000, 1 << 20])
def test_tail_budgets_are_the_documented_shares(delta, pieces):
    b = tail_budgets(delta, pieces)
    assert b.engine == tail_budget(delta)
    assert b.cut == pytest.approx(1e-4 * delta, rel=1e-15)
    assert b.alias == b.cut
    assert b.piece * pieces <= b.cut * (1 + 1e-15)
    assert b.piece == pytest.approx(b.cut / pieces, rel=1e-15)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, None])
def test_tail_budgets_refuse_bad_pieces(bad):
    with pytest.raises(ValueError, match="pieces"):
        tail_budgets(1e-5, bad)


def test_tail_budgets_refuse_a_bad_delta():
    with pytest.raises(ValueError, match="delta"):
        tail_budgets(0.0)


def test_the_shared_grid_paths_take_their_budgets_from_the_policy(monkeypatch):
    """Both fast paths read their tail and aliasing budgets from ``tail_budgets``
    (with the target delta and the number of steps they spread the cut over)."""
    import dpacct.accountant.pld.incremental as inc
    import dpacct.accountant.pld.online_direction as online_direction
    import dpacct.accountant.pld.pld_settings as ps
    import dpacct.accountant.pld.schedule_fast as sf

    calls = []

    def spy(delta, pieces=1):
        calls.append((delta, pieces))
        return ps.tail_budgets(delta, pieces)

    monkeypatch.setattr(sf, "tail_budgets", spy)
    monkeypatch.setattr(online_direction, "tail_budgets", spy)
    phases = [(1.0, 0.01, 300), (0.8, 0.02, 200)]
    sf.fast_epsilon_bounds(phases, 1e-5)
    assert calls == [(1e-5, 500)]
    calls.clear()
    online = inc.IncrementalEpsilon(1e-6)
    online.fold(phases)
    online.epsilon()
    assert calls and all(c[0] == 1e-6 for c in calls)
    # the share is read when the budget is asked for, and any share certifies
    monkeypatch.setattr(ps, "SHARED_GRID_SHARE", 1e-6)
    assert ps.tail_budgets(1e-5, 500).cut == pytest.approx(1e-11, rel=1e-15)
    lo, hi = sf.fast_epsilon_bounds(phases, 1e-5)
    assert 0 < lo <= hi
