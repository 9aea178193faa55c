"""Review 18: ``_spectral_top``'s new early decline overflows at huge counts.

Session 17 (cffe4da) replaced the decline test on the normwise forward term by the
componentwise one at frequency 0, ``high * kappa * masses[0] ** high > max_err``, in
Python floats.  A pessimistic power's mass is a little above 1 (its products'
round-off carried as mass), and ``float ** int`` raises ``OverflowError`` instead of
returning ``inf``: at ``T = 2e15`` steps of ``poisson_subsample(Gaussian(2), 1e-7)``
the epsilon query raises, where 2a88e19 (the old ``k * log(mass)`` form) answered
13.3125 and dp_accounting's RDP accountant 13.3129.  Severity low: counts of 1e12
(q 1e-8, sigma 0.3) and above; not a wrong number, but a crash where a bound exists.
Fix: compare in logs (``math.log(high * kappa) + high * math.log(mass)``), or catch it
and decline (declining is always sound).
"""

from __future__ import annotations

import math
import warnings

import pytest

from dpacct.accountant import compose, poisson_subsample
from dpacct.mechanisms import GaussianMechanism

dpa = pytest.importorskip("dp_accounting")


def test_a_huge_count_is_answered_not_overflowed():
    sigma, q, steps, delta = 2.0, 1e-7, 2 * 10**15, 1e-5
    rdp = dpa.rdp.RdpAccountant()
    rdp.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)
    ceiling = rdp.get_epsilon(delta)  # a sound upper bound from another library
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        step = poisson_subsample(GaussianMechanism(sigma=sigma), q)
        eps = compose([step], counts=[steps]).epsilon(delta)
    assert math.isfinite(eps)
    assert 0.0 < eps <= ceiling * (1 + 1e-3)
