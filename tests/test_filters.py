"""Privacy filters (``dpacct.accountant.ledger.filters``): the fixed-schedule PLD filter
refuses exactly the first record over budget, leaves the ledger unchanged, and survives
a save; the adaptive Renyi filter (Feldman & Zrnic 2021) admits records while their
summed RDP at its one order stays below the budget converted by Canonne, Kamath &
Steinke 2020, Proposition 12 -- written out here for Gaussian records, whose RDP is
``alpha / (2 sigma^2)`` (Mironov 2017)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct.accountant import PrivacyAccountant, compose, poisson_subsample
from dpacct.accountant.ledger import ADAPTIVE_ORDERS, BudgetExceededError
from dpacct.mechanisms import GaussianMechanism

DELTA = 1e-5


def dpsgd(sigma: float, q: float, steps: int):
    return compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[steps])


# ----------------------------------------------------------------------------------
# the fixed-schedule PLD filter
# ----------------------------------------------------------------------------------


def test_filter_refuses_exactly_the_first_step_over_budget():
    acct = PrivacyAccountant(budget_epsilon=1.0, budget_delta=DELTA)
    n = 0
    with pytest.raises(BudgetExceededError) as info:
        while True:
            acct.step(noise_multiplier=2.0, sample_rate=0.02)
            n += 1
    # n steps fit, n + 1 do not: the verdict of the ledger's own answer without a budget
    # (one phase: the online route), which lies inside the exact composition's bracket
    assert n > 100
    plain = PrivacyAccountant()
    plain.step(noise_multiplier=2.0, sample_rate=0.02, count=n)
    fits = plain.epsilon(DELTA)
    plain.step(noise_multiplier=2.0, sample_rate=0.02)
    assert fits <= 1.0 < plain.epsilon(DELTA)
    low, high = dpsgd(2.0, 0.02, n).epsilon_bounds(DELTA)
    assert low <= fits <= high * (1 + 1e-3)
    assert acct.steps == n
    err = info.value
    assert err.epsilon > 1.0 and err.budget_epsilon == 1.0 and err.budget_delta == DELTA
    assert "unchanged" in str(err)
    # one history evaluation covers many steps: O(log n), not O(n)
    assert acct.evaluations < 12 * math.log2(n + 2)
    # the spent epsilon never exceeds the budget in filter mode
    assert acct.epsilon(DELTA) == fits <= 1.0


def test_refused_record_leaves_the_ledger_unchanged():
    acct = PrivacyAccountant(budget_epsilon=2.0, budget_delta=DELTA)
    acct.step(noise_multiplier=1.0, sample_rate=0.05, count=10)
    before_entries, before_eps = acct.entries, acct.epsilon(DELTA)
    with pytest.raises(BudgetExceededError):
        acct.step(noise_multiplier=1.0, sample_rate=0.05, count=100_000)
    with pytest.raises(BudgetExceededError):
        acct.record(GaussianMechanism(sigma=0.5))
    assert acct.entries == before_entries
    assert acct.epsilon(DELTA) == before_eps
    # something small still fits, and a schedule change is checked too
    acct.step(noise_multiplier=4.0, sample_rate=0.05, count=10)
    assert len(acct.entries) == 2
    assert acct.epsilon(DELTA) <= 2.0


def test_filter_survives_save_and_load(tmp_path):
    acct = PrivacyAccountant(budget_epsilon=1.0, budget_delta=DELTA)
    acct.record(GaussianMechanism(sigma=10.0), 7)
    path = tmp_path / "ledger.json"
    acct.save(path)
    restored = PrivacyAccountant.load(path)
    assert restored.budget == (1.0, DELTA)
    with pytest.raises(BudgetExceededError):
        restored.record(GaussianMechanism(sigma=10.0))
    assert restored.steps == 7


# ----------------------------------------------------------------------------------
# the adaptive Renyi filter
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("sigma", "budget"), [(10.0, 1.0), (3.0, 4.0)])
def test_renyi_filter_admits_gaussians_up_to_the_converted_budget(sigma, budget):
    alphas = np.asarray(ADAPTIVE_ORDERS, dtype=float)
    # RDP budget B(alpha) whose CKS conversion is exactly the budget, and the order at
    # which most records of RDP alpha / (2 sigma^2) fit
    b = np.array(
        [budget - math.log1p(-1 / a) + (math.log(DELTA) + math.log(a)) / (a - 1) for a in alphas]
    )
    rho = alphas / (2 * sigma**2)
    fits = np.where(b > 0, b / rho, -np.inf)
    i = int(np.argmax(fits))
    expected = math.floor(fits[i])
    assert abs(fits[i] - round(fits[i])) > 1e-9  # not at a rounding boundary

    acct = PrivacyAccountant(budget_epsilon=budget, budget_delta=DELTA, adaptive=True)
    admitted = 0
    with pytest.raises(BudgetExceededError):
        for _ in range(expected + 2):
            acct.record(GaussianMechanism(sigma=sigma))
            admitted += 1
    assert acct.adaptive_order == alphas[i]
    assert admitted == expected


def test_renyi_filter_pays_for_the_round_off_of_its_running_sum():
    # a float running sum of n non-negative terms can lie (n - 1) u below the exact sum
    # (Higham 2002, section 4.2): a sum that reaches the limit exactly in floats after a
    # million charges is refused, while the same float sum after no charges is admitted
    from dpacct.accountant.ledger.filters import RenyiFilter
    from dpacct.accountant.ledger.records import Entry

    order = 8.0
    entry = Entry.of(GaussianMechanism(sigma=4.0), 1)
    fresh = RenyiFilter((2.0, DELTA), order)
    rho = fresh.rdp_at(entry.mechanism)
    limit = float(fresh._rdp_budget(order))
    # the safe limit is below the computed one by a few ulps of the terms, no more
    assert 0 < limit - fresh._safe_rdp_budget(order) < 1e-13 * max(1.0, limit)
    fresh.spent = fresh._safe_rdp_budget(order) * (1 - 2.0**-40) - rho
    fresh.admit(entry)  # far from the round-off: admitted
    worn = RenyiFilter((2.0, DELTA), order)
    worn.spent = limit - rho
    worn.adds = 10**6
    with pytest.raises(BudgetExceededError):
        worn.admit(entry)
