"""The budgeted ledger's composed history (``dpacct.accountant.ledger.history``).

Expected values are independent of the code under test: the Gaussian closed form
(Balle & Wang 2018, Theorem 8) for a composition of Gaussians, dp_accounting's PLD
accountant for Poisson-subsampled Laplace records (an asymmetric pair), and the count
of convolutions a history of ``n`` blocks must make (``n - 1`` per direction that
differs).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import gaussian_epsilon

from dpacct.accountant import PrivacyAccountant, poisson_subsample
from dpacct.accountant.ledger import _FastHistory, _PLDHistory
from dpacct.accountant.ledger.records import Entry, classify
from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism

DELTA = 1e-5
GRID = 2.0**-10


def _entry(mechanism, count=1):
    return Entry(mechanism, count, classify(mechanism))


def test_symmetric_blocks_keep_one_pld_and_one_convolution_per_block():
    history = _PLDHistory(DELTA, None, GRID, False)
    for b in (20.0, 21.0, 22.0, 23.0):
        history.fold([_entry(LaplaceMechanism(b=b))])
    # a Laplace mechanism has one loss law for both directions: one PLD, n - 1 = 3
    # convolutions for 4 blocks
    assert history.plds.symmetric and history.plds.add is None
    assert history.convolutions == 3
    # an asymmetric block (Poisson-subsampled Laplace): both directions from now on
    history.fold([_entry(poisson_subsample(LaplaceMechanism(b=1.0), 0.05), 3)])
    assert not history.plds.symmetric and history.plds.add is not None
    assert history.convolutions == 5


def test_epsilon_with_leaves_the_history_unchanged():
    history = _PLDHistory(DELTA, None, GRID, False)
    history.fold([_entry(LaplaceMechanism(b=5.0))])
    before = history.epsilon()
    plds = history.plds
    with_more = history.epsilon_with([_entry(LaplaceMechanism(b=5.0), 10)])
    assert history.plds is plds and history.blocks == 1
    assert history.epsilon() == before
    # ten more Laplace(5) releases add epsilon (pure bound: 11 / 5 at most in total)
    assert before < with_more <= 11 / 5 + 1e-9


def test_gaussian_blocks_bound_the_closed_form_from_above():
    sigmas = [3.0, 3.5, 4.0, 4.5, 5.0, 6.0]
    history = _PLDHistory(DELTA, None, GRID, False)
    for s in sigmas:
        history.fold([_entry(GaussianMechanism(sigma=s))])
    mu = math.sqrt(sum(1.0 / s**2 for s in sigmas))
    exact = gaussian_epsilon(mu, DELTA)
    eps = history.epsilon()
    # sound (the grid rounds sigma down, never up) and tight to the grid's 0.1 %
    assert exact <= eps <= exact * 1.01


def test_subsampled_laplace_history_agrees_with_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    pld = pytest.importorskip("dp_accounting.pld")
    scales = [1.0, 1.2, 1.4, 1.6]
    history = _PLDHistory(DELTA, None, GRID, False)
    for b in scales:
        history.fold([_entry(poisson_subsample(LaplaceMechanism(b=b), 0.05), 5)])
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    for b in scales:
        event = dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.LaplaceDpEvent(b))
        accountant.compose(event, 5)
    theirs = accountant.get_epsilon(DELTA)
    assert history.epsilon() == pytest.approx(theirs, rel=1e-2)


def test_budgeted_ledger_moves_from_the_fast_history_to_the_pld_history():
    acct = PrivacyAccountant(budget_epsilon=50.0, budget_delta=DELTA, progress=False)
    rng = np.random.default_rng(3)
    for s in 1.0 + rng.random(20):
        acct.step(noise_multiplier=float(s), sample_rate=0.01, count=10)
    assert isinstance(acct._history.now(), _FastHistory)
    steps_only = acct.epsilon(DELTA)
    acct.record(LaplaceMechanism(b=10.0))
    assert isinstance(acct._history.now(), _PLDHistory)
    # adding a release never lowers epsilon, and costs at most its pure epsilon 0.1
    after = acct.epsilon(DELTA)
    assert steps_only < after <= steps_only * 1.01 + 0.1
