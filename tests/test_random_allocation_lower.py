"""Random allocation checked from below (``transformers/random_allocation_lower.py``).

With one step per epoch random allocation is the Gaussian mechanism (the record is in
the only step), so both tools have closed forms to meet: ``e`` epochs of multiplier
``s`` are ``sqrt(e)/s``-GDP (Balle & Wang 2018, Theorem 8).  The attack's lower bound
must stay below the exact epsilon (and, the largest coordinate of one coordinate being
the coordinate itself, close to it); the Monte Carlo interval must cover the exact
delta, at a fixed seed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from dpacct.accountant.transformers.random_allocation import random_allocation
from dpacct.accountant.transformers.random_allocation_lower import (
    random_allocation_delta_mc,
    random_allocation_lower_epsilon,
)
from dpacct.mechanisms import GaussianMechanism


def gdp_delta(mu: float, eps: float) -> float:
    return float(
        stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
    )


def gdp_epsilon(mu: float, delta: float) -> float:
    return optimize.brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, 100.0, xtol=1e-13)


@pytest.mark.parametrize(("sigma", "epochs"), [(1.0, 1), (2.0, 4)])
def test_lower_bound_of_one_step_is_below_and_near_the_gaussian(sigma, epochs):
    delta = 1e-6
    exact = gdp_epsilon(math.sqrt(epochs) / sigma, delta)
    lo = random_allocation_lower_epsilon(sigma, 1, delta, epochs=epochs)
    assert exact * (1 - 1e-3) <= lo <= exact


def test_lower_bound_is_below_the_upper_bound_with_many_steps():
    lo = random_allocation_lower_epsilon(1.0, 100, 1e-6)
    hi = random_allocation(GaussianMechanism(sigma=1.0), steps=100).epsilon(1e-6)
    assert 0 < lo <= hi


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_monte_carlo_of_one_step_covers_the_gaussian_delta(direction):
    sigma, eps = 1.0, 0.5
    est, lo, hi = random_allocation_delta_mc(
        sigma,
        1,
        eps,
        samples=200_000,
        rng=np.random.default_rng(1),
        direction=direction,
        confidence=0.9999,
    )
    assert lo <= gdp_delta(1.0 / sigma, eps) <= hi
    assert lo <= est <= hi


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="sigma"):
        random_allocation_lower_epsilon(0.0, 10, 1e-6)
    with pytest.raises(ValueError, match="steps"):
        random_allocation_lower_epsilon(1.0, 0, 1e-6)
    with pytest.raises(TypeError, match="rng"):
        random_allocation_delta_mc(1.0, 10, 1.0, rng=0)
    with pytest.raises(ValueError, match="direction"):
        random_allocation_delta_mc(1.0, 10, 1.0, rng=np.random.default_rng(0), direction="up")
