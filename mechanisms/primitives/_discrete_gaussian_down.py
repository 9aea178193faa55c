"""The discrete Gaussian mechanism's exact curve rounded down: the certified lower
curve (:mod:`~dpacct.accountant.curve_down`) behind its bracket's lower end."""

from __future__ import annotations

import functools
import math

import numpy as np

from dpacct.accountant.curve_down import float_below

__all__ = ["discrete_gaussian_delta_down", "discrete_gaussian_terms"]

#: the sum's relative allowance: numpy's vectorised exp and expm1 within four ulps each
#: (AVX-512 SIMD code), their product, ``fsum`` and the factor: 19u, inside 2^-48 (32u)
_SUM_ROUNDOFF = 2.0**-48


@functools.lru_cache(maxsize=256)
def _log_z_bounds(sigma: float) -> tuple[float, float]:
    """``log Z = log theta_3(0, e^{-1/(2 sigma^2)})`` at 50 digits, rounded down and up."""
    import mpmath  # lazily, as the rest of the library

    with mpmath.workdps(50):
        theta = mpmath.jtheta(3, 0, mpmath.exp(-1 / (2 * mpmath.mpf(sigma) ** 2)))
        log_z = mpmath.log(theta)
        return float_below(log_z), -float_below(-log_z)


def _log_z_up(sigma: float) -> float:
    """``log Z`` at 50 digits, rounded up (the lower sum's)."""
    return _log_z_bounds(sigma)[1]


def log_z_down(sigma: float) -> float:
    """``log Z`` at 50 digits, rounded down (the upper sum's,
    :func:`~dpacct.mechanisms.primitives.discrete.discrete_gaussian_delta`)."""
    return _log_z_bounds(sigma)[0]


def discrete_gaussian_delta_down(
    sigma: float, epsilon: np.ndarray, sum_width: float = 38.0
) -> np.ndarray:
    """:func:`~dpacct.mechanisms.primitives.discrete.discrete_gaussian_delta`'s sum
    rounded down, for ``sigma <= 2000`` (Canonne, Kamath, Steinke 2020, Theorem 7:
    ``delta(eps) = sum_{x: L(x) > eps} P(x) (1 - e^{eps - L(x)})`` with ``P = N_Z(1,
    sigma^2)``, ``L(x) = (2x - 1) / (2 sigma^2)``), over the same window of
    ``sum_width`` standard deviations.

    The same terms ``P(x) (1 - e^{eps - L(x)})`` without the tail (non-negative terms
    left out lower the sum), each rounded down: ``log Z`` from Jacobi's
    ``theta_3(0, e^{-1/(2 sigma^2)})`` at 50 digits (``mpmath``) rounded up, ``log P(x)``
    lowered by ``2^-49 (|log P(x)| + log Z)`` (a quotient and two roundings of half an ulp
    of those sizes), the gap ``eps - L(x)`` raised by ``2^-49 (L(x) + eps)``, numpy's
    vectorised ``exp`` / ``expm1`` within four ulps each, ``math.fsum`` correctly
    rounded, and ``2^-48`` off the result.

    Examples
    --------
    >>> down = discrete_gaussian_delta_down(1.0, np.array([1.0]))[0]
    >>> bool(0.14135 < down < 0.14136)
    True
    """

    log_z = _log_z_up(float(sigma))
    eps = np.asarray(epsilon, dtype=float)
    width = math.ceil(sum_width * sigma) + 2
    out = np.empty(eps.size)
    for i, e in enumerate(eps.reshape(-1)):
        out[i] = math.fsum(discrete_gaussian_terms(sigma, float(e), log_z, width, up=False)[1])
    return np.minimum(out * (1.0 - _SUM_ROUNDOFF), 1.0).reshape(eps.shape)


def discrete_gaussian_terms(
    sigma: float, e: float, log_z: float, width: int, *, up: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The integers ``x`` of the window from ``floor(sigma^2 e + 1/2)`` (``width + 1`` of
    them) and the terms ``P(x) (1 - e^{e - L(x)})`` of Canonne, Kamath and Steinke's sum
    (2020, Theorem 7), each rounded up (``up``) or down: ``log P(x) = -(x - 1)^2 /
    (2 sigma^2) - log Z`` moved by ``2^-49 (|log P(x)| + |log Z|)`` and the gap ``e -
    L(x)`` by ``2^-49 (|L(x)| + e)`` the safe way (where ``L(x)`` is within ulps of ``e``
    the float gap cancels).  ``log_z`` must be rounded the other way (down for ``up``).
    The upper sum (:func:`~dpacct.mechanisms.primitives.discrete.discrete_gaussian_delta`)
    takes a further ``1 + 2^-48`` per term, the lower one ``1 - 2^-48`` on the sum
    (:data:`_SUM_ROUNDOFF`).

    Examples
    --------
    >>> x, hi = discrete_gaussian_terms(1.0, 1.0, 0.919, 40, up=True)
    >>> _, lo = discrete_gaussian_terms(1.0, 1.0, 0.919, 40, up=False)
    >>> bool(x[0] == 1.0 and (lo <= hi).all() and lo.sum() > 0)
    True
    """
    s2 = sigma * sigma
    x0 = math.floor(s2 * e + 0.5)  # one below the first contributing integer, for safety
    x = np.arange(x0, x0 + width + 1, dtype=float)
    loss = (2.0 * x - 1.0) / (2.0 * s2)
    quad = (x - 1.0) ** 2 / (2.0 * s2)
    sign = 1.0 if up else -1.0
    log_p = -(quad + log_z) + sign * 2.0**-49 * (quad + abs(log_z))
    gap = np.minimum(e - loss - sign * 2.0**-49 * (np.abs(loss) + e), 0.0)
    with np.errstate(under="ignore"):
        return x, np.exp(log_p) * -np.expm1(gap)
