"""Linear regression from noisy sufficient statistics: SSP and AdaSSP.

Ordinary least squares needs only the *sufficient statistics* ``X^T X`` and ``X^T y``.
Releasing both with Gaussian noise and solving the (ridge-regularised) normal equations
on the noisy copies is differentially private by post-processing.  That is *sufficient
statistics perturbation* (SSP), analysed for OLS by Sheffet 2017 ("Differentially
private ordinary least squares", ICML) and, with its adaptive variant AdaSSP, by
Wang 2018 ("Revisiting differentially private linear regression: optimal and adaptive
prediction & estimation in unbounded domain", UAI; AdaSSP is its Algorithm 2).

Both algorithms here are :class:`~dpacct.mechanisms.algorithms.algorithm.Algorithm` objects: their
privacy is the composition of the Gaussian releases they make, each normalised to unit
L2 sensitivity, so ``epsilon``, ``delta``, ``rdp``, ``tradeoff`` ... are exact (Gaussians
compose in closed form) and a calibrator can search their common noise scale.

Neighbouring relation and sensitivities (add/remove one record ``(x, y)``, with the
declared bounds ``||x||_2 <= B`` and ``|y| <= B_y``; ``B`` includes the intercept column
when ``fit_intercept=True``, see :func:`row_bound`):

* ``X^T X`` changes by ``x x^T``.  The release is the upper triangle *including the
  diagonal*, ``d (d + 1) / 2`` numbers, each plus independent ``N(0, std_xx^2)`` noise;
  the lower triangle is copied from it (post-processing), so the noise matrix ``E`` is
  symmetric with ``E_ij = E_ji ~ N(0, std_xx^2)`` i.i.d. for ``i <= j``.  The L2 norm of
  the upper triangle of ``x x^T`` is ``sqrt(sum_i x_i^4 + sum_{i<j} x_i^2 x_j^2) <=
  ||x x^T||_F = ||x||_2^2 <= B^2``, with equality for ``x = B e_1``: the sensitivity is
  exactly ``B^2``, and the release is ``GaussianMechanism(sigma=std_xx / B^2)``.
* ``X^T y`` changes by ``y x``, of L2 norm at most ``B * B_y``:
  ``GaussianMechanism(sigma=std_xy / (B * B_y))``.
* (AdaSSP only) ``lambda_min(X^T X)`` changes by at most ``||x||^2 <= B^2`` (Weyl's
  inequality: adding the PSD rank-one ``x x^T`` moves every eigenvalue up by between 0
  and ``||x||^2``): ``GaussianMechanism(sigma=std_eig / B^2)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpacct.accountant.serialization import register_mechanism
from dpacct.accountant.validation import (
    check_count,
    check_finite,
    check_flag,
    check_positive,
    check_probability,
    check_rng,
    show_value,
)

from ..primitives.gaussian import GaussianMechanism
from ._regression_data import (
    as_design_matrix,
    as_target_vector,
    check_feature_names,
    check_regression_data,
    feature_names,
    select_features,
)
from .algorithm import Algorithm, PlannedRelease, ReleaseSession

__all__ = [
    "SSP",
    "AdaSSP",
    "LinearModel",
    "SufficientStatisticsPerturbation",
    "row_bound",
]


# ----------------------------------------------------------------------------------
# shared helpers
# ----------------------------------------------------------------------------------


def row_bound(x_bound: float, fit_intercept: bool, intercept_scaling: float) -> float:
    """L2 bound on the rows that enter ``X^T X``: the features plus the intercept column.

    With ``fit_intercept`` every row ``x`` is augmented to ``(x, c)`` with
    ``c = intercept_scaling``, so ``||(x, c)||_2 <= sqrt(x_bound^2 + c^2)``.

    Examples
    --------
    >>> row_bound(1.0, False, 1.0)
    1.0
    >>> round(row_bound(1.0, True, 1.0), 6)
    1.414214
    """
    bound = math.hypot(x_bound, intercept_scaling) if fit_intercept else float(x_bound)
    if not math.isfinite(bound * bound):
        names = "x_bound and intercept_scaling" if fit_intercept else "x_bound"
        raise ValueError(
            f"{names} must keep the squared row bound finite (the row bound at most "
            f"1e154), got a row bound of {bound!r}"
        )
    return bound


def _finite_stds(stds: tuple[float, ...], noise_scale: float) -> tuple[float, ...]:
    """``stds`` if each is finite, else a ValueError naming the bounds and the scale (a
    label bound of 1e308 made ``B * y_bound * noise_scale`` overflow to an infinite
    noise std, refused as 'sigma must lie in (0, inf)')."""
    if not all(math.isfinite(x) for x in stds):
        raise ValueError(
            "x_bound, y_bound (or ratios) times noise_scale must keep each noise std "
            f"finite (at most about 1.8e308), got noise_scale={noise_scale!r} and stds "
            f"{tuple(float(x) for x in stds)!r}: rescale the data to smaller bounds"
        )
    return stds


def _design(X: np.ndarray, fit_intercept: bool, intercept_scaling: float) -> np.ndarray:
    if not fit_intercept:
        return X
    return np.hstack([X, np.full((X.shape[0], 1), intercept_scaling)])


def _noisy_gram(gram: np.ndarray, session: ReleaseSession, label: str) -> np.ndarray:
    """Release the upper triangle (diagonal included) of ``gram`` and mirror it.

    The ``d (d + 1) / 2`` numbers are one Gaussian release (module docstring: L2
    sensitivity ``B^2``); the lower triangle is copied from them (post-processing), so
    the noise is symmetric with ``E_ij = E_ji ~ N(0, std^2)`` i.i.d. for ``i <= j``.
    """
    d = gram.shape[0]
    iu = np.triu_indices(d)
    out = np.zeros_like(gram)
    out[iu] = session.release(label, gram[iu])
    return out + np.triu(out, 1).T


def _solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve ``A theta = b``; least squares (pseudo-inverse) if ``A`` is singular."""
    try:
        return np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(A, b, rcond=None)[0]


def _check_nonnegative(name: str, value: object) -> float:
    x = check_finite(name, value)
    if x < 0:
        raise ValueError(f"{name} must lie in [0, inf), got {x!r}")
    return x


def _check_ratios(value: object, k: int) -> tuple[float, ...] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes):
        raise TypeError(
            f"ratios must be a sequence of {k} positive numbers, got {show_value(value)}"
        )
    try:
        items = tuple(value)  # type: ignore[arg-type]
    except TypeError as exc:
        msg = f"ratios must be a sequence of {k} positive numbers, got {show_value(value)}"
        raise TypeError(msg) from exc
    if len(items) != k:
        raise ValueError(f"ratios must have {k} entries, got {len(items)}")
    return tuple(check_positive(f"ratios[{i}]", r) for i, r in enumerate(items))


#: the 97.5 % standard normal quantile that autodp's tutorial multiplies ``sqrt(d)`` by
TUTORIAL_RIDGE_CONSTANT = 1.96


def _check_ridge_constant(value: object) -> float | str | None:
    if value is None or (isinstance(value, str) and value in ("wang", "tutorial")):
        return value
    if isinstance(value, str | bytes):
        raise ValueError(
            f"ridge_constant must be None, 'wang', 'tutorial' or a number in (0, inf), "
            f"got {value!r}"
        )
    return check_positive("ridge_constant", value)


def _to_model(theta: np.ndarray, fit_intercept: bool, c: float, ridge: float,
              names: np.ndarray | None = None) -> LinearModel:
    if fit_intercept:
        return LinearModel(coef=theta[:-1], intercept=float(theta[-1] * c), ridge=ridge,
                           feature_names_in_=names)
    return LinearModel(coef=theta, intercept=0.0, ridge=ridge, feature_names_in_=names)


# ----------------------------------------------------------------------------------
# the fitted model
# ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LinearModel:
    """A fitted linear model ``x -> x @ coef + intercept`` (public: safe to release).

    Each parameter is an attribute of the same name.

    Parameters
    ----------
    coef : numpy.ndarray
        Coefficients, shape ``(n_features,)`` (read-only).
    intercept : float, default 0.0
        Intercept (0 when the algorithm did not fit one).
    ridge : float, default 0.0
        The ridge penalty ``lambda`` added to the noisy ``X^T X`` (AdaSSP's adaptive one,
        or SSP's fixed one).
    feature_names_in_ : numpy.ndarray or None, keyword-only
        The column names of the table the model was fitted on (as scikit-learn), or
        None (fitted on an array).  A table at :meth:`predict` is then read by name
        (reordered to this order; a missing or unexpected column raises ``ValueError``;
        ``select_features`` in :mod:`dpacct.mechanisms.algorithms._regression_data`).

    Examples
    --------
    >>> m = LinearModel(coef=np.array([2.0, -1.0]), intercept=0.5)
    >>> m.predict([[1.0, 1.0], [0.0, 2.0]])
    array([ 1.5, -1.5])
    >>> m.mse([[1.0, 1.0]], [1.0])
    0.25
    """

    coef: np.ndarray
    intercept: float = 0.0
    ridge: float = 0.0
    feature_names_in_: np.ndarray | None = field(default=None, kw_only=True, repr=False)

    def __post_init__(self) -> None:
        coef = np.array(self.coef, dtype=float).reshape(-1)
        coef.setflags(write=False)
        object.__setattr__(self, "coef", coef)
        object.__setattr__(self, "intercept", float(self.intercept))
        object.__setattr__(self, "ridge", float(self.ridge))
        object.__setattr__(self, "feature_names_in_",
                           check_feature_names(self.feature_names_in_, coef.shape[0]))

    @property
    def n_features_in_(self) -> int:
        """Number of features seen at fit (as scikit-learn)."""
        return int(self.coef.shape[0])

    def predict(self, X: object) -> np.ndarray:
        """Predictions ``X @ coef + intercept`` for ``X`` of shape ``(n, n_features)``.

        Parameters
        ----------
        X : array_like
            Design matrix, shape ``(n, n_features)``, finite.
        """
        X = select_features(X, self.feature_names_in_)
        Xa = as_design_matrix("X", X, n_features=self.coef.shape[0])
        return Xa @ self.coef + self.intercept

    def mse(self, X: object, y: object) -> float:
        """Mean squared error ``mean((predict(X) - y)^2)``.

        Parameters
        ----------
        X : array_like
            Design matrix, shape ``(n, n_features)``, finite.
        y : array_like
            Targets, shape ``(n,)``, finite.
        """
        pred = self.predict(X)
        ya = as_target_vector("y", y, pred.shape[0])
        return float(np.mean((pred - ya) ** 2))


# ----------------------------------------------------------------------------------
# SSP
# ----------------------------------------------------------------------------------


@register_mechanism("ssp")
@dataclass(frozen=True, repr=False)
class SufficientStatisticsPerturbation(Algorithm):
    """Sufficient statistics perturbation (SSP) for (ridge) linear regression.

    Releases ``X^T X + E`` and ``X^T y + e`` and returns
    ``theta = (X^T X + E + ridge * I)^{-1} (X^T y + e)`` (Sheffet 2017; in Wang 2018 SSP
    is the non-adaptive baseline that Algorithm 2 improves: AdaSSP with the eigenvalue
    release dropped and ``lambda`` fixed).  ``E`` is the symmetric Gaussian
    matrix with ``E_ij = E_ji ~ N(0, std_xx^2)`` i.i.d. for ``i <= j`` (L2 sensitivity of
    the released upper triangle: ``B^2``), ``e ~ N(0, std_xy^2 I)`` (sensitivity
    ``B * B_y``); see the module docstring for the derivation.  If the noisy matrix is
    singular the minimum-norm least-squares solution is returned.

    Privacy: ``compose([GaussianMechanism(std_xx / B^2), GaussianMechanism(std_xy /
    (B * B_y))])`` under add/remove-one neighbours, with ``B`` = :attr:`row_bound`.

    Parameters
    ----------
    noise_scale : float
        Common scale ``s`` > 0 of the two noise standard deviations.
    x_bound : float
        Declared bound ``||x||_2 <= x_bound`` on every feature row, > 0.
    y_bound : float
        Declared bound ``|y| <= y_bound`` on every label, > 0.
    ratios : (float, float), optional
        ``(a, b)``: the noise stds are ``std_xx = a * s`` and ``std_xy = b * s``.
        Default ``None`` means ``(B^2, B * y_bound)``, i.e. both releases get the same
        noise multiplier ``s`` (an equal split of the budget, as in Wang 2018).
    ridge : float
        Fixed ridge penalty ``>= 0`` added to the noisy ``X^T X`` (default 0: OLS).
    fit_intercept : bool
        Append a constant column ``intercept_scaling`` to ``X`` (its coefficient times
        ``intercept_scaling`` is the intercept).  The row bound then becomes
        ``B = sqrt(x_bound^2 + intercept_scaling^2)``.  The intercept is penalised by
        ``ridge`` like every other coefficient.
    intercept_scaling : float
        Value of the constant column, > 0 (default 1).
    out_of_range : {'raise', 'clip'}
        A row with ``||x|| > x_bound`` or a label with ``|y| > y_bound``: raise
        ``ValueError`` (default) or clip it (the row scaled to norm ``x_bound``, the
        label clipped to ``[-y_bound, y_bound]``).  With public bounds clipping is a
        per-record map, so the sensitivities (and the privacy claim) are unchanged.

    Examples
    --------
    >>> alg = SufficientStatisticsPerturbation(noise_scale=2.0, x_bound=1.0, y_bound=1.0)
    >>> alg.noise_multipliers
    (2.0, 2.0)
    >>> bool(alg.epsilon(1e-5) == GaussianMechanism(sigma=2 / 2 ** 0.5).epsilon(1e-5))
    True
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20_000, 3)); X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    >>> y = X @ np.array([1.0, -1.0, 0.5])
    >>> model = alg.fit(X, y, rng=rng)
    >>> np.round(model.coef, 1)
    array([ 1. , -1. ,  0.5])
    """

    noise_scale: float
    x_bound: float
    y_bound: float
    ratios: tuple[float, float] | None = None
    ridge: float = 0.0
    fit_intercept: bool = False
    intercept_scaling: float = 1.0
    out_of_range: str = "raise"

    def __post_init__(self) -> None:
        s = object.__setattr__
        if self.out_of_range not in ("raise", "clip"):
            raise ValueError(f"out_of_range must be 'raise' or 'clip', got {self.out_of_range!r}")
        s(self, "noise_scale", check_positive("noise_scale", self.noise_scale))
        s(self, "x_bound", check_positive("x_bound", self.x_bound))
        s(self, "y_bound", check_positive("y_bound", self.y_bound))
        s(self, "ratios", _check_ratios(self.ratios, 2))
        s(self, "ridge", _check_nonnegative("ridge", self.ridge))
        s(self, "fit_intercept", check_flag("fit_intercept", self.fit_intercept))
        s(self, "intercept_scaling", check_positive("intercept_scaling", self.intercept_scaling))

    # -------------------------------------------------------------- parameters
    @property
    def row_bound(self) -> float:
        """``B``: bound on the L2 norm of the rows entering ``X^T X`` (intercept included)."""
        return row_bound(self.x_bound, self.fit_intercept, self.intercept_scaling)

    @property
    def sensitivities(self) -> tuple[float, float]:
        """L2 sensitivities ``(B^2, B * y_bound)`` of the ``X^T X`` and ``X^T y`` releases."""
        b = self.row_bound
        return (b * b, b * self.y_bound)

    @property
    def stds(self) -> tuple[float, float]:
        """Noise standard deviations ``(std_xx, std_xy)``."""
        ratios = self.ratios if self.ratios is not None else self.sensitivities
        return _finite_stds(tuple(r * self.noise_scale for r in ratios), self.noise_scale)  # type: ignore[return-value]

    @property
    def noise_multipliers(self) -> tuple[float, float]:
        """``std / sensitivity`` of each release (the ``sigma`` of its GaussianMechanism)."""
        return tuple(s / d for s, d in zip(self.stds, self.sensitivities, strict=True))  # type: ignore[return-value]

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """The two Gaussian releases, once each.

        ``X^T X`` (upper triangle) at sensitivity ``B^2`` and ``X^T y`` at
        ``B * y_bound``, each with noise multiplier ``std / sensitivity`` (so the noise
        std is ``std``).
        """
        (m_xx, m_xy), (s_xx, s_xy) = self.noise_multipliers, self.sensitivities
        return (
            PlannedRelease("X^T X", GaussianMechanism(sigma=m_xx), 1, sensitivity=s_xx),
            PlannedRelease("X^T y", GaussianMechanism(sigma=m_xy), 1, sensitivity=s_xy),
        )

    # -------------------------------------------------------------------- run
    def fit(self, X: object, y: object, *, rng: np.random.Generator) -> LinearModel:
        """Fit on ``(X, y)``; raises ``ValueError`` if the data violate the bounds.

        Parameters
        ----------
        X : array_like, shape (n, d)
            Features; every row must satisfy ``||x||_2 <= x_bound``.
        y : array_like, shape (n,)
            Labels in ``[-y_bound, y_bound]``.
        rng : numpy.random.Generator
            Source of the privacy noise (required).

        Returns
        -------
        LinearModel
        """
        rng = check_rng(rng)
        names = feature_names(X)
        Xa, ya = check_regression_data(X, y, x_bound=self.x_bound, y_bound=self.y_bound,
                                       out_of_range=self.out_of_range)
        Z = _design(Xa, self.fit_intercept, self.intercept_scaling)
        d = Z.shape[1]
        session = self.releases(rng)
        xx = _noisy_gram(Z.T @ Z, session, "X^T X")
        xy = session.release("X^T y", Z.T @ ya)
        session.finish()
        theta = _solve(xx + self.ridge * np.eye(d), xy)
        return _to_model(theta, self.fit_intercept, self.intercept_scaling, self.ridge, names)


#: short alias
SSP = SufficientStatisticsPerturbation


# ----------------------------------------------------------------------------------
# AdaSSP
# ----------------------------------------------------------------------------------


@register_mechanism("adassp")
@dataclass(frozen=True, repr=False)
class AdaSSP(Algorithm):
    """Adaptive sufficient statistics perturbation (Wang 2018, Algorithm 2).

    Three Gaussian releases, then post-processing (line numbers of Algorithm 2; ``B`` is
    :attr:`row_bound`, ``d`` the number of columns including the intercept one):

    1. ``lambda_min``, the smallest eigenvalue of ``X^T X`` (line 1).
    2. ``lambda_min~ = max(lambda_min + std_eig * Z - std_eig * t, 0)``, ``Z ~ N(0, 1)``
       (line 2): the shift ``std_eig * t`` makes ``lambda_min~ <= lambda_min`` with high
       probability.  Wang uses ``std_eig = sqrt(log(6/delta)) B^2 / (epsilon/3)`` and
       ``t = sqrt(log(6/delta))``; here ``t`` is :attr:`shift`.
    3. ``lambda = max(0, k_d * std_xx - lambda_min~)`` (line 3), where the *ridge
       constant* ``k_d`` is by default Wang's ``sqrt(d log(2 d^2 / rho))`` (his
       ``sqrt(d log(6/delta) log(2d^2/rho)) B^2/(epsilon/3)`` is exactly
       ``sqrt(d log(2d^2/rho))`` times his ``std_xx``): ``sqrt(d log(2d^2/rho)) std_xx``
       bounds the spectral norm of the noise matrix ``E`` with probability ``1 - rho``, so
       ``X^T X + E + lambda I`` is positive definite with that probability.  See
       ``ridge_constant`` for the other choices.
    4. ``X^T X + E``, ``E`` symmetric with ``E_ij = E_ji ~ N(0, std_xx^2)`` i.i.d. for
       ``i <= j`` (line 4; L2 sensitivity ``B^2``).
    5. ``X^T y + e``, ``e ~ N(0, std_xy^2 I_d)`` (line 5; sensitivity ``B * B_y``).
    6. ``theta = (X^T X + E + lambda I)^{-1} (X^T y + e)`` (line 6; least squares if the
       matrix is singular).

    Privacy: ``compose([GaussianMechanism(std_eig / B^2), GaussianMechanism(std_xx / B^2),
    GaussianMechanism(std_xy / (B * B_y))])`` (add/remove-one; the eigenvalue has
    sensitivity ``B^2`` by Weyl's inequality).  Wang splits ``(epsilon, delta)`` into
    three equal parts; here the three stds are fixed ratios of one ``noise_scale``, and
    the composition is accounted exactly (see ``dpacct.calibrators.regression.calibrate_adassp``).

    Privacy of the ridge: ``lambda`` is a function of the released ``lambda_min~`` and
    of public numbers only, so by post-processing every ridge constant gives exactly the
    same ``(epsilon, delta)``; the constant changes only the accuracy guarantee (the
    argument, and how often the tutorial's constant fails: docs/theory/algorithms.md,
    section 'AdaSSP').

    Parameters
    ----------
    noise_scale : float
        Common scale ``s`` > 0 of the three noise stds.
    x_bound, y_bound : float
        Declared bounds ``||x||_2 <= x_bound`` and ``|y| <= y_bound``, > 0.
    ratios : (float, float, float), optional
        ``(a_eig, a_xx, a_xy)``: stds ``a_eig * s``, ``a_xx * s``, ``a_xy * s``.  Default
        ``None`` means ``(B^2, B^2, B * y_bound)``: the same noise multiplier ``s`` for all
        three releases (Wang's equal split).
    failure_probability : float
        ``rho`` in (0, 1) of Algorithm 2 (default 0.05, the value Wang's experiments use):
        the probability allowed for the noise matrix to exceed the spectral bound in step
        3.  It affects only accuracy, never privacy.
    shift : float, optional
        ``t >= 0``, the lower-bound shift of step 2 in units of ``std_eig``.  Default
        ``None`` means ``sqrt(2 log(1/rho))``, so that ``P(lambda_min~ > lambda_min) <=
        rho`` by the Gaussian tail bound ``P(Z > t) <= exp(-t^2/2)``; Wang's value
        ``sqrt(log(6/delta))`` is what ``calibrate_adassp`` passes.  Accuracy only.
    ridge_constant : float or {'wang', 'tutorial'}, optional
        ``k_d`` of step 3, the multiple of ``std_xx`` that the ridge must cover.
        ``None`` or ``'wang'`` (default): Wang 2018's ``sqrt(d log(2 d^2 / rho))``, about
        7.92 at ``d = 8`` and ``rho = 0.05``.  ``'tutorial'``: ``1.96 sqrt(d)`` (5.54 at
        ``d = 8``), the rule of autodp's "AdaSSP vs NoisyGD" tutorial (which also shifts
        the eigenvalue by ``1.96 std_eig``: pass ``shift=1.96`` for that).  A float
        ``c > 0``: ``c sqrt(d)``.  Accuracy only, never privacy (see *Privacy of the
        ridge* above).
    fit_intercept : bool, default True
        Append a constant column ``intercept_scaling`` and fit an intercept (True, as
        scikit-learn's ``LinearRegression``).  Its privacy cost: every row ``(x, c)``
        then has norm ``<= B = sqrt(x_bound^2 + c^2)`` (:func:`row_bound`), and ``B``
        replaces ``x_bound`` in all three sensitivities (``B^2`` for the eigenvalue and
        ``X^T X``, ``B * y_bound`` for ``X^T y``): at equal noise multipliers (the
        default ratios) the privacy is unchanged and the stds grow by ``B^2 /
        x_bound^2`` (twice at ``x_bound = 1``); the intercept is penalised by the ridge
        too.  False: no intercept, ``B = x_bound`` (Wang 2018's setting, centred data).
    intercept_scaling : float
        Value of the constant column, > 0 (default 1).
    out_of_range : {'raise', 'clip'}
        A row with ``||x|| > x_bound`` or a label with ``|y| > y_bound``: raise
        ``ValueError`` (default) or clip it (the row scaled to norm ``x_bound``, the
        label clipped to ``[-y_bound, y_bound]``).  With public bounds clipping is a
        per-record map, so the sensitivities (and the privacy claim) are unchanged.

    Examples
    --------
    >>> alg = AdaSSP(noise_scale=3.0, x_bound=1.0, y_bound=1.0)
    >>> alg.noise_multipliers
    (3.0, 3.0, 3.0)
    >>> bool(alg.epsilon(1e-5) == GaussianMechanism(sigma=3 / 3 ** 0.5).epsilon(1e-5))
    True
    >>> rng = np.random.default_rng(1)
    >>> X = rng.normal(size=(20_000, 3)); X /= 2 * np.linalg.norm(X, axis=1, keepdims=True)
    >>> y = X @ np.array([1.0, -1.0, 0.5]) + 0.1 * rng.uniform(-1, 1, size=20_000)
    >>> model = alg.fit(X, y, rng=rng)
    >>> np.round(model.coef, 1)
    array([ 1. , -1. ,  0.5])
    """

    noise_scale: float
    x_bound: float
    y_bound: float
    ratios: tuple[float, float, float] | None = None
    failure_probability: float = 0.05
    shift: float | None = None
    fit_intercept: bool = True
    intercept_scaling: float = 1.0
    out_of_range: str = "raise"
    ridge_constant: float | str | None = None

    def __post_init__(self) -> None:
        s = object.__setattr__
        if self.out_of_range not in ("raise", "clip"):
            raise ValueError(f"out_of_range must be 'raise' or 'clip', got {self.out_of_range!r}")
        s(self, "noise_scale", check_positive("noise_scale", self.noise_scale))
        s(self, "x_bound", check_positive("x_bound", self.x_bound))
        s(self, "y_bound", check_positive("y_bound", self.y_bound))
        s(self, "ratios", _check_ratios(self.ratios, 3))
        s(self, "ridge_constant", _check_ridge_constant(self.ridge_constant))
        s(
            self,
            "failure_probability",
            check_probability("failure_probability", self.failure_probability),
        )
        if self.shift is not None:
            s(self, "shift", _check_nonnegative("shift", self.shift))
        s(self, "fit_intercept", check_flag("fit_intercept", self.fit_intercept))
        s(self, "intercept_scaling", check_positive("intercept_scaling", self.intercept_scaling))

    # -------------------------------------------------------------- parameters
    @property
    def row_bound(self) -> float:
        """``B``: bound on the L2 norm of the rows entering ``X^T X`` (intercept included)."""
        return row_bound(self.x_bound, self.fit_intercept, self.intercept_scaling)

    @property
    def sensitivities(self) -> tuple[float, float, float]:
        """L2 sensitivities ``(B^2, B^2, B * y_bound)`` of the three releases."""
        b = self.row_bound
        return (b * b, b * b, b * self.y_bound)

    @property
    def stds(self) -> tuple[float, float, float]:
        """Noise standard deviations ``(std_eig, std_xx, std_xy)``."""
        ratios = self.ratios if self.ratios is not None else self.sensitivities
        return _finite_stds(tuple(r * self.noise_scale for r in ratios), self.noise_scale)  # type: ignore[return-value]

    @property
    def noise_multipliers(self) -> tuple[float, float, float]:
        """``std / sensitivity`` of each release (the ``sigma`` of its GaussianMechanism)."""
        return tuple(s / d for s, d in zip(self.stds, self.sensitivities, strict=True))  # type: ignore[return-value]

    @property
    def shift_multiplier(self) -> float:
        """``t`` actually used in step 2 (``shift`` or ``sqrt(2 log(1/rho))``)."""
        if self.shift is not None:
            return self.shift
        return math.sqrt(2.0 * math.log(1.0 / self.failure_probability))

    def ridge_multiplier(self, d: int) -> float:
        """``k_d``: the ridge of step 3 is ``max(0, k_d * std_xx - lambda_min~)``.

        Parameters
        ----------
        d : int
            Number of columns of the design, >= 1 (the intercept column included).

        Returns
        -------
        float
            Wang 2018's ``sqrt(d log(2 d^2 / rho))``, or ``c sqrt(d)`` for the tutorial's
            ``c = 1.96`` or a given ``c`` (see ``ridge_constant``).

        Examples
        --------
        >>> round(AdaSSP(noise_scale=1.0, x_bound=1.0, y_bound=1.0).ridge_multiplier(8), 4)
        7.9235
        >>> alg = AdaSSP(noise_scale=1.0, x_bound=1.0, y_bound=1.0, ridge_constant="tutorial")
        >>> round(alg.ridge_multiplier(8), 4)  # 1.96 * sqrt(8)
        5.5437
        """
        d = check_count(d, "d")
        if self.ridge_constant is None or self.ridge_constant == "wang":
            return math.sqrt(d * math.log(2.0 * d * d / self.failure_probability))
        c = TUTORIAL_RIDGE_CONSTANT if self.ridge_constant == "tutorial" else self.ridge_constant
        return float(c) * math.sqrt(d)

    def planned_releases(self) -> tuple[PlannedRelease, ...]:
        """The three Gaussian releases, once each.

        ``lambda_min`` and ``X^T X`` at sensitivity ``B^2``, ``X^T y`` at
        ``B * y_bound``; noise multipliers ``std / sensitivity``.
        """
        labels = ("lambda_min", "X^T X", "X^T y")
        return tuple(
            PlannedRelease(label, GaussianMechanism(sigma=m), 1, sensitivity=sens)
            for label, m, sens in zip(
                labels, self.noise_multipliers, self.sensitivities, strict=True
            )
        )

    # -------------------------------------------------------------------- run
    def fit(self, X: object, y: object, *, rng: np.random.Generator) -> LinearModel:
        """Run Algorithm 2 on ``(X, y)``; raises ``ValueError`` if the data violate the bounds.

        Parameters
        ----------
        X : array_like, shape (n, d)
            Features; every row must satisfy ``||x||_2 <= x_bound``.
        y : array_like, shape (n,)
            Labels in ``[-y_bound, y_bound]``.
        rng : numpy.random.Generator
            Source of the privacy noise (required).

        Returns
        -------
        LinearModel
            ``ridge`` holds the adaptive ``lambda`` of step 3.
        """
        rng = check_rng(rng)
        names = feature_names(X)
        Xa, ya = check_regression_data(X, y, x_bound=self.x_bound, y_bound=self.y_bound,
                                       out_of_range=self.out_of_range)
        Z = _design(Xa, self.fit_intercept, self.intercept_scaling)
        d = Z.shape[1]
        std_eig, std_xx, _ = self.stds
        gram = Z.T @ Z
        session = self.releases(rng)
        # lines 1-2: private lower bound on the smallest eigenvalue
        lam_min = max(float(np.linalg.eigvalsh(gram)[0]), 0.0)
        noisy_min = session.release("lambda_min", lam_min)
        lam_min_priv = max(noisy_min - std_eig * self.shift_multiplier, 0.0)
        # line 3: adaptive ridge (std_xx is public: a function of the parameters)
        spectral = self.ridge_multiplier(d) * std_xx
        lam = max(0.0, spectral - lam_min_priv)
        # lines 4-5: noisy sufficient statistics
        xx = _noisy_gram(gram, session, "X^T X")
        xy = session.release("X^T y", Z.T @ ya)
        session.finish()
        # line 6
        theta = _solve(xx + lam * np.eye(d), xy)
        return _to_model(theta, self.fit_intercept, self.intercept_scaling, lam, names)
