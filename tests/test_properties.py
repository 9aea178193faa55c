"""Property-based tests of the engine (hypothesis)."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism, ReplaceOneGaussianMechanism

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

sigmas = st.floats(min_value=0.5, max_value=20.0)
rates = st.floats(min_value=1e-4, max_value=0.5)
steps = st.integers(min_value=1, max_value=20_000)
deltas = st.floats(min_value=1e-12, max_value=1e-2)


def dpsgd(q, sigma, k):
    return compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[k])


@pytest.mark.slow
@FAST
@given(q=rates, sigma=sigmas, k=steps, delta=deltas)
def test_bracket_is_ordered_finite_and_monotone_in_every_parameter(q, sigma, k, delta):
    # one draw checks the run's bracket (no warning) and then moves each parameter; these
    # were two tests drawing the same (q, sigma, k, delta) and building the same run
    run = dpsgd(q, sigma, k)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = run.epsilon_bounds(delta)
    assert 0.0 <= lo <= hi
    assert math.isfinite(hi)
    base = run.epsilon(delta)
    # slack: each side is an upper bound with its own discretisation, so allow the
    # relative tolerance of the default accuracy
    assert dpsgd(q, sigma, k + k // 2 + 1).epsilon(delta) >= base * (1 - 5e-3)
    assert dpsgd(min(1.0, q * 1.5), sigma, k).epsilon(delta) >= base * (1 - 5e-3)
    assert dpsgd(q, sigma * 1.5, k).epsilon(delta) <= base * (1 + 5e-3)
    assert run.epsilon(delta / 10) >= base


@FAST
@given(q=rates, sigma=sigmas, k=steps, delta=deltas)
def test_pld_upper_is_never_above_rdp_by_more_than_rounding(q, sigma, k, delta):
    """Both are sound upper bounds; the reported epsilon is at most the RDP one."""
    from dpacct.accountant.rdp.conversion import rdp_to_epsilon

    run = dpsgd(q, sigma, k)
    rdp_eps = rdp_to_epsilon(run._rdp_curve, delta)
    assert run.epsilon(delta) <= rdp_eps * (1 + 1e-9)


@FAST
@given(s1=sigmas, s2=sigmas, k1=st.integers(1, 50), k2=st.integers(1, 50))
def test_gaussian_composition_commutative_and_exact(s1, s2, k1, k2):
    a = compose([GaussianMechanism(sigma=s1), GaussianMechanism(sigma=s2)], counts=[k1, k2])
    b = compose([GaussianMechanism(sigma=s2), GaussianMechanism(sigma=s1)], counts=[k2, k1])
    assert a.epsilon(1e-6) == b.epsilon(1e-6)
    eff = 1 / math.sqrt(k1 / s1**2 + k2 / s2**2)
    assert math.isclose(a.epsilon(1e-6), GaussianMechanism(sigma=eff).epsilon(1e-6), rel_tol=1e-12)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(q=rates, sigma=sigmas, k1=st.integers(1, 3000), k2=st.integers(1, 3000))
def test_composition_associative_within_tolerance(q, sigma, k1, k2):
    step = poisson_subsample(GaussianMechanism(sigma=sigma), q)
    whole = compose([step], counts=[k1 + k2])
    nested = compose([compose([step], counts=[k1]), compose([step], counts=[k2])])
    lo1, hi1 = whole.epsilon_bounds(1e-6)
    lo2, hi2 = nested.epsilon_bounds(1e-6)
    # both brackets contain the true epsilon, so they overlap
    assert lo1 <= hi2 * (1 + 1e-9) and lo2 <= hi1 * (1 + 1e-9)


@FAST
@given(sigma=sigmas, alphas=st.lists(st.floats(1.01, 500.0), min_size=2, max_size=6))
def test_rdp_convex_in_the_required_sense(sigma, alphas):
    """(alpha - 1) * rdp(alpha) is convex in alpha (log-MGF of the loss)."""
    q = 0.05
    a = np.sort(np.array(alphas))
    step = poisson_subsample(GaussianMechanism(sigma=sigma), q)
    g = (a - 1) * step.rdp(a)
    # convexity: every interior point lies below the chord of its neighbours
    for i in range(1, a.size - 1):
        if a[i + 1] - a[i - 1] < 1e-9:
            continue
        w = (a[i] - a[i - 1]) / (a[i + 1] - a[i - 1])
        assert g[i] <= (1 - w) * g[i - 1] + w * g[i + 1] + 1e-9 * (1 + abs(g[i]))


# ----------------------------------------------------------------------------------
# every mechanism the library ships, drawn over its parameter range
# ----------------------------------------------------------------------------------
def _rate(u: float) -> float:
    """A sampling rate in [1e-3, 0.5] (strictly subsampled)."""
    return 0.5 * 10 ** (-2.7 * u)


def _factories():
    """``name -> (u in [0, 1] -> mechanism)``: each maps a draw onto a sensible range."""
    from dpacct.accountant import subsample_without_replacement
    from dpacct.mechanisms import (
        DiscreteGaussianMechanism,
        DiscreteLaplaceMechanism,
        ExponentialMechanism,
        LaplaceMechanism,
        PureDPMechanism,
        RandomizedResponse,
        ReplaceOneLaplaceMechanism,
        ZCDPMechanism,
    )

    return {
        "gaussian": lambda u: GaussianMechanism(sigma=10 ** (-0.5 + 2.5 * u)),
        "laplace": lambda u: LaplaceMechanism(b=10 ** (-0.5 + 2.5 * u)),
        "rr": lambda u: RandomizedResponse(p=0.51 + 0.48 * u),
        "rr_k5": lambda u: RandomizedResponse(p=0.21 + 0.78 * u, k=5),
        "discrete_laplace": lambda u: DiscreteLaplaceMechanism(scale=10 ** (-0.5 + 2 * u)),
        "discrete_gaussian": lambda u: DiscreteGaussianMechanism(sigma=10 ** (-0.3 + 1.8 * u)),
        "pure_dp": lambda u: PureDPMechanism(epsilon=10 ** (-2 + 3 * u)),
        "zcdp": lambda u: ZCDPMechanism(rho=10 ** (-4 + 4 * u)),
        "exponential_br": lambda u: ExponentialMechanism(epsilon=10 ** (-2 + 2.5 * u)),
        "exponential_pure": lambda u: ExponentialMechanism(
            epsilon=10 ** (-2 + 2.5 * u), bounded_range=False
        ),
        "poisson_gaussian": lambda u: poisson_subsample(GaussianMechanism(sigma=1.0), _rate(u)),
        "poisson_laplace": lambda u: poisson_subsample(LaplaceMechanism(b=1.0), _rate(u)),
        "wor_gaussian": lambda u: subsample_without_replacement(
            ReplaceOneGaussianMechanism(sigma=2.0), _rate(u)
        ),
        "wor_rr": lambda u: subsample_without_replacement(RandomizedResponse(p=0.8), _rate(u)),
        "wor_laplace": lambda u: subsample_without_replacement(
            ReplaceOneLaplaceMechanism(b=2.0), _rate(u)
        ),
        "composed_mixture": lambda u: compose(
            [
                poisson_subsample(GaussianMechanism(sigma=1.0 + 2 * u), 0.02),
                LaplaceMechanism(b=20.0),
                GaussianMechanism(sigma=30.0),
            ],
            counts=[200, 5, 3],
        ),
    }


FACTORIES = _factories()
units = st.floats(min_value=0.0, max_value=1.0)

#: general subsampling bounds are upper bounds, not divergences: their (alpha - 1) * rdp
#: need not be convex, and these are not (found by the property test below)
NON_CONVEX = {
    "poisson_laplace": "general Poisson subsampling RDP bound: (alpha-1)*rdp not convex",
    "wor_rr": "without-replacement subsampling RDP bound: (alpha-1)*rdp not convex",
    "wor_laplace": "without-replacement subsampling RDP bound: (alpha-1)*rdp not convex",
}


def _convexity_defect(mech, alphas) -> tuple[float, float]:
    """Largest relative excess of ``(alpha - 1) * rdp(alpha)`` over its chords, and where."""
    a = np.sort(np.asarray(alphas, dtype=float))
    a = a[np.concatenate([[True], np.diff(a) > 1e-6])]
    g = (a - 1) * mech.rdp(a)
    worst, where = -math.inf, math.nan
    for i in range(1, a.size - 1):
        w = (a[i] - a[i - 1]) / (a[i + 1] - a[i - 1])
        chord = (1 - w) * g[i - 1] + w * g[i + 1]
        excess = (g[i] - chord) / (1 + abs(chord))
        if excess > worst:
            worst, where = excess, a[i]
    return worst, where


@pytest.mark.parametrize("name", [n for n in FACTORIES if n not in NON_CONVEX])
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(u=units, alphas=st.lists(st.floats(1.01, 400.0), min_size=3, max_size=8, unique=True))
def test_every_rdp_curve_is_convex_in_the_required_sense(name, u, alphas):
    """``(alpha - 1) * rdp(alpha)`` is convex (it is the log-MGF of the privacy loss)."""
    mech = FACTORIES[name](u)
    worst, where = _convexity_defect(mech, alphas)
    assert worst <= 1e-7, (mech, where, worst)


#: a fixed grid of orders on which the non-convex bounds show their defect
ALPHA_GRID = np.concatenate([np.linspace(1.01, 3, 40), np.linspace(3.1, 64, 60), [100, 268, 500]])


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=r))
        for n, r in NON_CONVEX.items()
    ],
)
def test_known_non_convex_rdp_bounds(name):
    """Deterministic (q = 0.1, fixed orders), so the strict xfail cannot flip with draws."""
    mech = FACTORIES[name](math.log10(0.5 / 0.1) / 2.7)
    assert mech.sample_rate == pytest.approx(0.1)
    worst, where = _convexity_defect(mech, ALPHA_GRID)
    assert worst <= 1e-7, (mech, where, worst)


@pytest.mark.parametrize("name", list(FACTORIES))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    u=units,
    delta=st.floats(1e-12, 0.5),
    eps=st.floats(0.0, 30.0),
    alpha=st.floats(1.001, 1000.0),
    fpr=st.floats(0.0, 1.0),
)
def test_every_query_is_finite_ordered_and_warning_free(name, u, delta, eps, alpha, fpr):
    mech = FACTORIES[name](u)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = mech.epsilon(delta)
        lo, hi = mech.epsilon_bounds(delta)
        d = mech.delta(eps)
        beta = mech.tradeoff(fpr)
        r = mech.rdp(alpha) if (mech.has_rdp or mech.has_pld) else 0.0
    assert math.isfinite(e) and e >= 0
    assert math.isfinite(lo) and math.isfinite(hi) and 0.0 <= lo <= hi
    assert hi == pytest.approx(e, rel=1e-12)
    assert 0.0 <= d <= 1.0
    assert 0.0 <= beta <= 1.0 - fpr + 1e-12
    assert math.isfinite(r) and r >= 0


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    q=st.floats(1e-3, 0.2),
    sigma=st.floats(0.7, 5.0),
    k1=st.integers(1, 300),
    b=st.floats(2.0, 50.0),
    k2=st.integers(1, 20),
    s3=st.floats(2.0, 50.0),
    k3=st.integers(1, 20),
    delta=st.floats(1e-10, 1e-3),
)
def test_heterogeneous_composition_is_associative_and_commutative(
    q, sigma, k1, b, k2, s3, k3, delta
):
    """Every grouping and order of ``a, b, c`` gives brackets that share a point.

    Each bracket holds the true epsilon, so they must overlap; overlap also bounds the
    difference between any two reported epsilons by the wider bracket.
    """
    from dpacct.mechanisms import LaplaceMechanism

    a = compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[k1])
    b_ = compose([LaplaceMechanism(b=b)], counts=[k2])
    c = compose([GaussianMechanism(sigma=s3)], counts=[k3])
    variants = [
        compose([a, compose([b_, c])]),
        compose([compose([a, b_]), c]),
        compose([c, b_, a]),
        compose([b_, compose([c, a])]),
    ]
    brackets = [v.epsilon_bounds(delta) for v in variants]
    lows, highs = zip(*brackets, strict=True)
    assert all(0.0 <= lo <= hi for lo, hi in brackets)
    assert max(lows) <= min(highs) * (1 + 1e-9) + 1e-12, brackets
    for v, (_, hi) in zip(variants, brackets, strict=True):
        assert v.epsilon(delta) == pytest.approx(hi, rel=1e-12)
