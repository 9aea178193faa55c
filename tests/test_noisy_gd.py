"""Tests for mechanisms.noisy_gd.NoisyGD (its calibrators are tested in test_training.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import train_test_split

from dpacct.accountant import compose
from dpacct.calibrators.training import calibrate_noisy_gd
from dpacct.mechanisms.algorithms.noisy_gd import FittedLinearModel, NoisyGD, _clipped_gradient_sum
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism

DELTA = 1e-5


# ----------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def diabetes():
    """Diabetes: standardised features / 4, rows of norm > 1 projected to the unit sphere
    (explicitly, per record); targets mapped from their documented range [25, 346] to
    [-1, 1]."""
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    mu, sd = Xtr.mean(0), Xtr.std(0)

    def prep(A):
        A = (A - mu) / sd / 4.0
        return A / np.maximum(1.0, np.linalg.norm(A, axis=1, keepdims=True))

    ytr, yte = (ytr - 185.5) / 160.5, (yte - 185.5) / 160.5
    Xtr, Xte = prep(Xtr), prep(Xte)
    trivial = float(np.mean((yte - ytr.mean()) ** 2))
    ols = float(np.mean((LinearRegression().fit(Xtr, ytr).predict(Xte) - yte) ** 2))
    return Xtr, Xte, ytr, yte, trivial, ols


# ----------------------------------------------------------------------------------
# privacy = explicit composition
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma, T", [(3.0, 40), (0.8, 1), (25.0, 1000)])
def test_privacy_equals_hand_built_composition(sigma, T):
    gd = NoisyGD(sigma=sigma, iterations=T, loss="logistic", clip=1.0)
    ref = compose([GaussianMechanism(sigma=sigma)], counts=[T])
    assert gd.epsilon(DELTA) == pytest.approx(ref.epsilon(DELTA), rel=1e-12)
    assert gd.delta(1.0) == pytest.approx(ref.delta(1.0), rel=1e-12)
    alphas = np.array([1.5, 2.0, 8.0, 32.5])
    np.testing.assert_allclose(gd.rdp(alphas), alphas * T / (2 * sigma**2), rtol=1e-12)
    # T Gaussians are one Gaussian with sigma / sqrt(T) (exact curve, Balle & Wang)
    single = GaussianMechanism(sigma=sigma / math.sqrt(T))
    assert gd.epsilon(DELTA) == pytest.approx(single.epsilon(DELTA), rel=1e-9)


def test_privacy_does_not_depend_on_sensitivity_mode():
    a = NoisyGD(sigma=5.0, iterations=30, loss="linear", clip=2.0)
    b = NoisyGD(sigma=5.0, iterations=30, loss="linear", x_bound=1.0, y_bound=1.0, theta_bound=1.0)
    assert a.epsilon(DELTA) == pytest.approx(b.epsilon(DELTA), rel=1e-12)
    assert a.noise_std == pytest.approx(10.0, rel=1e-15)


# ----------------------------------------------------------------------------------
# sensitivity and noise
# ----------------------------------------------------------------------------------


def test_linear_bound_formula_and_tightness():
    gd = NoisyGD(
        sigma=1.0,
        iterations=1,
        loss="linear",
        x_bound=2.0,
        y_bound=3.0,
        theta_bound=0.5,
        fit_intercept=False,
    )
    assert gd.sensitivity == pytest.approx(2.0 * (0.5 * 2.0 + 3.0), rel=1e-15)
    with_icpt = NoisyGD(
        sigma=1.0, iterations=1, loss="linear", x_bound=2.0, y_bound=3.0, theta_bound=0.5
    )
    b = math.sqrt(5.0)
    assert with_icpt.sensitivity == pytest.approx(b * (0.5 * b + 3.0), rel=1e-15)
    # random data within the bounds, theta in the ball: every gradient is within the bound
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5000, 4))
    X *= (2.0 * rng.random((5000, 1))) / np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.uniform(-3, 3, size=5000)
    theta = rng.normal(size=4)
    theta *= 0.5 / np.linalg.norm(theta)
    norms = np.abs(X @ theta - y) * np.linalg.norm(X, axis=1)
    assert norms.max() <= gd.sensitivity
    # the worst case is attained: x along theta, y = -y_bound
    x = 2.0 * theta / 0.5
    assert abs(x @ theta + 3.0) * np.linalg.norm(x) == pytest.approx(gd.sensitivity, rel=1e-12)


def test_logistic_bound_needs_only_x_bound():
    gd = NoisyGD(sigma=1.0, iterations=1, loss="logistic", x_bound=3.0, fit_intercept=False)
    assert gd.sensitivity == 3.0
    gd = NoisyGD(sigma=1.0, iterations=1, loss="logistic", x_bound=3.0)
    assert gd.sensitivity == pytest.approx(math.sqrt(10.0), rel=1e-15)


@pytest.mark.parametrize("clip", [0.7, 3.0])
def test_noise_scale_is_sigma_times_clip(clip):
    # one record with zero features and target: the gradient is 0, theta_1 = -noise / n
    gd = NoisyGD(
        sigma=2.5, iterations=1, loss="linear", clip=clip, fit_intercept=False, average=False
    )
    d = 20_000
    fit = gd.fit(np.zeros((1, d)), np.zeros(1), rng=np.random.default_rng(5))
    assert np.std(fit.coef) == pytest.approx(2.5 * clip, rel=0.03)
    assert abs(np.mean(fit.coef)) < 4 * 2.5 * clip / math.sqrt(d)


@pytest.mark.slow
def test_bounds_noise_scale():
    # theta_1 = -learning_rate * noise (one zero record); the small step keeps the
    # projection onto ||theta|| <= theta_bound from binding
    gd = NoisyGD(
        sigma=1.5,
        iterations=1,
        loss="linear",
        x_bound=2.0,
        y_bound=1.0,
        theta_bound=3.0,
        fit_intercept=False,
        average=False,
        learning_rate=1e-3,
    )
    assert gd.sensitivity == pytest.approx(2.0 * (3.0 * 2.0 + 1.0), rel=1e-15)
    # 20 000 noise coordinates, as ten fits of 2 000 (one generator): the same draws'
    # statistics as one fit of 20 000 without its 20 000 x 20 000 Gram matrix
    rng = np.random.default_rng(6)
    coefs = []
    for _ in range(10):
        fit = gd.fit(np.zeros((1, 2_000)), np.zeros(1), rng=rng)
        assert np.linalg.norm(fit.coef) < 3.0
        coefs.append(fit.coef)
    assert np.std(np.concatenate(coefs)) == pytest.approx(1e-3 * 1.5 * 14.0, rel=0.03)


# ----------------------------------------------------------------------------------
# correctness of the optimiser (noise negligible)
# ----------------------------------------------------------------------------------


def test_converges_to_ols_without_noise():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(500, 4)) / 3
    y = X @ np.array([0.5, -1.0, 0.0, 2.0]) + 0.3 + 0.1 * rng.normal(size=500)
    gd = NoisyGD(
        sigma=1e-9, iterations=2000, loss="linear", clip=1e6, learning_rate=1.5, average=False
    )
    fit = gd.fit(X, y, rng=rng)
    ols = LinearRegression().fit(X, y)
    np.testing.assert_allclose(fit.coef, ols.coef_, rtol=0, atol=1e-4)
    assert fit.intercept == pytest.approx(ols.intercept_, abs=1e-4)
    # the averaged iterate converges too, more slowly (it carries the early iterates)
    avg = NoisyGD(sigma=1e-9, iterations=2000, loss="linear", clip=1e6, learning_rate=1.5)
    np.testing.assert_allclose(avg.fit(X, y, rng=rng).coef, ols.coef_, rtol=0, atol=0.02)


def test_converges_to_ridge_logistic_without_noise(cancer):
    Xtr, _, ytr, _, _, _ = cancer
    l2 = 0.01
    gd = NoisyGD(
        sigma=1e-9,
        iterations=3000,
        loss="logistic",
        clip=1e6,
        learning_rate=4.0,
        l2=l2,
        average=False,
    )
    fit = gd.fit(Xtr, ytr, rng=np.random.default_rng(0))
    # sklearn minimises ||w||^2 / 2 + C sum(loss); ours mean(loss) + l2 / 2 ||w||^2
    ref = LogisticRegression(C=1.0 / (l2 * len(ytr)), tol=1e-10, max_iter=10_000).fit(Xtr, ytr)
    np.testing.assert_allclose(fit.coef, ref.coef_[0], atol=2e-3 * np.abs(ref.coef_).max())
    assert fit.intercept == pytest.approx(ref.intercept_[0], abs=2e-3)


# ----------------------------------------------------------------------------------
# utility on real data
# ----------------------------------------------------------------------------------


def _mean_accuracy(gd, cancer, seeds=range(5)):
    Xtr, Xte, ytr, yte, _, _ = cancer
    accs = [gd.fit(Xtr, ytr, rng=np.random.default_rng(s)).accuracy(Xte, yte) for s in seeds]
    return float(np.mean(accs)), float(np.min(accs))


def test_logistic_beats_majority_at_epsilon_1(cancer):
    *_, majority, nonprivate = cancer
    gd = calibrate_noisy_gd(1.0, DELTA, iterations=30, loss="logistic", clip=1.0, learning_rate=4.0)
    assert gd.epsilon(DELTA) <= 1.0
    mean, worst = _mean_accuracy(gd, cancer)
    assert majority == pytest.approx(0.626, abs=1e-3)
    assert worst >= majority + 0.1  # measured about 0.92 (majority 0.63)
    assert nonprivate - mean < 0.08


def test_logistic_approaches_nonprivate_as_epsilon_grows(cancer):
    *_, nonprivate = cancer
    means = []
    for eps in (0.1, 1.0, 100.0):
        gd = calibrate_noisy_gd(
            eps, DELTA, iterations=100, loss="logistic", clip=1.0, learning_rate=4.0
        )
        means.append(_mean_accuracy(gd, cancer)[0])
    assert means[0] < means[1] < means[2]
    assert means[2] >= nonprivate - 0.02  # non-private 0.953


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(clip=0.5, iterations=100, learning_rate=1.0),
        dict(
            x_bound=1.0,
            y_bound=1.0,
            theta_bound=2.0,
            iterations=300,
            learning_rate=1.8,
        ),
    ],
)
def test_linear_regression_beats_mean_predictor(diabetes, kwargs):
    Xtr, Xte, ytr, yte, trivial, ols = diabetes
    gd = calibrate_noisy_gd(10.0, DELTA, loss="linear", **kwargs)
    mses = [gd.fit(Xtr, ytr, rng=np.random.default_rng(s)).mse(Xte, yte) for s in range(4)]
    assert ols < 0.65 * trivial
    assert max(mses) < 0.75 * trivial  # measured 0.60-0.64 of the trivial MSE


# ----------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------


def _gd(**kw):
    base = dict(sigma=1.0, iterations=5, loss="logistic", clip=1.0)
    base.update(kw)
    return NoisyGD(**base)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(sigma=0.0), ValueError, "sigma"),
        (dict(sigma=-1.0), ValueError, "sigma"),
        (dict(sigma=float("nan")), ValueError, "sigma"),
        (dict(iterations=0), ValueError, "iterations"),
        (dict(iterations=2.5), TypeError, "iterations"),
        (dict(loss="hinge"), ValueError, "loss"),
        (dict(clip=0.0), ValueError, "clip"),
        (dict(clip=None), ValueError, "clip"),
        (dict(x_bound=1.0), ValueError, "clip"),
        (dict(learning_rate=0.0), ValueError, "learning_rate"),
        (dict(l2=-0.1), ValueError, "l2"),
        (dict(fit_intercept="yes"), TypeError, "fit_intercept"),
        (dict(clip=None, x_bound=1.0, loss="linear"), ValueError, "y_bound"),
        (dict(clip=None, x_bound=1.0, y_bound=1.0, loss="linear", adaptive=False),
         ValueError, "theta_bound"),
        (dict(adaptive=True), ValueError, "adaptive"),
        (dict(clip=None, x_bound=1.0, adaptive=True), ValueError, "adaptive"),
        (dict(loss="softmax"), ValueError, "n_classes"),
        (dict(loss="softmax", n_classes=1), ValueError, "n_classes"),
        (dict(n_classes=3), ValueError, "n_classes"),
        (dict(out_of_range="drop"), ValueError, "out_of_range"),
        (dict(y_bound=1.0), ValueError, "y_bound"),
        (dict(clip=None, x_bound=-1.0), ValueError, "x_bound"),
    ],
)
def test_bad_parameters(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        _gd(**kwargs)


def test_bad_data():
    gd = _gd()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 3))
    y = (rng.random(10) < 0.5).astype(float)
    with pytest.raises(ValueError, match=r"X.*empty"):
        gd.fit(np.zeros((0, 3)), np.zeros(0), rng=rng)
    with pytest.raises(ValueError, match=r"X.*2-D"):
        gd.fit(X[0], y[:1], rng=rng)
    with pytest.raises(ValueError, match="mismatched"):
        gd.fit(X, y[:9], rng=rng)
    Xn = X.copy()
    Xn[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"X.*finite"):
        gd.fit(Xn, y, rng=rng)
    yn = y.copy()
    yn[0] = np.inf
    with pytest.raises(ValueError, match=r"y.*finite"):
        gd.fit(X, yn, rng=rng)
    with pytest.raises(ValueError, match=r"y.*\{0, 1\}"):
        gd.fit(X, 2 * y, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        gd.fit(X, y, rng=0)
    with pytest.raises(TypeError, match="rng"):
        gd.fit(X, y, rng=np.random.RandomState(0))
    bounded = NoisyGD(
        sigma=1.0, iterations=2, loss="linear", x_bound=1.0, y_bound=1.0, theta_bound=1.0
    )
    with pytest.raises(ValueError, match="x_bound"):
        bounded.fit(X, y, rng=rng)  # rows of norm > 1: raise, do not clip
    Xs = X / (2 * np.linalg.norm(X, axis=1, keepdims=True))
    with pytest.raises(ValueError, match="y_bound"):
        bounded.fit(Xs, 3 * y, rng=rng)
    assert bounded.fit(Xs, y, rng=rng).coef.shape == (3,)


def test_fitted_model_api(cancer):
    Xtr, Xte, ytr, yte, _, _ = cancer
    fit = _gd(sigma=5.0, iterations=20, learning_rate=4.0).fit(
        Xtr, ytr, rng=np.random.default_rng(1)
    )
    p = fit.predict_proba(Xte)
    assert p.shape == (len(yte),) and ((p > 0) & (p < 1)).all()
    np.testing.assert_array_equal(fit.predict(Xte), (p > 0.5).astype(float))
    assert fit.score(Xte, yte) == fit.accuracy(Xte, yte)
    with pytest.raises(ValueError, match="columns"):
        fit.predict(Xte[:, :5])
    lin = FittedLinearModel(coef=np.array([1.0, 2.0]), intercept=1.0, loss="linear")
    with pytest.raises(ValueError, match="predict_proba"):
        lin.predict_proba(np.ones((1, 2)))
    Xl = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]])
    assert lin.mse(Xl, np.array([1.0, 4.0, 3.0])) == 0.0
    assert lin.score(Xl, np.array([1.0, 4.0, 3.0])) == 1.0


# ----------------------------------------------------------------------------------
# speed paths, adaptive sensitivity, history, labels, softmax, clipping of data
# ----------------------------------------------------------------------------------


def _plain_loop(X, y, sigma, T, lr, *, std_of, seed, fit_intercept=True, radius=None):
    """Noisy GD on the squared loss written out with numpy (per-row gradient, no
    sufficient statistics); ``std_of(theta)`` gives each step's noise std."""
    rng = np.random.default_rng(seed)
    Z = np.hstack([X, np.ones((len(X), 1))]) if fit_intercept else X
    theta, total = np.zeros(Z.shape[1]), np.zeros(Z.shape[1])
    for _ in range(T):
        g = Z.T @ (Z @ theta - y)
        g = g + rng.normal(0.0, std_of(theta), size=g.shape)
        theta = theta - lr * g / len(y)
        if radius is not None and np.linalg.norm(theta) > radius:
            theta *= radius / np.linalg.norm(theta)
        total += theta
    return total / T


def _bounded_data(seed, n=300, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / 2
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = np.clip(X @ np.linspace(1, -1, d) + 0.3 + 0.1 * rng.normal(size=n), -1, 1)
    return X, y


def test_sufficient_statistics_path_equals_plain_loop():
    X, y = _bounded_data(0)
    gd = NoisyGD(sigma=3.0, iterations=200, loss="linear", x_bound=1.0, y_bound=1.0,
                 theta_bound=2.0, learning_rate=0.7)
    fit = gd.fit(X, y, rng=np.random.default_rng(5))
    b = math.sqrt(2.0)
    want = _plain_loop(X, y, 3.0, 200, 0.7, std_of=lambda th: 3.0 * b * (2.0 * b + 1.0),
                       seed=5, radius=2.0)
    np.testing.assert_allclose(np.append(fit.coef, fit.intercept), want, rtol=1e-9, atol=1e-12)


def test_adaptive_sensitivity_equals_plain_loop_and_is_planned(monkeypatch):
    X, y = _bounded_data(1)
    gd = NoisyGD(sigma=2.0, iterations=150, loss="linear", x_bound=1.0, y_bound=1.0)
    assert gd.adaptive and gd.sensitivity == 1.0
    with pytest.raises(ValueError, match="adaptive"):
        _ = gd.noise_std
    records = []
    real = GaussianMechanism.release

    def spy(self, value, *args, **kwargs):
        # one call on k stacked rows (ReleaseSession.release_many) is k releases
        rows = np.shape(value)[0] if np.ndim(value) == 2 else 1
        records.extend([(self, kwargs.get("sensitivity"))] * rows)
        return real(self, value, *args, **kwargs)

    monkeypatch.setattr(GaussianMechanism, "release", spy)
    fit = gd.fit(X, y, rng=np.random.default_rng(6), record_every=1)
    # 150 releases of the planned object at (normalised) sensitivity 1
    assert len(records) == 150
    assert all(m is gd.plan[0].mechanism and s == 1.0 for m, s in records)
    b = math.sqrt(2.0)
    stds = []

    def std_of(theta):
        stds.append(2.0 * b * (b * np.linalg.norm(theta) + 1.0))  # sigma * GS_t
        return stds[-1]

    want = _plain_loop(X, y, 2.0, 150, 1.0, std_of=std_of, seed=6)
    np.testing.assert_allclose(np.append(fit.coef, fit.intercept), want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fit.history.noise_std, stds, rtol=1e-9)
    assert gd.epsilon(DELTA) == compose([GaussianMechanism(2.0)], counts=[150]).epsilon(DELTA)


def _sufficient_statistics_loop(X, y, T, lr, seed, std=None, adaptive=None, radius=None):
    """The plain numpy loop on ``A = Z'Z``, ``b = Z'y``: one ``rng.normal`` per step.

    ``adaptive = (sigma, B, y_bound)`` releases ``g / GS_t`` at sensitivity 1 and scales
    back, ``GS_t = B (B ||theta|| + y_bound)``; otherwise the noise std is ``std``.
    """
    rng = np.random.default_rng(seed)
    Z = np.hstack([X, np.ones((len(X), 1))])
    A, b = Z.T @ Z, Z.T @ y
    theta, total = np.zeros(Z.shape[1]), np.zeros(Z.shape[1])
    for _ in range(T):
        g = A @ theta - b
        if adaptive is None:
            noisy = g + rng.normal(0.0, std, size=g.shape)
        else:
            sigma, B, yb = adaptive
            gs = B * (B * float(np.linalg.norm(theta)) + yb)
            noisy = (g / gs + rng.normal(0.0, sigma, size=g.shape)) * gs
        theta = theta - lr * (noisy / len(y))
        if radius is not None and float(np.linalg.norm(theta)) > radius:
            theta = theta * (radius / float(np.linalg.norm(theta)))
        total += theta
    return total / T, theta


@pytest.mark.parametrize("adaptive", [False, True])
def test_sufficient_statistics_path_is_the_numpy_loop_bit_for_bit(adaptive):
    """Across several noise blocks (2 500 iterations): the same numbers as the plain loop
    with one ``rng.normal`` per step, to the last bit, for the average and the last
    iterate."""
    X, y = _bounded_data(3)
    kw = {} if adaptive else {"theta_bound": 2.0}
    b = math.sqrt(2.0)
    if adaptive:
        loop = {"adaptive": (2.0, b, 1.0)}
    else:
        loop = {"std": 2.0 * b * (2.0 * b + 1.0), "radius": 2.0}
    want_avg, want_last = _sufficient_statistics_loop(X, y, 2_500, 0.5, 8, **loop)
    for average, want in ((True, want_avg), (False, want_last)):
        gd = NoisyGD(sigma=2.0, iterations=2_500, loss="linear", x_bound=1.0, y_bound=1.0,
                     learning_rate=0.5, average=average, **kw)
        fit = gd.fit(X, y, rng=np.random.default_rng(8))
        np.testing.assert_array_equal(np.append(fit.coef, fit.intercept), want)


def test_diverging_iterates_raise():
    X, y = _bounded_data(4)
    gd = NoisyGD(sigma=1.0, iterations=3_000, loss="linear", x_bound=1.0, y_bound=1.0,
                 learning_rate=1e3)  # adaptive GS_t: the noise grows with the iterate
    with (np.errstate(all="ignore"), pytest.raises(ValueError, match="diverged")):
        gd.fit(X, y, rng=np.random.default_rng(0))


def test_adaptive_beats_a_loose_theta_bound_and_approaches_least_squares(diabetes):
    Xtr, Xte, ytr, yte, trivial, ols = diabetes
    kw = dict(sigma=5.0, iterations=300, loss="linear", x_bound=1.0, y_bound=1.0)
    mses = {}
    for name, extra in (("adaptive", {}), ("bound 20", dict(theta_bound=20.0))):
        gd = NoisyGD(**kw, **extra)
        mses[name] = np.mean([gd.fit(Xtr, ytr, rng=np.random.default_rng(s)).mse(Xte, yte)
                              for s in range(5)])
    assert mses["adaptive"] < mses["bound 20"]
    assert mses["adaptive"] < ols + 0.5 * (trivial - ols)
    # no noise to speak of: the predictions converge to numpy's least squares (the
    # coefficients of two nearly collinear features converge more slowly)
    Z = np.hstack([Xtr, np.ones((len(Xtr), 1))])
    lsq = np.linalg.lstsq(Z, ytr, rcond=None)[0]
    quiet = NoisyGD(sigma=1e-8, iterations=20_000, loss="linear", x_bound=1.0, y_bound=1.0,
                    learning_rate=1.9, average=False)
    fit = quiet.fit(Xtr, ytr, rng=np.random.default_rng(0))
    np.testing.assert_allclose(fit.predict(Xte), np.hstack([Xte, np.ones((len(Xte), 1))]) @ lsq,
                               atol=1e-3)


def test_history_epsilon_and_loss_against_independent_values():
    X, y = _bounded_data(2)
    gd = NoisyGD(sigma=4.0, iterations=60, loss="linear", clip=1.0)
    seen = []
    fit = gd.fit(X, y, rng=np.random.default_rng(1), delta=1e-6, record_every=20,
                 callback=lambda t, model, eps: seen.append((t, model.mse(X, y), eps)))
    h = fit.history
    assert h.iteration.tolist() == [20, 40, 60] and h.delta == 1e-6
    for t, eps in zip(h.iteration, h.epsilon, strict=True):
        # t Gaussian releases are one Gaussian of noise multiplier sigma / sqrt(t)
        assert eps == pytest.approx(GaussianMechanism(4.0 / math.sqrt(t)).epsilon(1e-6),
                                    rel=1e-9)
    np.testing.assert_allclose(h.loss, [m for _, m, _ in seen], rtol=1e-12)
    np.testing.assert_allclose(h.epsilon, [e for _, _, e in seen], rtol=1e-12)
    assert h.loss[-1] == pytest.approx(fit.mse(X, y), rel=1e-12)
    np.testing.assert_allclose(h.noise_std, 4.0, rtol=0)
    assert gd.fit(X, y, rng=np.random.default_rng(1)).history is None
    with pytest.raises(TypeError, match="callback"):
        gd.fit(X, y, rng=np.random.default_rng(1), callback=3)


def test_plus_minus_one_labels_equal_zero_one(cancer):
    Xtr, Xte, ytr, yte = cancer[:4]
    gd = NoisyGD(sigma=5.0, iterations=30, loss="logistic", clip=1.0)
    f01 = gd.fit(Xtr, ytr, rng=np.random.default_rng(3))
    fpm = gd.fit(Xtr, 2 * ytr - 1, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(f01.coef, fpm.coef)
    assert set(np.unique(fpm.predict(Xte))) <= {-1.0, 1.0}
    assert fpm.accuracy(Xte, 2 * yte - 1) == f01.accuracy(Xte, yte)
    assert np.array_equal(fpm.predict(Xte), 2 * f01.predict(Xte) - 1)
    with pytest.raises(ValueError, match=r"\{0, 1\} or in \{-1, \+1\}"):
        gd.fit(Xtr, np.where(ytr > 0, 1.0, -1.0) * (np.arange(len(ytr)) % 3 > 0),
               rng=np.random.default_rng(0))


def _three_classes(seed, n=1500):
    rng = np.random.default_rng(seed)
    centres = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])
    y = rng.integers(0, 3, size=n)
    X = centres[y] + 0.15 * rng.normal(size=(n, 2))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    return X, y


def test_softmax_gradient_matches_per_example_loop_and_bound():
    rng = np.random.default_rng(9)
    X, y = _three_classes(0, n=300)
    Xa = np.hstack([X, np.ones((300, 1))])
    theta = 3 * rng.normal(size=(3, 3))
    grads = []
    for x_i, y_i in zip(Xa, y, strict=True):
        z = x_i @ theta
        p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
        e = np.zeros(3)
        e[y_i] = 1.0
        grads.append(np.outer(x_i, p - e))
    grads = np.array(grads)
    norms = np.sqrt((grads**2).sum(axis=(1, 2)))
    # the declared-bound sensitivity sqrt(2) * B holds for every record
    gd = NoisyGD(sigma=1.0, iterations=1, loss="softmax", n_classes=3, x_bound=1.0)
    assert gd.sensitivity == pytest.approx(math.sqrt(2) * math.sqrt(2), rel=1e-12)
    assert norms.max() <= gd.sensitivity
    clipped = grads * np.minimum(1.0, 0.5 / norms)[:, None, None]
    np.testing.assert_allclose(_clipped_gradient_sum(Xa, y, theta, "softmax", 0.5),
                               clipped.sum(0), rtol=1e-10)
    np.testing.assert_allclose(_clipped_gradient_sum(Xa, y, theta, "softmax", None),
                               grads.sum(0), rtol=1e-10)


@pytest.mark.parametrize("mode", [dict(clip=1.0), dict(x_bound=1.0)])
def test_softmax_approaches_nonprivate_accuracy(mode):
    X, y = _three_classes(1)
    Xte, yte = _three_classes(2)
    ref = LogisticRegression(C=1e4, max_iter=2000).fit(X, y).score(Xte, yte)
    gd = NoisyGD(sigma=2.0, iterations=200, loss="softmax", n_classes=3,
                 learning_rate=2.0, **mode)
    fit = gd.fit(X, y, rng=np.random.default_rng(0))
    assert fit.coef.shape == (2, 3) and fit.intercept.shape == (3,)
    assert fit.accuracy(Xte, yte) > ref - 0.03
    proba = fit.predict_proba(Xte)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert fit.log_loss(Xte, yte) < math.log(3)
    with pytest.raises(ValueError, match=r"class labels in \{0, ..., 2\}"):
        gd.fit(X, np.where(y == 2, 3, y), rng=np.random.default_rng(0))


def test_out_of_range_clip_equals_clipping_first():
    X, y = _bounded_data(3)
    X2, y2 = X.copy(), y.copy()
    X2[0] *= 5.0
    y2[1] = 4.0
    gd = NoisyGD(sigma=3.0, iterations=20, loss="linear", x_bound=1.0, y_bound=1.0)
    with pytest.raises(ValueError, match="out_of_range='clip'"):
        gd.fit(X2, y2, rng=np.random.default_rng(0))
    clip = NoisyGD(sigma=3.0, iterations=20, loss="linear", x_bound=1.0, y_bound=1.0,
                   out_of_range="clip")
    got = clip.fit(X2, y2, rng=np.random.default_rng(0))
    Xc = X2 / np.maximum(1.0, np.linalg.norm(X2, axis=1, keepdims=True))
    want = gd.fit(Xc, np.clip(y2, -1, 1), rng=np.random.default_rng(0))
    np.testing.assert_allclose(got.coef, want.coef, rtol=1e-12)
    assert clip.epsilon(DELTA) == gd.epsilon(DELTA)


# ----------------------------------------------------------------------------------
# tables: columns read by name (the reordered-DataFrame case)
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["linear", "logistic", "softmax"])
def test_table_is_read_by_name(loss):
    """Fitted on a DataFrame, every method reads a table by its column names (before:
    by position; the reordered table gave an MSE of 4.17 instead of 0.010)."""
    from test_regression_data import check_reads_table_by_name

    kw = {"n_classes": 3} if loss == "softmax" else {}
    gd = NoisyGD(sigma=2.0, iterations=30, loss=loss, x_bound=1.0,
                 y_bound=1.0 if loss == "linear" else None, **kw)
    labels = {"linear": None, "logistic": lambda t: (t > 0).astype(float),
              "softmax": lambda t: np.digitize(t, [-0.3, 0.3]).astype(float)}[loss]

    def fit(X, y):
        return gd.fit(X, y, rng=np.random.default_rng(4))

    check_reads_table_by_name(fit, methods=("predict", "decision_function"), y=labels)
    scored = ("score", "mse") if loss == "linear" else ("score", "accuracy", "log_loss")
    check_reads_table_by_name(fit, methods=scored, y=labels, y_arg=True)
    if loss != "linear":
        check_reads_table_by_name(fit, methods=("predict_proba",), y=labels)


def test_eval_set_table_is_read_by_name():
    from test_regression_data import regression_table

    df, y = regression_table()
    gd = NoisyGD(sigma=2.0, iterations=20, loss="linear", x_bound=1.0, y_bound=1.0)
    a = gd.fit(df, y, rng=np.random.default_rng(0), eval_set=(df, y), record_every=5)
    b = gd.fit(df, y, rng=np.random.default_rng(0), eval_set=(df[df.columns[::-1]], y),
               record_every=5)
    np.testing.assert_array_equal(a.history.loss, b.history.loss)
