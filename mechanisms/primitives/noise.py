"""The additive noise families that the algorithms choose by name.

Algorithms that release counts (tree and histogram quantiles, marginal synthesis) take
``noise="laplace"`` or ``noise="gaussian"``; this module turns that name into the
primitive, so the dispatch lives in one place.
"""

from __future__ import annotations

from dpacct.accountant.mechanism import Mechanism

from .gaussian import GaussianMechanism
from .laplace import LaplaceMechanism

__all__ = ["NOISES", "noise_mechanism"]

#: the names accepted for ``noise=``
NOISES = ("laplace", "gaussian")


def noise_mechanism(noise: str, scale: float) -> Mechanism:
    """The primitive of a noise family: ``LaplaceMechanism(b=scale)`` for ``"laplace"``,
    ``GaussianMechanism(sigma=scale)`` otherwise (callers validate the name).

    A count changed by one record has L1 = L2 sensitivity 1, so the scale is already
    per unit of sensitivity.

    Parameters
    ----------
    noise : str
        One of :data:`NOISES`.
    scale : float
        Laplace scale ``b`` or Gaussian noise multiplier ``sigma``, > 0.

    Returns
    -------
    Mechanism
        The primitive that releases the noisy counts.

    Examples
    --------
    >>> noise_mechanism("laplace", 2.0)
    LaplaceMechanism(b=2.0)
    >>> noise_mechanism("gaussian", 3.0)
    GaussianMechanism(sigma=3.0)
    """
    return LaplaceMechanism(b=scale) if noise == "laplace" else GaussianMechanism(sigma=scale)
