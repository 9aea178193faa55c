"""Attack risk: trade-off brackets against closed forms, mpmath and riskcal."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from oracles import gdp_tradeoff
from scipy.stats import norm

from dpacct.accountant import compose, poisson_subsample
from dpacct.accountant.laws.loss_law import GaussianLossLaw
from dpacct.accountant.mechanism import Capabilities, Mechanism
from dpacct.accountant.queries.attack_risk import (
    advantage,
    advantage_bounds,
    tpr_at,
    tpr_bounds,
    tradeoff_bounds,
)
from dpacct.calibrators import dpsgd_mechanism
from dpacct.mechanisms import GaussianMechanism, LaplaceMechanism

ALPHAS = np.array([1e-4, 0.001, 0.01, 0.05, 0.1, 0.3, 0.6, 0.9])


class _LawOnlyGaussian(Mechanism):
    """A Gaussian known only through its loss law: forces the PLD route."""

    declares = Capabilities(loss_laws=True)

    def __init__(self, mu: float) -> None:
        self._law = GaussianLossLaw(mu=mu)

    def _loss_laws(self):
        return self._law, self._law


@pytest.mark.parametrize("mu", [0.3, 1.0, 2.5])
def test_pld_route_brackets_gaussian_closed_form(mu):
    # mu-GDP: beta(a) = Phi(Phi^-1(1 - a) - mu) (Dong, Roth, Su 2022, Eq. (6))
    exact = norm.cdf(norm.isf(ALPHAS) - mu)
    lo, hi = tradeoff_bounds(_LawOnlyGaussian(mu), ALPHAS)
    assert np.all(lo <= exact + 1e-13)
    assert np.all(exact <= hi + 1e-13)
    np.testing.assert_allclose(lo, exact, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(hi, exact, rtol=1e-4, atol=1e-6)


def test_composed_gaussians_pld_route_against_gdp():
    # 50 compositions of mu = 0.2 is mu = 0.2 sqrt(50), composed on the PLD route
    mech = compose([_LawOnlyGaussian(0.2)], counts=[50])
    exact = norm.cdf(norm.isf(ALPHAS) - 0.2 * np.sqrt(50))
    lo, hi = tradeoff_bounds(mech, ALPHAS)
    assert np.all(lo <= exact + 1e-12) and np.all(exact <= hi + 1e-12)
    np.testing.assert_allclose(lo, exact, rtol=1e-3, atol=1e-6)


def _mp_tradeoff(q: float, sigma: float, alpha: float) -> float:
    """min over both orders of one Poisson-subsampled Gaussian step, at 40 digits.

    Remove order: P = (1-q) N(0) + q N(1), Q = N(0); reject P where x < c.
    Add order: the swap; reject N(0) where x > c.  alpha and beta are Gaussian
    integrals (mpmath ncdf), c found by root finding.
    """
    mpmath.mp.dps = 40
    s, q_ = mpmath.mpf(sigma), mpmath.mpf(q)

    def mix_cdf(c):
        return (1 - q_) * mpmath.ncdf(c / s) + q_ * mpmath.ncdf((c - 1) / s)

    a = mpmath.mpf(alpha)
    c_r = mpmath.findroot(lambda c: mix_cdf(c) - a, (-20 * s, 20 * s), solver="bisect")
    t_r = 1 - mpmath.ncdf(c_r / s)
    c_a = mpmath.findroot(
        lambda c: (1 - mpmath.ncdf(c / s)) - a, (-20 * s, 20 * s), solver="bisect"
    )
    t_a = mix_cdf(c_a)
    return float(min(t_r, t_a))


@pytest.mark.parametrize(("q", "sigma"), [(0.1, 1.0), (0.01, 0.7), (0.5, 2.0)])
def test_one_subsampled_step_against_mpmath(q, sigma):
    alphas = np.array([0.001, 0.01, 0.1, 0.5])
    exact = np.array([_mp_tradeoff(q, sigma, a) for a in alphas])
    step = compose([poisson_subsample(GaussianMechanism(sigma=sigma), q)], counts=[1])
    lo, hi = tradeoff_bounds(step, alphas)
    assert np.all(lo <= exact + 1e-14), (lo, exact)
    assert np.all(exact <= hi + 1e-14), (hi, exact)
    np.testing.assert_allclose(lo, exact, rtol=2e-4, atol=1e-7)
    tpr_lo, tpr_hi = tpr_bounds(step, alphas)
    np.testing.assert_allclose(tpr_hi, 1 - lo, rtol=0, atol=1e-15)
    np.testing.assert_allclose(tpr_lo, 1 - hi, rtol=0, atol=1e-15)


def test_dpsgd_against_monte_carlo_with_confidence():
    # q = 0.1, sigma = 1, 10 steps: the Neyman-Pearson test of the remove order at
    # FPR alpha thresholds the summed privacy loss; estimate its FNR from samples.
    rng = np.random.default_rng(7)
    q, s, n, m = 0.1, 1.0, 10, 400_000

    def loss(x):
        return np.log1p(q * np.expm1((2 * x - 1) / (2 * s * s))).sum(axis=1)

    x_q = rng.normal(0, s, size=(m, n))  # under Q = N(0)
    pick = rng.random((m, n)) < q
    x_p = rng.normal(0, s, size=(m, n)) + pick  # under P = mixture
    l_p, l_q = loss(x_p), loss(x_q)
    alpha = 0.05
    thr = np.quantile(l_p, alpha)  # reject P where the loss is small
    beta_hat = float(np.mean(l_q >= thr))
    se = np.sqrt(beta_hat * (1 - beta_hat) / m)
    lo, _ = tradeoff_bounds(dpsgd_mechanism(s, q, n), alpha)
    # f = min over the two orders <= the remove order's curve
    assert lo <= beta_hat + 5 * se + 2e-3  # (quantile estimation error included)


def test_advantage_is_delta_at_zero_and_matches_gaussian():
    # Gaussian: TV = 2 Phi(mu / 2) - 1
    lo, hi = advantage_bounds(_LawOnlyGaussian(1.0))
    exact = 2 * norm.cdf(0.5) - 1
    assert lo <= exact <= hi and hi - lo < 1e-5
    run = dpsgd_mechanism(1.0, 0.01, 1000)
    lo, hi = advantage_bounds(run)
    assert lo <= advantage(run) == pytest.approx(hi) and hi - lo < 1e-4 * hi
    assert advantage(run) <= run.delta(0.0) * (1 + 1e-12)


def test_tpr_is_monotone_and_above_fpr():
    run = dpsgd_mechanism(1.0, 0.01, 1000)
    tpr = tpr_at(run, ALPHAS)
    assert np.all(np.diff(tpr) >= -1e-12)
    assert np.all(tpr >= ALPHAS - 1e-12)


def test_bad_inputs_are_named():
    with pytest.raises(TypeError, match="mechanism"):
        tpr_at("gaussian", 0.1)
    with pytest.raises(ValueError, match="fpr"):
        tpr_at(GaussianMechanism(sigma=1.0), 1.5)


def test_against_riskcal_within_its_own_error():
    pytest.importorskip("riskcal")
    from dp_accounting.pld import privacy_loss_distribution as pld_mod
    from riskcal.analysis import get_beta_from_pld

    q, s, n = 0.1, 1.0, 10
    alphas = np.array([0.01, 0.05, 0.1])
    values = []
    for grid in (1e-3, 1e-4):
        pld = pld_mod.from_gaussian_mechanism(
            standard_deviation=s,
            sampling_prob=q,
            use_connect_dots=True,
            value_discretization_interval=grid,
        ).self_compose(n)
        values.append(get_beta_from_pld(pld, alpha=alphas))
    spread = np.abs(values[0] - values[1]) + 1e-6
    lo, _ = tradeoff_bounds(dpsgd_mechanism(s, q, n), alphas)
    assert np.all(np.abs(lo - values[1]) <= spread)


class _LawOnlyLaplace(Mechanism):
    """A Laplace mechanism known only through its loss laws: forces the PLD route."""

    declares = Capabilities(loss_laws=True)

    def __init__(self, b: float) -> None:
        self._laws = LaplaceMechanism(b=b)._loss_laws()

    def _loss_laws(self):
        return self._laws


def _laplace_tradeoff(mu: float, a: np.ndarray) -> np.ndarray:
    """T(Lap(0, 1), Lap(mu, 1)) (Dong, Roth, Su 2022, Appendix A), derived by hand:
    threshold tests x > c with c < 0, 0 <= c <= mu and c > mu give the three pieces."""
    a = np.asarray(a, dtype=float)
    return np.where(
        a < np.exp(-mu) / 2,
        1 - np.exp(mu) * a,
        np.where(a <= 0.5, np.exp(-mu) / (4 * np.maximum(a, 1e-300)), np.exp(-mu) * (1 - a)),
    )


def _gdp(mu: float, a: np.ndarray) -> np.ndarray:
    return np.array([float(gdp_tradeoff(mu, x)) for x in np.asarray(a, dtype=float)])


_TRADEOFF_CASES = {
    # name: (mechanism, independent closed form of its trade-off curve or None)
    "gaussian": (GaussianMechanism(sigma=1.3), lambda a: _gdp(1 / 1.3, a)),
    "composed gaussians": (
        compose([GaussianMechanism(sigma=2.0), GaussianMechanism(sigma=3.0)], counts=[3, 4]),
        lambda a: _gdp(np.sqrt(3 / 4 + 4 / 9), a),
    ),
    "laplace": (LaplaceMechanism(b=0.8), lambda a: _laplace_tradeoff(1 / 0.8, a)),
    "gaussian, PLD route": (_LawOnlyGaussian(1.0), lambda a: _gdp(1.0, a)),
    "composed gaussians, PLD route": (
        compose([_LawOnlyGaussian(0.2)], counts=[50]),
        lambda a: _gdp(0.2 * np.sqrt(50), a),
    ),
    "laplace, PLD route": (_LawOnlyLaplace(0.8), lambda a: _laplace_tradeoff(1 / 0.8, a)),
    "one dp-sgd step": (
        compose([poisson_subsample(GaussianMechanism(sigma=1.0), 0.1)], counts=[1]),
        lambda a: np.array([_mp_tradeoff(0.1, 1.0, float(x)) for x in a]),
    ),
    "dp-sgd run (README)": (
        compose([poisson_subsample(GaussianMechanism(sigma=1.1), 256 / 60_000)], counts=[14_063]),
        None,
    ),
}


@pytest.mark.parametrize("name", list(_TRADEOFF_CASES))
def test_tradeoff_lies_in_tradeoff_bounds(name):
    # issue 21: tradeoff() was below the lower end of tradeoff_bounds for the README run
    # (a coarser dual of delta(eps)); now it is that lower end, and never above the truth
    mech, closed_form = _TRADEOFF_CASES[name]
    alphas = np.array([1e-6, 1e-4, 0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 0.7, 0.95])
    beta = mech.tradeoff(alphas)
    lo, hi = tradeoff_bounds(mech, alphas)
    assert np.all(lo <= beta) and np.all(beta <= hi), (lo, beta, hi)
    for tol in (None, 1e-3):  # at the same tolerance, the same route
        b_tol, (lo_tol, _) = mech.tradeoff(alphas, tol=tol), tradeoff_bounds(mech, alphas, tol=tol)
        if not mech.privacy.capabilities.exact_tradeoff:
            np.testing.assert_array_equal(b_tol, lo_tol)
    assert isinstance(mech.tradeoff(0.01), float)
    assert mech.tradeoff(0.01) == beta[3]
    if closed_form is not None:
        exact = closed_form(alphas)
        # sound: never above the true curve; the bracket holds the truth
        assert np.all(beta <= exact * (1 + 1e-12) + 1e-14), (beta, exact)
        assert np.all(lo <= exact * (1 + 1e-12) + 1e-14)
        assert np.all(exact <= hi * (1 + 1e-12) + 1e-14)
        np.testing.assert_allclose(beta, exact, rtol=5e-4, atol=1e-6)
        if mech.privacy.capabilities.exact_tradeoff:
            np.testing.assert_allclose(beta, exact, rtol=1e-12, atol=1e-15)
