"""Calibration to an attack risk (``dpacct.calibrators.risk``): the parameter that keeps
a membership-inference attacker's TPR at a given FPR, or its advantage, below a target.

Independent values: for a Gaussian mechanism of multiplier ``s`` (``mu = 1/s``-GDP) the
trade-off curve is ``beta(a) = Phi(Phi^-1(1 - a) - mu)`` (Dong, Roth & Su 2022, Eq. 6),
so the TPR at FPR ``a`` is ``Phi(mu - Phi^-1(1 - a))`` and the advantage is
``2 Phi(mu / 2) - 1``.
"""

from __future__ import annotations

import pytest
from oracles import gdp_tradeoff
from scipy.stats import norm

from dpacct.accountant.queries.attack_risk import tpr_at
from dpacct.calibrators import (
    calibrate_risk,
    dpsgd_mechanism,
    risk_max_sample_rate,
    risk_max_steps,
    risk_noise_multiplier,
)
from dpacct.calibrators.calibrate import UnreachableTargetError
from dpacct.mechanisms import GaussianMechanism


def test_calibration_is_safe_and_tight():
    res = risk_noise_multiplier(tpr=0.1, fpr=0.01, sample_rate=0.01, steps=1000, full_output=True)
    assert res.risk <= 0.1
    assert res.infeasible is not None and res.infeasible < res.parameter
    assert res.parameter <= res.infeasible * (1 + 1e-4) + 1e-15
    bad = tpr_at(dpsgd_mechanism(res.infeasible, 0.01, 1000), 0.01)
    assert bad > 0.1


def test_calibration_gaussian_closed_form():
    mu = norm.isf(0.01) - norm.isf(0.1)
    res = calibrate_risk(lambda s: GaussianMechanism(sigma=s), tpr=0.1, fpr=0.01, increasing=False)
    assert res.parameter >= 1 / mu * (1 - 1e-12)
    assert res.parameter <= 1 / mu * (1 + 2e-4)
    res = calibrate_risk(lambda s: GaussianMechanism(sigma=s), advantage=0.2, increasing=False)
    assert 2 * norm.cdf(0.5 / res.parameter) - 1 <= 0.2


def test_calibration_unreachable_and_bad_targets():
    with pytest.raises(UnreachableTargetError):
        calibrate_risk(
            lambda s: GaussianMechanism(sigma=1.0 + 0 * s),
            tpr=0.011,
            fpr=0.01,
            increasing=False,
            max_evaluations=10,
        )
    with pytest.raises(ValueError, match="tpr"):
        calibrate_risk(lambda s: GaussianMechanism(sigma=s), tpr=0.001, fpr=0.01, increasing=False)
    with pytest.raises(TypeError, match="target"):
        calibrate_risk(lambda s: GaussianMechanism(sigma=s), increasing=False)


def _gdp_tpr(mu: float, fpr: float) -> float:
    return float(1 - gdp_tradeoff(mu, fpr))


@pytest.mark.parametrize(("sigma", "tpr", "fpr"), [(10.0, 0.05, 0.01), (4.0, 0.3, 0.1)])
def test_max_steps_without_subsampling_is_the_gdp_closed_form(sigma, tpr, fpr):
    # k full-batch steps are sqrt(k)/sigma-GDP: the largest k keeps sqrt(k)/sigma below
    # mu* = Phi^-1(tpr) + Phi^-1(1 - fpr)
    mu_star = norm.ppf(tpr) + norm.isf(fpr)
    k = (mu_star * sigma) ** 2
    assert abs(k - round(k)) > 1e-3
    n = risk_max_steps(noise_multiplier=sigma, sample_rate=1.0, tpr=tpr, fpr=fpr)
    assert n == int(k)
    assert _gdp_tpr(n**0.5 / sigma, fpr) <= tpr < _gdp_tpr((n + 1) ** 0.5 / sigma, fpr)


@pytest.mark.parametrize("steps", [1, 25])
def test_noise_multiplier_for_an_advantage_is_the_gdp_closed_form(steps):
    # advantage of mu-GDP: 2 Phi(mu / 2) - 1; k steps of sigma are sqrt(k)/sigma-GDP
    target = 0.2
    mu_star = 2 * norm.ppf((1 + target) / 2)
    sigma = risk_noise_multiplier(advantage=target, sample_rate=1.0, steps=steps)
    exact = steps**0.5 / mu_star
    assert exact * (1 - 1e-12) <= sigma <= exact * (1 + 1e-3)


def test_max_sample_rate_keeps_the_tpr_below_its_target():
    res = risk_max_sample_rate(
        noise_multiplier=1.0, steps=1_000, tpr=0.05, fpr=0.01, full_output=True
    )
    q = res.parameter
    assert 0 < q < 1
    assert tpr_at(dpsgd_mechanism(1.0, q, 1_000), 0.01) <= 0.05
    # within the search's relative tolerance of the boundary
    assert tpr_at(dpsgd_mechanism(1.0, q * (1 + 1e-3), 1_000), 0.01) > 0.05
