"""Tests of mechanisms/algorithms/bandmf_two_band.py: the two-band transfer bound.

Independent values: an exact two-dimensional quadrature of both directions (n = 4,
k = 2, from tests/test_bandmf_balls_in_bins.py) and Monte Carlo estimates (n = 8, k = 4,
both directions).  Each check is shown able to fail: the bound moved 5 % down (in delta
against the quadrature, in epsilon against the Monte Carlo) falls below the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_bandmf_balls_in_bins import TWO_BANDS, _exact_deltas

from dpacct.mechanisms.algorithms.bandmf_balls_in_bins import (
    balls_in_bins_gram,
    bandmf_balls_in_bins,
    bandmf_balls_in_bins_delta_mc,
    two_band_points,
)
from dpacct.mechanisms.algorithms.bandmf_two_band import (
    _law_delta,
    bandmf_two_band_balls_in_bins,
    two_band_delta_law,
)


def test_each_direction_is_above_quadrature_and_within_5_percent():
    sigma = 2.0
    gram = balls_in_bins_gram(TWO_BANDS, 4, 2)
    laws = {d: two_band_delta_law(sigma, 4, 2, TWO_BANDS, d, points=81, rho=0.01)
            for d in ("remove", "add")}
    for eps in (0.5, 1.0):
        exact = dict(zip(("remove", "add"), _exact_deltas(sigma, gram, eps), strict=True))
        for d, (z, w, tail) in laws.items():
            bound = float(_law_delta(z, w, tail, d == "remove", np.array([eps]))[0])
            assert exact[d] <= bound, (d, eps, exact[d], bound)
            assert 0.95 * bound < exact[d], (d, eps, exact[d], bound)  # able to fail


@pytest.mark.slow
def test_n8_k4_above_monte_carlo_and_a_5_percent_lower_epsilon_fails():
    # rho 0.08 (default 0.02): a coarser partial-sum grid, 4x fewer cells (7 s CPU
    # instead of 28 s), epsilon 1.55101 instead of 1.54777; the Monte Carlo lower end at
    # 0.95 eps is still 1.064 delta (31 grid points at rho 0.02 fell below delta; rho
    # 0.16 gave only 1.006 delta)
    sigma, delta = 2.0, 1e-3
    run = bandmf_two_band_balls_in_bins(sigma, 8, cycle_length=4, strategy=TWO_BANDS, rho=0.08)
    eps = run.epsilon(delta)
    old = bandmf_balls_in_bins(sigma, 8, cycle_length=4, strategy=TWO_BANDS,
                               two_band=False).epsilon(delta)
    assert eps < 0.95 * old  # clearly tighter than the Gram domination
    rng = np.random.default_rng(39_2)
    worst_at_eps, worst_below = 0.0, 0.0
    for direction in ("remove", "add"):
        _, lo, _ = bandmf_balls_in_bins_delta_mc(
            sigma, 8, eps, cycle_length=4, strategy=TWO_BANDS, samples=400_000, rng=rng,
            direction=direction, confidence=0.9999)
        worst_at_eps = max(worst_at_eps, lo)
        _, lo, _ = bandmf_balls_in_bins_delta_mc(
            sigma, 8, 0.95 * eps, cycle_length=4, strategy=TWO_BANDS, samples=400_000,
            rng=rng, direction=direction, confidence=0.9999)
        worst_below = max(worst_below, lo)
    assert worst_at_eps <= delta and run.delta(eps) <= delta
    assert worst_below > delta  # an epsilon 5 % lower is refuted: the check can fail


def test_least_of_both_bounds_and_bad_input():
    run = bandmf_two_band_balls_in_bins(2.0, 4, cycle_length=2, strategy=TWO_BANDS, points=21)
    old = bandmf_balls_in_bins(2.0, 4, cycle_length=2, strategy=TWO_BANDS, two_band=False)
    e = np.array([0.5, 2.0, 4.0])
    assert np.all(run.delta(e) <= old.delta(e) * (1 + 1e-12))
    assert run.epsilon(1e-5) <= old.epsilon(1e-5) * (1 + 1e-12)
    assert run.epsilon_bounds(1e-5)[0] == 0.0
    with pytest.raises(ValueError, match="cycle_length"):
        bandmf_two_band_balls_in_bins(1.0, 4, cycle_length=4, strategy=TWO_BANDS)
    with pytest.raises(ValueError, match="strategy"):
        bandmf_two_band_balls_in_bins(1.0, 4, cycle_length=2, strategy=[1.0, 0.5, 0.2])
    with pytest.raises(ValueError, match="strategy"):
        bandmf_two_band_balls_in_bins(1.0, 4, cycle_length=2, strategy=[1.0, -0.5])
    with pytest.raises(ValueError, match="two_band"):
        bandmf_balls_in_bins(1.0, 4, cycle_length=2, strategy=[1.0, 0.5, 0.2], two_band=True)
    with pytest.raises(TypeError, match="two_band"):
        bandmf_balls_in_bins(1.0, 4, cycle_length=2, strategy=TWO_BANDS, two_band="yes")
    # the default: Theorem 2 when its estimated cost is within budget, else Theorem 1
    assert two_band_points(2.0, 8, 4, TWO_BANDS) == 51
    assert two_band_points(0.01, 8, 4, TWO_BANDS) is None
    assert two_band_points(2.0, 8, 4, [1.0, 0.0]) is None
    with pytest.raises(ValueError, match="points"):
        two_band_delta_law(1.0, 4, 2, TWO_BANDS, "remove", points=2)
    with pytest.raises(ValueError, match="direction"):
        two_band_delta_law(1.0, 4, 2, TWO_BANDS, "both")


def test_three_bins_above_monte_carlo():
    """The middle steps of the transfer (k >= 3: occupied cells, the log index, the add
    direction's absorbing cell) stay above a Monte Carlo estimate of both directions."""
    # not vacuous: 21 points are 13-65 % above the estimate here
    _law_above_monte_carlo(np.random.default_rng(39_3))


def _law_above_monte_carlo(rng, **law_options):
    """sigma 1.5, n 6, k 3, 21 points: both directions' law at eps 0.5 and 1.5 at least the
    Monte Carlo estimate's lower confidence end, and not twice it."""
    for direction in ("remove", "add"):
        z, w, tail = two_band_delta_law(1.5, 6, 3, TWO_BANDS, direction, points=21,
                                        **law_options)
        for eps in (0.5, 1.5):
            bound = float(_law_delta(z, w, tail, direction == "remove", np.array([eps]))[0])
            _, lo, _ = bandmf_balls_in_bins_delta_mc(
                1.5, 6, eps, cycle_length=3, strategy=TWO_BANDS, samples=100_000, rng=rng,
                direction=direction, confidence=0.9999)
            assert lo <= bound, (eps, direction, lo, bound)
            assert 0.5 * bound < lo  # not vacuous


@pytest.mark.parametrize("moved", [2.0, 3.0])
def test_narrow_moved_side_stays_above_quadrature(moved):
    """Session 32: the side whose tail Theorem 2 moves onto the grid (remove: below, add:
    above) cut to ``moved`` standard deviations (the default's :data:`MOVED_WIDTH` is 3)
    is still above the exact quadrature in both directions, within 5 % (able to fail),
    and not above the symmetric grid's bound at these epsilons (the points go where the
    integrand bends)."""
    sigma = 2.0
    gram = balls_in_bins_gram(TWO_BANDS, 4, 2)
    for eps in (0.5, 1.0):
        exact = dict(zip(("remove", "add"), _exact_deltas(sigma, gram, eps), strict=True))
        for d in ("remove", "add"):
            z, w, tail = two_band_delta_law(sigma, 4, 2, TWO_BANDS, d, points=81, rho=0.01,
                                            moved_width=moved)
            bound = float(_law_delta(z, w, tail, d == "remove", np.array([eps]))[0])
            assert exact[d] <= bound, (d, eps, moved, exact[d], bound)
            assert 0.95 * bound < exact[d], (d, eps, moved, exact[d], bound)


def test_narrow_moved_side_three_bins_above_monte_carlo():
    """The moved side at 1.5 standard deviations (much of the mass moved onto the end
    point) through the transfer's middle steps (k = 3): still above a Monte Carlo
    estimate of both directions."""
    _law_above_monte_carlo(np.random.default_rng(39_32), moved_width=1.5)
    with pytest.raises(ValueError, match="moved_width"):
        two_band_delta_law(1.5, 6, 3, TWO_BANDS, "remove", points=5, moved_width=0.0)


def test_pruned_add_law_is_never_below_the_full_one():
    """Session 35: states of the add transfer whose mass is at most ``prune`` leave as an
    atom at ``z = 0``, where the add integrand is largest.  With an aggressive threshold
    (1e-7) the pruned law's delta is at or above the full law's at every epsilon and
    shift, and above it by at most the atom; with that atom dropped (the states simply
    deleted) it is below (0.434821 against 0.434912 at eps 0.4), so the comparison can
    fail.  Remove refuses it."""
    from dpacct.mechanisms.algorithms.bandmf_banded_shared import shared_law_delta

    args = (2.0, 60, 6, [1.0, 0.6], "add")
    full = two_band_delta_law(*args, points=15, rho=0.05)
    cut = two_band_delta_law(*args, points=15, rho=0.05, prune=1e-7)
    atom = float(cut[1][cut[0] == 0].sum())
    assert atom > 1e-7                             # states were pruned onto z = 0
    eps = np.array([0.0, 0.1, 0.4, 0.8, 1.5])
    for mu in (0.0, 0.4):
        d_full = shared_law_delta(*full, False, eps, mu)
        d_cut = shared_law_delta(*cut, False, eps, mu)
        assert np.all(d_cut >= d_full)
        assert np.all(d_cut <= d_full + atom * (1 + 1e-6))
    with pytest.raises(ValueError, match="prune"):
        two_band_delta_law(2.0, 60, 6, [1.0, 0.6], "remove", prune=1e-9)
