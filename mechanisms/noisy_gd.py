"""Noisy (full-batch) gradient descent for linear and logistic regression.

:class:`NoisyGD` runs projected gradient descent on the average loss and perturbs every
gradient with Gaussian noise.  Its privacy is the ``iterations``-fold composition of a
Gaussian mechanism on the summed per-example gradient, whose L2 sensitivity under
adding or removing one record is bounded either

* by **clipping** each per-example gradient to norm ``clip`` (Abadi et al. 2016,
  Algorithm 1, without subsampling), or
* in **closed form** from declared data bounds (``||x|| <= x_bound``, ``|y| <= y_bound``)
  and a projection of the parameter to a ball of radius ``theta_bound`` -- the
  data-independent NoisyGD that Wang 2018 compares with sufficient statistics
  perturbation; see :meth:`NoisyGD.sensitivity` for the formula.

The fitted model is returned as a :class:`FittedLinearModel`, shared with
:mod:`dpacct.mechanisms.dp_sgd`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import special

from dpacct.accountant._validation import (
    check_count,
    check_finite,
    check_flag,
    check_positive,
    check_rng,
)
from dpacct.mechanisms._regression_data import as_design_matrix, check_regression_data
from dpacct.mechanisms.algorithm import Algorithm, PlannedRelease
from dpacct.mechanisms.gaussian import GaussianMechanism

__all__ = ["FittedLinearModel", "NoisyGD"]


_LOSSES = ("linear", "logistic")


# ----------------------------------------------------------------------------------
# shared helpers (also used by mechanisms.dp_sgd)
# ----------------------------------------------------------------------------------


def _check_loss(loss: object) -> str:
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")
    return str(loss)


def _optional_positive(name: str, value: object) -> float | None:
    return None if value is None else check_positive(name, value)


def _check_data(
    X: object,
    y: object,
    loss: str,
    *,
    x_bound: float | None = None,
    y_bound: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a design matrix and targets; check declared bounds (never clip)."""
    return check_regression_data(
        X, y, labels01=loss == "logistic", x_bound=x_bound, y_bound=y_bound
    )


def _augment(X: np.ndarray, fit_intercept: bool) -> np.ndarray:
    if not fit_intercept:
        return X
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _residuals(Xa: np.ndarray, y: np.ndarray, theta: np.ndarray, loss: str) -> np.ndarray:
    """``r_i`` with per-example gradient ``r_i * x_i``: ``x.theta - y`` or ``sigmoid - y``."""
    z = Xa @ theta
    if loss == "linear":
        return z - y
    return special.expit(z) - y


def _clipped_gradient_sum(
    Xa: np.ndarray, y: np.ndarray, theta: np.ndarray, loss: str, clip: float | None
) -> np.ndarray:
    """Sum over rows of the per-example gradients, each clipped to L2 norm ``clip``.

    The per-example gradient of both losses is ``r_i x_i`` (a residual times the row),
    so its norm is ``|r_i| ||x_i||`` and the clipped sum is ``Xa^T (r * factor)``: no
    ``n x d`` matrix of gradients is formed.
    """
    r = _residuals(Xa, y, theta, loss)
    if clip is None:
        return Xa.T @ r
    norms = np.abs(r) * np.linalg.norm(Xa, axis=1)
    with np.errstate(divide="ignore"):
        factor = np.where(norms > clip, clip / np.where(norms > 0, norms, 1.0), 1.0)
    return Xa.T @ (r * factor)


def _project(theta: np.ndarray, radius: float | None) -> np.ndarray:
    if radius is None:
        return theta
    norm = float(np.linalg.norm(theta))
    return theta if norm <= radius else theta * (radius / norm)


def _l2_gradient(theta: np.ndarray, l2: float, fit_intercept: bool) -> np.ndarray:
    """Gradient of ``l2/2 * ||coef||^2`` (the intercept is not penalised)."""
    g = l2 * theta
    if fit_intercept:
        g = g.copy()
        g[-1] = 0.0
    return g


# ----------------------------------------------------------------------------------
# the fitted model
# ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FittedLinearModel:
    """A fitted linear or logistic regression model (the output of a private fit).

    Releasing or using it costs no further privacy (post-processing).

    Attributes
    ----------
    coef : numpy.ndarray
        Coefficients, shape ``(d,)``.
    intercept : float
        Intercept (0.0 when the model was fitted without one).
    loss : {"linear", "logistic"}
        The model family.

    Examples
    --------
    >>> import numpy as np
    >>> m = FittedLinearModel(coef=np.array([2.0, -1.0]), intercept=0.5, loss="linear")
    >>> m.predict(np.array([[1.0, 1.0], [0.0, 2.0]]))
    array([ 1.5, -1.5])
    >>> m.mse(np.array([[1.0, 1.0]]), np.array([2.5]))
    1.0
    """

    coef: np.ndarray
    intercept: float
    loss: Literal["linear", "logistic"]

    def __post_init__(self) -> None:
        coef = np.asarray(self.coef, dtype=float)
        if coef.ndim != 1 or not np.isfinite(coef).all():
            raise ValueError("coef must be a finite 1-d array")
        object.__setattr__(self, "coef", coef)
        object.__setattr__(self, "intercept", check_finite("intercept", self.intercept))
        object.__setattr__(self, "loss", _check_loss(self.loss))

    def _X(self, X: object) -> np.ndarray:
        X = as_design_matrix("X", X, n_features=self.coef.shape[0])
        return X

    def decision_function(self, X: object) -> np.ndarray:
        """The linear score ``X @ coef + intercept``."""
        return self._X(X) @ self.coef + self.intercept

    def predict(self, X: object) -> np.ndarray:
        """Predicted values (linear) or labels in {0, 1} (logistic)."""
        z = self.decision_function(X)
        if self.loss == "linear":
            return z
        return (z > 0).astype(float)

    def predict_proba(self, X: object) -> np.ndarray:
        """Probability of label 1 for each row (logistic only), shape ``(n,)``."""
        if self.loss != "logistic":
            raise ValueError("predict_proba needs loss='logistic', this model has loss='linear'")
        return special.expit(self.decision_function(X))

    def accuracy(self, X: object, y: object) -> float:
        """Fraction of correctly predicted labels (logistic only)."""
        if self.loss != "logistic":
            raise ValueError("accuracy needs loss='logistic', this model has loss='linear'")
        X, yy = _check_data(X, y, "logistic")
        return float(np.mean(self.predict(X) == yy))

    def mse(self, X: object, y: object) -> float:
        """Mean squared error of the predictions (of the probabilities for logistic)."""
        X, yy = _check_data(X, y, self.loss)
        pred = self.predict_proba(X) if self.loss == "logistic" else self.predict(X)
        return float(np.mean((pred - yy) ** 2))

    def score(self, X: object, y: object) -> float:
        """As scikit-learn: accuracy for logistic, coefficient of determination R^2 for linear."""
        if self.loss == "logistic":
            return self.accuracy(X, y)
        X, yy = _check_data(X, y, "linear")
        ss_res = float(np.sum((self.predict(X) - yy) ** 2))
        ss_tot = float(np.sum((yy - yy.mean()) ** 2))
        return 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else -math.inf)


# ----------------------------------------------------------------------------------
# NoisyGD
# ----------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class NoisyGD(Algorithm):
    """Full-batch noisy gradient descent for linear (squared loss) or logistic regression.

    Minimises ``(1/n) sum_i l(theta; x_i, y_i) + (l2/2) ||coef||^2`` with
    ``l = (x.theta - y)^2 / 2`` (``loss="linear"``) or the logistic loss
    ``log(1 + e^{x.theta}) - y x.theta`` with labels in {0, 1} (``loss="logistic"``).
    Each of the ``iterations`` steps is (projected) gradient descent with a noisy gradient

        theta <- P( theta - learning_rate * ((S(theta) + N(0, (sigma Delta)^2 I)) / n
                                             + l2 * coef) ),

    where ``S`` is the sum of the per-example gradients and ``Delta`` its L2 sensitivity
    (:attr:`sensitivity`), ``P`` the projection onto the ball of radius ``theta_bound``
    (identity when ``theta_bound`` is None).  This is DP-SGD of Abadi et al. 2016
    (Algorithm 1) with sampling rate 1 (every step uses the whole data set), the noisy
    gradient descent studied by Bassily, Smith & Thakurta 2014 and used as a baseline by
    Wang 2018.  The intercept (when ``fit_intercept``) is the last coordinate of
    ``theta``, a constant feature 1.

    **Privacy.**  Each step releases ``S`` plus Gaussian noise of standard deviation
    ``sigma * Delta``: a ``GaussianMechanism(sigma=sigma)`` on a unit-sensitivity query.
    Everything else is post-processing, so the algorithm's privacy is exactly
    ``compose([GaussianMechanism(sigma)], counts=[iterations])``, which is
    ``GaussianMechanism(sigma / sqrt(iterations))`` (Gaussian DP composition, Dong, Roth
    & Su 2019, Corollary 3.3).  Neighbouring datasets differ by adding or removing one
    record; the dataset size ``n`` used to average the gradient is treated as public,
    as in Abadi et al. 2016 and Wang 2018.

    **Sensitivity.**  Give exactly one of

    * ``clip = C``: every per-example gradient is scaled down to norm at most ``C``, so
      ``Delta = C`` whatever the data;
    * ``x_bound`` (with ``y_bound`` and ``theta_bound`` for linear regression): the data
      must satisfy ``||x_i|| <= x_bound`` and ``|y_i| <= y_bound`` (checked: ``fit``
      raises rather than clipping), the iterates are projected onto
      ``||theta|| <= theta_bound``, and ``Delta`` is the closed-form bound of
      :attr:`sensitivity`; no clipping happens.

    The returned model is the average of the iterates ``theta_1 .. theta_T``
    (``average=True``, default; Polyak-Ruppert averaging smooths the injected noise) or
    the last iterate (``average=False``).  The starting point is ``theta_0 = 0``.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0: noise std over the sensitivity ``Delta``.
    iterations : int
        Number of gradient steps ``T``, >= 1.
    loss : {"linear", "logistic"}
        Squared loss (linear regression) or logistic loss (labels in {0, 1}).
    clip : float, optional
        Per-example gradient clipping norm ``C`` > 0.
    x_bound, y_bound, theta_bound : float, optional
        Declared bounds for the data-independent variant (see above); ``theta_bound``
        may also be given with ``clip`` to project the iterates.
    learning_rate : float
        Step size, > 0 (default 1.0; with rows of norm <= 1 the average loss is
        1-smooth (linear) or 1/4-smooth (logistic)).
    l2 : float
        Ridge penalty ``l2/2 ||coef||^2`` on the coefficients (not the intercept), >= 0.
    fit_intercept : bool
        Fit an intercept (a constant feature 1, counted in the sensitivity).
    average : bool
        Return the average of the iterates (True) or the last iterate.

    Examples
    --------
    Linear regression with clipping, at epsilon about 1.4 (delta = 1e-5):

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)) / 2
    >>> X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    >>> y = X @ np.array([1.0, -0.5, 0.25]) + 0.1 * rng.normal(size=2000)
    >>> gd = NoisyGD(sigma=20.0, iterations=50, loss="linear", clip=1.0)
    >>> round(gd.epsilon(1e-5), 2)
    1.36
    >>> fit = gd.fit(X, y, rng=rng)
    >>> bool(np.abs(fit.coef - [1.0, -0.5, 0.25]).max() < 0.15)
    True

    The data-independent variant: declared bounds instead of clipping.

    >>> gd2 = NoisyGD(sigma=20.0, iterations=50, loss="linear", x_bound=1.0,
    ...               y_bound=3.0, theta_bound=2.0, fit_intercept=False)
    >>> gd2.sensitivity  # x_bound * (theta_bound * x_bound + y_bound)
    5.0
    >>> gd2.fit(X, y, rng=rng).coef.shape
    (3,)
    """

    sigma: float
    iterations: int
    loss: Literal["linear", "logistic"]
    clip: float | None = None
    x_bound: float | None = None
    y_bound: float | None = None
    theta_bound: float | None = None
    learning_rate: float = 1.0
    l2: float = 0.0
    fit_intercept: bool = True
    average: bool = True

    def __post_init__(self) -> None:
        _check_sensitivity_fields(self)
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "iterations", check_count(self.iterations, "iterations"))
        object.__setattr__(self, "average", check_flag("average", self.average))

    # ---------------------------------------------------------------- privacy
    @property
    def sensitivity(self) -> float:
        """L2 sensitivity ``Delta`` of the summed gradient (add/remove one record).

        With ``clip``: ``Delta = clip``.  With declared bounds, write ``B = x_bound``
        without an intercept and ``B = sqrt(x_bound^2 + 1)`` with one (the augmented row
        ``(x, 1)``).  The per-example gradient is ``r * x`` with

        * linear: ``r = x.theta - y``, so ``||grad|| <= B (theta_bound B + y_bound)``
          (Cauchy-Schwarz and ``||theta|| <= theta_bound`` after projection);
        * logistic: ``r = sigmoid(x.theta) - y`` in ``(-1, 1)``, so ``||grad|| <= B``.

        Adding or removing a record changes the sum by one such gradient.
        """
        if self.clip is not None:
            return self.clip
        assert self.x_bound is not None
        b = math.hypot(self.x_bound, 1.0) if self.fit_intercept else self.x_bound
        if self.loss == "logistic":
            return b
        assert self.theta_bound is not None and self.y_bound is not None
        return b * (self.theta_bound * b + self.y_bound)

    @property
    def noise_std(self) -> float:
        """Standard deviation of the noise added to the gradient sum: ``sigma * Delta``."""
        return self.sigma * self.sensitivity

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """``iterations`` releases of the gradient sum by ``GaussianMechanism(sigma)`` at
        sensitivity :attr:`sensitivity` (noise std ``sigma * Delta``)."""
        return (
            PlannedRelease(
                "gradient sum",
                GaussianMechanism(sigma=self.sigma),
                self.iterations,
                sensitivity=self.sensitivity,
            ),
        )

    # ---------------------------------------------------------------- running
    def fit(self, X: object, y: object, *, rng: np.random.Generator) -> FittedLinearModel:
        """Run noisy gradient descent on ``(X, y)``.

        Parameters
        ----------
        X : array_like, shape (n, d)
            Features, finite; within ``x_bound`` when declared.
        y : array_like, shape (n,)
            Targets (linear) or labels in {0, 1} (logistic); within ``y_bound`` when
            declared.
        rng : numpy.random.Generator
            Source of the noise.

        Returns
        -------
        FittedLinearModel
            The averaged (or last) iterate.
        """
        rng = check_rng(rng)
        X, yy = _check_data(X, y, self.loss, x_bound=self.x_bound, y_bound=self.y_bound)
        n = X.shape[0]
        Xa = _augment(X, self.fit_intercept)
        theta = np.zeros(Xa.shape[1])
        total = np.zeros_like(theta)
        session = self.releases(rng)
        for _ in range(self.iterations):
            g = _clipped_gradient_sum(Xa, yy, theta, self.loss, self.clip)
            noisy = session.release("gradient sum", g)
            step = noisy / n + _l2_gradient(theta, self.l2, self.fit_intercept)
            theta = _project(theta - self.learning_rate * step, self.theta_bound)
            total += theta
        session.finish()
        final = total / self.iterations if self.average else theta
        return _to_model(final, self.fit_intercept, self.loss)


def _to_model(theta: np.ndarray, fit_intercept: bool, loss: str) -> FittedLinearModel:
    if fit_intercept:
        return FittedLinearModel(coef=theta[:-1].copy(), intercept=float(theta[-1]), loss=loss)
    return FittedLinearModel(coef=theta.copy(), intercept=0.0, loss=loss)


def _check_sensitivity_fields(alg) -> None:
    """Validate the fields shared by NoisyGD and DP-SGD (clip, bounds, step size, ...)."""
    object.__setattr__(alg, "loss", _check_loss(alg.loss))
    for name in ("clip", "x_bound", "y_bound", "theta_bound"):
        if hasattr(alg, name):
            object.__setattr__(alg, name, _optional_positive(name, getattr(alg, name)))
    object.__setattr__(alg, "learning_rate", check_positive("learning_rate", alg.learning_rate))
    l2 = check_finite("l2", alg.l2)
    if l2 < 0:
        raise ValueError(f"l2 must lie in [0, inf), got {l2!r}")
    object.__setattr__(alg, "l2", l2)
    object.__setattr__(alg, "fit_intercept", check_flag("fit_intercept", alg.fit_intercept))
    x_bound = getattr(alg, "x_bound", None)
    if (alg.clip is None) == (x_bound is None):
        raise ValueError(
            "give exactly one of clip (per-example gradient clipping) or x_bound "
            f"(declared data bounds), got clip={alg.clip!r}, x_bound={x_bound!r}"
        )
    y_bound = getattr(alg, "y_bound", None)
    if x_bound is None:
        if y_bound is not None:
            raise ValueError("y_bound is only used with x_bound (declared bounds), not with clip")
    elif alg.loss == "linear":
        if y_bound is None or alg.theta_bound is None:
            raise ValueError(
                "loss='linear' with x_bound needs y_bound and theta_bound (the gradient "
                f"bound depends on both), got y_bound={y_bound!r}, "
                f"theta_bound={alg.theta_bound!r}"
            )
    elif y_bound is not None:
        raise ValueError("y_bound is not used by loss='logistic' (labels are in {0, 1})")
