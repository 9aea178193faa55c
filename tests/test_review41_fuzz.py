"""Session 41's adversarial fuzz (a helper session, mpmath at 50-800 digits): the three
findings fixed in the session, each checked against its independent truth.

1. A composition of Gaussians answered its lower end from the Gaussian equivalent whose
   sigma is rounded *down* (right for the upper end only): 5.5e-15 above the truth.
2. The bounded-range exponential mechanism below epsilon 1e-154: the square in its curve
   underflowed (delta(0) read 1e-323 against 2.5e-201).
3. The discrete Gaussian's RDP near order 1 (the log-ratio's round-off over alpha - 1:
   0.4 against 0.5) and at integer orders (rounded to nearest, not up).
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant import compose
from dpacct.mechanisms import DiscreteGaussianMechanism, ExponentialMechanism, GaussianMechanism


def _gauss_delta(mu, eps):
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


@pytest.mark.parametrize(("sigmas", "counts", "delta"), [
    ((1.0,), (2,), 0.5152948790349161),
    ((1.4142135623730951,), (2,), 0.3829249225480262),
    ((0.7, 3.0), (3, 5), 1e-6),
])
def test_composed_gaussians_bracket_holds_the_truth(sigmas, counts, delta):
    run = compose([GaussianMechanism(s) for s in sigmas], counts=list(counts))
    lo, hi = run.epsilon_bounds(delta)
    with mp.workdps(50):
        mu = mp.sqrt(mp.fsum(c / mp.mpf(s) ** 2 for s, c in zip(sigmas, counts, strict=True)))
        # the truth is inside iff delta(lo) >= delta >= delta(hi) on the exact curve
        assert _gauss_delta(mu, lo) >= delta >= _gauss_delta(mu, hi), (lo, hi)


@pytest.mark.parametrize("eps", [1e-200, 1e-160, 1e-154])
def test_bounded_range_curve_at_a_tiny_epsilon(eps):
    m = ExponentialMechanism(epsilon=eps)
    with mp.workdps(60):
        e = mp.mpf(eps)

        def truth(x):  # (e^{e/2} - e^{x/2})^2 / (e^e - 1), without cancellation
            x = mp.mpf(x)
            return mp.exp(x) * mp.expm1((e - x) / 2) ** 2 / mp.expm1(e)

        assert mp.mpf(float(m.delta(0.0))) >= truth(0)  # an upper curve
        assert float(m.delta(0.0)) <= truth(0) * (1 + mp.mpf(1e-12))
        d = float(truth(eps / 3))
        lo, hi = m.epsilon_bounds(d)
        assert truth(lo) >= d >= truth(hi)


def _dg_rdp(sigma, alpha):
    s, a = mp.mpf(sigma), mp.mpf(alpha)
    n = int(40 * sigma) + 5
    xs = [mp.mpf(x) for x in range(-n, n + 2)]
    z = mp.fsum(mp.exp(-x**2 / (2 * s * s)) for x in xs)
    tot = mp.fsum(mp.exp(-a * (x - 1) ** 2 / (2 * s * s) - (1 - a) * x**2 / (2 * s * s))
                  for x in xs) / z
    return mp.log(tot) / (a - 1)


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_discrete_gaussian_rdp_is_an_upper_bound(sigma):
    alphas = np.array([1.000000000000001, 1 + 1e-12, 1 + 1e-6, 1.5, 2.0, 3.0, 7.3])
    got = DiscreteGaussianMechanism(sigma).rdp(alphas)
    with mp.workdps(60):
        for a, g in zip(alphas, got, strict=True):
            t = _dg_rdp(sigma, float(a))
            assert mp.mpf(float(g)) >= t, (a, g, t)
            assert mp.mpf(float(g)) <= t * (1 + mp.mpf(1e-6)) + mp.mpf(1e-12), (a, g, t)
