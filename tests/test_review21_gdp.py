"""Review 21 (issue 37): the ledger's fold of full-batch Gaussians, every kind of record.

ws21-gdp (7c6ec2c..43eb135) folds every full-batch Gaussian record into one Gaussian,
``mu^2 = sum_i count_i mu_i^2`` (Dong, Roth & Su 2022, Corollary 3.3).  The reference
here is that closed form in mpmath: ``mu`` from the records' own parameters at 60
digits, ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` (Balle & Wang
2018, Theorem 8) inverted by bisection at 40 digits; nothing from dpacct.

No finding (a guard).  Measured on ws21-gdp (7c6ec2c, f20cedc), against that reference:
300 decaying sigmas (delta 1e-5, 1e-10, 1e-12: brackets within 2e-14 relative, main
online and up to 0.9 % above); 1 000 random sigmas in [0.5, 200] with counts 1-49, as
``step`` and ``record``; 200 ``from_gdp`` / ``compose`` / ``step`` records with mu in
[1e-4, 0.5]; a total mu of 2e-3 (epsilon 0.0039) and of 100 (epsilon 7 216); 401
sigmas one ulp apart x 1 000 steps; four budget filters on full-batch schedules (each
refused the first step whose exact epsilon passes the budget) and 400 random
step/record blocks under a budget (no refusal of a block that fits); a mixed ledger
(exact route) equal to ``compose`` of its steps and one Gaussian, a mixed online ledger
(14.41386) above dp_accounting's PLD at interval 1e-5 (14.41382) with its lower end
below; save/load and to_dict/from_dict equal, also after one more step.  The
small-mu float bound of the Gaussian curve (6df82fd, bcbbb7d): ``log_delta_bounds``
against mpmath at 60+ digits on 8 800 points (mu 1e-6 to 0.25, a in [-37, 0] and its
neighbouring floats, both sides of h = 0.15): none outside; ``certified_gaussian_delta``
and ``certified_gaussian_epsilon`` on 400 mu in [1e-9, 1e4] (deltas 1e-1..1e-100): sound,
mpmath needed 563-644 times against main's 2 479.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from dpacct.accountant import Mechanism, PrivacyAccountant, compose
from dpacct.accountant.ledger import records
from dpacct.mechanisms import GaussianMechanism

pytestmark = pytest.mark.skipif(
    not hasattr(records, "GaussianFold"), reason="the fold is ws21-gdp's (not merged here)"
)


def _gdp_delta(mu: mp.mpf, eps: mp.mpf) -> mp.mpf:
    return mp.ncdf(mu / 2 - eps / mu) - mp.exp(eps) * mp.ncdf(-mu / 2 - eps / mu)


def _gdp_epsilon(mu: mp.mpf, delta: float) -> tuple[float, float]:
    with mp.workdps(40):
        lo, hi = mp.mpf(0), mp.mpf(2) * mu * mu + 20 * mu
        for _ in range(120):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _gdp_delta(mu, mid) > delta else (lo, mid)
        tiny = mp.mpf(10) ** -30
        return float(lo * (1 - tiny)), float(hi * (1 + tiny))


def test_every_kind_of_full_batch_record_folds_to_the_exact_gaussian():
    # step(q = 1), record(Gaussian), from_gdp(mu), compose([Gaussian], counts), with
    # sigmas one ulp apart and large counts: the bracket holds the closed form and is
    # as narrow as one Gaussian's (main: the online route, 1e-3 wide at 1e-10)
    acct = PrivacyAccountant(progress=False)
    total = mp.mpf(0)
    sigma = 1.2345
    with mp.workdps(60):
        for i in range(40):
            sigma = math.nextafter(sigma, 2.0)
            kind = i % 4
            if kind == 0:
                acct.step(noise_multiplier=sigma, sample_rate=1.0, count=997)
                total += 997 / mp.mpf(sigma) ** 2
            elif kind == 1:
                acct.record(GaussianMechanism(3.0 * sigma), 13)
                total += 13 / mp.mpf(3.0 * sigma) ** 2
            elif kind == 2:
                mu = 0.01 * (i + 1)
                acct.record(Mechanism.from_gdp(mu))
                total += mp.mpf(mu) ** 2
            else:
                acct.record(compose([GaussianMechanism(sigma + 1.0)], counts=[5]), 2)
                total += 10 / mp.mpf(sigma + 1.0) ** 2
        mu = mp.sqrt(total)
    for delta in (1e-5, 1e-10):
        low, high = _gdp_epsilon(mu, delta)
        lo, hi = map(float, acct.epsilon_bounds(delta))
        assert lo <= high and hi >= low, (delta, lo, hi, low, high)
        assert float(acct.epsilon(delta)) >= low
        assert hi - lo <= 1e-11 * hi, (delta, lo, hi)


def test_a_budget_on_full_batch_steps_refuses_where_the_closed_form_passes_it():
    from dpacct.accountant.ledger import BudgetExceededError

    budget, delta = 3.0, 1e-10
    acct = PrivacyAccountant(budget_epsilon=budget, budget_delta=delta, progress=False)
    total = mp.mpf(0)
    with mp.workdps(60):
        for t in range(400):
            s = 20.0 * 0.999**t
            try:
                acct.step(noise_multiplier=s, sample_rate=1.0)
            except BudgetExceededError:
                # the step refused takes the exact epsilon above the budget ...
                assert _gdp_epsilon(mp.sqrt(total + 1 / mp.mpf(s) ** 2), delta)[0] > budget
                break
            total += 1 / mp.mpf(s) ** 2
        else:
            pytest.fail("never refused")
    # ... and what was admitted is within it
    assert _gdp_epsilon(mp.sqrt(total), delta)[1] <= budget
    assert acct.steps == 86
