"""The one-epoch random-allocation PLD: closed-form oracles and Monte Carlo, both ways."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, special

from dpacct.accountant.transformers.random_allocation import (
    random_allocation,
    random_allocation_delta_mc,
)
from dpacct.accountant.transformers.random_allocation_pld import (
    AllocationEpochPair,
    _above,
    allocation_sum_law,
)
from dpacct.mechanisms import GaussianMechanism


def _call(sigma, c):
    """E[(X - c)_+] for the log-normal likelihood ratio X (Black-Scholes form)."""
    if c <= 0:
        return 1.0 - c
    h = 0.5 / sigma**2
    return special.ndtr(-sigma * (math.log(c) - h)) - c * special.ndtr(-sigma * (math.log(c) + h))


def _put(sigma, k):
    """E[(k - X)_+]."""
    if k <= 0:
        return 0.0
    h = 0.5 / sigma**2
    return k * special.ndtr(sigma * (math.log(k) + h)) - special.ndtr(sigma * (math.log(k) - h))


def _exact_two_steps(sigma, gamma):
    """H_gamma(P||Q) and H_gamma(Q||P) for T = 2 by one quadrature over the first step
    (the second integrated in closed form): an oracle independent of the grid code."""

    def x_of(y):
        return math.exp((y - 0.5) / sigma**2)

    def dens(y):
        return math.exp(-0.5 * (y / sigma) ** 2) / (sigma * math.sqrt(2 * math.pi))

    # (S/2 - g)_+ = (X2 - (2g - X1))_+ / 2 ;  (1 - g S/2)_+ = (g/2) ((2/g - X1) - X2)_+
    kink = sigma**2 * math.log(2 * gamma) + 0.5
    kink_add = sigma**2 * math.log(2 / gamma) + 0.5
    lim = 12 * sigma
    rem = integrate.quad(
        lambda y: dens(y) * _call(sigma, 2 * gamma - x_of(y)) / 2,
        -lim,
        lim,
        points=[kink],
        limit=400,
        epsabs=1e-15,
        epsrel=1e-11,
    )[0]
    add = integrate.quad(
        lambda y: dens(y) * gamma / 2 * _put(sigma, 2 / gamma - x_of(y)),
        -lim,
        lim,
        points=[kink_add],
        limit=400,
        epsabs=1e-15,
        epsrel=1e-11,
    )[0]
    return rem, add


@pytest.mark.parametrize("sigma", [0.8, 1.0, 2.0])
def test_two_steps_at_or_above_the_closed_form_and_close(sigma):
    law = allocation_sum_law(sigma, 2)
    for eps in (0.0, 0.2, 0.7, 1.5):
        rem, add = law.hockey_stick(math.exp(eps))
        ex_rem, ex_add = _exact_two_steps(sigma, math.exp(eps))
        assert rem[0] >= ex_rem - 1e-13 and add[0] >= ex_add - 1e-13
        # tight: the mean-preserving splits add little spread
        assert rem[0] <= ex_rem * 1.03 + 1e-12 and add[0] <= ex_add * 1.03 + 1e-12


@pytest.mark.parametrize(("sigma", "steps"), [(1.0, 3), (0.8, 4), (2.0, 100)])
def test_law_keeps_mass_and_mean(sigma, steps):
    # E X = 1 exactly, so E S = T; the absorbed atom carries the rest of both.  The
    # entries are upper bounds with the FFT round-off certified: never below, and above
    # by at most the certificate (relative 1e-9 per entry, _SETTLED)
    law = allocation_sum_law(sigma, steps)
    s = np.arange(law.q.size) * law.step
    mass = float(law.q.sum()) + law.q_absorbed + law.q_high
    mean = (float(law.q @ s) + law.s_absorbed + law.s_high) / steps
    assert 1.0 - 1e-12 <= mass <= 1.0 + 1e-8
    assert 1.0 - 1e-12 <= mean <= 1.0 + 1e-8
    assert (law.s_absorbed + law.s_high) / steps < 1e-11


@pytest.mark.parametrize(("order", "steps", "sigma"), [(2, 3, 1.0), (3, 3, 1.0), (4, 2, 2.0)])
def test_renyi_moments_at_or_above_brute_force(order, steps, sigma):
    # E_Q[(S/T)^a] is convex in S: the dominating law's moment is above the exact one,
    # brute-forced over all step tuples (T^-a sum exp((sum n_j^2 - a) / (2 sigma^2)))
    total = 0.0
    for tup in itertools.product(range(steps), repeat=order):
        counts = np.bincount(tup, minlength=steps)
        total += math.exp((float((counts**2).sum()) - order) / (2 * sigma**2))
    exact = total / steps**order
    law = allocation_sum_law(sigma, steps)
    ours = float(law.q @ (np.arange(law.q.size) * law.step / steps) ** order)
    assert ours >= exact * (1 - 1e-12)
    assert ours <= exact * 1.01


@pytest.mark.parametrize(("sigma", "steps"), [(1.0, 2), (0.8, 3), (1.0, 10), (1.0, 100)])
def test_both_directions_above_monte_carlo(sigma, steps):
    law = allocation_sum_law(sigma, steps)
    pair = AllocationEpochPair(sigma, steps)
    rng = np.random.default_rng(20261125)
    epsilons = [0.1, 0.5, 1.0]
    # one set of draws per direction, read at every epsilon
    mc = {
        direction: random_allocation_delta_mc(
            sigma, steps, epsilons, samples=200_000, rng=rng, direction=direction
        )
        for direction in ("remove", "add")
    }
    for i, eps in enumerate(epsilons):
        rem, add = (float(v[0]) for v in law.hockey_stick(math.exp(eps)))
        both = float(pair.delta(eps))
        for direction, ours in (("remove", rem), ("add", add)):
            est, lo = mc[direction][0][i], mc[direction][1][i]
            assert lo <= ours, (direction, eps, est, ours)
            assert lo <= both
        assert both >= max(rem, add) * (1 - 1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(("sigma", "steps", "epochs"), [(1.0, 10, 3), (2.0, 100, 4)])
def test_epochs_above_monte_carlo_both_directions(sigma, steps, epochs):
    ra = random_allocation(GaussianMechanism(sigma=sigma), steps=steps, epochs=epochs)
    rng = np.random.default_rng(7)
    epsilons = np.array([0.3, 1.0])
    ours = np.array([float(ra.pld_route.delta(eps)) for eps in epsilons])
    for direction in ("remove", "add"):  # one set of draws per direction
        _, lo, _ = random_allocation_delta_mc(
            sigma, steps, epsilons, epochs=epochs, samples=100_000, rng=rng, direction=direction
        )
        assert np.all(lo <= ours)


@pytest.mark.slow
def test_pld_route_is_not_above_the_older_routes_where_they_are_tight():
    # sigma = 1, T = 10 000: the old decomposition gave 0.0758 at delta = 1e-6; the
    # Poisson run at rate 1/T (a different mechanism, same scale) is about 0.047
    ra = random_allocation(GaussianMechanism(sigma=1.0), steps=10_000)
    eps = float(ra.epsilon(1e-6))
    assert 0.04 < eps < 0.05


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="sigma"):
        allocation_sum_law(-1.0, 10)
    with pytest.raises(ValueError, match="steps"):
        AllocationEpochPair(1.0, 0)
    with pytest.raises(TypeError, match="progress"):
        allocation_sum_law(1.0, 10, progress=1)
    with pytest.raises(TypeError, match="progress"):
        AllocationEpochPair(1.0, 10, progress="no")


def test_progress_flag_does_not_change_the_law():
    # the law is cached by (sigma, T, resolution): the bar is display only
    assert allocation_sum_law(1.0, 7, progress=False) is allocation_sum_law(1.0, 7)


@pytest.mark.parametrize("last", [-1, 0, 3, 8, 9, 11, 15, 19, 20, 40])
def test_part_above_the_window_matches_a_double_loop(last):
    rng = np.random.default_rng(3)
    qa, qb = rng.random(12) ** 4, rng.random(9) ** 4
    oa, ob, step = 5, 2, 0.25
    mass = moment = 0.0
    for i, j in itertools.product(range(qa.size), range(qb.size)):
        if i + j > last:
            mass += qa[i] * qb[j]
            moment += qa[i] * qb[j] * (oa + i + ob + j) * step
    got = _above(qa, oa, qb, ob, step, last)
    assert got[0] == pytest.approx(mass, rel=1e-13, abs=1e-300)
    assert got[1] == pytest.approx(moment, rel=1e-13, abs=1e-300)


@pytest.mark.parametrize(("sigma", "steps"), [(1.0, 5), (2.0, 37), (0.8, 12)])
def test_trimmed_law_keeps_both_totals_at_gamma_zero(sigma, steps):
    # at gamma = 0 both divergences are totals: E[S'/T] (with the atom's moment) is
    # E S / T = 1 and the Q'-mass is 1, whatever the trims moved into the atom
    law = allocation_sum_law(sigma, steps)
    # (entries are upper bounds, round-off certified: at most 1e-8 above)
    rem, add = law.hockey_stick(np.array([0.0]))
    assert 1.0 - 1e-12 <= rem[0] <= 1.0 + 1e-8 and 1.0 - 1e-12 <= add[0] <= 1.0 + 1e-8


def test_no_second_fft_kernel():
    # issue 36: the law's sums go through the engine's certified kernel (pld_fft)
    import inspect

    from dpacct.accountant.transformers import random_allocation_pld as mod

    src = inspect.getsource(mod)
    assert "scipy import fft" not in src and "rfft" not in src
    assert "pld_fft._bounded_convolve" in src


@pytest.mark.parametrize(("sigma", "steps"), [(0.8, 1000), (1.0, 10_000), (2.0, 100)])
def test_product_is_an_entrywise_upper_bound(sigma, steps):
    # the law's pairwise sums are upper bounds entry by entry, round-off included:
    # checked against a direct convolution (sums of non-negative products, relative
    # error below m u) of the first terms' law, square and non-square, with and
    # without the window cutting the product
    from dpacct.accountant.transformers.random_allocation_pld import (
        _base_law,
        _product,
        _x_tail,
    )

    step = 0.02 * math.sqrt(math.expm1(1 / sigma**2))
    q = _base_law(sigma, step, min(_x_tail(sigma, steps, 1e-14), 3000 * step))[0]
    r = q[::-1][: q.size // 2].copy() + q[: q.size // 2]
    for a, b, keep in ((q, q, 2 * q.size - 1), (q, r, q.size), (r, r, 500)):
        exact = np.convolve(a, b)[:keep]
        bound = (min(a.size, b.size) + 2) * 2.0**-53
        got = _product(a, b, a is b, 0, keep, step, steps)
        assert got.shape == exact.shape
        assert np.all(got >= exact * (1 - bound))
        # and close: what the bound adds is round-off, not a loss of the tails
        big = exact > 1e-200
        assert np.all(got[big] <= exact[big] * (1 + 1e-6) + 1e-17)


@pytest.mark.slow
def test_small_sigma_answers_between_the_lower_bound_and_the_rdp_route():
    # sigma 0.46, T 100: the cell cap once coarsened the first grid to a step of ~29
    # against a sum of mean 100, leaving an atom of 0.063 at s = 0 (delta 0.063 at every
    # eps, epsilon inf).  The cut of one term is now placed so both floors are small.
    from dpacct.accountant.transformers.random_allocation_lower import (
        random_allocation_lower_epsilon,
    )

    sigma, steps, delta = 0.46, 100, 1e-5
    ra = random_allocation(GaussianMechanism(sigma=sigma), steps=steps)
    ours = float(ra.pld_route.epsilon(delta))
    lower = random_allocation_lower_epsilon(sigma, steps, delta, epochs=1, k=1)
    assert math.isfinite(ours)
    assert lower <= ours <= lower * (1 + 1e-3)  # the certified attack, computed apart
    assert ours < max(ra._epsilon_directions(delta, None)) - 1.0  # RDP route: about 7.9
    law = allocation_sum_law(sigma, steps)
    s = np.arange(law.q.size) * law.step
    # (entries are upper bounds, round-off certified: at most 1e-8 above)
    mass = float(law.q.sum()) + law.q_absorbed + law.q_high
    assert 1.0 - 1e-12 <= mass <= 1.0 + 1e-8
    assert abs(float(law.q @ s) + law.s_absorbed + law.s_high - steps) < 1e-6 * steps
    rng = np.random.default_rng(20261128)
    epsilons = [0.5, 2.0]
    # one set of draws per direction, read at every epsilon
    mc = {
        direction: random_allocation_delta_mc(
            sigma, steps, epsilons, samples=100_000, rng=rng, direction=direction
        )[1]
        for direction in ("remove", "add")
    }
    for i, eps in enumerate(epsilons):
        rem, add = (float(v[0]) for v in law.hockey_stick(math.exp(eps)))
        for direction, value in (("remove", rem), ("add", add)):
            lo = mc[direction][i]
            assert lo <= value, (direction, eps, value)
            assert value <= 2.0 * lo + 1e-4, (direction, eps, value)


@pytest.mark.slow
def test_small_sigma_is_routed_and_near_the_lower_bound():
    # issue 39: below sigma 0.55 random_allocation() answered by RDP only (main 07eb4cb: 8.70
    # here, lower 7.814); the small-sigma law (high event, 2^19 cells) is routed from 0.4 and
    # lands within 1e-3 of the certified lower bound (the largest-coordinate attack)
    from dpacct.accountant.transformers.random_allocation_lower import (
        random_allocation_lower_epsilon,
    )

    sigma, steps, delta = 0.42, 100, 1e-5
    ours = float(random_allocation(GaussianMechanism(sigma=sigma), steps=steps).epsilon(delta))
    lower = random_allocation_lower_epsilon(sigma, steps, delta)
    assert lower <= ours <= lower * (1 + 1e-3)
    law = allocation_sum_law(sigma, steps)
    assert law.q.size <= 2**19 + 2**12  # the cell cap, plus the window's last sums
    assert law.high_at >= steps * math.exp(9.0) - 2 * law.step


@pytest.mark.parametrize(
    ("sigma", "steps"), [(2.0, 10_000), pytest.param(0.46, 100, marks=pytest.mark.slow)]
)
def test_high_event_never_widens_the_loss_range(sigma, steps):
    # the high event's atom sits at s = high_at only inside the law's support: at sigma 2,
    # T 10 000 one term is cut at ~80 << T, and an atom at loss log(80 / T) widened the
    # engine's loss grid (10 epochs, delta 1e-10: 0.091319 against main's 0.091139); its
    # Q-mass then goes to s = 0, and both totals are kept either way
    law = allocation_sum_law(sigma, steps)
    remove, add = law.pair_laws()
    pos = np.flatnonzero(law.q > 0)
    least = pos[pos > 0][0] * law.step
    assert remove.losses.min() >= math.log(least / steps) - 1e-12
    assert add.losses.max() <= -math.log(least / steps) + 1e-12
    q_total = float(np.sum(remove.p * np.exp(-remove.losses))) + remove.q_neg_inf_mass
    # (entries are upper bounds: the certified round-off, here up to ~1e-7)
    assert 1.0 - 1e-12 <= q_total <= 1.0 + 1e-6
    assert 1.0 - 1e-12 <= float(remove.p.sum()) + remove.inf_mass <= 1.0 + 1e-6


def test_huge_sigma_answers_about_zero():
    # 1 / sigma^2 underflows to 0 above sigma ~ 1e154: the grid's target step was 0 and
    # _coarse_cut divided by it (ZeroDivisionError, also through DP-MF's split pairs).
    # The pair is then identical to every digit: the true epsilon is below the single
    # unamplified Gaussian's, ~1e-299; the answer must be >= 0 and about 0.
    from dpacct.mechanisms import bandmf_balls_in_bins

    eps = AllocationEpochPair(1e300, 10, progress=False).epsilon(1e-5)
    assert 0.0 <= eps < 1e-3
    run = bandmf_balls_in_bins(1e300, 4, cycle_length=2, strategy=[1.0, 0.5])
    assert 0.0 <= run.epsilon(1e-5) < 1e-3


def _trim_whole_array(part, step, steps, budget):
    """``_trim`` as it was before session 48: both ends' sums over the whole array."""
    q, off, q_abs, s_abs, q_hi, s_hi = part
    n = q.size
    s = (off + np.arange(n)) * step
    cost = q * (1.0 + s / steps)
    lo = int(np.searchsorted(np.cumsum(cost), 0.5 * budget, side="right"))
    hi = int(np.searchsorted(np.cumsum(cost[::-1]), 0.5 * budget, side="right"))
    lo = min(lo, n - 1)
    hi = min(hi, n - 1 - lo)
    if lo == 0 and hi == 0:
        return part
    dq = float(q[:lo].sum() + q[n - hi :].sum())
    ds = float(np.einsum("i,i->", q[:lo], s[:lo]) + np.einsum("i,i->", q[n - hi :], s[n - hi :]))
    return q[lo : n - hi], off + lo, q_abs + dq, s_abs + ds, q_hi, s_hi


@pytest.mark.parametrize("n", [1, 2, 5, 1023, 1024, 1025, 9000, 70_000])
@pytest.mark.parametrize("budget", [0.0, 1e-30, 1e-9, 1e-3, 0.5, 10.0])
def test_trim_sums_only_its_end_runs_bit_for_bit(n, budget):
    # session 48: the trims sum only the prefix each end run needs; cumsum adds in
    # order, so the cut and the atom must be those of the whole array's sums exactly
    # (a budget of 10 takes everything but one entry; 0 nothing)
    from dpacct.accountant.transformers.random_allocation_pld import _trim

    rng = np.random.default_rng(n)
    q = rng.random(n) ** 8 * np.exp(-np.abs(np.linspace(-30, 30, n)))
    part = (q, 12_345, 1e-17, 3e-13, 0.0, 0.0)
    got = _trim(part, 0.0375, 1000, budget)
    want = _trim_whole_array(part, 0.0375, 1000, budget)
    assert np.array_equal(got[0], want[0])
    assert got[1:] == want[1:]


def test_nodes_are_the_integer_grid_bit_for_bit():
    from dpacct.accountant.transformers.random_allocation_pld import _nodes

    for first, n, step in ((0, 10, 0.1), (987_654_321, 3000, 0.0388), (5, 0, 1.7)):
        assert np.array_equal(_nodes(first, n, step), (first + np.arange(n)) * step)


@pytest.mark.parametrize("keep", [1, 700, 2000, 2999])
def test_first_pass_keep_is_the_whole_products_prefix(keep):
    # session 48: _product un-tilts and bounds only its kept entries; each must be the
    # whole product's value and bound, bit for bit
    from dpacct.accountant.pld import pld_fft

    q = np.exp(-np.linspace(0, 40, 1500)) * (1 + np.sin(np.arange(1500)) ** 2)
    for b in (q, q[::-1][:1200].copy()):
        square, k = b is q, min(keep, q.size + b.size - 1)  # (_product's keep <= n)
        full = pld_fft._tilted_convolve(q, b, square, 1, rigorous=True, exact=True)
        part = pld_fft._tilted_convolve(q, b, square, 1, rigorous=True, keep=(0, k), exact=True)
        assert np.array_equal(part[0], full[0][:k])
        assert np.array_equal(part[1], full[1][:k])
