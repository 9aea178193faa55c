"""Shuffled batches: the proved bracket and the Poisson number beside it."""

from __future__ import annotations

import math

import pytest

from dpacct.accountant.transformers.shuffling import shuffled_batches
from dpacct.calibrators import gaussian_epsilon
from dpacct.mechanisms import GaussianMechanism


def test_upper_is_one_gaussian_per_epoch():
    r = shuffled_batches(GaussianMechanism(sigma=1.0), 100, 100, 1e-5)
    # 100 Gaussians with sigma 1 are one with mu = sqrt(100)
    assert r.upper == pytest.approx(gaussian_epsilon(math.sqrt(100.0), 1e-5), rel=1e-6)
    assert r.lower <= r.upper
    assert 0 < r.poisson < r.upper


def test_mnist_setting_bracket():
    r = shuffled_batches(GaussianMechanism(sigma=1.1), 234, 60, 1e-5)
    assert 0 < r.lower <= r.upper
    assert r.steps_per_epoch == 234 and r.epochs == 60


def test_bad_inputs():
    with pytest.raises(TypeError, match="mechanism"):
        shuffled_batches(None, 10, 1, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        shuffled_batches(GaussianMechanism(sigma=1.0), 10, 1, 2.0)


@pytest.mark.parametrize("sigma", [1e6, 1e308])
def test_huge_noise_gives_zeros_at_once(sigma):
    # main at 4230a13 raised ZeroDivisionError at 1e308; 100 * 10 unamplified steps have
    # total variation erf(sqrt(1000) / sigma / (2 sqrt 2)) < 1e-4 = delta: all three are 0
    assert math.erf(math.sqrt(1000) / sigma / (2 * math.sqrt(2))) < 1e-4
    r = shuffled_batches(GaussianMechanism(sigma=sigma), 100, 10, 1e-4)
    assert (r.upper, r.lower, r.poisson) == (0.0, 0.0, 0.0)
