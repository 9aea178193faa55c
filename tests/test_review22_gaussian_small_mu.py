"""Review 22 (issue 37): the Gaussian's delta(eps) at small mu, against mpmath.

ws22-ledger4 is to certify ``GaussianMechanism.delta(eps)`` at small ``mu = 1/sigma``
in float (no 50-digit evaluation).  The reference here is the closed form of Balle &
Wang 2018 (Theorem 8), ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``,
in mpmath at 60 digits: nothing from dpacct.  The points: mu from 1e-8 to 0.3 (both
sides of session 21's mu <= 0.21 float bound), eps = 0, eps a tiny multiple of mu
(where the two terms cancel to ``~ mu eps``) and eps up to 5 mu, and the neighbours of
the largest mu where the float bound is used.  Upper end: never below the closed form;
tightness: within 1e-9 relative (main a3b9f4e: within 5e-13 on 210 random points).

No finding on main a3b9f4e (a guard for the branch): measured on 210 random points
(sigma log-uniform in [0.3, 1e4], eps = 0, 1e-12..1e-1 mu, 0..6 mu): every ratio in
[1 + 9e-16, 1 + 4.5e-13].
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.mechanisms import GaussianMechanism


def _exact(mu: float, eps: float) -> float:
    with mp.workdps(60):
        m, e = mp.mpf(mu), mp.mpf(eps)
        return float(mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m))


def _points() -> list[tuple[float, float]]:
    rng = np.random.default_rng(2222)
    out = []
    for mu in [1e-8, 1e-6, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.2, 0.21, 0.2100001, 0.25, 0.3]:
        out += [(mu, 0.0), (mu, 1e-12 * mu), (mu, 1e-6 * mu), (mu, 0.3 * mu), (mu, 2.0 * mu),
                (mu, 5.0 * mu)]
    for mu in 10 ** rng.uniform(-7, math.log10(0.3), 12):
        out.append((float(mu), float(rng.choice([0.0, rng.uniform(0, 4)]) * mu)))
    return out


@pytest.mark.parametrize(("mu", "eps"), _points())
def test_small_mu_delta_is_above_the_closed_form_and_tight(mu, eps):
    got = float(GaussianMechanism(1.0 / mu).delta(eps))
    exact = _exact(1.0 / (1.0 / mu), eps)  # the mu the mechanism holds
    assert got >= exact, (mu, eps, got, exact)
    assert got <= exact * (1 + 1e-9) + 1e-300, (mu, eps, got / exact)
