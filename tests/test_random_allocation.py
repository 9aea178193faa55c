"""Random allocation: exact RDP by brute force, soundness against Monte Carlo."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpacct.accountant.mechanism import Mechanism
from dpacct.accountant.transformers.random_allocation import (
    add_rdp,
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


def _add_mgf_gauss_hermite(beta, sigma, steps, nodes=60):
    # E_Q[M^{-beta}], M = (1/T) sum_j exp((y_j - 1/2)/sigma^2), y ~ N(0, sigma^2 I_T):
    # a product Gauss-Hermite rule (the integrand is smooth), independent of the bound
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    grids = np.meshgrid(*([x] * steps), indexing="ij")
    weights = np.ones_like(grids[0])
    for g_w in np.meshgrid(*([w] * steps), indexing="ij"):
        weights = weights * g_w
    m = sum(np.exp((sigma * g - 0.5) / sigma**2) for g in grids) / steps
    return float((weights * m ** (-beta)).sum())


@pytest.mark.parametrize(("order", "steps", "sigma"),
                         [(2, 2, 1.0), (4, 2, 2.0), (3, 3, 1.0), (8, 3, 2.0), (2.5, 2, 1.5)])
def test_add_rdp_at_or_above_quadrature_for_tiny_steps(order, steps, sigma):
    exact = math.log(_add_mgf_gauss_hermite(order - 1.0, sigma, steps)) / (order - 1.0)
    bound = add_rdp(order, sigma, steps)
    assert bound >= exact * (1 - 1e-9)
    # and it is a bound with content, not a wild over-estimate, where T is not tiny
    assert add_rdp(2.0, 2.0, 1000) <= 2.0 * 2.0 / (2.0 - 1.0) * math.expm1(0.25) / 1000


@pytest.mark.parametrize(("order", "sigma"), [(2, 1.0), (4, 2.0)])
def test_add_rdp_at_or_above_monte_carlo_for_large_steps(order, sigma):
    # E_Q[M^{-beta}] by sampling, with a 5-standard-error margin
    rng = np.random.default_rng(7)
    steps, n, beta = 1000, 4000, order - 1.0
    y = rng.normal(0.0, sigma, size=(n, steps))
    m = np.exp((y - 0.5) / sigma**2).mean(axis=1) ** (-beta)
    low = m.mean() - 5 * m.std(ddof=1) / math.sqrt(n)
    assert add_rdp(order, sigma, steps) >= math.log(max(low, 1.0)) / beta


@pytest.mark.parametrize(("sigma", "steps", "epochs"),
                         [(1.0, 3, 1), (2.0, 100, 1), (1.0, 1000, 2), (0.8, 100, 3)])
def test_add_direction_delta_at_or_above_monte_carlo(sigma, steps, epochs):
    ra = random_allocation(GaussianMechanism(sigma=sigma), steps=steps, epochs=epochs)
    rng = np.random.default_rng(3)
    for eps in (0.1, 0.5):
        _, lo, _ = random_allocation_delta_mc(sigma, steps, eps, epochs=epochs,
                                              samples=20_000, rng=rng, direction="add")
        assert ra.delta(eps) >= lo


def test_add_rdp_removes_the_per_epoch_constant():
    # concavity alone pays (1 - 1/T) / (2 sigma^2) = 0.4995 per epoch at sigma = 1
    assert add_rdp(8.0, 1.0, 1000) < 0.05
    ra = random_allocation(GaussianMechanism(sigma=1.0), steps=1000, epochs=10)
    assert ra.rdp(8.0) < 10 * 0.1


@pytest.mark.parametrize(("sigma", "steps"), [(1.0, 2), (1.0, 3), (0.8, 10), (1.0, 100)])
def test_decomposition_at_or_above_monte_carlo_in_both_directions(sigma, steps):
    ra = random_allocation(GaussianMechanism(sigma=sigma), steps=steps)
    assert ra.has_decomposition
    rng = np.random.default_rng(11)
    eps = np.array([0.0, 0.3, 1.0])
    bound = ra.decomposition_delta(eps)
    for direction in ("remove", "add"):
        for e, b in zip(eps, bound, strict=True):
            _, lo, _ = random_allocation_delta_mc(sigma, steps, float(e), samples=40_000,
                                                  rng=rng, direction=direction)
            assert b >= lo
    # the mechanism's delta is the smaller of its sound routes
    assert ra.delta(0.3) <= bound[1] * (1 + 1e-9)


def test_decomposition_is_used_for_one_epoch_only():
    g = GaussianMechanism(sigma=1.0)
    one = random_allocation(g, 1000)
    assert one.has_decomposition and not random_allocation(g, 1000, epochs=2).has_decomposition
    assert not random_allocation(g, 1000, k=2).has_decomposition
    with pytest.raises(ValueError, match="decomposition"):
        random_allocation(g, 1000, epochs=2).decomposition_delta(1.0)
    # the decomposition's epsilon is a point where its bound (same grid settings) was
    # checked; the mechanism's answer is at or below it (the PLD route is smaller here)
    eps_dec = one._first_passing(lambda e: one.decomposition_delta(e, delta_hint=1e-6), 1e-6)
    assert one.decomposition_delta(eps_dec, delta_hint=1e-6)[0] <= 1e-6
    assert eps_dec < Mechanism.epsilon(one, 1e-6)  # the decomposition beats the RDP route
    assert one.epsilon(1e-6) <= eps_dec


def test_direct_add_bound_is_the_shifted_gaussian_curve():
    # T = 1: no constant, the curve of the Gaussian with sigma / sqrt(epochs), exactly
    ra = random_allocation(GaussianMechanism(sigma=2.0), steps=1, epochs=4)
    g = GaussianMechanism(sigma=1.0)
    eps = np.array([0.0, 0.5, 2.0])
    assert np.allclose(ra._direct_add_delta(eps), g.delta(eps), rtol=1e-8, atol=1e-14)
    # T = 100, 3 epochs: shifted by 3 (1 - 1/100) / (2 sigma^2), then the Gaussian of
    # noise sigma sqrt(100 / 3)
    ra = random_allocation(GaussianMechanism(sigma=1.0), steps=100, epochs=3)
    shift = 3 * 0.99 / 2.0
    g = GaussianMechanism(sigma=math.sqrt(100 / 3))
    assert ra._direct_add_delta(np.array([shift + 0.7]))[0] == pytest.approx(
        float(g.delta(0.7)), rel=1e-8)


@pytest.mark.parametrize(("sigma", "steps", "epochs"),
                         [(0.8, 100, 10), (1.0, 1000, 1), (1.0, 1000, 10), (2.0, 100, 3)])
def test_epsilon_and_delta_agree_and_stay_below_the_unamplified_gaussian(sigma, steps, epochs):
    ra = random_allocation(GaussianMechanism(sigma=sigma), steps=steps, epochs=epochs)
    for d in (1e-6, 1e-10):
        eps = ra.epsilon(d)
        assert eps <= ra.unamplified.epsilon(d) * (1 + 1e-12)
        assert random_allocation_lower_epsilon(sigma, steps, d, epochs=epochs) <= eps
        # the delta route at that epsilon is at most a little above d (other grids)
        assert ra.delta(eps * (1 + 1e-6) + 1e-9) <= d * 1.05
