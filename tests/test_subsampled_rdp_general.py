"""Tests for ``dpacct.accountant.rdp.subsampled_rdp_general``: Renyi DP of any mechanism
under subsampling, from its RDP curve.

The general bounds are checked against what their theorems imply for the Gaussian
mechanism, whose exact subsampled RDP is known (``subsampled_gaussian_rdp``, itself
checked against mpmath in ``test_subsampled_rdp.py``), and against values by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant.rdp.subsampled_rdp import (
    poisson_subsampled_rdp,
    subsampled_gaussian_rdp,
    subsampled_without_replacement_rdp,
)


def gaussian_rdp(sigma: float):
    """RDP curve of the Gaussian mechanism, alpha / (2 sigma^2) (inf at alpha = inf)."""
    return lambda a: np.asarray(a, dtype=float) / (2.0 * sigma * sigma)


def pure_dp_rdp(eps0: float):
    """An eps0-DP mechanism is (alpha, eps0)-RDP at every order, alpha = inf included."""
    return lambda a: np.full(np.shape(a), eps0)


# ----------------------------------------------------------------------------------
# Zhu & Wang 2019, Theorem 6 (general Poisson bound)
# ----------------------------------------------------------------------------------


ZW_GRID = [(q, s) for q in (1e-4, 0.01, 0.05, 0.3, 0.9) for s in (0.5, 1.0, 2.0, 8.0)]


@pytest.mark.parametrize(("q", "sigma"), ZW_GRID)
def test_zhu_wang_brackets_the_exact_gaussian_value(q, sigma):
    """For the Gaussian base the theorem's bracket is the exact A_alpha plus twice its
    l >= 3 terms, hence between A_alpha and 3 A_alpha: an upper bound within
    log(3) / (alpha - 1) of the exact RDP (Zhu & Wang's "additive log 3" optimality)."""
    orders = np.arange(2.0, 129.0)
    exact = subsampled_gaussian_rdp(q, sigma, orders)
    bound = poisson_subsampled_rdp(q, gaussian_rdp(sigma), orders)
    assert np.all(bound >= exact * (1.0 - 1e-12))
    assert np.all(bound <= exact + math.log(3.0) / (orders - 1.0) + 1e-12)


@pytest.mark.parametrize(("q", "sigma"), [(q, s) for q in (1e-4, 0.01, 0.1) for s in (0.5, 1.0)])
def test_zhu_wang_within_factor_three_at_small_noise(q, sigma):
    """Multiplicatively the bound is within 3x of the exact value when sigma <= 1 (the l = 2
    term dominates); for large sigma only the additive log(3)/(alpha-1) gap holds."""
    orders = np.arange(2.0, 129.0)
    exact = subsampled_gaussian_rdp(q, sigma, orders)
    bound = poisson_subsampled_rdp(q, gaussian_rdp(sigma), orders)
    assert np.all(bound <= 3.0 * exact)


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.3, 2.0), (0.001, 0.7)])
def test_zhu_wang_is_exact_at_order_two(q, sigma):
    # the l >= 3 sum is empty: eps'(2) = log(1 + q^2 (e^{1/sigma^2} - 1))
    want = math.log1p(q * q * math.expm1(1.0 / sigma**2))
    got = float(poisson_subsampled_rdp(q, gaussian_rdp(sigma), 2.0))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0.0)


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.0), (0.2, 0.6), (1e-3, 4.0)])
def test_zhu_wang_real_orders_bound_the_exact_value(q, sigma):
    orders = np.array([1.2, 1.5, 2.5, 7.3, 31.7, 100.5])
    exact = subsampled_gaussian_rdp(q, sigma, orders)
    bound = poisson_subsampled_rdp(q, gaussian_rdp(sigma), orders)
    assert np.all(bound >= exact * (1.0 - 1e-12))
    # and the chord between neighbouring integer orders (in the cumulant) is respected
    lo = np.maximum(np.floor(orders), 2.0)
    hi = np.maximum(np.ceil(orders), 2.0)
    c_lo = np.where(
        orders < 2.0, 0.0, (lo - 1.0) * poisson_subsampled_rdp(q, gaussian_rdp(sigma), lo)
    )
    c_hi = (hi - 1.0) * poisson_subsampled_rdp(q, gaussian_rdp(sigma), hi)
    lo_pt = np.where(orders < 2.0, 1.0, lo)
    w = (orders - lo_pt) / (hi - lo_pt)
    chord = ((1.0 - w) * c_lo + w * c_hi) / (orders - 1.0)
    assert np.all(bound <= chord * (1.0 + 1e-12))


def test_zhu_wang_sample_rate_one_returns_the_base_curve():
    orders = np.array([1.5, 2.0, 7.3, np.inf])
    np.testing.assert_allclose(
        poisson_subsampled_rdp(1.0, gaussian_rdp(2.0), orders), orders / 8.0, rtol=1e-15, atol=0.0
    )


def test_zhu_wang_pure_dp_base():
    """A pure eps0-DP mechanism has RDP <= eps0 at every order; at alpha = inf the bound is
    the amplification log(1 + q (e^eps0 - 1)), and no order exceeds it or the base."""
    eps0, q = 0.5, 0.05
    base = pure_dp_rdp(eps0)
    orders = np.array([2.0, 3.5, 50.0, 1000.0, np.inf])
    got = poisson_subsampled_rdp(q, base, orders)
    amplified = math.log1p(q * math.expm1(eps0))
    np.testing.assert_allclose(got[-1], amplified, rtol=1e-14, atol=0.0)
    assert np.all(got <= amplified * (1.0 + 1e-14))
    assert np.all(got <= eps0)
    assert np.all(got > 0.0)


@pytest.mark.filterwarnings("error")
def test_zhu_wang_large_orders():
    orders = np.array([2.0, 1000.5, 5000.0])
    got = poisson_subsampled_rdp(0.01, gaussian_rdp(0.5), orders)
    assert np.all(np.isfinite(got))
    assert np.all(got <= orders / 0.5 * (1.0 + 1e-12))


@settings(max_examples=40, deadline=None)
@given(
    q=st.floats(1e-4, 0.95),
    sigma=st.floats(0.5, 10.0),
    alpha=st.integers(2, 300),
)
def test_property_zhu_wang_upper_bounds_exact(q, sigma, alpha):
    exact = float(subsampled_gaussian_rdp(q, sigma, alpha))
    bound = float(poisson_subsampled_rdp(q, gaussian_rdp(sigma), alpha))
    assert exact * (1.0 - 1e-12) <= bound <= exact + math.log(3.0) / (alpha - 1) + 1e-12


# ----------------------------------------------------------------------------------
# Wang, Balle & Kasiviswanathan 2019, Theorem 9 (without replacement, replace-one)
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("q", "sigma"), ZW_GRID)
def test_wbk_is_at_least_the_subsampled_gaussian_lower_bound(q, sigma):
    """Sum query over {0, 1}-valued records: replacing one 0 by a 1 turns N(0, s^2) into
    (1-g) N(0, s^2) + g N(1, s^2) under sampling without replacement (g = m/n), so the
    exact Poisson value is a lower bound on the true RDP, and the theorem's bound must be
    above it."""
    orders = np.concatenate([np.arange(2.0, 65.0), [1.5, 2.5, 7.3, 31.7]])
    exact = subsampled_gaussian_rdp(q, sigma, orders)
    bound = subsampled_without_replacement_rdp(q, gaussian_rdp(sigma), orders)
    assert np.all(bound >= exact * (1.0 - 1e-12))
    assert np.all(bound >= 0.0)
    assert np.all(bound <= orders / (2.0 * sigma * sigma) * (1.0 + 1e-15))


def test_wbk_sample_rate_one_returns_the_base_curve():
    orders = np.array([1.5, 2.0, 7.3, 100.0])
    np.testing.assert_allclose(
        subsampled_without_replacement_rdp(1.0, gaussian_rdp(1.5), orders),
        orders / (2 * 1.5**2),
        rtol=1e-15,
        atol=0.0,
    )


@pytest.mark.parametrize("sigma", [0.7, 1.0, 3.0])
def test_wbk_order_two_and_three_by_hand(sigma):
    """Gaussian base: eps(inf) = inf, so the branch without eps(inf) is used."""
    g = 0.02
    e2, e3 = 2.0 / (2 * sigma**2), 3.0 / (2 * sigma**2)
    m2 = min(4.0 * math.expm1(e2), 2.0 * math.exp(e2))
    want2 = math.log1p(g * g * m2)
    want3 = math.log1p(3 * g * g * m2 + g**3 * math.exp(2 * e3) * 2.0) / 2.0
    got = subsampled_without_replacement_rdp(g, gaussian_rdp(sigma), [2.0, 3.0])
    np.testing.assert_allclose(got, [want2, want3], rtol=1e-13, atol=0.0)


def test_wbk_uses_the_pure_dp_branch_when_eps_inf_is_finite():
    eps0, g = 0.1, 0.05
    base = pure_dp_rdp(eps0)
    # j = 2: min{4 (e^eps0 - 1), e^eps0 min{2, (e^eps0 - 1)^2}} picks the pure-DP term
    m2 = min(4.0 * math.expm1(eps0), math.exp(eps0) * min(2.0, math.expm1(eps0) ** 2))
    assert m2 < 4.0 * math.expm1(eps0)
    want2 = min(math.log1p(g * g * m2), eps0, math.log1p(g * math.expm1(eps0)))
    got = subsampled_without_replacement_rdp(g, base, [2.0, np.inf])
    np.testing.assert_allclose(got, [want2, math.log1p(g * math.expm1(eps0))], rtol=1e-13, atol=0.0)


@settings(max_examples=40, deadline=None)
@given(
    g1=st.floats(1e-4, 1.0),
    g2=st.floats(1e-4, 1.0),
    sigma=st.floats(0.5, 10.0),
    alpha=st.floats(1.01, 300.0),
)
def test_property_wbk_monotone_in_sample_rate(g1, g2, sigma, alpha):
    lo, hi = sorted((g1, g2))
    f = gaussian_rdp(sigma)
    v_lo = float(subsampled_without_replacement_rdp(lo, f, alpha))
    v_hi = float(subsampled_without_replacement_rdp(hi, f, alpha))
    assert 0.0 <= v_lo <= v_hi * (1.0 + 1e-12)


# ----------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------
GENERAL = [poisson_subsampled_rdp, subsampled_without_replacement_rdp]


@pytest.mark.parametrize("fn", GENERAL)
def test_bad_rdp_fn(fn):
    with pytest.raises(TypeError, match="rdp_fn"):
        fn(0.1, "not a function", 2.0)
    with pytest.raises(ValueError, match="rdp_fn"):
        fn(0.1, lambda a: np.full(np.shape(a), np.nan), 2.0)
    with pytest.raises(ValueError, match="rdp_fn"):
        fn(0.1, lambda a: -np.ones(np.shape(a)), 2.0)
    with pytest.raises(ValueError, match="rdp_fn"):
        fn(0.1, lambda a: np.ones(3), [2.0, 3.0])
