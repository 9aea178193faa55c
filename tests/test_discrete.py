"""Tests for ``mechanisms/primitives/discrete.py``: discrete Laplace and Gaussian noise.

References are independent of the code under test: mpmath (40 digits) sums over the
integers of the noise laws themselves -- hockey-stick divergences
``sum_x (P(x) - e^eps Q(x))_+`` and Renyi divergences ``sum_x P^alpha Q^(1-alpha)``, in
both directions, with normalising constants summed directly -- and, for composition,
an exact convolution of the integer noise in numpy.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant import compose
from dpacct.accountant.rdp.conversion import pure_dp_rdp
from dpacct.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    PureDPMechanism,
)
from dpacct.mechanisms.primitives.discrete import discrete_gaussian_delta, discrete_gaussian_rdp

mp.mp.dps = 40


# ----------------------------------------------------------------------------------
# independent references
# ----------------------------------------------------------------------------------
def dlap_pmf(scale, half):
    t = mp.mpf(scale)
    xs = list(range(-half, half + 1))
    w = [mp.exp(-abs(mp.mpf(x)) / t) for x in xs]
    z = mp.fsum(w)
    return {x: wi / z for x, wi in zip(xs, w, strict=True)}


def dgauss_pmf(sigma, half):
    s = mp.mpf(sigma)
    xs = list(range(-half, half + 1))
    w = [mp.exp(-mp.mpf(x) ** 2 / (2 * s * s)) for x in xs]
    z = mp.fsum(w)
    return {x: wi / z for x, wi in zip(xs, w, strict=True)}


def mp_delta(pmf, eps):
    """max over directions of sum_y (P(y) - e^eps Q(y))_+, P = noise + 1, Q = noise."""
    e = mp.exp(mp.mpf(eps))
    ys = range(min(pmf) - 1, max(pmf) + 2)
    zero = mp.mpf(0)
    out = zero
    for shift_p, shift_q in ((1, 0), (0, 1)):
        tot = mp.fsum(
            max(zero, pmf.get(y - shift_p, zero) - e * pmf.get(y - shift_q, zero)) for y in ys
        )
        out = max(out, tot)
    return out


def mp_renyi(pmf, alpha):
    a = mp.mpf(alpha)
    ys = range(min(pmf) + 1, max(pmf) + 1)  # both pmfs positive there
    out = []
    for shift_p, shift_q in ((1, 0), (0, 1)):
        s = mp.fsum(pmf[y - shift_p] ** a * pmf[y - shift_q] ** (1 - a) for y in ys)
        out.append(mp.log(s) / (a - 1))
    return max(out)


# ----------------------------------------------------------------------------------
# discrete Laplace
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [0.3, 1.0, 4.0])
def test_dlap_exact_delta_matches_mpmath(scale):
    m = DiscreteLaplaceMechanism(scale=scale)
    pmf = dlap_pmf(scale, half=int(140 * scale) + 10)  # tail below 1e-60
    e0 = 1 / scale
    for eps in (0.0, 0.2 * e0, 0.7 * e0, 0.999 * e0, 1.3 * e0):
        ref = float(mp_delta(pmf, eps))
        if eps >= e0:  # zero; the reference only sees its own truncation (< 1e-50)
            assert ref < 1e-50
            assert m.delta(eps) == 0.0
            continue
        assert m.delta(eps) == pytest.approx(ref, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_dlap_rdp_matches_mpmath_sum(scale):
    pmf = dlap_pmf(scale, half=int(140 * scale) + 10)
    alphas = [1.5, 2.0, 3.7, 10.2, 64.0]
    got = DiscreteLaplaceMechanism(scale).rdp(alphas)
    ref = [float(mp_renyi(pmf, a)) for a in alphas]
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=0)


def test_dlap_is_exactly_binary_randomized_response():
    m = DiscreteLaplaceMechanism(scale=0.8)
    pure = PureDPMechanism(epsilon=1.25)
    eps = np.linspace(0, 1.5, 16)
    np.testing.assert_allclose(m.delta(eps), pure.delta(eps), rtol=1e-14, atol=1e-300)
    alphas = np.array([1.3, 2.0, 17.0, np.inf])
    np.testing.assert_allclose(m.rdp(alphas), pure_dp_rdp(1.25, alphas), rtol=1e-14, atol=0)
    a = np.linspace(0, 1, 11)
    np.testing.assert_allclose(m.tradeoff(a), pure.tradeoff(a), rtol=1e-14, atol=1e-16)
    law = m._loss_laws()[0]
    assert law is m._loss_laws()[1]
    assert law.lattice == pytest.approx(1.25, rel=1e-15, abs=0)
    np.testing.assert_allclose(law.losses, [-1.25, 1.25], rtol=1e-15, atol=0)
    # P(L = 1/t) = P(noise >= 0) = 1 / (1 + e^{-1/t}), from the pmf itself
    pmf = dlap_pmf(0.8, 200)
    p_pos = float(mp.fsum(v for x, v in pmf.items() if x >= 0))
    assert law.p[1] == pytest.approx(p_pos, rel=1e-13, abs=0)


def test_dlap_pld_and_composition_exact_on_lattice():
    m = DiscreteLaplaceMechanism(scale=2.0)
    eps = np.linspace(0, 0.6, 13)
    exact = m.delta(eps)
    up = np.maximum(*[p.delta(eps) for p in m.pld(pessimistic=True)])
    lo = np.maximum(*[p.delta(eps) for p in m.pld(pessimistic=False)])
    assert np.all(lo <= exact + 1e-12)
    assert np.all(exact <= up + 1e-12)
    # 30-fold composition: losses (2j - 30)/t, j ~ Bin(30, p)
    run = compose([m], counts=[30])
    p = 1.0 / (1.0 + mp.exp(-mp.mpf(0.5)))
    for e in (0.0, 1.0, 3.0):
        ref = mp.fsum(
            mp.binomial(30, j) * p**j * (1 - p) ** (30 - j) * (1 - mp.exp(e - (2 * j - 30) * 0.5))
            for j in range(31)
            if (2 * j - 30) * 0.5 > e
        )
        assert run.delta(e) == pytest.approx(float(ref), rel=1e-9, abs=1e-13)


# ----------------------------------------------------------------------------------
# discrete Gaussian: exact curve
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma", [0.3, 0.7, 1.0, 3.0, 10.0])
def test_dgauss_exact_delta_matches_mpmath(sigma):
    m = DiscreteGaussianMechanism(sigma=sigma)
    pmf = dgauss_pmf(sigma, half=int(45 * sigma) + 8)  # tail below e^{-1000}
    for eps in (0.0, 0.3, 1.0, 2.5, 6.0):
        ref = float(mp_delta(pmf, eps))
        if ref < 1e-250:
            assert m.delta(eps) < 1e-250
            continue
        got = m.delta(eps)
        assert got == pytest.approx(ref, rel=1e-9, abs=0)
        assert got >= ref * (1 - 1e-12)  # the tail bound keeps it an upper bound


def test_dgauss_delta_vectorised_and_close_to_continuous_gaussian():
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    d = DiscreteGaussianMechanism(5.0).delta(eps)
    assert d.shape == (4,)
    np.testing.assert_allclose(d, discrete_gaussian_delta(5.0, eps), rtol=0, atol=0)
    # in the bulk the discrete Gaussian with sigma = 5 is about as private as the
    # continuous one (the tails differ by more)
    g = GaussianMechanism(5.0).delta(eps[:2])
    np.testing.assert_allclose(d[:2], g, rtol=5e-2, atol=0)


def test_dgauss_epsilon_inversion():
    m = DiscreteGaussianMechanism(2.0)
    pmf = dgauss_pmf(2.0, 100)
    for delta in (1e-10, 1e-5, 1e-2):
        lo, hi = m.epsilon_bounds(delta)
        assert hi - lo <= 1e-12 * max(hi, 1.0)
        assert float(mp_delta(pmf, hi)) <= delta * (1 + 1e-9)
        assert float(mp_delta(pmf, lo)) >= delta * (1 - 1e-9)
        assert m.epsilon(delta) == pytest.approx(hi, rel=1e-15, abs=0)


# ----------------------------------------------------------------------------------
# discrete Gaussian: RDP
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma", [0.35, 0.6, 1.0, 2.5])
def test_dgauss_rdp_matches_mpmath_sum(sigma):
    alphas = [1.5, 2.0, 3.7, 10.2, 64.0]
    half = int(70 * sigma + 64 + 10)  # covers the tilted centre alpha for alpha <= 64
    pmf = dgauss_pmf(sigma, half)
    got = DiscreteGaussianMechanism(sigma).rdp(alphas)
    ref = [float(mp_renyi(pmf, a)) for a in alphas]
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=0)


def test_dgauss_rdp_below_zcdp_bound_equal_at_integers():
    alphas = np.array([1.25, 1.5, 2.0, 2.5, 3.0, 7.3, 1e4, 1e4 + 0.5])
    for sigma in (0.4, 1.0, 3.0):
        r = discrete_gaussian_rdp(sigma, alphas)
        bound = alphas / (2 * sigma**2)
        assert np.all(r <= bound * (1 + 1e-15))
        is_int = alphas == np.floor(alphas)
        np.testing.assert_allclose(r[is_int], bound[is_int], rtol=1e-13, atol=0)
    # for small sigma the real-order curve is strictly below the zCDP line
    r = discrete_gaussian_rdp(0.4, np.array([1.5]))[0]
    assert r < 0.99 * 1.5 / (2 * 0.16)
    assert float(DiscreteGaussianMechanism(1.0).rdp(np.inf)) == math.inf


# ----------------------------------------------------------------------------------
# discrete Gaussian: loss law, PLD, composition
# ----------------------------------------------------------------------------------
def test_dgauss_law_is_dominating_pair_on_lattice():
    m = DiscreteGaussianMechanism(1.5)
    law, law2 = m._loss_laws()
    assert law is law2
    assert law.lattice == pytest.approx(1 / (2 * 1.5**2), rel=1e-15, abs=0)
    k = np.round(law.losses / law.lattice)
    np.testing.assert_allclose(law.losses, k * law.lattice, rtol=0, atol=0)
    assert np.all(k % 2 == 1)  # (2x - 1) / (2 sigma^2): odd multiples
    # the proven bound on the truncated mass underflows to 0 here (below 1e-308)
    assert 0 <= law.inf_mass < 1e-290
    assert 0 < DiscreteGaussianMechanism(40.0)._loss_laws()[0].inf_mass < 1e-290
    # the same bound on the truncated Q-mass (plus subnormal Q-masses whose P-mass
    # underflows at the window's edge)
    assert law.q_neg_inf_mass == pytest.approx(law.inf_mass, rel=0, abs=1e-300)
    assert law.p.sum() + law.inf_mass == pytest.approx(1.0, rel=1e-14, abs=0)
    assert law._q.sum() + law.q_neg_inf_mass == pytest.approx(1.0, rel=1e-14, abs=0)
    eps = np.array([0.0, 0.4, 1.1, 3.0])
    np.testing.assert_allclose(law.hockey_stick(eps), m.delta(eps), rtol=1e-9, atol=1e-15)
    # large sigma: no lattice (it would be far finer than useful), smaller window
    big = DiscreteGaussianMechanism(2e4)._loss_laws()[0]
    assert big.lattice is None
    assert 0 < big.inf_mass < 1e-29


@pytest.mark.parametrize("sigma", [0.5, 1.0, 4.0])
def test_dgauss_pld_brackets_exact_curve(sigma):
    m = DiscreteGaussianMechanism(sigma)
    eps = np.linspace(0, 3.0, 16)
    exact = m.delta(eps)
    up = np.maximum(*[p.delta(eps) for p in m.pld(pessimistic=True)])
    lo = np.maximum(*[p.delta(eps) for p in m.pld(pessimistic=False)])
    assert np.all(lo <= exact + 1e-12)
    assert np.all(exact <= up + 1e-12)
    # on the lattice the discretisation is exact up to the engine's 1e-10 padding
    np.testing.assert_allclose(up, exact, rtol=2e-10, atol=1e-14)
    assert m.pld(pessimistic=False)[0].inf_mass == 0.0


def test_dgauss_pld_without_lattice_brackets():
    m = DiscreteGaussianMechanism(2e4)
    eps = np.array([0.0, 5e-5, 1e-4, 2e-4])
    exact = m.delta(eps)
    for tol in (1e-2, 1e-3):
        up = m.pld(pessimistic=True, tol=tol)[0].delta(eps)
        lo = m.pld(pessimistic=False, tol=tol)[0].delta(eps)
        assert np.all(lo <= exact + 1e-12)
        assert np.all(exact <= up + 1e-12)


def test_dgauss_composition_matches_exact_convolution():
    sigma, count = 2.0, 10
    m = DiscreteGaussianMechanism(sigma)
    # exact: S = sum of count N_Z(1, sigma^2), loss (2S - count) / (2 sigma^2)
    half = 80
    x = np.arange(-half, half + 1)
    w = np.exp(-((x - 1.0) ** 2) / (2 * sigma**2))
    w /= w.sum()
    pmf = np.array([1.0])
    for _ in range(count):
        pmf = np.convolve(pmf, w)
    s = np.arange(pmf.size) + count * (-half)
    loss = (2.0 * s - count) / (2 * sigma**2)
    run = compose([m], counts=[count])
    for e in (0.0, 1.0, 3.0, 5.0):
        sel = loss > e
        ref = float(np.sum(pmf[sel] * -np.expm1(e - loss[sel])))
        assert run.delta(e) == pytest.approx(ref, rel=1e-8, abs=1e-14)
    lo, hi = run.epsilon_bounds(1e-6)
    assert lo <= hi <= lo * (1 + 1e-5)
    e_lo, e_hi = 0.0, 20.0
    for _ in range(100):
        mid = 0.5 * (e_lo + e_hi)
        sel = loss > mid
        if float(np.sum(pmf[sel] * -np.expm1(mid - loss[sel]))) > 1e-6:
            e_lo = mid
        else:
            e_hi = mid
    assert lo <= e_hi + 1e-9
    assert hi >= e_lo - 1e-9


# ----------------------------------------------------------------------------------
# monotonicity and bad input
# ----------------------------------------------------------------------------------
def test_monotonicity():
    for m in (DiscreteGaussianMechanism(1.3), DiscreteLaplaceMechanism(1.3)):
        d = m.delta(np.linspace(0, 4, 41))
        assert np.all(np.diff(d) <= 0)
        e = m.epsilon(np.array([1e-12, 1e-8, 1e-4, 1e-2]))
        assert np.all(np.diff(e) <= 0)
    eps = [DiscreteGaussianMechanism(s).epsilon(1e-6) for s in (0.5, 1.0, 2.0, 8.0)]
    assert np.all(np.diff(eps) < 0)
    eps = [DiscreteLaplaceMechanism(s).epsilon(1e-6) for s in (0.5, 1.0, 2.0, 8.0)]
    assert np.all(np.diff(eps) < 0)


@pytest.mark.parametrize("cls,name", [(DiscreteGaussianMechanism, "sigma"),
                                      (DiscreteLaplaceMechanism, "scale")])
def test_bad_input(cls, name):
    for bad in (0.0, -2.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=name):
            cls(bad)
    for bad in ("1", True, None):
        with pytest.raises(TypeError, match=name):
            cls(bad)
    assert repr(cls(2)) == f"{cls.__name__}({name}=2.0)"


def test_extreme_parameters_stay_finite():
    # epsilon0 = 1000: P-masses below the double range are moved to L = -inf
    for m in (DiscreteLaplaceMechanism(1e-3), DiscreteGaussianMechanism(0.01)):
        law = m._loss_laws()[0]
        assert np.all(np.isfinite(law._q)) and np.all(np.isfinite(law.p))
        assert law.p.sum() + law.inf_mass == pytest.approx(1.0, rel=1e-12, abs=0)
        assert law._q.sum() + law.q_neg_inf_mass == pytest.approx(1.0, rel=1e-12, abs=0)
        assert np.all(np.isfinite(m.delta(np.array([0.0, 1.0, 10.0]))))
        assert np.all(np.isfinite(m.rdp(np.array([1.5, 1e4]))))
        assert np.all(np.isfinite(m.tradeoff(np.array([0.0, 0.5, 1.0]))))
    expected = 1000.0 + math.log1p(-1e-5)  # (1 - e^{eps - 1000}) / (1 + e^{-1000}) = 1e-5
    assert DiscreteLaplaceMechanism(1e-3).epsilon(1e-5) == pytest.approx(expected, rel=1e-12, abs=0)


@pytest.mark.parametrize("sigma", [1e4, 1e20])
def test_a_huge_epsilon_gives_a_bounded_delta_not_nan(sigma):
    """Above sigma = 2000 delta comes from the O(1) bracket, whose sigma^2 eps overflowed
    at eps = 1e150 and returned NaN. delta <= P(X >= sigma^2 eps + 1/2) under
    N_Z(1, sigma^2), far below the least float here."""
    from dpacct.mechanisms.primitives.discrete import discrete_gaussian_delta_bounds

    d = DiscreteGaussianMechanism(sigma=sigma).delta(np.array([1e20, 1e150, 1e300]))
    assert np.all(np.isfinite(d)) and np.all((0.0 <= d) & (d <= 1e-300))
    lo, hi = discrete_gaussian_delta_bounds(sigma, np.array([1e150, 1e300]))
    assert np.all(lo == 0.0) and np.all(np.isfinite(hi)) and np.all(hi <= 1e-300)


@pytest.mark.parametrize("sigma", [1e51, 1e308])
def test_a_scale_beyond_the_bounds_reach_is_refused_naming_sigma(sigma):
    """sigma^3 overflowed (OverflowError at sigma = 1e308)."""
    from dpacct.mechanisms.primitives.discrete import discrete_gaussian_delta_bounds

    with pytest.raises(ValueError, match=r"sigma must lie in \(0, 1e50\]"):
        DiscreteGaussianMechanism(sigma=sigma)
    with pytest.raises(ValueError, match=r"sigma must lie in \(0, 1e50\]"):
        discrete_gaussian_delta_bounds(sigma, np.array([1.0]))
