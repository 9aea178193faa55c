"""The ledger classifies each record once, by capability (``dpacct.accountant.ledger.records``).

A mechanism declaring a Gaussian-DP ``mu`` under Poisson sampling is a DP-SGD step and
takes the same fast ledger route as a :class:`GaussianMechanism` with ``sigma = 1/mu``;
a replace-one Gaussian is refused the fast route (its cells would be add/remove
mechanisms) and answered by the engine's route under its own relation.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import gaussian_delta

from dpacct.accountant import Mechanism, PrivacyAccountant, poisson_subsample
from dpacct.accountant.ledger import BudgetExceededError, _FastHistory
from dpacct.accountant.ledger.records import EXACT_PHASES, classify
from dpacct.mechanisms import GaussianMechanism, ReplaceOneGaussianMechanism

DELTA = 1e-5
#: 20 distinct sampling rates (> EXACT_PHASES distinct records: the many-phase routes)
RATES = [0.01 * (1.0 + 0.05 * i) for i in range(20)]
#: mu whose reciprocal is a float, so sigma = 1/mu is exact
MUS = [0.5, 1.0, 0.25, 2.0]


def _ledgers(**kwargs):
    gdp = PrivacyAccountant(progress=False, **kwargs)
    gauss = PrivacyAccountant(progress=False, **kwargs)
    for i, q in enumerate(RATES):
        mu = MUS[i % len(MUS)]
        gdp.record(poisson_subsample(Mechanism.from_gdp(mu), q), 50)
        gauss.record(poisson_subsample(GaussianMechanism(sigma=1.0 / mu), q), 50)
    return gdp, gauss


def test_from_gdp_under_poisson_is_a_dpsgd_step():
    for mu in MUS:
        for q in (1.0, 0.01):
            step = classify(poisson_subsample(Mechanism.from_gdp(mu), q))
            assert step is not None
            assert step == classify(poisson_subsample(GaussianMechanism(sigma=1.0 / mu), q))
            assert (step.sigma_upper, step.sigma_lower, step.q) == (1.0 / mu, 1.0 / mu, q)


def test_from_gdp_takes_the_gaussian_fast_route_with_equal_answers():
    gdp, gauss = _ledgers()
    assert len(gdp.entries) > EXACT_PHASES
    assert gdp.route == gauss.route == "fast"
    assert gdp.epsilon(DELTA) == gauss.epsilon(DELTA)
    assert gdp.epsilon_bounds(DELTA) == gauss.epsilon_bounds(DELTA)
    assert gdp.delta(2.0) == gauss.delta(2.0)
    # before the split the from_gdp ledger took the engine's (rounded) route: a
    # different number; the fast route's bracket holds the exact composition's
    lower, upper = gdp.epsilon_bounds(DELTA)
    assert lower <= upper


def test_from_gdp_filter_keeps_its_history_on_the_fast_path():
    gdp, gauss = _ledgers(budget_epsilon=50.0, budget_delta=DELTA)
    assert gdp.epsilon(DELTA) == gauss.epsilon(DELTA)  # at the budget's delta: the history
    assert isinstance(gdp._history.current, _FastHistory)
    assert isinstance(gauss._history.current, _FastHistory)


def test_from_gdp_filter_refuses_at_the_same_step_as_gaussian():
    def run(make):
        acct = PrivacyAccountant(budget_epsilon=1.0, budget_delta=DELTA, progress=False)
        n = 0
        with pytest.raises(BudgetExceededError) as info:
            while n < 100_000:
                acct.record(poisson_subsample(make(), 0.01 * 1.002**n))
                n += 1
        return n, info.value.epsilon, acct

    n_gdp, eps_gdp, gdp = run(lambda: Mechanism.from_gdp(0.5))
    n_gauss, eps_gauss, _ = run(lambda: GaussianMechanism(sigma=2.0))
    assert n_gdp > EXACT_PHASES and gdp.route == "fast"
    assert (n_gdp, eps_gdp) == (n_gauss, eps_gauss)
    assert isinstance(gdp._history.current, _FastHistory)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-3, max_value=1e3, allow_nan=False))
def test_a_float_mu_gives_sigmas_on_both_sides_of_its_exact_reciprocal(mu):
    step = classify(Mechanism.from_gdp(mu))
    exact = 1 / Fraction(mu)  # the real 1/mu of the float mu, exactly
    assert Fraction(step.sigma_upper) <= exact <= Fraction(step.sigma_lower)
    assert math.nextafter(step.sigma_upper, math.inf) >= step.sigma_lower  # adjacent floats
    assert step.q == 1.0


def test_other_mechanisms_are_not_steps():
    from dpacct.mechanisms import LaplaceMechanism

    assert classify(LaplaceMechanism(b=1.0)) is None
    assert classify(poisson_subsample(LaplaceMechanism(b=1.0), 0.1)) is None


def test_replace_one_gaussian_is_refused_the_fast_route_and_accounted_under_its_relation():
    # the fast route's cells are add/remove subsampled Gaussians: a replace-one record
    # is not a step (Poisson sampling of it is refused by the engine anyway), so the
    # ledger answers it by the engine's route, which keeps the relation
    assert classify(ReplaceOneGaussianMechanism(sigma=2.0)) is None
    with pytest.raises(ValueError):
        poisson_subsample(ReplaceOneGaussianMechanism(sigma=2.0), 0.01)
    acct = PrivacyAccountant(progress=False)
    sigmas = [2.0 + 0.1 * i for i in range(20)]
    for s in sigmas:
        acct.record(ReplaceOneGaussianMechanism(sigma=s), 3)
    assert acct.route == "rounded"
    assert acct.mechanism().neighbouring == "replace-one"
    # independent value: the composition is mu-GDP with mu^2 = sum 3 / sigma^2
    mu = math.sqrt(sum(3.0 / s**2 for s in sigmas))
    eps = acct.epsilon(DELTA)
    assert gaussian_delta(mu, eps) <= DELTA * (1 + 1e-9)
    assert gaussian_delta(mu, eps * 0.99) > DELTA


@settings(max_examples=200, deadline=None)
@given(
    st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False),
    st.one_of(st.just(1.0), st.floats(1e-6, 1.0, allow_nan=False)),
)
def test_step_records_the_classification_of_its_mechanism(sigma, q):
    # PrivacyAccountant.step builds its entry's Step without calling classify(): it
    # must be exactly what classify finds
    acct = PrivacyAccountant(progress=False)
    acct.step(noise_multiplier=sigma, sample_rate=q, count=3)
    (entry,) = acct._records.entries
    assert entry.step == classify(entry.mechanism)
    assert entry.count == 3
