"""Review 23 (issue 39): 4-of-20 random allocation against a Monte Carlo of the exact pair.

ws23-k4 routes ``random_allocation(..., k=4)`` at sigma 1, T 20 through Proposition 9's
(max, second, sum) remove law, which sets ``delta`` from epsilon 6 on (the blocks below).
The independent side: the remove direction ``E_Q[(Lambda - e^eps)_+]`` of the exact pair,
``Lambda = e_4(z) / C(20, 4)``, ``z_t = exp((x_t - 1/2) / sigma^2)``, by importance
sampling from an equal mixture of the pair's ``P`` with the record's four coordinates
shifted by ``a`` in (1, 1.5, 2, 2.5) (density ratio to ``Q``: the mixture of
``e_4(z^(a)) / C(20, 4)``), an explicit ``numpy.random.Generator``; a certified ``delta``
below the 99.9 % lower end is unsound.  The bar: main's (15cb80c) ``delta`` and upper end,
which a least-of-routes answer may only lower.  Measured (120 000 draws): remove delta
3.2e-3, 2.0e-4, 8.1e-6, 2.3e-7 at eps 3-6; the branch's (edb33c4) law 8.7e-3, 6.1e-4,
2.6e-5, 9.1e-7.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_review24_k4_law_t100_mc import _log_e

from dpacct.accountant.transformers.random_allocation import random_allocation
from dpacct.mechanisms import GaussianMechanism

SIGMA, T, K = 1.0, 20, 4
EPS = np.array([3.0, 4.0, 5.0, 6.0])
#: main's (15cb80c) delta at EPS and upper end of epsilon_bounds(1e-6)
MAIN_DELTA = np.array([0.004726736007457869, 0.0004208334457322133, 2.5945704348850115e-05,
                       1.175079965587512e-06])
MAIN_UPPER = 6.049799443039378
SHIFTS = (1.0, 1.5, 2.0, 2.5)


def _log_e4(logz: np.ndarray) -> np.ndarray:
    """``log e_4`` of each row of ``exp(logz)`` (review 24's recurrence, bit for bit)."""
    return _log_e(logz, K)[:, K]


def _mc_lower(n: int, rng: np.random.Generator) -> np.ndarray:
    """The 99.9 % lower ends of the remove direction's delta at ``EPS``."""
    lc = math.log(math.comb(T, K))
    a = np.array(SHIFTS)
    x = rng.normal(0.0, SIGMA, (n, T))
    idx = np.argsort(rng.random((n, T)), axis=1)[:, :K]
    x[np.arange(n)[:, None], idx] += a[rng.integers(0, a.size, n)][:, None]
    log_lr = _log_e4((x - 0.5) / SIGMA**2) - lc
    log_dens = np.logaddexp.reduce(
        [_log_e4((s * x - 0.5 * s * s) / SIGMA**2) - lc for s in a], axis=0) - math.log(a.size)
    v = np.maximum(np.exp(log_lr - log_dens)[:, None]
                   - np.exp(EPS[None, :] - log_dens[:, None]), 0.0)
    return v.mean(0) - 3.2905 * v.std(0) / math.sqrt(n)


@pytest.mark.slow  # the k = 4 law, about 4 CPU s on ws23-k4 (main: the blocks, 1 s)
def test_four_of_twenty_is_sound_and_no_looser_than_mains():
    ra = random_allocation(GaussianMechanism(sigma=SIGMA), T, k=K)
    d = np.asarray(ra.delta(EPS), dtype=float)
    assert np.all(d <= MAIN_DELTA * (1 + 1e-12)), (d, MAIN_DELTA)
    low = _mc_lower(40_000, np.random.Generator(np.random.PCG64(2323)))
    assert np.all(d >= low), (d, low)
    assert float(ra.epsilon_bounds(1e-6)[1]) <= MAIN_UPPER * (1 + 1e-12)
