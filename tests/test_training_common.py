"""The pieces NoisyGD and DP-SGD share (``dpacct.mechanisms.algorithms._training_common``): clipped
gradient sums, residuals, losses, projection and the ridge gradient, each against a
per-example loop or a formula written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct.mechanisms.algorithms._training_common import (
    _l2_gradient,
    _mean_loss,
    _project,
    _softmax,
)
from dpacct.mechanisms.algorithms.noisy_gd import _clipped_gradient_sum


def test_clipped_gradient_sum_matches_per_example_loop():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 5))
    y = (rng.random(200) < 0.5).astype(float)
    theta = rng.normal(size=5)
    for loss, yy in (("logistic", y), ("linear", rng.normal(size=200) * 3)):
        z = X @ theta
        r = z - yy if loss == "linear" else 1 / (1 + np.exp(-z)) - yy
        grads = r[:, None] * X  # per-example gradients, built explicitly
        norms = np.linalg.norm(grads, axis=1)
        clipped = grads * np.minimum(1.0, 0.3 / norms)[:, None]
        np.testing.assert_allclose(
            _clipped_gradient_sum(X, yy, theta, loss, 0.3), clipped.sum(0), rtol=1e-10
        )
        assert (norms > 0.3).sum() > 50  # the test exercises clipping


def test_mean_losses_are_the_textbook_formulas():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    theta = rng.normal(size=3)
    y_real = rng.normal(size=40)
    y01 = (rng.random(40) < 0.5).astype(float)
    z = [float(np.dot(x, theta)) for x in X]
    mse = sum((zi - yi) ** 2 for zi, yi in zip(z, y_real, strict=True)) / 40
    # log-loss: -y log sigmoid(z) - (1 - y) log(1 - sigmoid(z))
    logloss = (
        sum(
            -yi * math.log(1 / (1 + math.exp(-zi))) - (1 - yi) * math.log(1 / (1 + math.exp(zi)))
            for zi, yi in zip(z, y01, strict=True)
        )
        / 40
    )
    assert _mean_loss(X, y_real, theta, "linear") == pytest.approx(mse, rel=1e-12)
    assert _mean_loss(X, y01, theta, "logistic") == pytest.approx(logloss, rel=1e-12)
    # cross-entropy of a softmax over 3 classes
    Theta = rng.normal(size=(3, 3))
    labels = rng.integers(0, 3, size=40)
    ce = 0.0
    for x, k in zip(X, labels, strict=True):
        scores = [float(np.dot(x, Theta[:, j])) for j in range(3)]
        ce += -scores[k] + math.log(sum(math.exp(s) for s in scores))
    assert _mean_loss(X, labels, Theta, "softmax") == pytest.approx(ce / 40, rel=1e-12)


def test_softmax_has_no_overflow_and_sums_to_one():
    Z = np.array([[1000.0, 1001.0, 999.0], [0.0, 0.0, 0.0]])
    P = _softmax(Z)
    e = [math.exp(-1.0), 1.0, math.exp(-2.0)]
    assert P[0] == pytest.approx([v / sum(e) for v in e], rel=1e-14)
    assert P[1] == pytest.approx([1 / 3] * 3, rel=1e-15)


def test_projection_and_ridge_gradient():
    theta = np.array([3.0, 4.0])
    assert _project(theta, None) is theta
    assert _project(theta, 10.0) is theta
    assert _project(theta, 1.0) == pytest.approx([0.6, 0.8], rel=1e-15)
    assert _l2_gradient(theta.copy(), 0.0, True) == 0.0
    assert _l2_gradient(theta.copy(), 0.5, False) == pytest.approx([1.5, 2.0])
    # the intercept (last) coefficient is not penalised
    assert _l2_gradient(theta.copy(), 0.5, True) == pytest.approx([1.5, 0.0])
