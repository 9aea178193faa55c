"""Calibrate SSP and AdaSSP linear regression to an (epsilon, delta) budget as a whole.

Wang 2018 (Algorithm 2) gives each of AdaSSP's three releases ``(epsilon/3, delta/3)``
and sets every noise std with a per-release Gaussian bound.  Here the releases keep a
*fixed ratio* of noise stds and their common scale is searched with the generic
:func:`dpacct.calibrators.calibrate` so that the *composition* meets ``(epsilon, delta)``.
Gaussian mechanisms compose exactly (noise multipliers ``sigma_i`` combine into one
Gaussian with ``sigma^-2 = sum_i sigma_i^-2``), so the composed epsilon is exact and the
budget is met within ``rtol`` and never exceeded; the per-release split pays the
union bound on delta and the sub-additivity of epsilon instead, and needs more noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from dpacct.accountant.validation import check_delta, check_positive
from dpacct.mechanisms.algorithms.ssp import AdaSSP, SufficientStatisticsPerturbation

from .calibrate import calibrate
from .dpsgd import analytic_gaussian_sigma
from .search import DEFAULT_RTOL

__all__ = ["calibrate_adassp", "calibrate_ssp"]


def _start(epsilon: float, delta: float, multipliers_at_unit_scale: Sequence[float]) -> float:
    """The common scale whose composed Gaussian is the analytic (epsilon, delta) one.

    At scale ``s`` the releases have multipliers ``s * m_i``; their composition is a
    Gaussian with multiplier ``s / sqrt(sum_i m_i^-2)``.  Used only as the search's first
    point: the answer is checked with the algorithm's own epsilon.
    """
    combined = 1.0 / math.sqrt(sum(m**-2 for m in multipliers_at_unit_scale))
    # a hair above: the engine rounds sigma down (by 2^-50) when it composes the parts
    # in closed form, which at exactly this scale would exceed epsilon by 1e-15
    return analytic_gaussian_sigma(epsilon, delta) / combined * (1.0 + 1e-12)


def _run(proto, epsilon: float, delta: float, rtol: float):
    ratios = proto.stds  # stds at noise_scale = 1: the fixed ratios of the family
    first = ratios[0]

    def family(*stds: float):  # the stds (ratio_i * s), as calibrate passes them
        return replace(proto, noise_scale=stds[0] / first)

    res = calibrate(
        family,
        epsilon=epsilon,
        delta=delta,
        ratios=tuple(ratios),
        start=_start(epsilon, delta, proto.noise_multipliers),
        increasing=False,
        rtol=rtol,
        name="noise_scale",
    )
    return res.mechanism


def calibrate_ssp(
    epsilon: float,
    delta: float,
    *,
    x_bound: float,
    y_bound: float,
    ratios: tuple[float, float] | None = None,
    ridge: float = 0.0,
    fit_intercept: bool = False,
    intercept_scaling: float = 1.0,
    rtol: float = DEFAULT_RTOL,
    out_of_range: str = "raise",
) -> SufficientStatisticsPerturbation:
    """The SSP whose two Gaussian releases, composed, are (epsilon, delta)-DP.

    Searches the common ``noise_scale`` of
    :class:`~dpacct.mechanisms.SufficientStatisticsPerturbation` with the stds in the fixed
    ratio ``ratios`` (default: equal noise multipliers), using
    :func:`dpacct.calibrators.calibrate` with its fixed-ratio (``ratios``) support.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    x_bound, y_bound : float
        Declared bounds ``||x||_2 <= x_bound``, ``|y| <= y_bound``, > 0.
    ratios : (float, float), optional
        Ratio of the ``X^T X`` and ``X^T y`` noise stds (see the SSP class).
    ridge, fit_intercept, intercept_scaling
        Passed to the SSP class (they do not change privacy, except that the intercept
        column enlarges the row bound).
    rtol : float
        The composed epsilon lies in ``[epsilon (1 - rtol), epsilon]``.
    out_of_range : {'raise', 'clip'}
        Passed to the algorithm: refuse (default) or clip data outside the declared
        bounds (no change to the privacy).

    Returns
    -------
    SufficientStatisticsPerturbation

    Examples
    --------
    >>> alg = calibrate_ssp(1.0, 1e-5, x_bound=1.0, y_bound=1.0)
    >>> bool(0.999 <= alg.epsilon(1e-5) <= 1.0)
    True
    >>> round(alg.noise_scale, 3)  # per-release multiplier: sqrt(2) * 3.7306
    5.276
    """
    check_positive("epsilon", epsilon)
    check_delta(delta, what="SSP (Gaussian releases)")
    proto = SufficientStatisticsPerturbation(
        noise_scale=1.0,
        x_bound=x_bound,
        y_bound=y_bound,
        ratios=ratios,
        ridge=ridge,
        fit_intercept=fit_intercept,
        intercept_scaling=intercept_scaling,
        out_of_range=out_of_range,
    )
    return _run(proto, epsilon, delta, rtol)


def calibrate_adassp(
    epsilon: float,
    delta: float,
    *,
    x_bound: float,
    y_bound: float,
    ratios: tuple[float, float, float] | None = None,
    failure_probability: float = 0.05,
    shift: float | None = None,
    fit_intercept: bool = True,
    intercept_scaling: float = 1.0,
    rtol: float = DEFAULT_RTOL,
    out_of_range: str = "raise",
    ridge_constant: float | str | None = None,
) -> AdaSSP:
    """The AdaSSP whose three Gaussian releases, composed, are (epsilon, delta)-DP.

    Searches the common ``noise_scale`` of :class:`~dpacct.mechanisms.AdaSSP` with the
    three stds in the fixed ratio ``ratios`` (default: equal noise multipliers, the
    analogue of Wang 2018's equal three-way split), using :func:`dpacct.calibrators.calibrate`
    with its fixed-ratio support.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta, in (0, 1).
    x_bound, y_bound : float
        Declared bounds ``||x||_2 <= x_bound``, ``|y| <= y_bound``, > 0.
    ratios : (float, float, float), optional
        Ratio of the eigenvalue, ``X^T X`` and ``X^T y`` noise stds.
    failure_probability : float
        ``rho`` of Algorithm 2 (accuracy only), default 0.05.
    shift : float, optional
        Eigenvalue lower-bound shift in units of its noise std (accuracy only).  Default:
        Wang 2018's ``sqrt(log(6 / delta))`` (Algorithm 2, line 2).
    fit_intercept, intercept_scaling
        Passed to AdaSSP (default: fit an intercept, as AdaSSP; the intercept column
        enlarges the row bound to ``sqrt(x_bound^2 + intercept_scaling^2)``, which scales
        the stds, not the noise multipliers the calibration searches).
    rtol : float
        The composed epsilon lies in ``[epsilon (1 - rtol), epsilon]``.
    out_of_range : {'raise', 'clip'}
        Passed to the algorithm: refuse (default) or clip data outside the declared
        bounds (no change to the privacy).
    ridge_constant : float or {'wang', 'tutorial'}, optional
        The ridge constant of :class:`~dpacct.mechanisms.algorithms.ssp.AdaSSP` (default Wang 2018's
        ``sqrt(d log(2 d^2 / rho))``; ``'tutorial'`` is autodp's ``1.96 sqrt(d)``).  It is
        post-processing of the releases: the calibrated noise, and so the privacy, is the
        same for every constant.

    Returns
    -------
    AdaSSP

    Examples
    --------
    >>> alg = calibrate_adassp(1.0, 1e-5, x_bound=1.0, y_bound=1.0)
    >>> bool(0.999 <= alg.epsilon(1e-5) <= 1.0)
    True
    >>> round(alg.noise_scale, 3)  # per-release multiplier: sqrt(3) * 3.7306
    6.462
    """
    check_positive("epsilon", epsilon)
    delta = check_delta(delta, what="AdaSSP (Gaussian releases)")
    if shift is None:
        shift = math.sqrt(math.log(6.0 / delta))
    proto = AdaSSP(
        noise_scale=1.0,
        x_bound=x_bound,
        y_bound=y_bound,
        ratios=ratios,
        failure_probability=failure_probability,
        shift=shift,
        fit_intercept=fit_intercept,
        intercept_scaling=intercept_scaling,
        out_of_range=out_of_range,
        ridge_constant=ridge_constant,
    )
    return _run(proto, epsilon, delta, rtol)
