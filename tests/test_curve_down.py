"""Tests of accountant/curve_down.py: every exact curve rounded down is below the truth,
and the lower ends read from it are below the true epsilon (60-digit mpmath references,
each made under its own ``mpmath.workdps``).

The k-ary randomized response guard fails with the bisection's lower end (session 35:
316 of 2 000 random cases above the truth, ``benchmarks/lowends_survey.py``).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpacct.accountant import compose
from dpacct.accountant.curve_down import (
    DOWN_FACTOR,
    float_below,
    gap_up,
    kov_constants,
    lower_end,
    rr_delta_down,
)
from dpacct.accountant.mechanism import Mechanism
from dpacct.mechanisms import (
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    PureDPMechanism,
    RandomizedResponse,
)

LOG_DELTA = st.floats(math.log(1e-300), math.log(0.5))
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _rr_truth(p, q, e):
    return max(mp.mpf(0), p - mp.exp(e) * q)


def _pure_truth(e0, e):
    p = 1 / (1 + mp.exp(-e0))
    return _rr_truth(p, p * mp.exp(-e0), e)


def _assert_below_truth(lo: float, delta: float, truth) -> None:
    """``lo`` is at most the true epsilon: the true curve at ``lo`` is >= delta."""
    if lo <= 0.0:
        return
    with mp.workdps(60):
        assert truth(mp.mpf(lo)) >= delta, (lo, delta)


def test_float_below_and_gap_up_round_the_right_way():
    with mp.workdps(60):
        for x in (mp.mpf(1) / 3, mp.pi, mp.mpf(2) ** -1000, mp.mpf(10) ** 300):
            assert mp.mpf(float_below(x)) < x
    eps = np.array([0.3, 1.0, 2.5])
    g = gap_up(eps, 1.1)
    with mp.workdps(60):
        for e, gi in zip(eps, g, strict=True):
            assert mp.mpf(gi) >= min(mp.mpf(e) - mp.mpf(1.1), 0)


@FAST
@given(st.floats(1e-8, 700.0), LOG_DELTA)
def test_rr_delta_down_is_below_the_pure_curve(eps0, log_eps_frac):
    e = eps0 * math.exp(log_eps_frac) * 2.0  # in (0, eps0)
    p_lo, e_lo = kov_constants(eps0)
    down = float(rr_delta_down(p_lo, e_lo, np.array([e]))[0])
    with mp.workdps(60):
        assert down <= _pure_truth(mp.mpf(eps0), mp.mpf(e))


def test_lower_end_is_the_largest_float_above_delta():
    lo = lower_end(lambda e: np.exp(-e) * DOWN_FACTOR, 1e-3, 5.0, 7.0)
    assert np.exp(-lo) * DOWN_FACTOR > 1e-3 >= np.exp(-math.nextafter(lo, 8.0)) * DOWN_FACTOR
    assert lower_end(lambda e: np.zeros_like(e), 1e-3, 1.0, 2.0) == 0.0


def test_lower_end_without_an_upper_end_keeps_a_sound_start():
    # (eps0, d0) with delta < d0: the curve never reaches delta (upper end inf)
    m = Mechanism.from_epsilon_delta(1.0, 1e-5)
    lo, hi = m.epsilon_bounds(1e-300)
    assert hi == math.inf and lo > 2.0**900


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([2, 3, 10, 1000]),
    st.floats(math.log(1e-12), math.log(0.999)),
    LOG_DELTA,
)
def test_randomized_response_lower_end_below_the_truth(k, log_gap, log_delta):
    """Guard: fails with the bisection's lower end (p near 1/k: p k - 1 cancels)."""
    p = 1.0 / k + (1.0 - 1.0 / k) * math.exp(log_gap)
    if not 1.0 / k < p < 1.0:
        return
    try:
        m = RandomizedResponse(p=p, k=k)
    except ValueError:
        return
    delta = math.exp(log_delta)
    lo, hi = m.epsilon_bounds(delta)
    assert lo <= hi
    with mp.workdps(60):
        pm = mp.mpf(p)
        q = (1 - pm) / (k - 1)
    _assert_below_truth(lo, delta, lambda e: _rr_truth(pm, q, e))


def test_randomized_response_found_case():
    # session 35's survey: the old lower end 2.3850376205751283e-06 was above the truth
    p, k, delta = 0.3333338633419041, 3, 3.165166536146461e-293
    lo, _ = RandomizedResponse(p=p, k=k).epsilon_bounds(delta)
    with mp.workdps(60):
        pm = mp.mpf(p)
        truth = _rr_truth(pm, (1 - pm) / 2, mp.mpf(lo))
    assert lo < 2.3850376205751283e-06 and truth >= delta


@FAST
@given(
    st.sampled_from(["pure", "discrete_laplace", "declared", "plain_em", "bounded_range"]),
    st.floats(math.log(1e-8), math.log(600.0)),
    LOG_DELTA,
)
def test_pure_families_lower_ends_below_the_truth(family, log_e0, log_delta):
    e0 = math.exp(log_e0)
    delta = math.exp(log_delta)
    if family == "bounded_range":
        m = ExponentialMechanism(epsilon=e0)

        def truth(e):
            em = mp.mpf(e0)
            return (mp.exp(em / 2) - mp.exp(min(e, em) / 2)) ** 2 / mp.expm1(em)
    else:
        if family == "discrete_laplace":
            scale = 1.0 / e0
            m = DiscreteLaplaceMechanism(scale=scale)
            exact = lambda: 1 / mp.mpf(scale)  # noqa: E731
        else:
            m = {
                "pure": PureDPMechanism,
                "declared": Mechanism.from_pure_epsilon,
                "plain_em": lambda x: ExponentialMechanism(x, bounded_range=False),
            }[family](e0)
            exact = lambda: mp.mpf(e0)  # noqa: E731

        def truth(e):
            return _pure_truth(exact(), e)

    lo, hi = m.epsilon_bounds(delta)
    assert lo <= hi
    _assert_below_truth(lo, delta, truth)
    plo, _ = m.epsilon_bounds(0.0)  # the pure epsilon's bracket
    _assert_below_truth(plo, 0.0, lambda e: truth(e) if truth(e) > 0 else mp.mpf(-1))


@FAST
@given(st.floats(math.log(1e-6), math.log(50.0)), st.floats(math.log(1e-300), math.log(1e-2)),
       LOG_DELTA)
def test_epsilon_delta_declaration_lower_end_below_the_truth(log_e0, log_d0, log_delta):
    e0, d0, delta = math.exp(log_e0), math.exp(log_d0), math.exp(log_delta)
    lo, _ = Mechanism.from_epsilon_delta(e0, d0).epsilon_bounds(delta)
    with mp.workdps(60):
        pm = (1 - mp.mpf(d0)) / (1 + mp.exp(-mp.mpf(e0)))

    def truth(e):
        return mp.mpf(d0) + _rr_truth(pm, pm * mp.exp(-mp.mpf(e0)), e)

    _assert_below_truth(lo, delta, truth)


@pytest.mark.parametrize("p, n", [(0.75, 40), (0.5000001, 10**6), (0.99, 7)])
def test_binomial_rr_composition_lower_end_below_the_truth(p, n):
    run = compose([RandomizedResponse(p=p)], [n])
    assert run._exact is not None and run._delta_exact_down is not None
    e0 = math.log(p / (1 - p))
    for delta in (0.3, 1e-5, 1e-40):
        lo, hi = run.epsilon_bounds(delta)
        assert lo <= hi
        if lo <= 0.0 or n > 1000:
            continue  # mpmath's binomial sum is brute force: small n only
        with mp.workdps(60):
            pm = mp.mpf(p)
            cells = [
                (mp.binomial(n, j) * pm**j * (1 - pm) ** (n - j), mp.mpf(e0) * 0 + (2 * j - n)
                 * mp.log(pm / (1 - pm)))
                for j in range(n + 1)
            ]
            truth = mp.fsum(m * (1 - mp.exp(mp.mpf(lo) - loss)) for m, loss in cells if loss > lo)
        assert truth >= delta
