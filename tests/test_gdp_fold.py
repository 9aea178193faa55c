"""Full-batch Gaussian records fold into one Gaussian (issue 37, review finding 3).

A composition of Gaussian mechanisms, ``count_i`` times noise multiplier ``sigma_i``,
is exactly ``mu``-GDP with ``mu^2 = sum_i count_i / sigma_i^2`` (Dong, Roth & Su 2022,
Corollary 3.3).  The references here are independent of the library: ``mu`` summed
and rooted in mpmath at 50 digits, the curve ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 -
eps/mu)`` (Balle & Wang 2018, Theorem 8) by ``mp.ncdf`` and its root by
``mp.findroot``.  On main (aeb560c) a ledger of 300 distinct full-batch sigmas was
routed "online" (PLD): its upper end was 0.9 % above the truth at delta 1e-10 and its
filter refused steps the exact composition admits; these tests fail there.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct.accountant import BudgetExceededError, PrivacyAccountant
from dpacct.accountant.ledger.records import GaussianFold, Step
from dpacct.mechanisms import GaussianMechanism

#: 300 distinct noise multipliers (the review's reproduction)
SIGMAS = [float(s) for s in 9.0 * 0.998 ** np.arange(300)]


def _mu(pairs) -> mp.mpf:
    """``sqrt(sum count / sigma^2)`` at 50 digits, the floats taken as exact."""
    with mp.workdps(50):
        return mp.sqrt(mp.fsum(mp.mpf(c) / mp.mpf(s) ** 2 for s, c in pairs))


def _exact_epsilon(mu: mp.mpf, delta: float) -> mp.mpf:
    """The root of the mu-GDP curve at ``delta`` (mp.ncdf closed form, mp.findroot)."""
    with mp.workdps(50):
        d = mp.mpf(delta)

        def curve(e):
            return mp.ncdf(mu / 2 - e / mu) - mp.exp(e) * mp.ncdf(-mu / 2 - e / mu) - d

        # a bracket from the upper bound mu (mu/2 + z), Phi(-z) = delta
        z = -mp.sqrt(2) * mp.erfinv(2 * d - 1)
        root = mp.findroot(
            curve, (mp.mpf(0), mu * (mu / 2 + z)), solver="illinois", maxsteps=200, verify=False
        )
        assert abs(curve(root)) <= mp.mpf(10) ** -40 * d  # converged: a root to 1e-40
        return root


def _full_batch(sigmas, **kwargs) -> PrivacyAccountant:
    acct = PrivacyAccountant(progress=False, **kwargs)
    for s in sigmas:
        acct.step(noise_multiplier=s, sample_rate=1.0)
    return acct


def test_three_hundred_sigmas_are_one_gaussian_at_every_delta():
    acct = _full_batch(SIGMAS)
    mu = _mu((s, 1) for s in SIGMAS)
    for delta in (1e-5, 1e-10, 1e-12):
        truth = _exact_epsilon(mu, delta)
        lo, hi = acct.epsilon_bounds(delta)
        assert lo <= truth <= hi, delta
        assert hi - lo <= 1e-11 * hi and acct.epsilon(delta) == hi
        assert (hi - truth) / truth <= 1e-11  # main: 9e-3 above at 1e-10
    # delta(eps) at the truth's epsilon: at least delta, and by no more than rounding
    e = float(_exact_epsilon(mu, 1e-10))
    assert 1e-10 * (1 - 1e-9) <= acct.delta(e) <= 1e-10 * (1 + 1e-9)
    assert acct.route == "exact" and acct.steps == 300 and len(acct.entries) == 300


def test_the_fold_is_derived_and_records_survive_a_reload(tmp_path):
    acct = _full_batch(SIGMAS[:40])
    acct.record(GaussianMechanism(sigma=3.0), count=5)  # record() folds too
    path = tmp_path / "ledger.json"
    acct.save(path)
    back = PrivacyAccountant.load(path)
    assert back.entries == acct.entries and len(back.entries) == 41
    assert back.route == acct.route == "exact"
    assert back.epsilon(1e-6) == acct.epsilon(1e-6)
    truth = _exact_epsilon(_mu([(s, 1) for s in SIGMAS[:40]] + [(3.0, 5)]), 1e-6)
    assert truth <= acct.epsilon(1e-6) <= truth * (1 + 1e-11)


def test_a_mixed_ledger_is_its_steps_with_the_gaussians_entered_as_one():
    steps = [(1.1, 0.01, 200)]
    mixed = PrivacyAccountant(progress=False)
    # interleaved with the subsampled steps; 41 distinct records: main routed them online
    for t, s in enumerate(SIGMAS[:40]):
        mixed.step(noise_multiplier=s * 4, sample_rate=1.0)
        if t % 20 == 0:
            for sigma, q, count in steps:
                mixed.step(noise_multiplier=sigma, sample_rate=q, count=count // 2)
    with mp.workdps(50):
        sigma = 1 / _mu((4 * s, 1) for s in SIGMAS[:40])  # float() below: rounded
    one = PrivacyAccountant(progress=False)
    for sigma_q, q, count in steps:
        one.step(noise_multiplier=sigma_q, sample_rate=q, count=count)
    one.record(GaussianMechanism(sigma=math.nextafter(float(sigma), 0.0)))
    assert mixed.epsilon(1e-10) == pytest.approx(one.epsilon(1e-10), rel=1e-9)
    assert mixed.route == "exact"  # a subsampled record and one fold


@pytest.mark.parametrize("adaptive", [False, "gdp"])
def test_a_budget_refuses_the_step_the_exact_composition_refuses(adaptive):
    budget, delta = 6.0, 1e-10
    sigmas = [float(s) for s in 12.0 * 0.99 ** np.arange(120)]
    # the first k whose exact epsilon passes the budget: whose mu passes the mu at
    # which the curve meets delta at the budget (the curve grows with mu)
    with mp.workdps(50):
        e, d = mp.mpf(budget), mp.mpf(delta)
        mu_star = mp.findroot(
            lambda m: mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m) - d,
            (mp.mpf("0.1"), mp.mpf(10)),
            solver="illinois",
            maxsteps=200,
            verify=False,
        )
        first, acc = None, mp.mpf(0)
        for k, s in enumerate(sigmas):
            acc += 1 / mp.mpf(s) ** 2
            if mp.sqrt(acc) > mu_star:
                first = k
                break
    assert abs(_exact_epsilon(mu_star, delta) - budget) < 1e-30
    assert first is not None and first > 16
    acct = PrivacyAccountant(budget_epsilon=budget, budget_delta=delta, adaptive=adaptive)
    for s in sigmas[:first]:
        acct.step(noise_multiplier=s, sample_rate=1.0)
    with pytest.raises(BudgetExceededError):
        acct.step(noise_multiplier=sigmas[first], sample_rate=1.0)
    assert acct.steps == first and acct.epsilon(delta) <= budget
    with mp.workdps(50):  # the answer is the exact composition's (main: 3e-3 above)
        spent = _exact_epsilon(mp.sqrt(acc - 1 / mp.mpf(sigmas[first]) ** 2), delta)
    assert spent <= acct.epsilon(delta) <= spent * (1 + 1e-11)


@settings(max_examples=20, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(1e-140, 1e140, allow_nan=False), st.integers(1, 10**12)
        ),
        min_size=1,
        max_size=12,
    )
)
def test_the_fold_rounds_sigma_the_safe_way(pairs):
    fold = GaussianFold()
    for sigma, count in pairs:
        fold.add(Step(sigma, sigma, 1.0), count)
    exact = sum(Fraction(c) / Fraction(s) ** 2 for s, c in pairs)  # mu^2, exactly
    up, down = fold.sigma(upper=True), fold.sigma(upper=False)
    assert up is not None and down is not None
    assert Fraction(up) ** 2 * exact <= 1 <= Fraction(down) ** 2 * exact
    # and tight: a few ulps around 1 / mu
    assert math.nextafter(up, math.inf) * (1 - 2**-50) <= down <= up * (1 + 2**-49)
