"""Tests for mechanisms.dp_sgd.DPSGD (its calibrator is tested in test_training.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpacct.accountant import BudgetExceededError, PrivacyAccountant, compose, poisson_subsample
from dpacct.calibrators.training import calibrate_dp_sgd
from dpacct.mechanisms.algorithms.dp_sgd import DPSGD, _epoch_ends
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism

DELTA = 1e-5


# ----------------------------------------------------------------------------------
# privacy
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("sigma, q, steps", [(1.1, 0.01, 500), (2.0, 0.25, 40), (5.0, 1.0, 9)])
def test_privacy_equals_hand_built_composition(sigma, q, steps):
    sgd = DPSGD(sigma=sigma, sample_rate=q, steps=steps, loss="logistic")
    ref = compose([poisson_subsample(GaussianMechanism(sigma=sigma), sample_rate=q)], [steps])
    assert sgd.epsilon(DELTA) == pytest.approx(ref.epsilon(DELTA), rel=1e-12)
    assert sgd.delta(1.0) == pytest.approx(ref.delta(1.0), rel=1e-12)
    alphas = np.array([2.0, 4.5, 16.0])
    np.testing.assert_allclose(sgd.rdp(alphas), ref.rdp(alphas), rtol=1e-12)
    lo, hi = sgd.epsilon_bounds(DELTA)
    assert lo <= sgd.epsilon(DELTA) <= hi * (1 + 1e-12)


def test_full_batch_rdp_is_gaussian():
    # q = 1: T Gaussians, RDP alpha T / (2 sigma^2) (Mironov 2017, Prop. 7)
    sgd = DPSGD(sigma=2.0, sample_rate=1.0, steps=10, loss="linear")
    np.testing.assert_allclose(sgd.rdp([2.0, 10.0]), [10 * 2 / 8, 10 * 10 / 8], rtol=1e-12)


def test_epochs_to_steps():
    assert DPSGD(sigma=1.0, sample_rate=0.01, epochs=3, loss="logistic").steps == 300
    assert DPSGD(sigma=1.0, sample_rate=0.3, epochs=2, loss="logistic").steps == 6
    # both given and consistent (what dataclasses.replace passes) is accepted
    sgd = DPSGD(sigma=1.0, sample_rate=0.1, epochs=2, loss="logistic")
    assert dataclasses.replace(sgd, sigma=2.0).steps == 20
    with pytest.raises(ValueError, match="disagree"):
        DPSGD(sigma=1.0, sample_rate=0.1, epochs=2, steps=21, loss="logistic")
    np.testing.assert_array_equal(_epoch_ends(20, 0.1), [10, 20])
    np.testing.assert_array_equal(_epoch_ends(6, 0.3), [3, 6])
    np.testing.assert_array_equal(_epoch_ends(25, 0.1), [10, 20, 25])  # partial last
    np.testing.assert_array_equal(_epoch_ends(3, 0.01), [3])


def test_online_accountant_and_epsilon_per_epoch():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] > 0).astype(float)
    sgd = DPSGD(sigma=1.2, sample_rate=0.1, steps=45, loss="logistic")
    fit = sgd.fit(X, y, rng=rng, delta=DELTA)
    np.testing.assert_array_equal(fit.epoch_steps, [10, 20, 30, 40, 45])
    step = poisson_subsample(GaussianMechanism(sigma=1.2), 0.1)
    hand = [compose([step], [k]).epsilon(DELTA) for k in (10, 20, 30, 40, 45)]
    np.testing.assert_allclose(fit.epsilon_per_epoch, hand, rtol=1e-9)
    assert np.all(np.diff(fit.epsilon_per_epoch) > 0)
    assert fit.epsilon_per_epoch[-1] == pytest.approx(sgd.epsilon(DELTA), rel=1e-9)
    # one merged ledger entry of 45 identical steps
    assert fit.accountant.steps == 45
    assert len(fit.accountant.entries) == 1
    assert fit.delta == DELTA
    # without delta: the accountant is fed, no epsilon path
    fit2 = sgd.fit(X, y, rng=rng)
    assert fit2.epsilon_per_epoch is None and fit2.accountant.steps == 45


def test_shared_accountant_accumulates_and_filter_stops():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 1] > 0).astype(float)
    sgd = DPSGD(sigma=1.0, sample_rate=0.2, steps=10, loss="logistic")
    acct = PrivacyAccountant()
    sgd.fit(X, y, rng=rng, accountant=acct)
    fit = sgd.fit(X, y, rng=rng, accountant=acct, delta=DELTA)
    assert acct.steps == 20
    assert fit.epsilon_per_epoch[-1] == pytest.approx(
        DPSGD(sigma=1.0, sample_rate=0.2, steps=20, loss="logistic").epsilon(DELTA), rel=1e-9
    )
    # a privacy filter smaller than the run: the fit stops before overspending
    budget = DPSGD(sigma=1.0, sample_rate=0.2, steps=6, loss="logistic").epsilon(DELTA)
    filt = PrivacyAccountant(budget_epsilon=budget * (1 + 1e-9), budget_delta=DELTA)
    with pytest.raises(BudgetExceededError):
        sgd.fit(X, y, rng=rng, accountant=filt)
    assert filt.steps == 6


# ----------------------------------------------------------------------------------
# running
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("clip", [0.5, 2.0])
def test_noise_scale_is_sigma_times_clip(clip):
    # q = 1, one zero record: theta_1 = -learning_rate * noise / (q n) with std sigma C
    sgd = DPSGD(
        sigma=3.0,
        sample_rate=1.0,
        steps=1,
        loss="linear",
        clip=clip,
        fit_intercept=False,
        average=False,
    )
    fit = sgd.fit(np.zeros((1, 20_000)), np.zeros(1), rng=np.random.default_rng(2))
    assert np.std(fit.coef) == pytest.approx(3.0 * clip, rel=0.03)


def test_poisson_batches_are_unbiased_for_the_full_gradient():
    # one step from theta = 0 without noise: theta_1 = +lr * sum_{i in B} y_i x_i / (q n)
    # for linear loss (gradient -y_i x_i at theta = 0); its mean over batches is the
    # full-batch step +lr * X^T y / n, and the batch size is Binomial(n, q)
    rng = np.random.default_rng(3)
    n, q = 400, 0.1
    X = rng.normal(size=(n, 2)) / 3
    y = np.ones(n)
    sgd = DPSGD(
        sigma=1e-12,
        sample_rate=q,
        steps=1,
        loss="linear",
        clip=1e6,
        fit_intercept=False,
        average=False,
    )
    runs = np.array([sgd.fit(X, y, rng=rng).coef for _ in range(800)])
    full = X.T @ y / n
    per_record = X * y[:, None] / (q * n)
    # Poisson sampling: Var = q (1 - q) sum_i (x_i y_i / (q n))^2 per coordinate
    se = np.sqrt(q * (1 - q) * (per_record**2).sum(0) / len(runs))
    np.testing.assert_array_less(np.abs(runs.mean(0) - full), 4 * se)
    np.testing.assert_allclose(runs.var(0), q * (1 - q) * (per_record**2).sum(0), rtol=0.1)


def test_logistic_beats_majority_at_epsilon_1(cancer):
    Xtr, Xte, ytr, yte, majority, nonprivate = cancer
    sgd = calibrate_dp_sgd(
        1.0, DELTA, sample_rate=0.1, epochs=5, loss="logistic", learning_rate=4.0
    )
    accs = [sgd.fit(Xtr, ytr, rng=np.random.default_rng(s)).accuracy(Xte, yte) for s in range(5)]
    assert min(accs) >= majority + 0.1  # measured about 0.93 (majority 0.63)
    assert nonprivate - np.mean(accs) < 0.08


def test_logistic_approaches_nonprivate_as_epsilon_grows(cancer):
    Xtr, Xte, ytr, yte, _, nonprivate = cancer
    means = []
    for eps in (0.05, 1.0, 50.0):
        sgd = calibrate_dp_sgd(
            eps, DELTA, sample_rate=0.1, epochs=20, loss="logistic", learning_rate=4.0
        )
        accs = [
            sgd.fit(Xtr, ytr, rng=np.random.default_rng(s)).accuracy(Xte, yte) for s in range(4)
        ]
        means.append(float(np.mean(accs)))
    assert means[0] < means[1] < means[2]
    assert means[2] >= nonprivate - 0.02


# ----------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(sigma=0.0), ValueError, "sigma"),
        (dict(sigma=-2.0), ValueError, "sigma"),
        (dict(sample_rate=0.0), ValueError, "sample_rate"),
        (dict(sample_rate=1.5), ValueError, "sample_rate"),
        (dict(sample_rate=float("nan")), ValueError, "sample_rate"),
        (dict(steps=0), ValueError, "steps"),
        (dict(steps=None), TypeError, "steps"),
        (dict(steps=None, epochs=-1.0), ValueError, "epochs"),
        (dict(steps=None, epochs=0.001), ValueError, "epochs"),
        (dict(clip=0.0), ValueError, "clip"),
        (dict(clip=None), ValueError, "clip"),
        (dict(loss="svm"), ValueError, "loss"),
        (dict(learning_rate=-1.0), ValueError, "learning_rate"),
        (dict(l2=float("inf")), ValueError, "l2"),
        (dict(average=1), TypeError, "average"),
    ],
)
def test_bad_parameters(kwargs, exc, match):
    base = dict(sigma=1.0, sample_rate=0.1, steps=10, loss="logistic")
    base.update(kwargs)
    with pytest.raises(exc, match=match):
        DPSGD(**base)


def test_bad_data_and_arguments():
    sgd = DPSGD(sigma=1.0, sample_rate=0.5, steps=3, loss="logistic")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 2))
    y = (rng.random(8) < 0.5).astype(float)
    with pytest.raises(ValueError, match="empty"):
        sgd.fit(np.zeros((0, 2)), np.zeros(0), rng=rng)
    with pytest.raises(ValueError, match="mismatched"):
        sgd.fit(X, y[:-1], rng=rng)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        sgd.fit(Xn, y, rng=rng)
    with pytest.raises(ValueError, match=r"\{0, 1\}"):
        sgd.fit(X, y - 1, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        sgd.fit(X, y, rng=42)
    with pytest.raises(ValueError, match="delta"):
        sgd.fit(X, y, rng=rng, delta=0.0)
    with pytest.raises(TypeError, match="accountant"):
        sgd.fit(X, y, rng=rng, accountant="ledger")


def test_softmax_and_plus_minus_one_labels(cancer):
    # three well-separated classes: DP-SGD's softmax model reaches the accuracy of a
    # non-private multinomial logistic regression (scikit-learn) within 3 points
    from sklearn.linear_model import LogisticRegression

    def three(seed, n=2000):
        rng = np.random.default_rng(seed)
        centres = np.array([[0.5, 0.0], [-0.25, 0.43], [-0.25, -0.43]])
        y = rng.integers(0, 3, size=n)
        X = centres[y] + 0.15 * rng.normal(size=(n, 2))
        return X / np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True)), y

    X, y = three(0)
    Xte, yte = three(1)
    ref = LogisticRegression(C=1e4, max_iter=2000).fit(X, y).score(Xte, yte)
    sgd = DPSGD(sigma=1.0, sample_rate=0.05, steps=300, loss="softmax", n_classes=3,
                learning_rate=2.0)
    fit = sgd.fit(X, y, rng=np.random.default_rng(2))
    assert fit.coef.shape == (2, 3)
    assert fit.accuracy(Xte, yte) > ref - 0.03
    # labels coded -1/+1 give the same run as 0/1 and are predicted back in that coding
    Xtr, Xte2, ytr, yte2 = cancer[:4]
    sgd2 = DPSGD(sigma=1.0, sample_rate=0.1, steps=30, loss="logistic")
    f01 = sgd2.fit(Xtr, ytr, rng=np.random.default_rng(3))
    fpm = sgd2.fit(Xtr, 2 * ytr - 1, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(f01.coef, fpm.coef)
    assert fpm.accuracy(Xte2, 2 * yte2 - 1) == f01.accuracy(Xte2, yte2)
    assert set(np.unique(fpm.predict(Xte2))) <= {-1.0, 1.0}


def test_table_is_read_by_name():
    """The reordered-DataFrame case for DP-SGD's model (a FittedLinearModel)."""
    from test_regression_data import check_reads_table_by_name

    sgd = DPSGD(sigma=2.0, sample_rate=0.1, steps=20, loss="linear")
    model = check_reads_table_by_name(lambda X, y: sgd.fit(X, y, rng=np.random.default_rng(5)))
    assert model.feature_names_in_.tolist() == ["age", "income", "score"]
