"""Tests for SSP / AdaSSP linear regression (algorithms/ssp.py, calibrators/regression.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from dpacct.accountant.transformers.compose import compose
from dpacct.calibrators.dpsgd import analytic_gaussian_sigma
from dpacct.calibrators.regression import calibrate_adassp, calibrate_ssp
from dpacct.mechanisms.algorithms.ssp import (
    SSP,
    AdaSSP,
    LinearModel,
    SufficientStatisticsPerturbation,
)
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism

DELTA = 1e-5


# ----------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def diabetes():
    """Diabetes, scaled: X / (largest row norm) so ||x|| <= 1; y mapped from its range
    [25, 346] linearly onto [-1, 1] (both bounds treated as public knowledge); 75/25 split."""
    X, y = load_diabetes(return_X_y=True)
    X = X / np.linalg.norm(X, axis=1).max()
    y = (y - 25.0) / (346.0 - 25.0) * 2.0 - 1.0
    assert np.abs(y).max() <= 1.0 and np.linalg.norm(X, axis=1).max() <= 1.0 + 1e-12
    return train_test_split(X, y, test_size=0.25, random_state=0)


def _ols_mse(Xtr, ytr, Xte, yte) -> float:
    Z = np.hstack([Xtr, np.ones((len(Xtr), 1))])
    theta = np.linalg.lstsq(Z, ytr, rcond=None)[0]
    return float(np.mean((Xte @ theta[:-1] + theta[-1] - yte) ** 2))


def _sphere_data(rng, n, d, theta, noise=0.05, radius=0.5):
    X = rng.normal(size=(n, d))
    X *= radius / np.linalg.norm(X, axis=1, keepdims=True)
    y = X @ theta + noise * rng.uniform(-1, 1, size=n)
    return X, y


# ----------------------------------------------------------------------------------
# privacy = explicit composition of Gaussians
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_ssp_privacy_is_composition_by_hand(fit_intercept):
    xb, yb, s, (a, b) = 0.7, 2.0, 1.3, (0.4, 2.5)
    alg = SSP(noise_scale=s, x_bound=xb, y_bound=yb, ratios=(a, b), fit_intercept=fit_intercept)
    B = math.hypot(xb, 1.0) if fit_intercept else xb
    by_hand = compose(
        [GaussianMechanism(sigma=a * s / B**2), GaussianMechanism(sigma=b * s / (B * yb))],
        counts=[1, 1],
    )
    assert alg.stds == pytest.approx((a * s, b * s), rel=1e-15)
    for d in (1e-3, 1e-5, 1e-9):
        assert alg.epsilon(d) == pytest.approx(by_hand.epsilon(d), rel=1e-12)
    np.testing.assert_allclose(alg.delta([0.5, 2.0]), by_hand.delta([0.5, 2.0]), rtol=1e-12)
    np.testing.assert_allclose(alg.rdp([2.0, 7.5]), by_hand.rdp([2.0, 7.5]), rtol=1e-12)
    np.testing.assert_allclose(
        alg.tradeoff([0.01, 0.3]), by_hand.tradeoff([0.01, 0.3]), rtol=1e-9, atol=1e-12
    )
    # the composition of Gaussians is one Gaussian with sigma^-2 = sum sigma_i^-2
    mu = math.hypot(B**2 / (a * s), B * yb / (b * s))
    assert float(alg.rdp(3.0)) == pytest.approx(3.0 * mu**2 / 2.0, rel=1e-12)


def test_ssp_default_ratios_give_equal_multipliers():
    alg = SufficientStatisticsPerturbation(noise_scale=2.0, x_bound=3.0, y_bound=5.0)
    assert alg.stds == pytest.approx((2.0 * 9.0, 2.0 * 15.0), rel=1e-15)
    assert alg.noise_multipliers == pytest.approx((2.0, 2.0), rel=1e-15)
    assert SSP is SufficientStatisticsPerturbation


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_adassp_privacy_is_composition_by_hand(fit_intercept):
    xb, yb, s, r = 1.5, 0.5, 0.8, (1.0, 3.0, 0.7)
    alg = AdaSSP(
        noise_scale=s,
        x_bound=xb,
        y_bound=yb,
        ratios=r,
        fit_intercept=fit_intercept,
        intercept_scaling=2.0,
    )
    B = math.hypot(xb, 2.0) if fit_intercept else xb
    by_hand = compose(
        [
            GaussianMechanism(sigma=r[0] * s / B**2),  # lambda_min, Weyl: sensitivity B^2
            GaussianMechanism(sigma=r[1] * s / B**2),  # upper triangle of X^T X
            GaussianMechanism(sigma=r[2] * s / (B * yb)),  # X^T y
        ]
    )
    for d in (1e-4, 1e-7):
        assert alg.epsilon(d) == pytest.approx(by_hand.epsilon(d), rel=1e-12)
    np.testing.assert_allclose(alg.rdp([1.5, 10.0]), by_hand.rdp([1.5, 10.0]), rtol=1e-12)
    np.testing.assert_allclose(alg.delta([1.0]), by_hand.delta([1.0]), rtol=1e-12)


# ----------------------------------------------------------------------------------
# calibration
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_calibrated_adassp_meets_target(eps):
    alg = calibrate_adassp(eps, DELTA, x_bound=1.0, y_bound=2.0, ratios=(1.0, 2.0, 3.0))
    got = alg.epsilon(DELTA)
    assert eps * (1 - 1e-3) <= got <= eps
    assert alg.stds == pytest.approx(tuple(alg.noise_scale * r for r in (1.0, 2.0, 3.0)))
    # independent check: the three Gaussians composed by hand
    by_hand = compose([GaussianMechanism(sigma=m) for m in alg.noise_multipliers])
    assert by_hand.epsilon(DELTA) == pytest.approx(got, rel=1e-12)
    # Wang's shift sqrt(log(6/delta)) is passed through
    assert alg.shift_multiplier == pytest.approx(math.sqrt(math.log(6 / DELTA)), rel=1e-15)


@pytest.mark.parametrize("eps", [0.3, 3.0])
def test_calibrated_ssp_meets_target(eps):
    alg = calibrate_ssp(eps, DELTA, x_bound=2.0, y_bound=1.0, fit_intercept=True)
    got = alg.epsilon(DELTA)
    assert eps * (1 - 1e-3) <= got <= eps
    m1, m2 = alg.noise_multipliers
    assert m1 == pytest.approx(m2, rel=1e-12)
    # a composition of two equal Gaussians is one Gaussian with sigma / sqrt(2)
    exact = analytic_gaussian_sigma(eps, DELTA) * math.sqrt(2.0)
    assert m1 == pytest.approx(exact, rel=2e-3)
    assert m1 >= exact * (1 - 1e-9)


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
def test_engine_calibration_beats_naive_three_way_split(eps):
    """Wang's split: each release (eps/3, delta/3), each calibrated exactly (analytic
    Gaussian).  Accounting the composition as a whole needs strictly less noise."""
    alg = calibrate_adassp(eps, DELTA, x_bound=1.0, y_bound=1.0)
    naive = analytic_gaussian_sigma(eps / 3, DELTA / 3)
    ratio = naive / alg.noise_scale
    # measured: 1.73 (eps=0.1), 1.70 (eps=1), 1.54 (eps=10)
    assert ratio > 1.5
    # the naive split over-protects: its true composed epsilon is well below the target
    assert compose([GaussianMechanism(sigma=naive)], [3]).epsilon(DELTA) < 0.6 * eps
    # and the calibrated algorithm is only just within the budget
    assert alg.epsilon(DELTA) >= eps * (1 - 1e-3)


# ----------------------------------------------------------------------------------
# behaviour on data
# ----------------------------------------------------------------------------------


def test_symmetric_noise_has_the_stated_law():
    """theta - theta_ols ~= G^-1 (e - E theta) to first order: check its covariance.

    E symmetric with i.i.d. N(0, s_xx^2) on and above the diagonal, e ~ N(0, s_xy^2 I).
    A wrong off-diagonal variance (e.g. (E + E^T)/2) or a missing release fails."""
    rng = np.random.default_rng(7)
    n, d = 4000, 2
    X = rng.normal(size=(n, d)) * [0.3, 0.2]
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    theta0 = np.array([1.0, -2.0])
    y = np.clip(X @ theta0, -1, 1)
    G = X.T @ X
    theta_ols = np.linalg.solve(G, X.T @ y)
    alg = SSP(noise_scale=1.0, x_bound=1.0, y_bound=1.0, ratios=(2.0, 0.2))
    reps = 1500
    draws = np.array([alg.fit(X, y, rng=rng).coef for _ in range(reps)])
    Ginv = np.linalg.inv(G)
    # (E theta)_i = sum_j E_ij theta_j, Cov(E_ij, E_kl) = s^2 iff {i, j} = {k, l}:
    # Var((E theta)_i) = s^2 |theta|^2, Cov((E theta)_i, (E theta)_k) = s^2 theta_i theta_k
    t = theta_ols
    outer = np.outer(t, t)
    cov_e_theta = 2.0**2 * (t @ t * np.eye(d) + outer - np.diag(np.diag(outer)))
    predicted = Ginv @ (cov_e_theta + 0.2**2 * np.eye(d)) @ Ginv
    empirical = np.cov((draws - theta_ols).T)
    np.testing.assert_allclose(empirical, predicted, rtol=0.12, atol=0.03 * predicted.max())
    sem = np.sqrt(np.diag(predicted) / reps)
    assert np.all(np.abs(draws.mean(axis=0) - theta_ols) < 4 * sem + 0.02 * np.abs(t))


def test_adassp_ridge_on_collinear_data_follows_line_3():
    """With a duplicated column lambda_min = 0, so lambda_min~ = 0 unless Z > shift (prob
    <= Phi(-shift)): lambda = sqrt(d log(2 d^2 / rho)) * std_xx exactly."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-0.5, 0.5, size=(500, 1))
    X = np.hstack([x, x, rng.uniform(-0.5, 0.5, size=(500, 1))])
    y = X @ np.array([0.5, 0.5, -1.0]) * 0.5
    alg = AdaSSP(noise_scale=0.2, x_bound=1.0, y_bound=1.0, failure_probability=0.1,
                 fit_intercept=False)  # d = 3 columns
    std_xx = alg.stds[1]
    expected = math.sqrt(3 * math.log(2 * 9 / 0.1)) * std_xx
    ridges = [alg.fit(X, y, rng=np.random.default_rng(s)).ridge for s in range(20)]
    hits = sum(r == pytest.approx(expected, rel=1e-12) for r in ridges)
    assert hits >= 18  # P(miss) per seed = Phi(-sqrt(2 log 10)) = 0.016
    # and with a large lambda_min the ridge vanishes
    Xw, yw = _sphere_data(rng, 20_000, 3, np.array([1.0, -1.0, 0.5]))
    assert alg.fit(Xw, yw, rng=rng).ridge == 0.0


@pytest.mark.parametrize(
    ("constant", "k_of_d"),
    [
        (None, lambda d, rho: math.sqrt(d * math.log(2 * d * d / rho))),
        ("wang", lambda d, rho: math.sqrt(d * math.log(2 * d * d / rho))),
        ("tutorial", lambda d, rho: 1.96 * math.sqrt(d)),
        (0.7, lambda d, rho: 0.7 * math.sqrt(d)),
        (3, lambda d, rho: 3.0 * math.sqrt(d)),
    ],
)
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_adassp_ridge_constant_sets_line_3_and_leaves_privacy_alone(constant, k_of_d,
                                                                    fit_intercept):
    """lambda_min = 0 (a duplicated column) and a shift of 40 noise stds: lambda_min~ = 0
    surely, so the ridge is exactly k_d * std_xx; d counts the intercept column.  The
    privacy (epsilon, the releases' noise) is that of the default constant."""
    rng = np.random.default_rng(5)
    x = rng.uniform(-0.5, 0.5, size=(300, 1))
    X = np.hstack([x, x, rng.uniform(-0.5, 0.5, size=(300, 1))])
    y = X @ np.array([0.5, 0.5, -1.0]) * 0.5
    rho = 0.05
    kw = dict(noise_scale=0.3, x_bound=1.0, y_bound=1.0, shift=40.0, failure_probability=rho,
              fit_intercept=fit_intercept)
    alg = AdaSSP(**kw, ridge_constant=constant)
    base = AdaSSP(**kw)
    d = 3 + fit_intercept
    std_xx = 0.3 * alg.row_bound**2  # default ratios: std = s * sensitivity
    expected = k_of_d(d, rho) * std_xx
    assert alg.ridge_multiplier(d) == pytest.approx(k_of_d(d, rho), rel=1e-13)
    for seed in range(3):
        assert alg.fit(X, y, rng=np.random.default_rng(seed)).ridge == pytest.approx(
            expected, rel=1e-12)
    for delta in (1e-3, 1e-6, 1e-10):
        assert alg.epsilon(delta) == base.epsilon(delta)
    assert alg.stds == base.stds
    assert [(r.label, r.mechanism.sigma, r.sensitivity) for r in alg.planned_releases()] == [
        (r.label, r.mechanism.sigma, r.sensitivity) for r in base.planned_releases()]


def test_calibrate_adassp_gives_every_ridge_constant_the_same_noise():
    algs = [calibrate_adassp(0.5, 1e-6, x_bound=1.0, y_bound=5.0, ridge_constant=c)
            for c in (None, "tutorial", 2.5)]
    assert algs[1].ridge_constant == "tutorial" and algs[2].ridge_constant == 2.5
    assert len({a.noise_scale for a in algs}) == 1
    assert len({a.epsilon(1e-6) for a in algs}) == 1


def test_adassp_tutorial_constant_is_the_autodp_rule_at_d_8():
    """The issue's numbers: 1.96 sqrt(8) = 5.54 and Wang's constant 7.92 (rho = 0.05)."""
    tut = AdaSSP(noise_scale=1.0, x_bound=1.0, y_bound=1.0, ridge_constant="tutorial")
    wang = AdaSSP(noise_scale=1.0, x_bound=1.0, y_bound=1.0)
    assert tut.ridge_multiplier(8) == pytest.approx(5.5437, abs=1e-4)
    assert wang.ridge_multiplier(8) == pytest.approx(7.9235, abs=1e-4)


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        ("ridge", ValueError, "ridge_constant must be None, 'wang', 'tutorial'"),
        (0.0, ValueError, r"ridge_constant must lie in \(0, inf\)"),
        (-1.0, ValueError, "ridge_constant must lie"),
        (float("nan"), ValueError, "ridge_constant must lie"),
        (True, TypeError, "ridge_constant must be a real number"),
        ([1.0], TypeError, "ridge_constant must be a real number"),
    ],
)
def test_adassp_bad_ridge_constant(value, error, match):
    with pytest.raises(error, match=match):
        AdaSSP(noise_scale=1.0, x_bound=1.0, y_bound=1.0, ridge_constant=value)


def test_large_n_generated_data_sharp():
    """n = 200 000: the private fit is within a few predicted noise stds of OLS."""
    rng = np.random.default_rng(11)
    theta = np.array([0.8, -0.6, 0.3, 0.0])
    X, y = _sphere_data(rng, 200_000, 4, theta, noise=0.2)
    Xte, yte = _sphere_data(rng, 50_000, 4, theta, noise=0.2)
    ols = np.linalg.lstsq(X, y, rcond=None)[0]
    alg = calibrate_adassp(1.0, DELTA, x_bound=0.5, y_bound=1.0)
    errs = np.array([alg.fit(X, y, rng=np.random.default_rng(s)).coef - ols for s in range(10)])
    # first-order error sd: |G^-1| sqrt(std_xy^2 + std_xx^2 (|theta|^2 + theta_i^2))
    G = X.T @ X
    _, std_xx, std_xy = alg.stds
    sd = np.sqrt(np.diag(np.linalg.inv(G) @ np.linalg.inv(G))) * math.sqrt(
        std_xy**2 + 2 * std_xx**2 * (ols @ ols)
    )
    assert np.abs(errs).max() < 5 * sd.max()
    assert np.abs(errs).max() > 0.1 * sd.max()  # noise is really added
    mse_priv = np.mean([LinearModel(coef=ols + e).mse(Xte, yte) for e in errs])
    mse_ols = LinearModel(coef=ols).mse(Xte, yte)
    assert mse_priv <= mse_ols * 1.001
    assert abs(mse_ols - 0.2**2 / 3) < 2e-3  # the noise floor: Var U(-0.2, 0.2)


def test_diabetes_adassp_approaches_ols(diabetes):
    Xtr, Xte, ytr, yte = diabetes
    ols = _ols_mse(Xtr, ytr, Xte, yte)
    trivial = float(np.mean((ytr.mean() - yte) ** 2))
    assert ols < 0.7 * trivial
    mses = {}
    for eps in (0.1, 1.0, 10.0, 100.0):
        alg = calibrate_adassp(eps, DELTA, x_bound=1.0, y_bound=1.0, fit_intercept=True)
        mses[eps] = np.mean(
            [alg.fit(Xtr, ytr, rng=np.random.default_rng(s)).mse(Xte, yte) for s in range(30)]
        )
    # measured: ols 0.1235, mean 0.1927; AdaSSP 0.223, 0.174, 0.132, 0.120
    assert abs(mses[100.0] - ols) < 0.10 * ols
    assert mses[0.1] > 1.5 * ols
    assert mses[1.0] < trivial  # beats predicting the mean at a moderate epsilon
    vals = [mses[e] for e in (0.1, 1.0, 10.0, 100.0)]
    assert all(b < a for a, b in itertools.pairwise(vals))


def test_diabetes_ssp_worse_than_adassp_at_small_epsilon(diabetes):
    Xtr, Xte, ytr, yte = diabetes
    ssp = calibrate_ssp(1.0, DELTA, x_bound=1.0, y_bound=1.0, fit_intercept=True)
    ada = calibrate_adassp(1.0, DELTA, x_bound=1.0, y_bound=1.0, fit_intercept=True)
    m_ssp = np.median(
        [ssp.fit(Xtr, ytr, rng=np.random.default_rng(s)).mse(Xte, yte) for s in range(20)]
    )
    m_ada = np.median(
        [ada.fit(Xtr, ytr, rng=np.random.default_rng(s)).mse(Xte, yte) for s in range(20)]
    )
    assert m_ada < m_ssp


def test_fit_is_reproducible_and_intercept_recovered():
    rng = np.random.default_rng(5)
    X, y = _sphere_data(rng, 50_000, 2, np.array([0.5, -0.5]), noise=0.0)
    y = y + 0.3
    alg = SSP(noise_scale=0.5, x_bound=0.5, y_bound=1.0, fit_intercept=True)
    m1 = alg.fit(X, y, rng=np.random.default_rng(1))
    m2 = alg.fit(X, y, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(m1.coef, m2.coef)
    assert m1.intercept == pytest.approx(0.3, abs=0.01)
    np.testing.assert_allclose(m1.coef, [0.5, -0.5], atol=0.02)
    assert m1.coef.shape == (2,) and not m1.coef.flags.writeable


# ----------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------


@pytest.fixture
def ok_data():
    rng = np.random.default_rng(0)
    return _sphere_data(rng, 50, 3, np.array([1.0, 0.0, -1.0]))


@pytest.mark.parametrize("cls", [SSP, AdaSSP])
def test_bad_data(cls, ok_data):
    X, y = ok_data
    alg = cls(noise_scale=1.0, x_bound=0.5, y_bound=1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="X must not be empty"):
        alg.fit(np.empty((0, 3)), np.empty(0), rng=rng)
    with pytest.raises(ValueError, match="X must be a 2-D"):
        alg.fit(X[0], y[:1], rng=rng)
    with pytest.raises(ValueError, match="y must have one entry per row"):
        alg.fit(X, y[:-1], rng=rng)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="X must not contain NaN"):
        alg.fit(Xn, y, rng=rng)
    yn = y.copy()
    yn[0] = np.inf
    with pytest.raises(ValueError, match="y must not contain NaN"):
        alg.fit(X, yn, rng=rng)
    with pytest.raises(ValueError, match="x_bound"):
        alg.fit(X * 1.01, y, rng=rng)
    with pytest.raises(ValueError, match="y_bound"):
        alg.fit(X, y * 0 + 1.5, rng=rng)
    for bad_rng in (0, None, np.random.RandomState(0)):
        with pytest.raises(TypeError, match=r"rng must be a numpy\.random\.Generator"):
            alg.fit(X, y, rng=bad_rng)
    with pytest.raises(TypeError, match="X must be"):
        alg.fit("abc", y, rng=rng)


@pytest.mark.parametrize("cls", [SSP, AdaSSP])
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"x_bound": 0.0}, "x_bound"),
        ({"x_bound": -1.0}, "x_bound"),
        ({"y_bound": 0.0}, "y_bound"),
        ({"y_bound": math.inf}, "y_bound"),
        ({"noise_scale": 0.0}, "noise_scale"),
        ({"noise_scale": math.nan}, "noise_scale"),
        ({"intercept_scaling": 0.0}, "intercept_scaling"),
    ],
)
def test_bad_parameters(cls, kwargs, name):
    base = {"noise_scale": 1.0, "x_bound": 1.0, "y_bound": 1.0}
    with pytest.raises(ValueError, match=name):
        cls(**{**base, **kwargs})


def test_bad_parameters_specific():
    base = {"noise_scale": 1.0, "x_bound": 1.0, "y_bound": 1.0}
    with pytest.raises(ValueError, match="ridge"):
        SSP(**base, ridge=-1.0)
    with pytest.raises(ValueError, match="ratios must have 2"):
        SSP(**base, ratios=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match=r"ratios\[1\]"):
        AdaSSP(**base, ratios=(1.0, 0.0, 3.0))
    with pytest.raises(ValueError, match="failure_probability"):
        AdaSSP(**base, failure_probability=1.0)
    with pytest.raises(ValueError, match="shift"):
        AdaSSP(**base, shift=-0.5)
    with pytest.raises(TypeError, match="fit_intercept"):
        AdaSSP(**base, fit_intercept="yes")
    with pytest.raises(ValueError, match="x_bound"):
        calibrate_ssp(1.0, DELTA, x_bound=-1.0, y_bound=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        calibrate_adassp(0.0, DELTA, x_bound=1.0, y_bound=1.0)
    with pytest.raises(ValueError, match="delta"):
        calibrate_adassp(1.0, 1.0, x_bound=1.0, y_bound=1.0)


def test_linear_model_checks_shapes():
    m = LinearModel(coef=np.array([1.0, 2.0]), intercept=1.0)
    with pytest.raises(ValueError, match="X must have 2 columns"):
        m.predict(np.ones((3, 3)))
    with pytest.raises(ValueError, match="y must have one entry per row"):
        m.mse(np.ones((3, 2)), np.ones(2))
    assert m.mse(np.ones((2, 2)), [4.0, 3.0]) == pytest.approx(0.5, rel=1e-15)


@pytest.mark.parametrize("cls", [SSP, AdaSSP])
def test_out_of_range_clip_equals_clipping_first(cls):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(500, 3)) / 2
    y = X @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.normal(size=500)
    X[0] *= 10.0
    y[1] = 7.0
    strict = cls(noise_scale=0.5, x_bound=1.0, y_bound=1.0)
    with pytest.raises(ValueError, match="out_of_range='clip'"):
        strict.fit(X, y, rng=np.random.default_rng(0))
    clip = cls(noise_scale=0.5, x_bound=1.0, y_bound=1.0, out_of_range="clip")
    assert clip.epsilon(1e-6) == strict.epsilon(1e-6)
    Xc = X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    got = clip.fit(X, y, rng=np.random.default_rng(0))
    want = strict.fit(Xc, np.clip(y, -1, 1), rng=np.random.default_rng(0))
    np.testing.assert_allclose(got.coef, want.coef, rtol=1e-12)
    with pytest.raises(ValueError, match="out_of_range"):
        cls(noise_scale=0.5, x_bound=1.0, y_bound=1.0, out_of_range="drop")


def test_calibrators_pass_out_of_range():
    ssp = calibrate_ssp(1.0, 1e-5, x_bound=1.0, y_bound=1.0, out_of_range="clip")
    ada = calibrate_adassp(1.0, 1e-5, x_bound=1.0, y_bound=1.0, out_of_range="clip")
    assert ssp.out_of_range == ada.out_of_range == "clip"
    assert ssp.epsilon(1e-5) == calibrate_ssp(1.0, 1e-5, x_bound=1.0, y_bound=1.0).epsilon(1e-5)


@pytest.mark.parametrize("constant", [None, "wang", "tutorial", 2.5])
def test_adassp_ridge_constant_survives_serialization(constant):
    from dpacct.accountant.serialization import from_dict, to_dict

    alg = AdaSSP(noise_scale=2.0, x_bound=1.0, y_bound=1.0, ridge_constant=constant)
    back = from_dict(to_dict(alg))
    assert back.ridge_constant == constant
    assert back.ridge_multiplier(5) == alg.ridge_multiplier(5)


# ----------------------------------------------------------------------------------
# tables: columns read by name (the reordered-DataFrame case)
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ["ssp", "adassp"])
def test_table_is_read_by_name(cls):
    """Fitted on a DataFrame, predicting on its columns in another order gives the same
    predictions (before: read by position, silently wrong)."""
    from test_regression_data import check_reads_table_by_name

    alg = (SufficientStatisticsPerturbation(noise_scale=0.5, x_bound=1.0, y_bound=1.0)
           if cls == "ssp" else AdaSSP(noise_scale=0.5, x_bound=1.0, y_bound=1.0))
    model = check_reads_table_by_name(lambda X, y: alg.fit(X, y, rng=np.random.default_rng(3)))
    check_reads_table_by_name(lambda X, y: alg.fit(X, y, rng=np.random.default_rng(3)),
                              methods=("mse",), y_arg=True)
    assert model.feature_names_in_.tolist() == ["age", "income", "score"]


def test_default_intercept_is_accounted_like_an_analytic_gaussian():
    """AdaSSP fits an intercept by default.  Independent account: the constant column 1
    makes the worst record ``z = (x, 1)`` with ``||x|| = x_bound`` (the bound is attained
    by it, measured here on data), so the three releases have sensitivities ``||z||^2``,
    ``||z||^2`` and ``||z|| y_bound`` against the documented stds ``ratio * noise_scale``;
    three Gaussians compose to one Gaussian with ``mu^2 = sum (Delta_i / std_i)^2``, whose
    exact curve is Balle & Wang 2018, Theorem 8 (computed with mpmath)."""
    import mpmath as mp

    xb, yb, s, r = 0.8, 1.5, 2.0, (1.0, 2.0, 0.5)
    alg = AdaSSP(noise_scale=s, x_bound=xb, y_bound=yb, ratios=r)
    assert alg.fit_intercept and alg.row_bound == pytest.approx(math.hypot(xb, 1.0))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    X *= xb * rng.uniform(size=(50, 1)) / np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.uniform(-yb, yb, size=50)
    x_new = np.array([0.6, 0.0, 0.0]) * xb / 0.6          # a record on the bound
    Z = np.hstack([X, np.ones((50, 1))])
    Z2 = np.vstack([Z, np.append(x_new, 1.0)])
    y2 = np.append(y, yb)
    d_gram = np.linalg.norm(Z2.T @ Z2 - Z.T @ Z)          # Frobenius: ||z||^2
    d_xy = np.linalg.norm(Z2.T @ y2 - Z.T @ y)             # ||z|| y_bound
    d_eig = np.linalg.eigvalsh(Z2.T @ Z2)[0] - np.linalg.eigvalsh(Z.T @ Z)[0]
    assert d_gram == pytest.approx(xb**2 + 1.0, rel=1e-12)
    assert d_xy == pytest.approx(math.hypot(xb, 1.0) * yb, rel=1e-12)
    assert 0.0 <= d_eig <= d_gram                          # Weyl
    stds = [ri * s for ri in r]
    mu = mp.sqrt(sum((mp.mpf(dv) / sd) ** 2 for dv, sd in
                     zip((d_gram, d_gram, d_xy), stds, strict=True)))
    for eps in (0.1, 0.5, 1.0, 2.0):
        e = mp.mpf(eps)
        exact = mp.ncdf(-e / mu + mu / 2) - mp.exp(e) * mp.ncdf(-e / mu - mu / 2)
        got = float(alg.delta(eps))
        assert got >= float(exact) * (1 - 1e-9)            # sound
        assert got == pytest.approx(float(exact), rel=1e-6)  # and tight


@pytest.mark.parametrize("calibrator", [calibrate_ssp, calibrate_adassp])
def test_a_label_bound_whose_noise_std_overflows_is_refused_naming_it(calibrator):
    """y_bound = 1e308 made B * y_bound * noise_scale an infinite std, refused only as
    'sigma must lie in (0, inf), got inf' (no parameter of the call named)."""
    with pytest.raises(ValueError, match=r"y_bound.*noise_scale.*finite"):
        calibrator(epsilon=1.0, delta=1e-5, x_bound=1.0, y_bound=1e308)
