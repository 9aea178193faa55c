"""Review 35: randomized response's *upper* ends against 60-digit truths (my own closed forms).

``RandomizedResponse(p, k)`` is pure ``eps0``-DP with ``eps0 = log(p (k - 1) / (1 - p))`` and the
exact curve ``delta(eps) = max(0, p - e^eps (1 - p) / (k - 1))``; its true epsilon at ``delta`` is
``log((p - delta) / q)``.  On main 6aa3888 (and ws35-lowends 2180844) the float ``epsilon0 =
log1p((p k - 1) / (1 - p))`` loses ``p k - 1`` to cancellation when ``p`` is near ``1 / k``, and
every answer read on the float curve (``epsilon``, the upper end of ``epsilon_bounds``,
``delta``) can fall below the truth:
``RandomizedResponse(p=0.3333333333333347, k=3).epsilon(3e-53)`` is 5.995e-15 against the true
6.162e-15 (2.7 % low); ``p = 0.33333333411996857, k = 3``:
``delta(0)`` 1.17995280e-9 against the true 1.17995286e-9; away from 1/k an ulp
(``p = 0.7886586013120358``, binary).  Each test fails there (they were strict xfails
until the fix: ``epsilon0`` from the exact ratio, the curves read at it four ulps up, the float
curve raised by ``2^-49``)."""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpacct.mechanisms import RandomizedResponse


def _truth_epsilon(p: float, k: int, delta: float) -> mp.mpf:
    with mp.workdps(60):
        big_p = mp.mpf(p)
        q = (1 - big_p) / (k - 1)
        if big_p - q <= delta:
            return mp.mpf(0)
        return mp.log(big_p / q) + mp.log1p(-mp.mpf(delta) / big_p)


def _truth_delta(p: float, k: int, eps: float) -> mp.mpf:
    with mp.workdps(60):
        big_p = mp.mpf(p)
        q = (1 - big_p) / (k - 1)
        return max(big_p - mp.exp(mp.mpf(eps)) * q, mp.mpf(0))


def _mechanism(k: int, offset_exp: float) -> tuple[float, RandomizedResponse] | None:
    p = 1.0 / k + (1.0 - 1.0 / k) * 10.0**offset_exp
    try:
        return p, RandomizedResponse(p=p, k=k)
    except ValueError:  # p rounds onto 1/k
        return None


@settings(max_examples=60, deadline=None, derandomize=False)
@given(
    k=st.integers(2, 60),
    offset_exp=st.floats(-15.0, -3.0),
    delta_exp=st.floats(-300.0, -1.0),
)
@example(k=3, offset_exp=math.log10(1.5 * (0.33333333411996857 - 1 / 3)), delta_exp=-300.0)
def test_rr_epsilon_never_below_the_truth(k, offset_exp, delta_exp):
    made = _mechanism(k, offset_exp)
    if made is None:
        return
    p, mech = made
    delta = 10.0**delta_exp
    truth = _truth_epsilon(p, k, delta)
    eps = mech.epsilon(delta)
    hi = mech.epsilon_bounds(delta)[1]
    with mp.workdps(60):
        assert mp.mpf(eps) >= truth, (p, k, delta, eps, truth)
        assert mp.mpf(hi) >= truth, (p, k, delta, hi, truth)


def test_rr_fixed_rows_upper_ends_and_delta():
    """The rows of the module docstring, deterministic."""
    failures = []
    for p, k, delta in (
        (0.3333333333333347, 3, 3.0113457327401455e-53),
        (0.33333333411996857, 3, 0.0),
        (0.7886586013120358, 2, 0.45940639195824823),
    ):
        mech = RandomizedResponse(p=p, k=k)
        truth = _truth_epsilon(p, k, delta)
        with mp.workdps(60):
            if mp.mpf(mech.epsilon(delta)) < truth:
                failures.append(("epsilon", p, k, delta))
    p, k = 0.33333333411996857, 3
    mech = RandomizedResponse(p=p, k=k)
    for eps in (0.0, 1e-9, 3e-9):
        with mp.workdps(60):
            if mp.mpf(float(mech.delta(eps))) < _truth_delta(p, k, eps):
                failures.append(("delta", p, k, eps))
    assert not failures, failures


def test_rr_truths_match_the_mechanism_away_from_the_edge():
    """The references themselves: far from 1/k the mechanism's answers and the 60-digit
    truths agree to 1e-12 relative (so the tests above measure the edge, not a convention)."""
    for p, k in ((0.75, 2), (0.5, 4), (0.9, 10)):
        mech = RandomizedResponse(p=p, k=k)
        for delta in (1e-12, 1e-6, 0.01):
            truth = float(_truth_epsilon(p, k, delta))
            assert mech.epsilon(delta) == pytest.approx(truth, rel=1e-12)
        assert float(mech.delta(0.1)) == pytest.approx(float(_truth_delta(p, k, 0.1)), rel=1e-12)
    assert np.isfinite(float(_truth_epsilon(0.75, 2, 1e-300)))
