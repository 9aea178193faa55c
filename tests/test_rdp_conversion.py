"""RDP -> (epsilon, delta) conversion and the pure-DP / zCDP curves."""

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant.rdp import pure_dp_rdp, rdp_to_delta, rdp_to_epsilon, zcdp_rdp
from dpacct.mechanisms import GaussianMechanism


def cks_bound(rdp, delta, alpha):
    """The Canonne-Kamath-Steinke 2020 Prop. 12 bound at one order, written out."""
    return rdp(alpha) + math.log((alpha - 1) / alpha) - (math.log(delta) + math.log(alpha)) / (
        alpha - 1
    )


@pytest.mark.parametrize("sigma", [0.7, 1.0, 5.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-12])
def test_conversion_is_sound_and_near_optimal(sigma, delta):
    def rdp(a):
        return np.asarray(a) / (2 * sigma**2)

    got = rdp_to_epsilon(rdp, delta)
    exact = GaussianMechanism(sigma=sigma).epsilon(delta)
    assert got >= exact  # RDP conversion never beats the exact curve
    # and it is the minimum of the bound: no order on a fine grid does better
    grid = 1 + np.geomspace(1e-4, 1e4, 20001)
    brute = min(cks_bound(rdp, delta, a) for a in grid)
    assert got <= brute + 1e-9
    assert got >= brute - 1e-6


def test_delta_conversion_inverts_epsilon():
    def rdp(a):
        return np.asarray(a) / 2.0

    for delta in (1e-4, 1e-8):
        eps = rdp_to_epsilon(rdp, delta)
        assert rdp_to_delta(rdp, eps) == pytest.approx(delta, rel=1e-6)


def test_monotone_in_delta():
    def rdp(a):
        return np.asarray(a) * 0.05

    deltas = np.geomspace(1e-15, 0.5, 50)
    eps = [rdp_to_epsilon(rdp, d) for d in deltas]
    assert all(x >= y for x, y in itertools.pairwise(eps))


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("alpha", [1.5, 2.0, 7.25, 100.0])
def test_pure_dp_rdp_is_randomized_response_divergence(eps, alpha):
    """Bun-Steinke Prop 3.3 is attained by randomized response: compare in mpmath."""
    mp.mp.dps = 40
    p = mp.e**eps / (1 + mp.e**eps)
    a = mp.mpf(alpha)
    want = mp.log(p**a * (1 - p) ** (1 - a) + (1 - p) ** a * p ** (1 - a)) / (a - 1)
    got = pure_dp_rdp(eps, np.array([alpha]))[0]
    assert got == pytest.approx(float(want), rel=1e-10)


def test_pure_dp_rdp_limits():
    vals = pure_dp_rdp(2.0, np.array([1.0001, 10.0, 1e4, np.inf]))
    assert np.all(np.diff(vals) >= 0)
    assert vals[-1] == 2.0
    assert np.all(np.isfinite(vals))


def test_zcdp_rdp():
    np.testing.assert_allclose(zcdp_rdp(0.1, np.array([2.0, 10.0])), [0.2, 1.0], rtol=1e-15)
    with pytest.raises(ValueError, match="rho"):
        zcdp_rdp(-1.0, np.array([2.0]))


def test_bad_delta():
    with pytest.raises(ValueError, match="delta"):
        rdp_to_epsilon(lambda a: a, 1.5)
    with pytest.raises(ValueError, match="epsilon"):
        rdp_to_delta(lambda a: a, -1.0)


@pytest.mark.parametrize("rho", [1e-14, 1e-10, 1e-8])
def test_conversion_follows_the_optimum_beyond_order_8192(rho):
    """For alpha * rho with tiny rho the best order is ~sqrt(log(1/delta) / rho), far
    beyond the initial grid: the search keeps doubling instead of stopping at 8192."""
    from scipy.optimize import minimize_scalar

    delta = 1e-12

    def bound(u):  # the CKS conversion at alpha = 1 + e^u
        a = 1.0 + math.exp(u)
        return a * rho + math.log1p(-1.0 / a) - (math.log(delta) + math.log(a)) / (a - 1.0)

    ref = minimize_scalar(bound, bounds=(0.0, 60.0), method="bounded", options={"xatol": 1e-10})
    got = rdp_to_epsilon(lambda a: a * rho, delta)
    assert got >= ref.fun * (1 - 1e-12)
    assert got == pytest.approx(ref.fun, rel=1e-4)
