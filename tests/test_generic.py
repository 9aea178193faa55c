"""Tests for ``dpacct.mechanisms.primitives.generic``: PureDPMechanism and ZCDPMechanism.

References are independent: mpmath (40 digits) sums over the two outputs of binary
randomized response (the extremal pure-DP pair) for hockey-stick and Renyi divergences,
the f-DP curve ``f_{eps,0}`` written out in mpmath, and, for zCDP, the exact curves of
mechanisms known to satisfy it (Gaussian, discrete Gaussian) which the RDP conversion
must upper-bound.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant import compose
from dpacct.mechanisms import (
    DiscreteGaussianMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    LaplaceMechanism,
    PureDPMechanism,
    RandomizedResponse,
    ZCDPMechanism,
)

mp.mp.dps = 40


def rr_pair(eps):
    e = mp.exp(mp.mpf(eps))
    p = e / (1 + e)
    return [p, 1 - p], [1 - p, p]


def mp_delta(eps, eps_prime):
    P, Q = rr_pair(eps)
    e = mp.exp(mp.mpf(eps_prime))
    out = mp.mpf(0)
    for A, B in ((P, Q), (Q, P)):
        out = max(out, mp.fsum(max(mp.mpf(0), a - e * b) for a, b in zip(A, B, strict=True)))
    return out


def mp_renyi(eps, alpha):
    P, Q = rr_pair(eps)
    a = mp.mpf(alpha)
    return max(
        mp.log(mp.fsum(x**a * y ** (1 - a) for x, y in zip(A, B, strict=True))) / (a - 1)
        for A, B in ((P, Q), (Q, P))
    )


# ----------------------------------------------------------------------------------
# PureDPMechanism
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.01, 0.5, 1.0, 3.0, 12.0])
def test_pure_dp_exact_delta_matches_mpmath(eps):
    m = PureDPMechanism(epsilon=eps)
    for frac in (0.0, 0.3, 0.8, 0.99999):
        ref = float(mp_delta(eps, frac * eps))
        assert m.delta(frac * eps) == pytest.approx(ref, rel=1e-9, abs=1e-300)
    assert m.delta(1.2 * eps) == 0.0
    # closed form check: (e^eps - e^eps') / (1 + e^eps)
    assert m.delta(0.0) == pytest.approx(math.tanh(eps / 2), rel=1e-13, abs=0)


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_pure_dp_rdp_matches_mpmath(eps):
    alphas = [1.5, 2.0, 3.7, 10.2, 64.0]
    got = PureDPMechanism(eps).rdp(alphas)
    ref = [float(mp_renyi(eps, a)) for a in alphas]
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=0)
    assert float(PureDPMechanism(eps).rdp(np.inf)) == pytest.approx(eps, rel=1e-15, abs=0)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        big = PureDPMechanism(eps).rdp(np.array([1e3, 1e4]))
    assert np.all(np.isfinite(big)) and np.all(big <= eps)


def test_pure_dp_dominates_every_pure_dp_mechanism():
    eps = 1.0
    pure = PureDPMechanism(eps)
    e_grid = np.linspace(0, 1.1, 23)
    others = [
        LaplaceMechanism(b=1.0),
        RandomizedResponse(p=math.exp(1) / (math.exp(1) + 2), k=3),
        ExponentialMechanism(epsilon=1.0),
        ExponentialMechanism(epsilon=1.0, bounded_range=False),
    ]
    for other in others:
        assert np.all(other.delta(e_grid) <= pure.delta(e_grid) + 1e-15)
        a = np.array([1.5, 2.0, 10.0])
        assert np.all(other.rdp(a) <= pure.rdp(a) + 1e-12)
        f = np.linspace(0, 1, 21)
        assert np.all(other.tradeoff(f) >= pure.tradeoff(f) - 1e-12)


def test_pure_dp_tradeoff_is_f_eps_0():
    eps = 0.7
    m = PureDPMechanism(eps)
    e = mp.exp(mp.mpf(eps))
    for a in (0.0, 0.01, 0.2, 1 / (1 + float(e)), 0.5, 0.9, 1.0):
        am = mp.mpf(a)
        ref = max(mp.mpf(0), 1 - e * am, (1 - am) / e)
        assert float(m.tradeoff(a)) == pytest.approx(float(ref), rel=1e-13, abs=1e-16)


def test_pure_dp_law_and_pld():
    m = PureDPMechanism(0.9)
    law, law2 = m._loss_laws()
    assert law is law2
    assert law.lattice == pytest.approx(0.9, rel=1e-15, abs=0)
    eps = np.linspace(0, 1.0, 11)
    exact = m.delta(eps)
    up = np.maximum(*[p.delta(eps) for p in m.pld(pessimistic=True)])
    lo = np.maximum(*[p.delta(eps) for p in m.pld(pessimistic=False)])
    assert np.all(lo <= exact + 1e-12)
    assert np.all(exact <= up + 1e-12)
    np.testing.assert_allclose(up, exact, rtol=2e-10, atol=1e-15)


def test_pure_dp_composition_matches_kov_binomial_formula():
    # Kairouz, Oh, Viswanath 2015, Theorem 3.3: delta of the k-fold composition
    eps, k = 0.3, 40
    run = compose([PureDPMechanism(eps)], counts=[k])
    e = mp.mpf(eps)
    for i in (0, 2, 6, 10):
        eps_total = (k - 2 * i) * e
        ref = mp.fsum(
            mp.binomial(k, ell) * (mp.exp(e * (k - ell)) - mp.exp(e * (k - 2 * i + ell)))
            for ell in range(i)
        ) / (1 + mp.exp(e)) ** k
        assert run.delta(float(eps_total)) == pytest.approx(float(ref), rel=1e-8, abs=1e-14)


def test_pure_dp_monotone_and_bad_input():
    d = PureDPMechanism(2.0).delta(np.linspace(0, 2.5, 26))
    assert np.all(np.diff(d) <= 0)
    e = [PureDPMechanism(x).epsilon(1e-5) for x in (4.0, 2.0, 1.0, 0.1)]
    assert np.all(np.diff(e) < 0)
    assert np.all(np.diff(PureDPMechanism(1.0).epsilon(np.array([1e-9, 1e-3, 0.2]))) < 0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="epsilon"):
            PureDPMechanism(bad)
    for bad in ("1", True, None):
        with pytest.raises(TypeError, match="epsilon"):
            PureDPMechanism(bad)
    m = PureDPMechanism(epsilon=2)
    assert m.epsilon0 == 2.0 and isinstance(m.epsilon0, float)
    assert repr(m) == "PureDPMechanism(epsilon=2.0)"
    assert m == PureDPMechanism(2.0) and hash(m) == hash(PureDPMechanism(2.0))
    assert m != PureDPMechanism(2.5)
    with pytest.raises(AttributeError):
        m.epsilon0 = 1.0


# ----------------------------------------------------------------------------------
# ZCDPMechanism
# ----------------------------------------------------------------------------------
def test_zcdp_rdp_and_route():
    m = ZCDPMechanism(rho=0.125)
    np.testing.assert_allclose(m.rdp([1.5, 2.0, 3.7, 1e4]), [0.1875, 0.25, 0.4625, 1250.0],
                               rtol=1e-15, atol=0)
    assert float(m.rdp(np.inf)) == math.inf
    assert m.route == "rdp"
    assert not m.has_pld and not m.has_exact_curve
    with pytest.raises(NotImplementedError):
        m.pld()
    lo, hi = m.epsilon_bounds(1e-5)
    assert lo == 0.0 and hi == pytest.approx(m.epsilon(1e-5), rel=1e-12, abs=0)


@pytest.mark.parametrize("rho", [0.01, 0.5, 2.0])
def test_zcdp_bounds_the_mechanisms_that_satisfy_it(rho):
    m = ZCDPMechanism(rho)
    sigma = 1 / math.sqrt(2 * rho)  # the Gaussian and discrete Gaussian are rho-zCDP
    for other in (GaussianMechanism(sigma), DiscreteGaussianMechanism(sigma)):
        for eps in (0.0, 0.5, 2.0, 5.0):
            assert m.delta(eps) >= other.delta(eps) * (1 - 1e-12)
        for delta in (1e-10, 1e-5, 1e-2):
            assert m.epsilon(delta) >= other.epsilon(delta) - 1e-12
    # never worse than the classical conversion rho + 2 sqrt(rho log(1/delta))
    for delta in (1e-10, 1e-5, 1e-2):
        assert m.epsilon(delta) <= rho + 2 * math.sqrt(rho * math.log(1 / delta)) + 1e-12


def test_zcdp_composition_adds_rho_and_monotone():
    run = compose([ZCDPMechanism(0.1), ZCDPMechanism(0.3)], counts=[3, 2])
    assert run.route == "rdp"
    a = np.array([1.5, 2.0, 64.0])
    np.testing.assert_allclose(run.rdp(a), ZCDPMechanism(0.9).rdp(a), rtol=1e-14, atol=0)
    # compose keeps the grid of orders; the one mechanism answers the exact optimum
    # (zcdp_epsilon_tight): never above the grid's, within its 1e-12 rounding
    one = ZCDPMechanism(0.9).epsilon(1e-6)
    assert one <= run.epsilon(1e-6) <= one * (1 + 2e-12)
    e = [ZCDPMechanism(r).epsilon(1e-6) for r in (2.0, 0.5, 0.1, 0.01)]
    assert np.all(np.diff(e) < 0)
    d = ZCDPMechanism(0.5).delta(np.array([0.5, 1.0, 2.0, 4.0]))
    assert np.all(np.diff(d) < 0)


def test_zcdp_bad_input():
    for bad in (0.0, -0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="rho"):
            ZCDPMechanism(bad)
    for bad in ("0.5", True, None):
        with pytest.raises(TypeError, match="rho"):
            ZCDPMechanism(bad)
    assert repr(ZCDPMechanism(1)) == "ZCDPMechanism(rho=1.0)"


def test_zcdp_with_xi_round_trips_and_xi_zero_is_written_as_before():
    from dpacct.accountant.serialization import from_dict, to_dict

    assert to_dict(ZCDPMechanism(rho=0.5)) == {"type": "zcdp", "params": {"rho": 0.5}}
    m = ZCDPMechanism(rho=0.5, xi=0.25)
    assert from_dict(to_dict(m)) == m and repr(m) == "ZCDPMechanism(rho=0.5, xi=0.25)"
    # (xi, rho)-zCDP: the conversions are those of rho-zCDP shifted by xi (exactly)
    assert m.epsilon(1e-5) == pytest.approx(0.25 + ZCDPMechanism(rho=0.5).epsilon(1e-5), rel=1e-12)
    assert m.delta(3.0) == pytest.approx(ZCDPMechanism(rho=0.5).delta(2.75), rel=1e-12)
    assert m.delta(0.1) >= ZCDPMechanism(rho=0.5).delta(0.1)  # below xi: generic route


def test_zcdp_epsilon_tight_against_mpmath_and_the_grid():
    """``zcdp_epsilon_tight`` (Canonne, Kamath, Steinke 2020, Proposition 12, at the
    optimal real order): never below the 50-digit bound at the float order it uses (with
    ``_TIGHT_MARGIN = 0`` this fails: the float sum is below the bound there), within
    ``2^-40`` of its terms' size of it, never above the 50-digit optimum found by mpmath's
    own root finder by more than that, and never above the grid conversion
    ``rdp_to_epsilon`` of the same curve, nor above :func:`zcdp_epsilon`.  The mechanism
    answers it, or the grid's where the grid could be lower."""
    from dpacct.accountant.rdp.conversion import rdp_to_epsilon
    from dpacct.mechanisms.primitives.generic import (
        _optimal_log_order,
        zcdp_epsilon,
        zcdp_epsilon_tight,
    )

    def mp_bound(rho, delta, a):
        a, rho = mp.mpf(a), mp.mpf(rho)
        return a * rho + mp.log1p(-1 / a) - (mp.log(delta) + mp.log(a)) / (a - 1)

    rng = np.random.default_rng(20261201)
    cases = [(1.0, 1e-6), (0.1, 1e-5), (1e-12, 1e-15), (50.0, 1e-3), (1e4, 1e-9)]
    cases += [(float(10 ** rng.uniform(-10, 4)), float(10 ** rng.uniform(-15, -1)))
              for _ in range(60)]
    with mp.workdps(50):
        for rho, delta in cases:
            eps, scale = zcdp_epsilon_tight(rho, delta)
            a = 1.0 + math.exp(_optimal_log_order(rho, -math.log(delta)))
            at_a = max(mp_bound(rho, mp.mpf(delta), a), 0)  # epsilon is floored at 0
            assert eps >= at_a, (rho, delta)
            assert eps - at_a <= 2.0**-40 * scale, (rho, delta)
            star = mp.findroot(lambda x, r=rho, d=delta: r * (x - 1) ** 2 + mp.log(x) + mp.log(d),
                               (mp.mpf(1) + 1e-30, mp.mpf(a) * 4), solver="anderson")
            assert eps - max(mp_bound(rho, mp.mpf(delta), star), 0) <= 2.0**-40 * scale
            grid = rdp_to_epsilon(lambda x, r=rho: r * x, delta)
            assert eps <= grid and eps <= zcdp_epsilon(rho, delta), (rho, delta)
            assert ZCDPMechanism(rho).epsilon(delta) == min(eps, grid)
