"""Review 43 (an adversarial review of session 42's atom split) found three crashes,
older than the split, each checked here against an independent truth (mpmath).

1. Subsampled pure DP at q 1e-12: the two-scale bulk window reached a coarse node past
   each end of a bulk of width ~0, 3 * 2^30 fine points (a 24 GiB allocation).
2. Subsampled ``PureDPMechanism(e0)`` for ``e0 > 709.78``: the anchor's ``expm1``
   overflowed (OverflowError).
3. A law whose whole finite P-mass lies within the tail: ``quantile_bounds`` returned
   ``lo > hi`` and the grid's first node overflowed (OverflowError).
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant import poisson_subsample
from dpacct.accountant.laws.loss_law import AtomicLossLaw
from dpacct.accountant.pld.grid import discretize
from dpacct.mechanisms import PureDPMechanism


def _subsampled_pure_truth(e0, q, eps):
    """max over the remove and add pairs of the subsampled pure-DP pair's delta, 60 digits."""
    with mp.workdps(60):
        q, ee, e = mp.mpf(q), mp.exp(mp.mpf(e0)), mp.exp(mp.mpf(eps))
        pp, pq = ee / (1 + ee), 1 / (1 + ee)
        atoms = ((pp, pq), (pq, pp))  # (P, Q) masses of the pure-DP pair's two outcomes
        rem = mp.fsum(max((1 - q) * b + q * a - e * b, 0) for a, b in atoms)
        add = mp.fsum(max(b - e * ((1 - q) * b + q * a), 0) for a, b in atoms)
        return max(rem, add)


def test_subsampled_pure_dp_at_a_tiny_rate_fits_in_memory():
    m = poisson_subsample(PureDPMechanism(30.0), 1e-12)
    truth = _subsampled_pure_truth(30.0, 1e-12, 1.0)
    got = m.delta(1.0)
    assert truth <= got <= truth * (1 + 1e-6)


@pytest.mark.parametrize("e0", [709.0, 710.0, 800.0])
def test_subsampled_pure_dp_past_the_exp_range(e0):
    m = poisson_subsample(PureDPMechanism(e0), 0.5)
    for eps in (e0 - 1.0, 700.0):
        truth = _subsampled_pure_truth(e0, 0.5, eps)
        got = m.delta(eps)
        assert truth <= got <= truth * (1 + 1e-6) + 1e-12


@pytest.mark.parametrize("pessimistic", [True, False])
def test_finite_mass_within_the_tail(pessimistic):
    law = AtomicLossLaw(losses=np.array([0.5, 1.0]), p=np.array([0.01, 0.02]), inf_mass=0.97)
    lo, hi = law.quantile_bounds(0.05)
    assert lo <= hi
    pld = discretize(law, 0.01, pessimistic=pessimistic, tail=0.05)
    truth = 0.97 + 0.02 * -math.expm1(0.7 - 1.0)
    assert (pld.delta(0.7) >= truth) if pessimistic else (pld.delta(0.7) <= truth)
