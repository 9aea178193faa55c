"""The bracket ``epsilon_bounds`` returns (``accountant/bracket.py``): a 2-tuple that says
what it brackets.

A truncated-Poisson step's PLDs are those of a revealed mixture that only *dominates*
the step; the lower end of its bracket (0.751472 for dp_accounting's
``TruncatedSubsampledGaussianDpEvent(60000, 0.004, 300, 1.0)`` x 1000) lies above
dp_accounting's own answer for the mechanism (0.751274), so "the true epsilon is inside"
is not true of it: the bracket must say ``"dominating pair"``, and so must every
composition that contains such a step.  Everything else still says ``"mechanism"``.
"""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from dpacct.accountant import (
    Bracket,
    GaussianMechanism,
    TruncatedPoissonGaussianMechanism,
    compose,
    poisson_subsample,
)
from dpacct.accountant.bracket import DOMINATING_PAIR, MECHANISM, bracket_subject
from dpacct.mechanisms import LaplaceMechanism

CUT = TruncatedPoissonGaussianMechanism(1.0, 0.01, dataset_size=10_000, max_batch_size=100)


def test_a_bracket_is_a_two_tuple():
    b = Bracket(1.0, 2.0)
    lo, hi = b
    assert (lo, hi) == (1.0, 2.0) == b and b.lower == 1.0 and b.upper == 2.0
    assert isinstance(b, tuple) and len(b) == 2 and repr(b) == "(1.0, 2.0)"
    assert b.bounds == MECHANISM


def test_a_dominating_pair_bracket_says_so_and_survives_copies():
    b = Bracket(0.75, 0.8, bounds=DOMINATING_PAIR)
    assert b == (0.75, 0.8) and b.bounds == DOMINATING_PAIR
    assert "dominating pair" in repr(b)
    for other in (pickle.loads(pickle.dumps(b)), copy.deepcopy(b), copy.copy(b)):
        assert other == b and other.bounds == DOMINATING_PAIR
    assert json.loads(json.dumps(b)) == [0.75, 0.8]


def test_bad_bounds_is_named():
    with pytest.raises(ValueError, match="bounds"):
        Bracket(0.0, 1.0, bounds="pair")


def test_mechanisms_bracket_themselves():
    for mech in (
        GaussianMechanism(sigma=1.0),
        LaplaceMechanism(b=2.0),
        compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.01)], counts=[100]),
    ):
        b = mech.epsilon_bounds(1e-6)
        assert b.bounds == MECHANISM == bracket_subject(mech)
        assert b[0] <= b[1]
    assert LaplaceMechanism(b=4.0).epsilon_bounds(0).bounds == MECHANISM


def test_truncated_poisson_brackets_a_dominating_pair_and_compositions_say_so():
    # main at 4230a13 returned a plain tuple: nothing said the lower end bounds a pair
    assert CUT.epsilon_bounds(1e-6).bounds == DOMINATING_PAIR
    mixed = compose([CUT, GaussianMechanism(sigma=2.0)], counts=[10, 1])
    b = mixed.epsilon_bounds(1e-6)
    assert b.bounds == DOMINATING_PAIR and b[0] <= b[1]
    assert poisson_subsample(CUT, 0.5).bracket_bounds == DOMINATING_PAIR


def test_the_reported_dp_accounting_event_says_dominating_pair():
    dpa = pytest.importorskip("dp_accounting")
    from dpacct.dp_accounting import DpEventAccountant

    event = dpa.SelfComposedDpEvent(
        dpa.TruncatedSubsampledGaussianDpEvent(60000, 0.004, 300, 1.0), 1000
    )
    acct = DpEventAccountant()
    acct.compose(event)
    b = acct.epsilon_bounds(1e-5)
    assert b.bounds == DOMINATING_PAIR
    # the reason: dp_accounting's PLD answer for the mechanism (0.751274) is below it
    assert b[0] > 0.7513


def test_a_ledger_holding_a_truncated_poisson_step_says_so():
    from dpacct.accountant import PrivacyAccountant

    acct = PrivacyAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=10)
    assert acct.epsilon_bounds(1e-5).bounds == MECHANISM
    acct.record(CUT, count=3)
    b = acct.epsilon_bounds(1e-5)
    assert b.bounds == DOMINATING_PAIR and b[0] <= b[1]


def test_the_random_allocation_pld_route_is_a_dominating_pair():
    from dpacct.accountant import random_allocation

    ra = random_allocation(GaussianMechanism(sigma=1.0), steps=100, epochs=2)
    assert ra.pld_route.bracket_bounds == DOMINATING_PAIR
    # the mechanism's own bracket: its epsilon on top, below it the larger of two
    # certified attacks' lower bounds (the largest coordinate, the sum statistic) --
    # both true of the mechanism
    from dpacct.accountant.transformers.random_allocation import (
        random_allocation_lower_epsilon,
    )
    from dpacct.accountant.transformers.random_allocation_sum_lower import (
        sum_statistic_lower_epsilon,
    )

    b = ra.epsilon_bounds(1e-6)
    assert b.bounds == MECHANISM and b[1] == ra.epsilon(1e-6)
    attacks = (
        random_allocation_lower_epsilon(1.0, 100, 1e-6, epochs=2),
        sum_statistic_lower_epsilon(1.0, 100, 1e-6, epochs=2),
    )
    assert 0.0 < b[0] == max(attacks) <= b[1]
