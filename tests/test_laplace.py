"""Tests for ``dpacct.mechanisms.primitives.laplace``.

References are computed independently of the code under test: the hockey-stick
divergence and the Renyi divergence of ``Lap(1, b)`` and ``Lap(0, b)`` by mpmath
quadrature (40 digits) over the real line split at 0, 1 (and at the point where the
integrand has a kink), the trade-off curve from the Laplace distribution functions, and
the 100-fold composition from a separate, simple pointwise-rounding PLD in numpy.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from scipy import signal

from dpacct.accountant import compose
from dpacct.mechanisms import LaplaceMechanism
from dpacct.mechanisms.primitives.laplace import LaplaceLossLaw, laplace_delta

mp.mp.dps = 40


# ----------------------------------------------------------------------------------
# independent references
# ----------------------------------------------------------------------------------
def lap_pdf(x, centre, b):
    return mp.exp(-abs(x - centre) / b) / (2 * b)


def mp_hockey_stick(b: float, eps: float) -> float:
    """max over both directions of int (p - e^eps q)_+ for Lap(1, b) vs Lap(0, b)."""
    b, e = mp.mpf(b), mp.mpf(eps)
    best = mp.mpf(0)
    for cp, cq in ((1, 0), (0, 1)):  # remove, add

        def f(x, cp=cp, cq=cq):
            return max(mp.mpf(0), lap_pdf(x, cp, b) - mp.exp(e) * lap_pdf(x, cq, b))

        # kink where p = e^eps q inside (0, 1): |x - cq| - |x - cp| = b eps
        kink = (b * e + 1) / 2 if cp == 1 else (1 - b * e) / 2
        pts = [-mp.inf, 0]
        if 0 < kink < 1:
            pts.append(kink)
        pts += [1, mp.inf]
        best = max(best, mp.quad(f, pts))
    return float(best)


def mp_renyi(b: float, alpha: float) -> float:
    """max over directions of log(int p^alpha q^(1-alpha)) / (alpha - 1)."""
    b, a = mp.mpf(b), mp.mpf(alpha)
    out = []
    for cp, cq in ((1, 0), (0, 1)):

        def f(x, cp=cp, cq=cq):
            return lap_pdf(x, cp, b) ** a * lap_pdf(x, cq, b) ** (1 - a)

        out.append(mp.log(mp.quad(f, [-mp.inf, 0, 1, mp.inf])) / (a - 1))
    return float(max(out))


# ----------------------------------------------------------------------------------
# exact curve
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("b", [0.5, 1.0, 3.0, 10.0])
def test_exact_delta_matches_mpmath_hockey_stick(b):
    m = LaplaceMechanism(b=b)
    for frac in (0.0, 0.1, 0.5, 0.9, 0.999):
        eps = frac / b
        ref = mp_hockey_stick(b, eps)
        assert m.delta(eps) == pytest.approx(ref, rel=1e-9, abs=1e-300)
    # 1 / b as a float may lie an ulp below the pure epsilon, where delta is ~1e-17;
    # the rounded-up curve answers at most a few ulps of epsilon above it
    # (the quadrature reference is itself within 1e-40 of 0 where the truth is 0)
    ref = mp_hockey_stick(b, 1.0 / b)
    assert ref - 1e-40 <= m.delta(1.0 / b) <= ref + 4 * np.spacing(1.0 / b)
    assert m.delta(m.pure_epsilon) == 0.0
    assert m.delta(2.0 / b) == 0.0


def test_exact_delta_vectorised_and_small_deltas_keep_precision():
    m = LaplaceMechanism(b=2.0)
    eps = np.array([0.0, 0.2, 0.49999999])
    out = m.delta(eps)
    assert out.shape == (3,)
    np.testing.assert_allclose(out, -np.expm1((eps - 0.5) / 2), rtol=1e-14, atol=0)
    # delta = 5e-9 near eps = 1/b keeps its digits
    assert out[2] == pytest.approx(mp_hockey_stick(2.0, 0.49999999), rel=1e-7, abs=0)


def test_epsilon_inverts_exact_curve():
    m = LaplaceMechanism(b=1.0)
    for delta in (1e-12, 1e-6, 1e-3, 0.2):
        eps = m.epsilon(delta)
        expected = 1.0 + 2.0 * math.log1p(-delta)  # 1 - e^{(eps-1)/2} = delta
        assert eps == pytest.approx(expected, rel=1e-11, abs=1e-13)
        assert m.delta(eps) <= delta * (1 + 1e-9)
        lo, hi = m.epsilon_bounds(delta)
        assert lo <= expected + 1e-12 and hi >= expected - 1e-12
        assert hi - lo <= 1e-11


# ----------------------------------------------------------------------------------
# RDP
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("b", [0.7, 2.0, 10.0])
def test_rdp_matches_mpmath_integral_at_real_orders(b):
    alphas = [1.5, 2.0, 3.7, 10.2, 64.0]
    got = LaplaceMechanism(b=b).rdp(alphas)
    ref = [mp_renyi(b, a) for a in alphas]
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=0)


def test_rdp_large_orders_no_overflow_and_monotone():
    m = LaplaceMechanism(b=0.05)  # epsilon0 = 20
    alphas = np.array([1.0001, 1.01, 2.0, 50.0, 1e3, 1e4, np.inf])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        r = m.rdp(alphas)
    assert np.all(np.isfinite(r))
    assert np.all(np.diff(r) >= -1e-12)
    assert r[-1] == pytest.approx(20.0, rel=1e-15, abs=0)
    assert r[-2] <= 20.0
    # alpha -> 1: KL divergence m + e^{-m} - 1 (also the limit of Mironov's formula)
    kl = 20.0 + math.exp(-20.0) - 1.0
    assert r[0] == pytest.approx(kl, rel=1e-3, abs=0)


def test_rdp_near_one_matches_kl():
    b = 2.0
    m = 1 / b
    got = float(LaplaceMechanism(b=b).rdp(1.0 + 1e-9))
    assert got == pytest.approx(m + math.exp(-m) - 1.0, rel=1e-6, abs=0)


# ----------------------------------------------------------------------------------
# loss law and PLD
# ----------------------------------------------------------------------------------
def test_loss_law_is_a_valid_pair():
    law = LaplaceLossLaw(b=1.5)
    x = np.array([-np.inf, -1.0, -1 / 1.5, -0.3, 0.0, 0.4, 1 / 1.5, 2.0, np.inf])
    np.testing.assert_allclose(law.cdf_p(x) + law.sf_p(x), 1.0, rtol=0, atol=1e-15)
    np.testing.assert_allclose(law.cdf_q(x) + law.sf_q(x), 1.0, rtol=0, atol=1e-15)
    # atoms: P(L = m) = 1/2, P(L = -m) = e^{-m}/2, Q(L = m) = e^{-m}/2
    m = 1 / 1.5
    below = np.nextafter(m, -np.inf)
    assert float(law.sf_p(np.array([below]))[0]) == pytest.approx(0.5, rel=1e-12, abs=0)
    assert float(law.cdf_p(np.array([-m]))[0]) == pytest.approx(
        math.exp(-m) / 2, rel=1e-12, abs=0
    )
    assert float(law.sf_q(np.array([below]))[0]) == pytest.approx(
        math.exp(-m) / 2, rel=1e-12, abs=0
    )
    # dQ = e^{-L} dP on the continuous part: Q((l1, l2]) = int e^{-l} dP(l)
    l1, l2 = -0.2, 0.3
    mq = float(law.cdf_q(np.array([l2]))[0] - law.cdf_q(np.array([l1]))[0])
    dens = lambda t: mp.exp(-t) * mp.exp(t / 2 - m / 2) / 4  # noqa: E731
    assert mq == pytest.approx(float(mp.quad(dens, [l1, l2])), rel=1e-12, abs=0)
    # the law's curve is the exact curve
    eps = np.array([0.0, 0.1, 0.5, 0.66, 1.0])
    np.testing.assert_allclose(
        law.hockey_stick(eps), laplace_delta(1.5, eps), rtol=1e-13, atol=1e-16
    )
    assert law.lattice is None


def test_laws_are_shared_between_directions():
    rem, add = LaplaceMechanism(b=3.0)._loss_laws()
    assert rem is add


@pytest.mark.parametrize("b", [0.5, 2.0, 10.0])
def test_pld_brackets_exact_curve(b):
    m = LaplaceMechanism(b=b)
    eps = np.linspace(0.0, 1.1 / b, 12)
    exact = m.delta(eps)
    up = np.maximum(*[pld.delta(eps) for pld in m.pld(pessimistic=True)])
    lo = np.maximum(*[pld.delta(eps) for pld in m.pld(pessimistic=False)])
    assert np.all(lo <= exact + 1e-12)
    assert np.all(exact <= up + 1e-12)


def test_pld_gap_shrinks_with_tol():
    m = LaplaceMechanism(b=1.0)
    eps = np.array([0.0, 0.25, 0.5, 0.75, 0.95])

    def gap(tol):
        up = m.pld(pessimistic=True, tol=tol)[0].delta(eps)
        lo = m.pld(pessimistic=False, tol=tol)[0].delta(eps)
        return float(np.max(up - lo))

    g_coarse, g_fine = gap(1e-2), gap(1e-4)
    # the optimistic side is only first order in the grid step here: the atom of mass
    # 1/2 at the top of the support (L = 1/b) must be rounded down to a grid node
    assert g_fine < 0.5 * g_coarse
    assert g_fine < 2e-2
    # the pessimistic side alone is second order and already tight
    up = m.pld(pessimistic=True, tol=1e-4)[0].delta(eps)
    np.testing.assert_allclose(up, m.delta(eps), rtol=0, atol=2e-5)


# ----------------------------------------------------------------------------------
# composition
# ----------------------------------------------------------------------------------
def _reference_composition_eps(b: float, count: int, delta: float, h: float) -> tuple[float, float]:
    """Independent bracket of epsilon for ``count`` Laplace mechanisms.

    The loss is rounded pointwise down (resp. up) to the grid ``h Z`` -- the two atoms
    at +-1/b lie on the grid -- which can only lower (raise) delta at every epsilon, also
    after composition (delta(eps) = E_P[(1 - e^{eps - L})_+] is increasing in L).
    """
    m = 1.0 / b
    n = round(m / h)
    assert abs(n * h - m) < 1e-12
    nodes = np.arange(-n, n + 1) * h
    cdf = 0.5 * np.exp(0.5 * (nodes - m))  # P(L <= l) on [-m, m)
    bins = np.diff(cdf)  # P-mass of (l_j, l_{j+1}) (continuous part)
    down = np.zeros(2 * n + 1)
    up = np.zeros(2 * n + 1)
    down[:-1] += bins
    up[1:] += bins
    for arr in (down, up):
        arr[0] += 0.5 * math.exp(-m)  # atom at -m
        arr[-1] += 0.5  # atom at +m

    def power(p, k):
        out, base = None, p
        while k:
            if k & 1:
                out = base if out is None else np.maximum(signal.fftconvolve(out, base), 0)
            k >>= 1
            if k:
                base = np.maximum(signal.fftconvolve(base, base), 0)
        return out

    res = []
    for arr in (down, up):
        pmf = power(arr, count)
        losses = (np.arange(pmf.size) - count * n) * h

        def delta_at(e, pmf=pmf, losses=losses):
            sel = losses > e
            return float(np.sum(pmf[sel] * -np.expm1(e - losses[sel])))

        lo_e, hi_e = 0.0, count * m
        for _ in range(80):
            mid = 0.5 * (lo_e + hi_e)
            if delta_at(mid) > delta:
                lo_e = mid
            else:
                hi_e = mid
        res.append(hi_e)
    return res[0], res[1]


@pytest.fixture(scope="module")
def composed_laplace():
    run = compose([LaplaceMechanism(10.0)], counts=[100])
    ref_lo, ref_hi = _reference_composition_eps(10.0, 100, 1e-6, h=0.1 / 4000)
    return run, run.epsilon_bounds(1e-6), (ref_lo, ref_hi)


def test_composition_of_100_laplace_is_bracketed(composed_laplace):
    run, (lo, hi), (ref_lo, ref_hi) = composed_laplace
    assert 0 < lo <= hi
    assert ref_hi - ref_lo < 1e-3  # the reference itself is tight (width <= 200 h)
    # both brackets contain the true epsilon, so they overlap; the upper bound is tight
    assert hi >= ref_lo - 1e-9
    assert lo <= ref_hi + 1e-9
    assert hi <= 1.005 * ref_hi
    assert run.epsilon(1e-6) == pytest.approx(hi, rel=1e-12, abs=0)
    # the composed delta is an upper bound: at the reference's lower epsilon it is >= delta
    assert run.delta(ref_lo) >= 1e-6 * (1 - 1e-6)


def test_composition_of_100_laplace_bracket_within_half_percent(composed_laplace):
    # atoms at +-1/b sit on grid nodes (the law's anchor), so both ends are tight
    _, (lo, hi), (ref_lo, _) = composed_laplace
    assert hi <= 1.001 * lo
    assert lo >= 0.999 * ref_lo


# ----------------------------------------------------------------------------------
# monotonicity
# ----------------------------------------------------------------------------------
def test_monotonicity():
    m = LaplaceMechanism(b=1.0)
    d = m.delta(np.linspace(0, 1.2, 50))
    assert np.all(np.diff(d) <= 0)
    e = m.epsilon(np.array([1e-10, 1e-6, 1e-3, 0.1, 0.3]))
    assert np.all(np.diff(e) < 0)
    eps_by_b = [LaplaceMechanism(b=b).epsilon(1e-5) for b in (0.5, 1.0, 2.0, 8.0)]
    assert np.all(np.diff(eps_by_b) < 0)
    r = [float(LaplaceMechanism(b=b).rdp(4.0)) for b in (0.5, 1.0, 2.0, 8.0)]
    assert np.all(np.diff(r) < 0)


def test_tradeoff_exact_matches_neyman_pearson():
    b = 1.3
    m = LaplaceMechanism(b=b)
    bm = mp.mpf(b)
    for t in (-2.0, -0.4, 0.0, 0.3, 0.8, 1.0, 1.7, 4.0):
        tm = mp.mpf(t)
        # reject Q = Lap(0,b) when x > t: alpha = Q(X > t), beta = P(X <= t), P = Lap(1,b)
        a = mp.exp(-tm / bm) / 2 if t >= 0 else 1 - mp.exp(tm / bm) / 2
        beta = mp.exp((tm - 1) / bm) / 2 if t <= 1 else 1 - mp.exp(-(tm - 1) / bm) / 2
        assert float(m.tradeoff(float(a))) == pytest.approx(float(beta), rel=1e-12, abs=1e-15)
    assert float(m.tradeoff(0.0)) == pytest.approx(1.0, abs=0)
    assert float(m.tradeoff(1.0)) == pytest.approx(0.0, abs=1e-15)
    grid = np.linspace(0, 1, 101)
    t = m.tradeoff(grid)
    assert np.all(np.diff(t) <= 1e-15)
    # symmetric trade-off: T(T(a)) = a
    np.testing.assert_allclose(m.tradeoff(t), grid, rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), -float("inf")])
def test_bad_b_value_error(bad):
    with pytest.raises(ValueError, match=r"\bb\b"):
        LaplaceMechanism(b=bad)


@pytest.mark.parametrize("bad", ["1.0", None, True, [1.0]])
def test_bad_b_type_error(bad):
    # booleans are refused as non-numbers, like every parameter of the library
    with pytest.raises(TypeError, match=r"\bb\b"):
        LaplaceMechanism(b=bad)


def test_query_validation():
    m = LaplaceMechanism(b=1.0)
    with pytest.raises(ValueError, match="delta"):
        m.epsilon(1.0)
    with pytest.raises(ValueError, match="epsilon"):
        m.delta(-0.1)
    with pytest.raises(ValueError, match="alpha"):
        m.rdp(1.0)


def test_value_semantics():
    assert LaplaceMechanism(2.0) == LaplaceMechanism(b=2)
    assert hash(LaplaceMechanism(2.0)) == hash(LaplaceMechanism(2.0))
    assert repr(LaplaceMechanism(2)) == "LaplaceMechanism(b=2.0)"
    with pytest.raises(AttributeError):
        LaplaceMechanism(2.0).b = 3.0  # frozen
    assert LaplaceMechanism(1.0).route == "exact"


def test_delta_and_epsilon_never_below_the_closed_form_at_60_digits():
    """Near ``eps = 1/b`` the plain float curve lost ``eps - 1/b`` to rounding: 913 of
    2 000 such deltas were below the truth (33 % at delta ~ 1e-17), and ``1 / b`` itself
    rounds down for b = 3.  The curve is now rounded up (``laplace_delta_up``)."""
    from dpacct.mechanisms.primitives.laplace import laplace_epsilon0_up

    def exact(b, eps):
        with mp.workdps(60):
            x = mp.mpf(eps) - 1 / mp.mpf(b)
            return mp.mpf(0) if x >= 0 else 1 - mp.exp(x / 2)

    rng = np.random.default_rng(20261126)
    for _ in range(400):
        b = float(10 ** rng.uniform(-1.5, 2))
        m = LaplaceMechanism(b=b)
        near = rng.random() < 0.2
        eps = float(np.nextafter(1 / b, 0)) if near else float(rng.uniform(0, 1.2) / b)
        assert float(m.delta(eps)) >= exact(b, eps), (b, eps)
        delta = float(10 ** rng.uniform(-14, -0.5))
        assert exact(b, float(m.epsilon(delta))) <= delta, (b, delta)
        assert exact(b, laplace_epsilon0_up(b)) == 0  # at or above the real 1 / b


def test_closed_form_bracket_contains_the_truth_and_is_inside_the_bisection():
    """``laplace_epsilon_bracket`` against 60-digit ``1/b + 2 log(1 - delta)`` and against
    the router's bisection of the same rounded-up curve (the route it replaced): the
    upper end is never above the bisection's, the lower end never above the truth (the
    bisection's lower end was, in 137 of 4 880 random cases, by up to an ulp of ``1/b``;
    with the lower end read off ``laplace_delta_up`` again this test fails at b = 1e-6,
    delta = 1e-10), the bracket at most a few ulps wide."""
    from dpacct.accountant.numerics import invert_decreasing
    from dpacct.mechanisms.primitives.laplace import (
        laplace_delta_up,
        laplace_epsilon0_up,
        laplace_epsilon_bracket,
    )

    rng = np.random.default_rng(20261201)
    cases = [(1e-6, 1e-10), (1.0, 1e-6), (20.0, 1e-6), (3.0, 0.5), (1e-300, 1e-300)]
    cases += [(float(10 ** rng.uniform(-12, 12)), float(10 ** rng.uniform(-300, -1e-3)))
              for _ in range(300)]
    for b, delta in cases:
        lo, hi = laplace_epsilon_bracket(b, delta)
        with mp.workdps(60):
            truth = max(1 / mp.mpf(b) + 2 * mp.log1p(-mp.mpf(delta)), 0)
        assert lo <= truth <= hi, (b, delta, lo, hi)
        _, old_hi = invert_decreasing(lambda e, b=b: laplace_delta_up(b, e), delta,
                                      laplace_epsilon0_up(b))
        assert hi <= old_hi, (b, delta)
        assert hi == laplace_epsilon0_up(b) or laplace_delta_up(b, np.array([hi]))[0] <= delta
        # (24 ulps: laplace_delta_up's expm1 is taken up by 2^-49 for numpy's four-ulp
        # vectorised expm1, which moves hi by up to ~10 ulps of 1/b at delta 4e-8)
        assert hi - lo <= 24 * math.ulp(laplace_epsilon0_up(b)), (b, delta, lo, hi)
        m = LaplaceMechanism(b=b)
        assert m.epsilon(delta) == hi and tuple(m.epsilon_bounds(delta)) == (lo, hi)
