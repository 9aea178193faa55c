"""Tests for ``dpacct.mechanisms.primitives.randomized_response``.

References are computed independently with mpmath (40 digits) from the output
distributions of k-ary randomized response themselves: hockey-stick divergences and
Renyi divergences as finite sums over the ``k`` outputs, the trade-off curve by the
Neyman-Pearson lemma, and the 50-fold composition of binary randomized response as a
binomial sum.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant import compose
from dpacct.accountant.laws.loss_law import AtomicLossLaw
from dpacct.mechanisms import RandomizedResponse

mp.mp.dps = 40


# ----------------------------------------------------------------------------------
# independent references
# ----------------------------------------------------------------------------------
def rr_outputs(p, k, truth):
    """Output distribution on input ``truth``: p on it, (1-p)/(k-1) on each other value."""
    p = mp.mpf(p)
    return [p if y == truth else (1 - p) / (k - 1) for y in range(k)]


def mp_delta(p, k, eps):
    e = mp.exp(mp.mpf(eps))
    out = mp.mpf(0)
    for v, w in ((0, 1), (1, 0)):  # both orders of the two inputs
        P, Q = rr_outputs(p, k, v), rr_outputs(p, k, w)
        out = max(out, mp.fsum(max(mp.mpf(0), a - e * b) for a, b in zip(P, Q, strict=True)))
    return out


def mp_renyi(p, k, alpha):
    a = mp.mpf(alpha)
    out = []
    for v, w in ((0, 1), (1, 0)):
        P, Q = rr_outputs(p, k, v), rr_outputs(p, k, w)
        s = mp.fsum(x**a * y ** (1 - a) for x, y in zip(P, Q, strict=True))
        out.append(mp.log(s) / (a - 1))
    return max(out)


def mp_tradeoff(p, k, fpr):
    """Neyman-Pearson: reject in order of decreasing likelihood ratio P/Q, randomising."""
    P, Q = rr_outputs(p, k, 0), rr_outputs(p, k, 1)  # alternative P (input 0), null Q
    order = sorted(range(k), key=lambda y: -P[y] / Q[y])
    a_left = mp.mpf(fpr)
    power = mp.mpf(0)
    for y in order:
        take = min(a_left, Q[y])
        power += take * P[y] / Q[y]
        a_left -= take
        if a_left <= 0:
            break
    return 1 - power


# ----------------------------------------------------------------------------------
# convention and exact curve
# ----------------------------------------------------------------------------------
def test_convention_and_epsilon0():
    rr = RandomizedResponse(p=0.6, k=5)
    assert rr.q == pytest.approx(0.1, rel=1e-15, abs=0)
    # p = e^eps0 / (e^eps0 + k - 1)  (k-RR of Kairouz, Bonawitz, Ramage 2016)
    assert rr.epsilon0 == pytest.approx(math.log(6.0), rel=1e-15, abs=0)
    e0 = rr.epsilon0
    assert math.exp(e0) / (math.exp(e0) + 4) == pytest.approx(0.6, rel=1e-14, abs=0)
    # pure epsilon0-DP: delta = 0 from the certified pure epsilon (epsilon0 four ulps up:
    # the float epsilon0 may lie below the true one), and of the order of the curve's
    # rounding at the float epsilon0 itself; delta just below is positive
    assert rr.delta(rr.pure_epsilon) == 0.0
    assert 0.0 <= rr.delta(e0) <= rr.p * 8 * math.ulp(e0)
    assert rr.delta(e0 * (1 - 1e-9)) > 0


@pytest.mark.parametrize(
    "p,k", [(0.75, 2), (0.51, 2), (0.999, 2), (0.5, 3), (0.2, 7), (0.9, 10), (0.01, 1000)]
)
def test_exact_delta_matches_mpmath(p, k):
    rr = RandomizedResponse(p=p, k=k)
    e0 = rr.epsilon0
    for eps in (0.0, 0.1 * e0, 0.5 * e0, 0.9 * e0, 0.999999 * e0, 1.5 * e0):
        ref = float(mp_delta(p, k, eps))
        assert rr.delta(eps) == pytest.approx(ref, rel=1e-9, abs=1e-300)
    # at eps = float(epsilon0) the true delta is of the order of its rounding error: the
    # answer is at or above it (an upper curve) and within the curve's margin (epsilon0
    # read four ulps up)
    truth = float(mp_delta(p, k, e0))
    assert truth * (1 - 1e-12) <= rr.delta(e0) <= truth + p * 8 * math.ulp(e0)


def test_exact_delta_equals_atomic_law_curve():
    rr = RandomizedResponse(p=0.4, k=4)
    law, law2 = rr._loss_laws()
    assert law is law2
    assert isinstance(law, AtomicLossLaw)
    assert law.lattice == pytest.approx(rr.epsilon0, rel=1e-15, abs=0)
    np.testing.assert_allclose(law.losses / rr.epsilon0, [-1.0, 0.0, 1.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(law.p, [rr.q, 2 * rr.q, 0.4], rtol=1e-15, atol=0)
    assert law.p.sum() + law.inf_mass == pytest.approx(1.0, rel=1e-15, abs=0)
    assert law._q.sum() + law.q_neg_inf_mass == pytest.approx(1.0, rel=1e-14, abs=0)
    eps = np.linspace(0, 1.2 * rr.epsilon0, 13)
    np.testing.assert_allclose(law.hockey_stick(eps), rr.delta(eps), rtol=1e-12, atol=1e-15)
    # binary: no zero-loss atom
    assert RandomizedResponse(0.8)._loss_laws()[0].p.size == 2


# ----------------------------------------------------------------------------------
# RDP
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("p,k", [(0.75, 2), (0.55, 2), (0.5, 3), (0.3, 5), (0.97, 4)])
def test_rdp_matches_mpmath_sum_at_real_orders(p, k):
    alphas = [1.5, 2.0, 3.7, 10.2, 64.0]
    got = RandomizedResponse(p=p, k=k).rdp(alphas)
    ref = [float(mp_renyi(p, k, a)) for a in alphas]
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=0)


def test_rdp_extremes():
    rr = RandomizedResponse(p=0.99, k=3)
    alphas = np.array([1 + 1e-10, 1.001, 2.0, 1e3, 1e4, np.inf])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        r = rr.rdp(alphas)
    assert np.all(np.isfinite(r))
    assert np.all(np.diff(r) >= -1e-12)
    assert r[-1] == pytest.approx(rr.epsilon0, rel=1e-15, abs=0)
    # alpha -> 1: KL divergence (p - q) eps0
    kl = (0.99 - rr.q) * rr.epsilon0
    assert r[0] == pytest.approx(kl, rel=1e-7, abs=0)
    assert float(mp_renyi(0.99, 3, 1e4)) == pytest.approx(r[4], rel=1e-10, abs=0)


# ----------------------------------------------------------------------------------
# trade-off
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("p,k", [(0.75, 2), (0.5, 4), (0.2, 9)])
def test_tradeoff_matches_neyman_pearson(p, k):
    rr = RandomizedResponse(p=p, k=k)
    fprs = [0.0, 1e-3, 0.05, rr.q, 0.3, 0.5, 1 - p, 0.8, 0.99, 1.0]
    got = rr.tradeoff(fprs)
    ref = [float(mp_tradeoff(p, k, a)) for a in fprs]
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-15)


def test_tradeoff_symmetric_and_dual_to_delta():
    rr = RandomizedResponse(p=0.3, k=6)
    a = np.linspace(0, 1, 201)
    t = rr.tradeoff(a)
    np.testing.assert_allclose(rr.tradeoff(t), a, rtol=0, atol=1e-12)
    # the generic dual (a lower bound) never exceeds the exact curve
    from dpacct.accountant.queries.tradeoff import tradeoff_from_delta

    dual = tradeoff_from_delta(rr.delta, a)
    assert np.all(dual <= t + 1e-12)
    np.testing.assert_allclose(dual, t, rtol=0, atol=2e-3)


# ----------------------------------------------------------------------------------
# PLD and composition
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("p,k", [(0.75, 2), (0.5, 3), (0.2, 12)])
def test_pld_brackets_exact_curve(p, k):
    rr = RandomizedResponse(p=p, k=k)
    eps = np.linspace(0, 1.2 * rr.epsilon0, 25)
    exact = rr.delta(eps)
    up = np.maximum(*[pld.delta(eps) for pld in rr.pld(pessimistic=True)])
    lo = np.maximum(*[pld.delta(eps) for pld in rr.pld(pessimistic=False)])
    assert np.all(lo <= exact + 1e-12)
    assert np.all(exact <= up + 1e-12)
    # on the lattice the discretisation is exact (the engine pads pessimistic PLD deltas
    # by a relative 1e-10 against round-off)
    np.testing.assert_allclose(up, exact, rtol=2e-10, atol=1e-15)
    np.testing.assert_allclose(lo, exact, rtol=2e-10, atol=1e-15)


def mp_composed_delta(p, count, eps):
    """Exact delta of ``count`` binary RR(p): the loss is (2j - count) eps0, j ~ Bin."""
    p = mp.mpf(p)
    e0 = mp.log(p / (1 - p))
    e = mp.mpf(eps)
    total = mp.mpf(0)
    for j in range(count + 1):
        loss = (2 * j - count) * e0
        if loss > e:
            total += mp.binomial(count, j) * p**j * (1 - p) ** (count - j) * (1 - mp.exp(e - loss))
    return total


def mp_composed_epsilon(p, count, delta):
    lo, hi = mp.mpf(0), mp.mpf(count) * mp.log(mp.mpf(p) / (1 - mp.mpf(p)))
    for _ in range(120):
        mid = (lo + hi) / 2
        if mp_composed_delta(p, count, mid) > delta:
            lo = mid
        else:
            hi = mid
    return float(hi)


def test_composition_of_50_rr_matches_binomial_sum():
    run = compose([RandomizedResponse(0.75)], counts=[50])
    for eps in (0.0, 1.0, 3.0, 7.0, 12.0, 20.0):
        ref = float(mp_composed_delta(0.75, 50, eps))
        assert run.delta(eps) == pytest.approx(ref, rel=1e-9, abs=1e-13)
    exact = mp_composed_epsilon(0.75, 50, 1e-6)
    lo, hi = run.epsilon_bounds(1e-6)
    assert lo <= exact + 1e-9
    assert hi >= exact - 1e-9
    assert hi - lo <= 1e-6 * exact
    assert run.epsilon(1e-6) >= exact - 1e-9


def test_composition_k_ary_matches_trinomial_sum():
    p, k, count = 0.5, 3, 12
    rr = RandomizedResponse(p, k)
    run = compose([rr], counts=[count])
    P = [mp.mpf(p), (1 - mp.mpf(p)) / 2, (1 - mp.mpf(p)) / 2]  # losses +e0, -e0, 0
    e0 = mp.log(P[0] / P[1])
    for eps in (0.0, 1.0, 4.0):
        ref = mp.mpf(0)
        for i in range(count + 1):
            for j in range(count + 1 - i):
                loss = (i - j) * e0
                if loss > eps:
                    w = mp.factorial(count) / (
                        mp.factorial(i) * mp.factorial(j) * mp.factorial(count - i - j)
                    )
                    ref += w * P[0] ** i * P[1] ** j * P[2] ** (count - i - j) * (
                        1 - mp.exp(eps - loss)
                    )
        assert run.delta(eps) == pytest.approx(float(ref), rel=1e-9, abs=1e-13)


# ----------------------------------------------------------------------------------
# monotonicity
# ----------------------------------------------------------------------------------
def test_monotonicity():
    rr = RandomizedResponse(0.7, 3)
    d = rr.delta(np.linspace(0, 2, 41))
    assert np.all(np.diff(d) <= 0)
    e = rr.epsilon(np.array([1e-9, 1e-4, 0.01, 0.1, 0.5]))
    assert np.all(np.diff(e) <= 0)
    # more noise (p closer to 1/k) -> smaller epsilon
    eps = [RandomizedResponse(p).epsilon(1e-6) for p in (0.95, 0.8, 0.6, 0.51)]
    assert np.all(np.diff(eps) < 0)
    # more values at fixed p -> larger epsilon0 (the truth stands out more)
    e0 = [RandomizedResponse(0.6, k).epsilon0 for k in (2, 3, 10, 100)]
    assert np.all(np.diff(e0) > 0)


# ----------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "p,k",
    [(0.5, 2), (0.3, 2), (1.0, 2), (1.5, 2), (0.0, 2), (-0.1, 2), (0.25, 4), (0.1, 10),
     (float("nan"), 2), (float("inf"), 2)],
)
def test_bad_p(p, k):
    with pytest.raises(ValueError, match=r"\bp\b"):
        RandomizedResponse(p=p, k=k)


@pytest.mark.parametrize("k", [1, 0, -3, 2.5, float("nan"), float("inf")])
def test_bad_k_value(k):
    with pytest.raises(ValueError, match=r"\bk\b"):
        RandomizedResponse(p=0.9, k=k)


@pytest.mark.parametrize("k", ["3", True, None])
def test_bad_k_type(k):
    with pytest.raises(TypeError, match=r"\bk\b"):
        RandomizedResponse(p=0.9, k=k)


@pytest.mark.parametrize("p", ["0.7", True, None])
def test_bad_p_type(p):
    with pytest.raises(TypeError, match=r"\bp\b"):
        RandomizedResponse(p=p)


def test_k_integral_float_and_numpy_accepted():
    assert RandomizedResponse(0.5, 3.0).k == 3
    assert isinstance(RandomizedResponse(0.5, np.int64(3)).k, int)
    assert RandomizedResponse(0.5, 3.0) == RandomizedResponse(0.5, 3)
    assert repr(RandomizedResponse(0.75)) == "RandomizedResponse(p=0.75, k=2)"
    assert RandomizedResponse(0.75).route == "exact"


@settings(max_examples=300, deadline=None)
@given(
    k=st.sampled_from([2, 3, 4, 10, 1000, 10**6]),
    u=st.floats(0.0, 1.0, exclude_min=True, exclude_max=True),
    scale=st.integers(0, 15),
)
def test_epsilon0_floats_are_the_rounded_80_digit_log(k, u, scale):
    """``_rr_epsilon0`` (a 60-digit decimal logarithm) returns the 80-digit mpmath value
    rounded to nearest and one ulp either side, near ``p = 1/k`` too (where the float
    ``p k - 1`` cancels)."""
    from dpacct.mechanisms.primitives.randomized_response import _rr_epsilon0

    p = 1.0 / k + (1.0 - 1.0 / k) * u * 10.0**-scale
    if not (1.0 / k < p < 1.0):
        return
    with mp.workdps(80):
        pm = mp.mpf(p)
        truth = mp.log(pm * (k - 1) / (1 - pm))
        nearest, below, above = _rr_epsilon0(p, k)
        assert nearest == float(truth)
        assert mp.mpf(below) < truth < mp.mpf(above)
        assert below == math.nextafter(nearest, -math.inf)
        assert above == math.nextafter(nearest, math.inf)


def test_epsilon0_ignores_the_callers_decimal_context():
    """Review 44: the 60-digit logarithm runs in its own decimal context, so a caller's
    traps or exponent limits neither raise nor change the floats."""
    import decimal

    from dpacct.mechanisms.primitives.randomized_response import _rr_epsilon0

    want = _rr_epsilon0(0.9, 10**6)
    with decimal.localcontext() as ctx:
        ctx.traps[decimal.Inexact] = True
        ctx.traps[decimal.Rounded] = True
        ctx.Emax = 3
        ctx.rounding = decimal.ROUND_FLOOR
        assert _rr_epsilon0(0.9, 10**6) == want
        assert float(RandomizedResponse(p=0.6, k=3).delta(0.5)) > 0.0
