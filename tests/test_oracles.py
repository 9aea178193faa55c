"""The shared reference values of ``tests/oracles.py``, each against a second,
independent evaluation: quadrature of the densities, a duality, scipy, or dp_accounting's
PLD bracket.  (An oracle that is wrong would make every test that uses it wrong.)"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from oracles import (
    gaussian_delta,
    gaussian_delta_curve,
    gaussian_delta_sigma,
    gaussian_epsilon,
    gaussian_mu,
    gdp_tradeoff,
    hockey_stick_quad,
    invert_delta,
    laplace_delta,
    laplace_delta_curve,
    laplace_epsilon,
    subsampled_gaussian_delta,
    subsampled_gaussian_delta_quad,
    subsampled_gaussian_epsilon,
    subsampled_gaussian_rdp,
    subsampled_gaussians_delta_is,
    two_subsampled_gaussians_delta,
)
from scipy import optimize, stats


@pytest.mark.parametrize(
    ("mu", "eps"), [(0.3, 0.0), (1.0, 0.5), (1.0, 2.0), (2.5, 4.0), (0.05, 0.01)]
)
def test_gaussian_delta_is_the_hockey_stick_integral(mu, eps):
    with mpmath.workdps(30):
        grid = [mpmath.mpf(k) / 4 for k in range(-160, 160)]
        quad = hockey_stick_quad(
            lambda x: mpmath.npdf(x, mu, 1), lambda x: mpmath.npdf(x, 0, 1), eps, grid
        )
        assert gaussian_delta(mu, eps) == pytest.approx(quad, rel=1e-20)


@pytest.mark.parametrize(("sigma", "eps"), [(0.8, 1.0), (2.0, 0.3), (5.0, 0.05)])
def test_gaussian_delta_is_inside_dp_accountings_bracket(sigma, eps):
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pldm

    def peer(pessimistic):
        return pldm.from_gaussian_mechanism(
            standard_deviation=sigma,
            value_discretization_interval=1e-4,
            pessimistic_estimate=pessimistic,
        ).get_delta_for_epsilon(eps)

    ours = float(gaussian_delta(1 / sigma, eps))
    low, high = peer(False), peer(True)  # each built once
    assert low <= ours <= high
    assert high - low < 1e-3  # the bracket is tight enough to mean something


@pytest.mark.parametrize(("sigma", "sens", "eps"), [(3.0, 1.0, 0.2), (0.7, 0.37, 1.5)])
def test_gaussian_delta_sigma_is_the_hockey_stick_of_the_scaled_pair(sigma, sens, eps):
    with mpmath.workdps(30):
        grid = [sigma * mpmath.mpf(k) / 4 for k in range(-160, 160)]
        quad = hockey_stick_quad(
            lambda x: mpmath.npdf(x, sens, sigma), lambda x: mpmath.npdf(x, 0, sigma), eps, grid
        )
        got = gaussian_delta_sigma(sigma, eps, sensitivity=sens)
        assert got == pytest.approx(quad, rel=1e-20)


def test_gaussian_float_curve_matches_the_mpmath_curve():
    eps = np.linspace(-1.0, 6.0, 29)
    for mu in (0.2, 1.0, 3.0):
        want = np.array([float(gaussian_delta(mu, e)) for e in eps])
        ok = want > 1e-12
        np.testing.assert_allclose(gaussian_delta_curve(eps[ok], mu), want[ok], rtol=1e-9)


@pytest.mark.parametrize(("mu", "delta"), [(1.0, 1e-5), (0.1, 1e-10), (4.0, 1e-3), (30.0, 1e-9)])
def test_gaussian_epsilon_is_the_root_scipy_finds(mu, delta):
    got = gaussian_epsilon(mu, delta)

    def log_gap(e):  # log delta(e) - log delta in scipy's log space: an independent path
        a = stats.norm.logcdf(mu / 2 - e / mu)
        b = e + stats.norm.logcdf(-mu / 2 - e / mu)
        return a + math.log(-math.expm1(b - a)) - math.log(delta)

    want = optimize.brentq(log_gap, 0.0, mu * mu + 10 * mu + 10, xtol=1e-15, rtol=1e-14)
    assert got == pytest.approx(want, rel=1e-11)
    assert gaussian_delta(mu, got * (1 - 1e-12)) > delta > gaussian_delta(mu, got * (1 + 1e-12))


def test_gaussian_epsilon_is_zero_when_delta_covers_the_curve_at_zero():
    d0 = float(gaussian_delta(0.5, 0))
    assert gaussian_epsilon(0.5, d0 * 1.01) == 0.0
    assert gaussian_epsilon(0.5, d0 * 0.99) > 0.0


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-5), (0.1, 1e-8), (8.0, 1e-12)])
def test_gaussian_mu_inverts_the_curve_in_mu(eps, delta):
    mu = gaussian_mu(eps, delta)
    assert float(gaussian_delta(mu, eps)) == pytest.approx(delta, rel=1e-12)
    assert gaussian_epsilon(mu, delta) == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize(("mu", "eps"), [(0.5, 0.2), (1.0, 1.0), (2.0, 0.0)])
def test_gdp_tradeoff_is_dual_to_the_curve(mu, eps):
    """delta(eps) = sup_alpha 1 - G(alpha) - e^eps alpha (Dong, Roth & Su 2022, Prop. 2.12),
    maximised here numerically over alpha (no closed-form optimum used)."""

    def neg(u):  # alpha = Phi(u): a smooth parametrisation of (0, 1)
        a = stats.norm.cdf(u)
        return -(1 - float(gdp_tradeoff(mu, a)) - math.exp(eps) * a)

    res = optimize.minimize_scalar(
        neg, bounds=(-12, 12), method="bounded", options={"xatol": 1e-10}
    )
    assert -res.fun == pytest.approx(float(gaussian_delta(mu, eps)), rel=1e-8)
    assert gdp_tradeoff(mu, 0) == 1 and gdp_tradeoff(mu, 1) == 0


@pytest.mark.parametrize(
    ("b", "eps"), [(1.0, 0.0), (1.0, 0.5), (0.5, 1.9), (2.0, -0.3), (1.0, -1.5), (1.0, 1.2)]
)
def test_laplace_delta_is_the_hockey_stick_integral(b, eps):
    with mpmath.workdps(30):
        bb = mpmath.mpf(b)

        def lap(c):
            return lambda x: mpmath.exp(-abs(x - c) / bb) / (2 * bb)

        grid = [mpmath.mpf(k) / 8 for k in range(-200, 208)]  # holds the kinks 0 and 1
        quad = hockey_stick_quad(lap(1), lap(0), eps, grid)
        assert laplace_delta(b, eps) == pytest.approx(quad, rel=1e-15, abs=1e-25)


@pytest.mark.parametrize(("b", "delta"), [(1.0, 1e-5), (0.2, 0.1), (3.0, 0.1)])
def test_laplace_epsilon_and_float_curve(b, delta):
    e = laplace_epsilon(b, delta)
    assert float(laplace_delta(b, e)) == pytest.approx(delta, rel=1e-12)
    eps = np.linspace(-1 / b, 2 / b, 13)
    want = [float(laplace_delta(b, x)) for x in eps]
    np.testing.assert_allclose(laplace_delta_curve(eps, b), want, rtol=1e-13, atol=1e-15)
    assert laplace_epsilon(b, 1.0 - 1e-300) == 0.0


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(
    ("q", "sigma", "eps"), [(0.01, 1.0, 0.05), (0.2, 0.7, 1.0), (0.5, 2.0, -0.1), (0.05, 0.5, 2.0)]
)
def test_subsampled_gaussian_closed_form_is_the_quadrature(q, sigma, eps, direction):
    closed = subsampled_gaussian_delta(q, sigma, eps, direction=direction)
    quad = subsampled_gaussian_delta_quad(q, sigma, eps, direction=direction)
    assert closed == pytest.approx(quad, rel=1e-12, abs=1e-25)


@pytest.mark.parametrize("direction", ["remove", "add", "max"])
def test_subsampled_gaussian_at_rate_one_is_the_gaussian(direction):
    for sigma, eps in ((1.0, 0.5), (3.0, 0.01), (0.5, 4.0)):
        got = subsampled_gaussian_delta(1.0, sigma, eps, direction=direction)
        assert got == pytest.approx(gaussian_delta(1 / sigma, eps), rel=1e-30)


@pytest.mark.parametrize(
    ("q", "sigma", "eps"), [(0.01, 0.8, 0.5), (0.1, 1.0, 0.2), (0.3, 2.0, 0.1)]
)
def test_subsampled_gaussian_is_inside_dp_accountings_bracket(q, sigma, eps):
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pldm

    def peer(pessimistic):
        return pldm.from_gaussian_mechanism(
            standard_deviation=sigma,
            sampling_prob=q,
            value_discretization_interval=1e-4,
            pessimistic_estimate=pessimistic,
        ).get_delta_for_epsilon(eps)

    ours = float(subsampled_gaussian_delta(q, sigma, eps))
    low, high = peer(False), peer(True)  # each built once
    assert low <= ours <= high
    assert high - low < 1e-3


def test_subsampled_gaussian_epsilon_and_bad_direction():
    e = subsampled_gaussian_epsilon(0.02, 0.9, 1e-5)
    assert float(subsampled_gaussian_delta(0.02, 0.9, e)) == pytest.approx(1e-5, rel=1e-12)
    with pytest.raises(ValueError, match="direction"):
        subsampled_gaussian_delta(0.1, 1.0, 0.1, direction="both")


@pytest.mark.parametrize(("q", "sigma", "order"), [(0.1, 1.0, 2), (0.01, 0.7, 5), (0.3, 2.0, 12)])
def test_subsampled_gaussian_rdp_is_the_renyi_integral(q, sigma, order):
    with mpmath.workdps(30):
        s = mpmath.mpf(sigma)

        def integrand(x):
            base = mpmath.npdf(x, 0, s)
            mix = (1 - q) * base + q * mpmath.npdf(x, 1, s)
            return mix**order * base ** (1 - order)

        val = mpmath.quad(integrand, [-mpmath.inf, -10, 0, 1, 10 + order * s, mpmath.inf])
        want = float(mpmath.log(val) / (order - 1))
    assert subsampled_gaussian_rdp(q, sigma, order) == pytest.approx(want, rel=1e-12)
    assert subsampled_gaussian_rdp(1.0, sigma, order) == pytest.approx(
        order / (2 * sigma**2), rel=1e-14
    )
    # the real-order path (quadrature) meets the binomial sum at the integer
    near = subsampled_gaussian_rdp(q, sigma, order + 1e-9)
    assert near == pytest.approx(want, rel=1e-7)
    # the add direction is dominated by the remove one (Mironov, Talwar & Zhang 2019)
    add = subsampled_gaussian_rdp(q, sigma, order + 0.5, direction="add")
    assert add <= subsampled_gaussian_rdp(q, sigma, order + 0.5) * (1 + 1e-12)
    with pytest.raises(ValueError, match="order"):
        subsampled_gaussian_rdp(q, sigma, 1.0)


def test_invert_delta_on_a_closed_form():
    # delta(eps) = e^-eps: eps = log(1 / delta)
    assert invert_delta(lambda e: mpmath.exp(-e), 1e-7) == pytest.approx(math.log(1e7), rel=1e-14)
    assert invert_delta(lambda e: mpmath.exp(-e), 1.0) == 0.0


@pytest.mark.parametrize(("first", "second", "eps"), [((0.8, 0.01), (0.9, 0.02), 5.0),
                                                       ((1.0, 1e-3), (1.2, 2e-3), 0.5)])
def test_two_step_quadrature_commutes_and_reduces_to_one_step(first, second, eps):
    # the two-step oracle (one quadrature over the first step's output) checked two ways:
    # a composition does not depend on the order of its steps (the other step is then
    # the one integrated over), and a second step with q 1e-12 leaves the first step's
    # closed form (subsampled_gaussian_delta)
    a = two_subsampled_gaussians_delta(first, second, eps)
    b = two_subsampled_gaussians_delta(second, first, eps)
    assert float(abs(a - b)) <= 1e-7 * float(a)  # the quadrature: ~2e-9 measured
    one = two_subsampled_gaussians_delta(first, (5.0, 1e-12), eps)
    closed = subsampled_gaussian_delta(first[1], first[0], eps)
    assert float(abs(one - closed)) <= 1e-9 * float(closed)


@pytest.mark.parametrize(
    ("first", "second", "eps"), [((1.0, 1e-3), (1.2, 2e-3), 1.5), ((0.8, 0.01), (0.9, 0.02), 5.0)]
)
def test_the_importance_sampled_delta_agrees_with_the_two_step_quadrature(first, second, eps):
    # the importance sampler (an estimate, fixed seed) against the mpmath quadrature
    # of the same two steps, at deltas 1.1e-18 and 1.4e-15: within 4 standard errors,
    # each under 5 % of the value
    exact = float(two_subsampled_gaussians_delta(first, second, eps))
    phases = [(*first, 1), (*second, 1)]
    est, se = subsampled_gaussians_delta_is(
        phases, eps, np.random.default_rng(3), draws=40_000
    )
    assert abs(est - exact) <= 4.0 * se, (est, se, exact)
    assert se < 0.05 * exact
