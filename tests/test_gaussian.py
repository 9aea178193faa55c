"""Gaussian mechanism: exact curve, inversion, RDP and trade-off against mpmath."""

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from oracles import gaussian_delta_sigma, gaussian_epsilon

from dpacct.mechanisms import GaussianMechanism

mp.mp.dps = 40


def mp_delta(sigma: float, eps: float) -> mp.mpf:
    return gaussian_delta_sigma(sigma, eps, dps=40)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.7, 40.0])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 5.0])
def test_exact_delta_matches_mpmath(sigma, eps):
    got = GaussianMechanism(sigma=sigma).delta(eps)
    want = float(mp_delta(sigma, eps))
    assert got == pytest.approx(want, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("sigma", [0.6, 1.0, 2.5, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-10, 1e-15])
def test_epsilon_is_the_analytic_value(sigma, delta):
    """epsilon(delta) equals the root of the mpmath curve to 1e-9, never below it."""
    want = gaussian_epsilon(1 / mp.mpf(sigma), delta)
    got = GaussianMechanism(sigma=sigma).epsilon(delta)
    assert got == pytest.approx(float(want), rel=1e-9)
    assert mp_delta(sigma, got) <= delta * (1 + 1e-12)
    lo, hi = GaussianMechanism(sigma=sigma).epsilon_bounds(delta)
    assert lo <= float(want) * (1 + 1e-12) and hi >= float(want) * (1 - 1e-12)


def mp_renyi(sigma: float, alpha: float) -> mp.mpf:
    """D_alpha(N(1,s^2) || N(0,s^2)) by numerical integration."""
    s = mp.mpf(sigma)

    def pdf(x, mean):
        return mp.e ** (-((x - mean) ** 2) / (2 * s**2)) / (s * mp.sqrt(2 * mp.pi))

    def integrand(x):
        return pdf(x, 1) ** alpha * pdf(x, 0) ** (1 - alpha)

    integral = mp.quad(integrand, [-mp.inf, 0, 1, mp.inf])
    return mp.log(integral) / (alpha - 1)


@pytest.mark.parametrize("alpha", [1.5, 2.0, 3.7, 10.2])
def test_rdp_matches_integration(alpha):
    sigma = 1.3
    got = GaussianMechanism(sigma=sigma).rdp(alpha)
    assert got == pytest.approx(float(mp_renyi(sigma, alpha)), rel=1e-8)


def test_rdp_vectorised_and_real_orders():
    m = GaussianMechanism(sigma=2.0)
    alphas = np.array([[1.01, 2.0], [17.5, 1e4]])
    out = m.rdp(alphas)
    assert out.shape == (2, 2)
    # rounded up: at or above alpha / 8 (exact here: sigma^2 = 4), within 12 units
    assert np.all(out >= alphas / 8.0)
    np.testing.assert_allclose(out, alphas / 8.0, rtol=12 * 2.0**-53)


def test_tradeoff_is_gdp_curve():
    from scipy.stats import norm

    m = GaussianMechanism(sigma=0.8)
    fpr = np.array([0.0, 0.01, 0.3, 1.0])
    want = norm.cdf(norm.ppf(1 - fpr) - 1 / 0.8)
    np.testing.assert_allclose(m.tradeoff(fpr), want, rtol=1e-12, atol=1e-15)


def test_pld_brackets_exact_curve_and_converges():
    m = GaussianMechanism(sigma=1.0)
    eps = np.array([0.0, 0.5, 1.0, 2.0, 4.0])
    exact = m.delta(eps)
    gaps = []
    for tol in (1e-4, 1e-6):
        up = np.maximum(*(p.delta(eps) for p in m.pld(pessimistic=True, tol=tol)))
        lo = np.maximum(*(p.delta(eps) for p in m.pld(pessimistic=False, tol=tol)))
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-15)
        assert np.all(up >= exact * (1 - 1e-12) - 1e-15)
        gaps.append(float(np.max((up - lo) / exact)))
    assert gaps[1] < gaps[0] / 10


@pytest.mark.parametrize(
    "bad, err",
    [(0.0, ValueError), (-1.0, ValueError), (math.nan, ValueError), (math.inf, ValueError),
     ("1", TypeError), (True, TypeError)],
)
def test_bad_sigma(bad, err):
    with pytest.raises(err, match="sigma"):
        GaussianMechanism(sigma=bad)


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-5, math.nan, 2.0])
def test_bad_delta(bad):
    with pytest.raises(ValueError, match="delta"):
        GaussianMechanism(sigma=1.0).epsilon(bad)


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_bad_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        GaussianMechanism(sigma=1.0).delta(bad)


@pytest.mark.parametrize("bad", [1.0, 0.5, -2.0, math.nan])
def test_bad_alpha(bad):
    with pytest.raises(ValueError, match="alpha"):
        GaussianMechanism(sigma=1.0).rdp(bad)


def test_epsilon_monotone():
    m = GaussianMechanism(sigma=1.0)
    deltas = np.geomspace(1e-15, 0.5, 40)
    eps = m.epsilon(deltas)
    assert np.all(np.diff(eps) <= 0)
    sig = [GaussianMechanism(sigma=s).epsilon(1e-6) for s in (0.5, 1, 2, 4)]
    assert all(a > b for a, b in itertools.pairwise(sig))
