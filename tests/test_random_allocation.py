"""Random allocation: exact RDP by brute force, soundness against Monte Carlo."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpacct.accountant.random_allocation import (
    random_allocation,
    random_allocation_delta_mc,
    random_allocation_lower_epsilon,
    remove_rdp,
)
from dpacct.mechanisms import GaussianMechanism


@pytest.mark.parametrize(("order", "steps", "sigma"), [(2, 3, 1.0), (3, 4, 0.8), (5, 3, 2.0)])
def test_remove_rdp_against_brute_force_over_tuples(order, steps, sigma):
    # E_Q[(P/Q)^a] = T^-a sum over all step tuples of exp((sum n_j^2 - a) / (2 sigma^2))
    total = 0.0
    for tup in itertools.product(range(steps), repeat=order):
        counts = np.bincount(tup, minlength=steps)
        total += math.exp((float((counts**2).sum()) - order) / (2 * sigma**2))
    exact = math.log(total / steps**order) / (order - 1)
    assert remove_rdp(order, sigma, steps) == pytest.approx(exact, rel=1e-12)


def test_one_step_is_the_gaussian():
    ra = random_allocation(GaussianMechanism(sigma=2.0), steps=1, epochs=3)
    g = GaussianMechanism(sigma=2.0 / math.sqrt(3))
    assert ra.epsilon(1e-6) >= g.epsilon(1e-6) * (1 - 1e-9)
    assert ra.epsilon(1e-6) <= g.epsilon(1e-6) * (1 + 1e-6)


@pytest.mark.parametrize(("sigma", "steps", "epochs"), [(1.0, 100, 1), (0.8, 100, 2)])
def test_upper_bound_at_or_above_monte_carlo_and_lower_bound_below(sigma, steps, epochs):
    ra = random_allocation(GaussianMechanism(sigma=sigma), steps=steps, epochs=epochs)
    rng = np.random.default_rng(1)
    for eps in (0.5, 1.0):
        _, lo, _ = random_allocation_delta_mc(sigma, steps, eps, epochs=epochs,
                                                 samples=100_000, rng=rng)
        # the upper bound's delta must not fall below the estimate's lower end
        assert ra.delta(eps) >= lo
    low_eps = random_allocation_lower_epsilon(sigma, steps, 1e-3, epochs=epochs)
    assert low_eps <= ra.epsilon(1e-3)


def test_k_reduction_and_unamplified_cap():
    g = GaussianMechanism(sigma=1.0)
    ra = random_allocation(g, steps=10, k=10)  # every step: k = T, no randomness
    assert ra.epsilon(1e-5) <= ra.unamplified.epsilon(1e-5) * (1 + 1e-12)
    assert random_allocation(g, 1000, k=2).epsilon(1e-5) >= random_allocation(
        g, 1000, k=1).epsilon(1e-5)


def test_bad_inputs_are_named():
    with pytest.raises(TypeError, match="mechanism"):
        random_allocation("gaussian", 10)
    with pytest.raises(ValueError, match="k"):
        random_allocation(GaussianMechanism(sigma=1.0), 10, k=11)
    with pytest.raises(ValueError, match="steps"):
        random_allocation(GaussianMechanism(sigma=1.0), 0)
    with pytest.raises(TypeError, match="rng"):
        random_allocation_delta_mc(1.0, 10, 1.0, rng=0)
