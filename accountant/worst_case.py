"""Worst-case declarations: a guarantee stated as a number, accounted by the pair that
dominates every mechanism with it.

* :class:`PureEpsilonDeclaration`: pure ``eps``-DP, dominated by binary randomized
  response with ``p = e^eps / (1 + e^eps)`` (Kairouz, Oh, Viswanath 2015, Theorem 2.1).
* :class:`GaussianDPDeclaration`: ``mu``-GDP, dominated by the Gaussian pair
  ``N(0, 1)``, ``N(mu, 1)`` (Dong, Roth, Su 2019, Definition 2.7).
* :class:`EpsilonDeltaDeclaration`: ``(eps, delta)``-DP, dominated by the four-point
  pair of Kairouz, Oh, Viswanath 2015 (Theorem 2.1).

Each states its curve, RDP, loss law and trade-off exactly; brackets enclose the worst
case's epsilon (an upper bound for any mechanism with the guarantee).  As in
:mod:`dpacct.accountant.declared`, each is joined to the contract in
:mod:`dpacct.accountant.mechanism`; this module imports no mechanism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .capabilities import Capabilities
from .curve_down import kov_constants, kov_tradeoff_down, rr_delta_down
from .declared import Declaration, check_relation, no_rdp
from .families.gaussian_dp import gaussian_delta, gaussian_tradeoff
from .laws.loss_law import AtomicLossLaw, GaussianLossLaw
from .numerics import scipy_special as special
from .rdp.conversion import pure_dp_rdp
from .relations import ADD_REMOVE
from .validation import check_epsilon, check_positive, check_probability

__all__ = ["EpsilonDeltaDeclaration", "GaussianDPDeclaration", "PureEpsilonDeclaration"]

#: the exact curves' relative allowance upward (they are read for upper bounds): a few
#: roundings and numpy's vectorised expm1, within four ulps on AVX-512 CPUs: 2^-48 (32u)
_UP = 1.0 + 2.0**-48


@dataclass(frozen=True, repr=False)
class PureEpsilonDeclaration(Declaration):
    """What :class:`~dpacct.accountant.families.custom.PureEpsilonMechanism` states: pure
    ``epsilon``-DP; see :func:`~dpacct.accountant.families.custom.mechanism_from_pure_epsilon`."""

    epsilon0: float
    neighbouring: str = ADD_REMOVE

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon0", check_positive("epsilon", self.epsilon0))
        object.__setattr__(self, "neighbouring", check_relation(self.neighbouring))

    def _repr_fields(self):
        return [("epsilon", self.epsilon0)]

    def _pure_epsilon(self) -> float:
        return self.epsilon0

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        # binary randomized response: delta = p (1 - e^{eps - eps0})_+ (Kairouz, Oh,
        # Viswanath 2015, Theorem 2.1), with expm1 for relative precision near eps0;
        # rounded up (an upper curve): expit's few ulps, numpy's expm1 within four ulps,
        # the gap's and the product's roundings, inside _UP
        # (one ulp more: a subnormal value, where the factor does nothing)
        p = float(special.expit(self.epsilon0))
        gap = np.minimum(np.asarray(epsilon, dtype=float) - self.epsilon0, 0.0)
        up = np.nextafter(p * -np.expm1(gap) * _UP, np.inf)
        return np.minimum(np.where(gap < 0.0, up, 0.0), 1.0)

    def _delta_exact_down(self, epsilon: np.ndarray) -> np.ndarray:
        # the certified lower curve (curve_down.py)
        p_lo, eps0_lo = kov_constants(self.epsilon0, cache=self._cache())
        return rr_delta_down(p_lo, eps0_lo, epsilon)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return pure_dp_rdp(self.epsilon0, alpha)

    def _loss_laws(self):
        cache = self._cache()
        if "law" not in cache:
            e = self.epsilon0
            p, q = float(special.expit(e)), float(special.expit(-e))
            if q == 0.0:  # beyond the double range: the -eps atom's Q-mass is p
                cache["law"] = AtomicLossLaw(
                    losses=np.array([e]), p=np.array([p]), q_neg_inf_mass=p, lattice=e
                )
            else:
                cache["law"] = AtomicLossLaw(
                    losses=np.array([-e, e]), p=np.array([q, p]), lattice=e
                )
        law = cache["law"]
        return law, law

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        # f_{eps,0}(a) = max(0, 1 - e^eps a, e^-eps (1 - a)) (Dong, Roth, Su 2019, Eq. 5),
        # rounded down (curve_down.kov_tradeoff_down)
        return kov_tradeoff_down(self.epsilon0, np.asarray(fpr, dtype=float))


@dataclass(frozen=True, repr=False)
class GaussianDPDeclaration(Declaration):
    """What :class:`~dpacct.accountant.families.custom.GaussianDPMechanism` states: ``mu``-GDP;
    see :func:`~dpacct.accountant.families.custom.mechanism_from_gdp`."""

    mu: float
    neighbouring: str = ADD_REMOVE

    declares = Capabilities(
        exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True, gdp=True
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "mu", check_positive("mu", self.mu))
        object.__setattr__(self, "neighbouring", check_relation(self.neighbouring))

    def _repr_fields(self):
        return [("mu", self.mu)]

    def _gdp_mu(self) -> float:
        return self.mu

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        return gaussian_delta(self.mu, epsilon)

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        # D_alpha(N(mu, 1) || N(0, 1)) = alpha mu^2 / 2 (Mironov 2017, Proposition 7)
        return np.asarray(alpha, dtype=float) * (self.mu * self.mu / 2.0)

    def _loss_laws(self):
        law = GaussianLossLaw(mu=self.mu)
        return law, law

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        return gaussian_tradeoff(self.mu, fpr)


@dataclass(frozen=True, repr=False)
class EpsilonDeltaDeclaration(Declaration):
    """What :class:`~dpacct.accountant.families.custom.EpsilonDeltaMechanism` states:
    ``(epsilon, delta)``-DP; see :func:`~dpacct.accountant.mechanism_from_epsilon_delta`."""

    epsilon0: float
    delta0: float
    neighbouring: str = ADD_REMOVE
    _p: float = field(init=False, repr=False, compare=False, default=0.0)

    declares = Capabilities(exact_curve=True, rdp=True, loss_laws=True, exact_tradeoff=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon0", check_epsilon(self.epsilon0))
        object.__setattr__(self, "delta0", check_probability("delta", self.delta0, low_open=False))
        object.__setattr__(self, "neighbouring", check_relation(self.neighbouring))
        # P-mass of the informative atom at +eps: (1 - delta) e^eps / (1 + e^eps)
        object.__setattr__(self, "_p", (1.0 - self.delta0) * float(special.expit(self.epsilon0)))

    def _repr_fields(self):
        return [("epsilon", self.epsilon0), ("delta", self.delta0)]

    def _pure_epsilon(self) -> float:
        return self.epsilon0 if self.delta0 == 0.0 else math.inf

    def _delta_exact(self, epsilon: np.ndarray) -> np.ndarray:
        # hockey stick of the Kairouz-Oh-Viswanath pair: delta + p (1 - e^{eps' - eps})_+
        # rounded up (an upper curve): the p-term by _UP (_p's and expm1's four ulps) and
        # the sum by one ulp; delta itself, exact, where the gap is 0 (at and above eps,
        # the declared delta: epsilon(delta0) is eps, not inf)
        gap = np.minimum(np.asarray(epsilon, dtype=float) - self.epsilon0, 0.0)
        up = np.nextafter(self.delta0 + self._p * -np.expm1(gap) * _UP, np.inf)
        return np.minimum(np.where(gap < 0.0, up, self.delta0), 1.0)

    def _delta_exact_down(self, epsilon: np.ndarray) -> np.ndarray:
        # the certified lower curve (curve_down.py); delta0 is exact
        p_lo, eps0_lo = kov_constants(self.epsilon0, self.delta0, cache=self._cache())
        return rr_delta_down(p_lo, eps0_lo, epsilon, self.delta0)

    def _loss_laws(self):
        cache = self._cache()
        if "law" not in cache:
            e, d, p = self.epsilon0, self.delta0, self._p
            q = (1.0 - d) * float(special.expit(-e))
            if e == 0.0:
                losses, masses, lattice = np.array([0.0]), np.array([1.0 - d]), None
            elif q == 0.0:
                losses, masses, lattice = np.array([e]), np.array([p]), e
            else:
                losses, masses, lattice = np.array([-e, e]), np.array([q, p]), e
            q_neg = d + (p if (e > 0 and q == 0.0) else 0.0)
            cache["law"] = AtomicLossLaw(
                losses=losses, p=masses, inf_mass=d, q_neg_inf_mass=q_neg, lattice=lattice
            )
        law = cache["law"]
        return law, law

    def _rdp(self, alpha: np.ndarray) -> np.ndarray:
        return pure_dp_rdp(self.epsilon0, alpha)

    def _rdp_missing(self):
        if self.delta0 == 0.0:
            return None
        return no_rdp(
            self,
            f"only an (epsilon, delta) guarantee with delta={self.delta0!r} > 0",
            "the worst mechanism with that guarantee reveals the record outright with "
            "probability delta (an infinite privacy loss), so every Renyi divergence "
            "is infinite",
        )

    def _tradeoff_exact(self, fpr: np.ndarray) -> np.ndarray:
        # f_{eps,delta}(a) = max(0, 1 - delta - e^eps a, e^-eps (1 - delta - a))
        # (Dong, Roth, Su 2019, Equation 5; Kairouz, Oh, Viswanath 2015), rounded down
        return kov_tradeoff_down(self.epsilon0, np.asarray(fpr, dtype=float), self.delta0)
