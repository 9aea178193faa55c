"""The training calibrators (``dpacct.calibrators.training``): ``calibrate_noisy_gd``,
``calibrate_dp_sgd`` and the naive per-iteration split ``naive_split_sigma``.

A calibrated noise multiplier meets the budget within the relative tolerance, checked
on a composition built here; full-batch gradient descent is a composition of Gaussians,
so it is also checked against the analytic Gaussian (``sqrt(T)`` times the single
Gaussian's multiplier), and the naive split against the Gaussian's exact delta.
"""

from __future__ import annotations

import math

import pytest

from dpacct.accountant import compose, poisson_subsample
from dpacct.calibrators.calibrate import UnreachableTargetError
from dpacct.calibrators.dpsgd import analytic_gaussian_sigma, noise_multiplier
from dpacct.calibrators.training import calibrate_dp_sgd, calibrate_noisy_gd, naive_split_sigma
from dpacct.mechanisms.algorithms.noisy_gd import NoisyGD
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism

DELTA = 1e-5


# ----------------------------------------------------------------------------------
# NoisyGD (full batch)
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("eps, delta, T", [(1.0, 1e-5, 10), (0.3, 1e-6, 250), (8.0, 1e-9, 3)])
def test_noisy_gd_calibrated_sigma_meets_budget(eps, delta, T):
    gd = calibrate_noisy_gd(eps, delta, iterations=T, loss="logistic", clip=1.0)
    assert gd.iterations == T
    hand = compose([GaussianMechanism(sigma=gd.sigma)], counts=[T]).epsilon(delta)
    assert hand == pytest.approx(gd.epsilon(delta), rel=1e-12)
    assert eps * (1 - 1e-3) <= hand <= eps
    # close to the exact answer: sqrt(T) times the analytic single-Gaussian sigma
    exact = math.sqrt(T) * analytic_gaussian_sigma(eps, delta)
    assert gd.sigma == pytest.approx(exact, rel=2e-3)
    assert gd.sigma >= exact * (1 - 1e-9)


def test_noisy_gd_calibrated_iterations_is_largest():
    gd = calibrate_noisy_gd(2.0, DELTA, sigma=20.0, loss="linear", clip=1.0)
    T = gd.iterations
    assert compose([GaussianMechanism(sigma=20.0)], counts=[T]).epsilon(DELTA) <= 2.0
    assert compose([GaussianMechanism(sigma=20.0)], counts=[T + 1]).epsilon(DELTA) > 2.0
    assert T > 50
    with pytest.raises(UnreachableTargetError):
        calibrate_noisy_gd(0.1, DELTA, sigma=1.0, loss="linear", clip=1.0)


@pytest.mark.parametrize("T, low, high", [(10, 2.5, 3.5), (100, 8.0, 11.0), (1000, 25.0, 35.0)])
def test_engine_needs_less_noise_than_naive_split(T, low, high):
    eps = 1.0
    naive = naive_split_sigma(eps, DELTA, T)
    # the naive sigma makes each iteration exactly (eps / T, delta / T)-DP
    assert GaussianMechanism(sigma=naive).delta(eps / T) == pytest.approx(DELTA / T, rel=1e-6)
    engine = calibrate_noisy_gd(eps, DELTA, iterations=T, loss="logistic", clip=1.0).sigma
    ratio = naive / engine
    # measured: 3.08 (T=10), 9.70 (T=100), 30.66 (T=1000); grows like sqrt(T)
    assert ratio > 1.0
    assert low < ratio < high
    # and the naive sigma, given to NoisyGD, over-spends nothing: its epsilon is far below 1
    assert NoisyGD(sigma=naive, iterations=T, loss="logistic", clip=1.0).epsilon(DELTA) < 0.5


def test_noisy_gd_calibrator_validation():
    with pytest.raises(TypeError, match="iterations"):
        calibrate_noisy_gd(1.0, DELTA, loss="linear", clip=1.0)
    with pytest.raises(TypeError, match="iterations"):
        calibrate_noisy_gd(1.0, DELTA, iterations=3, sigma=2.0, loss="linear", clip=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_noisy_gd(0.0, DELTA, iterations=3, loss="linear", clip=1.0)
    with pytest.raises(ValueError, match="delta"):
        calibrate_noisy_gd(1.0, 1.0, iterations=3, loss="linear", clip=1.0)
    with pytest.raises(ValueError, match="iterations"):
        calibrate_noisy_gd(1.0, DELTA, iterations=0, loss="linear", clip=1.0)
    with pytest.raises(ValueError, match="clip"):
        calibrate_noisy_gd(1.0, DELTA, iterations=3, loss="linear", clip=-1.0)
    with pytest.raises(ValueError, match="iterations"):
        naive_split_sigma(1.0, DELTA, 0)


# ----------------------------------------------------------------------------------
# DP-SGD (Poisson-sampled batches)
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("eps, q, kw", [(1.0, 0.1, dict(epochs=10)), (3.0, 0.01, dict(steps=2000))])
def test_dp_sgd_calibrated_sigma_meets_budget(eps, q, kw):
    sgd = calibrate_dp_sgd(eps, DELTA, sample_rate=q, loss="logistic", **kw)
    hand = compose([poisson_subsample(GaussianMechanism(sigma=sgd.sigma), q)], [sgd.steps]).epsilon(
        DELTA
    )
    assert eps * (1 - 1e-3) <= hand <= eps
    # the same answer as the DP-SGD noise multiplier calibrator (same composition)
    assert sgd.sigma == pytest.approx(noise_multiplier(eps, DELTA, q, sgd.steps), rel=1e-12)


def test_dp_sgd_calibrated_with_batch_size():
    sgd = calibrate_dp_sgd(2.0, DELTA, batch_size=50, n=1000, steps=300, loss="linear")
    assert sgd.sample_rate == 0.05 and sgd.steps == 300
    assert 2.0 * (1 - 1e-3) <= sgd.epsilon(DELTA) <= 2.0


def test_dp_sgd_calibrator_validation():
    with pytest.raises(TypeError, match="sample_rate"):
        calibrate_dp_sgd(1.0, DELTA, steps=10, loss="linear")
    with pytest.raises(TypeError, match="n"):
        calibrate_dp_sgd(1.0, DELTA, batch_size=10, steps=10, loss="linear")
    with pytest.raises(ValueError, match="batch_size"):
        calibrate_dp_sgd(1.0, DELTA, batch_size=0, n=10, steps=10, loss="linear")
    with pytest.raises(ValueError, match="batch_size"):
        calibrate_dp_sgd(1.0, DELTA, batch_size=20, n=10, steps=10, loss="linear")
    with pytest.raises(ValueError, match="sample_rate"):
        calibrate_dp_sgd(1.0, DELTA, sample_rate=1.5, steps=10, loss="linear")
    with pytest.raises(ValueError, match="sample_rate"):
        calibrate_dp_sgd(1.0, DELTA, sample_rate=0.001, n=10, steps=10, loss="linear")
    with pytest.raises(ValueError, match="steps"):
        calibrate_dp_sgd(1.0, DELTA, sample_rate=0.1, steps=0, loss="linear")
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_dp_sgd(-1.0, DELTA, sample_rate=0.1, steps=10, loss="linear")
    assert math.isfinite(
        calibrate_dp_sgd(1.0, DELTA, sample_rate=0.1, steps=10, loss="linear").sigma
    )
