"""Repeat-and-select (accountant/transformers/repeat_select.py): Papernot & Steinke 2022.

The comparison with dp_accounting's RDP accountant on the same events is in
tests/test_dp_accounting_events.py; here the law's parameters against a brute-force
sum, and the function's own contract.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import oracles
import pytest
from scipy import optimize

from dpacct.accountant import (
    GaussianMechanism,
    Mechanism,
    compose,
    poisson_subsample,
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


# ----------------------------------------------------- the theorems against closed forms
def gaussian_theorem2(sigma: float, mean: float, shape: float, lam: np.ndarray) -> np.ndarray:
    """Papernot & Steinke 2022, Theorem 2, for a Gaussian base (rdp = a / (2 s^2)), with
    lamhat minimised in closed form: (1 - 1/l) l/(2 s^2) + L/l = (l - 1)/(2 s^2) + L/l
    is smallest at l* = s sqrt(2 L) (if l* > 1), L = log(1/gamma) from the brute-force
    mean of the law (tnb_mean_brute)."""
    gamma = optimize.brentq(lambda g: tnb_mean_brute(g, shape) - mean, 1e-6, 1.0 - 1e-9, xtol=1e-15)
    big_l = -math.log(gamma)
    lstar = max(sigma * math.sqrt(2.0 * big_l), 1.0 + 1e-9)
    const = (1.0 + shape) * ((lstar - 1.0) / (2.0 * sigma**2) + big_l / lstar)
    return lam / (2.0 * sigma**2) + math.log(mean) / (lam - 1.0) + const


@pytest.mark.parametrize(
    ("sigma", "mean", "shape"), [(4.0, 10.0, 1.0), (2.0, 3.0, 3.0), (8.0, 40.0, 2.0)]
)
def test_theorem2_on_a_gaussian_matches_the_closed_form(sigma, mean, shape):
    lam = np.array([1.5, 2.0, 3.7, 8.0, 20.0, 55.5, 300.0])
    ours = repeat_and_select(GaussianMechanism(sigma=sigma), mean, shape).rdp(lam)
    # the theorem at every order >= lam, on a fine grid: the envelope ours may take
    fine = np.concatenate([np.geomspace(1.0 + 1e-6, 1e5, 200_001)])
    exact = gaussian_theorem2(sigma, mean, shape, fine)
    env = np.minimum.accumulate(exact[::-1])[::-1]
    at_lam = gaussian_theorem2(sigma, mean, shape, lam)
    floor = np.minimum(env[np.searchsorted(fine, lam)], at_lam)
    # sound: never below the theorem's infimum over orders >= lam (up to the rounding
    # of gamma in the oracle's root finding), and tight: at most the theorem at lam
    assert np.all(ours >= floor * (1 - 1e-9))
    assert np.all(ours <= at_lam * (1 + 1e-9))


def test_theorem6_on_a_gaussian_matches_the_closed_form():
    sigma, mean = 3.0, 5.0
    lam = np.array([1.3, 2.0, 4.0, 9.0, 17.5, 40.0])
    ours = repeat_and_select(GaussianMechanism(sigma=sigma), mean, math.inf).rdp(lam)

    def theorem6(a: float) -> float:
        epshat = math.log1p(1.0 / (a - 1.0))
        delta = float(oracles.gaussian_delta_sigma(sigma, epshat))
        return a / (2 * sigma**2) + mean * delta + math.log(mean) / (a - 1)

    fine = np.geomspace(1.0 + 1e-3, 2e3, 3000)
    exact = np.array([theorem6(a) for a in fine])
    env = np.minimum.accumulate(exact[::-1])[::-1]
    for a, v in zip(lam, ours, strict=True):
        # sound: at or above the theorem's infimum over orders >= a (on the fine grid
        # and at a), tight: at most the theorem at a itself
        at_a = theorem6(float(a))
        assert v >= min(env[np.searchsorted(fine, a)], at_a) * (1 - 1e-9)
        assert v <= at_a * (1 + 1e-9)


def test_theorem6_deltahat_screens_the_add_direction_without_loosening():
    """The Poisson law's deltahat reads the base's pessimistic pair with the add
    direction screened (swapped bound, coarse add PLD): never above the maximum of both
    directions' pessimistic curves on the pair's settings (the unscreened value), and
    never below their optimistic curves (lower bounds of the truth)."""
    from dpacct.accountant.pld.pld_settings import PLDSettings
    from dpacct.accountant.transformers.repeat_select import ORDERS, _deltahat

    base = compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.05)], [200])
    a = ORDERS[:40]
    deltahat = _deltahat(base, a, np.asarray(base.rdp(a)))
    eps = np.log1p(1.0 / (ORDERS - 1.0))
    got = deltahat(eps)
    pess = [base.privacy._pld_one(True, PLDSettings(None), w).delta(eps) for w in (0, 1)]
    opt = [base.privacy._pld_one(False, PLDSettings(None), w).delta(eps) for w in (0, 1)]
    assert np.all(got <= np.maximum(*pess))
    assert np.all(got >= np.maximum(*opt))
    # the remove direction decides wherever the add one is screened: equal there
    assert np.mean(got == np.maximum(*pess)) > 0.9


# ------------------------------------------------------------- cost and trust of the base
class _Counting:
    """An RDP curve that records every order it is asked (a Gaussian's, sigma = 4, up
    to ``collapse``, and 0 beyond it: a curve that fails at large orders)."""

    def __init__(self, collapse: float = math.inf) -> None:
        self.calls: list[np.ndarray] = []
        self.collapse = collapse

    def __call__(self, alpha):
        a = np.asarray(alpha, dtype=float)
        self.calls.append(a.reshape(-1).copy())
        return np.where(a < self.collapse, a / 32.0, 0.0)


def test_the_base_curve_is_evaluated_a_few_times_at_moderate_orders():
    curve = _Counting()
    tuned = repeat_and_select(Mechanism.from_rdp(curve), 3.0, 1.0)
    built = list(curve.calls)
    # construction: one call at the fixed orders and three refinement calls
    assert len(built) <= 4
    assert sum(c.size for c in built) <= 300
    assert max(float(c.max()) for c in built) <= 4096
    curve.calls.clear()
    tuned.epsilon(DELTA)
    # then one call of the base per call of the tuned curve (the conversion's seven)
    assert len(curve.calls) <= 7


def test_a_base_curve_that_collapses_at_large_orders_is_not_trusted_there():
    honest = repeat_and_select(Mechanism.from_rdp(lambda a: np.asarray(a) / 32.0), 3.0, 1.0)
    broken = repeat_and_select(Mechanism.from_rdp(_Counting(collapse=1000.0)), 3.0, 1.0)
    # the honest optimum sits at small orders (sigma = 4): dropping the orders from the
    # collapse on changes nothing, while trusting them would make lamhat's term vanish
    assert broken.epsilon(DELTA) == pytest.approx(honest.epsilon(DELTA), rel=1e-12)
    assert broken.epsilon(DELTA) >= honest.epsilon(DELTA) * (1 - 1e-12)


def test_the_fixed_orders_contain_dp_accountings_default_orders():
    # so that the envelope and the lamhat search see every order dp_accounting's RDP
    # accountant uses (the comparison itself: tests/test_dp_accounting_events.py)
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    from dpacct.accountant.transformers.repeat_select import ORDERS

    assert set(np.asarray(DEFAULT_RDP_ORDERS, dtype=float)) <= set(ORDERS)
