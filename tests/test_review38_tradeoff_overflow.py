"""Review of session 38: the trade-off envelope at a node whose ``e^eps`` overflows.

``tradeoff_envelope`` clamped ``e^u`` at ``EXP_OVERFLOW`` (709.78) while keeping the
node's own ``delta(u)``: at a subnormal false-positive rate ``a`` the line
``1 - delta(u) - e^709.78 a`` is about ``1 - delta(u)``, not a supporting line of the
curve, and the "lower bound" on beta was about 1 where the truth is about 0.  Reached on
e1dbbcf through the PLD route (loss atoms past 709: Laplace b = 0.001) and, on
ws38-fix38, through the binomial RR's loss atoms (p 0.8, n 1000: atoms up to 1386).
Truths here are independent: a level-``a`` threshold test on one coordinate, or the
Neyman-Pearson curve of the binomial pair in mpmath.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from dpacct.accountant import compose
from dpacct.accountant.queries.tradeoff import tradeoff_envelope
from dpacct.mechanisms import LaplaceMechanism, RandomizedResponse

SUBNORMAL = np.array([5e-324, 1e-310])


def test_a_node_past_exp_overflow_gives_no_line_above_the_curve():
    # pure 800-DP pair: delta(800) = 0 and T(a) = max(0, 1 - e^800 a, e^-800 (1 - a)),
    # below 1e-300 at both subnormal rates
    got = tradeoff_envelope(SUBNORMAL, np.array([800.0]), np.array([0.0]))
    assert np.all(got <= 1e-300)
    # a = 0 keeps the supremum 1 - delta (the existing contract)
    assert tradeoff_envelope(np.array([0.0]), np.array([800.0]), np.array([1e-9]))[0] == (
        pytest.approx(1.0 - 1e-9, abs=1e-16))


def test_laplace_composition_tradeoff_at_a_subnormal_rate_is_a_lower_bound():
    # two Laplace(b = 0.001) runs, one coordinate's threshold test at level a:
    # reject x1 > t, P(x1 > t) = e^{-t/b}/2 = a, beta = e^{-(1 - t)/b}/2
    b = 0.001
    run = compose([LaplaceMechanism(b=b)], [2])
    got = np.asarray(run.tradeoff(SUBNORMAL), dtype=float)
    with mpmath.workdps(40):
        for a, g in zip(SUBNORMAL, got, strict=True):
            t = b * mpmath.log(mpmath.mpf(0.5) / mpmath.mpf(a))
            beta = mpmath.exp(-(1 - t) / b) / 2
            assert mpmath.mpf(g) <= beta, (a, g, beta)


def _rr_np_curve(p: float, n: int, alpha: float) -> mpmath.mpf:
    """Neyman-Pearson curve of n binary RR(p) at alpha, 45 digits (exact binomial masses)."""
    with mpmath.workdps(45):
        pp = mpmath.mpf(p)
        a = mpmath.mpf(alpha)
        spent, power = mpmath.mpf(0), mpmath.mpf(0)
        for j in range(n + 1):
            mp_ = mpmath.binomial(n, j) * pp**j * (1 - pp) ** (n - j)
            mq = mpmath.binomial(n, j) * (1 - pp) ** j * pp ** (n - j)
            if spent + mp_ >= a:
                return max(mpmath.mpf(0), 1 - power - mq * (a - spent) / mp_)
            spent += mp_
            power += mq
        return mpmath.mpf(0)


@pytest.mark.parametrize(("p", "n"), [(0.8, 1000), (0.75, 1000), (0.75, 4096)])
def test_binary_rr_composition_tradeoff_at_subnormal_rates(p, n):
    # ws38-fix38 reads the envelope at every loss atom (up to n log(p / (1 - p)) > 709):
    # p 0.8, n 1000 read 0.99999999999999822 at 5e-324 against the exact 0.0036990
    run = compose([RandomizedResponse(p=p)], [n])
    got = np.asarray(run.tradeoff(SUBNORMAL), dtype=float)
    for a, g in zip(SUBNORMAL, got, strict=True):
        assert mpmath.mpf(g) <= _rr_np_curve(p, n, float(a)), (a, g)
    assert math.isfinite(float(got[0]))
