"""The Gaussian mechanism: the carrier of the Gaussian-DP capability.

A mechanism that declares a Gaussian-DP parameter ``mu`` (:meth:`Mechanism.gdp_mu
<dpacct.accountant.mechanism.Mechanism.gdp_mu>`) has exactly the privacy curves of
the Gaussian mechanism with noise multiplier ``1 / mu``.  The engine needs that
mechanism itself: a composition of mu-GDP parts is answered in closed form by one
(:func:`~dpacct.accountant.compose.compose`), the ledger records a DP-SGD step as a
Poisson-subsampled one, and the schedule rounds steps onto a grid of them.  So the
class lives here, in the engine, and :mod:`dpacct.mechanisms` re-exports it with the
rest of the zoo.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from .loss_law import GaussianLossLaw
from .mechanism import Capabilities, Mechanism
from .numerics import brentq
from .validation import (
    as_float_array,
    check_delta,
    check_positive,
    check_real_values,
    check_release_args,
)

__all__ = [
    "GaussianMechanism",
    "gaussian_delta",
    "gaussian_delta_at_most_exact",
    "gaussian_epsilon",
    "gaussian_log_delta",
    "gaussian_tradeoff",
    "sigma_below",
]


def gaussian_delta(mu: float, epsilon: np.ndarray) -> np.ndarray:
    """Exact delta(eps) of the Gaussian mechanism with ``mu = sensitivity / sigma``.

    Balle & Wang 2018 ("Improving the Gaussian Mechanism for Differential Privacy",
    Theorem 8): ``delta = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``, evaluated
    in log space as ``Phi(a) * (1 - exp(eps + log Phi(b) - log Phi(a)))`` so that
    deltas down to 1e-300 keep their relative precision.

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma``, > 0.
    epsilon : numpy.ndarray
        Epsilons (real).

    Examples
    --------
    >>> round(float(gaussian_delta(1.0, np.array([1.0]))[0]), 6)
    0.126937
    """
    mu = check_positive("mu", mu)
    eps = as_float_array("epsilon", epsilon)
    a = mu / 2.0 - eps / mu
    b = -mu / 2.0 - eps / mu
    log_pa = special.log_ndtr(a)
    log_pb = special.log_ndtr(b)
    with np.errstate(over="ignore", invalid="ignore"):
        x = eps + log_pb - log_pa
        val = np.exp(log_pa) * -np.expm1(np.minimum(x, 0.0))
    return np.clip(np.where(np.isnan(val), 0.0, val), 0.0, 1.0)


def gaussian_log_delta(mu: float, eps: float) -> float:
    """``log delta(eps)`` of ``mu``-GDP (``-inf`` where delta is 0), from
    :func:`gaussian_delta`.

    Examples
    --------
    >>> round(gaussian_log_delta(1.0, 1.0), 6)  # log 0.126937
    -2.064066
    """
    d = float(gaussian_delta(mu, np.array([eps]))[0])
    return math.log(d) if d > 0 else -math.inf


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Epsilon at ``delta`` of ``mu``-Gaussian DP (a Gaussian with sigma = 1 / mu).

    Inverts the exact curve of Balle & Wang 2018 (Theorem 8) to about 1e-12 relative
    accuracy; not rounded in either direction (use ``Mechanism.epsilon`` for a bound).

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma``, > 0.
    delta : float
        Target delta, in (0, 1).

    Examples
    --------
    >>> round(gaussian_epsilon(1.0, 1e-5), 4)
    4.3772
    """
    mu = check_positive("mu", mu)
    delta = check_delta(delta)
    log_d = math.log(delta)
    if gaussian_log_delta(mu, 0.0) <= log_d:
        return 0.0
    hi = max(1.0, mu * mu)
    while gaussian_log_delta(mu, hi) > log_d:
        hi *= 2.0
        if hi > 1e300:
            return math.inf

    def f(e: float) -> float:
        v = gaussian_log_delta(mu, e)
        return max(v, -1e300) - log_d

    return brentq(f, 0.0, hi, xtol=1e-15, rtol=1e-13, maxiter=500)


def gaussian_delta_at_most_exact(mu: float, eps: float, delta: float) -> bool:
    """True if ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) <= delta`` at 40 digits (the
    inputs are floats, so this is the exact curve at those floats, to 1e-40).

    Examples
    --------
    >>> gaussian_delta_at_most_exact(1.0, 1.0, 0.127), gaussian_delta_at_most_exact(1.0, 1.0, 0.126)
    (True, False)
    """
    import mpmath

    with mpmath.workdps(40):
        m, e = mpmath.mpf(mu), mpmath.mpf(eps)
        value = mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m)
        return bool(value <= mpmath.mpf(delta))


#: relative margin by which a noise multiplier recovered from a Gaussian-DP ``mu`` is
#: lowered: ``mu`` itself and ``1 / mu`` (or a sum of squares and its root) each round
#: by up to half an ulp, eight ulps covers them (a smaller sigma is the safe side)
SIGMA_ROUND_DOWN = 2.0**-50


def sigma_below(mu: float) -> float:
    """A noise multiplier at most ``1 / mu`` for the exact real ``mu`` a float stands
    for: ``(1 / mu) (1 - 2^-50)``.  The Gaussian with this sigma dominates the
    ``mu``-GDP mechanism, so every curve computed from it is an upper bound.

    Examples
    --------
    >>> s = sigma_below(0.5)
    >>> s < 2.0 and 2.0 - s < 1e-14
    True
    """
    return (1.0 / float(mu)) * (1.0 - SIGMA_ROUND_DOWN)


def gaussian_tradeoff(mu: float, fpr: np.ndarray) -> np.ndarray:
    """Trade-off curve of ``mu``-GDP: ``Phi(Phi^-1(1 - a) - mu)`` (Dong, Roth, Su 2019,
    Definition 2.7).

    Examples
    --------
    >>> round(float(gaussian_tradeoff(1.0, np.array([0.05]))[0]), 6)  # Phi(1.644854 - 1)
    0.740489
    """
    with np.errstate(divide="ignore"):
        return special.ndtr(special.ndtri(1.0 - np.asarray(fpr, dtype=float)) - mu)


@dataclass(frozen=True, repr=False)
class GaussianMechanism(Mechanism):
    """Add ``N(0, (sigma * sensitivity)^2)`` noise: ``sigma`` is the noise multiplier.

    Known in closed form: the exact privacy curve (Balle & Wang 2018), the RDP curve
    ``alpha / (2 sigma^2)`` (Mironov 2017, Proposition 7), Gaussian DP with
    ``mu = 1/sigma`` and its trade-off curve ``Phi(Phi^-1(1 - a) - mu)`` (Dong, Roth,
    Su 2019, Definition 2.7), and the privacy loss ``N(mu^2/2, mu^2)``.

    Parameters
    ----------
    sigma : float
        Noise standard deviation per unit of L2 sensitivity, > 0.

    Examples
    --------
    >>> m = GaussianMechanism(sigma=1.0)
    >>> round(m.epsilon(1e-5), 4)
    4.3772
    >>> float(m.rdp(2.0))
    1.0
    >>> m
    GaussianMechanism(sigma=1.0)
    """

    sigma: float

    declares = Capabilities(
        exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True, gdp=True
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive("sigma", self.sigma))

    @property
    def mu(self) -> float:
        """Gaussian-DP parameter ``1 / sigma``."""
        return 1.0 / self.sigma

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        return gaussian_delta(self.mu, epsilon)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return np.asarray(alpha, dtype=float) / (2.0 * self.sigma**2)

    def _loss_laws(self):
        law = GaussianLossLaw(mu=self.mu)
        return law, law

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        return gaussian_tradeoff(self.mu, fpr)

    def release(self, value, *, sensitivity: float = 1.0, rng: np.random.Generator):
        """Add ``N(0, (sigma * sensitivity)^2)`` noise to ``value``: the mechanism this
        object's privacy curves describe, for a query of L2 sensitivity ``sensitivity``.

        The noise std is the noise multiplier times the sensitivity (the Gaussian
        mechanism of Dwork & Roth 2014, Theorem A.1), so the pair of output laws on
        neighbouring inputs is ``N(Delta, (sigma Delta)^2)`` against ``N(0, (sigma
        Delta)^2)``, which rescales to ``N(1, sigma^2)`` against ``N(0, sigma^2)``: the
        pair whose exact curve (Balle & Wang 2018, Theorem 8) this object states.
        Every coordinate gets independent noise.

        Parameters
        ----------
        value : float or array_like
            The query answer(s), finite.
        sensitivity : float
            L2 sensitivity of the query, > 0 and finite (default 1).
        rng : numpy.random.Generator
            The only source of randomness.

        Returns
        -------
        float or numpy.ndarray
            ``value`` plus the noise, same shape (a float for a scalar ``value``).

        Raises
        ------
        ValueError
            ``sensitivity`` not in ``(0, inf)``; ``value`` with NaN or inf.
        TypeError
            ``rng`` not a ``numpy.random.Generator``; ``value`` not numeric.

        Examples
        --------
        >>> rng = np.random.default_rng(0)
        >>> noisy = GaussianMechanism(sigma=2.0).release(np.zeros(100_000), sensitivity=0.5,
        ...                                              rng=rng)
        >>> noisy.shape, bool(abs(noisy.std() - 1.0) < 0.01)
        ((100000,), True)
        >>> isinstance(GaussianMechanism(sigma=1.0).release(3.0, rng=rng), float)
        True
        """
        sens, rng = check_release_args(sensitivity, rng)
        x, scalar = check_real_values("value", value)
        noisy = x + rng.normal(0.0, self.sigma * sens, size=x.shape)
        return float(noisy) if scalar else noisy

    def _gdp_mu(self) -> float:
        # exactly mu-GDP with mu = 1/sigma (Dong, Roth, Su 2019, Theorem 2.7)
        return self.mu
