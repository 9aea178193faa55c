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
    eps = np.array([0.5, 1.0])  # one set of draws for both
    _, lo, _ = random_allocation_delta_mc(sigma, steps, eps, epochs=epochs,
                                          samples=100_000, rng=rng)
    # the upper bound's delta must not fall below the estimate's lower end
    assert np.all(ra.delta(eps) >= lo)
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
    eps = np.array([0.1, 0.5])  # one set of draws for both
    _, lo, _ = random_allocation_delta_mc(sigma, steps, eps, epochs=epochs,
                                          samples=20_000, rng=rng, direction="add")
    assert np.all(ra.delta(eps) >= lo)


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
    bound = ra.decomposition_delta_estimate(eps)
    for direction in ("remove", "add"):  # one set of draws per direction
        _, lo, _ = random_allocation_delta_mc(sigma, steps, eps, samples=40_000,
                                              rng=rng, direction=direction)
        assert np.all(bound >= lo)
    # the certified answer (the PLD route) is below this estimate here
    assert ra.delta(0.3) <= bound[1] * (1 + 1e-9)


def test_decomposition_estimate_is_for_one_epoch_only():
    g = GaussianMechanism(sigma=1.0)
    one = random_allocation(g, 1000)
    assert one.has_decomposition and not random_allocation(g, 1000, epochs=2).has_decomposition
    assert not random_allocation(g, 1000, k=2).has_decomposition
    with pytest.raises(ValueError, match="decomposition"):
        random_allocation(g, 1000, epochs=2).decomposition_delta_estimate(1.0)
    # the decomposition's epsilon is a point where its bound (same grid settings) was
    # checked; the mechanism's answer is at or below it (the PLD route is smaller here)
    eps_dec = one._first_passing(
        lambda e: one.decomposition_delta_estimate(e, delta_hint=1e-6), 1e-6
    )
    assert one.decomposition_delta_estimate(eps_dec, delta_hint=1e-6)[0] <= 1e-6
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


# --- Proposition 1 (docs/theory/allocation_shuffling.md): the reduction, checked ------


def _mix_positive_part(a, b, h):
    """Exact ``int (a phi(z) + b phi(z - h))_+ dz`` for the standard normal density."""
    from scipy.special import ndtr

    a, b, h = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (a, b, h)))
    out = np.where((a >= 0) & (b >= 0), a + b, 0.0)
    out = np.where(h == 0, np.maximum(a + b, 0.0), out)
    mixed = (a * b < 0) & (h != 0)
    hs = np.where(h == 0, 1.0, h)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.log(np.abs(a / b)) + hs * hs / 2  # b e^{hz - h^2/2} = -a at hz = kappa
        c = kappa / hs
    # b > 0 > a: positive where h z > kappa; a > 0 > b: where h z < kappa
    upper = np.where(b > 0, hs > 0, hs < 0)  # the positive region is z > c
    val = np.where(
        upper,
        a * ndtr(-c) + b * ndtr(-(c - hs)),
        a * ndtr(c) + b * ndtr(c - hs),
    )
    return np.where(mixed, val, out)


def _two_step_hockey(gamma, h1, h2, sigma):
    """H_gamma of a T = 2 allocation whose second contribution depends on the first
    output: P = (1/2)[N(h1,.) x N(0,.) + N(0,.) x N(h2(z1),.)], Q = N(0, sigma^2 I_2).

    The inner integral over z2 is exact; the outer one is a fine trapezoid.
    Returns (H(P||Q), H(Q||P))."""
    z = np.linspace(-12.0, 12.0, 240_001)  # z1 / sigma
    phi = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    g1 = h1 / sigma
    r1 = np.exp(g1 * z - g1 * g1 / 2)  # phi(z1 - h1) / phi(z1)
    g2 = np.asarray(h2(z * sigma), dtype=float) / sigma
    pq = _mix_positive_part(0.5 * r1 - gamma, 0.5, g2)
    qp = _mix_positive_part(1.0 - gamma * 0.5 * r1, -gamma * 0.5, g2)
    return float(np.trapezoid(phi * pq, z)), float(np.trapezoid(phi * qp, z))


STRATEGIES = {  # the record's second-step contribution as a function of the first output
    "constant": lambda z1: np.ones_like(z1),
    "sign": lambda z1: np.sign(z1) + (z1 == 0),
    "jump": lambda z1: np.where(z1 > 0.5, 1.0, -1.0),
    "smooth": lambda z1: np.tanh(3.0 * z1),
    "small": lambda z1: 0.5 * np.cos(z1),
    "off_when_large": lambda z1: (np.abs(z1) < 1.0).astype(float),
}


@pytest.mark.parametrize("sigma", [1.0, 0.7])
@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_adaptive_second_step_stays_below_the_pair(name, sigma):
    # Proposition 1 at T = 2: whatever the second step does with the first output, both
    # directions stay at or below the non-adaptive pair ((1/2) sum N(e_j), N(0)).
    for gamma in (1.0, math.exp(0.5), math.exp(1.5)):
        bound_pq, bound_qp = _two_step_hockey(gamma, 1.0, STRATEGIES["constant"], sigma)
        for h1 in (1.0, 0.6):
            pq, qp = _two_step_hockey(gamma, h1, STRATEGIES[name], sigma)
            assert pq <= bound_pq + 1e-9
            assert qp <= bound_qp + 1e-9
    # the bound is attained (sign flips are a reflection of the second output)
    if name == "sign":
        assert pq == pytest.approx(_two_step_hockey(gamma, 0.6, STRATEGIES["constant"], sigma)[0])


def test_two_step_quadrature_matches_the_closed_form_mixture():
    # independent check of the quadrature: non-adaptive, H(P||Q) at gamma = 1 is the
    # total variation of the pair, computed here by brute-force 2-D trapezoid
    z = np.linspace(-10, 10, 2001)
    x, y = np.meshgrid(z, z, indexing="ij")
    phi = lambda t: np.exp(-t * t / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    p = 0.5 * (phi(x - 1) * phi(y) + phi(x) * phi(y - 1))
    q = phi(x) * phi(y)
    brute = float(np.trapezoid(np.trapezoid(np.maximum(p - q, 0), z), z))
    assert _two_step_hockey(1.0, 1.0, STRATEGIES["constant"], 1.0)[0] == pytest.approx(
        brute, rel=1e-5
    )


def test_blocks_of_the_reduction():
    g = GaussianMechanism(sigma=1.0)
    assert random_allocation(g, 10, k=3, epochs=2).blocks() == ((3, 4), (4, 2))
    assert random_allocation(g, 12, k=3).blocks() == ((4, 3),)
    assert random_allocation(g, 100).blocks() == ((100, 1),)


def test_two_of_three_allocation_below_its_block_product():
    # Proposition 1 at T = 3, k = 2 (blocks of 1 and 2 steps): the exact non-adaptive
    # 2-of-3 pair, by 3-D quadrature, lies below the product N(1) x ((1/2) sum N(e_j))
    z = np.linspace(-9.0, 9.0, 181)
    w = np.exp(-z * z / 2)
    w = w / np.trapezoid(w, z)
    y1, y2, y3 = np.meshgrid(z, z, z, indexing="ij")
    weight = w[:, None, None] * w[None, :, None] * w[None, None, :]
    e = np.exp
    ratio = (e(y1 + y2 - 1) + e(y1 + y3 - 1) + e(y2 + y3 - 1)) / 3.0
    block = e(y1 - 0.5) * 0.5 * (e(y2 - 0.5) + e(y3 - 0.5))

    def hockey(r, gamma, reverse):
        f = np.maximum(1.0 - gamma * r, 0.0) if reverse else np.maximum(r - gamma, 0.0)
        return float(np.trapezoid(np.trapezoid(np.trapezoid(weight * f, z), z), z))

    blocks = random_allocation(GaussianMechanism(sigma=1.0), 3, k=2, direct=False)
    mech = random_allocation(GaussianMechanism(sigma=1.0), 3, k=2)
    for gamma in (1.0, math.exp(0.5), math.exp(1.0)):
        for reverse in (False, True):
            exact, bound = hockey(ratio, gamma, reverse), hockey(block, gamma, reverse)
            assert exact <= bound + 1e-6
        # the blocks' answer covers the block product in the remove direction; the
        # default (the direct k = 2 route, tighter than the blocks) covers the exact
        # pair in both (quadrature: an independent value for random_allocation_k2)
        assert blocks.delta(math.log(gamma)) >= hockey(block, gamma, False) - 1e-6
        exact_both = max(hockey(ratio, gamma, False), hockey(ratio, gamma, True))
        assert mech.delta(math.log(gamma)) >= exact_both - 1e-6


def test_counts_accept_integral_floats_like_everywhere_else():
    # main at 4230a13 refused random_allocation(G, 2.0) (a TypeError deep in the RDP)
    g = GaussianMechanism(sigma=1.0)
    a = random_allocation(g, 2.0, k=1.0, epochs=3.0)
    assert (a.steps, a.k, a.epochs) == (2, 1, 3) and type(a.steps) is int
    assert a.epsilon(1e-5) == random_allocation(g, 2, epochs=3).epsilon(1e-5)
    with pytest.raises(TypeError, match="steps"):
        random_allocation(g, 2.5)


def test_huge_noise_is_zero_at_once():
    # main at 4230a13 raised ZeroDivisionError (the composed Gaussian's 1 / mu)
    g = GaussianMechanism(sigma=1e308)
    assert random_allocation(g, 100, epochs=10).epsilon(1e-5) == 0.0
    assert random_allocation(GaussianMechanism(sigma=1e6), 100, epochs=10).epsilon(1e-5) == 0.0


@pytest.mark.parametrize("sigma", [1e-3, 0.05, 0.15])
def test_small_sigma_has_a_finite_bound(sigma):
    # main at 4230a13 overflowed in add_rdp (e^{1/sigma^2}) and in the epoch law
    ra = random_allocation(GaussianMechanism(sigma=sigma), 60, epochs=10)
    eps = ra.epsilon(1e-5)
    assert 0 < eps <= ra.unamplified.epsilon(1e-5)


@pytest.mark.parametrize(("sigma", "steps"), [(0.8, 1000), (1.0, 10_000), (2.0, 100)])
def test_epsilon_bounds_bracket_the_mechanism_with_its_epsilon_on_top(monkeypatch, sigma,
                                                                     steps):
    # upper: the least of every route (epsilon), not the RDP curve's alone; lower: the
    # larger of the certified max-test and sum-statistic attacks; the old bracket was
    # (0, RDP route)
    from dpacct.accountant.rdp.conversion import rdp_to_epsilon
    from dpacct.accountant.transformers import random_allocation as ra_module

    # the sum statistic's value as the bracket asked for it, recorded with its
    # arguments (a deterministic function: asking it again here cost 4.2 CPU s at
    # T 10 000, half the test); the arguments must be this mechanism's
    calls = []
    sum_lower = ra_module.sum_statistic_lower_epsilon

    def recorded(*args, **kwargs):
        calls.append((args, kwargs, sum_lower(*args, **kwargs)))
        return calls[-1][2]

    monkeypatch.setattr(ra_module, "sum_statistic_lower_epsilon", recorded)
    ra = random_allocation(GaussianMechanism(sigma=sigma), steps=steps)
    bracket = ra.epsilon_bounds(1e-6)  # kept on the instance: asking again is free
    lo, hi = bracket
    assert hi == ra.epsilon(1e-6)
    ((args, kwargs, sum_stat),) = calls  # asked once, for this mechanism
    # the statistic is built for the upper end (epsilon_hint; used at T > 300 only)
    assert args == (sigma, steps, 1e-6) and kwargs == {"k": 1, "epochs": 1, "epsilon_hint": hi}
    assert lo == max(random_allocation_lower_epsilon(sigma, steps, 1e-6), sum_stat)
    assert 0 < lo <= hi <= rdp_to_epsilon(ra.rdp, 1e-6)
    assert bracket.bounds == "mechanism"
