"""Mechanisms declared by what they know: one capability in, every query out.

A new mechanism states *one* of

====================================  ================================================
constructor                           what is declared
====================================  ================================================
``Mechanism.from_delta_curve``        its exact privacy curve ``delta(eps)``, ``eps >= 0``
``Mechanism.from_rdp``                a Renyi-DP curve ``alpha -> eps_alpha``
``Mechanism.from_loss_laws``          privacy-loss laws of dominating pairs
``Mechanism.from_pure_epsilon``       a pure-DP epsilon
``Mechanism.from_gdp``                a ``mu``-GDP guarantee
``Mechanism.from_epsilon_delta``      a fixed ``(epsilon, delta)`` guarantee
====================================  ================================================

and the engine derives the rest -- composition, Poisson subsampling (add/remove
neighbours), subsampling without replacement (replace-one neighbours), the ledger,
calibration, ``epsilon_bounds``, ``rdp`` and ``tradeoff`` -- by building, from the
declaration, the representations the engine's routes consume:

* **exact curve -> loss law**: the connect-the-dots pair on a refined grid of the
  curve (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022, Section 3), which
  dominates; see :func:`loss_law_from_delta_curve`;
* **loss law -> RDP**: the Renyi divergence of the dominating pair (Mironov 2017,
  Definition 3); see :func:`loss_law_rdp`;
* **pure epsilon -> randomized response** with ``p = e^eps / (1 + e^eps)`` (Kairouz,
  Oh, Viswanath 2015, Theorem 2.1);
* **(eps, delta) -> the four-point pair** of Kairouz, Oh, Viswanath 2015 (Theorem 2.1);
* **RDP curve -> RDP routes only**; ``epsilon_bounds`` returns ``(0, upper)``.

The derivations in full: docs/theory/pld.md, section 'Mechanisms declared by one
capability'.  The functions below document each declaration; their spelling
``mechanism_from_*`` is deprecated (one spelling per factory: ``Mechanism.from_*``) and
warns with a ``DeprecationWarning`` until it is removed in the next release.

When a representation cannot be derived soundly the query raises
:class:`MissingCapabilityError`, naming the mechanism and what it lacks (an exact curve
positive at every epsilon has no finite Renyi divergence that finitely many curve
values can certify; an ``(eps, delta)`` guarantee with ``delta > 0`` has none at all).

Examples
--------
>>> import numpy as np
>>> from scipy.stats import norm
>>> from dpacct.accountant import compose, poisson_subsample
>>> def gaussian_curve(eps, mu=1.0):   # Balle & Wang 2018, Theorem 8
...     return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
>>> from dpacct.accountant import Mechanism
>>> m = Mechanism.from_delta_curve(gaussian_curve, name="gaussian mu=1")
>>> m
DeltaCurveMechanism(name='gaussian mu=1')
>>> round(compose([m], counts=[4]).epsilon(1e-5), 3)   # the mu = 2 Gaussian: 9.99726
9.997
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from ..capabilities import MissingCapabilityError
from ..laws.delta_curve_law import loss_law_from_delta_curve
from ..laws.loss_law import PrivacyLossLaw
from ..laws.loss_law_rdp import loss_law_rdp, swapped_loss_law
from ..mechanism import (
    DeltaCurveMechanism,
    EpsilonDeltaMechanism,
    GaussianDPMechanism,
    LossLawMechanism,
    Mechanism,
    PureEpsilonMechanism,
    RDPCurveMechanism,
)
from ..relations import ADD_REMOVE

__all__ = [
    "DeltaCurveMechanism",
    "EpsilonDeltaMechanism",
    "GaussianDPMechanism",
    "LossLawMechanism",
    "MissingCapabilityError",
    "PureEpsilonMechanism",
    "RDPCurveMechanism",
    "loss_law_from_delta_curve",
    "loss_law_rdp",
    "mechanism_from_delta_curve",
    "mechanism_from_epsilon_delta",
    "mechanism_from_gdp",
    "mechanism_from_loss_laws",
    "mechanism_from_pure_epsilon",
    "mechanism_from_rdp",
    "swapped_loss_law",
]


# ----------------------------------------------------------------------------------
# the constructors
# ----------------------------------------------------------------------------------
def _deprecated(name: str) -> None:
    """Warn that ``mechanism_from_<name>`` is the deprecated spelling (since 0.2.0)."""
    warnings.warn(
        f"mechanism_from_{name} is deprecated and will be removed in the next release; "
        f"use Mechanism.from_{name} (the same mechanism, one spelling per factory)",
        DeprecationWarning,
        stacklevel=3,
    )


def mechanism_from_delta_curve(
    delta_curve: Callable[[np.ndarray], np.ndarray],
    *,
    name: str,
    neighbouring: str = ADD_REMOVE,
) -> DeltaCurveMechanism:
    """A mechanism declared by its exact privacy curve ``delta(eps)``.

    .. deprecated:: 0.2.0
       Use ``Mechanism.from_delta_curve``, the one spelling of this factory; this one warns
       with a ``DeprecationWarning`` and goes in the next release.

    The curve answers ``delta``/``epsilon``/``epsilon_bounds`` of the mechanism itself
    exactly (bisection).  Composition, Poisson subsampling, the ledger and calibration
    use a symmetric connect-the-dots loss law that dominates the curve
    (:func:`loss_law_from_delta_curve`, built on first use).  A curve that reaches 0 at
    some epsilon (a bounded privacy loss) also gives a pure epsilon and an RDP curve;
    one positive everywhere does not (:class:`MissingCapabilityError` from
    :meth:`rdp`, and subsampling without replacement, which needs RDP, answers
    nothing).

    Parameters
    ----------
    delta_curve : callable
        ``eps -> delta(eps)`` for ``eps >= 0``, vectorised over numpy arrays (a scalar
        function is called point by point); the maximum over both neighbouring
        directions.  It must be *exact* or an upper bound that is itself a privacy
        curve (convex in ``e^eps``): every answer is only as sound as the curve.
    name : str
        A label for messages and the repr.
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import norm
    >>> from dpacct.accountant import compose
    >>> curve = lambda e: norm.cdf(0.5 - e) - np.exp(e) * norm.cdf(-0.5 - e)  # mu = 1
    >>> m = Mechanism.from_delta_curve(curve, name="gaussian")
    >>> round(m.epsilon(1e-5), 4)          # the exact curve, inverted
    4.3772
    >>> run = compose([m], counts=[10])    # through the connect-the-dots law
    >>> 17.8565 < run.epsilon(1e-5) < 17.8569  # exact: the mu = sqrt(10) Gaussian, 17.85659
    True
    """
    _deprecated("delta_curve")
    return Mechanism.from_delta_curve(delta_curve, name=name, neighbouring=neighbouring)


def mechanism_from_rdp(
    rdp_curve: Callable[[np.ndarray], np.ndarray],
    *,
    name: str = "rdp",
    pure_epsilon: float | None = None,
    neighbouring: str = ADD_REMOVE,
) -> RDPCurveMechanism:
    """A mechanism declared by a Renyi-DP curve (and optionally a pure epsilon).

    .. deprecated:: 0.2.0
       Use ``Mechanism.from_rdp``, the one spelling of this factory; this one warns
       with a ``DeprecationWarning`` and goes in the next release.

    Composition adds the curves (Mironov 2017, Proposition 1); Poisson subsampling uses
    the general bound of Zhu & Wang 2019 (orders up to 256), sampling without
    replacement that of Wang, Balle, Kasiviswanathan 2019 (Theorem 9); epsilon comes
    from the conversion of Canonne, Kamath, Steinke 2020 (Proposition 12).  An RDP
    curve gives no lower bound on epsilon, so ``epsilon_bounds`` returns
    ``(0, upper)``.

    Parameters
    ----------
    rdp_curve : callable
        ``alpha -> eps_alpha`` for real ``alpha > 1``, vectorised (a scalar function is
        called point by point); ``inf`` is allowed, NaN and negative values are errors.
    name : str
        A label for messages and the repr.
    pure_epsilon : float, optional
        A pure-DP epsilon the mechanism also satisfies: caps every epsilon and the RDP
        curve (by the randomized-response curve, Bun & Steinke 2016, Proposition 3.3).
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> m = Mechanism.from_rdp(lambda a: a / 2.0, name="gaussian sigma=1")
    >>> m
    RDPCurveMechanism(name='gaussian sigma=1')
    >>> round(m.epsilon(1e-5), 4)
    4.7284
    >>> m.epsilon_bounds(1e-5)[0]
    0.0
    """
    _deprecated("rdp")
    return Mechanism.from_rdp(
        rdp_curve, name=name, pure_epsilon=pure_epsilon, neighbouring=neighbouring
    )


def mechanism_from_loss_laws(
    remove: PrivacyLossLaw,
    add: PrivacyLossLaw | None = None,
    *,
    name: str | None = None,
    neighbouring: str = ADD_REMOVE,
) -> LossLawMechanism:
    """A mechanism declared by the privacy-loss laws of dominating pairs.

    .. deprecated:: 0.2.0
       Use ``Mechanism.from_loss_laws``, the one spelling of this factory; this one warns
       with a ``DeprecationWarning`` and goes in the next release.

    The Renyi-DP curve is the larger Renyi divergence of the two laws
    (:func:`loss_law_rdp`), finite unless a law puts mass at ``+inf``.

    Parameters
    ----------
    remove : PrivacyLossLaw
        Law of ``L = log(dP/dQ)`` for a pair ``(P, Q)`` dominating the mechanism's pair
        (output with the record, output without it) at every real epsilon.
    add : PrivacyLossLaw, optional
        The same for the other direction.  Default: the swapped ``remove`` pair
        (:func:`swapped_loss_law`), which always dominates it; pass ``add=remove`` for a
        law that is its own mirror image (a Gaussian's is) to skip the second
        direction's work.
    name : str, optional
        A label for messages and the repr (default: the laws' own reprs).
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> from dpacct.accountant.laws.loss_law import GaussianLossLaw
    >>> m = Mechanism.from_loss_laws(GaussianLossLaw(mu=1.0))
    >>> m
    LossLawMechanism(law=GaussianLossLaw(mu=1.0))
    >>> m.rdp([2.0, 4.0])
    array([1., 2.])
    >>> round(m.epsilon(1e-5), 3)
    4.377
    """
    _deprecated("loss_laws")
    return Mechanism.from_loss_laws(remove, add, name=name, neighbouring=neighbouring)


def mechanism_from_pure_epsilon(
    epsilon: float, *, neighbouring: str = ADD_REMOVE
) -> PureEpsilonMechanism:
    """Any pure ``epsilon``-DP mechanism, accounted by its worst case.

    .. deprecated:: 0.2.0
       Use ``Mechanism.from_pure_epsilon``, the one spelling of this factory; this one warns
       with a ``DeprecationWarning`` and goes in the next release.

    Binary randomized response with ``p = e^eps / (1 + e^eps)`` dominates every
    ``eps``-DP mechanism (Kairouz, Oh, Viswanath 2015, Theorem 2.1); its curve
    ``p (1 - e^{eps' - eps})_+``, RDP (Bun & Steinke 2016, Proposition 3.3), loss law
    (atoms ``+-eps`` on the lattice ``eps``, so compositions are exact) and trade-off
    ``max(0, 1 - e^eps a, e^-eps (1 - a))`` are all stated.  Brackets enclose that
    worst case's epsilon: an upper bound for any such mechanism, not a lower bound.

    Parameters
    ----------
    epsilon : float
        The pure-DP epsilon, >= 0.
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> m = Mechanism.from_pure_epsilon(1.0)
    >>> m
    PureEpsilonMechanism(epsilon=1.0)
    >>> round(m.delta(0.0), 6)       # tanh(1/2)
    0.462117
    >>> round(float(m.rdp(2.0)), 6)  # log((e^2 + e^-1) / (1 + e))
    0.735326
    """
    _deprecated("pure_epsilon")
    return Mechanism.from_pure_epsilon(epsilon, neighbouring=neighbouring)


def mechanism_from_gdp(mu: float, *, neighbouring: str = ADD_REMOVE) -> GaussianDPMechanism:
    """Any ``mu``-GDP mechanism (Gaussian differential privacy, Dong, Roth, Su 2019).

    .. deprecated:: 0.2.0
       Use ``Mechanism.from_gdp``, the one spelling of this factory; this one warns
       with a ``DeprecationWarning`` and goes in the next release.

    ``mu``-GDP means the trade-off curve is at least ``Phi(Phi^-1(1 - a) - mu)``, which
    is the pair ``N(0, 1)``, ``N(mu, 1)``: the Gaussian mechanism with noise multiplier
    ``1 / mu`` dominates every ``mu``-GDP mechanism, so its exact curve (Balle & Wang
    2018, Theorem 8), RDP ``alpha mu^2 / 2``, loss law ``N(mu^2/2, mu^2)`` and
    trade-off are stated.  The mechanism also states :meth:`~Mechanism.gdp_mu`, so a
    composition of such parts is answered in closed form (``mu^2`` adds up, ibid.
    Corollary 3.3) and its Poisson subsampling uses the tight subsampled-Gaussian RDP.
    Every answer, brackets included, is about that worst case: the bracket of
    ``epsilon_bounds`` encloses the dominating Gaussian's epsilon, an upper bound for
    the mechanism declared, not a lower bound on it.

    Parameters
    ----------
    mu : float
        The Gaussian-DP parameter, > 0.
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> from dpacct.accountant import compose
    >>> m = Mechanism.from_gdp(0.5)
    >>> run = compose([m], counts=[4])           # sqrt(4 * 0.25) = 1
    >>> run.route, run.gdp_mu()
    ('exact', 1.0)
    >>> round(run.epsilon(1e-5), 4)
    4.3772
    """
    _deprecated("gdp")
    return Mechanism.from_gdp(mu, neighbouring=neighbouring)


def mechanism_from_epsilon_delta(
    epsilon: float, delta: float, *, neighbouring: str = ADD_REMOVE
) -> EpsilonDeltaMechanism:
    """Any ``(epsilon, delta)``-DP mechanism, accounted by its worst case.

    .. deprecated:: 0.2.0
       Use ``Mechanism.from_epsilon_delta``, the one spelling of this factory; this one warns
       with a ``DeprecationWarning`` and goes in the next release.

    The pair ``P = (delta, (1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), 0)`` and
    ``Q`` its mirror image dominates every ``(eps, delta)``-DP mechanism in both
    directions (Kairouz, Oh, Viswanath 2015, Theorem 2.1).  Its curve is
    ``delta(eps') = delta + (1 - delta) e^eps/(1 + e^eps) (1 - e^{eps' - eps})_+``, its
    trade-off ``f_{eps,delta}`` (Dong, Roth, Su 2019, Equation 5), its loss law atoms
    ``+-eps`` plus ``delta`` at ``+inf`` (compositions are exact on the lattice); with
    ``delta > 0`` it has no finite Renyi divergence.  Brackets enclose that worst
    case's epsilon: an upper bound for any such mechanism, not a lower bound.

    Parameters
    ----------
    epsilon : float
        >= 0.
    delta : float
        In [0, 1); ``delta = 0`` is pure DP.
    neighbouring : str
        ``ADD_REMOVE`` (default) or ``REPLACE_ONE``.

    Examples
    --------
    >>> m = Mechanism.from_epsilon_delta(1.0, 1e-6)
    >>> m
    EpsilonDeltaMechanism(epsilon=1.0, delta=1e-06)
    >>> m.epsilon(1e-6)
    1.0
    >>> m.rdp(2.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpacct.accountant.capabilities.MissingCapabilityError: EpsilonDeltaMechanism(epsilon=1.0, ...
    """
    _deprecated("epsilon_delta")
    return Mechanism.from_epsilon_delta(epsilon, delta, neighbouring=neighbouring)
