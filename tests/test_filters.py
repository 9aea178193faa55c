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
from hypothesis import given, settings
from hypothesis import strategies as st
from pins import pinned

from dpacct.accountant import PrivacyAccountant, compose, poisson_subsample
from dpacct.accountant.ledger import ADAPTIVE_ORDERS, BudgetExceededError
from dpacct.accountant.ledger.filters import MAX_COVER, PLDFilter, _largest_count
from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism

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


def _to_refusal(budget: float, feed) -> tuple[int, float]:
    """Feed records (``feed(acct, i)``) to a filter until one is refused: the records
    admitted and the ledger's answer then."""
    acct = PrivacyAccountant(budget_epsilon=budget, budget_delta=DELTA, progress=False)
    with pytest.raises(BudgetExceededError):
        for i in range(10**6):
            feed(acct, i)
    return acct.steps, acct.epsilon(DELTA)


# what old main (60d1fff, whose filter certified 1, 2, 4, ... further records per
# composition) admitted before its first refusal, and its answer then, on the same
# feeds (python -c "..." stepping each feed to refusal, as _to_refusal does)
OLD_MAIN_ADMITTED = {
    # the answers re-recorded for the exact-exponent tilts of the pessimistic products
    # (issue 37, session 25): each 1e-14 to 5e-12 relative lower (were 1.9998426747664066,
    # 1.9980411807796044, 2.9993851144868366, 0.9989185617784532); the counts unchanged
    "constant": (1725, 1.9998426747566502),
    "seven per call": (1722, 1.9980411807703824),
    "two phases": (601, 2.999385114484218),
    "laplace": (118, 0.9989185617784233),
}
FEEDS = {
    "constant": (2.0, lambda a, i: a.step(noise_multiplier=1.1, sample_rate=0.01)),
    "seven per call": (2.0, lambda a, i: a.step(noise_multiplier=1.1, sample_rate=0.01, count=7)),
    "two phases": (
        3.0,
        lambda a, i: a.step(noise_multiplier=1.5 if i < 300 else 0.9, sample_rate=0.02),
    ),
    "laplace": (1.0, lambda a, i: a.record(LaplaceMechanism(b=40.0))),
}


@pytest.mark.parametrize("name", sorted(FEEDS))
def test_a_repeated_record_is_certified_to_the_largest_count_that_fits(name, monkeypatch):
    # a record repeating the last one is certified for the largest number of copies
    # that fits, found by a bracketed search: the same records are admitted as by old
    # main's doubling look-ahead, with the same answer, in a few compositions
    calls = []
    bound_with = PLDFilter._bound_with

    def counted(self, entry):
        calls.append(entry.count)
        return bound_with(self, entry)

    monkeypatch.setattr(PLDFilter, "_bound_with", counted)
    budget, feed = FEEDS[name]
    admitted, answer = _to_refusal(budget, feed)
    assert pinned((admitted, answer), OLD_MAIN_ADMITTED[name])  # (tests/pins.py: CPUs)
    assert len(calls) <= 10  # old main: 17 or more on these feeds (19-40 on the routes grid)


def test_a_constant_schedule_is_admitted_up_to_the_largest_step_count_that_fits():
    # the count admitted is the largest whose composition fits, composed independently
    # at that count and one more
    admitted, _ = _to_refusal(2.0, FEEDS["constant"][1])
    assert dpsgd(1.1, 0.01, admitted).epsilon(DELTA) <= 2.0
    assert dpsgd(1.1, 0.01, admitted + 1).epsilon(DELTA) > 2.0


def _bisection(bound, count: int, budget: float) -> int:
    """The largest k >= count with bound(k) <= budget, by plain bisection (0: none)."""
    if bound(count) > budget:
        return 0
    lo, hi = count, count + 1
    while bound(hi) <= budget and hi < MAX_COVER:
        lo, hi = hi, min(2 * hi, MAX_COVER)
    if bound(hi) <= budget:
        return hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if bound(mid) <= budget else (lo, mid)
    return lo


@settings(max_examples=300, deadline=None)
@given(
    st.floats(0.05, 3.0),  # power
    st.integers(1, 10**5),  # plateau width (a step function)
    st.integers(0, 10**6),  # records already counted
    st.integers(1, 50),  # copies asked for
    st.floats(1.0, 1e7),  # where the budget is reached, in records
    st.integers(0, 10**8),  # beyond this count: infinite
)
def test_largest_count_is_the_largest_that_fits_in_logarithmically_many_steps(
    power, width, base, count, reach, infinite
):
    def bound(k: int) -> float:  # non-decreasing in k
        if k > infinite:
            return math.inf
        return ((base + k) // width * width / reach) ** power

    calls: list[int] = []
    k, eps = _largest_count(lambda j: calls.append(j) or bound(j), count, 1.0, base)
    assert k == _bisection(bound, count, 1.0)
    if k:
        assert eps == bound(k) <= 1.0
        assert k == MAX_COVER or k + 1 in calls  # the next count was composed: it fails
    else:
        assert eps > 1.0 and calls == [count]
    # O(log n) evaluations: a secant guess, else the bracket halves
    assert len(calls) < 4 * math.log2(k + base + 2) + 8


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
