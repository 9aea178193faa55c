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
:mod:`dpacct.mechanisms.algorithms.dp_sgd`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import special

from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.transformers.compose import compose
from dpacct.accountant.validation import (
    check_count,
    check_delta,
    check_finite,
    check_flag,
    check_positive,
    check_rng,
)
from dpacct.mechanisms.algorithms._regression_data import (
    as_design_matrix,
    binary_coding,
    check_class_labels,
    check_feature_names,
    feature_names,
    select_features,
)
from dpacct.mechanisms.algorithms._training_common import (  # noqa: F401 (re-exported for dp_sgd)
    _LOSSES,
    _augment,
    _check_data,
    _check_loss,
    _check_sensitivity_fields,
    _clipped_gradient_sum,
    _l2_gradient,
    _mean_loss,
    _norm,
    _optional_positive,
    _project,
    _residuals,
    _softmax,
)
from dpacct.mechanisms.algorithms.algorithm import Algorithm, PlannedRelease, ReleaseSession
from dpacct.mechanisms.primitives.gaussian import GaussianMechanism

__all__ = ["FittedLinearModel", "NoisyGD", "TrainingHistory"]

#: iterations whose noise one ``release_many`` call draws (rows of at most d x K floats)
_NOISE_BLOCK = 1024


# ----------------------------------------------------------------------------------
# the fitted model
# ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingHistory:
    """What a training run recorded at selected iterations.

    Each parameter is an attribute of the same name.

    Parameters
    ----------
    iteration : numpy.ndarray
        The iterations ``t`` recorded (1-based; the last is the final iteration).
    epsilon : numpy.ndarray or None
        Epsilon spent after ``t`` iterations at :attr:`delta`: the composition of the
        first ``t`` planned releases (``compose([step], counts=[t]).epsilon(delta)``);
        None when no delta was given.
    loss : numpy.ndarray
        The model's loss after ``t`` iterations (of the model that stopping there would
        return: the running average of the iterates when ``average=True``): mean
        squared error (linear), log-loss (logistic) or cross-entropy (softmax), on the
        evaluation set when one was given, else on the training data.  **A loss on the
        training data is not a private output** (it reads the data without noise): use
        it to diagnose, publish held-out losses.
    noise_std : numpy.ndarray
        Standard deviation of the noise added to the gradient sum at iteration ``t``
        (``sigma * Delta``, or ``sigma * GS_t`` with adaptive sensitivity).
    delta : float or None
        The delta of :attr:`epsilon`.

    Examples
    --------
    >>> h = TrainingHistory(np.array([1, 2]), None, np.array([0.5, 0.4]),
    ...                     np.array([1.0, 1.0]), None)
    >>> h.iteration.tolist(), h.loss.tolist()
    ([1, 2], [0.5, 0.4])
    """

    iteration: np.ndarray
    epsilon: np.ndarray | None
    loss: np.ndarray
    noise_std: np.ndarray
    delta: float | None


@dataclass(frozen=True, eq=False)
class FittedLinearModel:
    """A fitted linear, logistic or softmax regression model (the output of a private fit).

    Releasing or using it costs no further privacy (post-processing).  Each parameter
    is an attribute of the same name.

    Parameters
    ----------
    coef : numpy.ndarray
        Coefficients, shape ``(d,)``; ``(d, K)`` for ``loss="softmax"`` (one column per
        class).
    intercept : float or numpy.ndarray
        Intercept (0.0 when the model was fitted without one); shape ``(K,)`` for softmax.
    loss : {"linear", "logistic", "softmax"}
        The model family.
    label_coding : {"01", "pm1"}
        Binary labels as given to the fit: ``predict`` returns labels in {0, 1} or in
        {-1, +1} accordingly (logistic only; keyword-only, default "01").
    history : TrainingHistory or None
        What the fit recorded along the way (keyword-only; None if nothing was asked).
    feature_names_in_ : numpy.ndarray or None
        The column names of the table the model was fitted on (keyword-only, as
        scikit-learn), or None (fitted on an array).  A table given to any method below
        is then read by name (reordered to this order; a missing or unexpected column
        raises ``ValueError``; ``select_features`` in
        :mod:`dpacct.mechanisms.algorithms._regression_data`).

    Examples
    --------
    >>> import numpy as np
    >>> m = FittedLinearModel(coef=np.array([2.0, -1.0]), intercept=0.5, loss="linear")
    >>> m.predict(np.array([[1.0, 1.0], [0.0, 2.0]]))
    array([ 1.5, -1.5])
    >>> m.mse(np.array([[1.0, 1.0]]), np.array([2.5]))
    1.0
    >>> s = FittedLinearModel(coef=np.array([[1.0, -1.0, 0.0]]), intercept=np.zeros(3),
    ...                       loss="softmax")
    >>> s.predict(np.array([[2.0], [-2.0]])).tolist()
    [0, 1]
    """

    coef: np.ndarray
    intercept: float | np.ndarray
    loss: Literal["linear", "logistic", "softmax"]
    label_coding: str = field(default="01", kw_only=True)
    history: TrainingHistory | None = field(default=None, kw_only=True, repr=False)
    feature_names_in_: np.ndarray | None = field(default=None, kw_only=True, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "loss", _check_loss(self.loss))
        coef = np.asarray(self.coef, dtype=float)
        object.__setattr__(self, "feature_names_in_",
                           check_feature_names(self.feature_names_in_, coef.shape[0]))
        if self.loss == "softmax":
            if coef.ndim != 2 or not np.isfinite(coef).all():
                raise ValueError("coef must be a finite 2-d array (d, n_classes) for softmax")
            icpt = np.asarray(self.intercept, dtype=float)
            if icpt.shape != (coef.shape[1],) or not np.isfinite(icpt).all():
                raise ValueError(
                    f"intercept must be a finite array of shape ({coef.shape[1]},) for "
                    f"softmax, got shape {icpt.shape}"
                )
            object.__setattr__(self, "intercept", icpt)
        else:
            if coef.ndim != 1 or not np.isfinite(coef).all():
                raise ValueError("coef must be a finite 1-d array")
            object.__setattr__(self, "intercept", check_finite("intercept", self.intercept))
        object.__setattr__(self, "coef", coef)
        if self.label_coding not in ("01", "pm1"):
            raise ValueError(f"label_coding must be '01' or 'pm1', got {self.label_coding!r}")

    @property
    def n_classes(self) -> int | None:
        """Number of classes (softmax), 2 (logistic) or None (linear)."""
        if self.loss == "softmax":
            return int(self.coef.shape[1])
        return 2 if self.loss == "logistic" else None

    @property
    def n_features_in_(self) -> int:
        """Number of features seen at fit (as scikit-learn)."""
        return int(self.coef.shape[0])

    def _X(self, X: object) -> np.ndarray:
        X = select_features(X, self.feature_names_in_)
        return as_design_matrix("X", X, n_features=self.coef.shape[0])

    def _labels(self, X: object, y: object) -> tuple[np.ndarray, np.ndarray]:
        Xa = self._X(X)
        if self.loss == "softmax":
            return Xa, check_class_labels(y, Xa.shape[0], int(self.coef.shape[1]))
        return _check_data(Xa, y, self.loss)

    def decision_function(self, X: object) -> np.ndarray:
        """The linear score ``X @ coef + intercept``, shape ``(n,)`` or ``(n, K)``.

        Parameters
        ----------
        X : array_like
            Design matrix, shape ``(n, d)``, finite.
        """
        return self._X(X) @ self.coef + self.intercept

    def predict(self, X: object) -> np.ndarray:
        """Predicted values, labels or class indices.

        Values (linear), labels in the fit's coding (logistic) or class indices
        ``0 .. K-1`` (softmax).

        Parameters
        ----------
        X : array_like
            Design matrix, shape ``(n, d)``, finite.
        """
        z = self.decision_function(X)
        if self.loss == "linear":
            return z
        if self.loss == "softmax":
            return np.argmax(z, axis=1)
        labels = (z > 0).astype(float)
        return 2.0 * labels - 1.0 if self.label_coding == "pm1" else labels

    def predict_proba(self, X: object) -> np.ndarray:
        """Probability of label 1 (logistic, ``(n,)``) or of each class (softmax, ``(n, K)``).

        Parameters
        ----------
        X : array_like
            Design matrix, shape ``(n, d)``, finite.
        """
        if self.loss == "linear":
            raise ValueError("predict_proba needs loss='logistic' or 'softmax', this model "
                             "has loss='linear'")
        z = self.decision_function(X)
        return special.expit(z) if self.loss == "logistic" else _softmax(z)

    def accuracy(self, X: object, y: object) -> float:
        """Fraction of correctly predicted labels (logistic: {0, 1} or {-1, +1}; softmax).

        Parameters
        ----------
        X : array_like
            Design matrix, shape ``(n, d)``, finite.
        y : array_like
            Labels or targets, shape ``(n,)``, coded as in the fit.
        """
        if self.loss == "linear":
            raise ValueError("accuracy needs loss='logistic' or 'softmax', this model has "
                             "loss='linear'")
        X, yy = self._labels(X, y)
        z = X @ self.coef + self.intercept
        pred = np.argmax(z, axis=1) if self.loss == "softmax" else (z > 0).astype(float)
        return float(np.mean(pred == yy))

    def mse(self, X: object, y: object) -> float:
        """Mean squared error of the predictions (of the probabilities for logistic).

        Parameters
        ----------
        X : array_like
            Design matrix, shape ``(n, d)``, finite.
        y : array_like
            Labels or targets, shape ``(n,)``, coded as in the fit.
        """
        if self.loss == "softmax":
            raise ValueError("mse is not defined for loss='softmax': use accuracy or log_loss")
        X, yy = self._labels(X, y)
        z = X @ self.coef + self.intercept
        pred = special.expit(z) if self.loss == "logistic" else z
        return float(np.mean((pred - yy) ** 2))

    def log_loss(self, X: object, y: object) -> float:
        """Mean log-loss (logistic) or cross-entropy (softmax) on ``(X, y)``.

        Parameters
        ----------
        X : array_like
            Design matrix, shape ``(n, d)``, finite.
        y : array_like
            Labels or targets, shape ``(n,)``, coded as in the fit.
        """
        if self.loss == "linear":
            raise ValueError("log_loss needs loss='logistic' or 'softmax'")
        X, yy = self._labels(X, y)
        theta = np.vstack([self.coef, np.atleast_1d(self.intercept)[None, :]]) \
            if self.loss == "softmax" else np.append(self.coef, self.intercept)
        return _mean_loss(_augment(X, True), yy, theta, self.loss)

    def score(self, X: object, y: object) -> float:
        """As scikit-learn: accuracy for classifiers, R^2 for linear regression.

        Parameters
        ----------
        X : array_like
            Design matrix, shape ``(n, d)``, finite.
        y : array_like
            Labels or targets, shape ``(n,)``, coded as in the fit.
        """
        if self.loss != "linear":
            return self.accuracy(X, y)
        X, yy = self._labels(X, y)
        ss_res = float(np.sum((X @ self.coef + self.intercept - yy) ** 2))
        ss_tot = float(np.sum((yy - yy.mean()) ** 2))
        return 1.0 - ss_res / ss_tot if ss_tot > 0 else (1.0 if ss_res == 0 else -math.inf)


# ----------------------------------------------------------------------------------
# NoisyGD
# ----------------------------------------------------------------------------------


@register_mechanism("noisy_gd")
@dataclass(frozen=True, repr=False)
class NoisyGD(Algorithm):
    """Full-batch noisy gradient descent for linear, logistic or softmax regression.

    Minimises ``(1/n) sum_i l(theta; x_i, y_i) + (l2/2) ||coef||^2`` with

    * ``loss="linear"``: ``l = (x.theta - y)^2 / 2``;
    * ``loss="logistic"``: ``log(1 + e^{x.theta}) - y x.theta``, labels coded {0, 1} or
      {-1, +1} (``-1`` is read as 0; the fitted model predicts in the coding it was
      given);
    * ``loss="softmax"``: multinomial cross-entropy ``logsumexp(x Theta) - (x
      Theta)_y`` for ``n_classes = K`` classes, labels in ``{0, ..., K-1}``, ``Theta``
      a ``d x K`` matrix (one column per class).

    Each of the ``iterations`` steps is (projected) gradient descent with a noisy gradient

        theta <- P( theta - learning_rate * ((S(theta) + N(0, (sigma Delta)^2 I)) / n
                                             + l2 * coef) ),

    where ``S`` is the sum of the per-example gradients and ``Delta`` its L2 sensitivity
    (:attr:`sensitivity`), ``P`` the projection onto the ball of radius ``theta_bound``
    (identity when ``theta_bound`` is None).  **The learning rate multiplies the
    averaged gradient** ``S / n`` (not the sum), so its natural scale does not depend
    on ``n``: with rows of norm <= 1 the averaged squared loss is at most 1-smooth and
    any rate below 2 is stable.  This is DP-SGD of Abadi et al. 2016 (Algorithm 1)
    with sampling rate 1 (every step uses the whole data set), the noisy gradient
    descent studied by Bassily, Smith & Thakurta 2014 and used as a baseline by Wang
    2018.  The intercept (when ``fit_intercept``) is the last row of ``theta``, a
    constant feature 1.

    **Privacy.**  Each step releases ``S`` plus Gaussian noise of standard deviation
    ``sigma * Delta``: a ``GaussianMechanism(sigma=sigma)`` on a unit-sensitivity query.
    Everything else is post-processing, so the algorithm's privacy is exactly
    ``compose([GaussianMechanism(sigma)], counts=[iterations])``, which is
    ``GaussianMechanism(sigma / sqrt(iterations))`` (Gaussian DP composition, Dong, Roth
    & Su 2019, Corollary 3.3).  Neighbouring datasets differ by adding or removing one
    record; the dataset size ``n`` used to average the gradient is treated as public,
    as in Abadi et al. 2016 and Wang 2018.

    **Sensitivity.**  Give exactly one of

    * ``clip = C``: every per-example gradient is scaled down to (Frobenius) norm at
      most ``C``, so ``Delta = C`` whatever the data;
    * ``x_bound`` (with ``y_bound`` for linear regression): the data must satisfy
      ``||x_i|| <= x_bound`` and ``|y_i| <= y_bound`` (checked: ``fit`` raises, or with
      ``out_of_range="clip"`` scales rows and clips targets to the bounds -- a
      per-record map with public bounds, so the sensitivity holds for the mapped data)
      and ``Delta`` is the closed form of :attr:`sensitivity`.  For linear regression
      the gradient bound depends on ``||theta||``:

      - with ``theta_bound`` the iterates are projected onto ``||theta|| <=
        theta_bound`` and ``Delta = B (theta_bound B + y_bound)`` is fixed;
      - without it (``adaptive``, the default then) step ``t`` uses
        ``GS_t = B (B ||theta_t|| + y_bound)``, a bound computed from earlier releases
        only: the step releases ``S / GS_t`` through ``GaussianMechanism(sigma)`` and the
        privacy is unchanged (the argument, and why the iterates may then grow:
        docs/theory/algorithms.md, section 'NoisyGD').

      ``B = x_bound`` without an intercept, ``sqrt(x_bound^2 + 1)`` with one.

    The returned model is the average of the iterates ``theta_1 .. theta_T``
    (``average=True``, default; Polyak-Ruppert averaging smooths the injected noise) or
    the last iterate (``average=False``).  The starting point is ``theta_0 = 0``.
    Both are post-processing of the same releases: the privacy is the same.

    The average is the default because it never fails badly, while the last iterate can
    (pass ``average=False`` for a run whose learning rate was tuned for its last iterate);
    the measurements behind this choice: docs/theory/algorithms.md, section 'NoisyGD'.

    Parameters
    ----------
    sigma : float
        Noise multiplier, > 0: noise std over the sensitivity ``Delta``.
    iterations : int
        Number of gradient steps ``T``, >= 1.
    loss : {"linear", "logistic", "softmax"}
        Squared loss, logistic loss or multinomial cross-entropy.
    clip : float, optional
        Per-example gradient clipping norm ``C`` > 0.
    x_bound, y_bound, theta_bound : float, optional
        Declared bounds (see above); ``theta_bound`` may also be given with ``clip`` to
        project the iterates.
    learning_rate : float
        Step size on the *averaged* gradient, > 0 (default 1.0).
    l2 : float
        Ridge penalty ``l2/2 ||coef||^2`` on the coefficients (not the intercept), >= 0.
    fit_intercept : bool
        Fit an intercept (a constant feature 1, counted in the sensitivity).
    average : bool
        Return the average of the iterates (True) or the last iterate.
    n_classes : int, optional
        Number of classes ``K >= 2`` for ``loss="softmax"`` (public; required there).
    adaptive : bool, optional
        Linear regression with ``x_bound``: use ``GS_t`` per step (True) or the fixed
        ``theta_bound`` formula (False).  Default: adaptive exactly when no
        ``theta_bound`` is given.
    out_of_range : {"raise", "clip"}
        Data outside the declared ``x_bound`` / ``y_bound``: raise (default) or clip.

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

    Adaptive sensitivity (no ``theta_bound``) and a history of the privacy spent:

    >>> gd3 = NoisyGD(sigma=20.0, iterations=50, loss="linear", x_bound=1.0, y_bound=3.0)
    >>> gd3.adaptive, gd3.sensitivity      # the released query is S / GS_t
    (True, 1.0)
    >>> fit3 = gd3.fit(X, y, rng=rng, delta=1e-5, record_every=10)
    >>> fit3.history.iteration.tolist()
    [10, 20, 30, 40, 50]
    >>> bool(np.isclose(fit3.history.epsilon[-1], gd3.epsilon(1e-5)))
    True
    """

    sigma: float
    iterations: int
    loss: Literal["linear", "logistic", "softmax"]
    clip: float | None = None
    x_bound: float | None = None
    y_bound: float | None = None
    theta_bound: float | None = None
    learning_rate: float = 1.0
    l2: float = 0.0
    fit_intercept: bool = True
    average: bool = True
    n_classes: int | None = None
    adaptive: bool | None = None
    out_of_range: str = "raise"

    def __post_init__(self) -> None:
        _check_sensitivity_fields(self)
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))
        object.__setattr__(self, "iterations", check_count(self.iterations, "iterations"))
        object.__setattr__(self, "average", check_flag("average", self.average))

    # ---------------------------------------------------------------- privacy
    @property
    def row_bound(self) -> float | None:
        """``B``: bound on the augmented row's norm; None with clipping.

        ``x_bound``, or ``sqrt(x_bound^2 + 1)`` with an intercept.
        """
        if self.x_bound is None:
            return None
        return math.hypot(self.x_bound, 1.0) if self.fit_intercept else self.x_bound

    @property
    def sensitivity(self) -> float:
        """L2 sensitivity ``Delta`` of the released query (add/remove one record).

        With ``clip``: ``Delta = clip``.  With declared bounds (``B`` =
        :attr:`row_bound`) the per-example gradient is ``x r^T`` with

        * linear: ``r = x.theta - y``, so ``||grad|| <= B (||theta|| B + y_bound)``
          (Cauchy-Schwarz); with ``theta_bound`` (iterates projected) ``Delta = B
          (theta_bound B + y_bound)``; adaptive: the query is ``S / GS_t`` with ``GS_t =
          B (||theta_t|| B + y_bound)``, so ``Delta = 1``;
        * logistic: ``r = sigmoid(x.theta) - y`` in ``(-1, 1)``, so ``||grad|| <= B``;
        * softmax: ``r = softmax(x Theta) - e_y`` with ``||r||_2^2 = sum_k p_k^2 - 2 p_y
          + 1 <= (1 - p_y)^2 + (1 - p_y)^2 <= 2``, so ``||grad||_F <= sqrt(2) B``.

        Adding or removing a record changes the sum by one such gradient.
        """
        if self.clip is not None:
            return self.clip
        b = self.row_bound
        assert b is not None
        if self.loss == "logistic":
            return b
        if self.loss == "softmax":
            return math.sqrt(2.0) * b
        if self.adaptive:
            return 1.0
        assert self.theta_bound is not None and self.y_bound is not None
        return b * (self.theta_bound * b + self.y_bound)

    def adaptive_sensitivity(self, theta_norm: float) -> float:
        """``GS_t = B (B ||theta_t|| + y_bound)`` for an iterate of norm ``theta_norm``.

        Parameters
        ----------
        theta_norm : float
            L2 norm of the current iterate, >= 0.

        Examples
        --------
        >>> NoisyGD(sigma=1.0, iterations=1, loss="linear", x_bound=1.0, y_bound=1.0,
        ...         fit_intercept=False).adaptive_sensitivity(2.0)
        3.0
        """
        b = self.row_bound
        if b is None or self.y_bound is None:
            raise ValueError("adaptive_sensitivity needs x_bound and y_bound (linear loss)")
        return b * (b * float(theta_norm) + self.y_bound)

    @property
    def noise_std(self) -> float:
        """Standard deviation of the noise added to the gradient sum: ``sigma * Delta``.

        Raises ``ValueError`` with adaptive sensitivity (the std ``sigma * GS_t`` changes
        every step; ``fit(..., record_every=1).history.noise_std`` lists it).
        """
        if self.adaptive:
            raise ValueError(
                "adaptive sensitivity: the noise std is sigma * GS_t and changes every "
                "iteration (see the fit's history.noise_std)"
            )
        return self.sigma * self.sensitivity

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """``iterations`` releases of the gradient sum by ``GaussianMechanism(sigma)``.

        At sensitivity :attr:`sensitivity` (noise std ``sigma * Delta``).
        """
        return (
            PlannedRelease(
                "gradient sum",
                GaussianMechanism(sigma=self.sigma),
                self.iterations,
                sensitivity=self.sensitivity,
            ),
        )

    # ---------------------------------------------------------------- running
    def fit(
        self,
        X: object,
        y: object,
        *,
        rng: np.random.Generator,
        delta: float | None = None,
        record_every: int | None = None,
        eval_set: tuple[object, object] | None = None,
        callback: Callable[[int, FittedLinearModel, float | None], None] | None = None,
    ) -> FittedLinearModel:
        """Run noisy gradient descent on ``(X, y)``.

        Parameters
        ----------
        X : array_like, shape (n, d)
            Features, finite; within ``x_bound`` when declared.
        y : array_like, shape (n,)
            Targets (linear), labels in {0, 1} or {-1, +1} (logistic), class indices
            (softmax); within ``y_bound`` when declared.
        rng : numpy.random.Generator
            Source of the noise.
        delta : float, optional
            In (0, 1): record the epsilon spent so far (at this delta) in the history.
        record_every : int, optional
            Record every ``record_every`` iterations (and the last); default
            ``max(1, iterations // 100)`` when anything is recorded.
        eval_set : (X_eval, y_eval), optional
            Data on which the history's loss is measured (default: the training data --
            a non-private diagnostic, see :class:`TrainingHistory`).
        callback : callable, optional
            ``callback(t, model, epsilon)`` at every recorded iteration, ``model`` the
            :class:`FittedLinearModel` that stopping there would return, ``epsilon`` the
            privacy spent (None without ``delta``).

        Returns
        -------
        FittedLinearModel
            The averaged (or last) iterate; ``history`` holds a
            :class:`TrainingHistory` when ``delta``, ``record_every``, ``eval_set`` or
            ``callback`` was given.
        """
        rng = check_rng(rng)
        names = feature_names(X)
        X, yy = _check_data(X, y, self.loss, x_bound=self.x_bound, y_bound=self.y_bound,
                            n_classes=self.n_classes, out_of_range=self.out_of_range)
        coding = binary_coding(y) if self.loss == "logistic" else "01"
        if delta is not None:
            delta = check_delta(delta, what="NoisyGD (Gaussian noise)")
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable, got {callback!r}")
        recording = any(v is not None for v in (delta, record_every, eval_set, callback))
        every = (max(1, self.iterations // 100) if record_every is None
                 else check_count(record_every, "record_every"))
        Xe, ye = (X, yy) if eval_set is None else self._eval_set(eval_set, X.shape[1], names)
        Xe_aug = _augment(Xe, self.fit_intercept)

        Xa = _augment(X, self.fit_intercept)
        adaptive = bool(self.adaptive)
        step_mech = self.plan[0].mechanism
        hist: dict[str, list] = {"t": [], "eps": [], "loss": [], "std": []}
        fixed_std = None if adaptive else self.sigma * self.sensitivity

        def record(t: int, theta: np.ndarray, total: np.ndarray, gs: float) -> None:
            current = total / t if self.average else theta
            eps = (None if delta is None
                   else float(compose([step_mech], counts=[t]).epsilon(delta)))
            hist["t"].append(t)
            hist["eps"].append(eps)
            hist["loss"].append(_mean_loss(Xe_aug, ye, current, self.loss))
            hist["std"].append(self.sigma * gs if adaptive else fixed_std)
            if callback is not None:
                callback(t, _to_model(current, self.fit_intercept, self.loss, coding,
                                      names=names), eps)

        session = self.releases(rng)
        theta, total = self._descend(Xa, yy, session, record if recording else None, every)
        session.finish()
        final = total / self.iterations if self.average else theta
        history = None
        if recording:
            history = TrainingHistory(
                iteration=np.array(hist["t"], dtype=np.int64),
                epsilon=None if delta is None else np.array(hist["eps"], dtype=float),
                loss=np.array(hist["loss"], dtype=float),
                noise_std=np.array(hist["std"], dtype=float),
                delta=delta,
            )
        return _to_model(final, self.fit_intercept, self.loss, coding, history=history,
                         names=names)

    def _eval_set(self, eval_set: object, d: int, names: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray]:
        """The validated ``(X_eval, y_eval)``, a table read by the training columns' names."""
        try:
            Xe, ye = eval_set  # type: ignore[misc]
        except (TypeError, ValueError) as exc:
            raise TypeError("eval_set must be a pair (X_eval, y_eval)") from exc
        Xe = select_features(Xe, names, "fit's training data")
        Xe, ye = _check_data(Xe, ye, self.loss, n_classes=self.n_classes)
        if Xe.shape[1] != d:
            raise ValueError(f"eval_set X must have {d} columns, got {Xe.shape[1]}")
        return Xe, ye

    def _descend(
        self,
        Xa: np.ndarray,
        yy: np.ndarray,
        session: ReleaseSession,
        record: Callable[[int, np.ndarray, np.ndarray, float], None] | None,
        every: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The iterations: ``(last iterate, sum of the iterates)``.

        ``record(t, theta, total, GS_t)`` runs every ``every`` iterations and at the last.
        The noise is drawn ahead in blocks through the planned release
        (:meth:`ReleaseSession.release_many`: the same numbers as one release per
        iteration, the draws do not depend on the data); every step then adds its row
        operation for operation, in place: ``g = A theta - b`` (squared loss, declared
        bounds: the sufficient statistics) or the clipped sum, ``g + z`` or ``(g / GS_t +
        z) GS_t``, then ``theta - lr (g / n + l2 theta)``, projected.
        """
        n, T = Xa.shape[0], self.iterations
        shape = (Xa.shape[1],) if self.loss != "softmax" else (Xa.shape[1], self.n_classes)
        theta, total, buf = np.zeros(shape), np.zeros(shape), np.empty(shape)
        sufficient = self.loss == "linear" and self.clip is None
        if sufficient:
            A, bvec = Xa.T @ Xa, Xa.T @ yy
        row_norms = np.linalg.norm(Xa, axis=1) if self.clip is not None else None
        adaptive, b_row, y_bound = bool(self.adaptive), self.row_bound, self.y_bound
        if adaptive:
            assert b_row is not None and y_bound is not None
        lr, l2, radius = self.learning_rate, self.l2, self.theta_bound
        gs, t = 1.0, 0
        while t < T:
            block = session.release_many("gradient sum", np.zeros((min(_NOISE_BLOCK, T - t),
                                                                   *shape)))
            for z in block:
                t += 1
                if sufficient:
                    g = np.matmul(A, theta, out=buf)
                    g -= bvec
                else:
                    g = _clipped_gradient_sum(Xa, yy, theta, self.loss, self.clip, row_norms)
                if adaptive:
                    gs = b_row * (b_row * _norm(theta) + y_bound)
                    g /= gs
                    g += z
                    g *= gs
                else:
                    g += z
                g /= n
                if l2:
                    g = g + _l2_gradient(theta, l2, self.fit_intercept)
                g *= lr
                theta = _project(theta - g, radius)
                total += theta
                if record is not None and (t % every == 0 or t == T):
                    record(t, theta, total, gs)
            if not np.isfinite(theta).all():
                raise ValueError(
                    f"the iterates diverged (non-finite theta by iteration {t}): lower "
                    f"learning_rate (got {lr!r}) or declare a theta_bound"
                )
        return theta, total

def _to_model(theta: np.ndarray, fit_intercept: bool, loss: str, coding: str = "01",
              history: TrainingHistory | None = None,
              names: np.ndarray | None = None) -> FittedLinearModel:
    if fit_intercept:
        icpt = theta[-1].copy() if theta.ndim == 2 else float(theta[-1])
        return FittedLinearModel(coef=theta[:-1].copy(), intercept=icpt, loss=loss,
                                 label_coding=coding, history=history,
                                 feature_names_in_=names)
    icpt = np.zeros(theta.shape[1]) if theta.ndim == 2 else 0.0
    return FittedLinearModel(coef=theta.copy(), intercept=icpt, loss=loss,
                             label_coding=coding, history=history, feature_names_in_=names)
