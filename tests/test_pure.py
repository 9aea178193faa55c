"""``dpacct.accountant.families.pure``: the bracket of a mechanism's pure epsilon, against closed
forms (the largest privacy loss of the pair and the probability it is attained)."""

from __future__ import annotations

import math

import pytest

from dpacct.accountant import compose
from dpacct.accountant.families.pure import LOWER_DELTA, pure_epsilon_bounds
from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse


@pytest.mark.parametrize("b", [0.5, 2.0, 10.0])
def test_laplace_pure_epsilon_is_one_over_b(b):
    # Laplace(b), sensitivity 1: the privacy loss is at most 1/b, attained on a half-line
    lo, hi = pure_epsilon_bounds(LaplaceMechanism(b=b), None)
    assert hi == pytest.approx(1.0 / b, rel=1e-15)
    assert (1.0 / b) * (1 - 1e-12) <= lo <= hi


def test_randomized_response_pure_epsilon_is_the_log_odds():
    # binary RR answering truthfully with p = 3/4: the likelihood ratio is 3 = p / (1 - p)
    lo, hi = pure_epsilon_bounds(RandomizedResponse(p=0.75), None)
    assert hi == pytest.approx(math.log(3.0), rel=1e-15)
    assert math.log(3.0) * (1 - 1e-12) <= lo <= hi


def test_composed_laplace_lower_end_comes_from_the_certified_bracket():
    # three Laplace(2) steps: the loss reaches its maximum 3/2 with probability 2^-3
    # (every noise on the far side), so epsilon(delta) is 3/2 for any delta < 1/8
    # (no exact curve here: the lower end is the PLD's certified one at LOWER_DELTA)
    run = compose([LaplaceMechanism(b=2.0)], counts=[3])
    lo, hi = pure_epsilon_bounds(run, None)
    assert hi == pytest.approx(1.5, rel=1e-12)
    assert 1.5 * (1 - 1e-3) <= lo <= hi
    assert LOWER_DELTA < 2.0**-3


def test_a_mechanism_without_a_pure_epsilon_is_refused_by_name():
    with pytest.raises(ValueError, match="pure_epsilon"):
        pure_epsilon_bounds(GaussianMechanism(sigma=1.0), None)
