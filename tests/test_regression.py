"""Calibrating SSP and AdaSSP regression to a budget as a whole
(``dpacct.calibrators.regression``).

The releases are Gaussians, which compose exactly: multipliers ``m_i`` combine into one
Gaussian of multiplier ``(sum_i m_i^-2)^(-1/2)``.  So the calibrated releases must
combine into the analytic Gaussian multiplier for (epsilon, delta) (Balle & Wang 2018,
Theorem 8), solved here with mpmath, from above and within the search's tolerance.
"""

from __future__ import annotations

import math

import pytest
from oracles import gaussian_mu

from dpacct.calibrators.regression import calibrate_adassp, calibrate_ssp


def analytic_multiplier(eps: float, delta: float) -> float:
    """The smallest sigma with delta_Gaussian(eps) <= delta: 1 / the exact mu."""
    return 1.0 / gaussian_mu(eps, delta)


def combined(multipliers) -> float:
    return 1.0 / math.sqrt(sum(m**-2 for m in multipliers))


@pytest.mark.parametrize(("eps", "delta"), [(1.0, 1e-5), (0.3, 1e-6), (4.0, 1e-8)])
def test_ssp_releases_combine_into_the_analytic_gaussian(eps, delta):
    alg = calibrate_ssp(eps, delta, x_bound=2.0, y_bound=3.0)
    star = analytic_multiplier(eps, delta)
    m = combined(alg.noise_multipliers)
    assert star * (1 - 1e-9) <= m <= star * (1 + 2e-3)
    # default: equal noise multipliers, so each is sqrt(2) times the combined one
    assert alg.noise_multipliers[0] == pytest.approx(alg.noise_multipliers[1], rel=1e-12)
    assert eps * (1 - 1e-3) <= float(alg.epsilon(delta)) <= eps


@pytest.mark.parametrize("ratios", [None, (1.0, 2.0, 4.0)])
def test_adassp_releases_combine_into_the_analytic_gaussian(ratios):
    eps, delta = 1.0, 1e-5
    alg = calibrate_adassp(eps, delta, x_bound=1.0, y_bound=1.0, ratios=ratios)
    star = analytic_multiplier(eps, delta)
    assert star * (1 - 1e-9) <= combined(alg.noise_multipliers) <= star * (1 + 2e-3)
    if ratios is not None:  # the stds keep the requested ratio
        stds = alg.stds
        assert stds[1] / stds[0] == pytest.approx(2.0, rel=1e-12)
        assert stds[2] / stds[0] == pytest.approx(4.0, rel=1e-12)


def test_bad_targets_are_refused_by_name():
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_ssp(0.0, 1e-5, x_bound=1.0, y_bound=1.0)
    with pytest.raises(ValueError, match="delta"):
        calibrate_adassp(1.0, 0.0, x_bound=1.0, y_bound=1.0)
    with pytest.raises(ValueError, match="x_bound"):
        calibrate_ssp(1.0, 1e-5, x_bound=-1.0, y_bound=1.0)
