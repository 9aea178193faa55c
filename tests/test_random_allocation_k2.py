"""The direct k = 2 route of random allocation (accountant/transformers/random_allocation_k2.py).

Independent values: at T = 2 the exact pair is a Gaussian (shift (1, 1), mu = sqrt 2 /
sigma), whose curve is closed-form (Balle & Wang 2018, Theorem 8); at T = 3 and 10 a
seeded Monte Carlo of the exact likelihood ratio e_2(z) / C(T, 2) of both directions.
Each Monte Carlo check is shown able to reject a bound 5 % below the truth: its lower
confidence end (mean - 4 standard errors) is asserted above 0.95 times the estimate.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from dpacct.accountant import random_allocation
from dpacct.accountant.transformers.random_allocation_k2 import (
    AllocationK2Remove,
    allocation_k2_pair,
    k2_atoms_mass,
    k2_remove_atoms,
)
from dpacct.mechanisms import GaussianMechanism


def _atoms_delta(sigma, t, eps):
    v, q, c = k2_remove_atoms(sigma, t)
    g = np.exp(np.asarray(eps, dtype=float))
    return np.maximum(v[None, :] - g[:, None], 0.0) @ q + c


def _gaussian_delta(mu, eps):
    eps = np.asarray(eps, dtype=float)
    return special.ndtr(mu / 2 - eps / mu) - np.exp(eps) * special.ndtr(-mu / 2 - eps / mu)


def test_t2_is_the_exact_gaussian_pair_from_above():
    # at T = 2, k = 2 the record is in both steps: the pair is N((1, 1), s^2 I) against
    # N(0, s^2 I), mu = sqrt(2) / s, and the (max, sum) bound is exact pointwise: only
    # the discretisation separates it from the closed form
    s, eps = 1.5, np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    exact = _gaussian_delta(np.sqrt(2.0) / s, eps)
    atoms = _atoms_delta(s, 2, eps)
    engine = np.asarray(AllocationK2Remove(s, 2, progress=False).delta(eps))
    assert np.all(atoms >= exact) and np.all(engine >= exact)
    assert np.all(atoms <= 1.03 * exact) and np.all(engine <= 1.05 * exact)


def _mc(sigma, t, eps, n, rng, epochs=1, chunk=250_000):
    """Mean and standard error of both directions' E_Q[(L - e^eps)_+], E_Q[(1 - e^eps L)_+]
    with L the exact likelihood ratio of ``epochs`` independent epochs."""
    g = np.exp(np.asarray(eps, dtype=float))
    acc = np.zeros((4, g.size))
    done = 0
    while done < n:
        b = min(chunk, n - done)
        lr = np.ones(b)
        for _ in range(epochs):
            y = np.exp((rng.normal(0.0, sigma, (b, t)) - 0.5) / sigma**2)
            lr *= (y.sum(1) ** 2 - (y * y).sum(1)) / (t * (t - 1))
        rem = np.maximum(lr[:, None] - g[None, :], 0.0)
        add = np.maximum(1.0 - g[None, :] * lr[:, None], 0.0)
        acc += np.stack((rem.sum(0), (rem * rem).sum(0), add.sum(0), (add * add).sum(0)))
        done += b
    out = []
    for k in (0, 2):
        m = acc[k] / n
        out.append((m, np.sqrt(np.maximum(acc[k + 1] / n - m * m, 0.0) / n)))
    return out


def _check(bound, mean, se):
    lcb = mean - 4.0 * se
    assert np.all(lcb > 0.95 * mean), "the check could not reject a bound 5 % low"
    assert np.all(bound >= lcb), (bound, mean, se)


@pytest.mark.parametrize(
    ("t", "eps", "epochs"),
    [
        (3, [0.5, 1.0], 1),
        pytest.param(10, [0.5, 0.8], 1, marks=pytest.mark.slow),
        pytest.param(3, [0.5, 1.0], 2, marks=pytest.mark.slow),
    ],
)
def test_route_above_monte_carlo_of_the_exact_pair(t, eps, epochs):
    rng = np.random.default_rng(39_000 + 10 * t + epochs)
    (rm, rse), (am, ase) = _mc(1.0, t, eps, 1_000_000, rng, epochs=epochs)
    remove = np.asarray(
        (AllocationK2Remove(1.0, t, progress=False) if epochs == 1 else
         allocation_k2_pair(1.0, t, epochs, progress=False)).delta(np.array(eps)))
    _check(remove, rm, rse)
    both = np.asarray(allocation_k2_pair(1.0, t, epochs, progress=False).delta(np.array(eps)))
    _check(both, np.maximum(rm, am), np.where(rm >= am, rse, ase))


def _cauchy_schwarz_excess(sigma, t, n=20_001):
    """``E_Q[L'(M, R)] - 1 = (T-2) E[Var(Y | Y <= M)] / (T (T-1))`` (given M = m the
    others are i.i.d. Y | Y <= m), by a trapezoid rule over M's law, with the truncated
    log-normal moments in closed form."""
    s0 = 1.0 / sigma
    z = np.linspace(-12.0, 12.0, n)  # log M = -1 / (2 sigma^2) + s0 z
    cdf = special.ndtr(z)
    dens = t * cdf ** (t - 1) * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
    m1 = special.ndtr(z - s0) / cdf  # E[Y | Y <= m] (E Y = 1)
    m2 = np.exp(s0 * s0) * special.ndtr(z - 2 * s0) / cdf  # E[Y^2 | Y <= m]
    var = np.maximum(m2 - m1 * m1, 0.0)
    return (t - 2) / (t * (t - 1)) * float(np.trapezoid(dens * var, z))


def test_atoms_carry_the_exact_pairs_mass():
    # sum q v + charge >= 1 (E_Q of the exact likelihood ratio), and not by much at T 3
    v, q, c = k2_remove_atoms(1.0, 3)
    built = float(q @ v) + c
    assert 1.0 <= built < 1.06
    # the mass predicted without the law (issue 39 (a)) is the built one's (its outward
    # roundings aside), and at least 1 + the Cauchy-Schwarz excess computed here by
    # quadrature (the lattice only adds to it); measured: T 3 excess 0.0346, predicted
    # 1.0479, built 1.0480; sigma 0.5, T 5: excess 0.071, predicted 1.851 (the coarse
    # lattice of h = 4 below sigma 0.65 carries most of it)
    excess = _cauchy_schwarz_excess(1.0, 3)
    pred = k2_atoms_mass(1.0, 3)
    assert abs(pred - built) < 1e-3 * built
    assert 1.0 + excess <= pred < 1.0 + 1.5 * excess
    assert k2_atoms_mass(0.5, 5) > 1.0 + 10 * _cauchy_schwarz_excess(0.5, 5)


def test_small_t_route_takes_the_other_add_bounds_and_holds_the_exact_pair():
    # issue 39 (a): at T 3 the route's own add direction (the blocks' laws, with mass
    # above delta at loss +inf) made it infinite, so epsilon was the blocks' 10.1225; its remove
    # direction with the mechanism's other add bounds gives 9.1768 (delta 1e-5,
    # sigma 0.7).  The exact 2-of-3 pair (quadrature, tests/test_review18b_*) is at
    # delta 7.6e-6 there, and at 2.1e-5 > 1e-5 at 0.95 times it: a bound 5 % low fails.
    from test_review18b_k2_quadrature import _exact_t3

    ra = random_allocation(GaussianMechanism(0.7), 3, k=2)
    eps = float(ra.epsilon(1e-5))
    blocks = float(random_allocation(GaussianMechanism(0.7), 3, k=2, direct=False).epsilon(1e-5))
    assert eps < 0.95 * blocks
    exact = _exact_t3(0.7, [eps, 0.95 * eps]).max(axis=1)
    assert exact[0] <= 1e-5 < exact[1]
    # delta() takes the same route: above the exact pair, at most the target at eps
    d = np.asarray(ra.delta(np.array([eps, 9.5])))
    assert np.all(d >= _exact_t3(0.7, [eps, 9.5]).max(axis=1)) and d[0] <= 1e-5 * (1 + 1e-6)


@pytest.mark.slow
def test_bracket_width_at_sigma_1_t_100():
    # sigma 1, T 100, delta 1e-6: the blocks alone were 2.44 % wide (1.5552 against the
    # certified lower end 1.5172); the direct route brought the upper end to 1.5333
    # (1.05 %), and its finer cuts above the median of M to 1.5320 (0.97 %, issue 39 (b))
    ra = random_allocation(GaussianMechanism(1.0), 100, k=2)
    lo, hi = map(float, ra.epsilon_bounds(1e-6))
    blocks = float(random_allocation(GaussianMechanism(1.0), 100, k=2, direct=False).epsilon(1e-6))
    assert lo <= hi < 0.99 * blocks
    assert (hi - lo) / hi < 0.01


def test_bad_input():
    with pytest.raises(ValueError, match="steps"):
        k2_remove_atoms(1.0, 1)
    with pytest.raises(TypeError, match="direct"):
        random_allocation(GaussianMechanism(1.0), 10, k=2, direct="yes")
    with pytest.raises(ValueError, match="direct route"):
        _ = random_allocation(GaussianMechanism(1.0), 1000, k=2).k2_route
