"""Review 19 (issue 37): the ledger's exact cells for the first distinct ``(sigma, q)``
of a schedule, the refined lower end and the budget filter, against exact Gaussian DP.

No finding: these are the review's passing checks, kept as regressions.  With
``q = 1`` every DP-SGD step is a Gaussian, so a schedule of distinct noise multipliers
``sigma_t`` is exactly ``mu``-GDP with ``mu^2 = sum_t sigma_t^-2`` (Dong, Roth & Su
2019, Corollary 2.5), whose ``delta(epsilon) = Phi(-eps/mu + mu/2) - e^eps
Phi(-eps/mu - mu/2)`` (their Corollary 2.13) is evaluated here with mpmath at 30 digits
and inverted by bisection: nothing is taken from dpacct.  A decaying schedule gives
every step its own ``(sigma, q)``, so the session's exact cells (``EXACT_STEPS``),
exact blocks (``EXACT_BLOCK_CELLS``), the query's runs of pending cells (``_chunks``)
and the refined lower end (``_refined_lower``) are all on the path.
"""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from dpacct.accountant import BudgetExceededError, PrivacyAccountant


def _gdp_delta(mu: float, eps: float) -> float:
    with mp.workdps(30):
        m, e = mp.mpf(mu), mp.mpf(eps)
        return float(mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2))


def _gdp_epsilon(mu: float, delta: float) -> float:
    lo, hi = 0.0, 500.0
    for _ in range(80):  # delta(eps) decreases in eps
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _gdp_delta(mu, mid) > delta else (lo, mid)
    return hi


@pytest.mark.slow  # 1-4 s on the loaded machine
def test_decaying_gaussian_schedule_bracket_holds_the_exact_gdp_epsilon():
    # measured (sched at 2ce1e49): 100 steps of 5 * 0.99^t, truth 20.931155 at 1e-5
    # (upper +3.1e-6, lower -5.4e-6 relative), 25.794255 at 1e-8 (+7.7e-5, -1.1e-5);
    # 300 / 2 500 steps and deltas 1e-15..0.1 measured sound too (the report)
    sigmas = [5.0 * 0.99**t for t in range(100)]
    acct = PrivacyAccountant(progress=False)
    for s in sigmas:
        acct.step(noise_multiplier=s, sample_rate=1.0)
    mu = math.sqrt(sum(s**-2 for s in sigmas))
    for delta in (1e-5, 1e-8):
        truth = _gdp_epsilon(mu, delta)
        lo, hi = map(float, acct.epsilon_bounds(delta))
        assert lo <= truth * (1 + 1e-9) and float(acct.epsilon(delta)) >= truth * (1 - 1e-9)
        assert hi >= truth * (1 - 1e-9), (delta, lo, truth, hi)
        assert hi <= truth * (1 + 1e-3) and lo >= truth * (1 - 1e-3)  # not vacuous


@pytest.mark.slow  # 1-3 s on the loaded machine
def test_budget_filter_refuses_before_the_exact_gdp_delta_exceeds_the_budget():
    # measured (sched at 2ce1e49): 36 steps of 4 * 0.995^t admitted (exact delta at
    # epsilon 8: 6.89e-6), the 37th refused (it would make 1.047e-5 > 1e-5); 584 steps
    # of 20 * 0.999^t, 320 of 30 * 0.9995^t (budget (3, 1e-6)) refused as tightly
    budget_eps, budget_delta = 8.0, 1e-5
    acct = PrivacyAccountant(budget_epsilon=budget_eps, budget_delta=budget_delta, progress=False)
    inv, admitted = 0.0, 0
    with pytest.raises(BudgetExceededError):
        for t in range(200):
            acct.step(noise_multiplier=4.0 * 0.995**t, sample_rate=1.0)
            inv += (4.0 * 0.995**t) ** -2
            admitted += 1
    assert _gdp_delta(math.sqrt(inv), budget_eps) <= budget_delta
    # and not refused far too early: the step refused is the one that crosses it
    nxt = inv + (4.0 * 0.995**admitted) ** -2
    assert _gdp_delta(math.sqrt(nxt), budget_eps) > budget_delta * 0.9, admitted
    # after the refusal (the refused step's exact pair rolled back): a small step is
    # admitted, so is an earlier pair again (exact delta 9.4e-6 after it), sigma 3 is
    # refused (1.3e-5), and the ledger's bracket still holds the exact epsilon
    for s in (50.0, 4.0):
        acct.step(noise_multiplier=s, sample_rate=1.0)
        inv += s**-2
    with pytest.raises(BudgetExceededError):
        acct.step(noise_multiplier=3.0, sample_rate=1.0)
    mu = math.sqrt(inv)
    assert _gdp_delta(mu, budget_eps) <= budget_delta
    truth = _gdp_epsilon(mu, budget_delta)
    lo, hi = map(float, acct.epsilon_bounds(budget_delta))
    assert lo <= truth <= hi <= truth * (1 + 1e-4), (lo, truth, hi)
