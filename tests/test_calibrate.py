"""Tests for ``dpacct.calibrators.calibrate`` (generic search) and ``dpacct.calibrators.dpsgd``.

The central claim: a calibrated continuous parameter meets the budget and misses it by
at most the default relative tolerance, ``target (1 - 5e-5) <= epsilon <= target``, where epsilon
is recomputed independently with the engine (a fresh mechanism, no shared cache).
Integer parameters are the extreme feasible value (``n`` fits, ``n + 1`` does not).
The analytic Gaussian calibration is checked against mpmath at 50 digits.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.mechanism import Mechanism
from dpacct.calibrators import (
    Calibration,
    CalibrationError,
    UnreachableTargetError,
    analytic_gaussian_sigma,
    calibrate,
    get_noise_multiplier,
    max_sample_rate,
    max_steps,
    noise_multiplier,
    steps_from_epochs,
)
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5
RTOL = 5e-5  # the calibrators' default relative tolerance (0.005 % of the budget)


def dpsgd_epsilon(sigma: float, q: float, steps: int, delta: float = DELTA) -> float:
    """Independent evaluation: a fresh composition, built here from the engine's primitives."""
    run = compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[steps])
    return float(run.epsilon(delta))


def gaussian(s: float) -> Mechanism:
    return GaussianMechanism(sigma=s)


def in_window(eps: float, target: float, rtol: float = RTOL) -> bool:
    return target * (1.0 - rtol) <= eps <= target


# ----------------------------------------------------------------------------------
# the noise multiplier on a grid of targets, sample rates and step counts
# ----------------------------------------------------------------------------------

GRID = [
    (eps, q, steps)
    for eps in (1.0, 3.0, 8.0)
    for q, steps in ((0.01, 10_000), (0.05, 1_000), (0.2, 50), (1.0, 20))
]


@pytest.mark.parametrize(("target", "q", "steps"), GRID)
def test_noise_multiplier_meets_target_within_tolerance(target, q, steps):
    res = noise_multiplier(target, DELTA, q, steps, full_output=True)
    assert isinstance(res, Calibration)
    eps = dpsgd_epsilon(res.parameter, q, steps)
    assert in_window(eps, target), (res.parameter, eps)
    assert res.epsilon == pytest.approx(eps, rel=1e-12)
    assert res.evaluations <= 8


@pytest.mark.parametrize("target", [1.0, 3.0, 8.0])
def test_noise_multiplier_design_workload_needs_few_evaluations(target):
    """q = 0.01, 10 000 steps: a handful of tight evaluations (the wall-clock time is
    measured in ``benchmarks/``)."""
    res = noise_multiplier(target, DELTA, 0.01, 10_000, full_output=True)
    assert res.evaluations <= 5
    assert in_window(res.epsilon, target)
    assert in_window(dpsgd_epsilon(res.parameter, 0.01, 10_000), target)


@pytest.mark.parametrize("target", [1.0, 3.0, 8.0])
def test_noise_multiplier_default_uses_the_budget_to_a_hundredth_of_a_percent(target):
    """The default answer is sound and tight at once: the engine's precise certified
    bracket (``tol=1e-5``, a fresh mechanism) at the returned sigma lies in
    ``[target (1 - 1e-4), target]`` (dp_accounting's own calibration lands there too)."""
    sigma = noise_multiplier(target, DELTA, 0.01, 10_000)
    run = compose([poisson_subsample(GaussianMechanism(sigma=sigma), 0.01)], counts=[10_000])
    lower, upper = run.epsilon_bounds(DELTA, tol=1e-5)
    assert upper <= target, (sigma, upper)
    assert lower >= target * (1.0 - 1e-4), (sigma, lower)


@pytest.mark.slow
@pytest.mark.parametrize("target", [1.0, 8.0])
def test_noise_multiplier_default_against_dp_accounting(target):
    """An independent accountant at the returned sigma: dp_accounting's PLD (pessimistic,
    connect-the-dots at a fine grid) brackets the true epsilon from above, so it must lie
    above the target's 99.98 % (the budget is used), and its optimistic estimate must
    lie below the target (the budget is met)."""
    dpa = pytest.importorskip("dp_accounting")
    sigma = noise_multiplier(target, DELTA, 0.01, 10_000)

    def eps(pessimistic: bool) -> float:
        pld = dpa.pld.privacy_loss_distribution.from_gaussian_mechanism(
            sigma,
            value_discretization_interval=1e-4,
            pessimistic_estimate=pessimistic,
            sampling_prob=0.01,
            use_connect_dots=True,
        )
        return pld.self_compose(10_000).get_epsilon_for_delta(DELTA)

    assert eps(True) >= target * (1.0 - 2e-4)
    assert eps(False) <= target


def test_secant_that_stays_on_one_side_still_closes_the_bracket():
    """q = 0.001, 1 000 steps: the CLT steering estimate is far off and the residual
    secant approaches the crossing from the feasible side only; a doubled step across
    closes the bracket instead of falling back on bisection (12 evaluations before)."""
    res = noise_multiplier(0.5, 1e-6, 0.001, 1_000, full_output=True)
    assert in_window(dpsgd_epsilon(res.parameter, 0.001, 1_000, 1e-6), 0.5)
    assert res.evaluations <= 9


def test_noise_multiplier_with_larger_tolerance_and_epochs():
    sigma = noise_multiplier(2.0, 1e-6, sample_rate=0.02, epochs=4, rtol=0.05)
    steps = steps_from_epochs(4, 0.02)
    assert steps == 200
    assert in_window(dpsgd_epsilon(sigma, 0.02, steps, 1e-6), 2.0, rtol=0.05)


def test_noise_multiplier_without_subsampling_is_the_analytic_gaussian():
    sigma = noise_multiplier(1.0, DELTA, sample_rate=1.0, steps=100)
    assert sigma == pytest.approx(10.0 * analytic_gaussian_sigma(1.0, DELTA), rel=1e-9)
    assert dpsgd_epsilon(sigma, 1.0, 100) <= 1.0


def test_noise_multiplier_decreases_with_the_budget():
    sigmas = [noise_multiplier(e, DELTA, 0.05, 500) for e in (0.5, 2.0, 8.0)]
    assert sigmas[0] > sigmas[1] > sigmas[2]


def test_get_noise_multiplier_takes_opacus_arguments():
    sigma = get_noise_multiplier(
        target_epsilon=3.0, target_delta=DELTA, sample_rate=0.05, steps=1_000
    )
    assert sigma == noise_multiplier(3.0, DELTA, 0.05, 1_000)
    # positional order of opacus: (target_epsilon, target_delta, sample_rate, epochs, steps)
    by_epochs = get_noise_multiplier(3.0, DELTA, 0.05, 50, accountant="prv")
    assert by_epochs == pytest.approx(sigma, rel=1e-12)
    # opacus's absolute epsilon_tolerance
    loose = get_noise_multiplier(3.0, DELTA, 0.05, steps=1_000, epsilon_tolerance=0.05)
    assert 2.95 <= dpsgd_epsilon(loose, 0.05, 1_000) <= 3.0
    with pytest.raises(ValueError, match="accountant"):
        get_noise_multiplier(3.0, DELTA, 0.05, steps=10, accountant="magic")


def test_steps_from_epochs_forgives_floating_point():
    assert steps_from_epochs(3, 0.01) == 300  # 3 / 0.01 == 299.99999999999994
    assert steps_from_epochs(1.5, 0.1) == 15
    assert steps_from_epochs(60, 256 / 60_000) == 14_062
    with pytest.raises(ValueError, match="at least one step"):
        steps_from_epochs(0.001, 0.5)


# ----------------------------------------------------------------------------------
# steps and sample rate
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "sigma", "q"),
    [(1.0, 10.0, 1.0), (3.0, 2.0, 0.1), (2.0, 0.7, 0.02), (8.0, 1.0, 0.05)],
)
def test_max_steps_is_the_largest_feasible_count(target, sigma, q):
    n = max_steps(target, DELTA, sigma, q)
    assert isinstance(n, int)
    assert dpsgd_epsilon(sigma, q, n) <= target < dpsgd_epsilon(sigma, q, n + 1)


def test_max_steps_unreachable_names_the_reachable_range():
    with pytest.raises(UnreachableTargetError) as info:
        max_steps(0.1, DELTA, noise_multiplier=1.0, sample_rate=1.0)
    err = info.value
    assert isinstance(err, ValueError)
    one_step = GaussianMechanism(sigma=1.0).epsilon(DELTA)
    assert err.reachable[0] == pytest.approx(one_step)
    assert f"{one_step:.6g}" in str(err)
    assert "steps=1" in str(err)


@pytest.mark.parametrize(("target", "sigma", "steps"), [(3.0, 1.0, 1_000), (1.0, 2.0, 5_000)])
def test_max_sample_rate_meets_target_within_tolerance(target, sigma, steps):
    res = max_sample_rate(target, DELTA, sigma, steps, full_output=True)
    assert 0 < res.parameter < 1 and not res.at_domain_edge
    assert in_window(dpsgd_epsilon(sigma, res.parameter, steps), target)


def test_max_sample_rate_is_one_when_full_batches_fit():
    res = max_sample_rate(3.0, DELTA, noise_multiplier=50.0, steps=10, full_output=True)
    assert res.parameter == 1.0 and res.at_domain_edge
    assert res.epsilon <= 3.0


# ----------------------------------------------------------------------------------
# analytic Gaussian (Balle & Wang 2018) against mpmath
# ----------------------------------------------------------------------------------


def mp_gaussian_delta(sigma: float, eps: float) -> mp.mpf:
    with mp.workdps(50):
        mu = 1 / mp.mpf(sigma)
        e = mp.mpf(eps)
        return mp.ncdf(mu / 2 - e / mu) - mp.exp(e) * mp.ncdf(-mu / 2 - e / mu)


@pytest.mark.parametrize(
    ("eps", "delta"), [(0.1, 1e-5), (1.0, 1e-5), (3.0, 1e-9), (8.0, 1e-12), (1.0, 0.1)]
)
def test_analytic_gaussian_sigma_is_exact(eps, delta):
    sigma = analytic_gaussian_sigma(eps, delta)
    d = mp_gaussian_delta(sigma, eps)
    # meets delta, and is the smallest such sigma to ~1e-9 relative
    assert d <= delta * (1 + 1e-12)
    assert d >= delta * (1 - 1e-8)
    assert mp_gaussian_delta(sigma * (1 - 1e-7), eps) > delta


def test_analytic_gaussian_scales_with_sensitivity_and_beats_classical():
    sigma = analytic_gaussian_sigma(0.5, 1e-6)
    assert analytic_gaussian_sigma(0.5, 1e-6, sensitivity=3.0) == pytest.approx(3 * sigma)
    classical = math.sqrt(2 * math.log(1.25 / 1e-6)) / 0.5  # Dwork & Roth, Theorem A.1
    assert sigma < classical


# ----------------------------------------------------------------------------------
# the generic calibrator
# ----------------------------------------------------------------------------------


def test_calibrate_continuous_matches_analytic_gaussian():
    res = calibrate(gaussian, 1.0, DELTA)
    sigma, mech = res  # unpacks as (parameter, mechanism)
    assert mech == GaussianMechanism(sigma=sigma)
    assert in_window(GaussianMechanism(sigma=sigma).epsilon(DELTA), 1.0)
    assert sigma == pytest.approx(analytic_gaussian_sigma(1.0, DELTA), rel=2e-3)


def test_calibrate_rtol_is_honoured():
    res = calibrate(gaussian, 1.0, DELTA, rtol=1e-8)
    assert in_window(res.epsilon, 1.0, rtol=1e-8)
    assert res.parameter == pytest.approx(analytic_gaussian_sigma(1.0, DELTA), rel=1e-7)


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


def test_fixed_ratio_family_calibrates_the_common_scale():
    def two_scales(sigma1, sigma2):
        return compose([GaussianMechanism(sigma=sigma1), GaussianMechanism(sigma=sigma2)])

    res = calibrate(two_scales, 1.0, DELTA, ratios={"sigma1": 2.0, "sigma2": 3.0})
    s = res.parameter
    assert res.parameters == {"sigma1": 2.0 * s, "sigma2": 3.0 * s}
    assert in_window(two_scales(2.0 * s, 3.0 * s).epsilon(DELTA), 1.0)
    # the same family, positional
    res2 = calibrate(two_scales, 1.0, DELTA, ratios=[2.0, 3.0])
    assert res2.parameters == (2.0 * res2.parameter, 3.0 * res2.parameter)
    assert res2.parameter == pytest.approx(s, rel=2e-3)


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


def test_progress_bar_is_silent_for_fast_searches(capsys):
    calibrate(gaussian, 1.0, DELTA)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


# ----------------------------------------------------------------------------------
# input validation
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "exc", "name"),
    [
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"epsilon": math.nan}, ValueError, "epsilon"),
        ({"epsilon": math.inf}, ValueError, "epsilon"),
        ({"delta": 0.0}, ValueError, "delta"),
        ({"delta": 1.0}, ValueError, "delta"),
        ({"delta": math.nan}, ValueError, "delta"),
        ({"rtol": 0.0}, ValueError, "rtol"),
        ({"rtol": 0.7}, ValueError, "rtol"),
        ({"interval": (2.0, 1.0)}, ValueError, "interval"),
        ({"interval": (-1.0, 1.0)}, ValueError, r"interval\[0\]"),
        ({"interval": 3.0}, TypeError, "interval"),
        ({"ratios": {"a": -1.0}}, ValueError, "ratios"),
        ({"ratios": [2.0], "integer": True}, ValueError, "ratios"),
        ({"max_evaluations": 1}, ValueError, "max_evaluations"),
        ({"start": 0.0}, ValueError, "start"),
        ({"estimate": 3.0}, TypeError, "estimate"),
    ],
)
def test_calibrate_rejects_bad_arguments(kwargs, exc, name):
    args = {"epsilon": 1.0, "delta": DELTA}
    args.update(kwargs)
    with pytest.raises(exc, match=name):
        calibrate(gaussian, **args)


def test_calibrate_rejects_bad_families():
    with pytest.raises(TypeError, match="family must be callable"):
        calibrate(3.0, 1.0, DELTA)
    with pytest.raises(TypeError, match="family must return a Mechanism"):
        calibrate(lambda s: s, 1.0, DELTA)


@pytest.mark.parametrize(
    ("call", "exc", "name"),
    [
        (lambda: noise_multiplier(1.0, DELTA, 0.0, 100), ValueError, "sample_rate"),
        (lambda: noise_multiplier(1.0, DELTA, 1.5, 100), ValueError, "sample_rate"),
        (lambda: noise_multiplier(1.0, DELTA, math.nan, 100), ValueError, "sample_rate"),
        (lambda: noise_multiplier(1.0, DELTA, 0.1, -5), ValueError, "steps"),
        (lambda: noise_multiplier(1.0, DELTA, 0.1, 2.5), TypeError, "steps"),
        (lambda: noise_multiplier(1.0, DELTA, 0.1), TypeError, "steps or epochs"),
        (lambda: noise_multiplier(1.0, DELTA, 0.1, 10, epochs=1), ValueError, "not both"),
        (lambda: noise_multiplier(1.0, 2.0, 0.1, 10), ValueError, "delta"),
        (lambda: max_steps(1.0, DELTA, 0.0), ValueError, "noise_multiplier"),
        (lambda: max_steps(1.0, DELTA, -1.0), ValueError, "noise_multiplier"),
        (lambda: max_sample_rate(1.0, DELTA, 1.0, 0), ValueError, "steps"),
        (lambda: analytic_gaussian_sigma(1.0, DELTA, sensitivity=0.0), ValueError, "sensitivity"),
        (lambda: analytic_gaussian_sigma(0.0, DELTA), ValueError, "epsilon"),
        (lambda: get_noise_multiplier(-1.0, DELTA, 0.1, steps=10), ValueError, "target_epsilon"),
        (lambda: get_noise_multiplier(1.0, 0.0, 0.1, steps=10), ValueError, "target_delta"),
    ],
)
def test_convenience_calibrators_reject_bad_arguments(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


def test_clt_steering_estimate_matches_opacus_gaussian_accountant():
    """The steering estimate is Bu et al. 2020's central-limit Gaussian DP; opacus'
    GaussianAccountant (same theorem, independent code) prints 6.007077 for q = 0.01,
    sigma = 1, 10 000 steps at delta = 1e-5 in this project's benchmark run."""
    from dpacct.calibrators.dpsgd import _clt_epsilon

    assert _clt_epsilon(1.0, 0.01, 10_000, 1e-5) == pytest.approx(6.007077, rel=1e-6)


# ----------------------------------------------------------------------------------
# pure DP: delta = 0 calibrates on Mechanism.pure_epsilon
# ----------------------------------------------------------------------------------
def test_pure_dp_calibration_against_closed_forms():
    from dpacct.mechanisms import LaplaceMechanism, RandomizedResponse, TreeQuantiles

    # a tree of depth 3 with Laplace(s) per level costs 3 / s: s = 3 / epsilon
    tree = calibrate(lambda s: TreeQuantiles(lower=0.0, upper=1.0, bins=4096, scale=s),
                     epsilon=0.7, delta=0)
    assert tree.mechanism.depth == 3
    assert tree.parameter == pytest.approx(3 / 0.7, rel=1.001e-3)
    assert 0.7 * (1 - 1e-3) <= tree.epsilon <= 0.7
    assert tree.delta == 0.0
    # the largest number of Laplace(b=8) releases at pure epsilon 1 is 8 (1/8 is exact in
    # binary; with b=10 the float 0.1 lies above 1/10, and the cap rounds its sums up)
    k = calibrate(lambda k: compose([LaplaceMechanism(b=8.0)], counts=[k]), epsilon=1.0,
                  delta=0, integer=True)
    assert k.parameter == 8
    # binary randomized response is ln(p / (1 - p))-DP
    rr = calibrate(lambda p: RandomizedResponse(p=p), epsilon=1.0, delta=0,
                   interval=(0.55, 0.9), domain=(0.5, 1.0))
    assert math.log(rr.parameter / (1 - rr.parameter)) == pytest.approx(1.0, rel=1.001e-3)
    with pytest.raises(ValueError, match="delta=0 needs a pure-DP family"):
        calibrate(lambda s: GaussianMechanism(sigma=s), epsilon=1.0, delta=0)
    with pytest.raises(ValueError, match="delta"):
        calibrate(lambda s: LaplaceMechanism(b=s), epsilon=1.0, delta=-1e-9)
