"""accountant/families/gaussian_dp.py: the closed forms of mu-GDP against mpmath quadratures of
the Gaussian pair P = N(mu, 1), Q = N(0, 1) (the hockey-stick divergence and the
errors of the Neyman-Pearson threshold tests)."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import oracles
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dpacct.accountant.families.gaussian_dp import (
    certified_gaussian_bracket,
    gaussian_delta,
    gaussian_delta_at_most_exact,
    gaussian_epsilon,
    gaussian_log_delta,
    gaussian_tradeoff,
    sigma_below,
)


def mp_hockey_stick(mu: float, eps: float) -> mpmath.mpf:
    """The hockey-stick divergence of N(mu, 1) against N(0, 1) (the shared oracle's
    closed form at 50 digits; tests/test_oracles.py checks it against quadrature)."""
    return oracles.gaussian_delta(mu, eps)


@pytest.mark.parametrize("mu", [0.05, 1.0, 12.0])
@pytest.mark.parametrize("eps", [0.0, 0.2, 1.0, 20.0])
def test_delta_is_the_hockey_stick_divergence(mu, eps):
    exact = mp_hockey_stick(mu, eps)
    got = float(gaussian_delta(mu, np.array([eps]))[0])
    assert got == pytest.approx(float(exact), rel=1e-9, abs=1e-300)
    if exact > 1e-300:  # (below, delta underflows to 0 and its log is -inf)
        assert gaussian_log_delta(mu, eps) == pytest.approx(float(mpmath.log(exact)), rel=1e-9)


def test_tiny_deltas_keep_their_relative_precision_and_zero_is_minus_infinity():
    # mu = 1, eps = 30: delta is about 1e-200, far below where 1 - Phi loses digits
    exact = mp_hockey_stick(1.0, 30.0)
    assert 1e-220 < exact < 1e-180
    assert float(gaussian_delta(1.0, np.array([30.0]))[0]) == pytest.approx(float(exact), rel=1e-8)
    assert gaussian_log_delta(1.0, 1e4) == -math.inf


@pytest.mark.parametrize("mu", [0.1, 0.8, 2.0, 7.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-12])
def test_epsilon_inverts_the_quadrature(mu, delta):
    eps = gaussian_epsilon(mu, delta)
    if eps == 0.0:  # already delta(0) <= delta
        assert float(mp_hockey_stick(mu, 0.0)) <= delta
        return
    assert float(mp_hockey_stick(mu, eps)) == pytest.approx(delta, rel=1e-9)


def test_epsilon_is_zero_when_delta_at_zero_is_below_the_target():
    # delta(0) = 2 Phi(mu / 2) - 1 (the total variation of the pair)
    mu = 0.1
    tv = float(2 * mpmath.ncdf(mu / 2) - 1)
    assert gaussian_epsilon(mu, tv * 1.01) == 0.0
    assert gaussian_epsilon(mu, tv * 0.99) > 0.0


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("t", [-2.0, 0.0, 0.7, 3.0])
def test_tradeoff_is_the_threshold_tests_errors(mu, t):
    # the test "P if x > t": type I error Q(x > t), type II error P(x <= t); the
    # likelihood ratio is monotone in x, so these tests are the Neyman-Pearson ones
    with mpmath.workdps(30):
        alpha = mpmath.quad(lambda x: mpmath.npdf(x, 0, 1), [t, mpmath.inf])
        beta = mpmath.quad(lambda x: mpmath.npdf(x, mu, 1), [-mpmath.inf, t])
    got = float(gaussian_tradeoff(mu, np.array([float(alpha)]))[0])
    assert got == pytest.approx(float(beta), rel=1e-9)


def _mp_ndtri(a: float) -> mpmath.mpf:
    # Phi^-1(a) to 40 digits: Newton from the float guess (erfinv(2a - 1) loses a < 1e-40)
    x = mpmath.mpf(float(special.ndtri(float(a))))
    for _ in range(8):
        x -= (mpmath.ncdf(x) - a) / mpmath.npdf(x)
    return x


@pytest.mark.parametrize("mu", [0.1, 1.0, 5.0, 10.0, 30.0])
def test_tradeoff_is_accurate_at_tiny_false_positive_rates(mu):
    # Phi(Phi^-1(1 - a) - mu) read as written rounds 1 - a to 1 below a = 2^-54: at
    # mu 10, a 1e-17 it gave 1.0 against the true 0.0660 (the unsafe side); the
    # curve at a and its mirror 1 - a, against 40 digits
    alphas = np.concatenate([np.geomspace(1e-300, 1e-3, 40), 1.0 - np.geomspace(1e-15, 1e-3, 8)])
    got = gaussian_tradeoff(mu, alphas)
    with mpmath.workdps(40):
        want = [mpmath.ncdf(-_mp_ndtri(mpmath.mpf(float(a))) - mu) for a in alphas]
    for a, g, w in zip(alphas, got, want, strict=True):
        if w > 1e-290:  # beyond: subnormal results, no relative accuracy to ask for
            assert g == pytest.approx(float(w), rel=1e-11), (mu, a)


def test_tradeoff_bounds_contain_the_gaussian_curve_at_tiny_alpha():
    # the bracket widens the exact curve by ROUND_REL: enough once the curve is accurate
    from dpacct.accountant.queries.attack_risk import tradeoff_bounds
    from dpacct.mechanisms import GaussianMechanism

    mech = GaussianMechanism(sigma=0.1)
    low, high = tradeoff_bounds(mech, np.array([1e-17, 1e-12]))
    with mpmath.workdps(40):
        want = [float(mpmath.ncdf(-_mp_ndtri(mpmath.mpf(a)) - 10)) for a in (1e-17, 1e-12)]
    assert np.all(low <= want) and np.all(want <= high)
    assert float(mech.tradeoff(1e-17)) == pytest.approx(want[0], rel=1e-11)


def test_tradeoff_endpoints():
    np.testing.assert_array_equal(gaussian_tradeoff(1.0, np.array([0.0, 1.0])), [1.0, 0.0])


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_delta_at_most_exact_agrees_with_the_quadrature(mu):
    eps = 0.8
    exact = float(mp_hockey_stick(mu, eps))
    assert gaussian_delta_at_most_exact(mu, eps, exact * (1 + 1e-12))
    assert not gaussian_delta_at_most_exact(mu, eps, exact * (1 - 1e-12))


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-4, max_value=1e4, allow_nan=False))
def test_sigma_below_is_at_most_one_over_the_exact_mu(mu):
    # exact rational arithmetic on the two floats: sigma * mu <= 1
    sigma = sigma_below(mu)
    assert Fraction(sigma) * Fraction(mu) <= 1
    assert sigma > (1.0 / mu) * (1 - 1e-14)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: gaussian_delta(0.0, np.array([1.0])), "mu"),
        (lambda: gaussian_delta(-1.0, np.array([1.0])), "mu"),
        (lambda: gaussian_epsilon(math.nan, 1e-5), "mu"),
        (lambda: gaussian_epsilon(1.0, 0.0), "delta"),
        (lambda: gaussian_epsilon(1.0, 1.0), "delta"),
    ],
)
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def _exact_delta_60(sigma: float, eps: float):
    return oracles.gaussian_delta_sigma(sigma, eps, dps=60)


def test_gaussian_bracket_is_certified_against_60_digits_where_the_float_curve_cancels():
    """The float curve's relative error grows as mu shrinks (2e-14 at sigma 20, 4e-8 at
    sigma 4 300 and delta 1e-277); inverted as it was, 231 upper and 239 lower ends of
    1 500 such brackets were on the wrong side of the truth."""
    from dpacct.mechanisms import GaussianMechanism

    rng = np.random.default_rng(20261126)
    for _ in range(150):
        sigma = float(10 ** rng.uniform(-2, 3.7))
        low = -300 if rng.random() < 0.3 else -14
        delta = float(10 ** rng.uniform(low, -1))
        lo, hi = GaussianMechanism(sigma=sigma).epsilon_bounds(delta)
        assert hi == GaussianMechanism(sigma=sigma).epsilon(delta)
        assert hi == 0.0 or _exact_delta_60(sigma, hi) <= delta, (sigma, delta, hi)
        assert lo == 0.0 or _exact_delta_60(sigma, lo) >= delta, (sigma, delta, lo)
        assert hi - lo <= 1e-10 * hi


def test_certified_gaussian_bracket_moves_a_float_root_outwards():
    # sigma 20.14, delta 1.28e-13: the float root 0.3299019562162755 is 2e-14 below the
    # 60-digit root 0.32990195621628216
    sigma, delta, root = 20.142713465865768, 1.2797679843643717e-13, 0.3299019562162755
    lo, hi = certified_gaussian_bracket(1 / sigma, delta, root, root)
    assert lo == root < 0.32990195621628216 < hi  # a lower end already below stays
    assert _exact_delta_60(sigma, hi) <= delta <= _exact_delta_60(sigma, lo)


def test_gaussian_delta_is_at_or_above_60_digits():
    """``Mechanism.delta`` of a Gaussian answers the 50-digit curve rounded up: before,
    133 of 300 such values were below the truth (up to 3e-10 relative at sigma 3 900)."""
    from dpacct.mechanisms import GaussianMechanism

    rng = np.random.default_rng(7)
    for _ in range(150):
        sigma = float(10 ** rng.uniform(-2, 3.7))
        eps = float(10 ** rng.uniform(-4, 1.5))
        got = float(GaussianMechanism(sigma=sigma).delta(eps))
        assert got >= _exact_delta_60(sigma, eps), (sigma, eps, got)


@pytest.mark.parametrize(
    "sigma, delta", [(1e17, 1e-30), (1000.0, 0.0003989422637787597), (5e3, 1e-4)]
)
def test_a_float_zero_epsilon_is_checked_too(sigma, delta):
    """Where the float curve says delta(0) <= delta the exact one may not (the reviewer's
    cases: delta(0) = 4e-18 > 1e-30 at sigma 1e17; 3.98942263778838e-4 at sigma 1 000)."""
    from dpacct.mechanisms import GaussianMechanism

    lo, hi = GaussianMechanism(sigma=sigma).epsilon_bounds(delta)
    assert _exact_delta_60(sigma, hi) <= delta
    assert lo == 0.0 or _exact_delta_60(sigma, lo) >= delta


def _delta_at_400_digits(mu: float, eps: float) -> mpmath.mpf:
    """The exact curve at 400 digits: eps ~ mu^2 / 2 needs about 2 log10(mu) digits
    before a = mu/2 - eps/mu has any."""
    return oracles.gaussian_delta(mu, eps, dps=400)


@pytest.mark.parametrize("sigma", [1e-151, 1e-152, 1e-153])
@pytest.mark.parametrize("delta", [1e-5, 1e-12])
def test_a_tiny_sigma_is_bracketed_by_the_closed_form_bounds(sigma, delta):
    """A noise multiplier below 1e-150 is outside the 50-digit check (mpmath's erfc
    overflowed near 1e154: sigma 1e-160 raised OverflowError); the closed-form bracket
    must still hold the root of the exact curve, checked here at 400 digits."""
    from dpacct.mechanisms import GaussianMechanism

    g = GaussianMechanism(sigma=sigma)
    lo, hi = g.epsilon_bounds(delta)
    assert g.epsilon(delta) == hi
    assert _delta_at_400_digits(1.0 / sigma, hi) <= delta
    assert _delta_at_400_digits(1.0 / sigma, lo) >= delta
    assert hi / lo < 1.0 + 1e-12
    for eps in (lo, 0.5 * lo, 1.5 * hi):
        assert float(g.delta(eps)) >= _delta_at_400_digits(1.0 / sigma, eps)


@pytest.mark.parametrize("sigma", [1e-155, 1e-160, 1e-300])
def test_a_sigma_whose_epsilon_overflows_is_answered_with_inf(sigma):
    """mu^2 / 2 exceeds the largest float: the upper bound is inf, the lower end the
    largest float (the truth is above it), and delta(eps) stays a bound."""
    from dpacct.mechanisms import GaussianMechanism

    g = GaussianMechanism(sigma=sigma)
    assert g.epsilon(1e-5) == math.inf
    assert g.epsilon_bounds(1e-5) == (np.finfo(float).max, math.inf)
    assert gaussian_epsilon(1.0 / sigma, 1e-5) == math.inf
    assert float(g.delta(1e300)) == 1.0
