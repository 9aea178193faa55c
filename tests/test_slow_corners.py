"""Corners that used to take minutes: answers and brackets checked against independent
values (the parts' own brackets, exact binomial tails); speed is measured elsewhere
(``python -m benchmarks.run``), never asserted here."""

from __future__ import annotations

from sgm_oracles import sum_statistic_epsilon_lower

from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import DiscreteGaussianMechanism, GaussianMechanism


def test_long_mixture_with_a_lattice_part():
    # 110 s before: a single step's tail on 2^-17 refined the long product's fine part
    # (step 2^-7) to 8-32 million points; now about 0.2 s
    g = poisson_subsample(GaussianMechanism(sigma=3.901), 0.0767)
    dg = poisson_subsample(DiscreteGaussianMechanism(sigma=1.365), 2.16e-5)
    run = compose([g, dg], counts=[9_560_256, 65_936])
    delta = 1.39e-7
    eps = run.epsilon(delta)
    lo, hi = run.epsilon_bounds(delta)
    assert lo <= hi
    # an independent lower bound (tests/sgm_oracles.py, scipy normal tails, no dpacct
    # code): thresholding the sum of the Gaussian part's outputs alone (the discrete
    # part's outputs ignored: post-processing) certifies epsilon >= 2160.07; the bracket
    # is [2216.80, 2216.96]
    assert sum_statistic_epsilon_lower(0.0767, 3.901, 9_560_256, delta) <= lo
    assert hi - lo <= 1e-4 * hi
    assert run.delta(eps) <= delta * (1 + 1e-9)
    # the composition needs at least what its larger part needs alone, and at most
    # what the two parts need with delta split between them (basic composition)
    g_lo, _ = compose([g], [9_560_256]).epsilon_bounds(delta)
    assert g_lo <= hi
    split = compose([g], [9_560_256]).epsilon(delta / 2) + compose([dg], [65_936]).epsilon(
        delta / 2
    )
    assert eps <= split
