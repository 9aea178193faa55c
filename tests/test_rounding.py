"""Caps and pure epsilons are rounded up: exact sums, directed rounding, mpmath truths."""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import mpmath as mp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant._rounding import (
    amplified_pure_up,
    next_up,
    quotient_down,
    quotient_up,
    sum_up,
)
from dpacct.mechanisms import LaplaceMechanism, PureDPMechanism, RandomizedResponse


def _composed_pure_truth(eps0: str, n: int, delta: str) -> mp.mpf:
    """True epsilon of n-fold pure eps0-DP (binary RR) at delta, by mpmath bisection."""
    e0 = mp.mpf(eps0)
    p = mp.exp(e0) / (1 + mp.exp(e0))

    def d(eps):
        return mp.fsum(
            mp.binomial(n, j) * p**j * (1 - p) ** (n - j) * (1 - mp.exp(eps - e0 * (2 * j - n)))
            for j in range(n + 1)
            if e0 * (2 * j - n) > eps
        )

    lo, hi = mp.mpf(0), n * e0
    for _ in range(200):
        mid = (lo + hi) / 2
        if d(mid) > mp.mpf(delta):
            lo = mid
        else:
            hi = mid
    return hi


def test_pure_composition_cap_is_not_below_the_truth():
    mp.mp.dps = 60
    e0 = 8.28890632385842
    run = compose([PureDPMechanism(e0)], [13])
    truth = _composed_pure_truth(repr(e0), 13, "4.23e-15")
    eps = run.epsilon(4.23e-15)
    # the float product 13 * e0 is 7.1e-15 below the exact one, 2.9e-15 below the truth
    assert mp.mpf(13 * e0) < truth
    assert mp.mpf(eps) >= truth
    assert Fraction(run.pure_epsilon) >= 13 * Fraction(e0)
    lo, hi = run.epsilon_bounds(4.23e-15)
    assert mp.mpf(lo) <= truth <= mp.mpf(hi)


def test_sum_up_is_exact_then_up():
    e = 8.28890632385842
    assert Fraction(sum_up([(13, e)])) >= 13 * Fraction(e)
    assert sum_up([(13, e)]) == math.nextafter(13 * e, math.inf)
    assert sum_up([(1, 0.1), (2, 0.2)]) >= float(Fraction(0.1) + 2 * Fraction(0.2))
    assert sum_up([(2, 0.25), (1, 0.5)]) == 1.0  # exact sums stay exact
    assert sum_up([(1, math.inf), (3, 1.0)]) == math.inf
    assert next_up(1.0, 2) == 1.0 + 2 * 2.0**-52


@pytest.mark.parametrize("q", [1e-7, 0.013, 0.5, 0.999])
@pytest.mark.parametrize("eps", [1e-9, 0.3, 2.7, 40.0, 750.0])
def test_amplified_pure_up_against_mpmath(q, eps):
    mp.mp.dps = 50
    truth = mp.log(1 + mp.mpf(q) * mp.expm1(mp.mpf(eps)))
    got = amplified_pure_up(q, eps)
    assert mp.mpf(got) >= truth
    assert mp.mpf(got) <= truth * (1 + mp.mpf(2) ** -48)


def test_subsampled_and_composed_caps_round_up():
    mp.mp.dps = 50
    b, q = 0.37, 0.013
    step = poisson_subsample(LaplaceMechanism(b=b), q)
    base_cap = mp.mpf(LaplaceMechanism(b=b).pure_epsilon)  # the base's own float cap
    truth = mp.log(1 + mp.mpf(q) * mp.expm1(base_cap))
    assert mp.mpf(step.pure_epsilon) >= truth
    other = LaplaceMechanism(b=0.3)
    run = compose([step, other], [1001, 7])
    exact = 1001 * Fraction(step.pure_epsilon) + 7 * Fraction(other.pure_epsilon)
    assert Fraction(run.pure_epsilon) >= exact


def test_rr_pure_epsilon_not_below_log_ratio():
    mp.mp.dps = 50
    for p, k in [(0.75, 2), (0.9, 5), (0.5000001, 2), (1 - 1e-12, 3)]:
        mech = RandomizedResponse(p=p, k=k)
        pp = mp.mpf(p)
        truth = mp.log(pp * (k - 1) / (1 - pp))
        assert mp.mpf(mech.pure_epsilon) >= truth


@given(
    a=st.floats(1e-300, 1e300, allow_nan=False, allow_infinity=False),
    b=st.floats(1e-300, 1e300, allow_nan=False, allow_infinity=False),
)
def test_directed_quotients_are_the_nearest_floats_on_their_side(a, b):
    up, down = quotient_up(a, b), quotient_down(a, b)
    exact = Fraction(a) / Fraction(b)
    if math.isfinite(up):
        assert Fraction(up) >= exact and Fraction(math.nextafter(up, 0.0)) < exact
    else:
        assert exact > Fraction(sys.float_info.max)
    assert Fraction(down) <= exact
    if down < sys.float_info.max:
        assert Fraction(math.nextafter(down, math.inf)) > exact
