"""accountant/ledger/ledger_mechanism.py: a ledger's history as a mechanism (issue 36).

Every query of a :class:`PrivacyAccountant` is its ledger mechanism's, answered by the
router.  Checked against the closed form of full-batch Gaussian records: any sequence of
Gaussian mechanisms with noise multipliers ``sigma_i`` (``n_i`` times each) is exactly
``mu``-GDP with ``mu = sqrt(sum n_i / sigma_i^2)`` (Dong, Roth & Su 2019, Corollary 3.3),
whose Renyi curve is ``alpha mu^2 / 2`` (Mironov 2017, Proposition 7); the reference
values are the mpmath ones of ``tests/oracles.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from ledgers import ledger
from oracles import gaussian_delta, gaussian_epsilon, gdp_tradeoff

from dpacct.accountant import PrivacyAccountant, compose, routes
from dpacct.accountant.ledger.ledger_mechanism import LedgerMechanism
from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism

DELTA = 1e-5
#: 20 distinct full-batch Gaussian phases: beyond EXACT_PHASES, but folded into one
#: Gaussian (issue 37), so the "exact" route
SCHEDULE = [(2.0 + 0.25 * t, 5 + t) for t in range(20)]


def _ledger(schedule) -> PrivacyAccountant:
    """The full-batch ledger of ``(sigma, count)`` records."""
    return ledger((sigma, 1.0, count) for sigma, count in schedule)


def _mu(schedule) -> float:
    return math.sqrt(sum(n / s**2 for s, n in schedule))


@pytest.mark.parametrize(
    ("schedule", "route"), [(SCHEDULE[:3], "exact"), (SCHEDULE, "exact")]
)
def test_every_query_of_a_gaussian_ledger_brackets_its_closed_form(schedule, route):
    acct = _ledger(schedule)
    ledger = acct.ledger
    assert isinstance(ledger, LedgerMechanism) and ledger.route == acct.route == route
    mu = _mu(schedule)
    eps_true = gaussian_epsilon(mu, DELTA)
    eps = ledger.epsilon(DELTA)
    assert eps == acct.epsilon(DELTA)
    assert eps_true <= eps <= eps_true * (1 + 5e-3)
    lo, hi = ledger.epsilon_bounds(DELTA)
    assert (lo, hi) == tuple(acct.epsilon_bounds(DELTA))
    assert lo <= eps_true <= hi == eps
    d_true = float(gaussian_delta(mu, 1.0))
    d = ledger.delta(1.0)
    assert d == acct.delta(1.0)
    assert d_true <= d <= d_true * 1.05
    alpha = np.array([2.0, 8.0, 32.0])
    rdp = ledger.rdp(alpha)
    assert np.all(rdp >= alpha * mu**2 / 2 * (1 - 1e-12))
    np.testing.assert_allclose(rdp, alpha * mu**2 / 2, rtol=1e-2)
    fpr = np.array([1e-3, 0.05, 0.3])
    beta = ledger.tradeoff(fpr)
    beta_true = np.array([float(gdp_tradeoff(mu, a)) for a in fpr])
    assert np.all(beta <= beta_true + 1e-12)
    np.testing.assert_allclose(beta, beta_true, atol=2e-2)


def test_the_accountant_asks_the_router_for_epsilon_and_delta_alike(monkeypatch):
    # one way down: the accountant's epsilon and delta both go through the router's
    # ledger rows (on every route), never round it
    calls: list[str] = []
    for name in ("ledger_epsilon", "ledger_delta"):
        real = getattr(routes, name)

        def spy(*args, _real=real, _name=name):
            calls.append(_name)
            return _real(*args)

        monkeypatch.setattr(routes, name, spy)
    for schedule in (SCHEDULE[:2], SCHEDULE):
        acct = _ledger(schedule)
        acct.epsilon(DELTA)
        acct.delta(1.0)
    assert calls == ["ledger_epsilon", "ledger_delta"] * 2


def test_an_empty_ledger_spends_nothing():
    ledger = PrivacyAccountant().ledger
    assert ledger.empty and ledger.route == "exact"
    assert ledger.epsilon(DELTA) == 0.0 and ledger.delta(0.5) == 0.0
    assert tuple(ledger.epsilon_bounds(DELTA)) == (0.0, 0.0)
    assert ledger.rdp(4.0) == 0.0
    np.testing.assert_allclose(ledger.tradeoff([0.0, 0.25, 1.0]), [1.0, 0.75, 0.0], atol=0)


def test_arrays_tol_and_bad_input_follow_the_mechanism_contract():
    acct = _ledger(SCHEDULE[:2])
    ledger = acct.ledger
    out = ledger.epsilon([1e-5, 1e-7])
    assert out.shape == (2,) and out[0] == ledger.epsilon(1e-5) and out[1] == ledger.epsilon(1e-7)
    deltas = ledger.delta(np.array([[0.5, 1.0]]))
    assert deltas.shape == (1, 2) and deltas[0, 1] == ledger.delta(1.0)
    coarse = ledger.epsilon(DELTA, tol=1e-2)
    assert coarse >= gaussian_epsilon(_mu(SCHEDULE[:2]), DELTA)
    with pytest.raises(ValueError, match="delta"):
        ledger.epsilon(1.5)
    with pytest.raises(ValueError, match="epsilon"):
        ledger.delta(-1.0)
    with pytest.raises(ValueError, match="alpha"):
        ledger.rdp(0.5)
    with pytest.raises(ValueError, match="tol"):
        ledger.epsilon(DELTA, tol=0.9)


def test_a_ledger_inside_a_composition_is_its_records_or_a_dominating_schedule():
    extra = LaplaceMechanism(b=10.0)
    for schedule in (SCHEDULE[:3], SCHEDULE):
        acct = _ledger(schedule)
        wrapped = compose([acct.ledger, extra], counts=[1, 2])
        records = [GaussianMechanism(sigma=s) for s, _ in schedule]
        exact = compose([*records, extra], counts=[n for _, n in schedule] + [2])
        e_wrapped, e_exact = wrapped.epsilon(DELTA), exact.epsilon(DELTA)
        if acct.route == "exact":  # a nested composition: the same PLDs, other grids
            assert e_wrapped == pytest.approx(e_exact, rel=1e-5)
        else:  # the schedule rounded up to the grid: sound, within the grid's width
            assert e_exact * (1 - 1e-4) <= e_wrapped <= e_exact * 1.01


def test_delta_off_the_exact_route_does_not_increase_with_epsilon(monkeypatch):
    """The router's answers near a history's floor can rise a little with epsilon (each
    one sound).  The ledger returns, at each epsilon of one call, the smallest answer of
    that call at an epsilon at most that one -- sound because the true delta does not
    increase -- and never mixes in earlier calls' answers (reproducible).  The
    router is replaced by a curve ``e^-eps`` raised by half at every other epsilon (no
    composition: the rule, not the engine, is under test)."""

    def rising(ledger, flat, tol):
        return np.exp(-flat) * np.where(np.round(flat * 4) % 2 == 1, 1.5, 1.0)

    monkeypatch.setattr(routes, "ledger_delta", rising)
    acct = PrivacyAccountant(progress=False)  # subsampled: full-batch ones fold (exact)
    for sigma, count in SCHEDULE:
        acct.step(noise_multiplier=sigma, sample_rate=0.5, count=count)
    ledger = acct.ledger
    assert ledger.route == "online"
    eps = np.array([1.0, 1.25, 1.5, 1.75])
    got = ledger.delta(eps)
    np.testing.assert_array_equal(got, np.exp(-eps[[0, 0, 2, 2]]))
    # asked one by one: each its own answer, whatever was asked before (reproducible)
    assert acct.delta(1.25) == 1.5 * math.exp(-1.25) > got[1]
    assert ledger.delta(eps[::-1])[::-1].tolist() == got.tolist()  # any order of the array
    exact = _ledger(SCHEDULE[:3])
    assert exact.route == "exact" and exact.delta(1.0) == math.exp(-1.0)
    assert exact.delta(1.25) == 1.5 * math.exp(-1.25)  # the composition's own answer
