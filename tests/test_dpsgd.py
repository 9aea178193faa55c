"""The DP-SGD calibrators (``dpacct.calibrators.dpsgd``): noise multiplier, steps and
sample rate for a target, and the analytic Gaussian.

A calibrated continuous parameter meets the budget and misses it by at most the
relative tolerance, ``target (1 - 5e-5) <= epsilon <= target``, with epsilon recomputed
independently (a fresh composition); an integer one is the extreme feasible value
(``n`` fits, ``n + 1`` does not).  The analytic Gaussian is checked against mpmath at
50 digits, and a Gaussian run of ``k`` full-batch steps against the closed form
(``k`` steps of multiplier ``s`` are one Gaussian of multiplier ``s / sqrt(k)``).
"""

from __future__ import annotations

import math

import pytest
from oracles import gaussian_delta_sigma

from dpacct.accountant import compose, poisson_subsample
from dpacct.calibrators import (
    Calibration,
    UnreachableTargetError,
    analytic_gaussian_sigma,
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


@pytest.mark.parametrize(
    ("eps", "delta"), [(0.1, 1e-5), (1.0, 1e-5), (3.0, 1e-9), (8.0, 1e-12), (1.0, 0.1)]
)
def test_analytic_gaussian_sigma_is_exact(eps, delta):
    sigma = analytic_gaussian_sigma(eps, delta)
    d = gaussian_delta_sigma(sigma, eps)
    # meets delta, and is the smallest such sigma to ~1e-9 relative
    assert d <= delta * (1 + 1e-12)
    assert d >= delta * (1 - 1e-8)
    assert gaussian_delta_sigma(sigma * (1 - 1e-7), eps) > delta


def test_analytic_gaussian_scales_with_sensitivity_and_beats_classical():
    sigma = analytic_gaussian_sigma(0.5, 1e-6)
    assert analytic_gaussian_sigma(0.5, 1e-6, sensitivity=3.0) == pytest.approx(3 * sigma)
    classical = math.sqrt(2 * math.log(1.25 / 1e-6)) / 0.5  # Dwork & Roth, Theorem A.1
    assert sigma < classical


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


@pytest.mark.parametrize(("target", "sigma"), [(1.0, 20.0), (3.0, 8.0)])
def test_max_steps_without_subsampling_is_the_gaussian_closed_form(target, sigma):
    # k full-batch steps of multiplier s are one Gaussian of multiplier s / sqrt(k), so
    # the largest k is floor((s / s*)^2), s* the analytic Gaussian multiplier (mpmath
    # checks it above) -- unless the quotient is within rounding of an integer
    star = analytic_gaussian_sigma(target, DELTA)
    k = (sigma / star) ** 2
    assert abs(k - round(k)) > 1e-6
    assert max_steps(target, DELTA, sigma, 1.0) == math.floor(k)


@pytest.mark.parametrize("epochs", [1e308, 1e19])
def test_epochs_beyond_the_largest_step_count_are_refused_naming_epochs(epochs):
    """epochs = 1e308 gave epochs / sample_rate = inf and math.floor raised
    OverflowError; a step count must be at most 2**63 - 1, as steps= requires."""
    from dpacct.calibrators import calibrate_dp_sgd, steps_from_epochs
    from dpacct.mechanisms import DPSGD

    with pytest.raises(ValueError, match=r"epochs must give at most 2\*\*63 - 1 steps"):
        steps_from_epochs(epochs, 0.1)
    with pytest.raises(ValueError, match=r"epochs must give at most 2\*\*63 - 1 steps"):
        DPSGD(sigma=1.0, sample_rate=0.05, epochs=epochs, loss="logistic", clip=1.0)
    with pytest.raises(ValueError, match=r"epochs must give at most 2\*\*63 - 1 steps"):
        calibrate_dp_sgd(2.0, 1e-5, sample_rate=0.05, epochs=epochs, loss="logistic", clip=1.0)
    assert 9 * 10**18 <= steps_from_epochs(9e17, 0.1) < 2**63


def test_a_budget_every_noise_multiplier_meets_returns_the_smallest_searched():
    """target_epsilon = 1e308: every sigma down to the search's limit meets it, which
    raised 'pass a wider interval or a domain' (an interval get_noise_multiplier does not
    take). The answer is the edge NOISE_MULTIPLIER_MIN, flagged, and it meets the budget."""
    from dpacct.calibrators import get_noise_multiplier
    from dpacct.calibrators.dpsgd import NOISE_MULTIPLIER_MIN

    assert get_noise_multiplier(1e308, 1e-5, 0.01, steps=100) == NOISE_MULTIPLIER_MIN
    res = noise_multiplier(1e308, 1e-5, 0.01, 100, full_output=True)
    assert res.at_domain_edge and res.parameter == NOISE_MULTIPLIER_MIN
    assert res.epsilon <= 1e308
    assert noise_multiplier(1e308, 1e-5, 1.0, 100) == NOISE_MULTIPLIER_MIN  # full batch


def test_a_noise_multiplier_every_step_count_meets_is_named():
    """noise_multiplier = 1e308: no count up to 1e13 spends epsilon = 1; the refusal names
    the noise multiplier instead of asking for an interval max_steps does not take."""
    with pytest.raises(ValueError, match=r"noise_multiplier=1e\+308 .* every step count"):
        max_steps(1.0, 1e-5, noise_multiplier=1e308, sample_rate=0.01)
