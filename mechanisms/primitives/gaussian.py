"""The Gaussian mechanism, and its replace-one variant.

:class:`GaussianMechanism` is defined in the engine (:mod:`dpacct.accountant.families.gaussian`:
it carries the Gaussian-DP capability the engine composes in closed form) and is
re-exported here with the rest of the zoo.
"""

from __future__ import annotations

from dataclasses import dataclass

from dpacct.accountant.capabilities import _DeclaredHere
from dpacct.accountant.families.gaussian import GaussianMechanism, gaussian_delta
from dpacct.accountant.relations import REPLACE_ONE
from dpacct.accountant.serialization import register_mechanism

__all__ = ["GaussianMechanism", "ReplaceOneGaussianMechanism", "gaussian_delta"]


@register_mechanism("replace_one_gaussian")
@dataclass(frozen=True, repr=False)
class ReplaceOneGaussianMechanism(GaussianMechanism):
    """The Gaussian mechanism accounted under the replace-one relation.

    ``sigma`` is the noise standard deviation per unit of *replace-one* L2 sensitivity:
    the curves are those of :class:`GaussianMechanism` (the pair ``N(0, sigma^2)``,
    ``N(1, sigma^2)``), only the relation differs, so it composes with replace-one
    mechanisms and is what :func:`~dpacct.accountant.subsample_without_replacement`
    takes.  Replacing a record moves a query by at most twice its add/remove
    sensitivity (triangle inequality), so noise of ``s`` per unit of add/remove
    sensitivity is ``ReplaceOneGaussianMechanism(sigma=s / 2)``: the conversion
    :func:`~dpacct.mechanisms.replace_one` does exactly that.

    Parameters
    ----------
    sigma : float
        Noise standard deviation per unit of replace-one L2 sensitivity, > 0.

    Examples
    --------
    >>> m = ReplaceOneGaussianMechanism(sigma=0.5)
    >>> m.neighbouring
    'replace-one'
    >>> bool(m.epsilon(1e-5) == GaussianMechanism(sigma=0.5).epsilon(1e-5))
    True
    """

    #: replace-one Gaussians compose in closed form (``sigma^-2`` adds up; Dong, Roth &
    #: Su 2019, Corollary 3.3): declared by this class alone, so a subclass that changes
    #: the curve loses it and an engine reads it instead of testing the exact type
    replace_one_closed_form = _DeclaredHere("gaussian")

    neighbouring = REPLACE_ONE
