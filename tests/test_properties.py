"""Property-based tests of the engine (hypothesis)."""

import math
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accountant import compose, poisson_subsample
from mechanisms import GaussianMechanism

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

sigmas = st.floats(min_value=0.5, max_value=20.0)
rates = st.floats(min_value=1e-4, max_value=0.5)
steps = st.integers(min_value=1, max_value=20_000)
deltas = st.floats(min_value=1e-12, max_value=1e-2)


def dpsgd(q, sigma, k):
    return compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[k])


@FAST
@given(q=rates, sigma=sigmas, k=steps, delta=deltas)
def test_bracket_is_ordered_finite_and_warning_free(q, sigma, k, delta):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lo, hi = dpsgd(q, sigma, k).epsilon_bounds(delta)
    assert 0.0 <= lo <= hi
    assert math.isfinite(hi)


@FAST
@given(q=rates, sigma=sigmas, k=steps, delta=deltas)
def test_monotone_in_every_parameter(q, sigma, k, delta):
    base = dpsgd(q, sigma, k).epsilon(delta)
    # slack: each side is an upper bound with its own discretisation, so allow the
    # relative tolerance of the default accuracy
    assert dpsgd(q, sigma, k + k // 2 + 1).epsilon(delta) >= base * (1 - 5e-3)
    assert dpsgd(min(1.0, q * 1.5), sigma, k).epsilon(delta) >= base * (1 - 5e-3)
    assert dpsgd(q, sigma * 1.5, k).epsilon(delta) <= base * (1 + 5e-3)
    assert dpsgd(q, sigma, k).epsilon(delta / 10) >= base


@FAST
@given(q=rates, sigma=sigmas, k=steps, delta=deltas)
def test_pld_upper_is_never_above_rdp_by_more_than_rounding(q, sigma, k, delta):
    """Both are sound upper bounds; the reported epsilon is at most the RDP one."""
    from accountant.rdp import rdp_to_epsilon

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
