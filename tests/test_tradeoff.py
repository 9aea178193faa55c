"""``dpacct.accountant.queries.tradeoff``: the dual of a privacy curve (a lower bound on the f-DP
trade-off curve), against the closed-form trade-off curves of Dong, Roth & Su 2022:
``f_{eps,0}(a) = max(0, 1 - e^eps a, e^-eps (1 - a))`` for pure eps-DP and
``G_mu(a) = Phi(Phi^-1(1 - a) - mu)`` for the Gaussian mechanism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracles import gaussian_delta_curve
from scipy import stats

from dpacct.accountant.queries.tradeoff import (
    BLOCK_ELEMENTS,
    TRADEOFF_NODES,
    tradeoff_envelope,
    tradeoff_from_delta,
)


def _pure_tradeoff(a: np.ndarray, eps: float) -> np.ndarray:
    return np.maximum(0.0, np.maximum(1.0 - math.exp(eps) * a, math.exp(-eps) * (1.0 - a)))


def _rr_delta(eps: np.ndarray) -> np.ndarray:
    """Randomized response with p = 3/4 (pure log 3): ``max(0, (3 - e^eps) / 4)``."""
    return np.maximum(0.0, (3.0 - np.exp(eps)) / 4.0)


def test_two_nodes_of_a_pure_pair_give_its_closed_form():
    a = np.linspace(0.0, 1.0, 101)
    got = tradeoff_envelope(
        a, np.array([0.0, math.log(3.0)]), _rr_delta(np.array([0.0, math.log(3.0)]))
    )
    np.testing.assert_allclose(got, _pure_tradeoff(a, math.log(3.0)), rtol=0, atol=1e-15)


def test_the_envelope_of_the_rr_curve_is_below_and_close_to_the_closed_form():
    a = np.linspace(0.0, 1.0, 2001)
    got = tradeoff_from_delta(_rr_delta, a)
    want = _pure_tradeoff(a, math.log(3.0))
    assert np.all(got <= want + 1e-15)  # a lower bound
    assert np.max(want - got) < 2e-3  # the node grid loses little


@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_the_gaussian_envelope_is_below_and_close_to_g_mu(mu):
    a = np.concatenate([[0.0], np.geomspace(1e-6, 1.0, 400)])
    got = tradeoff_from_delta(lambda eps: gaussian_delta_curve(eps, mu), a)
    want = stats.norm.cdf(stats.norm.isf(a) - mu)
    assert np.all(got <= want + 1e-12)
    assert np.max(want - got) < 5e-3


def test_an_asymmetric_pair_uses_its_swapped_curve():
    # nodes 0 and log 3 with delta_QP = (1/2, 0) and delta_PQ = 1 everywhere: only the
    # first family of lines, max(0, 1/2 - a, 1 - 3a), remains
    a = np.array([0.0, 0.1, 0.3, 0.5])
    got = tradeoff_envelope(a, np.array([0.0, math.log(3.0)]), np.array([0.5, 0.0]), np.ones(2))
    np.testing.assert_allclose(got, np.maximum(0.0, np.maximum(0.5 - a, 1.0 - 3.0 * a)), atol=1e-15)


def test_a_node_far_in_the_tail_gives_one_minus_delta_at_zero():
    got = tradeoff_envelope(np.array([0.0, 1e-3]), np.array([1000.0]), np.array([1e-9]))
    assert got[0] == pytest.approx(1.0 - 1e-9, abs=1e-16)
    assert got[1] == 0.0  # e^1000 a overflows to inf: the line is below zero there


def test_blocks_of_false_positive_rates_agree_with_the_closed_form():
    # more rates than one block holds (a block has BLOCK_ELEMENTS / 601 nodes rates):
    # the answer does not depend on the blocking
    n = 3 * BLOCK_ELEMENTS // TRADEOFF_NODES.size
    a = np.linspace(0.0, 1.0, n)
    got = tradeoff_from_delta(_rr_delta, a)
    want = _pure_tradeoff(a, math.log(3.0))
    assert np.all(got <= want + 1e-15)
    assert np.max(want - got) < 2e-3
