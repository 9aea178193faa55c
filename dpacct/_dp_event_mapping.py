"""The ``DpEvent`` leaves beyond Gaussian/Laplace/randomized response: what each maps to.

Private helpers of :mod:`dpacct.dp_accounting` (which validates, recurses and records);
each returns the dpacct mechanism of one leaf event, ``None`` for an event that costs
nothing, or raises.  The events dp_accounting's repository added after 0.6.0
(``EpsilonDeltaDpEvent``, ``DiscreteGaussianDpEvent``, ``ExponentialMechanismDpEvent``,
``PermuteAndFlipDpEvent``) are recognised by class name when the installed
dp_accounting lacks them, so that events built by a newer version (or stand-ins with
the same fields) are accounted today.
"""

from __future__ import annotations

import math

from dpacct.accountant import ADD_REMOVE, REPLACE_ONE, Mechanism
from dpacct.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    ExponentialMechanism,
    GaussianMechanism,
    PermuteAndFlip,
    ReplaceOneGaussianMechanism,
    ZCDPMechanism,
)
from dpacct.mechanisms.primitives._discrete_laplace_law import MAX_SENSITIVITY, discrete_laplace_law

#: events of dp_accounting's repository newer than the 0.6.0 release
NEWER_EVENTS = (
    "EpsilonDeltaDpEvent",
    "DiscreteGaussianDpEvent",
    "ExponentialMechanismDpEvent",
    "PermuteAndFlipDpEvent",
)

#: why an event is refused (shown to the user, and read by the test that walks every
#: DpEvent subclass of the installed dp_accounting)
REFUSED = {
    "SampledWithReplacementDpEvent": (
        "no bound for sampling a fixed-size batch *with* replacement is known that dpacct "
        "can certify (a record may enter a batch several times, and neither dpacct nor "
        "dp_accounting's accountants have an analysis of it); sample without replacement "
        "(SampledWithoutReplacementDpEvent under REPLACE_ONE) or with Poisson sampling "
        "(PoissonSampledDpEvent) instead and account that"
    ),
    "UnsupportedDpEvent": "the event declares itself unsupported",
}


def tree_depth(step_counts: list[int]) -> int:
    """Most tree nodes one record enters: ``ceil(log2(n + 1))`` for the longest tree.

    Online tree aggregation releases the completed dyadic nodes; a leaf of a tree of
    ``n`` steps lies in ``floor(log2 n) + 1`` of them (Kairouz et al. 2021, Appendix D).
    """
    return max(step_counts).bit_length()


def tree_aggregation(noise_multiplier: float, depth: int, replace: bool) -> Mechanism:
    """A record in at most ``depth`` nodes of noise ``s`` per unit: a Gaussian of noise
    multiplier ``s / sqrt(depth)`` (``s / (2 sqrt(depth))`` replace-one)."""
    s = noise_multiplier / math.sqrt(depth)
    return ReplaceOneGaussianMechanism(sigma=s / 2) if replace else GaussianMechanism(sigma=s)


def discrete_laplace(a: float, sensitivity: int, replace: bool) -> Mechanism:
    """``DiscreteLaplaceDpEvent(a, k)``: noise pmf ``~ exp(-a|x|)``, integer shift ``k``
    (``2k`` replace-one): the exact loss law of the shift."""
    if not replace:
        return DiscreteLaplaceMechanism.of_sensitivity(1.0 / a, sensitivity)
    k = 2 * sensitivity
    if k > MAX_SENSITIVITY:
        raise ValueError(f"sensitivity must be at most {MAX_SENSITIVITY // 2} under REPLACE_ONE")
    return Mechanism.from_loss_laws(
        discrete_laplace_law(1.0 / a, k),
        name=f"discrete Laplace scale={1.0 / a!r} shift={k}",
        neighbouring=REPLACE_ONE,
    )


def zcdp(rho: float, xi: float, replace: bool, replace_cls: type) -> Mechanism | None:
    """``ZCDpEvent(rho, xi)``: RDP ``xi + rho * alpha``; with ``rho = 0`` it is pure
    ``xi``-DP (a Renyi divergence below ``xi`` at every order bounds the max-divergence)."""
    if rho == 0.0:
        if xi == 0.0:
            return None
        return Mechanism.from_pure_epsilon(xi, neighbouring=REPLACE_ONE if replace else ADD_REMOVE)
    return replace_cls(rho=rho, xi=xi) if replace else ZCDPMechanism(rho=rho, xi=xi)


def discrete_gaussian(
    sigma: float, sensitivity: float, dimension: int | None, replace: bool, replace_cls: type
) -> Mechanism | None:
    """``DiscreteGaussianDpEvent``: the exact one-dimensional unit shift under add/remove;
    otherwise ``rho = Delta^2 / (2 sigma^2)``-zCDP (``Delta`` doubled replace-one).

    Canonne, Kamath, Steinke 2020, Proposition 5: ``D_alpha(N_Z(mu, s^2) || N_Z(nu, s^2))
    <= alpha (mu - nu)^2 / (2 s^2)`` for integers; the multivariate noise (pmf
    ``~ exp(-|z|^2 / (2 s^2))``) is a product of independent coordinates, and Renyi
    divergences add over independent coordinates, so an integer shift of L2 norm
    ``<= Delta`` gives ``alpha Delta^2 / (2 s^2)`` in every dimension (``dimension=None``
    is covered too).
    """
    if sensitivity == 0.0:
        return None
    if dimension == 1 and sensitivity == 1.0 and not replace:
        return DiscreteGaussianMechanism(sigma=sigma)
    delta_2 = 2.0 * sensitivity if replace else sensitivity
    rho = delta_2**2 / (2.0 * sigma**2)
    return replace_cls(rho=rho) if replace else ZCDPMechanism(rho=rho)


def pure_selection(epsilon: float, which: str, replace: bool) -> Mechanism | None:
    """``ExponentialMechanismDpEvent`` (``epsilon``-bounded range, Durfee & Rogers 2019)
    and ``PermuteAndFlipDpEvent`` (``epsilon``-DP, McKenna & Sheldon 2020).  Under
    ``REPLACE_ONE`` the guarantee is kept as a generic pure ``epsilon``-DP one labelled
    replace-one (the classes here are add/remove)."""
    if epsilon == 0.0:
        return None
    if replace:
        return Mechanism.from_pure_epsilon(epsilon, neighbouring=REPLACE_ONE)
    if which == "ExponentialMechanismDpEvent":
        return ExponentialMechanism(epsilon)
    return PermuteAndFlip(epsilon)


def epsilon_delta(epsilon: float, delta: float, replace: bool) -> Mechanism | None:
    """``EpsilonDeltaDpEvent``: only ``(epsilon, delta)`` is known; the worst mechanism
    with that guarantee (Kairouz, Oh, Viswanath 2015) is accounted."""
    if epsilon == 0.0 and delta == 0.0:
        return None
    relation = REPLACE_ONE if replace else ADD_REMOVE
    return Mechanism.from_epsilon_delta(epsilon, delta, neighbouring=relation)
