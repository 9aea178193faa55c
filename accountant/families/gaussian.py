"""The Gaussian mechanism: the carrier of the Gaussian-DP capability.

A mechanism that declares a Gaussian-DP parameter ``mu`` (:meth:`Mechanism.gdp_mu
<dpacct.accountant.mechanism.Mechanism.gdp_mu>`) has exactly the privacy curves of
the Gaussian mechanism with noise multiplier ``1 / mu``.  The engine needs that
mechanism itself: a composition of mu-GDP parts is answered in closed form by one
(:func:`~dpacct.accountant.transformers.compose.compose`), the ledger records a DP-SGD step as a
Poisson-subsampled one, and the schedule rounds steps onto a grid of them.  So the
class lives here, in the engine, and :mod:`dpacct.mechanisms` re-exports it with the
rest of the zoo.  The argument in full: docs/theory/analytic_gaussian.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..capabilities import _DeclaredHere
from ..laws.loss_law import GaussianLossLaw
from ..mechanism import Capabilities, Mechanism
from ..validation import check_positive, check_real_values, check_release_args
from .gaussian_dp import (
    gaussian_delta,
    gaussian_delta_at_most_exact,
    gaussian_epsilon,
    gaussian_log_delta,
    gaussian_tradeoff,
    sigma_below,
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

    #: the curve is a function of ``sigma`` alone (read by ``replace_one`` and the
    #: random-allocation bounds; not inherited by subclasses)
    noise_parameter = _DeclaredHere("sigma")
    #: the Gaussian pair with ``mu = 1 / sigma`` (what a Poisson subsampling of it
    #: declares, :meth:`~dpacct.accountant.mechanism.Mechanism.subsampled_gaussian`)
    gaussian_pair = _DeclaredHere(True, False)

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
        # alpha / (2 sigma^2) rounded up: the float quotient is within ~2 units of
        # round-off (sigma^2, the division); 8 units and one ulp more make it an upper
        # bound (review 36: rounded to nearest it was below the exact value in half the
        # cases)
        v = np.asarray(alpha, dtype=float) / (2.0 * self.sigma**2)
        return np.nextafter(v * (1.0 + 2.0**-50), np.inf)

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
