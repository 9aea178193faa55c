"""Numerical extremes of DP-SGD accounting: finite, ordered, never above the RDP bound.

Each case was a regression at some point of development (a 21-second run, an upper
bound inflated to 32 by round-off feeding the grid window, a too-fine grid).
"""

import math
import warnings

import pytest

from accountant import compose, poisson_subsample
from accountant.rdp import rdp_to_epsilon
from mechanisms import GaussianMechanism

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
