"""benchmarks/dpsgd_floor_min.py: the bare FFT floor answers the question it is compared
on (checked against the Gaussian's closed form, where the loss is exactly normal, and
against dpacct's certified bracket on a short composition), and its length list is
exactly pocketfft's 5-smooth lengths."""

from __future__ import annotations

import math

import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from benchmarks.dpsgd_floor_min import fast_lengths, floor_epsilon


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """epsilon of mu-GDP at delta (Balle & Wang 2018, Theorem 8), by root finding."""
    def excess(eps: float) -> float:
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2) - delta

    return brentq(excess, 0.0, 100.0, xtol=1e-13)


@pytest.mark.parametrize("sigma, steps", [(2.0, 16), (1.0, 9)])
def test_floor_matches_the_gaussian_closed_form(sigma, steps):
    """q = 1: the loss is N(1/(2 s^2), 1/s^2) a step, and ``steps`` of them are
    sqrt(steps)/s-GDP; the floor's second-order grid error is below 1e-4 at h 2^-10.
    A tilt or window read at the wrong index (one node off) moves it by ~1e-3."""
    exact = _gaussian_epsilon(math.sqrt(steps) / sigma, 1e-5)
    got = floor_epsilon(1.0, sigma, steps, 2.0**-10, 1 << 14, exact)
    assert abs(got - exact) < 1e-4 * exact


def test_floor_lies_near_the_certified_bracket():
    """q 0.01, sigma 1.1, T 100: within 1e-4 relative of dpacct's bracket (the floor is
    unsound on purpose: an estimate of the same number, not a bound; on a window of 4
    loss units, n 2^14, it is 0.5 % off: the window matters)."""
    from dpacct.accountant import compose, poisson_subsample
    from dpacct.mechanisms import GaussianMechanism

    mech = compose([poisson_subsample(GaussianMechanism(sigma=1.1), sample_rate=0.01)],
                   counts=[100])
    lo, hi = mech.epsilon_bounds(1e-5)
    got = floor_epsilon(0.01, 1.1, 100, 2.0**-12, 1 << 16, hi)
    assert lo * (1 - 1e-4) < got < hi * (1 + 1e-4)


def test_fast_lengths_are_the_5_smooth_numbers():
    got = fast_lengths(90, 130)
    brute = [n for n in range(90, 131)
             if n == 2 ** (n.bit_length() - 1) * 1 or _smooth(n)]
    assert got == brute == [90, 96, 100, 108, 120, 125, 128]


def _smooth(n: int) -> bool:
    for p in (2, 3, 5):
        while n % p == 0:
            n //= p
    return n == 1


def test_certified_single_power_is_an_upper_bound_and_declines_at_the_library_limit():
    """T 1e4 on h 2^-12: the certified single power (5.192815) is a sound upper end, so
    above dpacct's certified lower end (5.19254...), and above the bare floor on the same
    grid (5.192802): the mass its certificate adds is positive and within the limit.  At
    the library's limit (1e-11) its round-off term declines."""
    from benchmarks.dpsgd_floor_min import certified_single_power

    assert certified_single_power("1e4", 2.0**-12, 1e-11) is None
    got = certified_single_power("1e4", 2.0**-12, 1e-9)
    bare = floor_epsilon(0.01, 1.1, 10_000, 2.0**-12, 1 << 16, 5.1926)
    assert 0 < got["certificate"] <= 1e-9
    assert got["answer"] > bare > 5.19254
