"""dpacct/_dp_event_mapping.py: the dpacct mechanism each DpEvent leaf maps to, checked
against brute force and closed forms (no dp_accounting needed: the helpers take plain
numbers)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct import _dp_event_mapping as mapping
from dpacct.accountant import ADD_REMOVE, REPLACE_ONE
from dpacct.mechanisms import (
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    PermuteAndFlip,
    ReplaceOneGaussianMechanism,
    ZCDPMechanism,
)


def nodes_holding_leaf(n: int) -> int:
    """Brute force: the completed dyadic intervals [k 2^h + 1, (k + 1) 2^h] within the
    first ``n`` steps that contain one leaf, maximised over the leaves."""
    best = 0
    for leaf in range(1, n + 1):
        count = 0
        h = 0
        while 2**h <= n:
            k = (leaf - 1) // 2**h
            count += (k + 1) * 2**h <= n
            h += 1
        best = max(best, count)
    return best


@pytest.mark.parametrize("n", [*range(0, 40), 63, 64, 65, 1000])
def test_tree_depth_is_the_number_of_completed_nodes_holding_a_leaf(n):
    assert mapping.tree_depth([n]) == nodes_holding_leaf(n)


@pytest.mark.parametrize(("sigma", "depth"), [(1.0, 1), (2.0, 4), (0.7, 11)])
def test_tree_aggregation_is_the_gaussian_of_the_summed_shift(sigma, depth):
    # a record in `depth` nodes of N(0, sigma^2) each: a shift of norm sqrt(depth) against
    # noise sigma, i.e. mu = sqrt(depth) / sigma (Dong, Roth, Su 2019, Corollary 2.13);
    # replace-one doubles the shift
    mech = mapping.tree_aggregation(sigma, depth, replace=False)
    assert isinstance(mech, GaussianMechanism)
    assert mech.sigma == pytest.approx(sigma / math.sqrt(depth), rel=1e-15)
    replace = mapping.tree_aggregation(sigma, depth, replace=True)
    assert isinstance(replace, ReplaceOneGaussianMechanism)
    assert replace.sigma == pytest.approx(sigma / (2 * math.sqrt(depth)), rel=1e-15)


def discrete_laplace_delta(a: float, shift: int, eps: float) -> float:
    """sum over outputs x of max(P(x - shift) - e^eps P(x), 0) with P(y) = tanh(a/2)
    e^{-a|y|}, brute force over a window wide enough that the rest is below 1e-30."""
    mp.mp.dps = 40
    a, e = mp.mpf(a), mp.e ** mp.mpf(eps)
    c = mp.tanh(a / 2)
    width = int(80 / float(a)) + 2 * shift + 10
    return float(
        mp.fsum(
            max(c * mp.e ** (-a * abs(x - shift)) - e * c * mp.e ** (-a * abs(x)), 0)
            for x in range(-width, width + 1)
        )
    )


@pytest.mark.parametrize(("a", "k"), [(1.0, 1), (0.5, 3)])
def test_discrete_laplace_maps_add_remove_to_the_class_and_replace_to_twice_the_shift(a, k):
    add = mapping.discrete_laplace(a, k, replace=False)
    assert add.neighbouring == ADD_REMOVE
    if k == 1:
        assert add == DiscreteLaplaceMechanism(scale=1.0 / a)
    rep = mapping.discrete_laplace(a, k, replace=True)
    assert rep.neighbouring == REPLACE_ONE
    for eps in (0.0, 0.5 * a * k, 1.5 * a * k):
        assert float(add.delta(eps)) == pytest.approx(
            discrete_laplace_delta(a, k, eps), rel=1e-9, abs=1e-16
        )
        assert float(rep.delta(eps)) == pytest.approx(
            discrete_laplace_delta(a, 2 * k, eps), rel=1e-9, abs=1e-16
        )
    with pytest.raises(ValueError, match="sensitivity"):
        mapping.discrete_laplace(1.0, mapping.MAX_SENSITIVITY, replace=True)


def test_zcdp_pure_and_free_events():
    # rho = 0: RDP xi at every order bounds the max-divergence, so xi-DP
    pure = mapping.zcdp(0.0, 0.3, replace=False, replace_cls=ZCDPMechanism)
    assert pure.pure_epsilon == pytest.approx(0.3)
    assert mapping.zcdp(0.0, 0.0, replace=False, replace_cls=ZCDPMechanism) is None
    z = mapping.zcdp(0.2, 0.1, replace=False, replace_cls=ZCDPMechanism)
    alphas = np.array([1.5, 2.0, 10.0])
    np.testing.assert_allclose(z.rdp(alphas), 0.1 + 0.2 * alphas, rtol=1e-14)
    assert mapping.epsilon_delta(0.0, 0.0, replace=False) is None
    kov = mapping.epsilon_delta(1.0, 1e-3, replace=True)
    assert kov.neighbouring == REPLACE_ONE
    # the worst (1, 1e-3)-DP pair: delta(1) = 1e-3 exactly and delta(0) = 1e-3 +
    # (1 - 1e-3) (e - 1) / (e + 1) (Kairouz, Oh, Viswanath 2015)
    assert float(kov.delta(1.0)) == pytest.approx(1e-3, rel=1e-12)
    expected = 1e-3 + (1 - 1e-3) * math.tanh(0.5)
    assert float(kov.delta(0.0)) == pytest.approx(expected, rel=1e-12)


def test_selection_events_map_to_their_classes():
    assert mapping.pure_selection(0.0, "PermuteAndFlipDpEvent", replace=False) is None
    em = mapping.pure_selection(1.0, "ExponentialMechanismDpEvent", replace=False)
    pf = mapping.pure_selection(1.0, "PermuteAndFlipDpEvent", replace=False)
    assert isinstance(em, ExponentialMechanism) and isinstance(pf, PermuteAndFlip)
    rep = mapping.pure_selection(1.0, "PermuteAndFlipDpEvent", replace=True)
    assert rep.neighbouring == REPLACE_ONE and rep.pure_epsilon == 1.0
    assert set(mapping.NEWER_EVENTS).isdisjoint(mapping.REFUSED)
