"""Review 28 (issue 39): 5-of-30 random allocation at sigma 1.25 against an
importance-sampled Monte Carlo of the exact pair, and never looser than main's.

ws28-k45 routes k = 5 through Proposition 10's four-level law (``k_tried``: T 10-30 up to
sigma 1.25); its own Monte Carlo test is at T 10, sigma 1.2.  This is the range's edge
(T 30, sigma 1.25, routed there: upper end 4.29087 -> 4.25086 at delta 1e-6).  Its
``delta`` must stay at or above the exact pair's remove direction
``E_Q[(Lambda - e^eps)_+]``, ``Lambda = e_5(z) / C(30, 5)``, ``z_t = exp((x_t - 1/2) /
sigma^2)``: the independent side is review 24's importance sampler (a uniform 5-subset of
the coordinates shifted by ``a``, an equal mixture over ``a``; explicit
``numpy.random.Generator``), whose 99.9 % lower end a sound ``delta`` never falls below.
Measured (/tmp/rv28/kcheck.py, 2e5 draws): the routed delta is 2.36x / 2.39x the estimate
at eps 4.12 / 4.25 (the add direction is 0.1x the remove one there); the lower end 4.08105
(main's, unchanged) has the truth's delta 1.01e-6 +- 2e-8 (6e5 draws): at the truth.
Power: fails when the route's law at k = 5 is the 4-of-30 one (``k_atoms`` called with
k = 4: a k45 snapshot so mutated answers far below the estimate).  The bar: main's
(13e000b, the blocks) upper end.  About 6 CPU s on ws28-k45 (its law; 3 on main, the blocks),
the sampler 2.7 of them: marked slow.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_review24_k4_law_t100_mc import _mixture_lower  # the k-subset-shift sampler

from dpacct.accountant.transformers.random_allocation import random_allocation
from dpacct.mechanisms import GaussianMechanism

SIGMA, T, K = 1.25, 30, 5
EPS = np.array([4.1, 4.25])
#: main's (13e000b) random_allocation(GaussianMechanism(1.25), 30, k=5).epsilon_bounds(1e-6)[1]
MAIN_UPPER = 4.290872115346301
COMPONENTS = ((5, 1.5), (5, 2.0), (5, 2.5), (5, 3.0))


@pytest.mark.slow  # about 6 CPU s on ws28-k45 (the route's law), 3 on main
def test_five_of_thirty_is_sound_and_no_looser_than_mains():
    mech = random_allocation(GaussianMechanism(SIGMA), T, k=K)
    hi = float(mech.epsilon_bounds(1e-6)[1])
    assert hi <= MAIN_UPPER * (1 + 1e-12), (hi, MAIN_UPPER)
    d = np.array([float(mech.delta(float(e))) for e in EPS])
    low = _mixture_lower(SIGMA, T, K, EPS, COMPONENTS, 200_000,
                         np.random.Generator(np.random.PCG64(2805)))
    assert np.all(d >= low), (d, low)
