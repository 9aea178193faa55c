"""The search behind ``calibrate`` (``dpacct.calibrators.search``): a bracket that widens
itself, the direction detected, integer answers at the feasible extreme, the answer
always on the feasible side, and its errors.

Epsilons are recomputed independently on fresh mechanisms; integer answers are checked
as ``n`` fits and ``n + 1`` (or ``n - 1``) does not.
"""

from __future__ import annotations

import pytest

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.mechanism import Mechanism
from dpacct.calibrators import CalibrationError, UnreachableTargetError, calibrate
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5
RTOL = 1e-3


def dpsgd_epsilon(sigma: float, q: float, steps: int, delta: float = DELTA) -> float:
    """Independent evaluation: a fresh composition, built here from the engine's primitives."""
    run = compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[steps])
    return float(run.epsilon(delta))


def gaussian(s: float) -> Mechanism:
    return GaussianMechanism(sigma=s)


def in_window(eps: float, target: float, rtol: float = RTOL) -> bool:
    return target * (1.0 - rtol) <= eps <= target


@pytest.mark.parametrize("interval", [(1e-3, 2e-3), (1e3, 1e4), (3.0, 3.0)])
def test_bracket_widens_itself(interval):
    res = calibrate(gaussian, 1.0, DELTA, interval=interval)
    assert in_window(res.epsilon, 1.0)
    assert res.evaluations <= 15


@pytest.mark.parametrize("target", [1e-3, 200.0])
def test_extreme_targets_are_reached(target):
    res = calibrate(gaussian, target, DELTA)
    assert in_window(res.epsilon, target)


def test_direction_is_detected_for_increasing_families():
    # epsilon grows with the count of a composition
    res = calibrate(
        lambda k: compose([GaussianMechanism(sigma=10.0)], counts=[k]), 1.0, DELTA, integer=True
    )
    n = res.parameter
    assert n == 7
    assert compose([GaussianMechanism(sigma=10.0)], [n]).epsilon(DELTA) <= 1.0
    assert compose([GaussianMechanism(sigma=10.0)], [n + 1]).epsilon(DELTA) > 1.0


def test_integer_decreasing_family_returns_the_smallest_feasible_value():
    res = calibrate(lambda k: GaussianMechanism(sigma=float(k)), 1.0, DELTA, integer=True)
    assert res.parameter == 4
    assert (
        GaussianMechanism(sigma=4.0).epsilon(DELTA) <= 1.0 < GaussianMechanism(3.0).epsilon(DELTA)
    )


def test_integer_search_uses_few_evaluations_at_large_counts():
    step = poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)
    res = calibrate(
        lambda k: compose([step], counts=[k]),
        2.0,
        DELTA,
        integer=True,
        increasing=True,
        interval=(100, 200),
    )
    n = res.parameter
    assert dpsgd_epsilon(1.0, 0.01, n) <= 2.0 < dpsgd_epsilon(1.0, 0.01, n + 1)
    assert res.evaluations <= 14


def test_answer_is_always_on_the_feasible_side_even_when_the_window_cannot_be_hit():
    # epsilon jumps across the whole tolerance window (sigma rounded to 0.1)
    res = calibrate(lambda s: GaussianMechanism(sigma=round(s, 1)), 1.0, DELTA)
    assert res.epsilon <= 1.0
    assert round(res.parameter, 1) == 3.8  # the first rounded sigma that meets the budget


def test_a_misleading_estimate_does_not_affect_soundness():
    for est in (lambda s: 3.0 / s, lambda s: 30.0 / s**3, lambda s: 1.0):
        res = calibrate(gaussian, 1.0, DELTA, estimate=est, increasing=False)
        assert in_window(res.epsilon, 1.0)


def test_domain_edge_is_returned_when_everything_fits():
    res = calibrate(
        lambda q: poisson_subsample(GaussianMechanism(sigma=20.0), q),
        1.0,
        DELTA,
        domain=(0.0, 1.0),
        interval=(0.1, 0.5),
    )
    assert res.parameter == 1.0 and res.at_domain_edge


def test_parameter_independent_family_is_an_error():
    with pytest.raises(CalibrationError, match="does not depend on"):
        calibrate(lambda s: GaussianMechanism(sigma=1.0), 1.0, DELTA)


def test_unreachable_when_the_domain_stops_the_search():
    with pytest.raises(UnreachableTargetError) as info:
        calibrate(gaussian, 0.5, DELTA, domain=(0.1, 2.0), increasing=False)
    msg = str(info.value)
    assert "parameter=2" in msg and "end of its domain" in msg
    low = info.value.reachable[0]
    assert low == pytest.approx(GaussianMechanism(sigma=2.0).epsilon(DELTA))
    assert low > 0.5


def test_errors_are_value_errors_that_carry_the_reachable_range():
    assert issubclass(UnreachableTargetError, CalibrationError)
    assert issubclass(CalibrationError, ValueError)
    # sigma in [0.1, 2] reaches at best the epsilon of sigma = 2 (closed form, as a
    # fresh mechanism): a target below it is unreachable, and the error says so
    with pytest.raises(UnreachableTargetError) as info:
        calibrate(gaussian, 0.01, DELTA, domain=(0.1, 2.0), increasing=False)
    lo, hi = info.value.reachable
    assert lo == pytest.approx(GaussianMechanism(sigma=2.0).epsilon(DELTA), rel=1e-12)
    assert lo <= hi
