"""Numerical extremes of DP-SGD accounting: finite, ordered, never above the RDP bound.

Each case was a regression at some point of development (a 21-second run, an upper
bound inflated to 32 by round-off feeding the grid window, a too-fine grid).
"""

import functools
import math
import warnings

import mpmath as mp
import numpy as np
import pytest
from oracles import (
    gaussian_delta,
    gaussian_epsilon,
    invert_delta,
    laplace_delta,
    subsampled_gaussian_rdp,
)

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.rdp.conversion import rdp_to_epsilon
from dpacct.mechanisms import GaussianMechanism, ReplaceOneGaussianMechanism

CASES = [
    # (sample_rate, sigma, steps, delta)
    (0.01, 0.3, 10_000, 1e-5),  # very skewed per-step loss
    (1e-7, 1.0, 10**8, 1e-5),  # tiny sampling rate, huge step count
    (0.01, 1.0, 10_000, 1e-15),  # tiny delta
    (1.0, 1e4, 10, 1e-5),  # no subsampling, huge noise
    (0.5, 0.5, 100, 1e-10),
    (0.001, 5.0, 10**6, 1e-9),
    (1e-4, 0.6, 10**5, 1e-12),  # tail-dominated
]


@pytest.mark.parametrize("q, sigma, steps, delta", CASES)
def test_extreme_dpsgd(q, sigma, steps, delta):
    run = compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[steps])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = run.epsilon_bounds(delta)
    assert math.isfinite(hi) and 0.0 <= lo <= hi
    assert hi == run.epsilon(delta)
    # the RDP bound is sound too: the reported epsilon never exceeds it
    assert hi <= rdp_to_epsilon(run._rdp_curve, delta) * (1 + 1e-9)
    # and the answer is consistent with delta(epsilon), up to the discretisation
    # tolerance (the two queries may use different tail budgets)
    assert run.delta(hi) <= delta * (1 + 1e-3)


def test_subsampling_a_composition_uses_the_general_bound_and_never_hurts():
    inner = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], counts=[1000])
    outer = poisson_subsample(inner, 0.5)
    assert outer.route == "rdp"
    eps = outer.epsilon(1e-6)
    assert math.isfinite(eps)
    # amplification by subsampling can only lower the RDP bound of the inner run
    assert eps <= rdp_to_epsilon(inner._rdp_curve, 1e-6) * (1 + 1e-9)
    alphas = [2.0, 100.0, 1000.0]
    pairs = zip(outer.rdp(alphas), inner.rdp(alphas), strict=True)
    assert all(a <= b * (1 + 1e-12) for a, b in pairs)


# ----------------------------------------------------------------------------------
# extremes of the other mechanisms, checked against closed forms where one exists
# ----------------------------------------------------------------------------------


def _pure_eps(eps0: float, delta: float) -> float:
    """Exact epsilon of binary RR with log-odds eps0 at delta: p - e^eps (1 - p) = delta."""
    p = 1 / (1 + math.exp(-eps0))
    return max(0.0, math.log((p - delta) / (1 - p)))


P_NEAR_ONE = 1 - 1e-12

OTHER_CASES = {
    # name: (mechanism factory, delta, exact epsilon or None)
    "gaussian_tiny_sigma": (
        lambda: GaussianMechanism(sigma=1e-3), 1e-15, gaussian_epsilon(1e3, 1e-15)
    ),
    "gaussian_huge_sigma": (
        lambda: GaussianMechanism(sigma=1e8), 1e-15, gaussian_epsilon(1e-8, 1e-15)
    ),
    "gaussian_1e12_compositions": (
        lambda: compose([GaussianMechanism(sigma=1e6)], counts=[10**12]),
        1e-10,
        gaussian_epsilon(1.0, 1e-10),
    ),
    "laplace_huge_b": (lambda: _laplace(1e12), 1e-10, 0.0),
    "laplace_1e6_compositions": (
        lambda: compose([_laplace(1000.0)], counts=[10**6]),
        1e-10,
        None,
    ),
    "rr_p_near_one": (  # 1 - p is the float 1.00009e-12: use the float p itself
        lambda: _rr(P_NEAR_ONE),
        1e-5,
        math.log((P_NEAR_ONE - 1e-5) / (1 - P_NEAR_ONE)),
    ),
    "rr_1e5_compositions": (lambda: compose([_rr(0.51)], counts=[10**5]), 1e-12, None),
    "rr_huge_k": (lambda: _rr(0.5, 10**9), 1e-5, None),
    "pure_dp_1e7_compositions": (
        lambda: compose([_pure(1e-3)], counts=[10**7]),
        1e-12,
        None,
    ),
    "pure_dp_tiny": (lambda: _pure(1e-12), 1e-5, _pure_eps(1e-12, 1e-5)),
    "mixture": (
        lambda: compose(
            [
                GaussianMechanism(sigma=1e3),
                _laplace(1e3),
                poisson_subsample(GaussianMechanism(sigma=2.0), 1e-3),
            ],
            counts=[10**4, 10**4, 10**5],
        ),
        1e-12,
        None,
    ),
    "poisson_laplace_1e5_steps": (
        lambda: compose([poisson_subsample(_laplace(2.0), 1e-3)], counts=[10**5]),
        1e-10,
        None,
    ),
    "sample_rate_1e-12": (
        lambda: poisson_subsample(GaussianMechanism(sigma=1.0), 1e-12),
        1e-5,
        None,
    ),
}


def _laplace(b):
    from dpacct.mechanisms import LaplaceMechanism

    return LaplaceMechanism(b=b)


def _rr(p, k=2):
    from dpacct.mechanisms import RandomizedResponse

    return RandomizedResponse(p=p, k=k)


def _pure(eps0):
    from dpacct.mechanisms import PureDPMechanism

    return PureDPMechanism(epsilon=eps0)


@pytest.mark.parametrize("name", list(OTHER_CASES))
def test_extremes_of_other_mechanisms(name):
    make, delta, exact = OTHER_CASES[name]
    mech = make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = mech.epsilon_bounds(delta)
        eps = mech.epsilon(delta)
    assert math.isfinite(hi) and 0.0 <= lo <= hi
    assert eps == hi
    if exact is not None:
        # the bracket holds the closed form (relative round-off only)
        assert lo <= exact * (1 + 1e-9) + 1e-12
        assert hi >= exact * (1 - 1e-9) - 1e-12
        assert hi == pytest.approx(exact, rel=1e-6, abs=1e-12)
    if mech.has_rdp or mech.has_pld:
        assert hi <= rdp_to_epsilon(mech._rdp_curve, delta) * (1 + 1e-9) + 1e-12


# ----------------------------------------------------------------------------------
# library gaps found at the extremes, now fixed (each against an independent reference)
# ----------------------------------------------------------------------------------


def _mp_subsampled_delta(q, eps, base_delta):
    """Worse direction of Poisson subsampling for a symmetric base pair, exactly.

    remove: ``(1-q)Q + qP - e^eps Q = q (P - e^{eps'} Q)`` with ``e^{eps'} = 1 + (e^eps -
    1)/q``; add: ``Q - e^eps((1-q)Q + qP) = c (Q - e^{eps''} P)`` with ``c = 1 - e^eps (1-q)``
    and ``e^{eps''} = e^eps q / c`` (both identities of measures; symmetric base).
    """
    q, eps = mp.mpf(q), mp.mpf(eps)
    remove = q * base_delta(mp.log(1 + mp.expm1(eps) / q))
    c = 1 - mp.exp(eps) * (1 - q)
    add = c * base_delta(mp.log(mp.exp(eps) * q / c)) if c > 0 else mp.mpf(0)
    return max(remove, add)


@pytest.mark.parametrize("q", [1e-14, 1e-15, 1e-16])
@pytest.mark.parametrize("base", ["gaussian", "laplace"])
def test_tiny_sample_rate(q, base):
    """q <= 1e-14 once made the grid step so small that exp(-step) == 1.0 (a division by
    log(1) = 0 in pld._decaying_sum, NaN in the optimistic construction)."""
    mech = GaussianMechanism(sigma=1.0) if base == "gaussian" else _laplace(1.0)
    base_delta = (lambda e: gaussian_delta(1, e)) if base == "gaussian" else (
        lambda e: laplace_delta(1, e)
    )
    run = poisson_subsample(mech, q)
    for delta in (1e-5, q / 10):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lo, hi = run.epsilon_bounds(delta)
            eps = run.epsilon(delta)
        exact = invert_delta(lambda e, d=base_delta: _mp_subsampled_delta(q, e, d), delta)
        assert 0.0 <= lo <= exact * (1 + 1e-9) and hi >= exact * (1 - 1e-9)
        assert eps == hi
        # the grid step is floored at about 2^-36 (a certified, coarser grid)
        assert hi <= exact + 1e-10
    assert run.epsilon(1e-5) == 0.0  # delta(0) = q * TV(base) < 1e-5


def test_decaying_sum_with_a_step_below_double_precision():
    from dpacct.accountant.pld.pld_hull import _decaying_sum

    x = np.array([0.5, 0.0, 2.0, 1e-300, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y1 = _decaying_sum(x, 1e-300)  # exp(-step) would round to exactly 1.0
        y2 = _decaying_sum(x, math.log(2.0))
    np.testing.assert_allclose(y1, [5.5, 5.0, 5.0, 3.0, 3.0], rtol=1e-15)
    ref = [sum(x[i] * 0.5 ** (i - j) for i in range(j, x.size)) for j in range(x.size)]
    np.testing.assert_allclose(y2, ref, rtol=1e-15)


def test_laplace_tiny_scale_is_finite():
    delta = 1e-10
    lo, hi = _laplace(1e-6).epsilon_bounds(delta)
    exact = 1e6 + 2 * math.log1p(-delta)
    assert math.isfinite(hi)
    assert lo <= exact <= hi
    assert hi == pytest.approx(exact, rel=1e-9)


def _mp_zcdp_eps(rho, delta):
    """min over real orders of a rho + log(1 - 1/a) - (log delta + log a)/(a - 1), by a
    dense golden-section search in log(a - 1) in mpmath (no derivative used)."""
    rho, log_d = mp.mpf(rho), mp.log(mp.mpf(delta))

    def f(u):
        a = 1 + mp.exp(u)
        return a * rho + mp.log(1 - 1 / a) - (log_d + mp.log(a)) / (a - 1)

    lo, hi = mp.mpf(-30), mp.mpf(60)
    grid = [lo + (hi - lo) * i / 400 for i in range(401)]
    vals = [f(u) for u in grid]
    k = min(range(401), key=lambda i: vals[i])
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, 400)]
    g = (mp.sqrt(5) - 1) / 2
    for _ in range(120):
        c, d = b - g * (b - a), a + g * (b - a)
        if f(c) < f(d):
            b = d
        else:
            a = c
    return max(float(f((a + b) / 2)), 0.0)


@pytest.mark.parametrize(
    "rho, delta",
    [
        (1e-12, 1e-5),
        (1e-12, 1e-15),
        (1e-9, 1e-15),
        (1e-9, 1e-5),
        (1e-6, 1e-15),
        (1.0, 1e-5),
        (100.0, 1e-15),
    ],
)
def test_zcdp_never_looser_than_the_classical_conversion(rho, delta):
    """rho-zCDP implies (rho + 2 sqrt(rho log(1/delta)), delta)-DP (Bun & Steinke 2016,
    Prop. 1.3); the library's tighter conversion must never exceed it, and it is the
    optimum of the CKS conversion over *all* real orders (the optimal order for rho =
    1e-12 is about 6e6, far beyond the generic grid's 8192)."""
    from dpacct.mechanisms import ZCDPMechanism

    classical = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    m = ZCDPMechanism(rho=rho)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eps = m.epsilon(delta)
        lo, hi = m.epsilon_bounds(delta)
        d_back = m.delta(eps)
    assert eps <= classical
    assert (lo, hi) == (0.0, eps)
    assert eps == pytest.approx(_mp_zcdp_eps(rho, delta), rel=1e-9, abs=1e-300)
    assert d_back <= delta * (1 + 1e-9)


def test_zcdp_delta_is_the_exact_optimum_for_tiny_rho():
    from dpacct.mechanisms import ZCDPMechanism

    rho, eps = 1e-12, 1e-5
    # min over orders of (a-1)(a rho - eps + log(1 - 1/a)) - log a, dense scan in mpmath
    rho_m, eps_m = mp.mpf(rho), mp.mpf(eps)
    scan = min(
        (a - 1) * (a * rho_m - eps_m + mp.log(1 - 1 / a)) - mp.log(a)
        for a in (1 + mp.exp(mp.mpf(u) / 20) for u in range(-200, 800))
    )
    got = ZCDPMechanism(rho=rho).delta(eps)
    assert got <= float(mp.exp(scan)) * (1 + 1e-9)
    assert got >= float(mp.exp(scan)) * (1 - 1e-3)  # the scan is within 1e-3 of the min


# ---------------------------------------------------------------- discrete Gaussian
@functools.lru_cache(maxsize=2)
def _np_dgauss_pair(sigma):
    """Losses and P-weights of the discrete Gaussian pair over ``|x| <= 40 sigma``,
    built once per sigma (the exact ``math.fsum`` normaliser alone takes 0.35 s at
    sigma 1e4), not once per epsilon."""
    half = int(40 * sigma) + 2
    x = np.arange(-half, half + 1, dtype=float)
    log_w = -(x**2) / (2 * sigma**2)
    z = math.fsum(np.exp(log_w))
    loss = (2 * x - 1) / (2 * sigma**2)  # at output x: P = N_Z(1), Q = N_Z(0)
    p = np.exp(-((x - 1) ** 2) / (2 * sigma**2)) / z
    return loss, p


def _np_dgauss_delta(sigma, eps):
    """CKS 2020 Theorem 7 summed directly over |x| <= 40 sigma (independent numpy code)."""
    loss, p = _np_dgauss_pair(sigma)
    sel = loss > eps
    return math.fsum(p[sel] * -np.expm1(eps - loss[sel]))


@pytest.mark.slow
@pytest.mark.parametrize("sigma", [2500.0, 1e4])
def test_discrete_gaussian_large_sigma_bracket(sigma):
    """sigma = 1e8 once allocated 28 GiB (the exact sum enumerates 76 sigma integers per
    epsilon); above sigma = 2000 a proven continuous-comparison bracket is used."""
    from dpacct.mechanisms.primitives.discrete import (
        DiscreteGaussianMechanism,
        discrete_gaussian_delta_bounds,
    )

    eps = np.array([0.0, 1.0, 3.0, 4.5]) / sigma
    lo, hi = discrete_gaussian_delta_bounds(sigma, eps)
    ref = np.array([_np_dgauss_delta(sigma, e) for e in eps])
    assert np.all(lo <= ref * (1 + 1e-10)) and np.all(ref <= hi * (1 + 1e-10))
    assert np.all(hi - lo <= 1e-4 * ref)  # about t^4 / sigma^2 at eps = t / sigma
    m = DiscreteGaussianMechanism(sigma)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e_lo, e_hi = m.epsilon_bounds(1e-6)
    assert e_hi == m.epsilon(1e-6)
    assert _np_dgauss_delta(sigma, e_hi) <= 1e-6 * (1 + 1e-9)
    assert _np_dgauss_delta(sigma, e_lo) >= 1e-6 * (1 - 1e-9)
    assert e_hi <= e_lo * (1 + 1e-6)


def test_discrete_gaussian_huge_sigma_is_close_to_the_continuous_one():
    from dpacct.mechanisms.primitives.discrete import DiscreteGaussianMechanism

    m = DiscreteGaussianMechanism(sigma=1e8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = m.epsilon_bounds(1e-12)
        eps5 = m.epsilon(1e-5)
        d = m.delta(np.array([0.0, 3e-8]))
        sub = poisson_subsample(m, 0.01).epsilon(1e-12)
        run = compose([m], counts=[100]).epsilon(1e-12)
    gauss = gaussian_epsilon(1e-8, 1e-12)
    assert 0 < lo <= hi and hi == pytest.approx(gauss, rel=1e-4)
    assert eps5 == 0.0  # delta(0) ~ 0.4 / sigma = 4e-9 < 1e-5
    mu = 1e-8
    for e, got in zip([0.0, 3e-8], d, strict=True):
        assert got == pytest.approx(float(gaussian_delta(mu, e)), rel=1e-4)
    assert not m.has_pld and math.isfinite(sub) and math.isfinite(run)
    assert sub <= hi * (1 + 1e-9)  # amplification never hurts


# ---------------------------------------------------------------- max_sample_rate
@pytest.mark.slow
def test_max_sample_rate_for_a_tight_budget_and_small_noise():
    """max_sample_rate(0.1, 1e-5, 0.3, 10**4): the search reaches q ~ 1e-9, where the
    subsampled loss has a spread of ~1e-11 but a range of ~0.2 -- 2e13 grid points (a
    256 GiB allocation) before the subsampled law's grid scale was floored."""
    from dpacct.calibrators.dpsgd import dpsgd_mechanism, max_sample_rate

    q = max_sample_rate(0.1, 1e-5, 0.3, 10**4, progress=False)
    eps = dpsgd_mechanism(0.3, q, 10**4).epsilon(1e-5)
    assert 0.1 * (1 - 2e-3) <= eps <= 0.1
    # independent bracket of the answer: (i) unless the record is sampled at least once
    # (probability <= steps * q) both runs are identical, so delta(0) <= 1e4 q and every
    # q <= 1e-9 is feasible; (ii) one step is a post-processing of the run, so a
    # feasible q must keep the exact single-step epsilon (mpmath) below 0.1 too
    assert q >= 1e-9

    def single_step_delta(rate):
        return _mp_subsampled_delta(rate, 0.1, lambda e: gaussian_delta(1 / 0.3, e))

    lo, hi = mp.mpf(1e-12), mp.mpf(1e-2)
    for _ in range(60):
        mid = mp.sqrt(lo * hi)
        lo, hi = (mid, hi) if single_step_delta(mid) <= 1e-5 else (lo, mid)
    assert q <= float(hi)


# ---------------------------------------------------------------- huge Renyi orders


def test_subsampled_rdp_at_huge_orders():
    """rdp(1e12) once tried to allocate 7.3 TiB (one binomial term per integer order);
    above 2^16 the base curve alpha / (2 sigma^2) is used (subsampling never hurts)."""
    from dpacct.accountant import subsample_without_replacement
    from dpacct.accountant.rdp.subsampled_rdp import MAX_EXPANSION_ORDER

    run = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], counts=[1000])
    alphas = np.array([1e4, MAX_EXPANSION_ORDER, MAX_EXPANSION_ORDER + 1.5, 1e12])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vals = run.rdp(alphas)
        single = run.rdp(1e12)
        general = poisson_subsample(_laplace(1.0), 0.01).rdp([1e12, 1e15])
        wor = subsample_without_replacement(ReplaceOneGaussianMechanism(1.0), 0.01).rdp(1e12)
    # sigma is taken 2^-50 below 1/mu (the safe side): a few 1e-16 above, never below
    assert 1000 * 1e12 / 2 <= single <= 1000 * 1e12 / 2 * (1 + 1e-14)
    assert vals[3] == single and vals[2] == pytest.approx(1000 * alphas[2] / 2, rel=1e-14)
    assert np.all(np.diff(vals) >= 0)
    ref = subsampled_gaussian_rdp(0.01, 1.0, 10_000) * 1000
    assert ref * (1 - 1e-12) <= vals[0] <= ref * (1 + 1e-9)
    # below the limit the expansion is kept, and it is at most alpha log(1/q)/(alpha-1)
    # below the base curve (its k = alpha term alone gives that)
    a = MAX_EXPANSION_ORDER
    assert 1000 * a / 2 - vals[1] <= 1000 * a * math.log(100) / (a - 1) * (1 + 1e-9)
    # pure-DP amplification caps the general bound (Balle, Barthe, Gaboardi 2018)
    cap = math.log1p(0.01 * math.expm1(1.0))
    assert np.all(general <= cap * (1 + 1e-12)) and np.all(np.isfinite(general))
    assert wor == pytest.approx(1e12 / 2, rel=1e-15)
