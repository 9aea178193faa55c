"""RDP -> (epsilon, delta) conversion and the pure-DP / zCDP curves."""

import itertools
import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant.rdp.conversion import pure_dp_rdp, rdp_to_delta, rdp_to_epsilon, zcdp_rdp
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


# ----------------------------------------------------------------------------------
# curves that break monotonicity are used only up to their first decrease
# ----------------------------------------------------------------------------------
def _mp_min_over_orders(f, alpha_max):
    """Infimum of ``f`` over ``1 < alpha < alpha_max`` (unimodal in ``log(alpha - 1)``),
    by golden section in 50-digit arithmetic."""
    with mp.workdps(50):
        lo, hi = mp.log(mp.mpf("1e-6")), mp.log(mp.mpf(alpha_max) - 1)
        g = (mp.sqrt(5) - 1) / 2

        def h(u):
            return f(1 + mp.exp(u))

        c, d = hi - g * (hi - lo), lo + g * (hi - lo)
        fc, fd = h(c), h(d)
        for _ in range(250):
            if fc < fd:
                hi, d, fd = d, c, fc
                c = hi - g * (hi - lo)
                fc = h(c)
            else:
                lo, c, fc = c, d, fd
                d = lo + g * (hi - lo)
                fd = h(d)
        return min(fc, fd, h(hi))


@pytest.mark.parametrize("collapse_at", [100.0, 5000.0, 1e6])
def test_a_collapsing_curve_is_not_trusted_beyond_its_decrease(collapse_at):
    rho, delta = 1e-5, 1e-6

    def broken(a):  # rho-zCDP below the collapse, 0 (float-collapse style) beyond it
        a = np.asarray(a, dtype=float)
        return np.where(a < collapse_at, rho * a, 0.0)

    got = rdp_to_epsilon(broken, delta)
    # never below what the orders before the decrease certify (CKS 2020, Prop. 12)
    ref = _mp_min_over_orders(
        lambda a: rho * a + mp.log((a - 1) / a) - (mp.log(delta) + mp.log(a)) / (a - 1),
        collapse_at,
    )
    assert got >= float(ref) * (1 - 1e-12)
    # and the orders before it are still used (up to the grid spacing below the collapse)
    assert got <= float(ref) * 1.1
    # the delta side, likewise
    eps = 0.05
    log_d = _mp_min_over_orders(
        lambda a: (a - 1) * (rho * a - eps + mp.log((a - 1) / a)) - mp.log(a), collapse_at
    )
    assert rdp_to_delta(broken, eps) >= float(mp.exp(log_d)) * (1 - 1e-12)


def test_a_monotone_curve_still_reaches_far_orders():
    """The guard must not cost a correct curve its far orders (rho-zCDP, tiny rho)."""
    rho, delta = 1e-9, 1e-6
    got = rdp_to_epsilon(lambda a: rho * np.asarray(a, dtype=float), delta)
    ref = _mp_min_over_orders(
        lambda a: rho * a + mp.log((a - 1) / a) - (mp.log(delta) + mp.log(a)) / (a - 1), 1e12
    )
    assert float(ref) <= got <= float(ref) * (1 + 1e-3)


@pytest.mark.parametrize("eps", [1e-8, 1e-4, 0.3])
@pytest.mark.parametrize("alpha", [1.000001, 1.0001, 1.5, 3.0, 1e4, 1e22])
def test_pure_dp_rdp_matches_mpmath_sinh_form(eps, alpha):
    with mp.workdps(60):
        e, a = mp.mpf(eps), mp.mpf(alpha)
        ref = mp.log((mp.sinh(a * e) - mp.sinh((a - 1) * e)) / mp.sinh(e)) / (a - 1)
    got = float(pure_dp_rdp(eps, np.array([alpha]))[0])
    assert got == pytest.approx(float(ref), rel=1e-12)


@pytest.mark.parametrize("b", [1.0, 1e3, 1e8])
@pytest.mark.parametrize("alpha", [1.000001, 1.0001, 1.5, 3.0, 1e4, 1e22])
def test_laplace_rdp_matches_mpmath(b, alpha):
    from dpacct.mechanisms import LaplaceMechanism

    with mp.workdps(60):  # Mironov 2017, Proposition 6, written out
        a, m = mp.mpf(alpha), 1 / mp.mpf(b)
        inner = a / (2 * a - 1) * mp.exp((a - 1) * m) + (a - 1) / (2 * a - 1) * mp.exp(-a * m)
        ref = mp.log(inner) / (a - 1)
    got = float(LaplaceMechanism(b=b).rdp(alpha))
    assert got == pytest.approx(float(ref), rel=1e-12)


def mp_rr_divergence(eps, k, alpha):
    """D_alpha of k-ary randomized response (truthful with e^eps / (e^eps + k - 1)) by its
    definition, summed over the k outputs in mpmath at 50 digits (Mironov 2017, Def. 3)."""
    with mp.workdps(50):
        e, a = mp.e ** mp.mpf(eps), mp.mpf(alpha)
        q = 1 / (e + k - 1)
        p = e * q
        total = p**a * q ** (1 - a) + q**a * p ** (1 - a) + (k - 2) * q
        return float(mp.log(total) / (a - 1))


@pytest.mark.parametrize("eps", [0.01, 1.0, 5.0])
@pytest.mark.parametrize("k", [2, 3, 10])
def test_randomized_response_rdp_matches_its_definition(eps, k):
    from dpacct.accountant.rdp.conversion import randomized_response_rdp

    alphas = [1.001, 2.0, 7.5, 100.0, 1e4]
    log_q = -math.log(math.exp(eps) + k - 1)
    got = randomized_response_rdp(eps, log_q, np.array([*alphas, np.inf]))
    for g, a in zip(got[:-1], alphas, strict=True):
        assert g == pytest.approx(mp_rr_divergence(eps, k, a), rel=1e-12)
    assert got[-1] == eps  # D_inf is the largest log-likelihood ratio


def test_conversion_at_given_orders_is_the_cks_minimum():
    from dpacct.accountant.rdp.conversion import rdp_to_epsilon_at_orders

    alphas = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 64.0])
    rdp = 0.3 * alphas  # zCDP with rho = 0.3
    for delta in (1e-3, 1e-6, 1e-10):
        by_hand = min(cks_bound(lambda a: 0.3 * a, delta, a) for a in alphas)
        assert rdp_to_epsilon_at_orders(alphas, rdp, delta) == pytest.approx(
            max(by_hand, 0.0), rel=1e-13)
    # a curve whose conversion is negative everywhere is floored at 0
    assert rdp_to_epsilon_at_orders(np.array([2.0]), np.array([0.0]), 0.9) == 0.0


def test_delta_on_the_grid_is_sound_and_above_the_refined_delta():
    from dpacct.accountant.rdp.conversion import rdp_to_delta_grid

    sigma = 2.0
    eps = np.array([0.2, 0.5, 1.0, 2.0])
    grid = rdp_to_delta_grid(lambda a: a / (2 * sigma**2), eps)
    exact = GaussianMechanism(sigma=sigma).delta(eps)  # closed form, Balle & Wang 2018
    refined = np.array([rdp_to_delta(lambda a: a / (2 * sigma**2), float(e)) for e in eps])
    assert np.all(grid >= refined * (1 - 1e-12)) and np.all(refined >= exact)
    assert np.all(np.diff(grid) < 0)


def test_a_log_delta_above_709_is_the_trivial_delta_one():
    """rdp(a) = 1e4 a at epsilon 1: log delta = (a - 1)(1e4 a - 1 + log(1 - 1/a)) - log a
    is far above 0 at every order, so every bound here is >= 1 and the answer is 1 (the
    overflow itself is reached through a composed curve, in the next test)."""
    from dpacct.accountant.rdp.conversion import rdp_to_delta, rdp_to_delta_grid

    assert rdp_to_delta(lambda a: 1e4 * np.asarray(a, dtype=float), 1.0) == 1.0
    grid = rdp_to_delta_grid(lambda a: 1e6 * np.asarray(a, dtype=float), np.array([0.5, 1.0]))
    assert np.all(grid == 1.0)


def test_a_long_replace_one_without_replacement_run_answers_delta():
    """compose([subsample_without_replacement(replace_one(Laplace), 0.5)], [10**7]).delta(1)
    raised OverflowError in the RDP conversion; its epsilon at 1e-5 is in the millions,
    so delta(1) is 1."""
    from dpacct.accountant import compose, subsample_without_replacement
    from dpacct.mechanisms import LaplaceMechanism
    from dpacct.mechanisms.primitives.relations import replace_one

    run = compose([subsample_without_replacement(replace_one(LaplaceMechanism(b=1.0)), 0.5)],
                  [10**7])
    assert run.epsilon(1e-5) > 1e6
    assert run.delta(1.0) == 1.0
