"""Repeat-and-select (accountant/transformers/repeat_select.py): Papernot & Steinke 2022.

The comparison with dp_accounting's RDP accountant on the same events is in
tests/test_dp_accounting_events.py; here the law's parameters against a brute-force
sum, and the function's own contract.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from dpacct.accountant import (
    GaussianMechanism,
    Mechanism,
    compose,
    rdp_to_epsilon,
    repeat_and_select,
)
from dpacct.accountant.transformers.repeat_select import tnb_gamma

DELTA = 1e-6


def tnb_mean_brute(gamma: float, shape: float) -> float:
    """E[K] from the truncated negative binomial pmf, summed (Papernot & Steinke 2022,
    Definition 1: P(K = k) proportional to (1 - gamma)^k binom(k + eta - 1, k), k >= 1;
    the logarithmic law at eta = 0: proportional to (1 - gamma)^k / k)."""
    mp.mp.dps = 30
    g, eta = mp.mpf(gamma), mp.mpf(shape)

    def weight(k):
        if shape == 0:
            return (1 - g) ** k / k
        return (1 - g) ** k * mp.binomial(k + eta - 1, k)

    total = mp.nsum(weight, [1, mp.inf])
    return float(mp.nsum(lambda k: k * weight(k), [1, mp.inf]) / total)


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 2.0, 7.5])
@pytest.mark.parametrize("mean", [1.5, 3.0, 40.0])
def test_truncated_negative_binomial_gamma_is_rounded_down(shape, mean):
    gamma = tnb_gamma(shape, mean)
    brute = tnb_mean_brute(gamma, shape)
    # the mean falls as gamma grows: a gamma rounded down has a mean at or above the target
    assert brute == pytest.approx(mean, rel=1e-9)
    assert brute >= mean * (1 - 1e-12)


def test_more_runs_cost_more_and_a_single_run_costs_about_the_run():
    base = GaussianMechanism(sigma=4.0)
    eps = [repeat_and_select(base, mean, 1.0).epsilon(DELTA) for mean in (1.0, 2.0, 10.0, 100.0)]
    assert np.all(np.diff(eps) > 0)
    # mean 1 of the geometric law is one run (gamma = 1): the bound is the base's RDP
    # curve plus (1 - 1/lamhat) eps(lamhat) at the smallest lamhat, i.e. the RDP
    # conversion of the base's own curve, up to the grid
    one_run = rdp_to_epsilon(base.rdp, DELTA)
    assert one_run <= eps[0] <= one_run * (1 + 1e-3)


def test_rdp_curve_is_above_the_base():
    base = compose([GaussianMechanism(sigma=2.0)], [5])
    alpha = np.linspace(1.1, 200.0, 400)
    for shape in (0.0, 1.0, math.inf):
        curve = repeat_and_select(base, 5.0, shape).rdp(alpha)
        assert np.all(curve >= base.rdp(alpha) - 1e-12)
    # the Poisson law's curve is the grid envelope alone: non-decreasing (the negative
    # binomial laws also take the bound at the order itself, which may dip between grid
    # orders; the RDP conversion then trusts the curve only below the dip)
    poisson = repeat_and_select(base, 5.0, math.inf).rdp(alpha)
    assert np.all(np.diff(poisson) >= 0.0)


def test_bad_input_names_the_parameter():
    g = GaussianMechanism(sigma=1.0)
    with pytest.raises(ValueError, match="mean"):
        repeat_and_select(g, 0.5, 1.0)
    with pytest.raises(ValueError, match="mean"):
        repeat_and_select(g, math.inf, 1.0)
    with pytest.raises(ValueError, match="shape"):
        repeat_and_select(g, 2.0, -0.1)
    with pytest.raises(TypeError, match="mechanism"):
        repeat_and_select("gaussian", 2.0, 1.0)
    with pytest.raises(ValueError, match="Renyi"):
        repeat_and_select(Mechanism.from_epsilon_delta(1.0, 1e-6), 2.0, 1.0)
