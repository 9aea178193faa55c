"""Compositions of binary randomized response in closed form (binomial tails), against
mpmath: exact sums for moderate counts, a 40-digit quadrature of the incomplete beta
integral at 10**12 copies."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from dpacct.accountant import compose
from dpacct.mechanisms import PureDPMechanism, RandomizedResponse


def _rr_delta_exact_sum(p: str, n: int, eps: float) -> mp.mpf:
    """sum_{j: e(2j-n) > eps} [P(j) - e^eps Q(j)] by mpmath over every j (small n)."""
    pp = mp.mpf(p)
    e = mp.log(pp / (1 - pp))
    total = mp.mpf(0)
    for j in range(n + 1):
        if e * (2 * j - n) > eps:
            c = mp.binomial(n, j)
            total += c * (pp**j * (1 - pp) ** (n - j) - mp.exp(eps) * (1 - pp) ** j * pp ** (n - j))
    return total


def _sf_quad(J: int, n: int, p) -> mp.mpf:
    """P[Binomial(n, p) > J] = I_p(J + 1, n - J), by quadrature of the beta density."""
    a, b = mp.mpf(J + 1), mp.mpf(n - J)
    logB = mp.loggamma(a) + mp.loggamma(b) - mp.loggamma(a + b)
    f = lambda t: mp.exp((a - 1) * mp.log(t) + (b - 1) * mp.log1p(-t) - logB)  # noqa: E731
    rate = (a - 1) / p - (b - 1) / (1 - p)
    w = mp.sqrt(p * (1 - p) / n)
    h = min(w, 1 / rate) if rate > 0 else w
    pts = [p - h * k for k in (200, 100, 60, 40, 25, 15, 10, 6, 4, 2, 1, 0.5, 0)]
    return mp.quad(f, [x for x in pts if x > 0])


@pytest.mark.parametrize("p,n", [(0.75, 1), (0.75, 40), (0.6, 300), (0.5001, 2000)])
def test_binomial_closed_form_against_exact_sums(p, n):
    mp.mp.dps = 40
    run = compose([RandomizedResponse(p=p)], [n]) if n > 1 else compose(
        [RandomizedResponse(p=p)] * 1
    )
    for delta in (1e-2, 1e-6, 1e-12):
        eps = run.epsilon(delta)
        if eps == 0.0:
            continue
        assert _rr_delta_exact_sum(repr(p), n, eps) <= delta * (1 + 1e-12)
        lo, hi = run.epsilon_bounds(delta)
        assert hi == eps
        # the bracket is the inversion interval of a curve within 1e-7 of the truth
        assert _rr_delta_exact_sum(repr(p), n, lo * (1 - 1e-6)) >= delta * (1 - 1e-6)
        assert run.delta(eps) <= delta * (1 + 1e-9)


def test_huge_count_of_randomized_response_is_fast_and_sound():
    mp.mp.dps = 40
    n = 10**12
    run = compose([RandomizedResponse(0.5000001)], [n])
    assert run.route == "exact"
    eps = run.epsilon(1e-5)
    lo, hi = run.epsilon_bounds(1e-5)
    # the lower end reads the curve rounded down (p four ulps lower: session 35), 3.2e-8
    # below the upper end at this count, where a bisection on the upper curve gave 1e-12
    assert hi == eps and lo <= hi <= lo * (1 + 1e-7)
    # the true delta at eps, from 40-digit tails of the exact pair (p = 0.5000001)
    p = mp.mpf(0.5000001)
    e = mp.log(p / (1 - p))

    def truth_at(x):
        J = int(mp.floor((n + mp.mpf(x) / e) / 2))
        return _sf_quad(J, n, p) - mp.exp(mp.mpf(x)) * _sf_quad(J, n, 1 - p)

    truth = truth_at(eps)
    assert truth <= 1e-5
    assert truth >= 1e-5 * (1 - 1e-5)  # and not loose
    assert truth_at(lo) > 1e-5  # the lower end is below the true epsilon
    # the former lattice PLD (11 s) certified 1.5549825079854764; the closed form is tighter
    assert eps < 1.5549825079854764


def test_pure_dp_composition_uses_the_closed_form_soundly():
    mp.mp.dps = 50
    e0 = 0.3
    run = compose([PureDPMechanism(e0)], [500])
    assert run.route == "exact"
    eps = run.epsilon(1e-9)
    p = mp.exp(mp.mpf(e0)) / (1 + mp.exp(mp.mpf(e0)))
    truth = mp.fsum(
        mp.binomial(500, j)
        * (p**j * (1 - p) ** (500 - j) - mp.exp(eps) * (1 - p) ** j * p ** (500 - j))
        for j in range(501)
        if mp.mpf(e0) * (2 * j - 500) > eps
    )
    assert truth <= 1e-9
    assert math.isclose(float(truth), 1e-9, rel_tol=1e-5)
